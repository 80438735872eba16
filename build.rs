//! Records the commit the binary is built from, for `GET /version`.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
    if let Some(sha) = git(&["rev-parse", "HEAD"]) {
        println!("cargo:rustc-env=CORESEARCH_COMMIT_SHA={sha}");
    }
    if let Some(date) = git(&[
        "log",
        "-1",
        "--date=format-local:%Y-%m-%dT%H:%M:%SZ",
        "--format=%cd",
    ]) {
        println!("cargo:rustc-env=CORESEARCH_COMMIT_DATE={date}");
    }
}

fn git(arguments: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(arguments)
        .env("TZ", "UTC0")
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}
