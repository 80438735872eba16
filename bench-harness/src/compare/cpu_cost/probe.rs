//! One measured search request: the server's CPU time and the wall latency of a single
//! request on a keep-alive connection, and the top hit ids of its answer.
//!
//! Invariants: the server is let go quiet (bounded by `QUIET_TIMEOUT`) before the first CPU
//! reading and again before the second, and a sample says whether both waits reached quiet;
//! the wall latency covers only sending the request and reading the whole answer; the answer
//! is decoded after the second reading, so decoding it costs the measurement nothing; an
//! answer outside 2xx, or no answer, is a failed sample; a server whose threads cannot be
//! read any more (it died) is an error that ends the measurement.

use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::quiescence::wait_until_quiet;
use super::thread_cpu::ThreadCpu;
use crate::compare::agreement::{TopHits, top_ids};
use crate::compare::client::{Client, Response};
use crate::compare::query_mix::TOP_HITS_COUNT;

/// The statuses of a successful answer.
const SUCCESS_STATUSES: Range<u16> = 200..300;
/// The longest wait for a search answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest wait for the server to go quiet around a request.
pub const QUIET_TIMEOUT: Duration = Duration::from_millis(20);
/// Characters of a failed answer's body kept in its error.
const ERROR_BODY_CHARS_MAX: usize = 200;
/// Nanoseconds per microsecond.
const NANOSECONDS_PER_MICROSECOND: f64 = 1_000.0;

/// What one request cost and answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// CPU nanoseconds of all the server's threads during the request.
    pub cpu_nanoseconds: u64,
    /// From the first byte sent to the last byte of the answer read.
    pub wall: Duration,
    /// Whether the server was quiet at both readings.
    pub settled: bool,
    /// The answer's top hit ids (or why they cannot be read), or why the request failed.
    pub answer: Result<TopHits, String>,
}

/// A running server whose CPU is measured per request.
#[derive(Debug)]
pub struct MeasuredServer {
    pid: u32,
    client: Client,
    search_path: String,
}

/// The top hits of an answer, or why the request failed.
fn answer_of(response: io::Result<Response>) -> Result<TopHits, String> {
    let response = response.map_err(|error| format!("request failed: {error}"))?;
    if !SUCCESS_STATUSES.contains(&response.status) {
        let body = String::from_utf8_lossy(&response.body);
        let excerpt: String = body.chars().take(ERROR_BODY_CHARS_MAX).collect();
        return Err(format!("status {}: {excerpt}", response.status));
    }
    Ok(response
        .json()
        .and_then(|json| top_ids(&json, TOP_HITS_COUNT)))
}

impl MeasuredServer {
    /// The server of process `pid`, listening on `address`, searched in index `index_uid`.
    pub fn new(
        pid: u32,
        address: SocketAddr,
        api_key: Option<String>,
        index_uid: &str,
    ) -> MeasuredServer {
        MeasuredServer {
            pid,
            client: Client::new(address, api_key, REQUEST_TIMEOUT),
            search_path: format!("/indexes/{index_uid}/search"),
        }
    }

    /// Sends one search `body` and measures it.
    pub fn measure(&mut self, body: &Value) -> Result<Sample, String> {
        let quiet_before = wait_until_quiet(self.pid, QUIET_TIMEOUT)?;
        let before = ThreadCpu::read(self.pid)?;
        let started = Instant::now();
        let response = self.client.send_json("POST", &self.search_path, body);
        let wall = started.elapsed();
        let quiet_after = wait_until_quiet(self.pid, QUIET_TIMEOUT)?;
        let after = ThreadCpu::read(self.pid)?;
        Ok(Sample {
            cpu_nanoseconds: after.consumed_since(&before),
            wall,
            settled: quiet_before && quiet_after,
            answer: answer_of(response),
        })
    }

    /// The server's CPU microseconds per second while no request is sent, over `duration`:
    /// its background work, which every reading includes.
    pub fn idle_cpu_microseconds_per_second(&self, duration: Duration) -> Result<f64, String> {
        let before = ThreadCpu::read(self.pid)?;
        let started = Instant::now();
        std::thread::sleep(duration);
        let after = ThreadCpu::read(self.pid)?;
        let seconds = started.elapsed().as_secs_f64();
        let microseconds = after.consumed_since(&before) as f64 / NANOSECONDS_PER_MICROSECOND;
        Ok(microseconds / seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, body: &str) -> io::Result<Response> {
        Ok(Response {
            status,
            body: body.as_bytes().to_vec(),
        })
    }

    #[test]
    fn a_2xx_answer_gives_its_top_ids_and_anything_else_is_a_failure() {
        let answer = answer_of(response(200, r#"{"hits":[{"id":3},{"id":1}]}"#));
        let ids = answer
            .expect("a 200 is a success")
            .expect("the hits are readable")
            .ids;
        assert_eq!(ids, ["3", "1"]);
        let without_hits = answer_of(response(200, r#"{"message":"odd"}"#));
        assert!(without_hits.expect("a 200 is a success").is_err());
        assert_eq!(
            answer_of(response(400, r#"{"message":"bad filter"}"#)),
            Err(r#"status 400: {"message":"bad filter"}"#.to_string())
        );
        let long_body = "x".repeat(ERROR_BODY_CHARS_MAX * 2);
        let error = answer_of(response(503, &long_body)).expect_err("a 503 fails");
        assert_eq!(error.len(), "status 503: ".len() + ERROR_BODY_CHARS_MAX);
        let refused = answer_of(Err(io::Error::from(io::ErrorKind::ConnectionRefused)));
        assert!(refused.is_err());
    }
}
