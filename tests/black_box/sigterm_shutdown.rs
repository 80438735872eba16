//! SIGTERM with a stalled upload: the server stops within its shutdown grace period (not
//! after the 30 s body read timeout), and the upload it never acknowledged leaves no task.

use crate::common;

use std::time::{Duration, Instant};

use common::{Options, Server, request};
use coresearch::runtime::listener::SHUTDOWN_GRACE;

/// How much longer than the grace period the process may take to exit.
const EXIT_SLACK: Duration = Duration::from_secs(2);
/// How long the upload has to reach the server before the signal.
const UPLOAD_HEAD_START: Duration = Duration::from_millis(300);

#[test]
fn sigterm_does_not_wait_for_a_stalled_upload() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data_directory = scratch.path().join("data.ms");
    let options = Options::default();
    let server = Server::start_on(&data_directory, &options);

    let mut upload = server.connect().expect("connect succeeds");
    let first_chunk = r#"[{"id":1,"title":"never finished"}"#;
    let stalled = format!(
        "POST /indexes/stalled/documents HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{first_chunk}\r\n",
        first_chunk.len()
    );
    upload.send(stalled.as_bytes());
    std::thread::sleep(UPLOAD_HEAD_START);

    let signalled = Instant::now();
    let status = server.stop();
    let took = signalled.elapsed();
    assert!(
        took < SHUTDOWN_GRACE + EXIT_SLACK,
        "SIGTERM took {took:?} with a stalled upload"
    );
    assert!(status.success(), "exit status {status:?}");
    drop(upload);

    let restarted = Server::start_on(&data_directory, &options);
    let tasks = restarted.raw(&request("GET", "/tasks", None)).json();
    assert_eq!(tasks["total"], 0, "{tasks}");
    let index = restarted.raw(&request("GET", "/indexes/stalled", None));
    assert_eq!(index.status, 404, "{}", index.text());
}
