//! What several benchmarks share: reading a zstd-compressed NDJSON dataset and a process's
//! resident memory, now and at its peak.

use std::io::{BufRead, BufReader};

use serde_json::{Map, Value};

/// Bytes per kibibyte (`/proc/<pid>/status` reports kB).
const BYTES_PER_KIBIBYTE: u64 = 1024;

/// The first `count` documents of the `.ndjson.zst` dataset at `path`. Panics with a clear
/// message when the dataset is missing or malformed (a benchmark cannot go on without it).
pub fn read_documents(path: &str, count: usize) -> Vec<Map<String, Value>> {
    read_lines(path, count)
        .expect("dataset reads")
        .iter()
        .map(
            |line| match serde_json::from_str(line).expect("dataset line is JSON") {
                Value::Object(document) => document,
                _ => panic!("dataset lines are objects"),
            },
        )
        .collect()
}

/// The first `count` non-empty lines of the `.ndjson.zst` dataset at `path`, unparsed (the
/// exact NDJSON text to send); an error names the path when it cannot be read.
pub fn read_lines(path: &str, count: usize) -> Result<Vec<String>, String> {
    let file = std::fs::File::open(path).map_err(|error| format!("{path}: {error}"))?;
    let decoder = zstd::Decoder::new(file).map_err(|error| format!("{path}: {error}"))?;
    let mut lines = Vec::new();
    for line in BufReader::new(decoder).lines() {
        if lines.len() >= count {
            break;
        }
        let line = line.map_err(|error| format!("{path}: {error}"))?;
        if !line.trim().is_empty() {
            lines.push(line);
        }
    }
    Ok(lines)
}

/// The peak resident memory (`VmHWM`) in bytes of process `pid` (this process when `None`);
/// `None` when it cannot be read.
pub fn peak_resident_bytes(pid: Option<u32>) -> Option<u64> {
    status_bytes(pid, "VmHWM:")
}

/// The resident memory now (`VmRSS`) in bytes of process `pid` (this process when `None`);
/// `None` when it cannot be read.
pub fn resident_bytes(pid: Option<u32>) -> Option<u64> {
    status_bytes(pid, "VmRSS:")
}

/// The `field` line (a size in kB) of `/proc/<pid>/status`, in bytes.
fn status_bytes(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let kibibytes: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kibibytes * BYTES_PER_KIBIBYTE)
}
