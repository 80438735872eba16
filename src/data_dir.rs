//! The data directory (`--db-path`): what may be opened, how it is marked as ours, and the
//! lock that keeps two servers out of one directory.
//!
//! Invariants:
//! - a directory is opened only when it is missing, empty, or carries our format marker
//!   with a format version this binary reads; anything else (a Meilisearch database, a newer
//!   coresearch format, unknown files) is refused with a message that says what was found
//!   and what to do, and is left exactly as it was;
//! - the format marker is written atomically (temporary file, fsync, rename, fsync of the
//!   directory), so a crash leaves either no marker or a whole one;
//! - while a [`DataDirectory`] lives, it holds an exclusive `flock` on the lock file, so a
//!   second server (or a second open in this process) on the same directory is refused.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file that marks a directory as a coresearch data directory.
pub const FORMAT_FILE_NAME: &str = "coresearch-format";
/// The file a running server holds an exclusive lock on.
pub const LOCK_FILE_NAME: &str = "coresearch.lock";
/// The file that keeps the instance uid an imported dump brought (written back into dumps).
pub const INSTANCE_UID_FILE_NAME: &str = "instance-uid.uuid";
/// The on-disk format this binary writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The oldest on-disk format this binary reads.
pub const FORMAT_VERSION_OLDEST_READABLE: u32 = 1;
/// The name written in every format marker.
const FORMAT_NAME: &str = "coresearch";
/// Suffix of the temporary file an atomic write goes through.
const TEMPORARY_SUFFIX: &str = ".tmp";
/// A format marker larger than this is not ours.
const FORMAT_FILE_BYTES_MAX: u64 = 4096;
/// How many unknown entries an error message names before summarising.
const ENTRIES_NAMED_MAX: usize = 5;
/// What a Meilisearch database directory holds (`VERSION` and these), per Meilisearch's
/// `lib.rs` and `versioning.rs`.
const MEILISEARCH_VERSION_FILE_NAME: &str = "VERSION";
const MEILISEARCH_ENTRIES: [&str; 6] = [
    "tasks",
    "auth",
    "indexes",
    "update_files",
    "instance-uid",
    "data.mdb",
];

/// The content of the format marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatMarker {
    /// Always `coresearch`.
    pub name: String,
    /// The on-disk format version.
    pub format_version: u32,
    /// The coresearch version that created the directory.
    pub created_by: String,
}

impl FormatMarker {
    /// The marker this binary writes.
    pub fn current() -> FormatMarker {
        FormatMarker {
            name: FORMAT_NAME.to_owned(),
            format_version: FORMAT_VERSION,
            created_by: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// Why a data directory could not be opened.
#[derive(Debug)]
pub enum DataDirectoryError {
    /// The path exists and is not a directory.
    NotADirectory { path: PathBuf },
    /// A file-system operation failed.
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },
    /// The directory holds a Meilisearch database.
    MeilisearchDatabase {
        path: PathBuf,
        version: Option<String>,
        found: Vec<String>,
    },
    /// The directory was written by a coresearch whose format this binary cannot read.
    UnsupportedFormat { path: PathBuf, marker: FormatMarker },
    /// The format marker exists but is not one we wrote.
    FormatMarkerInvalid { path: PathBuf, reason: String },
    /// The directory holds files that are neither ours nor Meilisearch's.
    UnknownContent { path: PathBuf, entries: Vec<String> },
    /// Another server holds the lock.
    Locked {
        lock_path: PathBuf,
        holder: Option<String>,
    },
}

impl std::fmt::Display for DataDirectoryError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataDirectoryError::NotADirectory { path } => write!(
                formatter,
                "the data directory {path:?} exists but is not a directory; give --db-path a \
                 directory (it is created when missing)"
            ),
            DataDirectoryError::Io {
                path,
                action,
                source,
            } => {
                write!(formatter, "could not {action} {path:?}: {source}")
            }
            DataDirectoryError::MeilisearchDatabase {
                path,
                version,
                found,
            } => {
                let version = version
                    .as_deref()
                    .map(|v| format!(" v{v}"))
                    .unwrap_or_default();
                write!(
                    formatter,
                    "the data directory {path:?} holds a Meilisearch{version} database (found {}). \
                     coresearch cannot open Meilisearch's files and left them untouched. Start \
                     coresearch with --db-path pointing to a new or empty directory, then move \
                     the data over through the API (re-send the documents and settings, or \
                     export them from Meilisearch with POST /export).",
                    name_entries(found)
                )
            }
            DataDirectoryError::UnsupportedFormat { path, marker } => write!(
                formatter,
                "the data directory {path:?} was created by coresearch {} with data format {}, \
                 and this coresearch {} reads formats {FORMAT_VERSION_OLDEST_READABLE} to \
                 {FORMAT_VERSION}. Nothing was changed; run a coresearch version that reads \
                 format {}, or use another --db-path.",
                marker.created_by,
                marker.format_version,
                env!("CARGO_PKG_VERSION"),
                marker.format_version
            ),
            DataDirectoryError::FormatMarkerInvalid { path, reason } => write!(
                formatter,
                "the format marker {path:?} is damaged or not coresearch's ({reason}); nothing \
                 was changed. Restore it from a backup, or use another --db-path."
            ),
            DataDirectoryError::UnknownContent { path, entries } => write!(
                formatter,
                "the data directory {path:?} is not empty and is not a coresearch data directory \
                 (found {}); nothing was changed. Give --db-path a new or empty directory.",
                name_entries(entries)
            ),
            DataDirectoryError::Locked { lock_path, holder } => {
                let holder = holder
                    .as_deref()
                    .map(|pid| format!(" (process {pid})"))
                    .unwrap_or_default();
                write!(
                    formatter,
                    "another coresearch server{holder} is using this data directory: the lock \
                     {lock_path:?} is held. Stop that server, or give this one another --db-path."
                )
            }
        }
    }
}

impl std::error::Error for DataDirectoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DataDirectoryError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// "`a`, `b` and 3 more" for an error message.
fn name_entries(entries: &[String]) -> String {
    let named: Vec<String> = entries
        .iter()
        .take(ENTRIES_NAMED_MAX)
        .map(|entry| format!("`{entry}`"))
        .collect();
    let rest = entries.len().saturating_sub(ENTRIES_NAMED_MAX);
    if rest == 0 {
        named.join(", ")
    } else {
        format!("{} and {rest} more", named.join(", "))
    }
}

fn io_error(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> DataDirectoryError {
    let path = path.to_path_buf();
    move |source| DataDirectoryError::Io {
        path,
        action,
        source,
    }
}

/// An open, locked data directory. The lock is released when it is dropped.
#[derive(Debug)]
pub struct DataDirectory {
    path: PathBuf,
    marker: FormatMarker,
    created: bool,
    /// Holds the exclusive `flock`; closing the file releases it.
    _lock_file: File,
}

impl DataDirectory {
    /// Opens the data directory at `path`, creating and initializing it when it is missing
    /// or empty, and locks it. See the module documentation for what is refused.
    pub fn open(path: &Path) -> Result<DataDirectory, DataDirectoryError> {
        ensure_directory(path)?;
        // Classify before touching anything, so a refused directory is never modified.
        classify(path)?;
        let lock_file = lock(path)?;
        // Classify again under the lock: another process may have initialized it meanwhile.
        let (marker, created) = match classify(path)? {
            Contents::Ours(marker) => (marker, false),
            Contents::Empty => {
                let marker = FormatMarker::current();
                write_marker(path, &marker)?;
                (marker, true)
            }
        };
        Ok(DataDirectory {
            path: path.to_path_buf(),
            marker,
            created,
            _lock_file: lock_file,
        })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format marker found or written.
    pub fn marker(&self) -> &FormatMarker {
        &self.marker
    }

    /// Whether this open initialized the directory (it was missing or empty).
    pub fn was_created(&self) -> bool {
        self.created
    }
}

/// What an openable directory holds.
enum Contents {
    Empty,
    Ours(FormatMarker),
}

fn ensure_directory(path: &Path) -> Result<(), DataDirectoryError> {
    match fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(DataDirectoryError::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(path).map_err(io_error(path, "create the data directory"))?;
            if let Some(parent) = path
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
            {
                sync_directory(parent)?;
            }
            Ok(())
        }
        Err(error) => Err(io_error(path, "read the data directory")(error)),
    }
}

/// The directory's entries, without the lock file and a leftover temporary marker.
fn entries(path: &Path) -> Result<Vec<String>, DataDirectoryError> {
    let temporary_marker = format!("{FORMAT_FILE_NAME}{TEMPORARY_SUFFIX}");
    let mut names = Vec::new();
    for entry in fs::read_dir(path).map_err(io_error(path, "list the data directory"))? {
        let entry = entry.map_err(io_error(path, "list the data directory"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != LOCK_FILE_NAME && name != temporary_marker {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

fn classify(path: &Path) -> Result<Contents, DataDirectoryError> {
    let names = entries(path)?;
    let is_meilisearch = names.iter().any(|name| {
        name == MEILISEARCH_VERSION_FILE_NAME || MEILISEARCH_ENTRIES.contains(&name.as_str())
    });
    if names.iter().any(|name| name == FORMAT_FILE_NAME) {
        let marker = read_marker(path)?;
        if !(FORMAT_VERSION_OLDEST_READABLE..=FORMAT_VERSION).contains(&marker.format_version) {
            return Err(DataDirectoryError::UnsupportedFormat {
                path: path.to_path_buf(),
                marker,
            });
        }
        return Ok(Contents::Ours(marker));
    }
    if is_meilisearch {
        return Err(DataDirectoryError::MeilisearchDatabase {
            path: path.to_path_buf(),
            version: meilisearch_version(path),
            found: names,
        });
    }
    if names.is_empty() {
        Ok(Contents::Empty)
    } else {
        Err(DataDirectoryError::UnknownContent {
            path: path.to_path_buf(),
            entries: names,
        })
    }
}

/// The version in a Meilisearch `VERSION` file, when it is short, readable text.
fn meilisearch_version(path: &Path) -> Option<String> {
    let mut text = String::new();
    File::open(path.join(MEILISEARCH_VERSION_FILE_NAME))
        .ok()?
        .take(FORMAT_FILE_BYTES_MAX)
        .read_to_string(&mut text)
        .ok()?;
    let version = text.trim();
    (!version.is_empty() && version.len() < 64).then(|| version.to_owned())
}

fn read_marker(directory: &Path) -> Result<FormatMarker, DataDirectoryError> {
    let path = directory.join(FORMAT_FILE_NAME);
    let invalid = |reason: String| DataDirectoryError::FormatMarkerInvalid {
        path: path.clone(),
        reason,
    };
    let file = File::open(&path).map_err(io_error(&path, "open the format marker"))?;
    let mut text = String::new();
    let read = file
        .take(FORMAT_FILE_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .map_err(|error| invalid(format!("unreadable: {error}")))?;
    if u64::try_from(read).map_or(true, |read| read > FORMAT_FILE_BYTES_MAX) {
        return Err(invalid(format!(
            "larger than {FORMAT_FILE_BYTES_MAX} bytes"
        )));
    }
    let marker: FormatMarker =
        toml::from_str(&text).map_err(|error| invalid(error.message().to_owned()))?;
    if marker.name != FORMAT_NAME {
        return Err(invalid(format!(
            "its name is `{}`, not `{FORMAT_NAME}`",
            marker.name
        )));
    }
    Ok(marker)
}

fn write_marker(directory: &Path, marker: &FormatMarker) -> Result<(), DataDirectoryError> {
    let text = toml::to_string(marker).map_err(|error| DataDirectoryError::Io {
        path: directory.join(FORMAT_FILE_NAME),
        action: "encode the format marker",
        source: io::Error::other(error),
    })?;
    write_atomically(&directory.join(FORMAT_FILE_NAME), text.as_bytes())
}

/// Replaces the file at `path` with `bytes` so that a crash leaves the old content or the new
/// one, never a mix: writes `<path>.tmp`, syncs it, renames it over `path`, syncs the
/// directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), DataDirectoryError> {
    let mut temporary_name = path.as_os_str().to_owned();
    temporary_name.push(TEMPORARY_SUFFIX);
    let temporary = PathBuf::from(temporary_name);
    let mut file = File::create(&temporary).map_err(io_error(&temporary, "create"))?;
    file.write_all(bytes)
        .map_err(io_error(&temporary, "write"))?;
    file.sync_all().map_err(io_error(&temporary, "sync"))?;
    drop(file);
    fs::rename(&temporary, path).map_err(io_error(path, "rename a temporary file to"))?;
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty());
    sync_directory(directory.unwrap_or(Path::new(".")))
}

fn sync_directory(path: &Path) -> Result<(), DataDirectoryError> {
    File::open(path)
        .and_then(|directory| directory.sync_all())
        .map_err(io_error(path, "sync the directory"))
}

/// Opens the lock file and takes an exclusive, non-blocking `flock` on it, then records our
/// process id in it for the error message of the next one to try.
fn lock(directory: &Path) -> Result<File, DataDirectoryError> {
    let lock_path = directory.join(LOCK_FILE_NAME);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(io_error(&lock_path, "open the lock file"))?;
    // SAFETY: `file` owns an open descriptor for the whole call; `flock` only reads it.
    let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if result != 0 {
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::WouldBlock {
            let mut holder = String::new();
            let holder = file
                .read_to_string(&mut holder)
                .ok()
                .map(|_| holder.trim().to_owned())
                .filter(|pid| !pid.is_empty() && pid.len() < 32);
            return Err(DataDirectoryError::Locked { lock_path, holder });
        }
        return Err(io_error(&lock_path, "lock")(error));
    }
    file.set_len(0)
        .map_err(io_error(&lock_path, "truncate the lock file"))?;
    file.write_all(format!("{}\n", std::process::id()).as_bytes())
        .map_err(io_error(&lock_path, "write the lock file"))?;
    Ok(file)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every path under `root` with its content (`None` for directories), sorted.
    fn snapshot(root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut found = Vec::new();
        let mut pending = vec![root.to_path_buf()];
        while let Some(directory) = pending.pop() {
            for entry in fs::read_dir(&directory).expect("read_dir succeeds") {
                let path = entry.expect("the value is present").path();
                if path.is_dir() {
                    found.push((path.clone(), None));
                    pending.push(path);
                } else {
                    found.push((path.clone(), Some(fs::read(&path).expect("read succeeds"))));
                }
            }
        }
        found.sort();
        found
    }

    fn open_error(path: &Path) -> DataDirectoryError {
        match DataDirectory::open(path) {
            Ok(_) => panic!("{path:?} should have been refused"),
            Err(error) => error,
        }
    }

    #[test]
    fn missing_directory_is_created_and_marked() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        let path = root.path().join("nested").join("data.ms");
        let directory = DataDirectory::open(&path).expect("open succeeds");
        assert!(directory.was_created());
        assert_eq!(directory.marker(), &FormatMarker::current());
        assert_eq!(
            read_marker(&path).expect("read_marker succeeds"),
            FormatMarker::current()
        );
        assert!(
            !path
                .join(format!("{FORMAT_FILE_NAME}{TEMPORARY_SUFFIX}"))
                .exists()
        );
    }

    #[test]
    fn empty_directory_is_initialized_and_reopened_as_ours() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        let first = DataDirectory::open(root.path()).expect("open succeeds");
        assert!(first.was_created());
        drop(first);
        fs::create_dir(root.path().join("shards")).expect("create_dir succeeds");
        let second = DataDirectory::open(root.path()).expect("open succeeds");
        assert!(!second.was_created());
        assert_eq!(second.marker().format_version, FORMAT_VERSION);
        assert_eq!(second.path(), root.path());
    }

    #[test]
    fn meilisearch_database_is_refused_and_left_untouched() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        fs::write(root.path().join("VERSION"), "1.41.0").expect("write succeeds");
        fs::write(root.path().join("instance-uid"), "0d5e0a8c").expect("write succeeds");
        fs::create_dir(root.path().join("tasks")).expect("create_dir succeeds");
        fs::write(root.path().join("tasks").join("data.mdb"), [1, 2, 3]).expect("write succeeds");
        fs::create_dir(root.path().join("auth")).expect("create_dir succeeds");
        let before = snapshot(root.path());
        let error = open_error(root.path());
        assert!(
            matches!(error, DataDirectoryError::MeilisearchDatabase { .. }),
            "{error}"
        );
        let message = error.to_string();
        assert!(
            message.contains("Meilisearch v1.41.0 database"),
            "{message}"
        );
        assert!(
            message.contains("`VERSION`") && message.contains("`tasks`"),
            "{message}"
        );
        assert!(message.contains("--db-path"), "{message}");
        assert_eq!(snapshot(root.path()), before, "nothing may change");
    }

    #[test]
    fn meilisearch_database_without_version_file_is_refused() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        fs::create_dir(root.path().join("indexes")).expect("create_dir succeeds");
        let before = snapshot(root.path());
        let error = open_error(root.path());
        assert!(matches!(
            error,
            DataDirectoryError::MeilisearchDatabase { version: None, .. }
        ));
        assert_eq!(snapshot(root.path()), before);
    }

    #[test]
    fn newer_format_is_refused_and_left_untouched() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        let newer = FormatMarker {
            name: FORMAT_NAME.to_owned(),
            format_version: FORMAT_VERSION + 1,
            created_by: "9.0.0".to_owned(),
        };
        fs::write(
            root.path().join(FORMAT_FILE_NAME),
            toml::to_string(&newer).expect("to_string succeeds"),
        )
        .expect("the value is present");
        let before = snapshot(root.path());
        let error = open_error(root.path());
        assert!(
            matches!(error, DataDirectoryError::UnsupportedFormat { .. }),
            "{error}"
        );
        let message = error.to_string();
        assert!(
            message.contains("coresearch 9.0.0") && message.contains("format 2"),
            "{message}"
        );
        assert_eq!(snapshot(root.path()), before);
    }

    #[test]
    fn damaged_format_marker_is_refused() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        let cases = [
            "not toml at all {".to_owned(),
            "name = \"other\"\nformat_version = 1\ncreated_by = \"1\"\n".to_owned(),
            "name = \"coresearch\"\n".to_owned(),
            format!(
                "name = \"coresearch\"\nformat_version = 1\ncreated_by = \"{}\"\n",
                "x".repeat(5000)
            ),
        ];
        for text in cases {
            fs::write(root.path().join(FORMAT_FILE_NAME), &text).expect("write succeeds");
            let before = snapshot(root.path());
            let error = open_error(root.path());
            assert!(
                matches!(error, DataDirectoryError::FormatMarkerInvalid { .. }),
                "{error}"
            );
            assert_eq!(snapshot(root.path()), before);
        }
    }

    #[test]
    fn unknown_content_is_refused_and_left_untouched() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        for index in 0..7 {
            fs::write(root.path().join(format!("notes-{index}.txt")), "mine")
                .expect("write succeeds");
        }
        let before = snapshot(root.path());
        let error = open_error(root.path());
        assert!(
            matches!(error, DataDirectoryError::UnknownContent { .. }),
            "{error}"
        );
        assert!(
            error.to_string().contains("`notes-0.txt`") && error.to_string().contains("and 2 more")
        );
        assert_eq!(snapshot(root.path()), before);
    }

    #[test]
    fn a_file_is_not_a_data_directory() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        let path = root.path().join("file");
        fs::write(&path, "x").expect("write succeeds");
        assert!(matches!(
            open_error(&path),
            DataDirectoryError::NotADirectory { .. }
        ));
    }

    #[test]
    fn second_open_is_refused_while_the_first_holds_the_lock() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        let first = DataDirectory::open(root.path()).expect("open succeeds");
        let error = open_error(root.path());
        let message = error.to_string();
        assert!(
            matches!(error, DataDirectoryError::Locked { .. }),
            "{message}"
        );
        assert!(message.contains(LOCK_FILE_NAME), "{message}");
        assert!(
            message.contains(&std::process::id().to_string()),
            "{message}"
        );
        drop(first);
        let reopened = DataDirectory::open(root.path()).expect("open succeeds");
        assert!(!reopened.was_created());
    }

    #[test]
    fn leftovers_of_a_crashed_initialization_are_ignored() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        fs::write(root.path().join(LOCK_FILE_NAME), "12345\n").expect("write succeeds");
        fs::write(
            root.path()
                .join(format!("{FORMAT_FILE_NAME}{TEMPORARY_SUFFIX}")),
            "name = ",
        )
        .expect("the value is present");
        let directory = DataDirectory::open(root.path()).expect("open succeeds");
        assert!(directory.was_created());
        assert_eq!(
            read_marker(root.path()).expect("read_marker succeeds"),
            FormatMarker::current()
        );
    }

    #[test]
    fn atomic_write_replaces_the_whole_file() {
        let root = tempfile::tempdir().expect("tempdir succeeds");
        let path = root.path().join("file");
        write_atomically(&path, b"first version, longer").expect("write_atomically succeeds");
        write_atomically(&path, b"second").expect("write_atomically succeeds");
        assert_eq!(fs::read(&path).expect("read succeeds"), b"second");
        assert_eq!(snapshot(root.path()).len(), 1, "no temporary file is left");
    }
}
