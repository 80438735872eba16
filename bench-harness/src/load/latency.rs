//! Latency histograms (HdrHistogram, nanosecond resolution, three significant
//! digits) and their summary in microseconds.
//!
//! Invariants: a value above `LATENCY_NANOSECONDS_MAX` is recorded as that
//! maximum (and counted in `saturated`), never dropped; merging two histograms
//! gives the histogram of the union of their samples.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// The largest latency the histogram distinguishes: 100 seconds.
pub const LATENCY_NANOSECONDS_MAX: u64 = 100_000_000_000;
/// Significant decimal digits kept by the histogram.
pub const LATENCY_SIGNIFICANT_DIGITS: u8 = 3;

/// A histogram of durations.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyHistogram {
    histogram: Histogram<u64>,
    saturated: u64,
}

/// Percentiles of a histogram, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Samples recorded.
    pub count: u64,
    /// Mean.
    pub mean_microseconds: f64,
    /// Smallest sample.
    pub min_microseconds: f64,
    /// Median.
    pub p50_microseconds: f64,
    /// 90th percentile.
    pub p90_microseconds: f64,
    /// 99th percentile.
    pub p99_microseconds: f64,
    /// 99.9th percentile.
    pub p99_9_microseconds: f64,
    /// Largest sample.
    pub max_microseconds: f64,
    /// Samples above `LATENCY_NANOSECONDS_MAX`, recorded as that maximum.
    pub saturated: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> LatencyHistogram {
        let histogram =
            Histogram::new_with_bounds(1, LATENCY_NANOSECONDS_MAX, LATENCY_SIGNIFICANT_DIGITS)
                .expect("constant bounds are valid: 1 <= max and 3 significant digits");
        LatencyHistogram {
            histogram,
            saturated: 0,
        }
    }

    /// Records one duration.
    pub fn record(&mut self, duration: Duration) {
        let nanoseconds = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        if nanoseconds > LATENCY_NANOSECONDS_MAX {
            self.saturated += 1;
        }
        self.histogram
            .saturating_record(nanoseconds.clamp(1, LATENCY_NANOSECONDS_MAX));
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.histogram
            .add(&other.histogram)
            .expect("histograms with identical bounds always add");
        self.saturated += other.saturated;
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// The percentiles of the samples.
    pub fn summary(&self) -> LatencySummary {
        let micro = |nanoseconds: u64| nanoseconds as f64 / 1_000.0;
        let at = |quantile: f64| micro(self.histogram.value_at_quantile(quantile));
        if self.histogram.is_empty() {
            return LatencySummary {
                count: 0,
                mean_microseconds: 0.0,
                min_microseconds: 0.0,
                p50_microseconds: 0.0,
                p90_microseconds: 0.0,
                p99_microseconds: 0.0,
                p99_9_microseconds: 0.0,
                max_microseconds: 0.0,
                saturated: 0,
            };
        }
        LatencySummary {
            count: self.histogram.len(),
            mean_microseconds: self.histogram.mean() / 1_000.0,
            min_microseconds: micro(self.histogram.min()),
            p50_microseconds: at(0.50),
            p90_microseconds: at(0.90),
            p99_microseconds: at(0.99),
            p99_9_microseconds: at(0.999),
            max_microseconds: micro(self.histogram.max()),
            saturated: self.saturated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative error allowed by three significant digits.
    const TOLERANCE: f64 = 0.001;

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= expected * TOLERANCE
    }

    #[test]
    fn percentiles_of_a_uniform_ramp_are_exact_within_precision() {
        let mut histogram = LatencyHistogram::new();
        for microseconds in 1..=10_000u64 {
            histogram.record(Duration::from_micros(microseconds));
        }
        let summary = histogram.summary();
        assert_eq!(summary.count, 10_000);
        assert!(close(summary.p50_microseconds, 5_000.0), "{summary:?}");
        assert!(close(summary.p90_microseconds, 9_000.0), "{summary:?}");
        assert!(close(summary.p99_microseconds, 9_900.0), "{summary:?}");
        assert!(close(summary.p99_9_microseconds, 9_990.0), "{summary:?}");
        assert!(close(summary.max_microseconds, 10_000.0), "{summary:?}");
        assert!(close(summary.min_microseconds, 1.0), "{summary:?}");
        assert!(close(summary.mean_microseconds, 5_000.5), "{summary:?}");
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let mut left = LatencyHistogram::new();
        let mut right = LatencyHistogram::new();
        let mut both = LatencyHistogram::new();
        for index in 0..1_000u64 {
            let duration = Duration::from_nanos(index * 7_919 % 1_000_003 + 1);
            if index % 3 == 0 {
                &mut left
            } else {
                &mut right
            }
            .record(duration);
            both.record(duration);
        }
        left.merge(&right);
        assert_eq!(left.summary(), both.summary());
    }

    #[test]
    fn huge_values_saturate_instead_of_vanishing() {
        let mut histogram = LatencyHistogram::new();
        histogram.record(Duration::from_secs(1_000));
        histogram.record(Duration::ZERO);
        let summary = histogram.summary();
        assert_eq!(summary.count, 2);
        assert_eq!(summary.saturated, 1);
        assert!(
            summary.max_microseconds
                >= LATENCY_NANOSECONDS_MAX as f64 / 1_000.0 * (1.0 - TOLERANCE)
        );
    }

    #[test]
    fn empty_histogram_summarises_to_zeros() {
        assert_eq!(LatencyHistogram::new().summary().count, 0);
    }
}
