//! The limits on the work dynamic search rules add to one search ("fuel", as Meilisearch
//! 1.50 names them), set once at start by the configuration (Meilisearch's environment
//! variables, or the flags of the same names):
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
//! Invariant: a value that does not parse stops the server at start (the configuration
//! refuses it), as in Meilisearch; the limits do not change while it runs.

use std::sync::OnceLock;

pub use crate::config::RuleFuel;

static FUEL: OnceLock<RuleFuel> = OnceLock::new();

/// Sets the limits of the process (once, at start).
pub fn install(fuel: RuleFuel) {
    // A second start in one process (tests) keeps the first limits.
    let _ = FUEL.set(fuel);
}

/// The process's limits (the defaults before [`install`]).
pub fn current() -> RuleFuel {
    FUEL.get().copied().unwrap_or_default()
}
