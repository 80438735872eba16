//! The network benchmark's markdown report: how it was run, then three tables (ingestion
//! through the leader, search through the leader, the topology change), one row per server
//! and network size, per-instance figures listed in instance order (`ms0` first).
//!
//! Invariant: every number printed comes from the results as measured; a phase that failed
//! prints its error in its row; nothing is averaged across servers or sizes.

use std::fmt::Write as _;

use super::change::ChangeOutcome;
use super::ingestion::NetworkIngestion;
use super::ranking::RankingAgreement;
use super::resources::InstanceUsage;
use super::results::{ServerResults, SizeResult};
use super::searching::SearchLoad;
use crate::compare::agreement::Tally;
use crate::compare::disk::DiskUsage;
use crate::compare::query_mix::KIND_WEIGHTS;

/// Bytes per mebibyte.
const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;

/// How the run was made.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDescription {
    /// The command line.
    pub command_line: String,
    /// The machine: CPUs, model, memory, kernel.
    pub machine: String,
    /// The dataset path.
    pub dataset: String,
    /// Documents sent.
    pub documents: usize,
    /// Documents per payload.
    pub batch: usize,
    /// Queries in the mix.
    pub queries: usize,
    /// Seed of the mix and of the query choice.
    pub seed: u64,
    /// Measured seconds of each load run.
    pub duration_seconds: f64,
    /// Warm-up seconds of each load run.
    pub warmup_seconds: f64,
}

fn join<T>(items: &[T], cell: impl Fn(&T) -> String) -> String {
    items.iter().map(cell).collect::<Vec<_>>().join(" / ")
}

fn mebibytes(bytes: Option<u64>) -> String {
    bytes.map_or("?".to_string(), |bytes| {
        format!("{:.0}", bytes as f64 / BYTES_PER_MEBIBYTE)
    })
}

fn cpu_cells(usage: &[InstanceUsage]) -> (String, String, String) {
    let each = join(usage, |usage| format!("{:.1}", usage.cpu_seconds));
    let total: f64 = usage.iter().map(|usage| usage.cpu_seconds).sum();
    let peaks = join(usage, |usage| {
        let mark = if usage.peak_is_phase_own { "" } else { "*" };
        format!("{}{mark}", mebibytes(usage.peak_resident_bytes))
    });
    (each, format!("{total:.1}"), peaks)
}

fn optional(value: Option<f64>, decimals: usize) -> String {
    value.map_or("?".to_string(), |value| format!("{value:.decimals$}"))
}

fn agreement_cells(tally: Option<&Tally>, ranking: Option<&RankingAgreement>) -> String {
    match (tally, ranking) {
        (Some(tally), Some(ranking)) => format!(
            "{:.1} % | {:.1} % | {:.3}",
            100.0 * ranking.total.equal_share(),
            100.0 * tally.equal_share(),
            tally.mean_overlap()
        ),
        _ => "(reference) | | ".to_string(),
    }
}

fn ingestion_row(output: &mut String, name: &str, size: &SizeResult, ingestion: &NetworkIngestion) {
    let (each, total, peaks) = cpu_cells(&ingestion.usage);
    let held = join(&ingestion.held, u64::to_string);
    let disk = join(&ingestion.disk, |disk: &DiskUsage| {
        mebibytes(Some(disk.allocated_bytes))
    });
    let cores = join(&size.places, |place| place.cores.to_string());
    let _ = writeln!(
        output,
        "| {name} | {} | {cores} | {:.0} | {:.1} | {each} | {total} | {peaks} | {held} | {disk} |",
        size.instances,
        ingestion.documents_per_second(),
        ingestion.elapsed.as_secs_f64(),
    );
}

/// The ingestion table.
pub fn ingestion_table(servers: &[ServerResults]) -> String {
    let mut output = String::from(
        "| server | instances | cores each | documents/s | time (s) | CPU s per instance | CPU s total | peak RSS MiB per instance | documents per instance | disk MiB per instance |\n|---|---:|---|---:|---:|---|---:|---|---|---|\n",
    );
    for server in servers {
        for size in &server.sizes {
            match &size.ingestion {
                Ok(ingestion) => ingestion_row(&mut output, server.name, size, ingestion),
                Err(error) => {
                    let _ = writeln!(
                        output,
                        "| {} | {} | failed: {} |||||||",
                        server.name,
                        size.instances,
                        error.replace('|', "/")
                    );
                }
            }
        }
    }
    output
}

fn search_row(output: &mut String, name: &str, size: &SizeResult, load: &SearchLoad) {
    let figures = &load.figures;
    let per_instance = join(&load.usage, |usage| format!("{:.2}", usage.cores_used));
    let agreement = agreement_cells(
        size.agreement_with_one
            .as_ref()
            .map(|agreement| &agreement.total),
        size.ranking_with_one.as_ref(),
    );
    let _ = writeln!(
        output,
        "| {name} | {} | {} | {:.0} | {} | {} | {} | {per_instance} | {} | {} / {} | {} | {agreement} |",
        size.instances,
        load.connections,
        figures.throughput,
        optional(figures.p50_milliseconds, 2),
        optional(figures.p99_milliseconds, 2),
        optional(figures.server_cores, 2),
        optional(load.cpu_microseconds_per_search, 0),
        figures.non_2xx,
        figures.errors,
        size.top_hits_failures,
    );
}

/// The search table.
pub fn search_table(servers: &[ServerResults]) -> String {
    let mut output = String::from(
        "| server | instances | connections | searches/s | p50 ms | p99 ms | server cores (all) | cores per instance | CPU µs per search | non-2xx / errors | failed in top-10 pass | top-10 ranked as 1 instance | same top-10 ids in order | top-10 id overlap |\n|---|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|\n",
    );
    for server in servers {
        for size in &server.sizes {
            match &size.searches {
                Ok(loads) => {
                    for load in loads {
                        search_row(&mut output, server.name, size, load);
                    }
                }
                Err(error) => {
                    let _ = writeln!(
                        output,
                        "| {} | {} | failed: {} ||||||||||||",
                        server.name,
                        size.instances,
                        error.replace('|', "/")
                    );
                }
            }
        }
    }
    output
}

fn change_row(
    output: &mut String,
    name: &str,
    outcome: &ChangeOutcome,
    failed_queries: u64,
    agreement: String,
) {
    let (each, total, peaks) = cpu_cells(&outcome.usage);
    let moved = join(&outcome.changes, |change| {
        optional(change.moved_documents.map(|moved| moved as f64), 0)
    });
    let seen = join(&outcome.changes, |change| {
        format!("{:.1}", change.succeeded_after.as_secs_f64())
    });
    let before = join(&outcome.held_before, u64::to_string);
    let after = join(&outcome.held_after, u64::to_string);
    let sum: u64 = outcome.held_after.iter().sum();
    let failed = join(&outcome.failed_tasks, |tasks| {
        if tasks.is_empty() {
            "0".to_string()
        } else {
            tasks.join(", ")
        }
    });
    let differ = if outcome.settings_differ.is_empty() {
        "none".to_string()
    } else {
        outcome.settings_differ.join(", ")
    };
    let visibility = &outcome.visibility;
    let visible = format!(
        "{} – {} ({} searches, {} failed)",
        optional(visibility.minimum.map(|count| count as f64), 0),
        optional(visibility.maximum.map(|count| count as f64), 0),
        visibility.samples,
        visibility.failures
    );
    let precreated = if outcome.precreated_index {
        " (index created on the new instances first)"
    } else {
        ""
    };
    let _ = writeln!(
        output,
        "| {name} | {} → {}{precreated} | {:.1} | {seen} | {:.1} | {moved} | {each} | {total} | {peaks} | {before} | {after} | {sum} | {failed} | {differ} | {visible} | {failed_queries} | {agreement} |",
        outcome.instances_before,
        outcome.instances_after,
        outcome.changes_succeeded_after.as_secs_f64(),
        outcome.idle_after.as_secs_f64(),
    );
}

/// The change table.
pub fn change_table(servers: &[ServerResults]) -> String {
    let mut output = String::from(
        "| server | instances | every change succeeded (s) | each instance's change seen succeeded (s) | every instance idle (s) | movedDocuments per instance | CPU s per instance | CPU s total | peak RSS MiB per instance | documents before | documents after | sum after | tasks failed during the change | settings differing from the leader's after | documents a search saw during the change | failed in top-10 pass after | top-10 ranked as 1 instance | same top-10 ids in order | top-10 id overlap |\n|---|---|---:|---|---:|---|---|---:|---|---|---|---:|---|---|---|---:|---:|---:|---:|\n",
    );
    for server in servers {
        let Some(change) = &server.change else {
            continue;
        };
        match &change.outcome {
            Ok(outcome) => change_row(
                &mut output,
                server.name,
                outcome,
                change.top_hits_failures,
                agreement_cells(
                    change
                        .agreement_with_one
                        .as_ref()
                        .map(|agreement| &agreement.total),
                    change.ranking_with_one.as_ref(),
                ),
            ),
            Err(error) => {
                let _ = writeln!(
                    output,
                    "| {} | failed: {} |||||||||||||||||",
                    server.name,
                    error.replace('|', "/")
                );
            }
        }
    }
    output
}

fn kind_row(output: &mut String, label: &str, agreement: &RankingAgreement) {
    let cells: Vec<String> = KIND_WEIGHTS
        .iter()
        .map(|(kind, _)| {
            agreement
                .per_kind
                .get(kind.label())
                .map_or("?".to_string(), |tally| {
                    format!("{:.1} %", 100.0 * tally.equal_share())
                })
        })
        .collect();
    let _ = writeln!(output, "| {label} | {} |", cells.join(" | "));
}

/// The top-10 ranking agreement with the one-instance network, by query kind.
pub fn agreement_table(servers: &[ServerResults]) -> String {
    let kinds: Vec<&str> = KIND_WEIGHTS.iter().map(|(kind, _)| kind.label()).collect();
    let mut output = format!(
        "| network | {} |\n|---|{}\n",
        kinds.join(" | "),
        "---:|".repeat(kinds.len())
    );
    for server in servers {
        for size in &server.sizes {
            if let Some(agreement) = &size.ranking_with_one {
                let label = format!("{} {} instances", server.name, size.instances);
                kind_row(&mut output, &label, agreement);
            }
        }
        if let Some(agreement) = server
            .change
            .as_ref()
            .and_then(|change| change.ranking_with_one.as_ref())
        {
            kind_row(
                &mut output,
                &format!("{} after the change", server.name),
                agreement,
            );
        }
    }
    output
}

/// The whole report.
pub fn render(description: &RunDescription, servers: &[ServerResults]) -> String {
    let mut output = String::new();
    let _ = writeln!(output, "Command: `{}`\n", description.command_line);
    let _ = writeln!(output, "Machine: {}\n", description.machine);
    let versions = join(servers, |server| {
        format!(
            "{} {}",
            server.name,
            server.version.as_deref().unwrap_or("(version unknown)")
        )
    });
    let _ = writeln!(
        output,
        "Servers: {versions}. Dataset `{}`: {} documents in payloads of {}. Query mix: {} queries, seed {}; each load run {:.0} s after {:.0} s of warm-up, closed loop, all searches sent to the leader `ms0`.\n",
        description.dataset,
        description.documents,
        description.batch,
        description.queries,
        description.seed,
        description.duration_seconds,
        description.warmup_seconds,
    );
    let _ = writeln!(
        output,
        "Per-instance cells list `ms0 / ms1 / …`. A peak marked `*` is since the process started (the kernel refused to reset it).\n"
    );
    let _ = writeln!(
        output,
        "### Ingestion through the leader\n\n{}",
        ingestion_table(servers)
    );
    let _ = writeln!(
        output,
        "### Search through the leader (`useNetwork` by default)\n\n{}",
        search_table(servers)
    );
    let _ = writeln!(output, "### Topology change\n\n{}", change_table(servers));
    let _ = writeln!(
        output,
        "### Queries whose top 10 are ranked as by the one-instance network, by query kind\n\n{}",
        agreement_table(servers)
    );
    output
}
