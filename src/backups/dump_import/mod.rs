//! `--import-dump` at start: a data directory made from a dump written by coresearch or by
//! Meilisearch 1.x (dump format V6), before the server opens it.
//!
//! The decision is Meilisearch's: with no database at `--db-path` (missing, or empty) and
//! the dump present, import it; a database already there is an error ("database already
//! exists at …") unless `--ignore-dump-if-db-exists`, a missing dump an error ("dump doesn't
//! exist at …") unless `--ignore-missing-dump`; in those two cases the server starts on what
//! is there.
//!
//! How: everything happens in a staging folder beside the data directory,
//! `.<name>.importing-dump/`: the dump is unpacked into `dump/` and read whole
//! ([`contents`]), a new data directory is made in `data/`, the indexes are indexed there
//! through the normal write path by a child process ([`indexes`],
//! [`crate::server::run_until_idle`]: the cores of a run keep their files open until their
//! process ends, and the server opens the imported files again), the
//! dump's history and control state are written ([`history`]), and only then is `data/`
//! renamed to `--db-path`. A corrupt, truncated or foreign dump, or an index that cannot be
//! imported, stops the start with a message and removes the staging folder; a crash leaves
//! only the staging folder, which the next import removes: never a half-imported data
//! directory at `--db-path`.

pub mod contents;
pub mod history;
pub mod indexes;

use std::fs;
use std::path::Path;

use super::placement::{
    database_exists_message, holds_a_database, move_into_place, remove_folder, staging_folder,
};
use crate::config::Config;
use crate::data_dir::DataDirectory;
use crate::tasks::dump::archive::unpack_archive;
use crate::tasks::queue::TaskQueue;
use crate::tasks::update_files::UpdateFiles;

/// The suffix of the staging folder of an import.
const STAGING_SUFFIX: &str = ".importing-dump";

/// Imports `--import-dump` into `--db-path` when Meilisearch would, or refuses to start as
/// it would (see the module documentation); does nothing without `--import-dump`.
pub fn import_at_start(config: &Config) -> Result<(), String> {
    let Some(dump) = &config.import_dump else {
        return Ok(());
    };
    let database_exists = holds_a_database(&config.db_path)?;
    let dump_exists = dump.exists();
    if !database_exists && dump_exists {
        import(config, dump)
    } else if database_exists && !config.ignore_dump_if_db_exists {
        Err(database_exists_message(&config.db_path))
    } else if !dump_exists && !config.ignore_missing_dump {
        Err(format!("dump doesn't exist at {dump:?}"))
    } else {
        Ok(())
    }
}

/// Imports `dump` into a staging folder, then renames the new data directory to
/// `--db-path`; the staging folder is removed whatever happens.
fn import(config: &Config, dump: &Path) -> Result<(), String> {
    let staging = staging_folder(&config.db_path, STAGING_SUFFIX);
    remove_folder(&staging)?;
    tracing::info!(dump = %dump.display(), "importing a dump");
    let outcome = import_in(config, dump, &staging);
    let removal = remove_folder(&staging);
    outcome.map_err(|message| format!("could not import the dump {dump:?}: {message}"))?;
    removal?;
    tracing::info!(dump = %dump.display(), "dump imported");
    Ok(())
}

fn import_in(config: &Config, dump: &Path, staging: &Path) -> Result<(), String> {
    let unpacked = staging.join("dump");
    fs::create_dir_all(&unpacked)
        .map_err(|error| format!("could not create {}: {error}", unpacked.display()))?;
    unpack_archive(dump, &unpacked).map_err(|message| format!("the file {message}"))?;
    let root_prefix = format!("{}/", unpacked.display());
    let mut contents =
        contents::read_contents(&unpacked).map_err(|message| message.replace(&root_prefix, ""))?;
    tracing::info!(
        version = %contents.metadata.db_version,
        date = %contents.metadata.dump_date,
        indexes = contents.indexes.len(),
        "the dump is read"
    );
    let data = staging.join("data");
    let directory = DataDirectory::open(&data).map_err(|error| error.to_string())?;
    let queue_path = data.join(crate::server::TASK_QUEUE_FILE_NAME);
    let registered = {
        let queue = open_queue(&queue_path)?;
        let update_files =
            UpdateFiles::open(&data).map_err(|error| format!("update files: {error}"))?;
        indexes::register_indexes(&queue, &update_files, &contents.indexes)?
    };
    index_in_child(&data)?;
    {
        let queue = open_queue(&queue_path)?;
        if queue
            .has_unfinished_tasks()
            .map_err(|error| error.to_string())?
        {
            return Err("the import was interrupted".to_owned());
        }
        indexes::check_imported(&queue, &registered)?;
        history::write_history(&data, &queue, &mut contents)?;
    }
    history::write_control_state(&data, &contents)?;
    drop(directory);
    move_into_place(&data, &config.db_path)
}

/// Runs this program again as the child that indexes the registered tasks in `data` (see
/// [`crate::config::DUMP_IMPORT_CHILD_VARIABLE`]) and waits for it.
fn index_in_child(data: &Path) -> Result<(), String> {
    let status = Config::dump_import_child_command(data)
        .and_then(|mut command| command.status())
        .map_err(|error| format!("could not start the indexing of the dump: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the indexing of the dump stopped ({status})"))
    }
}

fn open_queue(path: &Path) -> Result<TaskQueue, String> {
    TaskQueue::open(path, storage_engine::Options::default())
        .map_err(|error| format!("could not open the task queue: {error}"))
}
