//! The export benchmark's report in markdown: the command line and every parameter, the goal
//! of issue 39 item 6 checked, then the source's ingestion and the export, each a table with
//! coresearch, Meilisearch and their ratio.
//!
//! Invariants: a side that failed is named with its error above the tables and its values
//! print as `—`, as do their ratios; table ratios are always `coresearch / meilisearch`,
//! whatever the direction in which a figure is better, while the goal states its own ratio;
//! every number comes from the sides' results as measured.

use std::fmt::Write as _;

use super::side::{ExportOptions, SideExport};
use super::transfer::{SOURCE_NAME, TARGET_NAME};
use crate::compare::goals::{Bound, Goal, write_goals};
use crate::compare::table::{mebibytes, rows_of, server_versions, write_rows, write_side_errors};

/// Issue 39 item 6: coresearch exports at least this many times as many documents per second.
pub const EXPORT_SPEEDUP_GOAL: f64 = 3.0;
/// The documents the CPU cost is given per.
const DOCUMENTS_PER_CPU_FIGURE: f64 = 1000.0;

/// The parameters of a run, printed above the tables.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportDescription<'a> {
    /// The command line, as typed.
    pub command_line: String,
    /// The dataset path.
    pub dataset: String,
    /// Documents read from the dataset and sent to the source.
    pub documents: usize,
    /// `--cores` given to the servers.
    pub cores: Option<usize>,
    /// CPUs of the machine.
    pub machine_cpus: usize,
    /// Every number of the run.
    pub options: &'a ExportOptions,
}

/// A figure of one side.
type Field = fn(&SideExport) -> Option<f64>;

fn ingestion_fields() -> [(&'static str, Field, usize); 4] {
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
            "busy after indexing, until quiet (s)",
            |s| Some(s.settling.elapsed.as_secs_f64()),
            1,
        ),
    ]
}

fn cpu_seconds(side: &SideExport, name: &str) -> Option<f64> {
    Some(side.export.usage_of(name)?.cpu_seconds)
}

fn peak_mebibytes(side: &SideExport, name: &str) -> Option<f64> {
    mebibytes(side.export.usage_of(name)?.peak_resident_bytes)
}

fn export_fields() -> [(&'static str, Field, usize); 13] {
    [
        ("documents exported", |s| Some(s.export.documents as f64), 0),
        (
            "request until the export task succeeded (s)",
            |s| Some(s.export.task_succeeded_after.as_secs_f64()),
            2,
        ),
        (
            "export task enqueuedAt to finishedAt (s)",
            |s| Some(s.export.task_enqueued_to_finished_seconds),
            2,
        ),
        (
            "documents/s until the export task succeeded",
            |s| Some(s.export.task_documents_per_second()),
            0,
        ),
        (
            "request until the target held every document, its tasks finished (s)",
            |s| Some(s.export.target_complete_after.as_secs_f64()),
            2,
        ),
        (
            "documents/s until the target held every document",
            |s| Some(s.export.complete_documents_per_second()),
            0,
        ),
        (
            "document tasks the target registered",
            |s| Some(s.export.target_document_tasks as f64),
            0,
        ),
        ("source CPU time (s)", |s| cpu_seconds(s, SOURCE_NAME), 2),
        ("target CPU time (s)", |s| cpu_seconds(s, TARGET_NAME), 2),
        (
            "source and target CPU per 1,000 documents (s)",
            |s| {
                let total = cpu_seconds(s, SOURCE_NAME)? + cpu_seconds(s, TARGET_NAME)?;
                Some(total * DOCUMENTS_PER_CPU_FIGURE / (s.export.documents.max(1) as f64))
            },
            3,
        ),
        (
            "source peak RSS during the export (MiB)",
            |s| peak_mebibytes(s, SOURCE_NAME),
            1,
        ),
        (
            "target peak RSS during the export (MiB)",
            |s| peak_mebibytes(s, TARGET_NAME),
            1,
        ),
        (
            "target settings equal the source's (1 = yes)",
            |s| Some(f64::from(u8::from(s.settings_equal))),
            0,
        ),
    ]
}

/// The goal of issue 39 item 6, measured.
pub fn goals(ours: Option<&SideExport>, theirs: Option<&SideExport>) -> Vec<Goal> {
    let ratio = |rate: fn(&SideExport) -> f64| {
        let (ours, theirs) = (rate(ours?), rate(theirs?));
        (theirs > 0.0).then_some(ours / theirs)
    };
    vec![
        Goal {
            label: format!(
                "export throughput ≥ {EXPORT_SPEEDUP_GOAL}× Meilisearch's (until the target holds every document)"
            ),
            ratio: "coresearch's documents/s / Meilisearch's".to_string(),
            bound: EXPORT_SPEEDUP_GOAL,
            direction: Bound::AtLeast,
            measured: ratio(|side| side.export.complete_documents_per_second()),
        },
        Goal {
            label: format!(
                "the same, until the export task succeeded (Meilisearch does not wait for the target's indexing), for reference ≥ {EXPORT_SPEEDUP_GOAL}×"
            ),
            ratio: "coresearch's documents/s / Meilisearch's".to_string(),
            bound: EXPORT_SPEEDUP_GOAL,
            direction: Bound::AtLeast,
            measured: ratio(|side| side.export.task_documents_per_second()),
        },
    ]
}

/// The whole report in markdown; a side not run is `Err(NOT_RUN)`.
pub fn render(
    description: &ExportDescription,
    ours: &Result<SideExport, String>,
    theirs: &Result<SideExport, String>,
) -> String {
    let options = description.options;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Export: coresearch → coresearch and Meilisearch → Meilisearch\n"
    );
    let _ = writeln!(text, "Command: `{}`\n", description.command_line);
    let _ = writeln!(
        text,
        "Dataset `{}`: {} documents in payloads of {} into index `{}` of the source (`name` and `summary` searchable, `year` and `rank` filterable and sortable); `POST /export` of every index to an empty target instance of the same server on loopback, default payload size. Server cores {}; machine CPUs {}.\n",
        description.dataset,
        description.documents,
        options.batch,
        options.index_uid,
        description
            .cores
            .map_or_else(|| "not limited".to_string(), |cores| cores.to_string()),
        description.machine_cpus,
    );
    let versions = server_versions(
        [ours, theirs]
            .iter()
            .filter_map(|side| side.as_ref().ok())
            .map(|side| (side.name, side.version.as_deref())),
    );
    let _ = writeln!(
        text,
        "Servers, one pair at a time on this machine (source and target of a pair run together): {versions}.\n"
    );
    write_side_errors(
        &mut text,
        ["coresearch", "meilisearch"]
            .into_iter()
            .zip([ours, theirs])
            .filter_map(|(name, side)| Some((name, side.as_ref().err()?.as_str()))),
    );
    let _ = writeln!(
        text,
        "Table ratios are coresearch / Meilisearch, whatever the direction in which a figure is better. Times run from just before `POST /export`; CPU times are user + system of every thread of each process over the same span, from `/proc`.\n"
    );
    let sides = [ours.as_ref().ok(), theirs.as_ref().ok()];
    let _ = writeln!(text, "## Goal (issue 39 item 6)\n");
    write_goals(&mut text, &goals(sides[0], sides[1]));
    let _ = writeln!(text, "\n## Source ingestion (setup)\n");
    write_rows(&mut text, &rows_of(sides, &ingestion_fields()));
    let _ = writeln!(text, "\n## Export\n");
    write_rows(&mut text, &rows_of(sides, &export_fields()));
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::compare::settle::Settling;
    use crate::compare::setup::Ingestion;
    use crate::compare::table::NOT_RUN;
    use crate::export::transfer::ExportFigures;
    use crate::network::resources::InstanceUsage;

    fn usage(name: &str, cpu_seconds: f64) -> InstanceUsage {
        InstanceUsage {
            name: name.to_string(),
            cpu_seconds,
            cores_used: 1.0,
            peak_resident_bytes: Some(64 * 1024 * 1024),
            peak_is_phase_own: true,
        }
    }

    fn side(name: &'static str, complete_seconds: u64) -> SideExport {
        SideExport {
            name,
            version: Some("1.41.0".to_string()),
            ingestion: Ingestion {
                documents: 10_000,
                payloads: 1,
                elapsed: Duration::from_secs(5),
                stored: 10_000,
            },
            settling: Settling {
                elapsed: Duration::from_secs(3),
                quiet: true,
            },
            export: ExportFigures {
                documents: 10_000,
                task_succeeded_after: Duration::from_secs(1),
                task_enqueued_to_finished_seconds: 0.9,
                target_complete_after: Duration::from_secs(complete_seconds),
                target_document_tasks: 2,
                usage: vec![usage(SOURCE_NAME, 1.0), usage(TARGET_NAME, 3.0)],
            },
            settings_equal: true,
        }
    }

    #[test]
    fn the_goal_compares_documents_per_second_until_the_target_is_complete() {
        let options = ExportOptions {
            index_uid: "pypi".to_string(),
            batch: 10_000,
            keep_data: false,
        };
        let description = ExportDescription {
            command_line: "export_bench --documents 10000".to_string(),
            dataset: "pypi.ndjson.zst".to_string(),
            documents: 10_000,
            cores: None,
            machine_cpus: 2,
            options: &options,
        };
        let text = render(
            &description,
            &Ok(side("coresearch", 2)),
            &Ok(side("meilisearch", 8)),
        );
        assert!(
            text.contains("Command: `export_bench --documents 10000`"),
            "{text}"
        );
        assert!(text.contains("| 4.00 | yes |"), "{text}");
        assert!(text.contains("| 1.00 | **no** |"), "{text}");
        assert!(
            text.contains(
                "| documents/s until the target held every document | 5000 | 1250 | 4.00 |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| source and target CPU per 1,000 documents (s) | 0.400 | 0.400 | 1.00 |"
            ),
            "{text}"
        );
        let alone = render(
            &description,
            &Ok(side("coresearch", 2)),
            &Err(NOT_RUN.to_string()),
        );
        assert!(
            alone.contains("meilisearch: not run (no binary given)."),
            "{alone}"
        );
        assert!(alone.contains("| — | not measured |"), "{alone}");
    }
}
