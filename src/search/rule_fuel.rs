//! The limits on the work dynamic search rules add to one search ("fuel", as Meilisearch
//! 1.50 names them), read once from the environment with Meilisearch's variable names:
//!
//! - `MEILI_EXPERIMENTAL_DSR_FUEL_MAX_COUNTED_WORDS` (default 10): how many distinct query
//!   words (in sorted order) a `words` condition is checked against; a rule needing more, or
//!   one of the others, does not apply;
//! - `MEILI_EXPERIMENTAL_DSR_FUEL_MAX_ACTIVE_RULES` (default 1,000): how many applying rules,
//!   by precedence, may pin documents;
//! - `MEILI_EXPERIMENTAL_DSR_FUEL_MAX_PIN_ACTIONS` (default 100): how many documents one
//!   search pins at most;
//! - `MEILI_EXPERIMENTAL_DSR_FUEL_WORD_FUEL` (default 4,096): how many rule words one search
//!   looks up among the query's words; once spent, the rules with `words` not checked yet do
//!   not apply. (Meilisearch spends it per combination of words it intersects; coresearch
//!   checks each rule's words directly, so a unit is one word looked up.)
//!
//! Invariant: a value that does not parse stops the server at start, as in Meilisearch; the
//! limits do not change while it runs.

use std::sync::OnceLock;

/// Distinct query words counted by default.
pub const MAX_COUNTED_WORDS_DEFAULT: u8 = 10;
/// Applying rules that may pin, by default.
pub const MAX_ACTIVE_RULES_DEFAULT: u32 = 1_000;
/// Pins of one search, by default.
pub const MAX_PIN_ACTIONS_DEFAULT: u32 = 100;
/// Word lookups of one search, by default.
pub const WORD_FUEL_DEFAULT: u32 = 4_096;

/// The limits of one search's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleFuel {
    pub max_counted_words: u8,
    pub max_active_rules: u32,
    pub max_pin_actions: u32,
    pub word_fuel: u32,
}

impl Default for RuleFuel {
    fn default() -> Self {
        RuleFuel {
            max_counted_words: MAX_COUNTED_WORDS_DEFAULT,
            max_active_rules: MAX_ACTIVE_RULES_DEFAULT,
            max_pin_actions: MAX_PIN_ACTIONS_DEFAULT,
            word_fuel: WORD_FUEL_DEFAULT,
        }
    }
}

static FUEL: OnceLock<RuleFuel> = OnceLock::new();

impl RuleFuel {
    /// The limits the environment sets (the defaults where it sets none).
    pub fn from_environment() -> Result<RuleFuel, String> {
        Ok(RuleFuel {
            max_counted_words: variable(
                "MEILI_EXPERIMENTAL_DSR_FUEL_MAX_COUNTED_WORDS",
                MAX_COUNTED_WORDS_DEFAULT,
            )?,
            max_active_rules: variable(
                "MEILI_EXPERIMENTAL_DSR_FUEL_MAX_ACTIVE_RULES",
                MAX_ACTIVE_RULES_DEFAULT,
            )?,
            max_pin_actions: variable(
                "MEILI_EXPERIMENTAL_DSR_FUEL_MAX_PIN_ACTIONS",
                MAX_PIN_ACTIONS_DEFAULT,
            )?,
            word_fuel: variable("MEILI_EXPERIMENTAL_DSR_FUEL_WORD_FUEL", WORD_FUEL_DEFAULT)?,
        })
    }

    /// Reads the limits for the process (at start); an unparsable value is the error.
    pub fn install_from_environment() -> Result<RuleFuel, String> {
        let fuel = RuleFuel::from_environment()?;
        Ok(*FUEL.get_or_init(|| fuel))
    }

    /// The process's limits (the defaults before [`RuleFuel::install_from_environment`]).
    pub fn current() -> RuleFuel {
        FUEL.get().copied().unwrap_or_default()
    }
}

fn variable<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .map_err(|error| format!("{name}: `{text}`: {error}")),
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(error) => Err(format!("{name}: {error}")),
    }
}
