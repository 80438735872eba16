//! The backup benchmark's report in markdown: the command line and every parameter, the
//! goals of issue 41 item 6 checked, then one table per step (ingestion, dump, import, idle
//! search, search under snapshots) with coresearch, Meilisearch and their ratio.
//!
//! Invariants: a side that failed is named with its error above the tables and its values
//! print as `—`, as do their ratios; table ratios are always `coresearch / meilisearch`,
//! whatever the direction in which a figure is better (the report says so), while each goal
//! states its own ratio; every number comes from the sides' results as measured.

use std::fmt::Write as _;

use super::side::{BackupOptions, SideBackups, p99_under_snapshots_over_idle};
use crate::compare::goals::{Bound, Goal, write_goals};
use crate::compare::table::{
    LoadFigures, Row, load_fields, mebibytes, row, rows_of, server_versions, write_rows,
    write_side_errors,
};

/// Issue 41 item 6: coresearch imports a dump at least this many times faster.
pub const IMPORT_SPEEDUP_GOAL: f64 = 3.0;
/// Issue 41 item 6: coresearch's search p99 during a snapshot is at most this times idle.
pub const SNAPSHOT_P99_OVER_IDLE_GOAL: f64 = 1.2;
/// Percent per unit.
const PERCENT: f64 = 100.0;

/// The parameters of a run, printed above the tables.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupDescription<'a> {
    /// The command line, as typed.
    pub command_line: String,
    /// The dataset path.
    pub dataset: String,
    /// Documents read from the dataset and sent.
    pub documents: usize,
    /// Queries in the mix.
    pub queries: usize,
    /// `--cores` given to the servers.
    pub cores: Option<usize>,
    /// CPUs of the machine.
    pub machine_cpus: usize,
    /// Every number of the steps.
    pub options: &'a BackupOptions,
}

/// A figure of one side.
type Field = fn(&SideBackups) -> Option<f64>;

/// The rows of a load run's figures for both sides.
fn load_rows(sides: [Option<&SideBackups>; 2], pick: fn(&SideBackups) -> &LoadFigures) -> Vec<Row> {
    load_fields()
        .into_iter()
        .map(|(label, field, decimals)| {
            let [ours, theirs] = sides.map(|side| side.and_then(|side| field(pick(side))));
            row(label, ours, theirs, decimals)
        })
        .collect()
}

fn ingestion_fields() -> [(&'static str, Field, usize); 5] {
    [
        ("documents stored", |s| Some(s.ingestion.stored as f64), 0),
        (
            "indexing time (s)",
            |s| Some(s.ingestion.elapsed.as_secs_f64()),
            2,
        ),
        (
            "indexing (documents/s)",
            |s| {
                Some(
                    s.ingestion.documents as f64
                        / s.ingestion.elapsed.as_secs_f64().max(f64::MIN_POSITIVE),
                )
            },
            0,
        ),
        (
            "data directory once quiet, allocated (MiB)",
            |s| mebibytes(Some(s.source_disk.allocated_bytes)),
            1,
        ),
        (
            "data directory once quiet, apparent (MiB)",
            |s| mebibytes(Some(s.source_disk.apparent_bytes)),
            1,
        ),
    ]
}

fn dump_fields() -> [(&'static str, Field, usize); 5] {
    [
        (
            "request until the task was seen finished (s)",
            |s| Some(s.dump.wall.as_secs_f64()),
            2,
        ),
        (
            "task enqueuedAt to finishedAt (s)",
            |s| Some(s.dump.enqueued_to_finished_seconds),
            2,
        ),
        (
            "task startedAt to finishedAt (s)",
            |s| s.dump.processing_seconds,
            2,
        ),
        ("dump file (MiB)", |s| mebibytes(Some(s.dump.bytes)), 1),
        (
            "busy after the dump, until quiet (s)",
            |s| Some(s.after_dump.elapsed.as_secs_f64()),
            1,
        ),
    ]
}

fn import_fields() -> [(&'static str, Field, usize); 6] {
    [
        (
            "start until /health answers (s)",
            |s| Some(s.import.healthy_after.as_secs_f64()),
            2,
        ),
        (
            "start until every document is held, nothing pending (s)",
            |s| Some(s.import.complete_after.as_secs_f64()),
            2,
        ),
        ("documents held", |s| Some(s.import.held as f64), 0),
        (
            "imported documents/s (start to every document held)",
            |s| Some(s.import.documents_per_second()),
            0,
        ),
        (
            "data directory after the import, allocated (MiB)",
            |s| mebibytes(Some(s.import.disk.allocated_bytes)),
            1,
        ),
        (
            "data directory after the import, apparent (MiB)",
            |s| mebibytes(Some(s.import.disk.apparent_bytes)),
            1,
        ),
    ]
}

fn snapshot_fields() -> [(&'static str, Field, usize); 9] {
    [
        ("p99 latency / idle p99", p99_under_snapshots_over_idle, 2),
        (
            "p99.9 latency / idle p99.9",
            |s| {
                let idle = s.idle.p999_milliseconds?;
                let under = s.under_snapshots.p999_milliseconds?;
                (idle > 0.0).then_some(under / idle)
            },
            2,
        ),
        (
            "snapshots that ran (all succeeded)",
            |s| Some(s.snapshots.snapshots as f64),
            0,
        ),
        (
            "of which overlapping the measured window",
            |s| Some(s.snapshots.snapshots_in_window as f64),
            0,
        ),
        (
            "measured window under a snapshot (%)",
            |s| Some(s.snapshots.window_covered * PERCENT),
            1,
        ),
        (
            "snapshot time, shortest (s)",
            |s| s.snapshots.spread_seconds().map(|spread| spread.0),
            2,
        ),
        (
            "snapshot time, mean (s)",
            |s| s.snapshots.spread_seconds().map(|spread| spread.1),
            2,
        ),
        (
            "snapshot time, longest (s)",
            |s| s.snapshots.spread_seconds().map(|spread| spread.2),
            2,
        ),
        (
            "snapshot file (MiB)",
            |s| mebibytes(Some(s.snapshots.bytes)),
            1,
        ),
    ]
}

/// The goals of issue 41 item 6, measured.
pub fn goals(ours: Option<&SideBackups>, theirs: Option<&SideBackups>) -> Vec<Goal> {
    let import_speedup = match (ours, theirs) {
        (Some(ours), Some(theirs)) => {
            let our_seconds = ours.import.complete_after.as_secs_f64();
            (our_seconds > 0.0).then(|| theirs.import.complete_after.as_secs_f64() / our_seconds)
        }
        _ => None,
    };
    vec![
        Goal {
            label: format!("dump import ≥ {IMPORT_SPEEDUP_GOAL}× faster than Meilisearch's"),
            ratio: "Meilisearch's import time / coresearch's (start until every document is held)"
                .to_string(),
            bound: IMPORT_SPEEDUP_GOAL,
            direction: Bound::AtLeast,
            measured: import_speedup,
        },
        Goal {
            label: format!("search p99 during a snapshot ≤ {SNAPSHOT_P99_OVER_IDLE_GOAL}× idle"),
            ratio: "coresearch's p99 while snapshots run / its idle p99".to_string(),
            bound: SNAPSHOT_P99_OVER_IDLE_GOAL,
            direction: Bound::AtMost,
            measured: ours.and_then(p99_under_snapshots_over_idle),
        },
    ]
}

/// The parameters and the servers, above the tables.
fn write_header(
    text: &mut String,
    description: &BackupDescription,
    sides: [&Result<SideBackups, String>; 2],
) {
    let options = description.options;
    let _ = writeln!(
        text,
        "# Dumps, imports and snapshots: coresearch and Meilisearch\n"
    );
    let _ = writeln!(text, "Command: `{}`\n", description.command_line);
    let _ = writeln!(
        text,
        "Dataset `{}`: {} documents in payloads of {} into index `{}` (`name` and `summary` searchable, `year` and `rank` filterable and sortable). Query mix: {} queries from the dataset's vocabulary, seed {}; both search loads closed loop at {} connections, {:.0} s measured after {:.0} s warm-up, search timeout {:.0} s, alternating idle and under snapshots {} times (each condition's latencies pooled over its rounds). Server cores {}; machine CPUs {}.\n",
        description.dataset,
        description.documents,
        options.batch,
        options.index_uid,
        description.queries,
        options.load.seed,
        options.connections,
        options.load.duration.as_secs_f64(),
        options.load.warmup.as_secs_f64(),
        options.load.timeout.as_secs_f64(),
        options.rounds,
        description
            .cores
            .map_or_else(|| "not limited".to_string(), |cores| cores.to_string()),
        description.machine_cpus,
    );
    let versions = server_versions(
        sides
            .iter()
            .filter_map(|side| side.as_ref().ok())
            .map(|side| (side.name, side.version.as_deref())),
    );
    let _ = writeln!(
        text,
        "Servers, one process at a time on this machine: {versions}.\n"
    );
    write_side_errors(
        text,
        ["coresearch", "meilisearch"]
            .into_iter()
            .zip(sides)
            .filter_map(|(name, side)| Some((name, side.as_ref().err()?.as_str()))),
    );
    let _ = writeln!(
        text,
        "Table ratios are coresearch / Meilisearch, whatever the direction in which a figure is better. Latencies are of 2xx answers. Dump and snapshot task times are the servers' own timestamps.\n"
    );
}

/// The whole report in markdown; a side not run is `Err("not run")`.
pub fn render(
    description: &BackupDescription,
    ours: &Result<SideBackups, String>,
    theirs: &Result<SideBackups, String>,
) -> String {
    let mut text = String::new();
    write_header(&mut text, description, [ours, theirs]);
    let sides = [ours.as_ref().ok(), theirs.as_ref().ok()];
    let _ = writeln!(text, "## Goals (issue 41 item 6)\n");
    write_goals(&mut text, &goals(sides[0], sides[1]));
    let sections: [(&str, Vec<Row>); 3] = [
        ("Ingestion (setup)", rows_of(sides, &ingestion_fields())),
        ("Dump (`POST /dumps`)", rows_of(sides, &dump_fields())),
        (
            "Import of the dump (a fresh instance started with `--import-dump`)",
            rows_of(sides, &import_fields()),
        ),
    ];
    for (title, rows) in sections {
        let _ = writeln!(text, "\n## {title}\n");
        write_rows(&mut text, &rows);
    }
    let _ = writeln!(text, "\n## Search, idle\n");
    write_rows(&mut text, &load_rows(sides, |side| &side.idle));
    let _ = writeln!(
        text,
        "\n## Search while snapshots run back to back (`POST /snapshots`)\n\nThe load starts once the first snapshot is processing; the next snapshot is always enqueued behind the running one.\n"
    );
    let mut rows = load_rows(sides, |side| &side.under_snapshots);
    rows.extend(rows_of(sides, &snapshot_fields()));
    write_rows(&mut text, &rows);
    write_rounds(&mut text, sides);
    text
}

/// Each round's idle p99 and p99 under snapshots, per server.
fn write_rounds(text: &mut String, sides: [Option<&SideBackups>; 2]) {
    let _ = writeln!(
        text,
        "\n## p99 of each round (ms): idle → under snapshots\n"
    );
    let shown = |p99: Option<f64>| p99.map_or_else(|| "—".to_string(), |p99| format!("{p99:.1}"));
    for side in sides.into_iter().flatten() {
        let rounds: Vec<String> = side
            .round_p99_milliseconds
            .iter()
            .map(|(idle, under)| format!("{} → {}", shown(*idle), shown(*under)))
            .collect();
        let _ = writeln!(text, "- {}: {}", side.name, rounds.join("; "));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::backups::dump::DumpFigures;
    use crate::backups::import::ImportFigures;
    use crate::backups::snapshots::SnapshotFigures;
    use crate::compare::disk::DiskUsage;
    use crate::compare::settle::Settling;
    use crate::compare::setup::Ingestion;
    use crate::compare::side::LoadSettings;

    fn figures(p99: f64) -> LoadFigures {
        LoadFigures {
            throughput: 1000.0,
            p50_milliseconds: Some(1.0),
            p99_milliseconds: Some(p99),
            p999_milliseconds: Some(2.0 * p99),
            service_p999_milliseconds: None,
            non_2xx: 0,
            errors: 0,
            server_cores: Some(1.5),
            host_steal_milliseconds: Some(3.0),
        }
    }

    fn side(name: &'static str, import_seconds: u64, p99_under: f64) -> SideBackups {
        SideBackups {
            name,
            version: Some("1.41.0".to_string()),
            ingestion: Ingestion {
                documents: 1000,
                payloads: 1,
                elapsed: Duration::from_secs(2),
                stored: 1000,
            },
            source_disk: DiskUsage {
                apparent_bytes: 2 * 1024 * 1024,
                allocated_bytes: 1024 * 1024,
            },
            dump: DumpFigures {
                wall: Duration::from_millis(1500),
                enqueued_to_finished_seconds: 1.4,
                processing_seconds: Some(1.3),
                file: PathBuf::from("dumps/1.dump"),
                bytes: 512 * 1024,
            },
            after_dump: Settling {
                elapsed: Duration::from_secs(3),
                quiet: true,
            },
            idle: figures(4.0),
            under_snapshots: figures(p99_under),
            round_p99_milliseconds: vec![(Some(4.0), Some(p99_under))],
            snapshots: SnapshotFigures {
                snapshots: 4,
                snapshots_in_window: 3,
                processing_seconds: vec![1.0, 2.0, 3.0, 2.0],
                window_covered: 0.98,
                bytes: 1024 * 1024,
            },
            import: ImportFigures {
                healthy_after: Duration::from_secs(import_seconds),
                complete_after: Duration::from_secs(import_seconds),
                held: 1000,
                disk: DiskUsage::default(),
            },
        }
    }

    #[test]
    fn the_goals_and_every_step_are_reported_side_by_side() {
        let options = BackupOptions {
            index_uid: "pypi".to_string(),
            batch: 500,
            connections: 16,
            load: LoadSettings {
                duration: Duration::from_secs(20),
                warmup: Duration::from_secs(2),
                timeout: Duration::from_secs(10),
                seed: 42,
            },
            keep_data: false,
            rounds: 1,
        };
        let description = BackupDescription {
            command_line: "backup_bench --documents 1000".to_string(),
            dataset: "pypi.ndjson.zst".to_string(),
            documents: 1000,
            queries: 100,
            cores: None,
            machine_cpus: 2,
            options: &options,
        };
        let text = render(
            &description,
            &Ok(side("coresearch", 2, 4.4)),
            &Ok(side("meilisearch", 10, 8.0)),
        );
        assert!(
            text.contains("Command: `backup_bench --documents 1000`"),
            "{text}"
        );
        assert!(text.contains("| 5.00 | yes |"), "{text}");
        assert!(text.contains("| 1.10 | yes |"), "{text}");
        assert!(
            text.contains("| p99 latency / idle p99 | 1.10 | 2.00 | 0.55 |"),
            "{text}"
        );
        assert!(
            text.contains("| snapshot time, mean (s) | 2.00 | 2.00 | 1.00 |"),
            "{text}"
        );
        assert!(
            text.contains("| dump file (MiB) | 0.5 | 0.5 | 1.00 |"),
            "{text}"
        );
        let failed = render(
            &description,
            &Ok(side("coresearch", 2, 6.0)),
            &Err("exited at start".to_string()),
        );
        assert!(
            failed.contains("**meilisearch failed**: exited at start"),
            "{failed}"
        );
        assert!(failed.contains("| — | not measured |"), "{failed}");
        assert!(failed.contains("| 1.50 | **no** |"), "{failed}");
    }
}
