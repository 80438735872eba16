//! The `coresearch` binary: reads the configuration, imports a snapshot or a dump when asked
//! to, opens the data directory and runs the server until SIGINT or SIGTERM.

use std::process::ExitCode;

use coresearch::config::Config;

/// The process allocator: a search allocates and frees many small objects per request
/// (occurrence lists, ranking details), where mimalloc's per-thread free lists beat the
/// system allocator's, and each core's executor thread gets its own heap.
///
/// mimalloc 2.x (the crate's `v2` feature), not the 3.3.2 the crate bundles by default:
/// 3.3.0–3.3.2 segfault when used from many threads (microsoft/mimalloc#1287, fixed in
/// 3.4.1, which the crate does not bundle yet). Both lines also crashed in their exit
/// handler while other threads were ending, which [`end_after_cores`] avoids.
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
        match coresearch::server::run_until_idle(&config, data_directory.clone(), logs) {
            Ok(()) => end_after_cores(libc::EXIT_SUCCESS),
            Err(error) => {
                eprintln!("coresearch could not index the dump: {error}");
                end_after_cores(libc::EXIT_FAILURE)
            }
        }
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
            end_after_cores(libc::EXIT_SUCCESS)
        }
        Err(error) => {
            eprintln!("coresearch stopped with an error: {error}");
            end_after_cores(libc::EXIT_FAILURE)
        }
    }
}

/// Ends the process once the cores have stopped, without the C runtime's exit handlers.
///
/// Why: threads the cores leave behind are still ending at this point (each core's
/// indexing thread and glommio's helper threads, which are not joined; a background
/// snapshot or repack may still run), and the allocator's exit handler (mimalloc's
/// `mi_process_done`, which collects the main thread's heap) is not safe against threads
/// that free or tear down their own heaps at the same time: it segfaulted in about 1 stop
/// in 60 under the tests (in `_mi_heap_delayed_free_partial`, core dumps of SIGTERM'd test
/// servers; 2 of 150 runs of `tests/black_box/experimental_features.rs`, 1 of 40 of
/// `tests/black_box/task_queue_compaction.rs`), and other threads were alive at exit in 65 of 80
/// stops. Nothing needs those handlers: every store is durable at each commit (the data
/// survives kill -9), logs and stderr are written unbuffered, and stdout is flushed here.
/// Work cut short on another thread is in the state a crash would leave it in, which a
/// restart recovers.
fn end_after_cores(status: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: `_exit` ends the process at once; no Rust state is used after it, and the
    // only buffered output (stdout) was flushed above.
    unsafe { libc::_exit(status) }
}
