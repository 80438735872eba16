//! The passes over the mix: unmeasured warm-up passes, then measured passes, each sending
//! every query once, in mix order, to each running build.
//!
//! Invariants: a warm-up pass sends exactly what a measured pass sends, but its samples are
//! dropped; with two builds, the candidate is asked first when the query's position plus the
//! pass number is even and second otherwise, so each build is asked first for half of each
//! query's requests (given an even number of passes) and for half of each pass's queries;
//! progress goes to standard error.

use super::Build;
use super::probe::MeasuredServer;
use super::query_file::MixQuery;
use super::tally::QueryCosts;

/// Queries between two progress lines.
const PROGRESS_INTERVAL_QUERIES: usize = 500;

/// How many passes of each sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassCounts {
    /// Unmeasured passes first.
    pub warmup: usize,
    /// Measured passes then.
    pub measured: usize,
}

/// The running builds: the candidate and, for an A/B run, the baseline.
#[derive(Debug)]
pub struct Servers<'a> {
    /// The candidate.
    pub candidate: &'a mut MeasuredServer,
    /// The baseline, when one runs.
    pub baseline: Option<&'a mut MeasuredServer>,
}

/// The order in which the builds are asked query `index` in pass `pass`.
pub fn asking_order(index: usize, pass: usize) -> [Build; 2] {
    if (index + pass) % 2 == 0 {
        [Build::Candidate, Build::Baseline]
    } else {
        [Build::Baseline, Build::Candidate]
    }
}

impl Servers<'_> {
    fn server(&mut self, build: Build) -> Option<&mut MeasuredServer> {
        match build {
            Build::Candidate => Some(&mut *self.candidate),
            Build::Baseline => self.baseline.as_deref_mut(),
        }
    }
}

/// Asks query `index` once of each build; its samples go into `costs` when `measured`.
fn ask(
    servers: &mut Servers<'_>,
    costs: &mut QueryCosts,
    pass: usize,
    measured: bool,
) -> Result<(), String> {
    for build in asking_order(costs.index, pass) {
        let Some(server) = servers.server(build) else {
            continue;
        };
        let sample = server
            .measure(&costs.query.body)
            .map_err(|error| format!("{}: {error}", build.name()))?;
        if let (true, Some(tally)) = (measured, costs.tally_mut(build)) {
            tally.add(sample);
        }
    }
    Ok(())
}

/// Runs every pass over `queries`; the costs of each query over the measured passes.
pub fn run_passes(
    servers: &mut Servers<'_>,
    queries: &[MixQuery],
    counts: PassCounts,
) -> Result<Vec<QueryCosts>, String> {
    let with_baseline = servers.baseline.is_some();
    let mut costs: Vec<QueryCosts> = queries
        .iter()
        .enumerate()
        .map(|(index, query)| QueryCosts::new(index, query.clone(), with_baseline))
        .collect();
    let total_passes = counts.warmup + counts.measured;
    for pass in 0..total_passes {
        let measured = pass >= counts.warmup;
        let label = if measured { "measured" } else { "warm-up" };
        eprintln!("pass {}/{total_passes} ({label})", pass + 1);
        for query_costs in &mut costs {
            ask(servers, query_costs, pass, measured)?;
            let done = query_costs.index + 1;
            if done % PROGRESS_INTERVAL_QUERIES == 0 {
                eprintln!("  {done}/{} queries", queries.len());
            }
        }
    }
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_asked_build_alternates_over_queries_and_over_passes() {
        assert_eq!(asking_order(0, 0), [Build::Candidate, Build::Baseline]);
        assert_eq!(asking_order(1, 0), [Build::Baseline, Build::Candidate]);
        assert_eq!(asking_order(0, 1), [Build::Baseline, Build::Candidate]);
        assert_eq!(asking_order(1, 1), [Build::Candidate, Build::Baseline]);
        let candidate_first = (0..4)
            .flat_map(|pass| (0..10).map(move |index| asking_order(index, pass)))
            .filter(|order| order[0] == Build::Candidate)
            .count();
        assert_eq!(candidate_first, 20);
    }
}
