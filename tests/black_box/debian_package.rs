//! The Debian package, built by the project's own script (`packaging/debian/build-deb.sh`,
//! with `dpkg-deb`) from the binary under test: its fields and contents as `dpkg-deb` reads
//! them, the systemd unit it ships, an installation into a scratch root with `dpkg --root`
//! (maintainer scripts included: the system user, the state directory, the root-only secrets
//! file with a generated master key), and the installed binary started with the installed
//! configuration and secrets, answering over the notify protocol and HTTP.
//!
//! Needs Debian's `dpkg` (the CI machine is Debian); without it the test fails and says so.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long the installed server may take to say it is ready.
const READY_WAIT: Duration = Duration::from_secs(30);
/// The shortest master key production accepts.
const MASTER_KEY_BYTES_MIN: usize = 16;

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|error| {
        panic!("{command:?} could not run ({error}); the package test needs Debian's dpkg")
    });
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn build_package(output_directory: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/debian/build-deb.sh");
    let built = run(Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_coresearch"))
        .arg(output_directory));
    PathBuf::from(text(&built).trim())
}

fn check_fields(package: &Path) {
    let fields = text(&run(Command::new("dpkg-deb")
        .arg("--field")
        .arg(package)
        .args(["Package", "Version", "Architecture", "Depends"])));
    assert!(fields.contains("Package: coresearch"), "{fields}");
    assert!(
        fields.contains(&format!("Version: {}", env!("CARGO_PKG_VERSION"))),
        "{fields}"
    );
    assert!(fields.contains("Depends: libc6, passwd"), "{fields}");
}

fn check_contents(package: &Path) {
    let contents = text(&run(Command::new("dpkg-deb")
        .arg("--contents")
        .arg(package)));
    for (mode, path) in [
        ("-rwxr-xr-x root/root", "./usr/bin/coresearch"),
        ("-rw-r--r-- root/root", "./etc/coresearch/config.toml"),
        (
            "-rw-r--r-- root/root",
            "./lib/systemd/system/coresearch.service",
        ),
    ] {
        assert!(
            contents
                .lines()
                .any(|line| line.starts_with(mode) && line.ends_with(path)),
            "no `{mode} … {path}` in:\n{contents}"
        );
    }
    let conffiles = text(&run(Command::new("dpkg-deb")
        .arg("--info")
        .arg(package)
        .arg("conffiles")));
    assert_eq!(conffiles.trim(), "/etc/coresearch/config.toml");
}

fn check_unit(root: &Path) {
    let unit = std::fs::read_to_string(root.join("lib/systemd/system/coresearch.service"))
        .expect("the unit is installed");
    for line in [
        "Type=notify",
        "WatchdogSec=30",
        "User=coresearch",
        "EnvironmentFile=/etc/coresearch/coresearch.env",
        "ExecStart=/usr/bin/coresearch --config-file-path /etc/coresearch/config.toml",
        "LimitMEMLOCK=infinity",
        "LimitNOFILE=1048576",
        "NoNewPrivileges=true",
        "ProtectSystem=strict",
        "ProtectHome=true",
        "PrivateTmp=true",
        "ReadWritePaths=/var/lib/coresearch",
    ] {
        assert!(
            unit.lines().any(|candidate| candidate == line),
            "no `{line}`:\n{unit}"
        );
    }
}

/// A root with an empty dpkg database and the account files `useradd --prefix` edits.
fn scratch_root(root: &Path) {
    for directory in [
        "etc",
        "var/lib/dpkg/info",
        "var/lib/dpkg/updates",
        "var/lib/dpkg/triggers",
    ] {
        std::fs::create_dir_all(root.join(directory)).expect("create_dir_all succeeds");
    }
    for (file, contents) in [
        ("var/lib/dpkg/status", ""),
        ("var/lib/dpkg/available", ""),
        ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
        ("etc/group", "root:x:0:\n"),
        ("etc/shadow", "root:*:19000:0:99999:7:::\n"),
        ("etc/gshadow", "root:*::\n"),
    ] {
        std::fs::write(root.join(file), contents).expect("write succeeds");
    }
}

/// Installs with the maintainer scripts run outside a chroot, under `DPKG_ROOT` (the scratch
/// root holds no libc6 or passwd package, so dependencies are not checked there).
fn install(root: &Path, package: &Path) {
    run(Command::new("dpkg")
        .arg(format!("--root={}", root.display()))
        .args([
            "--force-script-chrootless",
            "--force-not-root",
            "--force-depends",
            "--no-triggers",
            "--log=/dev/null",
            "-i",
        ])
        .arg(package));
    let status = text(&run(Command::new("dpkg")
        .arg(format!("--root={}", root.display()))
        .args(["-s", "coresearch"])));
    assert!(status.contains("Status: install ok installed"), "{status}");
}

/// The installed user, state directory and secrets file; answers the generated master key.
fn check_installation(root: &Path) -> String {
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).expect("read succeeds");
    let user = passwd
        .lines()
        .find(|line| line.starts_with("coresearch:"))
        .unwrap_or_else(|| panic!("no coresearch user in:\n{passwd}"));
    let fields: Vec<&str> = user.split(':').collect();
    let uid: u32 = fields[2].parse().expect("a numeric uid");
    assert_eq!(fields[6], "/usr/sbin/nologin", "{user}");
    let state = std::fs::metadata(root.join("var/lib/coresearch")).expect("the state directory");
    assert_eq!(
        (state.uid(), state.permissions().mode() & 0o777),
        (uid, 0o750)
    );
    let secrets_path = root.join("etc/coresearch/coresearch.env");
    let secrets = std::fs::metadata(&secrets_path).expect("the secrets file");
    assert_eq!(
        (secrets.uid(), secrets.permissions().mode() & 0o777),
        (0, 0o600)
    );
    let contents = std::fs::read_to_string(&secrets_path).expect("read succeeds");
    let key = contents
        .lines()
        .find_map(|line| line.strip_prefix("MEILI_MASTER_KEY="))
        .expect("a master key line");
    assert!(
        key.len() >= MASTER_KEY_BYTES_MIN,
        "a generated key of {} bytes",
        key.len()
    );
    key.to_owned()
}

/// Starts the installed binary with the installed configuration and the secrets file's
/// variables; only the paths under `/var/lib` and the address are moved into the scratch
/// root, by flags (which win over the file).
fn start_installed(root: &Path, master_key: &str, address: &str, notify: &Path) -> Installed {
    let state = root.join("var/lib/coresearch");
    let child = Command::new(root.join("usr/bin/coresearch"))
        .arg("--config-file-path")
        .arg(root.join("etc/coresearch/config.toml"))
        .arg("--db-path")
        .arg(state.join("data.ms"))
        .arg("--dump-dir")
        .arg(state.join("dumps"))
        .arg("--snapshot-dir")
        .arg(state.join("snapshots"))
        .args(["--http-addr", address])
        .env_clear()
        .env("MEILI_MASTER_KEY", master_key)
        .env("NOTIFY_SOCKET", notify)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the installed binary starts");
    Installed(child)
}

/// The installed server's process, killed when the test ends, whether it passed or not.
struct Installed(Child);

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_ready(socket: &UnixDatagram) {
    let started = Instant::now();
    let mut buffer = [0_u8; 1024];
    while started.elapsed() < READY_WAIT {
        if let Ok(length) = socket.recv(&mut buffer) {
            if String::from_utf8_lossy(&buffer[..length])
                .lines()
                .any(|line| line == "READY=1")
            {
                return;
            }
        }
    }
    panic!("the installed server sent no READY=1 within {READY_WAIT:?}");
}

fn check_serving(address: &str, master_key: &str) {
    let health = common::raw_to(address, &common::request("GET", "/health", None))
        .expect("the installed server answers");
    assert_eq!(health.status, 200, "{}", health.text());
    // The installed configuration says `env = "production"`: a key is needed.
    let without_key = common::raw_to(address, &common::request("GET", "/indexes", None))
        .expect("the installed server answers");
    assert_eq!(without_key.status, 401, "{}", without_key.text());
    let with_key = common::raw_to(
        address,
        &common::request("GET", "/indexes", Some(master_key)),
    )
    .expect("the installed server answers");
    assert_eq!(with_key.status, 200, "{}", with_key.text());
}

#[test]
fn the_package_builds_installs_and_its_binary_serves() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let package = build_package(&scratch.path().join("out"));
    check_fields(&package);
    check_contents(&package);

    let root = scratch.path().join("root");
    scratch_root(&root);
    install(&root, &package);
    check_unit(&root);
    let master_key = check_installation(&root);

    let notify_path = scratch.path().join("notify.sock");
    let socket = UnixDatagram::bind(&notify_path).expect("bind succeeds");
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("set_read_timeout succeeds");
    let address = common::free_address().to_string();
    let _server = start_installed(&root, &master_key, &address, &notify_path);
    wait_ready(&socket);
    check_serving(&address, &master_key);
}
