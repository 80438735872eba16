//! `payload_bench`: how fast the documents module reads a real update payload.
//!
//! Decompresses a `.ndjson.zst` dataset (default: the 886k-document PyPI set) into an update file
//! in the temporary directory, as the server would have written it, optionally rewrites it as a
//! JSON array, then times: validation and counting (`count_documents` on the mapped bytes, and
//! `count_documents_from` streaming the file as the server's upload check does), and one full
//! pass that yields every document and extracts its id under the inferred primary key (on the
//! mapped bytes, and streamed from the file as the scheduler does). With `--simd-json` it also
//! times simd-json's serde path on each NDJSON line from a per-line mutable copy, for comparison.
//! Prints documents per second and the process's peak resident memory.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use shards::documents::Document;
use shards::documents::DocumentsError;
use shards::documents::document_id::extract_document_id;
use shards::documents::payload::{
    PayloadFile, PayloadFormat, count_documents, count_documents_from, documents_from,
};
use shards::documents::primary_key::resolve_primary_key;

/// Bytes per kibibyte, to print `ru_maxrss` (KiB on Linux) in MiB.
const KIBIBYTES_PER_MEBIBYTE: f64 = 1024.0;

#[derive(Debug, Parser)]
struct Options {
    /// The zstd-compressed NDJSON dataset.
    #[arg(long, default_value = "../shared/datasets/pypi-packages.ndjson.zst")]
    dataset: PathBuf,
    /// Rewrite the payload as one JSON array and read it as `application/json`.
    #[arg(long)]
    json_array: bool,
    /// Also time simd-json on the same NDJSON lines.
    #[arg(long)]
    simd_json: bool,
}

fn peak_resident_mebibytes() -> f64 {
    // SAFETY: `getrusage` only writes into the zeroed struct we pass; RUSAGE_SELF is valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    usage.ru_maxrss as f64 / KIBIBYTES_PER_MEBIBYTE
}

fn write_update_file(options: &Options, path: &PathBuf) -> std::io::Result<u64> {
    let decoder = zstd::Decoder::new(File::open(&options.dataset)?)?;
    let mut output = BufWriter::new(File::create(path)?);
    let mut lines = 0u64;
    if options.json_array {
        output.write_all(b"[")?;
    }
    for line in BufReader::new(decoder).lines() {
        let line = line?;
        if options.json_array && lines > 0 {
            output.write_all(b",\n")?;
        }
        output.write_all(line.as_bytes())?;
        if !options.json_array {
            output.write_all(b"\n")?;
        }
        lines += 1;
    }
    if options.json_array {
        output.write_all(b"]")?;
    }
    output.flush()?;
    Ok(lines)
}

fn report(label: &str, documents: u64, started: Instant) {
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{label:<40} {documents:>9} documents in {seconds:>7.3} s = {:>10.0} documents/s, peak RSS {:.1} MiB",
        documents as f64 / seconds,
        peak_resident_mebibytes()
    );
}

fn full_pass(
    mut documents: impl Iterator<Item = Result<Document, DocumentsError>>,
) -> Result<u64, String> {
    let first: Document = match documents.next() {
        Some(document) => document.map_err(|error| error.to_string())?,
        None => return Ok(0),
    };
    let primary_key = resolve_primary_key(None, None, Some(&first)).map_err(|e| e.to_string())?;
    let mut id_bytes = extract_document_id(&first, &primary_key.name)
        .map_err(|e| e.to_string())?
        .len();
    let mut count = 1;
    for document in documents {
        let document = document.map_err(|error| error.to_string())?;
        id_bytes += extract_document_id(&document, &primary_key.name)
            .map_err(|e| e.to_string())?
            .len();
        count += 1;
    }
    println!("primary key `{}`, {id_bytes} id bytes", primary_key.name);
    Ok(count)
}

/// The scheduler's planning pass: the first document built (primary key inference), then only
/// the ids of the others.
fn ids_pass(file: &File, format: PayloadFormat) -> Result<u64, String> {
    let mut documents = documents_from(file, format).map_err(|error| error.to_string())?;
    let Some(first) = documents.next() else {
        return Ok(0);
    };
    let first = first.map_err(|error| error.to_string())?;
    let primary_key = resolve_primary_key(None, None, Some(&first)).map_err(|e| e.to_string())?;
    let mut id_bytes = 0;
    let mut count = 1;
    while let Some(id) = documents.next_id(&primary_key.name) {
        id_bytes += id.map_err(|error| error.to_string())?.len();
        count += 1;
    }
    std::hint::black_box(id_bytes);
    Ok(count)
}

fn simd_json_pass(payload: &[u8]) -> Result<u64, String> {
    let mut line_copy = Vec::new();
    let mut count = 0;
    for line in payload
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
    {
        line_copy.clear();
        line_copy.extend_from_slice(line);
        let document: Document =
            simd_json::serde::from_slice(&mut line_copy).map_err(|error| error.to_string())?;
        std::hint::black_box(&document);
        count += 1;
    }
    Ok(count)
}

fn run(options: &Options) -> Result<(), String> {
    let path = std::env::temp_dir().join(format!("payload-bench-{}", std::process::id()));
    let started = Instant::now();
    let lines = write_update_file(options, &path).map_err(|error| error.to_string())?;
    report("decompress to update file", lines, started);
    let file = OpenOptions::new()
        .read(true)
        .open(&path)
        .map_err(|error| error.to_string())?;
    std::fs::remove_file(&path).map_err(|error| error.to_string())?;
    let payload = PayloadFile::open(&file).map_err(|error| error.to_string())?;
    let format = if options.json_array {
        PayloadFormat::Json
    } else {
        PayloadFormat::Ndjson
    };
    println!("payload: {} bytes, format {format}", payload.bytes().len());

    let started = Instant::now();
    let counted = count_documents(payload.bytes(), format).map_err(|error| error.to_string())?;
    report("mapped: validate and count", counted, started);

    let started = Instant::now();
    let passed = full_pass(
        payload
            .documents(format)
            .map_err(|error| error.to_string())?,
    )?;
    report("mapped: documents + id extraction", passed, started);

    let started = Instant::now();
    let streamed_count = count_documents_from(&file, format).map_err(|error| error.to_string())?;
    report("streamed file: validate and count", streamed_count, started);

    let started = Instant::now();
    let streamed = full_pass(documents_from(&file, format).map_err(|error| error.to_string())?)?;
    report(
        "streamed file: documents + id extraction",
        streamed,
        started,
    );

    let started = Instant::now();
    let ids = ids_pass(&file, format)?;
    report("streamed file: ids only (scheduler plan)", ids, started);

    if options.simd_json && !options.json_array {
        let started = Instant::now();
        let parsed = simd_json_pass(payload.bytes())?;
        report("simd-json: per-line copy + parse", parsed, started);
    }
    if [counted, passed, streamed_count, streamed, ids]
        .iter()
        .any(|found| *found != lines)
    {
        return Err(format!(
            "expected {lines} documents, counted {counted}, passed {passed}, streamed \
             {streamed_count} and {streamed}"
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let options = Options::parse();
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("payload_bench: {error}");
            ExitCode::FAILURE
        }
    }
}
