//! The benchmark's report in markdown: the command line and every parameter, the base
//! ingestion, then one table per phase with coresearch, Meilisearch and their ratio.
//!
//! Invariants: a value missing on one side (that side not run, or not measurable) prints as
//! `—` and so does its ratio; the ratio is always `coresearch / meilisearch`, whatever the
//! direction in which a figure is better (the report says so); every phase has a table, in
//! the order the phases ran, titled with its load and, for a write phase, its writer.

use std::fmt::Write as _;

use super::phase::{PHASES, Phase, PhaseResults, WriteResults};
use super::side::{MILLISECONDS_PER_SECOND, SideWrites, WritesOptions};
use crate::compare::table::{Row, load_fields, row, server_versions, write_rows};

/// The parameters of a run, printed above the tables.
#[derive(Debug, Clone, PartialEq)]
pub struct WritesDescription<'a> {
    /// The command line, as typed.
    pub command_line: String,
    /// The dataset path.
    pub dataset: String,
    /// Documents read from the dataset.
    pub documents_read: usize,
    /// Queries in the mix.
    pub queries: usize,
    /// `--cores` given to the servers.
    pub cores: Option<usize>,
    /// CPUs of the machine.
    pub machine_cpus: usize,
    /// Every number of the phases.
    pub options: &'a WritesOptions,
    /// Dataset documents left for the unbounded writer (after the base and the fixed-rate
    /// writer's).
    pub unbounded_fresh_documents: usize,
    /// Copies under new ids the unbounded writer may send after them.
    pub copies: usize,
}

/// A figure of one side's phase.
type PhaseField = fn(&PhaseResults) -> Option<f64>;
/// A figure of one side's writes.
type WriteField = fn(&WriteResults) -> Option<f64>;
/// A figure of one side's base ingestion.
type BaseField = fn(&SideWrites) -> f64;

/// The phase `phase` of `side`, when that side ran.
fn phase_of(side: Option<&SideWrites>, phase: Phase) -> Option<&PhaseResults> {
    side?.phases.iter().find(|results| results.phase == phase)
}

/// One row from a figure of both sides' phase.
fn phase_row(
    sides: [Option<&PhaseResults>; 2],
    label: &str,
    field: impl Fn(&PhaseResults) -> Option<f64>,
    decimals: usize,
) -> Row {
    let [ours, theirs] = sides.map(|side| side.and_then(&field));
    row(label, ours, theirs, decimals)
}

/// `p99` and `p99.9` of a phase over those of `yardstick`, named `yardstick_name` in the
/// labels.
fn against(
    rows: &mut Vec<Row>,
    sides: [Option<&SideWrites>; 2],
    phase: Phase,
    yardstick: Phase,
    yardstick_name: &str,
) {
    let relative: [(&str, PhaseField); 2] = [
        ("p99", |results| results.search.p99_milliseconds),
        ("p99.9", |results| results.search.p999_milliseconds),
    ];
    for (percentile, field) in relative {
        let ratio = |side: Option<&SideWrites>| {
            let now = field(phase_of(side, phase)?)?;
            let reference = field(phase_of(side, yardstick)?)?;
            (reference > 0.0).then_some(now / reference)
        };
        let label = format!("{percentile} latency / {yardstick_name} {percentile}");
        rows.push(row(&label, ratio(sides[0]), ratio(sides[1]), 2));
    }
}

/// The rows of a write phase's writer and tasks.
fn write_rows_of(rows: &mut Vec<Row>, sides: [Option<&PhaseResults>; 2], fixed_rate: bool) {
    let mut fields: Vec<(&str, WriteField, usize)> = vec![
        (
            "writes: documents sent",
            |w| Some(w.writer.documents_sent as f64),
            0,
        ),
        (
            "writes: payloads sent",
            |w| Some(w.writer.payloads_sent as f64),
            0,
        ),
        (
            "writes: sending time (s)",
            |w| Some(w.writer.sending.as_secs_f64()),
            1,
        ),
    ];
    if fixed_rate {
        fields.push((
            "writes: latest payload behind its schedule (ms)",
            |w| Some(w.writer.most_late.as_secs_f64() * MILLISECONDS_PER_SECOND),
            1,
        ));
    } else {
        fields.push((
            "writes: every document sent (1 = ran out)",
            |w| Some(f64::from(u8::from(w.writer.ran_out))),
            0,
        ));
    }
    fields.extend::<[(&str, WriteField, usize); 6]>([
        (
            "tasks: documents indexed",
            |w| w.tasks.map(|t| t.indexed_documents as f64),
            0,
        ),
        (
            "tasks: indexed documents/s (first enqueue to last finish)",
            |w| w.tasks.map(|t| t.indexed_per_second),
            0,
        ),
        (
            "tasks: most enqueued or processing at once",
            |w| w.tasks.map(|t| t.most_tasks_behind as f64),
            0,
        ),
        (
            "tasks: most documents waiting at once",
            |w| w.tasks.map(|t| t.most_documents_behind as f64),
            0,
        ),
        (
            "tasks: longest wait, enqueued to finished (s)",
            |w| w.tasks.map(|t| t.longest_task_wait_seconds),
            2,
        ),
        (
            "tasks: not succeeded",
            |w| w.tasks.map(|t| t.unsuccessful as f64),
            0,
        ),
    ]);
    for (label, field, decimals) in fields {
        rows.push(phase_row(
            sides,
            label,
            |results| field(results.writes.as_ref()?),
            decimals,
        ));
    }
}

/// Every row of one phase's table.
fn phase_rows(
    description: &WritesDescription,
    ours: Option<&SideWrites>,
    theirs: Option<&SideWrites>,
    phase: Phase,
) -> Vec<Row> {
    let sides = [phase_of(ours, phase), phase_of(theirs, phase)];
    let mut rows = vec![phase_row(
        sides,
        "documents in the index at the end",
        |results| results.documents.map(|count| count as f64),
        0,
    )];
    for (label, field, decimals) in load_fields() {
        rows.push(phase_row(
            sides,
            label,
            |results| field(&results.search),
            decimals,
        ));
    }
    // The same connections as the idle phase: its latencies are the yardstick.
    if !matches!(phase, Phase::Idle | Phase::WarmOneConnection) {
        against(&mut rows, [ours, theirs], phase, Phase::Idle, "idle");
    }
    // These phases search every document, as the warm phase does: the yardstick at the same
    // size (the idle phase searched the base only). The fixed-rate adding phase grows the
    // index from the base to nearly every document while it is measured: the idle and warm
    // phases bound the same-size yardstick from below and from above, so it gets both.
    if matches!(
        phase,
        Phase::FixedRate | Phase::Unbounded | Phase::AfterIndexing
    ) {
        against(&mut rows, [ours, theirs], phase, Phase::Warm, "warm");
    }
    match phase {
        Phase::FixedRateUpdates | Phase::UnboundedUpdates | Phase::FixedRate | Phase::Unbounded => {
            write_rows_of(&mut rows, sides, !phase.unbounded());
            if phase == Phase::Unbounded {
                let fresh = description.unbounded_fresh_documents;
                rows.push(phase_row(
                    sides,
                    "writes: of which copies under new ids",
                    |results| {
                        let sent = results.writes.as_ref()?.writer.documents_sent;
                        Some(sent.saturating_sub(fresh) as f64)
                    },
                    0,
                ));
            }
        }
        Phase::AfterIndexing => rows.push(phase_row(
            sides,
            "search started after the last task finished (ms)",
            |results| results.start_after_last_task_milliseconds,
            1,
        )),
        _ => {}
    }
    rows
}

/// What a phase's search load and writer were, for its title.
fn phase_subtitle(description: &WritesDescription, phase: Phase) -> String {
    let options = description.options;
    let closed = |connections: usize, measured: f64, warmup: f64| {
        format!(
            "closed loop, {connections} connection{}, {measured:.0} s measured after {warmup:.0} s warm-up",
            if connections == 1 { "" } else { "s" }
        )
    };
    let duration = options.duration.as_secs_f64();
    let warmup = options.warmup.as_secs_f64();
    let beside_writer = || {
        let measured = options.write_duration.saturating_sub(options.warmup);
        closed(options.connections, measured.as_secs_f64(), warmup)
    };
    let unbounded_payloads = format!(
        "in payloads of {} documents, keeping {} of its tasks enqueued or processing, until the load ends",
        options.unbounded_batch, options.unbounded_pending_tasks,
    );
    let same_size = format!(
        "each under the id of a base document, so the index keeps its {} documents and the idle phase is the yardstick at the same size",
        options.base_documents,
    );
    match phase {
        Phase::Idle | Phase::Warm => closed(options.connections, duration, warmup),
        Phase::WarmOneConnection => closed(1, duration, warmup),
        Phase::FixedRateUpdates => format!(
            "{}; a writer replaces base documents at the same rate and payload size as the adding phase: the next dataset documents, {same_size}",
            beside_writer(),
        ),
        Phase::UnboundedUpdates => format!(
            "{}; a writer replaces base documents {unbounded_payloads}: the dataset documents after the fixed-rate writer's, {same_size}",
            closed(options.connections, duration, warmup),
        ),
        Phase::FixedRate => format!(
            "{}; a writer adds {} documents over {:.0} s ({:.0} documents/s) in payloads of {} on a steady clock",
            beside_writer(),
            options.write_documents,
            options.write_duration.as_secs_f64(),
            options.write_rate(),
            options.write_batch,
        ),
        Phase::Unbounded => format!(
            "{}; a writer sends documents {unbounded_payloads}: the {} dataset documents after the fixed-rate writer's, then up to {} copies of dataset documents under new ids",
            closed(options.connections, duration, warmup),
            description.unbounded_fresh_documents,
            description.copies,
        ),
        Phase::AfterIndexing => format!(
            "closed loop, {} connections, the first {:.0} s after the unbounded writer's last task finished, no warm-up",
            options.connections,
            options.after_indexing_duration.as_secs_f64(),
        ),
    }
}

/// The parameters and the servers, above the tables.
fn write_header(
    text: &mut String,
    description: &WritesDescription,
    sides: [Option<&SideWrites>; 2],
) {
    let options = description.options;
    let _ = writeln!(
        text,
        "# Search latency under writes: coresearch and Meilisearch\n"
    );
    let _ = writeln!(text, "Command: `{}`\n", description.command_line);
    let _ = writeln!(
        text,
        "Dataset `{}` ({} documents read): a base of {} documents in payloads of {}, then the documents after it, each sent once. Query mix: {} queries from the base's vocabulary, seed {}; search timeout {:.0} s. Server cores {}; machine CPUs {}.\n",
        description.dataset,
        description.documents_read,
        options.base_documents,
        options.base_batch,
        description.queries,
        options.seed,
        options.timeout.as_secs_f64(),
        description
            .cores
            .map_or_else(|| "not limited".to_string(), |cores| cores.to_string()),
        description.machine_cpus,
    );
    let versions = server_versions(
        sides
            .into_iter()
            .flatten()
            .map(|side| (side.name, side.version.as_deref())),
    );
    let _ = writeln!(
        text,
        "Servers, one after the other on this machine: {versions}.\n"
    );
    let _ = writeln!(
        text,
        "Ratios are coresearch / Meilisearch, whatever the direction in which a figure is better. Latencies are of 2xx answers; the write figures named `tasks:` come from the servers' own task records.\n"
    );
}

/// The whole report in markdown.
pub fn render(
    description: &WritesDescription,
    ours: Option<&SideWrites>,
    theirs: Option<&SideWrites>,
) -> String {
    let mut text = String::new();
    write_header(&mut text, description, [ours, theirs]);
    let base_fields: [(&str, BaseField, usize); 4] = [
        ("documents stored", |side| side.base.stored as f64, 0),
        (
            "indexing time (s)",
            |side| side.base.elapsed.as_secs_f64(),
            2,
        ),
        (
            "indexing (documents/s)",
            |side| {
                side.base.documents as f64 / side.base.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
            },
            0,
        ),
        (
            "busy after indexing, until quiet (s)",
            |side| side.base_settling.elapsed.as_secs_f64(),
            1,
        ),
    ];
    let base_rows: Vec<Row> = base_fields
        .into_iter()
        .map(|(label, field, decimals)| row(label, ours.map(field), theirs.map(field), decimals))
        .collect();
    let _ = writeln!(text, "## Base ingestion (no search running)\n");
    write_rows(&mut text, &base_rows);
    for phase in PHASES {
        let _ = writeln!(
            text,
            "\n## {}\n\n{}.\n",
            phase.title(),
            phase_subtitle(description, phase)
        );
        write_rows(&mut text, &phase_rows(description, ours, theirs, phase));
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::compare::settle::Settling;
    use crate::compare::setup::Ingestion;
    use crate::compare::table::LoadFigures;
    use crate::writes::task_records::TaskFigures;
    use crate::writes::writer::WriterOutcome;

    fn options() -> WritesOptions {
        WritesOptions {
            index_uid: "pypi".to_string(),
            base_documents: 1000,
            base_batch: 500,
            connections: 16,
            duration: Duration::from_secs(20),
            warmup: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
            seed: 42,
            write_documents: 3000,
            write_duration: Duration::from_secs(40),
            write_batch: 250,
            unbounded_batch: 250,
            unbounded_pending_tasks: 2,
            after_indexing_duration: Duration::from_secs(5),
            keep_data: false,
        }
    }

    fn phase(phase: Phase, p99: f64) -> PhaseResults {
        let writes = matches!(
            phase,
            Phase::FixedRateUpdates | Phase::UnboundedUpdates | Phase::FixedRate | Phase::Unbounded
        )
        .then(|| WriteResults {
            writer: WriterOutcome {
                documents_sent: 3000,
                payloads_sent: 12,
                task_uids: (2..14).collect(),
                sending: Duration::from_secs(39),
                most_late: Duration::ZERO,
                ran_out: true,
                error: None,
            },
            tasks: Some(TaskFigures {
                tasks: 12,
                unsuccessful: 0,
                indexed_documents: 3000,
                indexed_per_second: 75.0,
                most_tasks_behind: 3,
                most_documents_behind: 750,
                longest_task_wait_seconds: 1.5,
            }),
        });
        PhaseResults {
            phase,
            search: LoadFigures {
                throughput: 1000.0,
                p50_milliseconds: Some(1.0),
                p99_milliseconds: Some(p99),
                p999_milliseconds: None,
                service_p999_milliseconds: None,
                non_2xx: 0,
                errors: 0,
                server_cores: Some(1.5),
                host_steal_milliseconds: Some(3.0),
            },
            writes,
            documents: Some(1000),
            start_after_last_task_milliseconds: (phase == Phase::AfterIndexing).then_some(40.0),
        }
    }

    fn side(name: &'static str, p99: f64) -> SideWrites {
        SideWrites {
            name,
            version: Some("1.41.0".to_string()),
            base: Ingestion {
                documents: 1000,
                payloads: 2,
                elapsed: Duration::from_secs(2),
                stored: 1000,
            },
            base_settling: Settling {
                elapsed: Duration::from_secs(3),
                quiet: true,
            },
            phases: PHASES
                .iter()
                .map(|&each| phase(each, if each == Phase::Idle { p99 } else { 2.0 * p99 }))
                .collect(),
        }
    }

    #[test]
    fn every_phase_has_a_table_with_both_sides_and_the_ratio() {
        let options = options();
        let description = WritesDescription {
            command_line: "search_under_writes --base-documents 1000".to_string(),
            dataset: "pypi.ndjson.zst".to_string(),
            documents_read: 5000,
            queries: 100,
            cores: None,
            machine_cpus: 2,
            options: &options,
            unbounded_fresh_documents: 1000,
            copies: 5000,
        };
        let ours = side("coresearch", 2.0);
        let theirs = side("meilisearch", 4.0);
        let text = render(&description, Some(&ours), Some(&theirs));
        assert!(
            text.contains("Command: `search_under_writes --base-documents 1000`"),
            "{text}"
        );
        for phase in PHASES {
            assert!(text.contains(&format!("## {}\n", phase.title())), "{text}");
        }
        assert_eq!(
            text.matches("| metric | coresearch |").count(),
            PHASES.len() + 1
        );
        assert!(
            text.contains("| indexing (documents/s) | 500 | 500 | 1.00 |"),
            "{text}"
        );
        assert!(
            text.contains("| p99 latency (ms) | 4.000 | 8.000 | 0.50 |"),
            "{text}"
        );
        assert!(
            text.contains("| p99 latency / idle p99 | 2.00 | 2.00 | 1.00 |"),
            "{text}"
        );
        // Every phase with the idle phase's connections, and only those.
        assert_eq!(text.matches("| p99 latency / idle p99 |").count(), 6);
        // The phases on every document, and the one growing to it, against the warm phase
        // (all at 2 × p99 here).
        assert_eq!(
            text.matches("| p99 latency / warm p99 | 1.00 | 1.00 | 1.00 |")
                .count(),
            3
        );
        assert!(
            text.contains("| p99.9 latency (ms) | — | — | — |"),
            "{text}"
        );
        assert!(
            text.contains("75 documents/s) in payloads of 250"),
            "{text}"
        );
        assert!(
            text.contains("| writes: of which copies under new ids | 2000 | 2000 | 1.00 |"),
            "{text}"
        );
        assert!(
            text.contains("| tasks: most documents waiting at once | 750 | 750 | 1.00 |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| search started after the last task finished (ms) | 40.0 | 40.0 | 1.00 |"
            ),
            "{text}"
        );
        let alone = render(&description, Some(&ours), None);
        assert!(
            alone.contains("| p99 latency (ms) | 4.000 | — | — |"),
            "{alone}"
        );
    }
}
