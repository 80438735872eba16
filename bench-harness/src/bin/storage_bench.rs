//! Storage benchmark: our page store beside LMDB (heed) and redb, on this machine, in one
//! run. Each engine runs in a child process of this binary; the parent prints a markdown
//! table (and writes it to `--output` if given).
//!
//! Usage: `storage_bench [--records N] [--single-commits N] [--hundred-commits N]
//! [--hot-reads N] [--cold-reads N] [--scans N] [--mixed-rounds N] [--engines a,b,c]
//! [--repeat N] [--directory PATH] [--output FILE]`
//!
//! The engines run in turn, `--repeat` rounds (default 2), interleaved so that a slow
//! moment of a shared machine or disk does not fall on one engine only; each measurement
//! keeps its best round (highest throughput, smallest size).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use bench_harness::storage::report::{Measurement, markdown};
use bench_harness::storage::workload::{self, Sizes};

struct Arguments {
    sizes: Sizes,
    engines: Vec<String>,
    directory: Option<PathBuf>,
    output: Option<PathBuf>,
    child: Option<String>,
    repeat: u64,
}

fn parse_arguments() -> Arguments {
    let mut arguments = Arguments {
        sizes: Sizes {
            records: 1_000_000,
            single_commits: 300,
            hundred_commits: 100,
            hot_reads: 1_000_000,
            cold_reads: 20_000,
            scans: 50_000,
            scan_length: 100,
            mixed_rounds: 300,
        },
        engines: vec!["coresearch".into(), "lmdb".into(), "redb".into()],
        directory: None,
        output: None,
        child: None,
        repeat: 2,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(flag) = raw.next() {
        let value = raw.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        let number = || {
            value
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{flag}: not a number"))
        };
        match flag.as_str() {
            "--records" => arguments.sizes.records = number(),
            "--single-commits" => arguments.sizes.single_commits = number(),
            "--hundred-commits" => arguments.sizes.hundred_commits = number(),
            "--hot-reads" => arguments.sizes.hot_reads = number(),
            "--cold-reads" => arguments.sizes.cold_reads = number(),
            "--scans" => arguments.sizes.scans = number(),
            "--mixed-rounds" => arguments.sizes.mixed_rounds = number(),
            "--engines" => arguments.engines = value.split(',').map(str::to_string).collect(),
            "--directory" => arguments.directory = Some(PathBuf::from(value)),
            "--output" => arguments.output = Some(PathBuf::from(value)),
            "--child" => arguments.child = Some(value),
            "--repeat" => arguments.repeat = number().max(1),
            other => panic!("unknown flag {other}"),
        }
    }
    arguments
}

/// Merges a round's measurements into `best`, keeping the better value of each.
fn keep_best(best: &mut Vec<Measurement>, round: Vec<Measurement>) {
    for measurement in round {
        match best.iter_mut().find(|kept| kept.label == measurement.label) {
            Some(kept) => {
                let better = if measurement.larger_is_better {
                    measurement.value > kept.value
                } else {
                    measurement.value < kept.value
                };
                if better {
                    *kept = measurement;
                }
            }
            None => best.push(measurement),
        }
    }
}

fn main() {
    let arguments = parse_arguments();
    if let Some(engine) = &arguments.child {
        let directory = arguments
            .directory
            .as_ref()
            .expect("the parent passes --directory");
        workload::run(engine, directory, &arguments.sizes);
        return;
    }
    let temporary = std::env::temp_dir().join(format!("storage-bench-{}", std::process::id()));
    let directory = arguments.directory.clone().unwrap_or_else(|| temporary.clone());
    let executable = std::env::current_exe().expect("own executable");
    let passed: Vec<String> = std::env::args().skip(1).collect();
    let mut results: BTreeMap<String, Vec<Measurement>> = BTreeMap::new();
    for round in 0..arguments.repeat {
        for engine in &arguments.engines {
            eprintln!("round {round}: running {engine} ...");
            let engine_directory = directory.join(engine);
            let output = Command::new(&executable)
                .args(&passed)
                .args(["--child", engine, "--directory"])
                .arg(&engine_directory)
                .output()
                .expect("child process runs");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{engine} failed: {stderr}");
            let measurements: Vec<Measurement> = String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(Measurement::parse)
                .collect();
            for measurement in &measurements {
                eprintln!(
                    "  {}: {:.1} {}",
                    measurement.label, measurement.value, measurement.unit
                );
            }
            keep_best(results.entry(engine.clone()).or_default(), measurements);
            let _ = std::fs::remove_dir_all(&engine_directory);
        }
    }
    if arguments.directory.is_none() {
        let _ = std::fs::remove_dir_all(&temporary);
    }
    let table = markdown(&arguments.engines, &results);
    println!("{table}");
    if let Some(output) = &arguments.output {
        std::fs::write(output, &table).expect("output file is writable");
    }
}
