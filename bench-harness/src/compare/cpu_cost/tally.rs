//! What the measured passes add up to: for each query and build, the sums over its answered
//! requests; for each query kind (and for the whole mix), the means over its queries; the
//! costliest queries; and whether the two builds answered a query with the same top hits.
//!
//! Invariants: a failed request is counted and keeps its first error, but adds nothing to a
//! sum; a query's mean is over its answered requests, a kind's mean is the mean of its
//! queries' means (each query weighs the same, however many of its requests failed), and a
//! build's kind mean only covers the queries it answered at least once; kinds keep the order
//! in which the mix first names them; the costliest are ranked by the candidate's mean CPU,
//! highest first, ties in mix order, and a query the candidate never answered is not ranked.

use std::collections::HashMap;
use std::time::Duration;

use super::Build;
use super::probe::Sample;
use super::query_file::MixQuery;
use crate::compare::agreement::TopHits;

/// Nanoseconds per microsecond.
const NANOSECONDS_PER_MICROSECOND: f64 = 1_000.0;
/// Milliseconds per second.
const MILLISECONDS_PER_SECOND: f64 = 1_000.0;

/// One build's answers to one query over the measured passes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryTally {
    /// Requests answered 2xx.
    pub answered: u32,
    /// Requests that failed.
    pub failed: u32,
    /// Requests around which the server did not go quiet in time.
    pub unsettled: u32,
    /// The error of the first failed request.
    pub first_error: Option<String>,
    /// The top hits of the last answered request.
    pub top_hits: Option<TopHits>,
    cpu_nanoseconds_sum: u64,
    wall_sum: Duration,
}

impl QueryTally {
    /// Adds one measured request.
    pub fn add(&mut self, sample: Sample) {
        self.unsettled += u32::from(!sample.settled);
        match sample.answer {
            Ok(top_hits) => {
                self.answered += 1;
                self.cpu_nanoseconds_sum += sample.cpu_nanoseconds;
                self.wall_sum += sample.wall;
                self.top_hits = Some(top_hits);
            }
            Err(error) => {
                self.failed += 1;
                self.first_error.get_or_insert(error);
            }
        }
    }

    /// The mean server CPU of an answered request, in microseconds.
    pub fn mean_cpu_microseconds(&self) -> Option<f64> {
        (self.answered > 0).then(|| {
            self.cpu_nanoseconds_sum as f64 / NANOSECONDS_PER_MICROSECOND / f64::from(self.answered)
        })
    }

    /// The mean wall latency of an answered request, in milliseconds.
    pub fn mean_wall_milliseconds(&self) -> Option<f64> {
        (self.answered > 0).then(|| {
            self.wall_sum.as_secs_f64() * MILLISECONDS_PER_SECOND / f64::from(self.answered)
        })
    }
}

/// Both builds' answers to one query of the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryCosts {
    /// Its position in the mix.
    pub index: usize,
    /// The query.
    pub query: MixQuery,
    /// The candidate's answers.
    pub candidate: QueryTally,
    /// The baseline's answers, when a baseline runs.
    pub baseline: Option<QueryTally>,
}

impl QueryCosts {
    /// Nothing measured yet for query `index`.
    pub fn new(index: usize, query: MixQuery, with_baseline: bool) -> QueryCosts {
        QueryCosts {
            index,
            query,
            candidate: QueryTally::default(),
            baseline: with_baseline.then(QueryTally::default),
        }
    }

    /// The answers of `build`, when it runs.
    pub fn tally(&self, build: Build) -> Option<&QueryTally> {
        match build {
            Build::Candidate => Some(&self.candidate),
            Build::Baseline => self.baseline.as_ref(),
        }
    }

    /// The answers of `build`, to add to, when it runs.
    pub fn tally_mut(&mut self, build: Build) -> Option<&mut QueryTally> {
        match build {
            Build::Candidate => Some(&mut self.candidate),
            Build::Baseline => self.baseline.as_mut(),
        }
    }

    /// The last top hits of both builds, when both answered at least once.
    fn both_top_hits(&self) -> Option<(&TopHits, &TopHits)> {
        let candidate = self.candidate.top_hits.as_ref()?;
        let baseline = self.baseline.as_ref()?.top_hits.as_ref()?;
        Some((candidate, baseline))
    }

    /// Whether both builds answered the query at least once.
    pub fn both_answered(&self) -> bool {
        self.both_top_hits().is_some()
    }

    /// Whether both builds answered and their last top hits differ (other ids, or the same
    /// in another order, or hits one of them could not be read from).
    pub fn top_hits_differ(&self) -> bool {
        match self.both_top_hits() {
            Some((Ok(candidate), Ok(baseline))) => candidate.ids != baseline.ids,
            Some(_) => true,
            None => false,
        }
    }
}

/// One build's figures over a set of queries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BuildSummary {
    /// Queries answered at least once.
    pub answered_queries: usize,
    /// Failed requests.
    pub failed_requests: u64,
    /// Requests around which the server did not go quiet in time.
    pub unsettled_requests: u64,
    cpu_microseconds_sum: f64,
    wall_milliseconds_sum: f64,
}

impl BuildSummary {
    fn add(&mut self, tally: &QueryTally) {
        self.failed_requests += u64::from(tally.failed);
        self.unsettled_requests += u64::from(tally.unsettled);
        if let (Some(cpu), Some(wall)) = (
            tally.mean_cpu_microseconds(),
            tally.mean_wall_milliseconds(),
        ) {
            self.answered_queries += 1;
            self.cpu_microseconds_sum += cpu;
            self.wall_milliseconds_sum += wall;
        }
    }

    /// The mean over the answered queries of their mean CPU, in microseconds.
    pub fn mean_cpu_microseconds(&self) -> Option<f64> {
        (self.answered_queries > 0)
            .then(|| self.cpu_microseconds_sum / self.answered_queries as f64)
    }

    /// The mean over the answered queries of their mean wall latency, in milliseconds.
    pub fn mean_wall_milliseconds(&self) -> Option<f64> {
        (self.answered_queries > 0)
            .then(|| self.wall_milliseconds_sum / self.answered_queries as f64)
    }
}

/// The figures of the queries of one kind (or of the whole mix).
#[derive(Debug, Clone, PartialEq)]
pub struct KindSummary {
    /// The kind's label.
    pub kind: String,
    /// Queries of the kind in the mix.
    pub queries: usize,
    /// The candidate's figures.
    pub candidate: BuildSummary,
    /// The baseline's figures, when a baseline runs.
    pub baseline: Option<BuildSummary>,
}

impl KindSummary {
    fn new(kind: &str, with_baseline: bool) -> KindSummary {
        KindSummary {
            kind: kind.to_string(),
            queries: 0,
            candidate: BuildSummary::default(),
            baseline: with_baseline.then(BuildSummary::default),
        }
    }

    fn add(&mut self, costs: &QueryCosts) {
        self.queries += 1;
        self.candidate.add(&costs.candidate);
        if let (Some(summary), Some(tally)) = (self.baseline.as_mut(), costs.baseline.as_ref()) {
            summary.add(tally);
        }
    }

    /// The figures of `build`, when it runs.
    pub fn build(&self, build: Build) -> Option<&BuildSummary> {
        match build {
            Build::Candidate => Some(&self.candidate),
            Build::Baseline => self.baseline.as_ref(),
        }
    }
}

fn with_baseline(costs: &[QueryCosts]) -> bool {
    costs
        .iter()
        .any(|query_costs| query_costs.baseline.is_some())
}

/// The figures of each kind, in the order the mix first names them.
pub fn summarize_by_kind(costs: &[QueryCosts]) -> Vec<KindSummary> {
    let baseline = with_baseline(costs);
    let mut summaries: Vec<KindSummary> = Vec::new();
    let mut position_of_kind: HashMap<&str, usize> = HashMap::new();
    for query_costs in costs {
        let kind = query_costs.query.kind.as_str();
        let position = *position_of_kind.entry(kind).or_insert_with(|| {
            summaries.push(KindSummary::new(kind, baseline));
            summaries.len() - 1
        });
        summaries[position].add(query_costs);
    }
    summaries
}

/// The figures of the whole mix, labelled `label`.
pub fn summarize_all(costs: &[QueryCosts], label: &str) -> KindSummary {
    let mut summary = KindSummary::new(label, with_baseline(costs));
    for query_costs in costs {
        summary.add(query_costs);
    }
    summary
}

/// The `count` queries of highest mean candidate CPU, highest first.
pub fn costliest(costs: &[QueryCosts], count: usize) -> Vec<&QueryCosts> {
    let mut ranked: Vec<(f64, &QueryCosts)> = costs
        .iter()
        .filter_map(|query_costs| {
            let cpu = query_costs.candidate.mean_cpu_microseconds()?;
            Some((cpu, query_costs))
        })
        .collect();
    ranked.sort_by(|(first_cpu, first), (second_cpu, second)| {
        second_cpu
            .total_cmp(first_cpu)
            .then(first.index.cmp(&second.index))
    });
    ranked
        .into_iter()
        .take(count)
        .map(|(_, query_costs)| query_costs)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;
    use crate::compare::agreement::TopAnswer;

    /// An answered sample of `cpu_microseconds` and `wall_milliseconds` with hits `ids`.
    pub(crate) fn answered(cpu_microseconds: u64, wall_milliseconds: u64, ids: &[&str]) -> Sample {
        Sample {
            cpu_nanoseconds: cpu_microseconds * 1_000,
            wall: Duration::from_millis(wall_milliseconds),
            settled: true,
            answer: Ok(Ok(TopAnswer {
                ids: ids.iter().map(|id| id.to_string()).collect(),
                total_hits: None,
            })),
        }
    }

    /// A failed sample.
    pub(crate) fn failed(error: &str) -> Sample {
        Sample {
            cpu_nanoseconds: 999_000,
            wall: Duration::from_millis(1),
            settled: false,
            answer: Err(error.to_string()),
        }
    }

    /// Query `index` of `kind` with the given candidate and (optional) baseline samples.
    pub(crate) fn costs(
        index: usize,
        kind: &str,
        candidate: Vec<Sample>,
        baseline: Option<Vec<Sample>>,
    ) -> QueryCosts {
        let query = MixQuery {
            kind: kind.to_string(),
            body: json!({"q": format!("query {index}")}),
        };
        let mut query_costs = QueryCosts::new(index, query, baseline.is_some());
        for sample in candidate {
            query_costs.candidate.add(sample);
        }
        if let (Some(tally), Some(samples)) = (query_costs.baseline.as_mut(), baseline) {
            for sample in samples {
                tally.add(sample);
            }
        }
        query_costs
    }

    #[test]
    fn a_query_mean_covers_its_answered_requests_only() {
        let query_costs = costs(
            0,
            "typo",
            vec![
                answered(100, 2, &["1"]),
                failed("status 500"),
                answered(300, 4, &["2"]),
            ],
            None,
        );
        let tally = &query_costs.candidate;
        assert_eq!((tally.answered, tally.failed, tally.unsettled), (2, 1, 1));
        assert_eq!(tally.mean_cpu_microseconds(), Some(200.0));
        assert_eq!(tally.mean_wall_milliseconds(), Some(3.0));
        assert_eq!(tally.first_error.as_deref(), Some("status 500"));
        let last_ids = tally
            .top_hits
            .clone()
            .and_then(Result::ok)
            .map(|hits| hits.ids);
        assert_eq!(last_ids, Some(vec!["2".to_string()]));
        assert_eq!(QueryTally::default().mean_cpu_microseconds(), None);
    }

    #[test]
    fn kinds_keep_mix_order_and_average_their_query_means() {
        let mix = vec![
            costs(
                0,
                "one_word",
                vec![answered(100, 1, &[]), answered(300, 3, &[])],
                None,
            ),
            costs(1, "typo", vec![answered(1_000, 10, &[])], None),
            costs(2, "one_word", vec![answered(500, 5, &[])], None),
            costs(
                3,
                "typo",
                vec![failed("status 400"), failed("status 400")],
                None,
            ),
        ];
        let kinds = summarize_by_kind(&mix);
        let labels: Vec<&str> = kinds.iter().map(|summary| summary.kind.as_str()).collect();
        assert_eq!(labels, ["one_word", "typo"]);
        // one_word: query means 200 and 500.
        assert_eq!(kinds[0].queries, 2);
        assert_eq!(kinds[0].candidate.mean_cpu_microseconds(), Some(350.0));
        assert_eq!(kinds[0].candidate.mean_wall_milliseconds(), Some(3.5));
        assert_eq!(kinds[0].baseline, None);
        // typo: one answered query, one that only failed.
        assert_eq!(kinds[1].queries, 2);
        assert_eq!(kinds[1].candidate.answered_queries, 1);
        assert_eq!(kinds[1].candidate.failed_requests, 2);
        assert_eq!(kinds[1].candidate.mean_cpu_microseconds(), Some(1_000.0));
        let all = summarize_all(&mix, "all");
        assert_eq!((all.queries, all.candidate.answered_queries), (4, 3));
        assert_eq!(all.candidate.mean_cpu_microseconds(), Some(1_700.0 / 3.0));
    }

    #[test]
    fn the_costliest_rank_by_candidate_cpu_with_ties_in_mix_order() {
        let mix = vec![
            costs(0, "a", vec![answered(50, 1, &[])], None),
            costs(1, "a", vec![answered(400, 1, &[])], None),
            costs(2, "a", vec![failed("timeout")], None),
            costs(3, "a", vec![answered(400, 1, &[])], None),
            costs(4, "a", vec![answered(90, 1, &[])], None),
        ];
        let ranked: Vec<usize> = costliest(&mix, 3).iter().map(|costs| costs.index).collect();
        assert_eq!(ranked, [1, 3, 4]);
        assert_eq!(costliest(&mix, 10).len(), 4);
    }

    #[test]
    fn top_hits_differ_in_ids_or_order_but_not_when_a_build_never_answered() {
        let both = |candidate: &[&str], baseline: &[&str]| {
            costs(
                0,
                "a",
                vec![answered(1, 1, candidate)],
                Some(vec![answered(1, 1, baseline)]),
            )
        };
        assert!(!both(&["1", "2"], &["1", "2"]).top_hits_differ());
        assert!(both(&["1", "2"], &["2", "1"]).top_hits_differ());
        assert!(both(&["1", "2"], &["1", "3"]).top_hits_differ());
        let baseline_failed = costs(
            0,
            "a",
            vec![answered(1, 1, &["1"])],
            Some(vec![failed("x")]),
        );
        assert!(!baseline_failed.top_hits_differ());
        assert!(!costs(0, "a", vec![answered(1, 1, &["1"])], None).top_hits_differ());
    }
}
