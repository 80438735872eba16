//! What one run of the network benchmark produced, per server: one entry per network size
//! (its ingestion, its top-hits agreement with one instance, its search runs) and the
//! topology change.
//!
//! Invariant: a phase that could not be measured keeps the reason (the error text) in place
//! of its figures, so the report says what failed instead of leaving a row out.

use super::change::ChangeOutcome;
use super::ingestion::NetworkIngestion;
use super::ranking::RankingAgreement;
use super::searching::SearchLoad;
use crate::compare::agreement::Agreement;

/// Where one instance ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstancePlace {
    /// Its remote name.
    pub name: String,
    /// Its CPUs.
    pub cpu_list: String,
    /// The cores it was told to use.
    pub cores: usize,
}

/// One network size of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeResult {
    /// Instances in the network.
    pub instances: usize,
    /// Where each ran.
    pub places: Vec<InstancePlace>,
    /// The ingestion through the leader.
    pub ingestion: Result<NetworkIngestion, String>,
    /// Queries of the top-hits pass that failed (status, body or `remoteErrors`).
    pub top_hits_failures: u64,
    /// Top-10 id agreement with the one-instance network of the same server (none for that one).
    pub agreement_with_one: Option<Agreement>,
    /// Top-10 ranking agreement with the one-instance network.
    pub ranking_with_one: Option<RankingAgreement>,
    /// The load runs, in connection order.
    pub searches: Result<Vec<SearchLoad>, String>,
}

/// The topology change of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeResult {
    /// Its measurement.
    pub outcome: Result<ChangeOutcome, String>,
    /// Top-10 id agreement of the grown network with the one-instance network.
    pub agreement_with_one: Option<Agreement>,
    /// Top-10 ranking agreement of the grown network with the one-instance network.
    pub ranking_with_one: Option<RankingAgreement>,
    /// Queries of the top-hits pass after the change that failed.
    pub top_hits_failures: u64,
}

/// Everything measured on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerResults {
    /// The server's name.
    pub name: &'static str,
    /// Its `pkgVersion`.
    pub version: Option<String>,
    /// One entry per network size, in the order run.
    pub sizes: Vec<SizeResult>,
    /// The change, when it was run.
    pub change: Option<ChangeResult>,
}
