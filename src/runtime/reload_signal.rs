//! SIGHUP: the request to reload the configuration. Without this module SIGHUP's default
//! action ends the process; once [`on_reload_signal`] ran, it never does.
//!
//! The signal is received by one plain thread outside the cores (`signal-hook`'s iterator:
//! the handler only writes to a pipe, the thread reads it), which runs the reload itself.
//! No core blocks on the files a reload reads, and no core polls for the signal.
//!
//! Invariants:
//! - the handler is installed before [`on_reload_signal`] returns, so a SIGHUP sent once
//!   the server answers is never the default one;
//! - reloads run one at a time, in the order the signals came; SIGHUPs that arrive while a
//!   reload runs are merged into one more reload after it; every reload the thread runs is
//!   counted once in [`ReloadRequests`], as succeeded or failed;
//! - the thread runs until the process ends; the process exits without joining it.

use std::sync::atomic::{AtomicU64, Ordering};

use signal_hook::consts::SIGHUP;
use signal_hook::iterator::Signals;

/// The name of the thread that waits for SIGHUP and reloads.
pub const RELOAD_THREAD_NAME: &str = "reload";

/// How many reloads were asked for, and how they ended; read by `GET /metrics`.
#[derive(Debug)]
pub struct ReloadRequests {
    succeeded: AtomicU64,
    failed: AtomicU64,
}

impl ReloadRequests {
    /// The reloads that applied everything they read.
    pub fn succeeded(&self) -> u64 {
        self.succeeded.load(Ordering::Relaxed)
    }

    /// The reloads that kept something as it was because what they read was refused.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
}

/// The process's reload counters.
static REQUESTS: ReloadRequests = ReloadRequests {
    succeeded: AtomicU64::new(0),
    failed: AtomicU64::new(0),
};

/// The process's reload counters: zero until the first SIGHUP.
pub fn reload_requests() -> &'static ReloadRequests {
    &REQUESTS
}

/// Makes SIGHUP call `reload` on the reload thread, each time, from now on; `reload`
/// answers whether everything it read was applied.
pub fn on_reload_signal<F>(mut reload: F) -> std::io::Result<()>
where
    F: FnMut() -> bool + Send + 'static,
{
    let mut signals = Signals::new([SIGHUP])?;
    std::thread::Builder::new()
        .name(RELOAD_THREAD_NAME.to_owned())
        .spawn(move || {
            for _ in signals.forever() {
                let outcome = if reload() {
                    &REQUESTS.succeeded
                } else {
                    &REQUESTS.failed
                };
                outcome.fetch_add(1, Ordering::Relaxed);
            }
        })
        .map(drop)
}
