//! Starting the real `coresearch` binary for black-box tests: a free loopback port, a
//! temporary data directory, and raw HTTP helpers for exact-byte checks.

#![allow(dead_code, clippy::unwrap_used)]

pub mod network;
pub mod rest_embedder;
pub mod tls;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The master key the tests start servers with when they want authentication.
pub const MASTER_KEY: &str = "masterKey-for-tests-0123456789";

/// How long a test waits for a task to finish before it fails.
pub const TASK_WAIT: Duration = Duration::from_secs(60);
/// The pause between two looks at a task that is not finished.
const TASK_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long a test's request waits for the next byte of its answer. Generous: on CI the
/// whole suite's servers share two CPUs and one disk, and a `GET /tasks` once went
/// unanswered for 10 s in three tests at once (probably behind the control core's commit and
/// its `fdatasync`; not confirmed).
const RESPONSE_WAIT: Duration = Duration::from_secs(30);

/// How long a server may take to answer its first health check.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many ports a server start on a free address tries.
const START_ATTEMPTS: usize = 3;
/// What the server's log says when its port was taken.
const ADDRESS_IN_USE: &str = "in use";
/// How much of a failed server's stderr a failure shows.
const LOG_TAIL_BYTES: usize = 4096;

/// A running server; killed when dropped.
pub struct Server {
    pub address: SocketAddr,
    pub data_directory: PathBuf,
    child: Option<Child>,
    _scratch: Option<tempfile::TempDir>,
}

/// How to start a server.
#[derive(Clone, Default)]
pub struct Options {
    pub master_key: Option<String>,
    pub extra_arguments: Vec<String>,
    pub cores: Option<usize>,
    /// Environment variables the server is started with, beside the test's own.
    pub environment: Vec<(String, String)>,
    /// Variables removed from the server's environment, after the harness set its own
    /// (`MEILI_LOG_LEVEL`, which would beat a configuration file's `log_level`).
    pub removed_environment: Vec<String>,
    /// The server serves TLS (`--ssl-cert-path`): its health is checked over TLS.
    pub tls: bool,
}

impl Server {
    /// A server without a master key, on a fresh data directory.
    pub fn start() -> Server {
        Server::start_with(Options::default())
    }

    /// A server with `options`, on a fresh data directory.
    pub fn start_with(options: Options) -> Server {
        let scratch = tempfile::tempdir().expect("tempdir succeeds");
        let data_directory = scratch.path().join("data.ms");
        let mut server = Server::start_on(&data_directory, &options);
        server._scratch = Some(scratch);
        server
    }

    /// A server with `options` on `data_directory` (which may already hold data). The port
    /// chosen free may be taken again before the server binds it (by another test's server or
    /// a client's ephemeral port): the start is then retried on another port.
    pub fn start_on(data_directory: &Path, options: &Options) -> Server {
        for _ in 1..START_ATTEMPTS {
            match Server::try_start_at(data_directory, options, free_address()) {
                Ok(server) => return server,
                Err(log) if log.contains(ADDRESS_IN_USE) => continue,
                Err(log) => panic!("server did not start:\n{log}"),
            }
        }
        Server::start_at(data_directory, options, free_address())
    }

    /// A server with `options` on `data_directory`, listening on `address` (a restart on
    /// the address other instances know it by).
    pub fn start_at(data_directory: &Path, options: &Options, address: SocketAddr) -> Server {
        Server::try_start_at(data_directory, options, address)
            .unwrap_or_else(|log| panic!("server did not start:\n{log}"))
    }

    /// Starts the server and waits for its first health check; on failure, the end of what
    /// the server wrote to stderr (and how it exited, if it did).
    fn try_start_at(
        data_directory: &Path,
        options: &Options,
        address: SocketAddr,
    ) -> Result<Server, String> {
        let log_path = data_directory.with_extension("stderr.log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_coresearch"));
        command
            .arg("--http-addr")
            .arg(address.to_string())
            .arg("--db-path")
            .arg(data_directory)
            .arg("--cores")
            .arg(options.cores.unwrap_or(2).to_string())
            .arg("--no-analytics")
            .args(&options.extra_arguments)
            .env_remove("MEILI_MASTER_KEY")
            .env("MEILI_LOG_LEVEL", "WARN")
            .envs(options.environment.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(server_stderr(&log_path));
        for name in &options.removed_environment {
            command.env_remove(name);
        }
        if let Some(master_key) = &options.master_key {
            command.arg("--master-key").arg(master_key);
        }
        // Dumps go beside the data directory, not into the directory the tests run from.
        if !options
            .extra_arguments
            .iter()
            .any(|argument| argument == "--dump-dir")
        {
            command
                .arg("--dump-dir")
                .arg(data_directory.with_extension("dumps"));
        }
        // Snapshots too.
        if !options
            .extra_arguments
            .iter()
            .any(|argument| argument == "--snapshot-dir")
        {
            command
                .arg("--snapshot-dir")
                .arg(data_directory.with_extension("snapshots"));
        }
        let child = command.spawn().expect("spawn succeeds");
        let mut server = Server {
            address,
            data_directory: data_directory.to_path_buf(),
            child: Some(child),
            _scratch: None,
        };
        match server.wait_until_healthy(options.tls) {
            Ok(()) => Ok(server),
            Err(failure) => {
                drop(server);
                Err(format!("{failure}\n{}", log_tail(&log_path)))
            }
        }
    }

    /// Waits for the first health check (over TLS when `tls`); fails at once when the
    /// process exits.
    fn wait_until_healthy(&mut self, tls: bool) -> Result<(), String> {
        let started = Instant::now();
        let health = "GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
        loop {
            let answer = if tls {
                tls::TlsConnection::connect(self.address)
                    .and_then(|mut connection| connection.request(health))
            } else {
                self.try_request(health)
            };
            if let Ok(response) = answer {
                if response.status == 200 {
                    return Ok(());
                }
            }
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("the server exited at start ({status})"));
                }
            }
            if started.elapsed() >= START_TIMEOUT {
                return Err(format!("no health answer within {START_TIMEOUT:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The base URL clients use.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The process id of the server.
    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .expect("as_ref finds a value of that type")
            .id()
    }

    /// `method path` with the master key [`MASTER_KEY`], and `body` as JSON when given.
    pub fn send(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> HttpResponse {
        match body {
            Some(body) => self.raw(&json_request(
                method,
                path,
                Some(MASTER_KEY),
                &body.to_string(),
            )),
            None => self.raw(&request(method, path, Some(MASTER_KEY))),
        }
    }

    /// Task `uid` once it is finished (succeeded, failed or canceled), read with the master
    /// key; panics after [`TASK_WAIT`].
    pub fn wait_task(&self, uid: impl std::fmt::Display) -> serde_json::Value {
        let started = Instant::now();
        while started.elapsed() < TASK_WAIT {
            let task = self.send("GET", &format!("/tasks/{uid}"), None).json();
            if !matches!(task["status"].as_str(), Some("enqueued" | "processing")) {
                return task;
            }
            std::thread::sleep(TASK_POLL_INTERVAL);
        }
        panic!("task {uid} still pending after {TASK_WAIT:?}");
    }

    /// Sends raw bytes on a new connection and reads one response.
    pub fn raw(&self, request: &str) -> HttpResponse {
        self.try_request(request).expect("try_request succeeds")
    }

    fn try_request(&self, request: &str) -> std::io::Result<HttpResponse> {
        let mut connection = self.connect()?;
        connection.stream.write_all(request.as_bytes())?;
        connection.read_response()
    }

    /// A new connection to the server.
    pub fn connect(&self) -> std::io::Result<Connection> {
        let stream = TcpStream::connect(self.address)?;
        stream.set_read_timeout(Some(RESPONSE_WAIT))?;
        Ok(Connection::new(stream))
    }

    /// Stops the server with SIGTERM and waits for it; returns its exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("take succeeds");
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().expect("wait succeeds")
    }

    /// Kills the server with SIGKILL (a crash) and waits for it, handing over the scratch
    /// directory that holds its data (so a restart can reuse it).
    pub fn kill_keeping_data(mut self) -> Option<tempfile::TempDir> {
        let scratch = self._scratch.take();
        self.kill();
        scratch
    }

    /// Kills the server with SIGKILL (a crash) and starts it again on the same data
    /// directory with `options`.
    pub fn crash_and_restart(self, options: &Options) -> Server {
        let data_directory = self.data_directory.clone();
        let scratch = self.kill_keeping_data();
        let mut restarted = Server::start_on(&data_directory, options);
        restarted.keep_scratch(scratch);
        restarted
    }

    /// Keeps `scratch` (a data directory's parent) alive as long as this server.
    pub fn keep_scratch(&mut self, scratch: Option<tempfile::TempDir>) {
        self._scratch = scratch;
    }

    /// Kills the server with SIGKILL (a crash) and waits for it.
    pub fn kill(mut self) {
        let mut child = self.child.take().expect("take succeeds");
        child.kill().expect("kill succeeds");
        child.wait().expect("wait succeeds");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `request` to the server at `address` on a new connection; `None` when the server
/// is gone (refused, reset or closed before answering) — what a crash looks like.
pub fn raw_to(address: &str, request: &str) -> Option<HttpResponse> {
    let stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(RESPONSE_WAIT)).ok()?;
    let mut connection = Connection::new(stream);
    connection.stream.write_all(request.as_bytes()).ok()?;
    connection.read_response().ok()
}

/// The server's stderr: the test's own under `CORESEARCH_TEST_SERVER_LOGS`, otherwise a file
/// beside the data directory (appended to across restarts) that a failed start shows.
fn server_stderr(log_path: &Path) -> Stdio {
    if std::env::var_os("CORESEARCH_TEST_SERVER_LOGS").is_some() {
        return Stdio::inherit();
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .map_or_else(|_| Stdio::null(), Stdio::from)
}

/// The last [`LOG_TAIL_BYTES`] of the server's stderr file.
fn log_tail(log_path: &Path) -> String {
    let Ok(log) = std::fs::read(log_path) else {
        return format!("(no server log at {})", log_path.display());
    };
    let start = log.len().saturating_sub(LOG_TAIL_BYTES);
    format!(
        "server stderr ({}):\n{}",
        log_path.display(),
        String::from_utf8_lossy(&log[start..])
    )
}

/// A loopback address with a port free now (another process may take it before it is bound).
pub fn free_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind succeeds");
    listener.local_addr().expect("local_addr succeeds")
}

/// A parsed HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "body is not JSON ({error}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("from_utf8 succeeds")
    }
}

/// A client connection that keeps the bytes it read past one response for the next one,
/// so pipelined responses are read correctly.
pub struct Connection {
    pub stream: TcpStream,
    buffer: Vec<u8>,
}

impl Connection {
    pub fn new(stream: TcpStream) -> Connection {
        Connection {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Sends raw bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write_all succeeds");
    }

    /// Reads the next response.
    pub fn read_response(&mut self) -> std::io::Result<HttpResponse> {
        read_response_from(&mut self.stream, &mut self.buffer)
    }
}

/// Reads the next response from `stream`, after the bytes of `buffer` (read past the
/// previous response), and leaves in `buffer` what was read past this one.
pub fn read_response_from(
    stream: &mut dyn Read,
    buffer: &mut Vec<u8>,
) -> std::io::Result<HttpResponse> {
    let mut reader = Buffered {
        stream,
        pending: std::mem::take(buffer),
    };
    let response = read_response(&mut reader);
    *buffer = reader.pending;
    response
}

/// A stream with bytes already read in front of it; reading past a response's end leaves
/// the surplus in `pending`.
struct Buffered<'a> {
    stream: &'a mut dyn Read,
    pending: Vec<u8>,
}

impl Read for Buffered<'_> {
    fn read(&mut self, output: &mut [u8]) -> std::io::Result<usize> {
        if !self.pending.is_empty() {
            let count = self.pending.len().min(output.len());
            output[..count].copy_from_slice(&self.pending[..count]);
            self.pending.drain(..count);
            return Ok(count);
        }
        self.stream.read(output)
    }
}

impl Buffered<'_> {
    fn give_back(&mut self, surplus: &[u8]) {
        let mut restored = surplus.to_vec();
        restored.extend_from_slice(&self.pending);
        self.pending = restored;
    }
}

/// Reads exactly one response (Content-Length framed, or chunked) from `stream`.
fn read_response(stream: &mut Buffered<'_>) -> std::io::Result<HttpResponse> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(position) = find(&buffer, b"\r\n\r\n") {
            break position + 4;
        }
        read_more(stream, &mut buffer)?;
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter(|line| !line.is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let mut rest = buffer[head_end..].to_vec();
    let content_length = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse::<usize>().ok());
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked")
    });
    let body = if status == 100 || status == 204 || status == 304 {
        stream.give_back(&rest);
        Vec::new()
    } else if let Some(length) = content_length {
        while rest.len() < length {
            read_more(stream, &mut rest)?;
        }
        stream.give_back(&rest[length..]);
        rest.truncate(length);
        rest
    } else if chunked {
        read_chunked(stream, rest)?
    } else {
        stream.read_to_end(&mut rest)?;
        rest
    };
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

fn read_chunked(stream: &mut Buffered<'_>, mut buffer: Vec<u8>) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(position) = find(&buffer, b"\r\n") {
                break position;
            }
            read_more(stream, &mut buffer)?;
        };
        let size_text = String::from_utf8_lossy(&buffer[..line_end]).to_string();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(std::io::Error::other)?;
        buffer.drain(..line_end + 2);
        while buffer.len() < size + 2 {
            read_more(stream, &mut buffer)?;
        }
        if size == 0 {
            stream.give_back(&buffer[2..]);
            return Ok(body);
        }
        body.extend_from_slice(&buffer[..size]);
        buffer.drain(..size + 2);
    }
}

fn read_more(stream: &mut impl Read, buffer: &mut Vec<u8>) -> std::io::Result<()> {
    let mut chunk = [0u8; 8192];
    let read = stream.read(&mut chunk)?;
    if read == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed before the response ended",
        ));
    }
    buffer.extend_from_slice(&chunk[..read]);
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// A request with a JSON body.
pub fn json_request(method: &str, path: &str, key: Option<&str>, body: &str) -> String {
    let authorization = key
        .map(|key| format!("Authorization: Bearer {key}\r\n"))
        .unwrap_or_default();
    format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\n{authorization}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A request without a body.
pub fn request(method: &str, path: &str, key: Option<&str>) -> String {
    let authorization = key
        .map(|key| format!("Authorization: Bearer {key}\r\n"))
        .unwrap_or_default();
    format!("{method} {path} HTTP/1.1\r\nHost: t\r\n{authorization}\r\n")
}

/// The exit status and standard error of a start with `arguments` and `environment`, which
/// must fail before serving.
pub fn failed_start(arguments: &[&str], environment: &[(&str, &str)]) -> (i32, String) {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let output = Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .arg("--db-path")
        .arg(scratch.path().join("data.ms"))
        .arg("--http-addr")
        .arg("127.0.0.1:0")
        .arg("--cores")
        .arg("1")
        .args(arguments)
        .current_dir(scratch.path())
        .env_remove("MEILI_MASTER_KEY")
        .envs(environment.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("the server runs");
    let code = output.status.code().expect("the process exits by itself");
    (code, String::from_utf8_lossy(&output.stderr).into_owned())
}
