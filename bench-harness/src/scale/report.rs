//! The markdown report of a run: the command line and every parameter, one table per size
//! (coresearch, Meilisearch, their ratio), then how each side's p99 grew from the smallest
//! size to the largest.
//!
//! Invariants: a figure a side did not measure (its binary not given, or it failed before that
//! size) prints as `—`, and so does its ratio; the ratio is always coresearch ÷ Meilisearch,
//! whatever the direction in which a figure is better; a side's error is printed above the
//! tables, so a partial table cannot be taken for a complete one.

use std::fmt::Write as _;

use super::figures::{Results, SearchFigures, SideFigures, SizeFigures};
use crate::compare::table::{Row, mebibytes, row, server_versions, write_rows};

/// A figure of a size: label, how it is read, decimals.
type SizeField = (&'static str, fn(&SizeFigures) -> Option<f64>, usize);
/// A figure of a search run: label, how it is read, decimals.
type SearchField = (&'static str, fn(&SearchFigures) -> Option<f64>, usize);

/// Digits between two thousands separators.
const DIGIT_GROUP: usize = 3;

/// The figures of a size the tables show, above the search runs.
const SIZE_FIELDS: [SizeField; 4] = [
    (
        "indexing (documents/s)",
        SizeFigures::documents_per_second,
        0,
    ),
    (
        "disk, allocated (MiB)",
        |size| mebibytes(Some(size.disk_allocated_bytes)),
        1,
    ),
    (
        "RSS after the searches (MiB)",
        |size| mebibytes(size.resident_bytes),
        1,
    ),
    (
        "peak RSS since the start (MiB)",
        |size| mebibytes(size.peak_resident_bytes),
        1,
    ),
];

/// The figures of each search run the tables show.
const SEARCH_FIELDS: [SearchField; 6] = [
    ("queries/s", |search| Some(search.queries_per_second), 1),
    ("p50 (ms)", |search| search.p50_milliseconds, 3),
    ("p99 (ms)", |search| search.p99_milliseconds, 3),
    ("p99.9 (ms)", |search| search.p999_milliseconds, 3),
    (
        "errors (failed + non-2xx)",
        |search| Some(search.errors() as f64),
        0,
    ),
    (
        "host steal (ms)",
        |search| search.host_steal_milliseconds,
        0,
    ),
];

/// `value` with a comma between groups of three digits.
pub fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / DIGIT_GROUP);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % DIGIT_GROUP == 0 {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// "1 connection" or "N connections".
fn connections_label(connections: usize) -> String {
    match connections {
        1 => "1 connection".to_string(),
        count => format!("{count} connections"),
    }
}

/// Both sides' figure read by `read` from their figures at `documents`.
fn at_size(
    results: &Results,
    documents: u64,
    read: impl Fn(&SizeFigures) -> Option<f64>,
) -> [Option<f64>; 2] {
    [&results.coresearch, &results.meilisearch].map(|side| {
        side.as_ref()
            .and_then(|side| side.at(documents))
            .and_then(&read)
    })
}

/// The rows of the table of size `index` (of `results.sizes`).
pub fn size_rows(results: &Results, index: usize) -> Vec<Row> {
    let Some(&documents) = results.sizes.get(index) else {
        return Vec::new();
    };
    let indexing = match index {
        0 => "indexing from empty (s)".to_string(),
        _ => format!(
            "indexing since {} documents (s)",
            grouped(results.sizes[index - 1])
        ),
    };
    let [ours, theirs] = at_size(results, documents, |size| Some(size.indexing_seconds));
    let mut rows = vec![row(indexing, ours, theirs, 2)];
    if results.settle {
        let [ours, theirs] = at_size(results, documents, |size| size.settle_seconds);
        rows.push(row("busy after indexing, until quiet (s)", ours, theirs, 1));
    }
    for (label, read, decimals) in SIZE_FIELDS {
        let [ours, theirs] = at_size(results, documents, read);
        rows.push(row(label, ours, theirs, decimals));
    }
    for connections in &results.connections {
        for (label, read, decimals) in SEARCH_FIELDS {
            let [ours, theirs] = at_size(results, documents, |size| {
                size.search(*connections).and_then(read)
            });
            let label = format!("{}: {label}", connections_label(*connections));
            rows.push(row(label, ours, theirs, decimals));
        }
    }
    rows
}

/// p99 at `largest` over p99 at `smallest` documents, at `connections`, for one side.
fn p99_growth(
    side: Option<&SideFigures>,
    smallest: u64,
    largest: u64,
    connections: usize,
) -> Option<f64> {
    let p99 = |documents: u64| side?.at(documents)?.search(connections)?.p99_milliseconds;
    match (p99(smallest), p99(largest)) {
        (Some(small), Some(large)) if small > 0.0 => Some(large / small),
        _ => None,
    }
}

/// The rows of the growth table: one per connection count (none with fewer than two sizes).
pub fn growth_rows(results: &Results) -> Vec<Row> {
    let (Some(&smallest), Some(&largest)) = (results.sizes.first(), results.sizes.last()) else {
        return Vec::new();
    };
    if smallest == largest {
        return Vec::new();
    }
    results
        .connections
        .iter()
        .map(|connections| {
            let label = format!(
                "p99 at {} ÷ p99 at {} documents, {}",
                grouped(largest),
                grouped(smallest),
                connections_label(*connections)
            );
            let [ours, theirs] = [&results.coresearch, &results.meilisearch]
                .map(|side| p99_growth(side.as_ref(), smallest, largest, *connections));
            row(label, ours, theirs, 2)
        })
        .collect()
}

/// The paragraph of parameters under the title.
fn write_parameters(text: &mut String, results: &Results) {
    let sizes: Vec<String> = results.sizes.iter().map(|size| grouped(*size)).collect();
    let connections: Vec<String> = results.connections.iter().map(usize::to_string).collect();
    let _ = writeln!(
        text,
        "Dataset `{}`: {} documents read, {} (copy k ≥ 1: id + k × 1,000,000, ` edition{{k}}` after the summary); one index per server grown to {} documents in payloads of {}; at each size, once every task succeeded{}: {} queries (seed {}, drawn from the dataset itself) in a closed loop at {} connections, {:.0} s each after {:.0} s warm-up; server cores {}; machine CPUs {}.\n",
        results.dataset,
        grouped(results.documents_read),
        match results.copies {
            1 => "1 copy".to_string(),
            copies => format!("{copies} copies"),
        },
        sizes.join(", "),
        grouped(results.batch),
        if results.settle {
            " and the server went quiet"
        } else {
            ""
        },
        results.queries,
        results.seed,
        connections.join(" and "),
        results.duration_seconds,
        results.warmup_seconds,
        results
            .cores
            .map_or_else(|| "not limited".to_string(), |cores| cores.to_string()),
        results.machine_cpus,
    );
}

/// The whole report in markdown.
pub fn render(results: &Results) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "# Search at scale: coresearch and Meilisearch\n");
    let _ = writeln!(text, "Command: `{}`\n", results.command_line);
    write_parameters(&mut text, results);
    let sides: Vec<&SideFigures> = [&results.coresearch, &results.meilisearch]
        .into_iter()
        .flatten()
        .collect();
    let versions = server_versions(
        sides
            .iter()
            .map(|side| (side.name, side.version.as_deref())),
    );
    let _ = writeln!(text, "Servers: {versions}.\n");
    for side in &sides {
        if let Some(error) = &side.error {
            let _ = writeln!(text, "**{} failed**: {error}\n", side.name);
        }
    }
    for (index, documents) in results.sizes.iter().enumerate() {
        let _ = writeln!(text, "## {} documents\n", grouped(*documents));
        write_rows(&mut text, &size_rows(results, index));
        text.push('\n');
    }
    let growth = growth_rows(results);
    if !growth.is_empty() {
        let _ = writeln!(text, "## Growth of the p99 latency\n");
        write_rows(&mut text, &growth);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(connections: usize, p99: f64) -> SearchFigures {
        SearchFigures {
            connections,
            queries_per_second: 100.0,
            p50_milliseconds: Some(1.0),
            p99_milliseconds: Some(p99),
            p999_milliseconds: Some(p99 * 2.0),
            non_2xx: 1,
            failed: 2,
            server_cores: None,
            host_steal_milliseconds: None,
        }
    }

    fn size(documents: u64, p99: f64) -> SizeFigures {
        SizeFigures {
            documents,
            added: 1000,
            payloads: 1,
            indexing_seconds: 2.0,
            payload_generation_seconds: 0.0,
            settle_seconds: None,
            quiet: None,
            disk_allocated_bytes: 2 * 1024 * 1024,
            disk_apparent_bytes: 0,
            resident_bytes: Some(1024 * 1024),
            peak_resident_bytes: None,
            searches: vec![search(1, p99), search(16, p99 * 4.0)],
        }
    }

    fn results() -> Results {
        let side = |name, sizes, error| SideFigures {
            name,
            version: Some("1.0".to_string()),
            sizes,
            error,
        };
        Results {
            command_line: "search_at_scale --sizes 1000,2000".to_string(),
            dataset: "pypi.ndjson.zst".to_string(),
            documents_read: 1500,
            copies: 2,
            sizes: vec![1000, 2000],
            batch: 1000,
            queries: 10,
            seed: 42,
            connections: vec![1, 16],
            duration_seconds: 2.0,
            warmup_seconds: 1.0,
            settle: false,
            cores: None,
            machine_cpus: 2,
            coresearch: Some(side(
                "coresearch",
                vec![size(1000, 1.0), size(2000, 3.0)],
                None,
            )),
            meilisearch: Some(side(
                "meilisearch",
                vec![size(1000, 2.0)],
                Some("boom".to_string()),
            )),
        }
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(2_658_969), "2,658,969");
        assert_eq!(grouped(100_000), "100,000");
    }

    #[test]
    fn a_size_table_holds_both_sides_their_ratio_and_a_dash_where_a_side_stopped() {
        let report = render(&results());
        assert!(report.contains("**meilisearch failed**: boom"), "{report}");
        assert!(report.contains("## 1,000 documents"), "{report}");
        assert!(report.contains("read, 2 copies (copy k"), "{report}");
        assert!(report.contains("## 2,000 documents"), "{report}");
        assert!(
            report.contains("| 1 connection: p99 (ms) | 1.000 | 2.000 | 0.50 |"),
            "{report}"
        );
        assert!(
            report.contains("| 16 connections: p99 (ms) | 12.000 | — | — |"),
            "{report}"
        );
        assert!(
            report.contains("| indexing since 1,000 documents (s) | 2.00 | — | — |"),
            "{report}"
        );
        assert!(
            report.contains("| 1 connection: errors (failed + non-2xx) | 3 | 3 | 1.00 |"),
            "{report}"
        );
        assert!(!report.contains("busy after indexing"), "{report}");
    }

    #[test]
    fn the_growth_table_divides_the_largest_size_by_the_smallest_per_side() {
        let rows = growth_rows(&results());
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].label,
            "p99 at 2,000 ÷ p99 at 1,000 documents, 1 connection"
        );
        assert_eq!((rows[0].ours, rows[0].theirs), (Some(3.0), None));
        let mut one_size = results();
        one_size.sizes = vec![1000];
        assert!(growth_rows(&one_size).is_empty());
        let rows = size_rows(&one_size, 0);
        assert_eq!(rows[0].label, "indexing from empty (s)");
        assert_eq!(rows[1].ours, Some(500.0), "documents per second");
        one_size.settle = true;
        assert_eq!(
            size_rows(&one_size, 0)[1].label,
            "busy after indexing, until quiet (s)"
        );
    }
}
