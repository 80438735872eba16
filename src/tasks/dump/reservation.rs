//! The files of one archive being written in its directory — a dump's `<uid>.dump` in
//! `--dump-dir`, or a snapshot's `<db name>.snapshot` in `--snapshot-dir`: the staging
//! directory `<name>.<extension>.staging/` and the temporary archive `<name>.<extension>.tmp`,
//! which the writer holds an exclusive `flock` on while it runs. The archive gets its final
//! name `<name>.<extension>` only once complete (a dump's [`super::archive::write_archive`],
//! a snapshot's `crate::tasks::snapshot::archive`).
//!
//! Invariants: a temporary archive or staging directory of the same extension nobody holds a
//! lock on is what a crash left behind, and the next reservation removes it; one held by
//! another process (two servers sharing a directory) is left alone, and a reservation of the
//! same name is refused as already processing; a finished or failed archive leaves neither
//! behind.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The suffix, after the archive's extension, of a temporary archive.
const TEMPORARY_SUFFIX: &str = ".tmp";
/// The suffix, after the archive's extension, of a staging directory.
const STAGING_SUFFIX: &str = ".staging";

/// Why a dump could not reserve its files.
#[derive(Debug)]
pub enum ReservationError {
    /// Another process is writing a dump of the same uid.
    AlreadyProcessing,
    Io(io::Error),
}

impl From<io::Error> for ReservationError {
    fn from(error: io::Error) -> Self {
        ReservationError::Io(error)
    }
}

/// The files of a dump being written; removed on drop unless the dump finished.
#[derive(Debug)]
pub struct Reservation {
    pub staging: PathBuf,
    pub temporary: PathBuf,
    pub destination: PathBuf,
    /// Holds the lock on the temporary archive.
    _lock: File,
}

impl Reservation {
    /// Reserves the files of dump `uid` in `directory` (created when missing), after
    /// removing what crashed dumps left there.
    pub fn take(directory: &Path, uid: &str) -> Result<Reservation, ReservationError> {
        Reservation::take_named(directory, uid, super::layout::DUMP_EXTENSION)
    }

    /// Reserves the files of the archive `<name>.<extension>` in `directory` (created when
    /// missing), after removing what crashed writers of `extension` archives left there.
    pub fn take_named(
        directory: &Path,
        name: &str,
        extension: &str,
    ) -> Result<Reservation, ReservationError> {
        fs::create_dir_all(directory)?;
        remove_leftovers(directory, extension)?;
        let temporary = directory.join(format!("{name}.{extension}{TEMPORARY_SUFFIX}"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&temporary)?;
        if !try_lock(&lock)? {
            return Err(ReservationError::AlreadyProcessing);
        }
        let staging = directory.join(format!("{name}.{extension}{STAGING_SUFFIX}"));
        remove_path(&staging)?;
        fs::create_dir(&staging)?;
        Ok(Reservation {
            staging,
            temporary,
            destination: directory.join(format!("{name}.{extension}")),
            _lock: lock,
        })
    }

    /// Removes the staging directory and, unless the archive was renamed to its final
    /// name, the temporary archive.
    pub fn release(&self) {
        for path in [&self.staging, &self.temporary] {
            if let Err(error) = remove_path(path) {
                tracing::warn!(%error, path = %path.display(), "a dump's file stays behind");
            }
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.release();
    }
}

/// Takes an exclusive, non-blocking `flock` on `file`; false when another holds it.
fn try_lock(file: &File) -> io::Result<bool> {
    // SAFETY: `file` owns an open descriptor for the whole call; `flock` only reads it.
    let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if result == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    if error.kind() == io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(error)
    }
}

/// Removes the temporary `extension` archives (and their staging directories) no process
/// holds.
fn remove_leftovers(directory: &Path, extension: &str) -> io::Result<()> {
    let temporary_suffix = format!(".{extension}{TEMPORARY_SUFFIX}");
    for entry in fs::read_dir(directory)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(stem) = name.strip_suffix(&temporary_suffix) else {
            continue;
        };
        let Ok(file) = File::open(&path) else {
            continue;
        };
        if try_lock(&file)? {
            remove_path(&directory.join(format!("{stem}.{extension}{STAGING_SUFFIX}")))?;
            remove_path(&path)?;
        }
    }
    Ok(())
}

/// Removes the file or directory at `path`; a missing one is no error.
fn remove_path(path: &Path) -> io::Result<()> {
    let outcome = if path.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match outcome {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_held_uid_is_refused_and_leftovers_are_removed() {
        let directory = tempfile::tempdir().unwrap();
        let first = Reservation::take(directory.path(), "20250101-000000000").unwrap();
        assert!(matches!(
            Reservation::take(directory.path(), "20250101-000000000"),
            Err(ReservationError::AlreadyProcessing)
        ));
        // A crash leaves an unlocked temporary archive and staging directory.
        fs::write(directory.path().join("old.dump.tmp"), "half").unwrap();
        fs::create_dir(directory.path().join("old.dump.staging")).unwrap();
        fs::write(directory.path().join("earlier.dump"), "whole").unwrap();
        let second = Reservation::take(directory.path(), "20250101-000000001").unwrap();
        assert!(!directory.path().join("old.dump.tmp").exists());
        assert!(!directory.path().join("old.dump.staging").exists());
        assert!(directory.path().join("earlier.dump").exists());
        assert!(first.temporary.exists(), "a held dump is left alone");
        drop(first);
        drop(second);
        let names: Vec<_> = fs::read_dir(directory.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only the finished dump stays");
    }
}
