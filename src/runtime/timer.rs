//! The runtime's clock for the layers above it: an [`http::Timer`](crate::http::Timer)
//! backed by glommio's timers.

use std::time::Duration;

/// Sleeps on the current core's timer wheel.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuntimeTimer;

impl crate::http::Timer for RuntimeTimer {
    fn now(&self) -> std::time::Instant {
        std::time::Instant::now()
    }

    fn sleep(&self, duration: Duration) -> impl std::future::Future<Output = ()> {
        glommio::timer::sleep(duration)
    }
}
