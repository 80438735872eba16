//! The vector comparison's markdown: the run parameters, then for each configuration one
//! table of metrics with coresearch, Meilisearch and their ratio.
//!
//! Invariants: a value missing on one side (that side not run or failed, or the figure not
//! measurable) prints as `—` and so does its ratio; the ratio is always
//! `coresearch / meilisearch`, whatever the direction in which a metric is better; the
//! command line and every run parameter are printed above the tables, so a published table
//! can be reproduced.

use std::fmt::Write as _;

use super::side::{SearchFigures, VectorResults};
use crate::compare::table::{LoadFigures, format_ratio, format_value};

/// Bytes per mebibyte.
const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;

/// The parameters of a run, printed above the tables.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorRunDescription {
    /// The command line, as typed.
    pub command_line: String,
    /// The data set directory.
    pub dataset: String,
    /// Vector length.
    pub dimensions: usize,
    /// Documents sent.
    pub documents: usize,
    /// Queries asked.
    pub queries: usize,
    /// Documents per payload.
    pub batch: usize,
    /// Connections of the concurrent runs.
    pub connections: usize,
    /// Measured seconds of each load run.
    pub duration_seconds: f64,
    /// Unmeasured warm-up seconds of each load run.
    pub warmup_seconds: f64,
    /// Seed of the query choice.
    pub seed: u64,
    /// `--cores` given to the servers.
    pub cores: Option<usize>,
    /// CPUs of the machine.
    pub machine_cpus: usize,
    /// Seconds the exact answers took.
    pub exact_seconds: f64,
}

/// One configuration's results on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigurationResults {
    /// `binaryQuantized`.
    pub binary_quantized: bool,
    /// coresearch's results, when it ran and succeeded.
    pub ours: Option<VectorResults>,
    /// Meilisearch's results, when it ran and succeeded.
    pub theirs: Option<VectorResults>,
}

/// One row of a table.
struct Row {
    label: String,
    ours: Option<f64>,
    theirs: Option<f64>,
    decimals: usize,
}

fn mebibytes(bytes: Option<u64>) -> Option<f64> {
    bytes.map(|bytes| bytes as f64 / BYTES_PER_MEBIBYTE)
}

/// One figure of a side.
type Pick = Box<dyn Fn(&VectorResults) -> Option<f64>>;
/// One figure of a load run.
type LoadField = fn(&LoadFigures) -> Option<f64>;

fn load_fields(with_p999: bool) -> Vec<(&'static str, LoadField, usize)> {
    let mut fields: Vec<(&'static str, LoadField, usize)> = vec![
        ("QPS", |figures| Some(figures.throughput), 1),
        ("p50 (ms)", |figures| figures.p50_milliseconds, 3),
        ("p99 (ms)", |figures| figures.p99_milliseconds, 3),
    ];
    if with_p999 {
        fields.push(("p99.9 (ms)", |figures| figures.p999_milliseconds, 3));
    }
    fields.push((
        "non-2xx + errors",
        |figures| Some((figures.non_2xx + figures.errors) as f64),
        0,
    ));
    fields
}

/// The rows of every metric, as functions of a side's results.
fn metrics(connections: usize) -> Vec<(String, Pick, usize)> {
    let mut metrics: Vec<(String, Pick, usize)> = vec![
        (
            "documents stored".into(),
            Box::new(|side: &VectorResults| Some(side.ingestion.stored as f64)),
            0,
        ),
        (
            "indexing (docs/s)".into(),
            Box::new(|side: &VectorResults| Some(side.indexing_rate())),
            1,
        ),
        (
            "indexing time (s)".into(),
            Box::new(|side: &VectorResults| Some(side.ingestion.elapsed.as_secs_f64())),
            2,
        ),
        (
            "peak RSS after indexing (MiB)".into(),
            Box::new(|side: &VectorResults| mebibytes(side.peak_rss_indexing)),
            1,
        ),
        (
            "disk after indexing, allocated (MiB)".into(),
            Box::new(|side: &VectorResults| mebibytes(Some(side.disk.allocated_bytes))),
            1,
        ),
        (
            "disk once quiet, allocated (MiB)".into(),
            Box::new(|side: &VectorResults| mebibytes(Some(side.disk_settled.allocated_bytes))),
            1,
        ),
        (
            "quiet after indexing (s)".into(),
            Box::new(|side: &VectorResults| Some(side.settling.elapsed.as_secs_f64())),
            1,
        ),
    ];
    type Kind = fn(&VectorResults) -> &SearchFigures;
    let kinds: [(&str, Kind, bool); 4] = [
        ("semantic", |side| &side.semantic, true),
        ("hybrid 0.5", |side| &side.hybrid, false),
        (
            "filtered 1 % (bucket = 7)",
            |side| &side.filtered_one_percent,
            false,
        ),
        (
            "filtered 10 % (bucket < 10)",
            |side| &side.filtered_ten_percent,
            false,
        ),
    ];
    for (title, kind, is_semantic) in kinds {
        if title != "hybrid 0.5" {
            metrics.push((
                format!("{title}: recall@10"),
                Box::new(move |side: &VectorResults| kind(side).recall),
                4,
            ));
            metrics.push((
                format!("{title}: failed recall queries"),
                Box::new(move |side: &VectorResults| Some(kind(side).failures as f64)),
                0,
            ));
        }
        if is_semantic {
            for (label, field, decimals) in load_fields(true) {
                metrics.push((
                    format!("{title}, 1 connection: {label}"),
                    Box::new(move |side: &VectorResults| {
                        kind(side).single.as_ref().and_then(field)
                    }),
                    decimals,
                ));
            }
        }
        for (label, field, decimals) in load_fields(is_semantic) {
            metrics.push((
                format!("{title}, {connections} connections: {label}"),
                Box::new(move |side: &VectorResults| field(&kind(side).concurrent)),
                decimals,
            ));
        }
    }
    metrics.push((
        "peak RSS at the end (MiB)".into(),
        Box::new(|side: &VectorResults| mebibytes(side.peak_rss_end)),
        1,
    ));
    metrics
}

/// The markdown of the whole run.
pub fn render(
    description: &VectorRunDescription,
    configurations: &[ConfigurationResults],
) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "# Vector search: coresearch vs Meilisearch\n");
    let _ = writeln!(text, "```\n{}\n```\n", description.command_line);
    let _ = writeln!(
        text,
        "Data set `{}`: {} documents of {} dimensions, {} queries; payloads of {} documents; \
         load runs {:.0} s after {:.0} s of warm-up, closed loop, 1 and {} keep-alive \
         connections, seed {}; server cores: {}; machine CPUs: {}; exact answers by brute \
         force in {:.1} s.\n",
        description.dataset,
        description.documents,
        description.dimensions,
        description.queries,
        description.batch,
        description.duration_seconds,
        description.warmup_seconds,
        description.connections,
        description.seed,
        description
            .cores
            .map_or_else(|| "all".to_string(), |cores| cores.to_string()),
        description.machine_cpus,
        description.exact_seconds,
    );
    let _ = writeln!(
        text,
        "Ratio = coresearch / Meilisearch, whatever the direction in which a metric is better. \
         Recall@10 is against exact cosine top-10 (restricted to the filter's rows for the \
         filtered searches). Peak RSS is `VmHWM`.\n"
    );
    for configuration in configurations {
        let _ = writeln!(
            text,
            "## binaryQuantized: {}\n",
            configuration.binary_quantized
        );
        let version = |side: Option<&VectorResults>| {
            side.map_or_else(
                || crate::compare::table::MISSING.to_string(),
                |side| side.version.clone().unwrap_or_else(|| "?".to_string()),
            )
        };
        let _ = writeln!(text, "| metric | coresearch | Meilisearch | ratio |");
        let _ = writeln!(text, "|---|---:|---:|---:|");
        let _ = writeln!(
            text,
            "| version | {} | {} | |",
            version(configuration.ours.as_ref()),
            version(configuration.theirs.as_ref())
        );
        let rows: Vec<Row> = metrics(description.connections)
            .into_iter()
            .map(|(label, pick, decimals)| Row {
                label,
                ours: configuration.ours.as_ref().and_then(&pick),
                theirs: configuration.theirs.as_ref().and_then(&pick),
                decimals,
            })
            .collect();
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
        text.push('\n');
    }
    text
}
