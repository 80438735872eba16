//! What happened to the requests of one connection: responses by status,
//! errors by kind, latencies, and per-template counts.
//!
//! Invariants: every measured request attempt is counted exactly once, either
//! as a response (`responses`) or as an error (`errors`); latencies are
//! recorded for 2xx responses only, so fast error answers cannot flatter them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::dispatcher::Slot;
use super::latency::LatencyHistogram;

/// Why a request attempt produced no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Opening the connection failed.
    Connect,
    /// Sending the request failed.
    Write,
    /// Reading the response failed.
    Read,
    /// No response byte arrived within the request timeout.
    Timeout,
    /// The server closed the connection before the response was complete.
    ClosedEarly,
    /// The response was malformed, or bytes arrived that answer no request.
    Protocol,
    /// Open loop: a scheduled request was never sent because the run's drain
    /// deadline passed first (the driver or the server could not keep up).
    Unsent,
}

impl ErrorKind {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Write => "write",
            ErrorKind::Read => "read",
            ErrorKind::Timeout => "timeout",
            ErrorKind::ClosedEarly => "closed_early",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Unsent => "unsent",
        }
    }
}

/// The statistics of one connection, or of a whole run once merged.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Measured responses of any status.
    pub responses: u64,
    /// Measured 2xx responses.
    pub successes: u64,
    /// Measured non-2xx responses, by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Measured failed attempts, by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Measured responses per template (workload order).
    pub per_template: Vec<u64>,
    /// Connections opened (including reconnections, warm-up included).
    pub connections_opened: u64,
    /// Connections the server closed after a response (`Connection: close`).
    pub server_closes: u64,
    /// 2xx latency from the intended send time (the scheduled time in open
    /// loop: includes any queueing in the driver).
    pub latency: LatencyHistogram,
    /// 2xx latency from the moment the request was actually written.
    pub service_time: LatencyHistogram,
    /// When the last measured response arrived.
    pub last_completion: Option<Instant>,
    /// The [`SLOWEST_KEPT`] slowest measured 2xx responses, slowest first.
    pub slowest: Vec<SlowResponse>,
}

/// How many of the slowest responses a tally keeps, to tell which requests make the tail.
pub const SLOWEST_KEPT: usize = 16;

/// One slow 2xx response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowResponse {
    /// Its template (workload order).
    pub template: usize,
    /// From the intended send time to the response.
    pub latency: Duration,
    /// From the actual write to the response.
    pub service_time: Duration,
    /// When the response arrived (tells which slow responses came together).
    pub finished: Instant,
}

/// Inserts `response` into `slowest` (slowest first), keeping at most [`SLOWEST_KEPT`].
fn keep_if_slow(slowest: &mut Vec<SlowResponse>, response: SlowResponse) {
    if slowest.len() == SLOWEST_KEPT
        && slowest
            .last()
            .is_some_and(|fastest_kept| fastest_kept.latency >= response.latency)
    {
        return;
    }
    let position = slowest.partition_point(|kept| kept.latency >= response.latency);
    slowest.insert(position, response);
    slowest.truncate(SLOWEST_KEPT);
}

impl Tally {
    /// An empty tally for a workload of `templates` templates.
    pub fn new(templates: usize) -> Tally {
        Tally {
            responses: 0,
            successes: 0,
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            per_template: vec![0; templates],
            connections_opened: 0,
            server_closes: 0,
            latency: LatencyHistogram::new(),
            service_time: LatencyHistogram::new(),
            last_completion: None,
            slowest: Vec::new(),
        }
    }

    /// Counts a response to template `template` sent at `sent`.
    pub fn record_response(
        &mut self,
        template: usize,
        slot: Slot,
        sent: Instant,
        status: u16,
        now: Instant,
    ) {
        if !slot.measured {
            return;
        }
        self.responses += 1;
        self.per_template[template] += 1;
        if (200..300).contains(&status) {
            self.successes += 1;
            let latency = now.saturating_duration_since(slot.intended);
            let service_time = now.saturating_duration_since(sent);
            self.latency.record(latency);
            self.service_time.record(service_time);
            keep_if_slow(
                &mut self.slowest,
                SlowResponse {
                    template,
                    latency,
                    service_time,
                    finished: now,
                },
            );
        } else {
            *self.statuses.entry(status).or_insert(0) += 1;
        }
        self.last_completion = Some(self.last_completion.map_or(now, |last| last.max(now)));
    }

    /// Counts a failed attempt.
    pub fn record_error(&mut self, kind: ErrorKind, measured: bool) {
        if measured {
            self.add_errors(kind, 1);
        }
    }

    /// Adds `count` errors of `kind`.
    pub fn add_errors(&mut self, kind: ErrorKind, count: u64) {
        if count > 0 {
            *self.errors.entry(kind).or_insert(0) += count;
        }
    }

    /// Measured errors of every kind.
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds everything counted by `other`.
    pub fn merge(&mut self, other: &Tally) {
        self.responses += other.responses;
        self.successes += other.successes;
        for (status, count) in &other.statuses {
            *self.statuses.entry(*status).or_insert(0) += count;
        }
        for (kind, count) in &other.errors {
            self.add_errors(*kind, *count);
        }
        for (mine, theirs) in self.per_template.iter_mut().zip(&other.per_template) {
            *mine += theirs;
        }
        self.connections_opened += other.connections_opened;
        self.server_closes += other.server_closes;
        self.latency.merge(&other.latency);
        self.service_time.merge(&other.service_time);
        for response in &other.slowest {
            keep_if_slow(&mut self.slowest, *response);
        }
        self.last_completion = match (self.last_completion, other.last_completion) {
            (Some(mine), Some(theirs)) => Some(mine.max(theirs)),
            (mine, theirs) => mine.or(theirs),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_responses_are_kept_slowest_first_across_merges() {
        let start = Instant::now();
        let measured = Slot {
            intended: start,
            measured: true,
        };
        let mut first = Tally::new(40);
        let mut second = Tally::new(40);
        for template in 0..40usize {
            // Latencies 0..40 ms in a scrambled order, split over two tallies.
            let milliseconds = (template * 17) % 40;
            let tally = if template % 2 == 0 {
                &mut first
            } else {
                &mut second
            };
            let done = start + Duration::from_millis(milliseconds as u64);
            tally.record_response(template, measured, start, 200, done);
        }
        second.record_response(39, measured, start, 500, start + Duration::from_secs(1));
        first.merge(&second);
        let kept: Vec<u128> = first
            .slowest
            .iter()
            .map(|response| response.latency.as_millis())
            .collect();
        let expected: Vec<u128> = (40 - SLOWEST_KEPT as u128..40).rev().collect();
        assert_eq!(kept, expected);
        assert_eq!(
            first.slowest[0].template, 7,
            "39 ms is template 7 (7 * 17 % 40)"
        );
    }

    #[test]
    fn responses_and_errors_are_counted_once_each_and_merge_adds_up() {
        let start = Instant::now();
        let measured = Slot {
            intended: start,
            measured: true,
        };
        let warmup = Slot {
            intended: start,
            measured: false,
        };
        let later = start + Duration::from_millis(2);
        let mut first = Tally::new(2);
        first.record_response(0, measured, start, 200, later);
        first.record_response(1, measured, start, 503, later);
        first.record_response(0, warmup, start, 200, later);
        first.record_error(ErrorKind::Timeout, true);
        first.record_error(ErrorKind::Timeout, false);
        let mut second = Tally::new(2);
        second.record_response(1, measured, start, 503, later);
        second.record_error(ErrorKind::Connect, true);
        first.merge(&second);
        assert_eq!(first.responses, 3);
        assert_eq!(first.successes, 1);
        assert_eq!(first.statuses[&503], 2);
        assert_eq!(first.errors[&ErrorKind::Timeout], 1);
        assert_eq!(first.errors[&ErrorKind::Connect], 1);
        assert_eq!(first.error_total(), 2);
        assert_eq!(first.per_template, vec![1, 2]);
        assert_eq!(first.latency.count(), 1);
        assert_eq!(first.last_completion, Some(later));
    }
}
