//! Many small indexes on one instance, coresearch beside Meilisearch in the same run: one
//! index per tenant, five real PyPI documents each, posted by a few clients at once.
//!
//! Per server, one after the other on a fresh data directory:
//! 1. fill: `POST /indexes/tenant{i}/documents` for every tenant; the time until every task
//!    finished, and how many failed;
//! 2. the process afterwards: resident memory (now and peak), virtual size, open files,
//!    mappings, and the data directory's disk usage;
//! 3. hot searches: one client searching ten tenants round robin (p50, p99);
//! 4. cold searches: every tenant not searched yet, in a shuffled order, each searched once,
//!    with two other clients searching the hot tenants meanwhile (p50, p99, max), and whether
//!    each answered its own documents;
//! 5. restart: SIGTERM, a start on the same directory, the time until `/health` answers, the
//!    time of the first search, and a pass over every tenant counting the ones that answer.
//!
//! Queries come from the data: each tenant is searched for a word of one of its own
//! documents' names or summaries, so every search has hits.
//!
//! ```text
//! cargo run --release -p bench-harness --bin many_indexes -- \
//!     --coresearch target/release/coresearch --meilisearch ../meili/target/release/meilisearch \
//!     --dataset ../shared/datasets/pypi-packages.ndjson.zst --indexes 10000
//! ```

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bench_harness::compare::client::Client;
use bench_harness::compare::disk::disk_usage;
use bench_harness::compare::server::{ServerKind, ServerProcess, ServerSpec, server_binary};
use bench_harness::measure::read_documents;
use clap::Parser;
use serde_json::{Map, Value, json};

/// Documents per tenant.
const DOCUMENTS_PER_TENANT: usize = 5;
/// Clients posting documents at once, and passing over every tenant after the restart.
const CLIENTS: usize = 4;
/// Tenants the hot searches go to.
const HOT_TENANTS: usize = 10;
/// Hot searches measured.
const HOT_SEARCHES: usize = 2_000;
/// Clients searching hot tenants while the cold ones are searched.
const HOT_CLIENTS_DURING_COLD: usize = 2;
/// Cold tenants searched at most.
const COLD_SEARCHES_MAX: usize = 2_000;
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long every task may take to finish.
const TASKS_WAIT_MAX: Duration = Duration::from_secs(3 * 3600);
/// How long a restart may take to answer `/health`.
const RESTART_WAIT_MAX: Duration = Duration::from_secs(600);
/// The pause between two looks at the task queue.
const TASK_POLL_INTERVAL: Duration = Duration::from_millis(200);
/// The master key both servers run with.
const MASTER_KEY: &str = "a-master-key-of-sixteen-bytes-or-more";

#[derive(Parser, Debug)]
struct Arguments {
    /// The coresearch binary.
    #[arg(long)]
    coresearch: Option<PathBuf>,
    /// The Meilisearch binary.
    #[arg(long)]
    meilisearch: Option<PathBuf>,
    /// The PyPI dataset (zstd NDJSON).
    #[arg(long)]
    dataset: String,
    /// Tenants (indexes).
    #[arg(long, default_value_t = 10_000)]
    indexes: usize,
    /// Where the servers work (emptied first).
    #[arg(long, default_value = "target/many-indexes")]
    work_dir: PathBuf,
    /// Cores each server uses.
    #[arg(long, default_value_t = 2)]
    cores: usize,
    /// Arguments given to coresearch only (e.g. `--shards-per-index=16`).
    #[arg(long, allow_hyphen_values = true)]
    coresearch_argument: Vec<String>,
    /// The first loopback port.
    #[arg(long, default_value_t = 7750)]
    port: u16,
}

/// What one server measured.
#[derive(Debug, Default)]
struct Figures {
    fill_seconds: f64,
    failed_tasks: u64,
    resident_bytes: u64,
    peak_resident_bytes: u64,
    virtual_bytes: u64,
    open_files: usize,
    mappings: usize,
    disk_bytes: u64,
    hot: Latencies,
    cold: Latencies,
    cold_wrong: usize,
    restart_health_seconds: f64,
    first_search_millis: f64,
    answering_after_restart: usize,
}

#[derive(Debug, Default)]
struct Latencies {
    count: usize,
    p50_millis: f64,
    p99_millis: f64,
    max_millis: f64,
}

impl Latencies {
    fn of(mut samples: Vec<Duration>) -> Latencies {
        samples.sort_unstable();
        let at = |fraction: f64| {
            samples
                .get(
                    ((samples.len() as f64 * fraction) as usize)
                        .min(samples.len().saturating_sub(1)),
                )
                .map_or(0.0, |sample| sample.as_secs_f64() * 1e3)
        };
        Latencies {
            count: samples.len(),
            p50_millis: at(0.50),
            p99_millis: at(0.99),
            max_millis: samples
                .last()
                .map_or(0.0, |sample| sample.as_secs_f64() * 1e3),
        }
    }
}

/// One tenant's documents and the word it is searched for.
struct Tenant {
    documents: Vec<Map<String, Value>>,
    query: String,
}

fn main() -> Result<(), String> {
    let arguments = Arguments::parse();
    let documents = read_documents(&arguments.dataset, arguments.indexes * DOCUMENTS_PER_TENANT);
    if documents.len() < arguments.indexes * DOCUMENTS_PER_TENANT {
        return Err("the dataset has too few documents".into());
    }
    let tenants = tenants_of(documents, arguments.indexes);
    let mut servers = Vec::new();
    if let Some(binary) = &arguments.coresearch {
        servers.push((ServerKind::Coresearch, server_binary(binary)?));
    }
    if let Some(binary) = &arguments.meilisearch {
        servers.push((ServerKind::Meilisearch, server_binary(binary)?));
    }
    let mut results = Vec::new();
    for (offset, (kind, binary)) in servers.into_iter().enumerate() {
        let mut spec = ServerSpec::plain(
            kind,
            &binary,
            std::path::absolute(arguments.work_dir.join(kind.name()))
                .map_err(|error| error.to_string())?,
            arguments.port + offset as u16,
            Some(arguments.cores),
            Some(MASTER_KEY.to_string()),
        );
        if kind == ServerKind::Coresearch {
            spec.extra_arguments = arguments
                .coresearch_argument
                .iter()
                .map(Into::into)
                .collect();
        }
        eprintln!("{}: filling {} indexes", kind.name(), tenants.len());
        let figures = measure(&spec, &tenants)?;
        eprintln!("{}: {figures:?}", kind.name());
        results.push((kind, figures));
    }
    print_report(&arguments, &results);
    Ok(())
}

/// Tenants of five consecutive documents each, searched for a word of their first
/// document's name (or summary).
fn tenants_of(documents: Vec<Map<String, Value>>, count: usize) -> Vec<Tenant> {
    let mut documents = documents.into_iter();
    (0..count)
        .map(|_| {
            let documents: Vec<_> = documents.by_ref().take(DOCUMENTS_PER_TENANT).collect();
            let query = query_of(&documents[0]);
            Tenant { documents, query }
        })
        .collect()
}

fn query_of(document: &Map<String, Value>) -> String {
    let text = |field: &str| document.get(field).and_then(Value::as_str).unwrap_or("");
    let words = |text: &str| {
        text.split(|character: char| !character.is_alphanumeric())
            .filter(|word| word.len() >= 3)
            .map(str::to_lowercase)
            .next()
    };
    words(text("name"))
        .or_else(|| words(text("summary")))
        .unwrap_or_else(|| text("name").to_string())
}

fn client(spec: &ServerSpec) -> Client {
    Client::new(
        spec.address(),
        Some(MASTER_KEY.to_string()),
        REQUEST_TIMEOUT,
    )
}

fn measure(spec: &ServerSpec, tenants: &[Tenant]) -> Result<Figures, String> {
    let mut figures = Figures::default();
    let mut server = ServerProcess::start(spec)?;
    let started = Instant::now();
    fill(spec, tenants)?;
    wait_for_every_task(spec)?;
    figures.fill_seconds = started.elapsed().as_secs_f64();
    figures.failed_tasks = task_total(spec, "failed")?;
    process_figures(server.pid, &mut figures);
    figures.disk_bytes = disk_usage(&spec.data_dir()).allocated_bytes;
    figures.hot = hot_searches(spec, tenants)?;
    let (cold, wrong) = cold_searches(spec, tenants)?;
    figures.cold = cold;
    figures.cold_wrong = wrong;
    server.stop();
    let restarted = Instant::now();
    let mut server = ServerProcess::start_in_place_within(spec, RESTART_WAIT_MAX)?;
    figures.restart_health_seconds = restarted.elapsed().as_secs_f64();
    let first = Instant::now();
    let mut first_client = client(spec);
    search(&mut first_client, tenants, tenants.len() / 2)?;
    figures.first_search_millis = first.elapsed().as_secs_f64() * 1e3;
    figures.answering_after_restart = answering(spec, tenants);
    server.stop();
    Ok(figures)
}

/// Runs `action` with a client of its own for every tenant number, from [`CLIENTS`]
/// threads at once; a thread stops when its `action` answers false.
fn for_each_tenant(
    spec: &ServerSpec,
    count: usize,
    action: impl Fn(&mut Client, usize) -> bool + Sync,
) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..CLIENTS {
            scope.spawn(|| {
                let mut client = client(spec);
                loop {
                    let number = next.fetch_add(1, Ordering::Relaxed);
                    if number >= count || !action(&mut client, number) {
                        break;
                    }
                }
            });
        }
    });
}

fn fill(spec: &ServerSpec, tenants: &[Tenant]) -> Result<(), String> {
    let failure = Mutex::new(None);
    for_each_tenant(spec, tenants.len(), |client, number| {
        let documents = tenants[number].documents.iter().cloned().map(Value::Object);
        let body = Value::Array(documents.collect());
        let path = format!("/indexes/tenant{number}/documents?primaryKey=id");
        let error = match client.send_json("POST", &path, &body) {
            Ok(response) if response.status == 202 => return true,
            Ok(response) => format!("{path}: status {}", response.status),
            Err(error) => format!("{path}: {error}"),
        };
        *failure.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(error);
        false
    });
    match failure
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner())
    {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn task_total(spec: &ServerSpec, statuses: &str) -> Result<u64, String> {
    let response = client(spec)
        .get(&format!("/tasks?statuses={statuses}&limit=1"))
        .map_err(|error| error.to_string())?;
    response.json()?["total"]
        .as_u64()
        .ok_or_else(|| "no task total".to_string())
}

fn wait_for_every_task(spec: &ServerSpec) -> Result<(), String> {
    let started = Instant::now();
    while task_total(spec, "enqueued,processing")? > 0 {
        if started.elapsed() > TASKS_WAIT_MAX {
            return Err("tasks still pending".into());
        }
        std::thread::sleep(TASK_POLL_INTERVAL);
    }
    Ok(())
}

fn process_figures(pid: u32, figures: &mut Figures) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kibibytes = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|number| number.trim().parse::<u64>().ok())
            .map_or(0, |number| number * 1024)
    };
    figures.resident_bytes = kibibytes("VmRSS:");
    figures.peak_resident_bytes = kibibytes("VmHWM:");
    figures.virtual_bytes = kibibytes("VmSize:");
    figures.open_files = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(Iterator::count)
        .unwrap_or(0);
    figures.mappings = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|maps| maps.lines().count())
        .unwrap_or(0);
}

/// Searches tenant `number` for its word; answers whether every hit is one of its own.
fn search(client: &mut Client, tenants: &[Tenant], number: usize) -> Result<bool, String> {
    let tenant = &tenants[number];
    let response = client
        .send_json(
            "POST",
            &format!("/indexes/tenant{number}/search"),
            &json!({"q": tenant.query, "limit": 10}),
        )
        .map_err(|error| error.to_string())?;
    if response.status != 200 {
        return Ok(false);
    }
    let answer = response.json()?;
    let own: Vec<&Value> = tenant
        .documents
        .iter()
        .filter_map(|document| document.get("id"))
        .collect();
    let hits = answer["hits"].as_array().cloned().unwrap_or_default();
    Ok(!hits.is_empty() && hits.iter().all(|hit| own.contains(&&hit["id"])))
}

fn hot_searches(spec: &ServerSpec, tenants: &[Tenant]) -> Result<Latencies, String> {
    let mut client = client(spec);
    let hot = HOT_TENANTS.min(tenants.len());
    for number in 0..hot {
        search(&mut client, tenants, number)?;
    }
    let mut samples = Vec::with_capacity(HOT_SEARCHES);
    for round in 0..HOT_SEARCHES {
        let started = Instant::now();
        search(&mut client, tenants, round % hot)?;
        samples.push(started.elapsed());
    }
    Ok(Latencies::of(samples))
}

/// A fixed shuffle of `0..count`: multiplying by a prime that does not divide `count` walks
/// every residue once.
fn shuffled(count: usize) -> Vec<usize> {
    const STEP: usize = 7_919;
    if count == 0 || count % STEP == 0 {
        return (0..count).rev().collect();
    }
    (0..count).map(|index| (index * STEP) % count).collect()
}

fn cold_searches(spec: &ServerSpec, tenants: &[Tenant]) -> Result<(Latencies, usize), String> {
    let hot = HOT_TENANTS.min(tenants.len());
    let cold: Vec<usize> = shuffled(tenants.len())
        .into_iter()
        .filter(|number| *number >= hot)
        .take(COLD_SEARCHES_MAX)
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut outcome = Ok((Latencies::default(), 0));
    std::thread::scope(|scope| {
        for client_number in 0..HOT_CLIENTS_DURING_COLD {
            let stop = &stop;
            scope.spawn(move || {
                let mut client = client(spec);
                let mut round = client_number;
                while !stop.load(Ordering::Relaxed) {
                    let _ = search(&mut client, tenants, round % hot);
                    round += 1;
                }
            });
        }
        let mut client = client(spec);
        let mut samples = Vec::with_capacity(cold.len());
        let mut wrong = 0;
        for number in &cold {
            let started = Instant::now();
            match search(&mut client, tenants, *number) {
                Ok(true) => {}
                Ok(false) => wrong += 1,
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            }
            samples.push(started.elapsed());
        }
        stop.store(true, Ordering::Relaxed);
        if outcome.is_ok() {
            outcome = Ok((Latencies::of(samples), wrong));
        }
    });
    outcome
}

fn answering(spec: &ServerSpec, tenants: &[Tenant]) -> usize {
    let answered = AtomicUsize::new(0);
    for_each_tenant(spec, tenants.len(), |client, number| {
        if search(client, tenants, number).unwrap_or(false) {
            answered.fetch_add(1, Ordering::Relaxed);
        }
        true
    });
    answered.load(Ordering::Relaxed)
}

fn print_report(arguments: &Arguments, results: &[(ServerKind, Figures)]) {
    let mebibytes = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
    println!(
        "{} indexes of {DOCUMENTS_PER_TENANT} PyPI documents, {} cores, coresearch arguments {:?}\n",
        arguments.indexes, arguments.cores, arguments.coresearch_argument
    );
    println!(
        "| server | fill s | failed tasks | RSS MiB | peak RSS MiB | virtual GiB | open files | mappings | disk MiB | hot p50 / p99 ms | cold p50 / p99 / max ms (searched, wrong) | restart to health s | first search ms | answering after restart |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (kind, figures) in results {
        println!(
            "| {} | {:.1} | {} | {:.0} | {:.0} | {:.1} | {} | {} | {:.0} | {:.2} / {:.2} | {:.2} / {:.2} / {:.1} ({}, {}) | {:.2} | {:.1} | {} of {} |",
            kind.name(),
            figures.fill_seconds,
            figures.failed_tasks,
            mebibytes(figures.resident_bytes),
            mebibytes(figures.peak_resident_bytes),
            figures.virtual_bytes as f64 / (1u64 << 30) as f64,
            figures.open_files,
            figures.mappings,
            mebibytes(figures.disk_bytes),
            figures.hot.p50_millis,
            figures.hot.p99_millis,
            figures.cold.p50_millis,
            figures.cold.p99_millis,
            figures.cold.max_millis,
            figures.cold.count,
            figures.cold_wrong,
            figures.restart_health_seconds,
            figures.first_search_millis,
            figures.answering_after_restart,
            arguments.indexes,
        );
    }
}
