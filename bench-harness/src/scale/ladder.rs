//! The size ladder: the index sizes at which search is measured, the steps between them, and
//! the payloads of each step.
//!
//! Invariants: the sizes are strictly ascending and positive; step `i` adds the documents
//! from size `i - 1` (0 for the first) up to size `i`; a step's payloads cover its documents
//! exactly once, in order, each of at most `batch` documents, a payload never straddling two
//! steps (so the index holds exactly the size when its step's tasks are done).

use std::ops::Range;

/// One step of the ladder: the documents added to reach a size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Documents the index holds before the step.
    pub from: u64,
    /// Documents it holds after: the size measured.
    pub to: u64,
}

impl Step {
    /// Documents the step adds.
    pub fn added(&self) -> u64 {
        self.to - self.from
    }

    /// The step's payloads: ranges of document positions of at most `batch` documents.
    pub fn payloads(&self, batch: u64) -> Vec<Range<u64>> {
        let batch = batch.max(1);
        let mut ranges = Vec::new();
        let mut start = self.from;
        while start < self.to {
            let end = self.to.min(start.saturating_add(batch));
            ranges.push(start..end);
            start = end;
        }
        ranges
    }
}

/// Fails unless `sizes` is a non-empty, strictly ascending list of positive sizes.
pub fn check_sizes(sizes: &[u64]) -> Result<(), String> {
    if sizes.is_empty() {
        return Err("--sizes needs at least one size".to_string());
    }
    if sizes.first() == Some(&0) {
        return Err("--sizes must be positive".to_string());
    }
    if sizes.windows(2).any(|pair| pair[0] >= pair[1]) {
        return Err(format!(
            "--sizes must be strictly ascending: {sizes:?} is not"
        ));
    }
    Ok(())
}

/// Fails unless the largest of `sizes` is at most the `available` documents.
pub fn check_available(sizes: &[u64], available: u64) -> Result<(), String> {
    match sizes.last() {
        Some(largest) if *largest > available => Err(format!(
            "the largest size, {largest}, is more than the {available} documents the copies hold: raise --copies or lower --sizes"
        )),
        _ => Ok(()),
    }
}

/// The steps that reach each of `sizes` in turn.
pub fn steps(sizes: &[u64]) -> Vec<Step> {
    let mut from = 0;
    sizes
        .iter()
        .map(|size| {
            let step = Step { from, to: *size };
            from = *size;
            step
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_go_from_one_size_to_the_next_in_payloads_that_never_straddle_them() {
        let steps = steps(&[5, 12]);
        assert_eq!(steps, [Step { from: 0, to: 5 }, Step { from: 5, to: 12 }]);
        assert_eq!(steps[0].payloads(4), [0..4, 4..5]);
        assert_eq!(steps[1].payloads(4), [5..9, 9..12]);
        let whole = steps[1].payloads(100);
        assert_eq!((whole.len(), whole.first()), (1, Some(&(5..12))));
        assert_eq!(steps[1].added(), 7);
        assert_eq!(
            steps[1].payloads(0).len(),
            7,
            "a zero batch sends one by one"
        );
    }

    #[test]
    fn sizes_must_ascend_and_fit_in_the_copies() {
        assert!(check_sizes(&[1, 2, 3]).is_ok());
        assert!(check_sizes(&[]).is_err());
        assert!(check_sizes(&[0, 2]).is_err());
        assert!(check_sizes(&[2, 2]).is_err());
        assert!(check_sizes(&[3, 2]).is_err());
        assert!(check_available(&[5, 10], 10).is_ok());
        let error = check_available(&[5, 11], 10).expect_err("too large");
        assert!(error.contains("11"), "{error}");
    }
}
