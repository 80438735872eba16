//! Copying an indexed data directory for a server to use, so the original is never opened by
//! a server, never shared by two, and never modified.
//!
//! Invariants: a directory a running coresearch server holds (its lock file is locked) is
//! refused, since a copy of it could be inconsistent; the source and the scratch directory
//! must not contain one another (the scratch directory is emptied); the copy is made by
//! `cp --reflink=auto -a` (a cheap clone where the file system can, a full copy otherwise,
//! with modes and times kept) into a destination that does not exist yet.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

/// The file a running coresearch server holds an exclusive `flock` on (the server's
/// `data_dir::LOCK_FILE_NAME`).
pub const LOCK_FILE_NAME: &str = "coresearch.lock";

/// Fails when a running server holds the data directory `directory`.
pub fn ensure_not_in_use(directory: &Path) -> Result<(), String> {
    let lock_path = directory.join(LOCK_FILE_NAME);
    let Ok(lock_file) = File::open(&lock_path) else {
        // No lock file: no server ever opened it, or it is not a coresearch directory.
        return Ok(());
    };
    // SAFETY: `lock_file` owns an open descriptor for the whole call; `flock` only reads
    // it. A shared lock taken here is released when `lock_file` is closed below.
    let result = unsafe { libc::flock(lock_file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if result == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    if error.kind() == std::io::ErrorKind::WouldBlock {
        return Err(format!(
            "{} is in use by a running server (its lock {} is held); stop it first",
            directory.display(),
            lock_path.display()
        ));
    }
    Err(format!("cannot check {}: {error}", lock_path.display()))
}

/// Fails when `first` and `second` (both absolute) are the same or one contains the other.
pub fn ensure_disjoint(first: &Path, second: &Path) -> Result<(), String> {
    if first.starts_with(second) || second.starts_with(first) {
        return Err(format!(
            "{} and {} overlap; give directories apart from each other",
            first.display(),
            second.display()
        ));
    }
    Ok(())
}

/// Copies the directory `source` to `destination`, which must not exist.
pub fn copy_directory(source: &Path, destination: &Path) -> Result<(), String> {
    if destination.exists() {
        return Err(format!("{} exists already", destination.display()));
    }
    let status = Command::new("cp")
        .arg("--reflink=auto")
        .arg("-a")
        .arg(source)
        .arg(destination)
        .status()
        .map_err(|error| format!("cannot run cp: {error}"))?;
    if !status.success() {
        return Err(format!(
            "cp of {} to {} failed ({status})",
            source.display(),
            destination.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn nested_or_equal_directories_overlap_and_siblings_do_not() {
        let data = PathBuf::from("/tmp/work/data");
        assert!(ensure_disjoint(&data, &PathBuf::from("/tmp/work")).is_err());
        assert!(ensure_disjoint(&PathBuf::from("/tmp/work"), &data).is_err());
        assert!(ensure_disjoint(&data, &data).is_err());
        assert!(ensure_disjoint(&data, &PathBuf::from("/tmp/work/data-copy")).is_ok());
        assert!(ensure_disjoint(&data, &PathBuf::from("/tmp/scratch")).is_ok());
    }

    #[test]
    fn a_copy_holds_the_files_and_a_held_lock_is_refused() {
        let root = std::env::temp_dir().join(format!("data-copy-test-{}", std::process::id()));
        let source = root.join("source");
        std::fs::create_dir_all(source.join("indexes")).expect("the source is created");
        std::fs::write(source.join("indexes/a"), b"hello").expect("a file is written");
        let lock_path = source.join(LOCK_FILE_NAME);
        std::fs::write(&lock_path, b"").expect("the lock file is written");
        assert_eq!(ensure_not_in_use(&source), Ok(()));

        let destination = root.join("copy");
        copy_directory(&source, &destination).expect("the copy succeeds");
        let copied = std::fs::read(destination.join("indexes/a")).expect("the copy is readable");
        assert_eq!(copied, b"hello");
        assert!(copy_directory(&source, &destination).is_err());

        let holder = File::open(&lock_path).expect("the lock file opens");
        // SAFETY: `holder` owns an open descriptor for the whole call.
        let locked = unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(locked, 0);
        assert!(ensure_not_in_use(&source).is_err());
        drop(holder);
        assert_eq!(ensure_not_in_use(&source), Ok(()));
        std::fs::remove_dir_all(&root).expect("the test directory is removed");
    }
}
