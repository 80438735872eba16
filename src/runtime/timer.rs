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

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    use glommio::{LocalExecutorBuilder, Placement};

    use super::RuntimeTimer;
    use crate::http::{
        CloseReason, Handler, HttpLimits, NoSink, Request, RequestHead, Response, ShutdownSignal,
        serve_connection,
    };

    struct Healthy;

    impl Handler for Healthy {
        type Sink = NoSink;

        fn body_sink(&self, _head: RequestHead<'_>) -> Option<NoSink> {
            None
        }

        async fn handle(&self, _request: Request) -> Response {
            Response::json(200, "{}")
        }
    }

    const IDLE_TIMEOUT: Duration = Duration::from_millis(300);
    const REQUESTS: usize = 6;
    /// Longer than the idle timeout in total, so the deadline must have moved.
    const PAUSE_BETWEEN_REQUESTS: Duration = Duration::from_millis(100);

    /// The client: requests with pauses, then silence; returns how long the server kept
    /// the silent connection open.
    fn client(address: std::net::SocketAddr) -> Duration {
        let mut stream = std::net::TcpStream::connect(address).expect("connect succeeds");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("set_read_timeout succeeds");
        let mut buffer = [0u8; 1024];
        for _ in 0..REQUESTS {
            stream
                .write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
                .expect("write_all succeeds");
            let count = stream.read(&mut buffer).expect("an answer");
            assert!(buffer[..count].starts_with(b"HTTP/1.1 200 OK"));
            std::thread::sleep(PAUSE_BETWEEN_REQUESTS);
        }
        let silent_since = Instant::now() - PAUSE_BETWEEN_REQUESTS;
        let count = stream.read(&mut buffer).expect("the server closes");
        assert_eq!(count, 0, "closed without an answer");
        silent_since.elapsed()
    }

    #[test]
    fn a_kept_alive_connection_is_closed_after_the_idle_timeout_on_glommio() {
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(super::super::executors::IO_MEMORY_BYTES)
            .spawn(|| async {
                let listener =
                    glommio::net::TcpListener::bind("127.0.0.1:0").expect("bind succeeds");
                let address = listener.local_addr().expect("local_addr succeeds");
                let client = std::thread::spawn(move || client(address));
                let stream = listener.accept().await.expect("accept succeeds");
                let limits = HttpLimits {
                    idle_timeout: IDLE_TIMEOUT,
                    ..HttpLimits::default()
                };
                let shutdown = ShutdownSignal::new();
                let summary =
                    serve_connection(stream, None, &limits, &Healthy, &RuntimeTimer, &shutdown)
                        .await
                        .expect("the connection ends without an I/O error");
                (summary, client.join().expect("the client succeeds"))
            })
            .expect("an executor starts");
        let (summary, kept_open) = handle.join().expect("the executor finishes");
        assert_eq!(summary.close_reason, CloseReason::IdleTimeout);
        assert_eq!(summary.requests, REQUESTS as u64);
        assert!(
            kept_open + Duration::from_millis(20) >= IDLE_TIMEOUT,
            "{kept_open:?}"
        );
        assert!(
            kept_open < IDLE_TIMEOUT + Duration::from_secs(2),
            "{kept_open:?}"
        );
    }
}
