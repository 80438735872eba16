//! `performanceDetails`: how long each stage of a search took, in the order the stages ran.
//!
//! Invariant: a stage's duration runs from the end of the previous stage (or the timer's
//! creation) to its own end, so the durations add up to the time measured.

use std::time::Instant;

use serde_json::{Map, Value};

/// The durations of a search's stages, as `performanceDetails` reports them.
pub struct StageTimer {
    last: Instant,
    stages: Map<String, Value>,
}

impl StageTimer {
    pub fn new() -> StageTimer {
        StageTimer {
            last: Instant::now(),
            stages: Map::new(),
        }
    }

    /// Records the time since the previous stage ended under `name`.
    pub fn finish(&mut self, name: &str) {
        let now = Instant::now();
        let elapsed = now - self.last;
        self.last = now;
        self.stages
            .insert(name.to_owned(), Value::String(format!("{elapsed:.2?}")));
    }

    pub fn into_details(self) -> Map<String, Value> {
        self.stages
    }
}

impl Default for StageTimer {
    fn default() -> Self {
        StageTimer::new()
    }
}
