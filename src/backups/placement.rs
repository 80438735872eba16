//! Where an import at start is made and how it takes the place of `--db-path`, for dumps
//! and snapshots alike: whether `--db-path` already holds a database (Meilisearch's test:
//! missing or empty is no database; our lock file alone does not count), the staging folder
//! beside it, and the rename that puts a finished data directory in place.
//!
//! Invariant: `--db-path` is only ever replaced whole, by one rename of a complete data
//! directory (then the parent directory is synced); everything else happens in the staging
//! folder `.<db name><suffix>/` beside it, which the caller removes whatever happens.

use std::fs;
use std::path::{Path, PathBuf};

use crate::data_dir::LOCK_FILE_NAME;

/// The name used for a `--db-path` whose path has none.
const DATABASE_NAME_DEFAULT: &str = "data.ms";

/// Whether `path` holds anything but a lock file.
pub fn holds_a_database(path: &Path) -> Result<bool, String> {
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) if path.is_file() => return Err(format!("{}: {error}", path.display())),
        Err(error) => return Err(format!("could not read {}: {error}", path.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|error| format!("could not read {}: {error}", path.display()))?;
        if entry.file_name() != LOCK_FILE_NAME {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Meilisearch's refusal of an import into an existing database.
pub fn database_exists_message(database: &Path) -> String {
    let path = database
        .canonicalize()
        .unwrap_or_else(|_| database.to_path_buf());
    format!("database already exists at {path:?}, try to delete it or rename it")
}

/// The staging folder of an import into `database`: `.<name><suffix>` beside it.
pub fn staging_folder(database: &Path, suffix: &str) -> PathBuf {
    let name = database
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| DATABASE_NAME_DEFAULT.to_owned());
    let parent = database
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    parent.join(format!(".{name}{suffix}"))
}

/// Renames the finished data directory `data` to `database` (an empty `database` is
/// replaced), then syncs the parent directory.
pub fn move_into_place(data: &Path, database: &Path) -> Result<(), String> {
    let failure = |error: std::io::Error| {
        format!(
            "could not move the data directory into {}: {error}",
            database.display()
        )
    };
    if database.is_dir() {
        // Empty but for a lock file left by an earlier start.
        let lock = database.join(LOCK_FILE_NAME);
        if lock.exists() {
            fs::remove_file(&lock).map_err(failure)?;
        }
        fs::remove_dir(database).map_err(failure)?;
    }
    fs::rename(data, database).map_err(failure)?;
    let parent = database
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::File::open(parent)
        .and_then(|directory| directory.sync_all())
        .map_err(failure)
}

/// Removes `folder` and everything in it; a missing folder is no error.
pub fn remove_folder(folder: &Path) -> Result<(), String> {
    match fs::remove_dir_all(folder) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("could not remove {}: {error}", folder.display()))
        }
        _ => Ok(()),
    }
}
