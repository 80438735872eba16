//! The goals an issue sets for a benchmark, checked against what a run measured and printed
//! as a markdown table: the goal, the measured ratio, whether it is met.
//!
//! Invariants: a goal is a bound on one ratio (at least or at most); a ratio that could not
//! be measured (a side missing or failed) is printed `—` and the goal is neither met nor
//! missed but "not measured"; the measured value is printed with two decimals, the same
//! value the check compares.

use std::fmt::Write as _;

use super::table::MISSING;

/// Which side of its bound a goal's ratio must be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The ratio must be at least the bound.
    AtLeast,
    /// The ratio must be at most the bound.
    AtMost,
}

/// One goal and what the run measured for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// The goal in words, with its bound (e.g. "import ≥ 3× faster than Meilisearch's").
    pub label: String,
    /// How the ratio is computed, in words.
    pub ratio: String,
    /// The bound.
    pub bound: f64,
    /// Which side of the bound is good.
    pub direction: Bound,
    /// The measured ratio, when both of its figures were measured.
    pub measured: Option<f64>,
}

impl Goal {
    /// Whether the goal is met (none when the ratio was not measured).
    pub fn met(&self) -> Option<bool> {
        let measured = self.measured?;
        Some(match self.direction {
            Bound::AtLeast => measured >= self.bound,
            Bound::AtMost => measured <= self.bound,
        })
    }
}

/// `goals` as a markdown table.
pub fn write_goals(text: &mut String, goals: &[Goal]) {
    let _ = writeln!(text, "| goal | ratio | measured | met |");
    let _ = writeln!(text, "|---|---|---:|---|");
    for goal in goals {
        let measured = goal
            .measured
            .map_or_else(|| MISSING.to_string(), |value| format!("{value:.2}"));
        let met = match goal.met() {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "not measured",
        };
        let _ = writeln!(
            text,
            "| {} | {} | {measured} | {met} |",
            goal.label, goal.ratio
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(direction: Bound, measured: Option<f64>) -> Goal {
        Goal {
            label: "fast".to_string(),
            ratio: "theirs / ours".to_string(),
            bound: 3.0,
            direction,
            measured,
        }
    }

    #[test]
    fn a_goal_is_met_on_its_side_of_the_bound_and_unknown_unmeasured() {
        assert_eq!(goal(Bound::AtLeast, Some(3.0)).met(), Some(true));
        assert_eq!(goal(Bound::AtLeast, Some(2.99)).met(), Some(false));
        assert_eq!(goal(Bound::AtMost, Some(3.5)).met(), Some(false));
        assert_eq!(goal(Bound::AtMost, None).met(), None);
        let mut text = String::new();
        write_goals(
            &mut text,
            &[goal(Bound::AtLeast, Some(2.5)), goal(Bound::AtLeast, None)],
        );
        assert!(
            text.contains("| fast | theirs / ours | 2.50 | **no** |"),
            "{text}"
        );
        assert!(
            text.contains("| fast | theirs / ours | — | not measured |"),
            "{text}"
        );
    }
}
