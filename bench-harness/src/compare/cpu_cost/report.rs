//! The markdown report of a `search_cpu` run: how it was run, the server CPU and wall latency
//! per query kind and for the whole mix, the costliest queries, the failures, and, for two
//! builds, the queries whose top hits differ.
//!
//! Invariants: the command line and every run parameter are printed first, so a report can be
//! reproduced; a ratio is always `candidate / baseline` (below 1: the candidate costs less)
//! and prints `—` when either side is missing; every failed request is counted, and the first
//! error of up to `FAILURE_EXAMPLES_MAX` failing queries is shown; a request body is printed
//! as compact JSON in a code span, with `|` escaped so it stays in its table cell.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::Build;
use super::passes::PassCounts;
use super::probe::QUIET_TIMEOUT;
use super::tally::{KindSummary, QueryCosts, costliest, summarize_all, summarize_by_kind};
use crate::compare::table::{MISSING, format_ratio, format_value};

/// Failing queries shown per build.
pub const FAILURE_EXAMPLES_MAX: usize = 10;
/// Queries with differing top hits shown.
pub const DIFFERENCE_EXAMPLES_MAX: usize = 10;
/// The label of the whole mix's row.
const ALL_KINDS_LABEL: &str = "**all**";
/// Decimals of CPU microseconds.
const CPU_DECIMALS: usize = 1;
/// Decimals of wall milliseconds.
const WALL_DECIMALS: usize = 3;
/// Decimals of the idle CPU rate (microseconds per second).
const IDLE_DECIMALS: usize = 0;

/// How the run was made.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDescription {
    /// The command line as typed.
    pub command_line: String,
    /// The candidate's binary.
    pub candidate_binary: PathBuf,
    /// The baseline's binary, for an A/B run.
    pub baseline_binary: Option<PathBuf>,
    /// The data directory copied for the servers.
    pub data_dir: PathBuf,
    /// The query mix file.
    pub queries_path: PathBuf,
    /// The index searched.
    pub index_uid: String,
    /// `--cores` given to the servers.
    pub cores: usize,
    /// Warm-up and measured passes.
    pub passes: PassCounts,
    /// The candidate's CPU while idle, in microseconds per second.
    pub candidate_idle_cpu: f64,
    /// The baseline's, for an A/B run.
    pub baseline_idle_cpu: Option<f64>,
    /// CPUs of the machine.
    pub machine_cpus: usize,
}

/// `text` as a markdown code span that stays inside a table cell.
fn code_cell(text: &str) -> String {
    let escaped = text.replace('|', r"\|").replace('\n', " ");
    if escaped.contains('`') {
        format!("`` {escaped} ``")
    } else {
        format!("`{escaped}`")
    }
}

/// A table row from its cells.
fn table_row(cells: &[String]) -> String {
    format!("| {} |", cells.join(" | "))
}

/// A table column: its title, and whether it holds numbers (aligned right) or text (left).
#[derive(Debug, Clone, Copy)]
struct Column {
    title: &'static str,
    numeric: bool,
}

/// A column of text.
const fn text_column(title: &'static str) -> Column {
    Column {
        title,
        numeric: false,
    }
}

/// A column of numbers.
const fn number_column(title: &'static str) -> Column {
    Column {
        title,
        numeric: true,
    }
}

/// A table head: the titles, then the alignment line.
fn table_head(columns: &[Column]) -> String {
    let titles: Vec<String> = columns
        .iter()
        .map(|column| column.title.to_string())
        .collect();
    let alignment: Vec<String> = columns
        .iter()
        .map(|column| if column.numeric { "---:" } else { "---" }.to_string())
        .collect();
    format!("{}\n{}", table_row(&titles), table_row(&alignment))
}

fn optional_path(path: Option<&PathBuf>) -> String {
    path.map_or_else(
        || "none".to_string(),
        |path| code_cell(&path.display().to_string()),
    )
}

fn write_description(text: &mut String, description: &RunDescription, queries: usize) {
    let _ = writeln!(text, "# Server CPU per search query\n");
    let _ = writeln!(text, "Command: {}\n", code_cell(&description.command_line));
    let _ = writeln!(
        text,
        "Candidate build {}; baseline build {}.\n",
        code_cell(&description.candidate_binary.display().to_string()),
        optional_path(description.baseline_binary.as_ref()),
    );
    let _ = writeln!(
        text,
        "Data {} (a copy per server), index `{}`; mix {}: {queries} queries; {} warm-up \
         pass(es), then {} measured pass(es), one request at a time on one keep-alive \
         connection per server; server cores {}; machine CPUs {}.\n",
        code_cell(&description.data_dir.display().to_string()),
        description.index_uid,
        code_cell(&description.queries_path.display().to_string()),
        description.passes.warmup,
        description.passes.measured,
        description.cores,
        description.machine_cpus,
    );
    let baseline_idle = description
        .baseline_idle_cpu
        .map_or_else(String::new, |rate| {
            format!(", baseline {}", format_value(Some(rate), IDLE_DECIMALS))
        });
    let _ = writeln!(
        text,
        "Server CPU: time on a CPU of all the server's threads (`/proc/PID/task/*/schedstat`) \
         from just before a request to just after its answer, once the server went quiet \
         (waited for up to {QUIET_TIMEOUT:?}). It includes the server's background work, \
         which costs while idle (µs per second): candidate {}{baseline_idle}. Means are over \
         answered requests; a kind's mean is the mean of its queries' means.\n",
        format_value(Some(description.candidate_idle_cpu), IDLE_DECIMALS),
    );
}

fn cpu(summary: &KindSummary, build: Build) -> Option<f64> {
    summary.build(build)?.mean_cpu_microseconds()
}

fn wall(summary: &KindSummary, build: Build) -> Option<f64> {
    summary.build(build)?.mean_wall_milliseconds()
}

fn failed_requests(summary: &KindSummary, build: Build) -> String {
    summary.build(build).map_or_else(
        || MISSING.to_string(),
        |figures| figures.failed_requests.to_string(),
    )
}

/// The cells of one kind's row.
fn kind_cells(summary: &KindSummary) -> Vec<String> {
    let mut cells = vec![summary.kind.clone(), summary.queries.to_string()];
    if summary.baseline.is_some() {
        let baseline_cpu = cpu(summary, Build::Baseline);
        let candidate_cpu = cpu(summary, Build::Candidate);
        cells.extend([
            format_value(baseline_cpu, CPU_DECIMALS),
            format_value(candidate_cpu, CPU_DECIMALS),
            format_ratio(candidate_cpu, baseline_cpu),
            format_value(wall(summary, Build::Baseline), WALL_DECIMALS),
            format_value(wall(summary, Build::Candidate), WALL_DECIMALS),
            failed_requests(summary, Build::Baseline),
            failed_requests(summary, Build::Candidate),
        ]);
    } else {
        cells.extend([
            format_value(cpu(summary, Build::Candidate), CPU_DECIMALS),
            format_value(wall(summary, Build::Candidate), WALL_DECIMALS),
            failed_requests(summary, Build::Candidate),
        ]);
    }
    cells
}

fn write_kinds(text: &mut String, costs: &[QueryCosts], with_baseline: bool) {
    let _ = writeln!(text, "## Per query kind\n");
    let columns: &[Column] = if with_baseline {
        &[
            text_column("kind"),
            number_column("queries"),
            number_column("baseline CPU µs"),
            number_column("candidate CPU µs"),
            number_column("candidate / baseline"),
            number_column("baseline wall ms"),
            number_column("candidate wall ms"),
            number_column("baseline failed"),
            number_column("candidate failed"),
        ]
    } else {
        &[
            text_column("kind"),
            number_column("queries"),
            number_column("CPU µs"),
            number_column("wall ms"),
            number_column("failed"),
        ]
    };
    let _ = writeln!(text, "{}", table_head(columns));
    for summary in summarize_by_kind(costs) {
        let _ = writeln!(text, "{}", table_row(&kind_cells(&summary)));
    }
    let all = summarize_all(costs, ALL_KINDS_LABEL);
    let _ = writeln!(text, "{}\n", table_row(&kind_cells(&all)));
}

/// The cells of one ranked query's row.
fn costly_cells(rank: usize, query_costs: &QueryCosts) -> Vec<String> {
    let candidate_cpu = query_costs.candidate.mean_cpu_microseconds();
    let mut cells = vec![rank.to_string(), query_costs.query.kind.clone()];
    if let Some(baseline) = &query_costs.baseline {
        let baseline_cpu = baseline.mean_cpu_microseconds();
        cells.extend([
            format_value(baseline_cpu, CPU_DECIMALS),
            format_value(candidate_cpu, CPU_DECIMALS),
            format_ratio(candidate_cpu, baseline_cpu),
        ]);
    } else {
        cells.push(format_value(candidate_cpu, CPU_DECIMALS));
    }
    cells.extend([
        format_value(
            query_costs.candidate.mean_wall_milliseconds(),
            WALL_DECIMALS,
        ),
        code_cell(&query_costs.query.body.to_string()),
    ]);
    cells
}

fn write_costliest(text: &mut String, costs: &[QueryCosts], top: usize, with_baseline: bool) {
    let ranked = costliest(costs, top);
    let _ = writeln!(
        text,
        "## The {} costliest queries (by candidate CPU)\n",
        ranked.len()
    );
    let columns: &[Column] = if with_baseline {
        &[
            number_column("#"),
            text_column("kind"),
            number_column("baseline CPU µs"),
            number_column("candidate CPU µs"),
            number_column("candidate / baseline"),
            number_column("candidate wall ms"),
            text_column("body"),
        ]
    } else {
        &[
            number_column("#"),
            text_column("kind"),
            number_column("CPU µs"),
            number_column("wall ms"),
            text_column("body"),
        ]
    };
    let _ = writeln!(text, "{}", table_head(columns));
    for (position, query_costs) in ranked.into_iter().enumerate() {
        let _ = writeln!(
            text,
            "{}",
            table_row(&costly_cells(position + 1, query_costs))
        );
    }
    let _ = writeln!(text);
}

fn write_failures(text: &mut String, costs: &[QueryCosts], builds: &[Build]) {
    let _ = writeln!(text, "## Failures\n");
    let all = summarize_all(costs, ALL_KINDS_LABEL);
    for build in builds {
        let Some(figures) = all.build(*build) else {
            continue;
        };
        let _ = writeln!(
            text,
            "- {}: {} failed requests; {} of {} queries never answered; {} requests around \
             which the server did not go quiet in time.",
            build.name(),
            figures.failed_requests,
            all.queries - figures.answered_queries,
            all.queries,
            figures.unsettled_requests,
        );
    }
    let failing: Vec<(Build, &QueryCosts, &str)> = builds
        .iter()
        .flat_map(|build| {
            costs
                .iter()
                .filter_map(move |query_costs| {
                    let error = query_costs.tally(*build)?.first_error.as_deref()?;
                    Some((*build, query_costs, error))
                })
                .take(FAILURE_EXAMPLES_MAX)
        })
        .collect();
    if !failing.is_empty() {
        let _ = writeln!(
            text,
            "\n{}",
            table_head(&[
                text_column("build"),
                text_column("kind"),
                text_column("body"),
                text_column("first error"),
            ])
        );
        for (build, query_costs, error) in failing {
            let cells = [
                build.name().to_string(),
                query_costs.query.kind.clone(),
                code_cell(&query_costs.query.body.to_string()),
                code_cell(error),
            ];
            let _ = writeln!(text, "{}", table_row(&cells));
        }
    }
    let _ = writeln!(text);
}

fn hits_cell(query_costs: &QueryCosts, build: Build) -> String {
    match query_costs
        .tally(build)
        .and_then(|tally| tally.top_hits.as_ref())
    {
        Some(Ok(answer)) => code_cell(&answer.ids.join(", ")),
        Some(Err(error)) => code_cell(error),
        None => MISSING.to_string(),
    }
}

fn write_differences(text: &mut String, costs: &[QueryCosts]) {
    let differing: Vec<&QueryCosts> = costs
        .iter()
        .filter(|query_costs| query_costs.top_hits_differ())
        .collect();
    let compared = costs
        .iter()
        .filter(|query_costs| query_costs.both_answered())
        .count();
    let _ = writeln!(text, "## Top hits\n");
    let _ = writeln!(
        text,
        "{} of the {compared} queries both builds answered have different top hit ids \
         (or the same in another order) in the last measured pass.\n",
        differing.len()
    );
    if differing.is_empty() {
        return;
    }
    let _ = writeln!(
        text,
        "{}",
        table_head(&[
            text_column("kind"),
            text_column("body"),
            text_column("baseline ids"),
            text_column("candidate ids"),
        ])
    );
    for query_costs in differing.into_iter().take(DIFFERENCE_EXAMPLES_MAX) {
        let cells = [
            query_costs.query.kind.clone(),
            code_cell(&query_costs.query.body.to_string()),
            hits_cell(query_costs, Build::Baseline),
            hits_cell(query_costs, Build::Candidate),
        ];
        let _ = writeln!(text, "{}", table_row(&cells));
    }
    let _ = writeln!(text);
}

/// The whole report in markdown; `top` is the number of costliest queries listed (none: no
/// such section).
pub fn render(description: &RunDescription, costs: &[QueryCosts], top: usize) -> String {
    let with_baseline = description.baseline_binary.is_some();
    let builds: &[Build] = if with_baseline {
        &[Build::Baseline, Build::Candidate]
    } else {
        &[Build::Candidate]
    };
    let mut text = String::new();
    write_description(&mut text, description, costs.len());
    write_kinds(&mut text, costs, with_baseline);
    if top > 0 {
        write_costliest(&mut text, costs, top, with_baseline);
    }
    write_failures(&mut text, costs, builds);
    if with_baseline {
        write_differences(&mut text, costs);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::cpu_cost::tally::tests::{answered, costs, failed};

    fn description(baseline: bool) -> RunDescription {
        RunDescription {
            command_line: "search_cpu --binary new".to_string(),
            candidate_binary: PathBuf::from("/builds/new"),
            baseline_binary: baseline.then(|| PathBuf::from("/builds/old")),
            data_dir: PathBuf::from("/data"),
            queries_path: PathBuf::from("/work/queries.ndjson"),
            index_uid: "pypi".to_string(),
            cores: 2,
            passes: PassCounts {
                warmup: 1,
                measured: 2,
            },
            candidate_idle_cpu: 3_000.0,
            baseline_idle_cpu: baseline.then_some(2_500.0),
            machine_cpus: 2,
        }
    }

    fn line_starting<'a>(text: &'a str, start: &str) -> &'a str {
        text.lines()
            .find(|line| line.starts_with(start))
            .unwrap_or_default()
    }

    #[test]
    fn ab_rows_show_both_means_and_the_candidate_over_baseline_ratio() {
        let mix = vec![
            costs(
                0,
                "typo",
                vec![answered(150, 2, &["1"]), answered(150, 2, &["1"])],
                Some(vec![answered(100, 1, &["1"]), answered(100, 1, &["1"])]),
            ),
            costs(
                1,
                "prefix",
                vec![answered(80, 1, &["2", "3"])],
                Some(vec![failed("status 500")]),
            ),
        ];
        let text = render(&description(true), &mix, 5);
        assert_eq!(
            line_starting(&text, "| typo |"),
            "| typo | 1 | 100.0 | 150.0 | 1.50 | 1.000 | 2.000 | 0 | 0 |"
        );
        assert_eq!(
            line_starting(&text, "| prefix |"),
            "| prefix | 1 | — | 80.0 | — | — | 1.000 | 1 | 0 |"
        );
        // The whole mix: candidate (150 + 80) / 2, baseline 100 over its one answered query.
        assert_eq!(
            line_starting(&text, "| **all** |"),
            "| **all** | 2 | 100.0 | 115.0 | 1.15 | 1.000 | 1.500 | 1 | 0 |"
        );
        assert_eq!(
            line_starting(&text, "| 1 |"),
            "| 1 | typo | 100.0 | 150.0 | 1.50 | 2.000 | `{\"q\":\"query 0\"}` |"
        );
        assert!(text.contains("## The 2 costliest queries"));
        assert!(text.contains("- baseline: 1 failed requests; 1 of 2 queries never answered"));
        assert!(text.contains("| baseline | prefix | `{\"q\":\"query 1\"}` | `status 500` |"));
        assert!(text.contains("0 of the 1 queries both builds answered have different"));
        assert!(text.contains("(µs per second): candidate 3000, baseline 2500."));
    }

    #[test]
    fn a_single_build_has_no_ratio_and_lists_differences_never() {
        let mix = vec![
            costs(0, "one_word", vec![answered(40, 1, &[])], None),
            costs(1, "one_word", vec![answered(60, 3, &[])], None),
            costs(2, "facets", vec![answered(500, 9, &[])], None),
        ];
        let text = render(&description(false), &mix, 1);
        assert_eq!(
            line_starting(&text, "| one_word |"),
            "| one_word | 2 | 50.0 | 2.000 | 0 |"
        );
        assert_eq!(
            line_starting(&text, "| **all** |"),
            "| **all** | 3 | 200.0 | 4.333 | 0 |"
        );
        assert_eq!(
            line_starting(&text, "| 1 |"),
            "| 1 | facets | 500.0 | 9.000 | `{\"q\":\"query 2\"}` |"
        );
        assert!(text.contains("## The 1 costliest queries"));
        assert!(text.contains("baseline build none"));
        assert!(text.contains("(µs per second): candidate 3000."));
        assert!(!text.contains("## Top hits"));
    }

    #[test]
    fn differing_top_hits_are_counted_and_shown() {
        let mix = vec![
            costs(
                0,
                "two_words",
                vec![answered(1, 1, &["7", "8"])],
                Some(vec![answered(1, 1, &["8", "7"])]),
            ),
            costs(
                1,
                "two_words",
                vec![answered(1, 1, &["5"])],
                Some(vec![answered(1, 1, &["5"])]),
            ),
        ];
        let text = render(&description(true), &mix, 0);
        assert!(text.contains("1 of the 2 queries both builds answered have different"));
        assert!(text.contains("| two_words | `{\"q\":\"query 0\"}` | `8, 7` | `7, 8` |"));
        assert!(!text.contains("costliest"));
    }

    #[test]
    fn code_cells_escape_pipes_and_backticks() {
        assert_eq!(code_cell(r#"{"q":"a|b"}"#), r#"`{"q":"a\|b"}`"#);
        assert_eq!(code_cell("a`b"), "`` a`b ``");
    }
}
