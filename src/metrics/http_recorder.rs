//! The HTTP figures of one core: requests answered by method, path and status, and while the
//! `metrics` feature is on, their response times by method and path — Meilisearch's
//! `meilisearch_http_requests_total` and `meilisearch_http_response_time_seconds`, kept per
//! core and summed at scrape time.
//!
//! As Meilisearch's middleware does, every request is counted whether or not the feature is
//! on, and its response time only while it is on and its path belongs to a route. The path
//! label is the route's pattern (`/indexes/{index_uid}/search`); a path that belongs to no
//! route is counted as sent.
//!
//! Invariants: the figures live in a thread-local of the core's executor, touched only by
//! that core (plain cells, no atomics, no lock); a scrape copies them ([`snapshot`]); a core
//! keeps at most [`UNMATCHED_PATH_SERIES_MAX`] series of paths that belong to no route, so
//! requests to random paths cannot grow its memory without end.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use crate::histogram::Histogram;

/// Meilisearch's bucket bounds of `meilisearch_http_response_time_seconds`.
pub const HTTP_RESPONSE_TIME_BOUNDS_SECONDS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// Series of paths that belong to no route a core keeps at most; requests past it are not
/// counted.
pub const UNMATCHED_PATH_SERIES_MAX: usize = 1_000;

/// The path a request is counted under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathLabel {
    /// The route's pattern, or the path as sent.
    pub path: Cow<'static, str>,
    /// Whether the path belongs to a route (its response time is then recorded).
    pub routed: bool,
}

/// One series of `meilisearch_http_requests_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RequestSeries {
    method: Cow<'static, str>,
    path: Cow<'static, str>,
    status: u16,
}

/// One core's figures.
#[derive(Default)]
struct Recorder {
    requests: HashMap<RequestSeries, u64>,
    /// How many of `requests` are of paths that belong to no route.
    unmatched_series: usize,
    response_times: HashMap<(Cow<'static, str>, Cow<'static, str>), Histogram>,
}

thread_local! {
    static RECORDER: RefCell<Recorder> = RefCell::new(Recorder::default());
}

/// The method as a label, without allocating for the methods routes know.
fn method_label(method: &str) -> Cow<'static, str> {
    match method {
        "GET" => Cow::Borrowed("GET"),
        "POST" => Cow::Borrowed("POST"),
        "PUT" => Cow::Borrowed("PUT"),
        "PATCH" => Cow::Borrowed("PATCH"),
        "DELETE" => Cow::Borrowed("DELETE"),
        "HEAD" => Cow::Borrowed("HEAD"),
        "OPTIONS" => Cow::Borrowed("OPTIONS"),
        other => Cow::Owned(other.to_owned()),
    }
}

/// Counts one answered request; `elapsed` is its response time when it is to be recorded
/// (the feature is on), and is recorded only for a routed path.
pub fn record(method: &str, label: PathLabel, status: u16, elapsed: Option<Duration>) {
    let method = method_label(method);
    RECORDER.with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        if let Some(elapsed) = elapsed.filter(|_| label.routed) {
            recorder
                .response_times
                .entry((method.clone(), label.path.clone()))
                .or_insert_with(|| Histogram::new(&HTTP_RESPONSE_TIME_BOUNDS_SECONDS))
                .observe(elapsed.as_secs_f64());
        }
        let series = RequestSeries {
            method,
            path: label.path,
            status,
        };
        if let Some(count) = recorder.requests.get_mut(&series) {
            *count += 1;
            return;
        }
        if !label.routed {
            if recorder.unmatched_series >= UNMATCHED_PATH_SERIES_MAX {
                return;
            }
            recorder.unmatched_series += 1;
        }
        recorder.requests.insert(series, 1);
    });
}

/// One series of answered requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestCount {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub count: u64,
}

/// The response times of one method and path.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseTimes {
    pub method: String,
    pub path: String,
    pub histogram: Histogram,
}

/// A copy of one core's HTTP figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpFigures {
    pub requests: Vec<RequestCount>,
    pub response_times: Vec<ResponseTimes>,
}

impl HttpFigures {
    /// Requests this core answered.
    pub fn requests_answered(&self) -> u64 {
        self.requests.iter().map(|series| series.count).sum()
    }
}

/// A copy of this core's HTTP figures.
pub fn snapshot() -> HttpFigures {
    RECORDER.with(|recorder| {
        let recorder = recorder.borrow();
        HttpFigures {
            requests: recorder
                .requests
                .iter()
                .map(|(series, count)| RequestCount {
                    method: series.method.to_string(),
                    path: series.path.to_string(),
                    status: series.status,
                    count: *count,
                })
                .collect(),
            response_times: recorder
                .response_times
                .iter()
                .map(|((method, path), histogram)| ResponseTimes {
                    method: method.to_string(),
                    path: path.to_string(),
                    histogram: histogram.clone(),
                })
                .collect(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routed(path: &'static str) -> PathLabel {
        PathLabel {
            path: Cow::Borrowed(path),
            routed: true,
        }
    }

    fn count_of(figures: &HttpFigures, path: &str, status: u16) -> u64 {
        figures
            .requests
            .iter()
            .filter(|series| series.path == path && series.status == status)
            .map(|series| series.count)
            .sum()
    }

    #[test]
    fn requests_are_counted_by_method_path_and_status() {
        // Each test runs on its own thread, so its recorder starts empty.
        record("GET", routed("/health"), 200, None);
        record("GET", routed("/health"), 200, None);
        record("GET", routed("/health"), 503, None);
        let figures = snapshot();
        assert_eq!(count_of(&figures, "/health", 200), 2);
        assert_eq!(count_of(&figures, "/health", 503), 1);
        assert!(
            figures.response_times.is_empty(),
            "no time without the feature"
        );
        assert_eq!(figures.requests_answered(), 3);
    }

    #[test]
    fn response_times_only_for_routed_paths() {
        let elapsed = Some(Duration::from_millis(3));
        record("GET", routed("/version"), 200, elapsed);
        let unrouted = PathLabel {
            path: Cow::Owned("/nowhere".to_owned()),
            routed: false,
        };
        record("GET", unrouted, 404, elapsed);
        let figures = snapshot();
        assert_eq!(figures.response_times.len(), 1);
        assert_eq!(figures.response_times[0].path, "/version");
        assert_eq!(figures.response_times[0].histogram.count(), 1);
        assert_eq!(count_of(&figures, "/nowhere", 404), 1);
    }

    #[test]
    fn unrouted_paths_stop_adding_series_at_the_bound() {
        for number in 0..UNMATCHED_PATH_SERIES_MAX + 10 {
            let label = PathLabel {
                path: Cow::Owned(format!("/random-{number}")),
                routed: false,
            };
            record("GET", label, 404, None);
        }
        record("GET", routed("/health"), 200, None);
        let figures = snapshot();
        assert_eq!(figures.requests.len(), UNMATCHED_PATH_SERIES_MAX + 1);
    }
}
