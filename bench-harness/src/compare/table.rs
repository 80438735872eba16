//! The comparison's results and their markdown rendering: one table of coresearch against
//! Meilisearch with the ratio, then the top-hits agreement per query kind.
//!
//! Invariants: a value missing on one side (that side not run, or not measurable) prints
//! as `—` and so does its ratio; the ratio is always `coresearch / meilisearch`, whatever
//! the direction in which a metric is better, and the table says so; the command line and
//! every run parameter are printed above the table, so a published table can be reproduced.

use std::fmt::Write as _;

use super::agreement::Agreement;
use super::disk::DiskUsage;
use super::settle::Settling;
use super::setup::Ingestion;
use crate::load::Report;

/// Bytes per mebibyte.
const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;
/// Microseconds per millisecond.
const MICROSECONDS_PER_MILLISECOND: f64 = 1000.0;
/// The placeholder of a missing value.
pub const MISSING: &str = "—";

/// What one load run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadFigures {
    /// 2xx responses per second.
    pub throughput: f64,
    /// 2xx latency percentiles, in milliseconds (none without a 2xx answer).
    pub p50_milliseconds: Option<f64>,
    /// 99th percentile.
    pub p99_milliseconds: Option<f64>,
    /// 99.9th percentile.
    pub p999_milliseconds: Option<f64>,
    /// 99.9th percentile of the service time (from the actual write, so without the driver's
    /// own delay in sending a request late; equal to the latency in a closed loop).
    pub service_p999_milliseconds: Option<f64>,
    /// Responses other than 2xx.
    pub non_2xx: u64,
    /// Failed attempts (connection errors, timeouts, open-loop requests never sent).
    pub errors: u64,
    /// The server's average cores used, when measured.
    pub server_cores: Option<f64>,
    /// CPU time the hypervisor took from the machine during the runs, in milliseconds, every
    /// CPU summed (when the machine reports it): a slow run with a large figure was slowed
    /// by the host, not only by the server.
    pub host_steal_milliseconds: Option<f64>,
}

impl LoadFigures {
    /// The figures of several runs of one load taken as one: their answers and failures
    /// added, their latencies pooled, the throughput over their measured time together, the
    /// server's cores averaged over the runs that measured them. `None` without a run.
    pub fn pooled(reports: &[Report]) -> Option<LoadFigures> {
        let (first, rest) = reports.split_first()?;
        let mut latency = first.latency_histogram.clone();
        let mut service_time = first.service_time_histogram.clone();
        for report in rest {
            latency.merge(&report.latency_histogram);
            service_time.merge(&report.service_time_histogram);
        }
        let successes: u64 = reports.iter().map(|report| report.successes).sum();
        let elapsed: f64 = reports.iter().map(|report| report.elapsed_seconds).sum();
        let cores: Vec<f64> = reports
            .iter()
            .filter_map(|report| report.server_cpu.as_ref().map(|cpu| cpu.usage.cores_used))
            .collect();
        let measured = latency.count() > 0;
        let milliseconds =
            |microseconds: f64| measured.then_some(microseconds / MICROSECONDS_PER_MILLISECOND);
        let latency = latency.summary();
        Some(LoadFigures {
            throughput: if elapsed > 0.0 {
                successes as f64 / elapsed
            } else {
                0.0
            },
            p50_milliseconds: milliseconds(latency.p50_microseconds),
            p99_milliseconds: milliseconds(latency.p99_microseconds),
            p999_milliseconds: milliseconds(latency.p99_9_microseconds),
            service_p999_milliseconds: milliseconds(service_time.summary().p99_9_microseconds),
            non_2xx: reports
                .iter()
                .map(|report| report.non_2xx.values().sum::<u64>())
                .sum(),
            errors: reports.iter().map(|report| report.error_total).sum(),
            server_cores: (!cores.is_empty())
                .then(|| cores.iter().sum::<f64>() / cores.len() as f64),
            host_steal_milliseconds: steal_milliseconds(reports),
        })
    }

    /// The figures of a load report.
    pub fn from_report(report: &Report) -> LoadFigures {
        LoadFigures::pooled(std::slice::from_ref(report))
            .expect("a slice of one report is not empty")
    }
}

/// The steal of the runs that measured it, summed, in milliseconds; `None` if none did.
fn steal_milliseconds(reports: &[Report]) -> Option<f64> {
    reports
        .iter()
        .filter_map(|report| report.host_steal)
        .fold(None, |sum, steal| {
            Some(sum.unwrap_or(0.0) + steal.cpu_seconds * 1e3)
        })
}

/// Everything measured on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct SideResults {
    /// The server's name.
    pub name: &'static str,
    /// Its `GET /version` `pkgVersion`, when it answered one.
    pub version: Option<String>,
    /// The ingestion.
    pub ingestion: Ingestion,
    /// `VmHWM` right after indexing, in bytes.
    pub peak_rss_after_indexing: Option<u64>,
    /// `VmHWM` at the end of every run, in bytes.
    pub peak_rss_end: Option<u64>,
    /// The data directory right after the last indexing task succeeded.
    pub disk: DiskUsage,
    /// How the server went quiet after indexing (before any search run).
    pub settling: Settling,
    /// The data directory once the server went quiet after indexing.
    pub disk_settled: DiskUsage,
    /// The data directory at the end, after every search run (no write in between: what a
    /// server at rest keeps).
    pub disk_at_end: DiskUsage,
    /// The data directory after `POST /indexes/{uid}/compact` finished, at the very end; `None`
    /// when the server did not compact.
    pub disk_after_compaction: Option<DiskUsage>,
    /// Queries of the top-hits pass not answered 200 with hits.
    pub top_hits_failures: u64,
    /// The fixed-concurrency run.
    pub closed_loop: Option<LoadFigures>,
    /// The fixed-rate run.
    pub open_loop: Option<LoadFigures>,
}

impl SideResults {
    /// Documents indexed per second.
    pub fn indexing_rate(&self) -> f64 {
        let seconds = self.ingestion.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.ingestion.documents as f64 / seconds
        } else {
            0.0
        }
    }
}

/// The parameters of a run, printed above the table.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDescription {
    /// The command line, as typed.
    pub command_line: String,
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
    /// Connections of the closed-loop run.
    pub concurrency: usize,
    /// Rate of the open-loop run (none when skipped).
    pub rate: Option<f64>,
    /// Measured seconds of each run.
    pub duration_seconds: f64,
    /// Unmeasured warm-up seconds of each run.
    pub warmup_seconds: f64,
    /// `--cores` given to the servers.
    pub cores: Option<usize>,
    /// CPUs of the machine.
    pub machine_cpus: usize,
}

/// One row of a table: a figure of both servers.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What the figure is.
    pub label: String,
    /// coresearch's value.
    pub ours: Option<f64>,
    /// Meilisearch's value.
    pub theirs: Option<f64>,
    /// Decimals printed.
    pub decimals: usize,
}

/// A row's label, how its figure is read from one side, and its decimals.
pub type FigureField<'label, Side> = (&'label str, fn(&Side) -> Option<f64>, usize);

/// One row per field of `fields`, each figure read from both sides (coresearch first); a
/// side that did not run shows no figure.
pub fn rows_of<Side>(sides: [Option<&Side>; 2], fields: &[FigureField<'_, Side>]) -> Vec<Row> {
    fields
        .iter()
        .map(|(label, field, decimals)| {
            let [ours, theirs] = sides.map(|side| side.and_then(field));
            row(*label, ours, theirs, *decimals)
        })
        .collect()
}

/// A row of `label` with both values.
pub fn row(
    label: impl Into<String>,
    ours: Option<f64>,
    theirs: Option<f64>,
    decimals: usize,
) -> Row {
    Row {
        label: label.into(),
        ours,
        theirs,
        decimals,
    }
}

/// `value` with `decimals` decimals, `—` when missing.
pub fn format_value(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(
        || MISSING.to_string(),
        |value| format!("{value:.decimals$}"),
    )
}

/// `ours / theirs` with two decimals, `—` when either is missing or theirs is zero.
pub fn format_ratio(ours: Option<f64>, theirs: Option<f64>) -> String {
    match (ours, theirs) {
        (Some(ours), Some(theirs)) if theirs != 0.0 => format!("{:.2}", ours / theirs),
        _ => MISSING.to_string(),
    }
}

/// `bytes` in mebibytes.
pub fn mebibytes(bytes: Option<u64>) -> Option<f64> {
    bytes.map(|bytes| bytes as f64 / BYTES_PER_MEBIBYTE)
}

/// The rows of one side's figure `pick`, for both sides.
fn both<T>(
    ours: Option<&SideResults>,
    theirs: Option<&SideResults>,
    pick: impl Fn(&SideResults) -> Option<T>,
) -> (Option<T>, Option<T>) {
    (ours.and_then(&pick), theirs.and_then(&pick))
}

/// One figure of a load run.
pub type Field = fn(&LoadFigures) -> Option<f64>;

/// The figures of a load run a table shows: label, field, decimals.
pub fn load_fields() -> [(&'static str, Field, usize); 9] {
    [
        ("throughput (2xx answers/s)", |f| Some(f.throughput), 1),
        ("p50 latency (ms)", |f| f.p50_milliseconds, 3),
        ("p99 latency (ms)", |f| f.p99_milliseconds, 3),
        ("p99.9 latency (ms)", |f| f.p999_milliseconds, 3),
        (
            "p99.9 service time (ms)",
            |f| f.service_p999_milliseconds,
            3,
        ),
        ("non-2xx answers", |f| Some(f.non_2xx as f64), 0),
        ("failed requests", |f| Some(f.errors as f64), 0),
        ("server cores used", |f| f.server_cores, 2),
        (
            "CPU taken by the host (steal, ms)",
            |f| f.host_steal_milliseconds,
            0,
        ),
    ]
}

fn load_rows(
    rows: &mut Vec<Row>,
    title: &str,
    ours: Option<&SideResults>,
    theirs: Option<&SideResults>,
    pick: impl Fn(&SideResults) -> Option<LoadFigures> + Copy,
) {
    let figure = |field: Field| both(ours, theirs, |side| pick(side).as_ref().and_then(field));
    for (label, field, decimals) in load_fields() {
        let (our_value, their_value) = figure(field);
        rows.push(row(
            format!("{title}: {label}"),
            our_value,
            their_value,
            decimals,
        ));
    }
}

fn rows(
    description: &RunDescription,
    ours: Option<&SideResults>,
    theirs: Option<&SideResults>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let (a, b) = both(ours, theirs, |side| Some(side.ingestion.stored as f64));
    rows.push(row("documents stored", a, b, 0));
    let (a, b) = both(ours, theirs, |side| Some(side.indexing_rate()));
    rows.push(row("indexing (documents/s)", a, b, 0));
    let (a, b) = both(ours, theirs, |side| {
        Some(side.ingestion.elapsed.as_secs_f64())
    });
    rows.push(row("indexing time (s)", a, b, 2));
    let (a, b) = both(ours, theirs, |side| mebibytes(side.peak_rss_after_indexing));
    rows.push(row("peak RSS after indexing (MiB)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| mebibytes(side.peak_rss_end));
    rows.push(row("peak RSS at the end (MiB)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| {
        mebibytes(Some(side.disk.allocated_bytes))
    });
    rows.push(row("disk, allocated (MiB)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| {
        mebibytes(Some(side.disk.apparent_bytes))
    });
    rows.push(row("disk, apparent (MiB)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| {
        Some(side.settling.elapsed.as_secs_f64())
    });
    rows.push(row("busy after indexing, until quiet (s)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| {
        mebibytes(Some(side.disk_settled.allocated_bytes))
    });
    rows.push(row("disk once quiet, allocated (MiB)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| {
        mebibytes(Some(side.disk_at_end.allocated_bytes))
    });
    rows.push(row("disk at the end, allocated (MiB)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| {
        mebibytes(side.disk_after_compaction.map(|disk| disk.allocated_bytes))
    });
    rows.push(row("disk after compaction, allocated (MiB)", a, b, 1));
    let (a, b) = both(ours, theirs, |side| Some(side.top_hits_failures as f64));
    rows.push(row("top-hits pass: failed queries", a, b, 0));
    let closed = format!("{} connections", description.concurrency);
    load_rows(&mut rows, &closed, ours, theirs, |side| side.closed_loop);
    if let Some(rate) = description.rate {
        let open = format!("{rate:.0}/s open loop");
        load_rows(&mut rows, &open, ours, theirs, |side| side.open_loop);
    }
    rows
}

/// The whole report in markdown.
pub fn render(
    description: &RunDescription,
    ours: Option<&SideResults>,
    theirs: Option<&SideResults>,
    agreement: Option<&Agreement>,
) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "# Search comparison: coresearch and Meilisearch\n");
    let _ = writeln!(text, "Command: `{}`\n", description.command_line);
    let _ = writeln!(
        text,
        "Dataset `{}`: {} documents in payloads of {}; {} queries (seed {}); closed loop at {} connections and {}, {:.0} s each after {:.0} s warm-up; server cores {}; machine CPUs {}.\n",
        description.dataset,
        description.documents,
        description.batch,
        description.queries,
        description.seed,
        description.concurrency,
        description.rate.map_or_else(
            || "no open loop".to_string(),
            |rate| format!("open loop at {rate:.0} requests/s")
        ),
        description.duration_seconds,
        description.warmup_seconds,
        description
            .cores
            .map_or_else(|| "not limited".to_string(), |cores| cores.to_string()),
        description.machine_cpus,
    );
    let versions = server_versions(
        [ours, theirs]
            .into_iter()
            .flatten()
            .map(|side| (side.name, side.version.as_deref())),
    );
    let _ = writeln!(text, "Servers: {versions}.\n");
    write_rows(&mut text, &rows(description, ours, theirs));
    if let Some(agreement) = agreement {
        write_agreement(&mut text, agreement);
    }
    text
}

/// The servers' names and versions, as `coresearch 1.41.0, meilisearch 1.41.0`.
pub fn server_versions<'a>(servers: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> String {
    let versions: Vec<String> = servers
        .map(|(name, version)| format!("{name} {}", version.unwrap_or("(unknown version)")))
        .collect();
    if versions.is_empty() {
        "none measured".to_string()
    } else {
        versions.join(", ")
    }
}

/// What a side whose binary was not given answers in place of its results.
pub const NOT_RUN: &str = "not run (no binary given)";

/// Prints `report` and writes it to `output` when one was given.
pub fn publish_report(report: &str, output: Option<&std::path::Path>) -> Result<(), String> {
    print!("{report}");
    if let Some(path) = output {
        std::fs::write(path, report)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    }
    Ok(())
}

/// Whether neither side failed (a side not run did not fail).
pub fn no_side_failed<Ours, Theirs>(
    ours: &Result<Ours, String>,
    theirs: &Result<Theirs, String>,
) -> bool {
    let failed = |error: &String| error != NOT_RUN;
    !ours.as_ref().is_err_and(failed) && !theirs.as_ref().is_err_and(failed)
}

/// One paragraph per side that did not run or failed: `(name, its error)`.
pub fn write_side_errors<'a>(text: &mut String, sides: impl Iterator<Item = (&'a str, &'a str)>) {
    for (name, error) in sides {
        if error == NOT_RUN {
            let _ = writeln!(text, "{name}: {NOT_RUN}.\n");
        } else {
            let _ = writeln!(text, "**{name} failed**: {error}\n");
        }
    }
}

/// `rows` as a markdown table: metric, coresearch, Meilisearch, and their ratio.
pub fn write_rows(text: &mut String, rows: &[Row]) {
    let _ = writeln!(
        text,
        "| metric | coresearch | meilisearch | coresearch / meilisearch |"
    );
    let _ = writeln!(text, "|---|---:|---:|---:|");
    for row in rows {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} |",
            row.label,
            format_value(row.ours, row.decimals),
            format_value(row.theirs, row.decimals),
            format_ratio(row.ours, row.theirs)
        );
    }
}

fn write_agreement(text: &mut String, agreement: &Agreement) {
    let _ = writeln!(
        text,
        "\nTop-10 agreement: {:.1}% of queries answer the same 10 ids in the same order (mean set overlap {:.1}%).\n",
        agreement.total.equal_share() * 100.0,
        agreement.total.mean_overlap() * 100.0
    );
    let _ = writeln!(
        text,
        "Equal hit counts (`estimatedTotalHits`): {:.1}%; equal top-10 and hit count: {:.1}%.\n",
        agreement.total.total_hits_share() * 100.0,
        agreement.total.both_share() * 100.0
    );
    let _ = writeln!(
        text,
        "| query kind | queries | equal top-10 | equal share | mean overlap | equal hit count | both equal | failed |"
    );
    let _ = writeln!(text, "|---|---:|---:|---:|---:|---:|---:|---:|");
    let all = std::iter::once(("all", &agreement.total));
    for (kind, tally) in all.chain(
        agreement
            .per_kind
            .iter()
            .map(|(kind, tally)| (*kind, tally)),
    ) {
        let _ = writeln!(
            text,
            "| {kind} | {} | {} | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {} |",
            tally.queries,
            tally.equal,
            tally.equal_share() * 100.0,
            tally.mean_overlap() * 100.0,
            tally.total_hits_share() * 100.0,
            tally.both_share() * 100.0,
            tally.failed
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn side(name: &'static str, seconds: u64, throughput: f64) -> SideResults {
        let figures = LoadFigures {
            throughput,
            p50_milliseconds: Some(1.0),
            p99_milliseconds: Some(4.0),
            p999_milliseconds: None,
            service_p999_milliseconds: None,
            non_2xx: 0,
            errors: 0,
            server_cores: None,
            host_steal_milliseconds: None,
        };
        SideResults {
            name,
            version: Some("1.0.0".to_string()),
            ingestion: Ingestion {
                documents: 1000,
                payloads: 1,
                elapsed: Duration::from_secs(seconds),
                stored: 1000,
            },
            peak_rss_after_indexing: Some(100 * 1024 * 1024),
            peak_rss_end: None,
            disk: DiskUsage {
                apparent_bytes: 2 * 1024 * 1024,
                allocated_bytes: 1024 * 1024,
            },
            settling: Settling {
                elapsed: Duration::from_secs(3),
                quiet: true,
            },
            disk_settled: DiskUsage {
                apparent_bytes: 2 * 1024 * 1024,
                allocated_bytes: 768 * 1024,
            },
            disk_at_end: DiskUsage {
                apparent_bytes: 2 * 1024 * 1024,
                allocated_bytes: 512 * 1024,
            },
            disk_after_compaction: None,
            top_hits_failures: 0,
            closed_loop: Some(figures),
            open_loop: None,
        }
    }

    fn description() -> RunDescription {
        RunDescription {
            command_line: "search_compare --documents 1000".to_string(),
            dataset: "pypi.ndjson.zst".to_string(),
            documents: 1000,
            batch: 10_000,
            queries: 100,
            seed: 1,
            concurrency: 8,
            rate: Some(50.0),
            duration_seconds: 10.0,
            warmup_seconds: 1.0,
            cores: None,
            machine_cpus: 2,
        }
    }

    #[test]
    fn ratios_are_ours_over_theirs_and_missing_values_print_a_dash() {
        assert_eq!(format_ratio(Some(3.0), Some(1.5)), "2.00");
        assert_eq!(format_ratio(Some(3.0), Some(0.0)), MISSING);
        assert_eq!(format_ratio(None, Some(1.0)), MISSING);
        let ours = side("coresearch", 1, 300.0);
        let theirs = side("meilisearch", 4, 100.0);
        let text = render(&description(), Some(&ours), Some(&theirs), None);
        assert!(
            text.contains("Command: `search_compare --documents 1000`"),
            "{text}"
        );
        assert!(
            text.contains("| indexing (documents/s) | 1000 | 250 | 4.00 |"),
            "{text}"
        );
        assert!(
            text.contains("| 8 connections: throughput (2xx answers/s) | 300.0 | 100.0 | 3.00 |"),
            "{text}"
        );
        assert!(
            text.contains("| disk once quiet, allocated (MiB) | 0.8 | 0.8 | 1.00 |"),
            "{text}"
        );
        assert!(
            text.contains("| busy after indexing, until quiet (s) | 3.0 | 3.0 | 1.00 |"),
            "{text}"
        );
        assert!(
            text.contains("| peak RSS at the end (MiB) | — | — | — |"),
            "{text}"
        );
        assert!(
            text.contains("| 50/s open loop: throughput (2xx answers/s) | — | — | — |"),
            "{text}"
        );
    }

    #[test]
    fn one_side_alone_renders_with_dashes_for_the_other() {
        let theirs = side("meilisearch", 2, 100.0);
        let text = render(&description(), None, Some(&theirs), None);
        assert!(
            text.contains("| indexing (documents/s) | — | 500 | — |"),
            "{text}"
        );
        assert!(!text.contains("Top-10 agreement"));
        assert!(text.contains("Servers: meilisearch 1.0.0.\n"), "{text}");
    }
}
