//! `ingest`: how fast a Meilisearch-compatible server ingests a real dataset over HTTP.
//!
//! Decompresses a `.ndjson.zst` dataset, cuts it into NDJSON payloads of `--batch` documents,
//! sends them one after the other to `POST /indexes/<index>/documents` (each answer must be
//! 202), then waits until every task finished and checks that all succeeded and that the
//! index holds every document. Prints documents per second (from the first request to the
//! last task finished), and, when given the server's pid and data directory, its peak
//! resident memory (`VmHWM`) and the data directory's size. The same command measures
//! coresearch or a Meilisearch binary (`--url`).
//!
//! `--busy-processes N` keeps N other processes busy (each a shell spinning in a loop, at the
//! harness's own nice value) from before the first payload until the last task finished: the
//! host of a server that shares its CPUs with a backup, a log shipper or another service.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::Value;

/// Pause between two polls of the task queue.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How long the tasks may take to finish after the last payload was sent.
const FINISH_TIMEOUT: Duration = Duration::from_secs(3600);
/// Bytes per mebibyte.
const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;

#[derive(Debug, Parser)]
struct Options {
    /// The zstd-compressed NDJSON dataset.
    #[arg(long, default_value = "../shared/datasets/pypi-packages.ndjson.zst")]
    dataset: PathBuf,
    /// The server, as `host:port`.
    #[arg(long, default_value = "127.0.0.1:7700")]
    url: String,
    /// The index to fill (created by the first payload).
    #[arg(long, default_value = "ingest")]
    index: String,
    /// Documents per payload.
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Stop after this many documents (0: the whole dataset).
    #[arg(long, default_value_t = 0)]
    limit: usize,
    /// The API key, if the server has a master key.
    #[arg(long)]
    key: Option<String>,
    /// The server's pid, to report its peak resident memory.
    #[arg(long)]
    pid: Option<u32>,
    /// The server's data directory, to report its size.
    #[arg(long)]
    db_path: Option<PathBuf>,
    /// Other processes kept busy while the documents are indexed.
    #[arg(long, default_value_t = 0)]
    busy_processes: usize,
}

/// Processes spinning on the CPUs until dropped.
struct BusyProcesses(Vec<std::process::Child>);

impl BusyProcesses {
    fn start(count: usize) -> Result<BusyProcesses, String> {
        let mut children = BusyProcesses(Vec::with_capacity(count));
        for _ in 0..count {
            let child = std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .map_err(|error| format!("a busy process did not start: {error}"))?;
            children.0.push(child);
        }
        Ok(children)
    }
}

impl Drop for BusyProcesses {
    fn drop(&mut self) {
        for child in &mut self.0 {
            // Already gone if it was killed from outside: nothing left to stop.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One HTTP/1.1 exchange on a new connection; answers the status and the body.
fn exchange(
    options: &Options,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(&options.url)?;
    let authorization = options
        .key
        .as_ref()
        .map(|key| format!("Authorization: Bearer {key}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{authorization}Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        options.url,
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    let status_line = String::from_utf8_lossy(&response[..split]).to_string();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line: {status_line}")))?;
    let mut body = response[split + 4..].to_vec();
    if status_line
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Ok((status, body))
}

/// The payload of a chunked body.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut output = Vec::new();
    while let Some(line_end) = body.windows(2).position(|window| window == b"\r\n") {
        let size_text = String::from_utf8_lossy(&body[..line_end]).to_string();
        let Ok(size) = usize::from_str_radix(size_text.trim(), 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        let start = line_end + 2;
        output.extend_from_slice(&body[start..start + size]);
        body = &body[start + size + 2..];
    }
    output
}

fn get_json(options: &Options, path: &str) -> Result<Value, String> {
    let (status, body) = exchange(options, "GET", path, "application/json", b"")
        .map_err(|error| error.to_string())?;
    if status != 200 {
        return Err(format!("GET {path} answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|error| error.to_string())
}

fn directory_bytes(directory: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(metadata) if metadata.is_dir() => directory_bytes(&entry.path()),
            Ok(metadata) => metadata.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Sends every payload; answers the number of documents sent and of payloads.
fn send_payloads(options: &Options) -> Result<(usize, usize), String> {
    let file = std::fs::File::open(&options.dataset)
        .map_err(|error| format!("{}: {error}", options.dataset.display()))?;
    let decoder = zstd::Decoder::new(file).map_err(|error| error.to_string())?;
    let mut lines = BufReader::new(decoder).lines();
    let path = format!("/indexes/{}/documents", options.index);
    let (mut documents, mut payloads) = (0usize, 0usize);
    loop {
        let mut payload = Vec::new();
        let mut in_payload = 0;
        while in_payload < options.batch && (options.limit == 0 || documents < options.limit) {
            let Some(line) = lines.next() else { break };
            let line = line.map_err(|error| error.to_string())?;
            payload.extend_from_slice(line.as_bytes());
            payload.push(b'\n');
            in_payload += 1;
            documents += 1;
        }
        if in_payload == 0 {
            return Ok((documents, payloads));
        }
        let (status, body) = exchange(options, "POST", &path, "application/x-ndjson", &payload)
            .map_err(|error| error.to_string())?;
        if status != 202 {
            return Err(format!(
                "payload {payloads} answered {status}: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        payloads += 1;
    }
}

fn wait_for_tasks(options: &Options) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let pending = get_json(options, "/tasks?statuses=enqueued,processing&limit=1")?;
        if pending["total"] == 0 {
            break;
        }
        if started.elapsed() > FINISH_TIMEOUT {
            return Err("the tasks did not finish in time".into());
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let failed = get_json(options, "/tasks?statuses=failed&limit=1")?;
    if failed["total"] != 0 {
        return Err(format!("failed tasks: {}", failed["results"]));
    }
    Ok(())
}

fn run(options: &Options) -> Result<(), String> {
    let busy = BusyProcesses::start(options.busy_processes)?;
    let started = Instant::now();
    let (documents, payloads) = send_payloads(options)?;
    let sent = started.elapsed();
    wait_for_tasks(options)?;
    let elapsed = started.elapsed();
    drop(busy);
    let stats = get_json(options, &format!("/indexes/{}/stats", options.index))?;
    let stored = stats["numberOfDocuments"].as_u64().unwrap_or(0);
    println!(
        "dataset={} batch={} documents={documents} payloads={payloads} stored={stored} busy_processes={}",
        options.dataset.display(),
        options.batch,
        options.busy_processes
    );
    println!(
        "sent_in={:.2}s finished_in={:.2}s documents_per_second={:.0}",
        sent.as_secs_f64(),
        elapsed.as_secs_f64(),
        documents as f64 / elapsed.as_secs_f64()
    );
    if let Some(peak) = options
        .pid
        .and_then(|pid| bench_harness::measure::peak_resident_bytes(Some(pid)))
        .map(|bytes| bytes as f64 / BYTES_PER_MEBIBYTE)
    {
        println!("server_peak_rss_mib={peak:.1}");
    }
    if let Some(directory) = &options.db_path {
        println!(
            "data_directory_mib={:.1}",
            directory_bytes(directory) as f64 / BYTES_PER_MEBIBYTE
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let options = Options::parse();
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ingest: {error}");
            ExitCode::FAILURE
        }
    }
}
