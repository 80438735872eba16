//! `--import-snapshot` at start: the data directory a coresearch snapshot holds
//! (`crate::tasks::snapshot::archive` says what that is), put at `--db-path` before the
//! server opens it. Everything comes back as it was when the snapshot was taken: indexes
//! with their documents, settings and vectors, the tasks and batches (those enqueued then
//! run once the server starts), keys, experimental features, network, webhooks, dynamic
//! search rules and chat workspaces.
//!
//! The decision is Meilisearch's: with no database at `--db-path` (missing, or empty) and
//! the snapshot present, import it; a database already there is an error ("database already
//! exists at …") unless `--ignore-snapshot-if-db-exists`, a missing snapshot an error
//! ("snapshot doesn't exist at …") unless `--ignore-missing-snapshot`; in those two cases
//! the server starts on what is there.
//!
//! How: the snapshot is unpacked and verified whole (every file against its manifest, the
//! compressed stream to its checksum) into a staging folder beside the data directory,
//! `.<name>.importing-snapshot/`; the data directory it holds must be one this binary opens;
//! only then is it renamed to `--db-path`. A corrupt, truncated or foreign snapshot stops the
//! start with a message and removes the staging folder; a crash leaves only the staging
//! folder, which the next import removes: never a half-imported data directory.

use std::path::Path;

use super::placement::{
    database_exists_message, holds_a_database, move_into_place, remove_folder, staging_folder,
};
use crate::config::Config;
use crate::data_dir::DataDirectory;
use crate::tasks::snapshot::archive::{data_folder, unpack_archive};

/// The suffix of the staging folder of an import.
const STAGING_SUFFIX: &str = ".importing-snapshot";

/// Imports `--import-snapshot` into `--db-path` when Meilisearch would, or refuses to start
/// as it would (see the module documentation); does nothing without `--import-snapshot`.
pub fn import_at_start(config: &Config) -> Result<(), String> {
    let Some(snapshot) = &config.import_snapshot else {
        return Ok(());
    };
    let database_exists = holds_a_database(&config.db_path)?;
    let snapshot_exists = snapshot.exists();
    if !database_exists && snapshot_exists {
        import(snapshot, &config.db_path)
    } else if database_exists && !config.ignore_snapshot_if_db_exists {
        Err(database_exists_message(&config.db_path))
    } else if !snapshot_exists && !config.ignore_missing_snapshot {
        Err(format!("snapshot doesn't exist at {}", snapshot.display()))
    } else {
        Ok(())
    }
}

/// Unpacks `snapshot` into a staging folder, then renames its data directory to `database`;
/// the staging folder is removed whatever happens.
fn import(snapshot: &Path, database: &Path) -> Result<(), String> {
    let staging = staging_folder(database, STAGING_SUFFIX);
    remove_folder(&staging)?;
    tracing::info!(snapshot = %snapshot.display(), "importing a snapshot");
    let outcome = import_in(snapshot, &staging, database);
    let removal = remove_folder(&staging);
    outcome.map_err(|message| format!("could not import the snapshot {snapshot:?}: {message}"))?;
    removal?;
    tracing::info!(snapshot = %snapshot.display(), "snapshot imported");
    Ok(())
}

fn import_in(snapshot: &Path, staging: &Path, database: &Path) -> Result<(), String> {
    std::fs::create_dir_all(staging)
        .map_err(|error| format!("could not create {}: {error}", staging.display()))?;
    let header =
        unpack_archive(snapshot, staging).map_err(|message| format!("the file {message}"))?;
    tracing::info!(
        written_by = %header.created_by,
        taken_at = %header.created_at,
        "the snapshot is read"
    );
    let data = data_folder(staging);
    if !data.is_dir() {
        return Err("the snapshot holds no data directory".to_owned());
    }
    // Refuses a data directory this binary cannot open, before it takes `--db-path`.
    let root_prefix = format!("{}/", staging.display());
    let opened = DataDirectory::open(&data).map_err(|error| {
        format!(
            "its data directory: {}",
            error.to_string().replace(&root_prefix, "")
        )
    })?;
    drop(opened);
    move_into_place(&data, database)
}
