//! Process-level crash test: a child process (this test binary, re-invoked with
//! `STORAGE_KILL_CHILD_FILE` set) commits numbered transactions and reports each one after
//! `commit` returns; the parent kills it with SIGKILL at a random moment, reopens the file
//! and checks that every acknowledged commit is there and nothing past the one in flight.
//! Knobs: `STORAGE_KILL_ROUNDS` (default 30), `STORAGE_KILL_SEED`.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use storage_engine::{Database, Options};

const CHILD_ENVIRONMENT: &str = "STORAGE_KILL_CHILD_FILE";
const ACKNOWLEDGEMENT: &str = "committed ";

fn environment_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn last_committed(database: &Database) -> u64 {
    let read = database.begin_read();
    let Some(tree) = read.open_tree("counter").unwrap() else {
        return 0;
    };
    let last = tree.get(b"last").unwrap().unwrap();
    u64::from_le_bytes(last.try_into().unwrap())
}

fn value_for(number: u64) -> Vec<u8> {
    let length = match number % 7 {
        0 => 9000 + (number % 5000) as usize,
        _ => (number % 200) as usize,
    };
    vec![(number % 251) as u8; length]
}

/// The child: commits transactions forever, acknowledging each on stdout.
#[test]
fn kill_child_entry() {
    let Ok(path) = std::env::var(CHILD_ENVIRONMENT) else {
        return;
    };
    let database = Database::open(Path::new(&path), Options::default()).unwrap();
    let mut number = last_committed(&database);
    let mut stdout = std::io::stdout();
    loop {
        number += 1;
        let write = database.begin_write().unwrap();
        let entries = write.create_tree("entries").unwrap();
        entries
            .put(&number.to_be_bytes(), &value_for(number))
            .unwrap();
        if number > 3 {
            entries.delete(&(number - 3).to_be_bytes()).unwrap();
        }
        write
            .create_tree("counter")
            .unwrap()
            .put(b"last", &number.to_le_bytes())
            .unwrap();
        write.commit().unwrap();
        writeln!(stdout, "{ACKNOWLEDGEMENT}{number}").unwrap();
        stdout.flush().unwrap();
    }
}

fn check_file(path: &Path, acknowledged: u64) -> u64 {
    let database = Database::open(path, Options::default()).unwrap();
    database.check_integrity().unwrap();
    let last = last_committed(&database);
    assert!(
        last == acknowledged || last == acknowledged + 1,
        "acknowledged {acknowledged}, found {last}"
    );
    let read = database.begin_read();
    if last > 0 {
        let entries = read.open_tree("entries").unwrap().unwrap();
        for number in last.saturating_sub(2).max(1)..=last {
            let value = entries.get(&number.to_be_bytes()).unwrap().unwrap();
            assert_eq!(value, value_for(number).as_slice(), "entry {number}");
        }
        assert!(entries.get(&(last + 1).to_be_bytes()).unwrap().is_none());
    }
    last
}

#[test]
fn every_acknowledged_commit_survives_sigkill() {
    if std::env::var(CHILD_ENVIRONMENT).is_ok() {
        return;
    }
    let rounds = environment_number("STORAGE_KILL_ROUNDS", 30);
    let mut seed = environment_number("STORAGE_KILL_SEED", 0x6b696c6c);
    println!("kill test: {rounds} rounds, seed {seed} (STORAGE_KILL_SEED)");
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("killed.pages");
    let executable = std::env::current_exe().unwrap();
    let mut acknowledged = 0;
    for round in 0..rounds {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_millis(20 + (seed >> 33) % 250);
        let mut child = Command::new(&executable)
            .args([
                "--exact",
                "kill_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENVIRONMENT, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(number) = line.strip_prefix(ACKNOWLEDGEMENT) {
                    let _ = sender.send(number.parse::<u64>().unwrap());
                }
            }
        });
        std::thread::sleep(delay);
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let before = acknowledged;
        while let Ok(number) = receiver.try_recv() {
            acknowledged = acknowledged.max(number);
        }
        let last = check_file(&path, acknowledged);
        println!(
            "round {round}: killed after {delay:?}, acknowledged {acknowledged} (+{}), found {last}",
            acknowledged - before
        );
        acknowledged = last;
    }
    assert!(acknowledged > 0, "the child never committed");
}
