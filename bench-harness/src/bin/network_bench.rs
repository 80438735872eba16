//! `network_bench`: sharded networks of 1, 2, 4, … local instances, for coresearch and for
//! Meilisearch Enterprise, one network at a time on the same machine.
//!
//! For each server and each network size: starts the instances (pinned as
//! `bench_harness::network::placement` says), turns on their `network` feature, forms one
//! network of one shard per instance with `ms0` leading, creates index `pypi` through the
//! leader (`name` and `summary` searchable, `year` and `rank` filterable and sortable), sends
//! the dataset to the leader and measures documents per second and each instance's CPU time
//! and peak memory until every instance is idle; then asks every query of the mix once
//! through the leader (top-10 agreement with the one-instance network), and loads the leader
//! at each connection count. At the size `--change-from`, the filled network is then grown to
//! `--change-to` instances, one new shard each, and the `networkTopologyChange` is timed
//! until every instance's change succeeded and every instance is idle; the document counts
//! must add up to the dataset. Prints a markdown report and writes it to `--output`.
//!
//! Exit status: 0 after a run (failed phases are reported in the tables), 2 for unusable
//! options or an unreadable dataset.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bench_harness::compare::agreement::agreement;
use bench_harness::compare::command_line::command_line;
use bench_harness::compare::query_mix::{Query, generate};
use bench_harness::compare::server::ServerKind;
use bench_harness::compare::settle::wait_until_quiet;
use bench_harness::compare::vocabulary::{DocumentText, Vocabulary};
use bench_harness::load::Workload;
use bench_harness::load::duration_arg::parse_duration;
use bench_harness::measure::read_lines;
use bench_harness::network::change::grow;
use bench_harness::network::cluster::{Cluster, ClusterSpec};
use bench_harness::network::ingestion::{create_network_index, ingest_through_leader};
use bench_harness::network::machine::describe_machine;
use bench_harness::network::ranking::ranking_agreement;
use bench_harness::network::report::{RunDescription, render};
use bench_harness::network::results::{ChangeResult, InstancePlace, ServerResults, SizeResult};
use bench_harness::network::searching::{
    LoadSettings, PassAnswers, load_leader, search_workload, top_hits_pass,
};
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;

/// Sharded-network benchmark of coresearch and Meilisearch Enterprise.
#[derive(Debug, Parser)]
#[command(name = "network_bench", version)]
struct Arguments {
    /// The coresearch binary (omit to run Meilisearch alone)
    #[arg(long)]
    coresearch_bin: Option<PathBuf>,
    /// The Meilisearch binary, built with its `enterprise` feature (omit to run coresearch alone)
    #[arg(long)]
    meilisearch_bin: Option<PathBuf>,
    /// The zstd-compressed NDJSON dataset
    #[arg(long, default_value = "../shared/datasets/pypi-packages.ndjson.zst")]
    dataset: String,
    /// Use only the first N documents (0: all)
    #[arg(long, default_value_t = 0)]
    documents: usize,
    /// Documents per NDJSON payload
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Network sizes, run in increasing order
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    instances: Vec<usize>,
    /// Connections of the search load runs
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    connections: Vec<usize>,
    /// The network size that is grown after its searches (0: no topology change)
    #[arg(long, default_value_t = 2)]
    change_from: usize,
    /// The size it is grown to
    #[arg(long, default_value_t = 4)]
    change_to: usize,
    /// Servers (`coresearch`, `meilisearch`) whose new instances get the index before the
    /// change, outside the timed window (Meilisearch 1.41 fails a new instance's change when two
    /// exporters both create the index on it)
    #[arg(long, value_delimiter = ',')]
    precreate_index_on: Vec<String>,
    /// The longest wait for every instance's change task
    #[arg(long, value_parser = parse_duration, default_value = "30m")]
    change_timeout: Duration,
    /// The port of coresearch's instance 0 (instance i: port + i)
    #[arg(long, default_value_t = 17820)]
    coresearch_port: u16,
    /// The port of Meilisearch's instance 0
    #[arg(long, default_value_t = 17860)]
    meilisearch_port: u16,
    /// Master key of every instance (and every remote's search and write key)
    #[arg(long, default_value = "network-bench-master-key-0123456789")]
    master_key: String,
    /// Where the instances' directories, logs and load reports go
    #[arg(long, default_value = "network-bench-work")]
    work_dir: PathBuf,
    /// Keep the instances' data directories after each network
    #[arg(long)]
    keep_data: bool,
    /// The index created through the leader
    #[arg(long, default_value = "pypi")]
    index: String,
    /// Queries in the mix
    #[arg(long, default_value_t = 2000)]
    queries: usize,
    /// Seed of the query mix and of the query choice during the load runs
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Measured time of each load run
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    duration: Duration,
    /// Unmeasured warm-up before each load run
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    warmup: Duration,
    /// Longest wait for a response during the load runs
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Write the markdown report here too
    #[arg(long)]
    output: Option<PathBuf>,
}

/// What every network of every server is given.
struct Inputs {
    lines: Vec<String>,
    queries: Vec<Query>,
    workload: Workload,
    settings: LoadSettings,
}

/// The dataset's lines and the query mix drawn from them.
fn prepare(arguments: &Arguments) -> Result<Inputs, String> {
    let limit = match arguments.documents {
        0 => usize::MAX,
        documents => documents,
    };
    eprintln!("reading {}", arguments.dataset);
    let lines = read_lines(&arguments.dataset, limit)?;
    let texts: Vec<DocumentText> = lines
        .iter()
        .filter_map(|line| DocumentText::parse(line))
        .collect();
    let vocabulary = Vocabulary::build(&texts);
    let queries = generate(&vocabulary, &texts, arguments.queries, arguments.seed);
    if queries.is_empty() {
        return Err("the dataset has no searchable words: no query can be made".to_string());
    }
    eprintln!("{} documents, {} queries", lines.len(), queries.len());
    let workload = search_workload(&arguments.index, &queries)?;
    Ok(Inputs {
        lines,
        queries,
        workload,
        settings: LoadSettings {
            duration: arguments.duration,
            warmup: arguments.warmup,
            timeout: arguments.timeout,
            seed: arguments.seed,
        },
    })
}

/// What the network's top-hits pass says against the one-instance network's: the id and
/// the ranking agreements (none without a one-instance pass).
type Agreements = (
    Option<bench_harness::compare::agreement::Agreement>,
    Option<bench_harness::network::ranking::RankingAgreement>,
);

fn agreements(queries: &[Query], answers: &PassAnswers, one: Option<&PassAnswers>) -> Agreements {
    match one {
        Some(one) => (
            Some(agreement(
                queries,
                &answers.hits,
                &one.hits,
                bench_harness::compare::agreement::EXAMPLES_PER_KIND_DEFAULT,
            )),
            Some(ranking_agreement(queries, &answers.keys, &one.keys)),
        ),
        None => (None, None),
    }
}

/// Waits until every instance went quiet after indexing (background work would otherwise be
/// measured by the searches).
fn settle(cluster: &Cluster, indexed_at: Instant) {
    for instance in &cluster.instances {
        let Ok(pid) = i32::try_from(instance.process.pid) else {
            continue;
        };
        match wait_until_quiet(pid, indexed_at) {
            Ok(settling) => eprintln!(
                "  {} quiet after {:.1} s",
                instance.name,
                settling.elapsed.as_secs_f64()
            ),
            Err(error) => eprintln!("  {}: {error}", instance.name),
        }
    }
}

/// Fills and searches one network; answers its results and its top hits.
fn measure_size(
    cluster: &mut Cluster,
    arguments: &Arguments,
    inputs: &Inputs,
    one: Option<&PassAnswers>,
) -> (SizeResult, PassAnswers) {
    let size = cluster.instances.len();
    let places = cluster
        .instances
        .iter()
        .map(|instance| InstancePlace {
            name: instance.name.clone(),
            cpu_list: instance.cpu_list.clone(),
            cores: instance.cores,
        })
        .collect();
    let mut result = SizeResult {
        instances: size,
        places,
        ingestion: Err("not run".to_string()),
        top_hits_failures: 0,
        agreement_with_one: None,
        ranking_with_one: None,
        searches: Err("not run: the ingestion failed".to_string()),
    };
    eprintln!(
        "  ingesting {} documents through the leader",
        inputs.lines.len()
    );
    result.ingestion = create_network_index(cluster, &arguments.index).and_then(|()| {
        ingest_through_leader(cluster, &arguments.index, &inputs.lines, arguments.batch)
    });
    match &result.ingestion {
        Ok(ingestion) => eprintln!(
            "  {:.0} documents/s, held {:?}",
            ingestion.documents_per_second(),
            ingestion.held
        ),
        Err(error) => {
            eprintln!("  ingestion failed: {error}");
            return (result, PassAnswers::default());
        }
    }
    settle(cluster, Instant::now());
    eprintln!("  top-hits pass over {} queries", inputs.queries.len());
    let hits = top_hits_pass(cluster, &arguments.index, &inputs.queries);
    result.top_hits_failures = hits.failures();
    if let Some(Err(first)) = hits.hits.iter().find(|hits| hits.is_err()) {
        eprintln!(
            "  {} queries failed, the first: {first}",
            result.top_hits_failures
        );
    }
    (result.agreement_with_one, result.ranking_with_one) = agreements(&inputs.queries, &hits, one);
    let mut loads = Vec::new();
    for &connections in &arguments.connections {
        eprintln!("  load: {connections} connections");
        let report_path = cluster
            .spec
            .work_dir
            .join(format!("search-{connections}-connections.json"));
        match load_leader(
            cluster,
            &inputs.workload,
            &inputs.settings,
            connections,
            &report_path,
        ) {
            Ok(load) => {
                eprintln!(
                    "    {:.0} searches/s, p50 {:?} ms, p99 {:?} ms",
                    load.figures.throughput,
                    load.figures.p50_milliseconds,
                    load.figures.p99_milliseconds
                );
                loads.push(load);
            }
            Err(error) => {
                result.searches = Err(error);
                return (result, hits);
            }
        }
    }
    result.searches = Ok(loads);
    (result, hits)
}

/// Grows the filled network and checks its searches afterwards.
fn measure_change(
    cluster: &mut Cluster,
    arguments: &Arguments,
    inputs: &Inputs,
    one: Option<&PassAnswers>,
) -> ChangeResult {
    let added = arguments.change_to.saturating_sub(cluster.instances.len());
    eprintln!(
        "  topology change: {} → {} instances",
        cluster.instances.len(),
        arguments.change_to
    );
    let kind = cluster.spec.kind.name();
    let precreate = arguments.precreate_index_on.iter().any(|name| name == kind);
    let outcome = grow(
        cluster,
        added,
        &arguments.index,
        precreate,
        arguments.change_timeout,
    );
    let mut result = ChangeResult {
        outcome,
        agreement_with_one: None,
        ranking_with_one: None,
        top_hits_failures: 0,
    };
    match &result.outcome {
        Ok(outcome) => eprintln!(
            "  every change succeeded after {:.1} s, idle after {:.1} s, held {:?}",
            outcome.changes_succeeded_after.as_secs_f64(),
            outcome.idle_after.as_secs_f64(),
            outcome.held_after
        ),
        Err(error) => {
            eprintln!("  the change failed: {error}");
            return result;
        }
    }
    let hits = top_hits_pass(cluster, &arguments.index, &inputs.queries);
    result.top_hits_failures = hits.failures();
    if let Some(Err(first)) = hits.hits.iter().find(|hits| hits.is_err()) {
        eprintln!(
            "  after the change, {} queries failed, the first: {first}",
            result.top_hits_failures
        );
    }
    (result.agreement_with_one, result.ranking_with_one) = agreements(&inputs.queries, &hits, one);
    result
}

/// Removes the data directories of a stopped network (its logs and reports stay).
fn remove_data(spec: &ClusterSpec) {
    let Ok(entries) = std::fs::read_dir(&spec.work_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let _ = std::fs::remove_dir_all(entry.path().join("data"));
    }
}

/// Every network size of one server, and its change.
fn run_server(
    arguments: &Arguments,
    inputs: &Inputs,
    kind: ServerKind,
    binary: &Path,
    base_port: u16,
) -> ServerResults {
    let mut results = ServerResults {
        name: kind.name(),
        version: None,
        sizes: Vec::new(),
        change: None,
    };
    let mut one: Option<PassAnswers> = None;
    for &size in &arguments.instances {
        eprintln!("[{}] {size} instance(s)", kind.name());
        let spec = ClusterSpec {
            kind,
            binary: binary.to_path_buf(),
            work_dir: arguments
                .work_dir
                .join(kind.name())
                .join(format!("{size}-instances")),
            base_port,
            master_key: arguments.master_key.clone(),
            machine_cpus: std::thread::available_parallelism().map_or(1, usize::from),
        };
        let mut cluster = match Cluster::start(&spec, size) {
            Ok(cluster) => cluster,
            Err(error) => {
                eprintln!("  cannot form the network: {error}");
                results.sizes.push(SizeResult {
                    instances: size,
                    places: Vec::new(),
                    ingestion: Err(format!("cannot form the network: {error}")),
                    top_hits_failures: 0,
                    agreement_with_one: None,
                    ranking_with_one: None,
                    searches: Err("not run".to_string()),
                });
                remove_data(&spec);
                continue;
            }
        };
        results.version = results.version.or_else(|| cluster.version());
        let (size_result, hits) = measure_size(&mut cluster, arguments, inputs, one.as_ref());
        let filled = size_result.ingestion.is_ok();
        results.sizes.push(size_result);
        if size == 1 && filled {
            one = Some(hits);
        }
        if size == arguments.change_from && arguments.change_to > size && filled {
            results.change = Some(measure_change(
                &mut cluster,
                arguments,
                inputs,
                one.as_ref(),
            ));
        }
        cluster.stop();
        if !arguments.keep_data {
            remove_data(&spec);
        }
    }
    results
}

/// `path` made absolute against the current directory.
fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
}

/// The arguments checked, their paths made absolute, the sizes in increasing order.
fn checked(mut arguments: Arguments) -> Result<Arguments, String> {
    arguments.work_dir = absolute(&arguments.work_dir)?;
    for binary in [
        &mut arguments.coresearch_bin,
        &mut arguments.meilisearch_bin,
    ]
    .into_iter()
    .flatten()
    {
        if !binary.is_file() {
            return Err(format!("{} is not a file", binary.display()));
        }
        *binary = absolute(binary)?;
    }
    arguments.instances.retain(|size| *size > 0);
    arguments.instances.sort_unstable();
    arguments.instances.dedup();
    if arguments.instances.is_empty() {
        return Err("--instances names no network size".to_string());
    }
    Ok(arguments)
}

fn run(arguments: &Arguments) -> Result<(), String> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", arguments.work_dir.display()))?;
    let machine = describe_machine();
    let inputs = prepare(arguments)?;
    let mut servers = Vec::new();
    if let Some(binary) = &arguments.coresearch_bin {
        servers.push(run_server(
            arguments,
            &inputs,
            ServerKind::Coresearch,
            binary,
            arguments.coresearch_port,
        ));
    }
    if let Some(binary) = &arguments.meilisearch_bin {
        servers.push(run_server(
            arguments,
            &inputs,
            ServerKind::Meilisearch,
            binary,
            arguments.meilisearch_port,
        ));
    }
    let description = RunDescription {
        command_line: command_line(),
        machine,
        dataset: arguments.dataset.clone(),
        documents: inputs.lines.len(),
        batch: arguments.batch,
        queries: inputs.queries.len(),
        seed: arguments.seed,
        duration_seconds: arguments.duration.as_secs_f64(),
        warmup_seconds: arguments.warmup.as_secs_f64(),
    };
    let report = render(&description, &servers);
    print!("{report}");
    if let Some(path) = &arguments.output {
        std::fs::write(path, &report)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    if arguments.coresearch_bin.is_none() && arguments.meilisearch_bin.is_none() {
        eprintln!("network_bench: give --coresearch-bin, --meilisearch-bin, or both");
        return ExitCode::from(EXIT_USAGE);
    }
    let arguments = match checked(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("network_bench: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(&arguments) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("network_bench: {error}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
