//! The documentation's commands run as written (issue #74, item 7): the `sh` blocks of
//! `docs/quick-start.md` and `docs/network-three-instances.md`, in order, in one
//! `bash -euo pipefail` shell, in an empty temporary directory, with the directory of the
//! built `coresearch` binary first on `PATH` — as a user would paste them. After each `sh`
//! block, the `json output` or `text output` block that follows it (if any) is compared with
//! what the block printed on stdout, so the pages cannot drift from the program.
//!
//! How an output is compared:
//! - `json output`: the documented text and the printed text are each read as a sequence of
//!   JSON values and must have as many; a documented object must have each of its keys in the
//!   printed one with a matching value (the printed one may have more keys); arrays match
//!   element by element and have the same length; the string `"…"` matches any value;
//! - `text output`: the lines must be equal, where `…` in a documented line matches any text.
//!
//! Invariants:
//! - the shell and everything it starts (the servers the pages run in the background) run in
//!   a process group of their own, killed with SIGKILL when the run ends, passes or fails;
//! - the pages' ports (7700 for the quick start, 7701–7703 for the network guide, as the
//!   pages say) are checked free before the run, and a taken port fails the test saying so;
//! - `MEILI_*` and `CORESEARCH_*` variables of the test's environment are not passed on, so
//!   the pages run with the defaults they describe;
//! - a command that fails, a page that does not finish within [`PAGE_TIMEOUT`], and an
//!   output that differs each fail the test, naming the block by its line in the page.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long one page may run.
const PAGE_TIMEOUT: Duration = Duration::from_secs(600);
/// The pause between two looks at the shell while it runs.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// What the generated script prints on a line of its own before each block.
const BLOCK_MARKER: &str = "@@docs-commands block ";
/// What the generated script prints on a line of its own after the last block.
const END_MARKER: &str = "@@docs-commands end@@";
/// The value (in JSON) or the text (in a line) that matches anything in an output.
const ANYTHING: &str = "…";
/// How much of each server log a failure shows.
const LOG_TAIL_BYTES: usize = 3000;

/// What a block's output must be.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Json(String),
    Text(String),
}

impl Expected {
    /// The documented text.
    fn text(&self) -> &str {
        match self {
            Expected::Json(text) | Expected::Text(text) => text,
        }
    }
}

/// One `sh` block of a page, with the output documented after it.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    /// The line of the page its fence opens on (1-based).
    line: usize,
    command: String,
    expected: Option<Expected>,
}

/// One fenced block of a page: its info string, its text and the line it opens on.
struct Fence {
    info: String,
    text: String,
    line: usize,
}

/// Every fenced block of `page`, in order.
fn fences(page: &str) -> Vec<Fence> {
    let mut found = Vec::new();
    let mut open: Option<Fence> = None;
    for (index, line) in page.lines().enumerate() {
        match open.take() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some(Fence {
                        info: info.trim().to_owned(),
                        text: String::new(),
                        line: index + 1,
                    });
                }
            }
            Some(fence) if line.trim_end() == "```" => found.push(fence),
            Some(mut fence) => {
                fence.text.push_str(line);
                fence.text.push('\n');
                open = Some(fence);
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    found
}

/// The `sh` blocks of `page` with their documented outputs. An output block (info string
/// `json output` or `text output`) must come right after the `sh` block it documents.
fn runnable_blocks(page: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut previous_was_sh = false;
    for fence in fences(page) {
        let words: Vec<&str> = fence.info.split_whitespace().collect();
        match words.as_slice() {
            ["sh"] => blocks.push(Block {
                line: fence.line,
                command: fence.text,
                expected: None,
            }),
            [language, "output"] => {
                assert!(
                    previous_was_sh,
                    "the output block of line {} does not follow an `sh` block",
                    fence.line
                );
                let expected = match *language {
                    "json" => Expected::Json(fence.text),
                    "text" => Expected::Text(fence.text),
                    other => panic!("line {}: unknown output kind `{other}`", fence.line),
                };
                let block = blocks.last_mut().expect("an sh block came before");
                block.expected = Some(expected);
            }
            _ => {}
        }
        previous_was_sh = words.as_slice() == ["sh"];
    }
    blocks
}

/// The script that runs `blocks` in order, each announced by its marker on stdout.
fn script_of(blocks: &[Block]) -> String {
    let mut script = String::new();
    for (index, block) in blocks.iter().enumerate() {
        script.push_str(&format!("printf '\\n{BLOCK_MARKER}{index}@@\\n'\n"));
        script.push_str(&block.command);
    }
    script.push_str(&format!("printf '\\n{END_MARKER}\\n'\n"));
    script
}

/// What each block printed, by block index, from the script's stdout; and whether the end
/// marker was reached.
fn outputs_by_block(stdout: &str, count: usize) -> (Vec<String>, bool) {
    let mut outputs = vec![String::new(); count];
    let mut current: Option<usize> = None;
    let mut ended = false;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix(BLOCK_MARKER) {
            let index = rest.trim_end_matches("@@").parse::<usize>();
            current = Some(index.expect("a block marker holds its index"));
        } else if line == END_MARKER {
            ended = true;
            current = None;
        } else if let Some(index) = current {
            outputs[index].push_str(line);
            outputs[index].push('\n');
        }
    }
    (outputs, ended)
}

/// Whether `actual` matches the documented `expected` value (see the module's rules).
fn json_matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(text), _) if text == ANYTHING => true,
        (Value::Object(expected), Value::Object(actual)) => expected.iter().all(|(key, value)| {
            actual
                .get(key)
                .is_some_and(|found| json_matches(value, found))
        }),
        (Value::Array(expected), Value::Array(actual)) => {
            expected.len() == actual.len()
                && expected
                    .iter()
                    .zip(actual)
                    .all(|(value, found)| json_matches(value, found))
        }
        _ => expected == actual,
    }
}

/// `text` read as a sequence of JSON values.
fn json_values(text: &str) -> Result<Vec<Value>, serde_json::Error> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect()
}

/// Whether the printed `actual` text matches the documented JSON values of `expected`.
fn json_output_matches(expected: &str, actual: &str) -> bool {
    let expected = json_values(expected).expect("a documented json output is JSON");
    match json_values(actual) {
        Ok(actual) => {
            expected.len() == actual.len()
                && expected
                    .iter()
                    .zip(&actual)
                    .all(|(value, found)| json_matches(value, found))
        }
        Err(_) => false,
    }
}

/// Whether `line` matches the documented `pattern`, where `…` matches any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split(ANYTHING);
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(position) => rest = &rest[position + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether the printed `actual` text matches the documented lines of `expected`.
fn text_output_matches(expected: &str, actual: &str) -> bool {
    let expected: Vec<&str> = expected.trim_end().lines().map(str::trim_end).collect();
    let actual: Vec<&str> = actual.trim().lines().map(str::trim_end).collect();
    expected.len() == actual.len()
        && expected
            .iter()
            .zip(&actual)
            .all(|(pattern, line)| line_matches(pattern, line))
}

/// Whether `output` is what `expected` documents.
fn output_matches(expected: &Expected, output: &str) -> bool {
    match expected {
        Expected::Json(text) => json_output_matches(text, output),
        Expected::Text(text) => text_output_matches(text, output),
    }
}

/// Fails unless nothing listens on `port` of the loopback address.
fn assert_port_free(port: u16) {
    if let Err(error) = TcpListener::bind(("127.0.0.1", port)) {
        panic!(
            "the documentation's commands use port {port}, which is taken ({error}): stop what \
             listens there and run the test again"
        );
    }
}

/// A process group killed with SIGKILL when dropped.
struct ProcessGroup(libc::pid_t);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // SAFETY: kill(2) with a negative pid signals the process group; it touches no memory.
        unsafe {
            libc::kill(-self.0, libc::SIGKILL);
        }
    }
}

/// Reads all of a child's pipe on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// `PATH` with the directory of the built server first.
fn path_with_the_server() -> std::ffi::OsString {
    let binary = Path::new(env!("CARGO_BIN_EXE_coresearch"));
    let directory = binary.parent().expect("the binary is in a directory");
    let mut directories = vec![directory.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        directories.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(directories).expect("PATH can be joined")
}

/// Starts `script` in `directory` under `bash -euo pipefail`, in a process group of its own.
fn start_shell(script: &str, directory: &Path) -> Child {
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(directory)
        .env("PATH", path_with_the_server())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("MEILI_") || text.starts_with("CORESEARCH_") {
            command.env_remove(&name);
        }
    }
    command.spawn().expect("bash starts")
}

/// What a page's run gave: the shell's status (`None` when it timed out) and its outputs.
struct Run {
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
}

/// Runs `script` in `directory` until it ends or [`PAGE_TIMEOUT`] passes, then kills its
/// process group.
fn run_script(script: &str, directory: &Path) -> Run {
    let mut shell = start_shell(script, directory);
    let group = ProcessGroup(libc::pid_t::try_from(shell.id()).expect("a pid fits"));
    let stdout = drain(shell.stdout.take().expect("stdout is piped"));
    let stderr = drain(shell.stderr.take().expect("stderr is piped"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = shell.try_wait().expect("the shell can be waited for") {
            break Some(status);
        }
        if started.elapsed() >= PAGE_TIMEOUT {
            break None;
        }
        std::thread::sleep(POLL_INTERVAL);
    };
    drop(group);
    let _ = shell.wait();
    Run {
        status,
        stdout: stdout.join().expect("stdout is read"),
        stderr: stderr.join().expect("stderr is read"),
    }
}

/// The end of every `*.log` file of `directory` (the servers' logs, as the pages name them).
fn log_tails(directory: &Path) -> String {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(directory)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .collect()
        })
        .unwrap_or_default();
    logs.retain(|path| path.extension().is_some_and(|extension| extension == "log"));
    logs.sort();
    let mut text = String::new();
    for log in logs {
        let content = std::fs::read(&log).unwrap_or_default();
        let tail = &content[content.len().saturating_sub(LOG_TAIL_BYTES)..];
        text.push_str(&format!(
            "--- {} ---\n{}\n",
            log.display(),
            String::from_utf8_lossy(tail)
        ));
    }
    text
}

/// The block that was running when the script stopped: the last one that printed its marker.
fn last_started_block(stdout: &str) -> Option<usize> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix(BLOCK_MARKER))
        .filter_map(|rest| rest.trim_end_matches("@@").parse().ok())
        .next_back()
}

/// Runs the `sh` blocks of the page at `relative` (from the repository's root), after
/// checking that `ports` are free, and checks every documented output.
fn run_page(relative: &str, ports: &[u16]) {
    let page_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let page = std::fs::read_to_string(&page_path).expect("the page can be read");
    let blocks = runnable_blocks(&page);
    assert!(!blocks.is_empty(), "{relative} has no `sh` block");
    for port in ports {
        assert_port_free(*port);
    }
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let run = run_script(&script_of(&blocks), directory.path());
    let succeeded = run.status.is_some_and(|status| status.success());
    if !succeeded {
        let line = last_started_block(&run.stdout).map(|index| blocks[index].line);
        panic!(
            "{relative}: the commands stopped ({}) in the block of line {line:?}\n\
             stdout:\n{}\nstderr:\n{}\n{}",
            run.status
                .map_or("timed out".to_owned(), |status| status.to_string()),
            run.stdout,
            run.stderr,
            log_tails(directory.path())
        );
    }
    check_outputs(relative, &blocks, &run);
}

/// Fails on the first block whose printed output differs from the documented one.
fn check_outputs(relative: &str, blocks: &[Block], run: &Run) {
    let (outputs, ended) = outputs_by_block(&run.stdout, blocks.len());
    assert!(ended, "{relative}: the script did not reach its end");
    for (block, output) in blocks.iter().zip(&outputs) {
        if let Some(expected) = &block.expected {
            assert!(
                output_matches(expected, output),
                "{relative}, block of line {}:\n{}\ndocumented output:\n{}\nprinted output:\n{output}\nstderr:\n{}",
                block.line,
                block.command,
                expected.text(),
                run.stderr
            );
        }
    }
}

#[test]
fn the_quick_start_runs_as_written() {
    run_page("docs/quick-start.md", &[7700]);
}

#[test]
fn the_three_instance_guide_runs_as_written() {
    run_page("docs/network-three-instances.md", &[7701, 7702, 7703]);
}

/// The comparison is strict where the pages are exact: a different value, a missing key, an
/// extra array element or an extra JSON value all fail it.
#[test]
fn outputs_are_compared_strictly_except_where_the_page_says_anything() {
    let printed = r#"{"taskUid":3,"status":"enqueued","enqueuedAt":"2026-01-01T00:00:00Z"}"#;
    assert!(json_output_matches(
        r#"{"taskUid": 3, "enqueuedAt": "…"}"#,
        printed
    ));
    assert!(!json_output_matches(r#"{"taskUid": 4}"#, printed));
    assert!(!json_output_matches(
        r#"{"taskUid": 3, "error": null}"#,
        printed
    ));
    assert!(!json_output_matches(
        r#"{"taskUid": 3} {"taskUid": 3}"#,
        printed
    ));
    assert!(!json_output_matches(r#"{"taskUid": 3}"#, "not json"));
    assert!(json_output_matches(
        r#"{"a": [1, "…"]}"#,
        r#"{"a": [1, 2]}"#
    ));
    assert!(!json_output_matches(r#"{"a": [1]}"#, r#"{"a": [1, 2]}"#));
    assert!(text_output_matches("took … ms\nok\n", "took 12 ms\nok\n"));
    assert!(!text_output_matches("took … ms\n", "took 12 s\n"));
    assert!(!text_output_matches("ok\n", "ok\nok\n"));
}

/// An output block belongs to the `sh` block right before it; other blocks are not run.
#[test]
fn only_sh_blocks_run_and_outputs_follow_them() {
    let page = "text\n```bash\nnot run\n```\n```sh\necho 1\n```\n\n```json output\n1\n```\n\
                ```sh\necho 2\n```\n";
    let blocks = runnable_blocks(page);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].command, "echo 1\n");
    assert_eq!(blocks[0].line, 5);
    assert_eq!(blocks[0].expected, Some(Expected::Json("1\n".to_owned())));
    assert_eq!(blocks[1].expected, None);
}
