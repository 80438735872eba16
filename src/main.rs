//! The `coresearch` binary: reads the configuration, imports a snapshot or a dump when asked
//! to, opens the data directory and runs the server until SIGINT or SIGTERM.

use std::process::ExitCode;

use coresearch::config::Config;

/// The process allocator: a search allocates and frees many small objects per request
/// (occurrence lists, ranking details), where mimalloc's per-thread free lists beat the
/// system allocator's, and each core's executor thread gets its own heap.
///
/// mimalloc 2.x (the crate's `v2` feature), not 3.x: 3.3.2 segfaulted at process exit in
/// about 1 stop in 75 (`mi_process_done` collecting the main thread's pages; core dump of a
/// SIGTERM'd test server, 2 of 150 runs of `tests/experimental_features.rs`), and 0 of 300
/// with 2.3.2.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let huge_pages = coresearch::runtime::huge_pages::disable_transparent_huge_pages();
    let config = match Config::from_args_and_env() {
        Ok(config) => config,
        Err(error) => error.exit(),
    };
    let logs = match coresearch::logs::init(&config) {
        Ok(logs) => logs,
        Err(error) => {
            eprintln!("coresearch cannot set up its logs: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(error) = huge_pages {
        tracing::warn!(%error, "transparent huge pages stay on for this process");
    }
    if let Some(data_directory) = &config.dump_import_child {
        // The child a dump import started: index what it registered, then stop.
        return match coresearch::server::run_until_idle(&config, data_directory.clone(), logs) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("coresearch could not index the dump: {error}");
                ExitCode::FAILURE
            }
        };
    }
    if let Err(error) = coresearch::backups::snapshot_import::import_at_start(&config) {
        eprintln!("coresearch cannot start: {error}");
        return ExitCode::FAILURE;
    }
    if let Err(error) = coresearch::backups::dump_import::import_at_start(&config) {
        eprintln!("coresearch cannot start: {error}");
        return ExitCode::FAILURE;
    }
    let data_directory = match coresearch::data_dir::DataDirectory::open(&config.db_path) {
        Ok(data_directory) => data_directory,
        Err(error) => {
            eprintln!(
                "coresearch cannot use {}: {error}",
                config.db_path.display()
            );
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "{}",
        coresearch::banner::launch_summary(&config, data_directory.path())
    );
    if let Some(warning) = config.master_key_warning() {
        eprintln!("{warning}");
    }
    match coresearch::server::run(&config, data_directory.path().to_path_buf(), logs) {
        Ok(()) => {
            tracing::info!("coresearch stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("coresearch stopped with an error: {error}");
            ExitCode::FAILURE
        }
    }
}
