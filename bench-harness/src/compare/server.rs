//! A server under comparison as a child process: started from a given binary with a fresh
//! (or a prepared) data directory, waited for until `/health` answers 200, stopped at the end.
//!
//! Invariants: `start` empties the data directory before the start, so nothing of an earlier
//! run is measured (`start_in_place` keeps it, for a caller that filled it on purpose); the
//! child runs in its own work directory (where Meilisearch puts `dumps/` and `snapshots/`)
//! with its output in `server.log` there; a `ServerProcess` that is dropped stops its child
//! (SIGTERM, then SIGKILL after `STOP_GRACE`), so no error path leaves a server running.
//! A server is started only on a free port: otherwise the health probe could be answered by
//! whatever process holds it (a leftover server), and that process would be measured.
//! A spec with a CPU list starts the server through `taskset -c LIST`, which executes the
//! server in its own process: the child's pid is the server's.

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::client::Client;

/// How long a server may take to answer `/health` after an ordinary start.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);
/// Pause between two health probes.
pub const HEALTH_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How long a server may take to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(15);
/// Pause between two checks that a stopping server exited.
const EXIT_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Timeout of a single health probe.
const HEALTH_PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// The program that pins a server to a CPU list (util-linux; it executes the server in place).
const TASKSET_PROGRAM: &str = "taskset";

/// Which server a binary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// Ours.
    Coresearch,
    /// The reference.
    Meilisearch,
}

impl ServerKind {
    /// The server's name in reports and directory names.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Coresearch => "coresearch",
            ServerKind::Meilisearch => "meilisearch",
        }
    }
}

/// How to start one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Which server.
    pub kind: ServerKind,
    /// Its binary.
    pub binary: PathBuf,
    /// Its own directory: the child's working directory, holding `data/` and `server.log`.
    pub work_dir: PathBuf,
    /// The loopback port it listens on.
    pub port: u16,
    /// Cores (coresearch executors; Meilisearch indexing threads), when limited.
    pub cores: Option<usize>,
    /// The master key, when one is set.
    pub master_key: Option<String>,
    /// Arguments appended after the ones the spec builds (e.g. an IP policy).
    pub extra_arguments: Vec<OsString>,
    /// The CPUs the server may run on (a `taskset -c` list such as `0` or `0,1`), when pinned.
    pub cpu_list: Option<String>,
}

impl ServerSpec {
    /// A server on loopback `port` working in `work_dir`, neither pinned nor given extra
    /// arguments.
    pub fn plain(
        kind: ServerKind,
        binary: &Path,
        work_dir: PathBuf,
        port: u16,
        cores: Option<usize>,
        master_key: Option<String>,
    ) -> ServerSpec {
        ServerSpec {
            kind,
            binary: binary.to_path_buf(),
            work_dir,
            port,
            cores,
            master_key,
            extra_arguments: Vec::new(),
            cpu_list: None,
        }
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.work_dir.join("data")
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The command-line arguments of the server.
    pub fn arguments(&self) -> Vec<OsString> {
        let mut arguments: Vec<OsString> = vec![
            "--db-path".into(),
            self.data_dir().into(),
            "--http-addr".into(),
            self.address().to_string().into(),
        ];
        match self.kind {
            ServerKind::Coresearch => {
                if let Some(cores) = self.cores {
                    arguments.extend(["--cores".into(), cores.to_string().into()]);
                }
            }
            ServerKind::Meilisearch => {
                arguments.extend([
                    "--no-analytics".into(),
                    "--env".into(),
                    "development".into(),
                ]);
                if let Some(cores) = self.cores {
                    arguments.extend(["--max-indexing-threads".into(), cores.to_string().into()]);
                }
            }
        }
        if let Some(key) = &self.master_key {
            arguments.extend(["--master-key".into(), key.into()]);
        }
        arguments.extend(self.extra_arguments.iter().cloned());
        arguments
    }

    /// The command that starts the server: its binary, or `taskset` pinning it.
    pub fn command(&self) -> Command {
        match &self.cpu_list {
            Some(cpus) => {
                let mut command = Command::new(TASKSET_PROGRAM);
                command.arg("-c").arg(cpus).arg(&self.binary);
                command
            }
            None => Command::new(&self.binary),
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// Its pid.
    pub pid: u32,
    /// How it was started.
    pub spec: ServerSpec,
}

/// `path` made absolute against the current directory (the servers run in their own
/// directories, where a relative path would point elsewhere).
pub fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
}

/// A server binary checked to be a file and made absolute.
pub fn server_binary(binary: &Path) -> Result<PathBuf, String> {
    if binary.is_file() {
        absolute(binary)
    } else {
        Err(format!("{} is not a file", binary.display()))
    }
}

/// Empties (or creates) `directory`.
fn fresh_directory(directory: &Path) -> Result<(), String> {
    if directory.exists() {
        std::fs::remove_dir_all(directory)
            .map_err(|error| format!("cannot empty {}: {error}", directory.display()))?;
    }
    std::fs::create_dir_all(directory)
        .map_err(|error| format!("cannot create {}: {error}", directory.display()))
}

/// Fails when another process listens on the server's address already.
fn ensure_port_free(spec: &ServerSpec) -> Result<(), String> {
    // The listener is dropped at once: the server binds the address right after.
    TcpListener::bind(spec.address()).map(drop).map_err(|error| {
        format!(
            "{}'s address {} is taken ({error}): stop what listens there or choose another port",
            spec.kind.name(),
            spec.address()
        )
    })
}

impl ServerProcess {
    /// Starts the server with an empty data directory and waits until it is healthy.
    pub fn start(spec: &ServerSpec) -> Result<ServerProcess, String> {
        ServerProcess::start_within(spec, START_TIMEOUT)
    }

    /// Starts the server with an empty data directory and waits up to `health_timeout` until
    /// it is healthy (a start that imports a dump or a snapshot may take longer than
    /// [`START_TIMEOUT`]).
    pub fn start_within(
        spec: &ServerSpec,
        health_timeout: Duration,
    ) -> Result<ServerProcess, String> {
        fresh_directory(&spec.work_dir)?;
        ServerProcess::start_in_place_within(spec, health_timeout)
    }

    /// Starts the server on its work directory as it is (the caller prepared its data
    /// directory) and waits until it is healthy.
    pub fn start_in_place(spec: &ServerSpec) -> Result<ServerProcess, String> {
        ServerProcess::start_in_place_within(spec, START_TIMEOUT)
    }

    /// `start_in_place`, waiting up to `health_timeout` until the server is healthy.
    pub fn start_in_place_within(
        spec: &ServerSpec,
        health_timeout: Duration,
    ) -> Result<ServerProcess, String> {
        ensure_port_free(spec)?;
        let log_path = spec.work_dir.join("server.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|error| format!("cannot create {}: {error}", log_path.display()))?;
        let log_for_errors = log
            .try_clone()
            .map_err(|error| format!("cannot share {}: {error}", log_path.display()))?;
        let child = spec
            .command()
            .args(spec.arguments())
            .current_dir(&spec.work_dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_for_errors)
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", spec.binary.display()))?;
        let mut server = ServerProcess {
            pid: child.id(),
            child,
            spec: spec.clone(),
        };
        server.wait_healthy(&log_path, health_timeout)?;
        Ok(server)
    }

    fn wait_healthy(&mut self, log_path: &Path, health_timeout: Duration) -> Result<(), String> {
        let started = Instant::now();
        let mut client = Client::new(self.spec.address(), None, HEALTH_PROBE_TIMEOUT);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited at start ({status}); see {}",
                    self.spec.kind.name(),
                    log_path.display()
                ));
            }
            if client
                .get("/health")
                .is_ok_and(|response| response.status == 200)
            {
                return Ok(());
            }
            if started.elapsed() > health_timeout {
                return Err(format!(
                    "{} not healthy after {health_timeout:?}; see {}",
                    self.spec.kind.name(),
                    log_path.display()
                ));
            }
            std::thread::sleep(HEALTH_POLL_INTERVAL);
        }
    }

    /// Stops the server: SIGTERM, then SIGKILL after `STOP_GRACE`; waits for its exit.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        if let Ok(pid) = libc::pid_t::try_from(self.pid) {
            // SAFETY: kill() only sends a signal; `pid` is our own child, not yet reaped
            // (try_wait above saw it running), so the pid cannot belong to another process.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let asked = Instant::now();
        while asked.elapsed() < STOP_GRACE {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(EXIT_POLL_INTERVAL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: ServerKind) -> ServerSpec {
        ServerSpec {
            kind,
            binary: PathBuf::from("/bin/server"),
            work_dir: PathBuf::from("/tmp/work/side"),
            port: 7711,
            cores: Some(2),
            master_key: Some("key".to_string()),
            extra_arguments: Vec::new(),
            cpu_list: None,
        }
    }

    fn text(arguments: Vec<OsString>) -> Vec<String> {
        arguments
            .into_iter()
            .map(|argument| argument.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_server_is_not_started_on_a_port_another_process_holds() {
        let holder = TcpListener::bind(("127.0.0.1", 0)).expect("bind succeeds");
        let port = holder.local_addr().expect("local_addr succeeds").port();
        // Checked before anything is created or spawned: neither path is touched.
        let taken = ServerSpec {
            binary: PathBuf::from("/nonexistent/server"),
            work_dir: PathBuf::from("/nonexistent/work"),
            port,
            ..spec(ServerKind::Meilisearch)
        };
        let error = ServerProcess::start_in_place(&taken).expect_err("the port is taken");
        assert!(error.contains("is taken"), "{error}");
        drop(holder);
        assert!(ensure_port_free(&taken).is_ok(), "the port is free again");
    }

    #[test]
    fn a_pinned_server_is_started_through_taskset_and_gets_its_extra_arguments_last() {
        let unpinned = spec(ServerKind::Coresearch);
        assert_eq!(unpinned.command().get_program(), "/bin/server");
        let pinned = ServerSpec {
            cpu_list: Some("1".to_string()),
            extra_arguments: vec!["--flag".into(), "value".into()],
            ..spec(ServerKind::Coresearch)
        };
        let command = pinned.command();
        assert_eq!(command.get_program(), "taskset");
        let arguments: Vec<_> = command.get_args().collect();
        assert_eq!(arguments, ["-c", "1", "/bin/server"]);
        let arguments = text(pinned.arguments());
        assert_eq!(arguments[arguments.len() - 2..], ["--flag", "value"]);
    }

    #[test]
    fn each_server_gets_its_own_flags_and_a_data_dir_inside_its_work_dir() {
        assert_eq!(
            text(spec(ServerKind::Coresearch).arguments()),
            [
                "--db-path",
                "/tmp/work/side/data",
                "--http-addr",
                "127.0.0.1:7711",
                "--cores",
                "2",
                "--master-key",
                "key"
            ]
        );
        let mut meilisearch = spec(ServerKind::Meilisearch);
        meilisearch.cores = None;
        meilisearch.master_key = None;
        assert_eq!(
            text(meilisearch.arguments()),
            [
                "--db-path",
                "/tmp/work/side/data",
                "--http-addr",
                "127.0.0.1:7711",
                "--no-analytics",
                "--env",
                "development"
            ]
        );
    }
}
