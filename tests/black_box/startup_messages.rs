//! What the server prints as it starts names coresearch: the launch summary, and the advice
//! that follows a generated master key ("Restart coresearch with the argument above").

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to print its start-up messages.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The standard error of a server started with `arguments`, up to the line that ends the
/// start-up messages (`last_line` contains it).
fn startup_messages(arguments: &[&str], last_line: &str) -> String {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let mut child = Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .arg("--db-path")
        .arg(scratch.path().join("data.ms"))
        .arg("--http-addr")
        .arg("127.0.0.1:0")
        .arg("--cores")
        .arg("1")
        .args(arguments)
        .env_remove("MEILI_MASTER_KEY")
        .env("MEILI_LOG_LEVEL", "WARN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn succeeds");
    let stderr = child.stderr.take().expect("stderr is piped");
    let last_line = last_line.to_owned();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            text.push_str(&line);
            text.push('\n');
            if line.contains(&last_line) {
                break;
            }
        }
        text
    });
    let started = Instant::now();
    while !reader.is_finished() && started.elapsed() < START_TIMEOUT {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    reader
        .join()
        .expect("the reader finishes once the server is gone")
}

#[test]
fn the_launch_summary_and_the_master_key_advice_name_coresearch() {
    let text = startup_messages(&[], "Restart coresearch with the argument above");
    assert!(text.contains("Database path:"), "{text}");
    assert!(
        text.contains("Server listening on:\t\"http://127.0.0.1:0\""),
        "{text}"
    );
    assert!(
        text.contains("No master key has been set: coresearch accepts every request."),
        "{text}"
    );
    assert!(text.contains(">> --master-key "), "{text}");
    assert!(
        text.contains(
            "Restart coresearch with the argument above to use this new and secure master key."
        ),
        "{text}"
    );
    for line in text.lines() {
        assert!(
            !line.contains("Meilisearch") || line.starts_with("Meilisearch API:"),
            "names Meilisearch only as the API it speaks: {line}"
        );
    }
}

#[test]
fn a_short_master_key_is_called_unsafe_for_coresearch() {
    let text = startup_messages(&["--master-key", "short"], "Restart coresearch");
    assert!(
        text.contains(" coresearch started with a master key considered unsafe for use in a production environment."),
        "{text}"
    );
    let secured = startup_messages(
        &["--master-key", "a-master-key-of-16-bytes-or-more"],
        "won't be authorized",
    );
    assert!(
        secured.contains(
            "A master key has been set. Requests to coresearch won't be authorized unless you provide an authentication key."
        ),
        "{secured}"
    );
}
