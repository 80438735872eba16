//! Process shutdown: SIGINT and SIGTERM set one flag; every core watches it.
//!
//! The flag is an atomic every core reads (ARCHITECTURE.md §3). Each core polls it every
//! [`SHUTDOWN_POLL_INTERVAL`], so a signal is noticed by every core within that interval,
//! without any cross-thread wake-up machinery on the hot path.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a core looks at the shutdown flag.
pub const SHUTDOWN_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The process-wide "please stop" flag.
#[derive(Debug, Clone, Default)]
pub struct ShutdownFlag(Arc<AtomicBool>);

impl ShutdownFlag {
    /// A flag raised by SIGINT and SIGTERM.
    pub fn from_signals() -> std::io::Result<ShutdownFlag> {
        let flag = ShutdownFlag::default();
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(signal, flag.0.clone())?;
        }
        Ok(flag)
    }

    /// Whether shutdown was requested.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Requests shutdown (used when a core fails to start, and by tests).
    pub fn raise(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Resolves once shutdown was requested.
    pub async fn raised(&self) {
        while !self.is_raised() {
            glommio::timer::sleep(SHUTDOWN_POLL_INTERVAL).await;
        }
    }
}
