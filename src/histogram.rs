//! A histogram of durations over fixed bucket bounds, as Prometheus exposes one: a count per
//! bucket, the number of observations and their sum.
//!
//! One core records into its own histogram (a plain value behind the core's `RefCell`, no
//! atomics: nothing else touches it); a scrape copies each core's and merges the copies.
//!
//! Invariants: `counts` has one slot per bound plus one for the observations above the last
//! bound (`+Inf`); an observation goes to the first bucket whose bound is at least its value,
//! as Prometheus's `le` says; two histograms merge only when they share their bounds.

/// Observations counted per bucket, their count and their sum in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket, not cumulative; the last slot is above every bound.
    counts: Vec<u64>,
    sum_seconds: f64,
}

impl Histogram {
    /// An empty histogram over `bounds` (increasing upper bounds, in seconds).
    pub fn new(bounds: &'static [f64]) -> Histogram {
        debug_assert!(
            bounds.windows(2).all(|pair| pair[0] < pair[1]),
            "bucket bounds increase"
        );
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum_seconds: 0.0,
        }
    }

    /// Counts one observation of `seconds`.
    pub fn observe(&mut self, seconds: f64) {
        let bucket = self
            .bounds
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(self.bounds.len());
        self.counts[bucket] += 1;
        self.sum_seconds += seconds;
    }

    /// Adds `other`'s observations (of the same bounds) to this one's.
    pub fn merge(&mut self, other: &Histogram) {
        debug_assert_eq!(self.bounds, other.bounds, "histograms of the same bounds");
        for (count, other_count) in self.counts.iter_mut().zip(&other.counts) {
            *count += other_count;
        }
        self.sum_seconds += other.sum_seconds;
    }

    /// The upper bounds of the buckets (without `+Inf`).
    pub fn bounds(&self) -> &'static [f64] {
        self.bounds
    }

    /// For each bound, the observations at or below it.
    pub fn cumulative_counts(&self) -> Vec<u64> {
        self.counts[..self.bounds.len()]
            .iter()
            .scan(0, |total, count| {
                *total += count;
                Some(*total)
            })
            .collect()
    }

    /// Every observation.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The sum of every observation, in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: [f64; 3] = [0.1, 1.0, 10.0];

    #[test]
    fn an_observation_lands_in_the_first_bucket_at_least_its_value() {
        let mut histogram = Histogram::new(&BOUNDS);
        for seconds in [0.05, 0.1, 0.5, 20.0] {
            histogram.observe(seconds);
        }
        assert_eq!(histogram.cumulative_counts(), vec![2, 3, 3]);
        assert_eq!(histogram.count(), 4);
        assert!((histogram.sum_seconds() - 20.65).abs() < 1e-9);
    }

    #[test]
    fn merged_histograms_add_up() {
        let mut first = Histogram::new(&BOUNDS);
        first.observe(0.5);
        let mut second = Histogram::new(&BOUNDS);
        second.observe(5.0);
        second.observe(50.0);
        first.merge(&second);
        assert_eq!(first.cumulative_counts(), vec![0, 1, 2]);
        assert_eq!(first.count(), 3);
    }
}
