//! Client connections and listening sockets driven by the core's [`Readiness`] set.
//!
//! Every operation first tries the plain non-blocking system call (`recv`, `send`,
//! `accept4`); only when the kernel answers "would block" does the task leave its waker in
//! the set and wait. A keep-alive request therefore costs one `recv` and one `send`, with
//! no io_uring submission of its own (see [`super::readiness`] for why).
//!
//! Outgoing connections ([`Socket::connect`]) start a non-blocking `connect` and wait for
//! the set to report the socket writable, so connecting holds no thread either.
//!
//! Invariants:
//! - a socket is in its core's set from creation to drop, and leaves it before it closes;
//! - a socket is used only on the core that created it (`Rc`, not `Send`).

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_lite::io::{AsyncRead, AsyncWrite};

use super::readiness::{Direction, Readiness, Token};

/// A descriptor in its core's readiness set, removed from the set when dropped (before the
/// descriptor closes, as `inner` drops after this type's `drop`).
struct Registered<T: AsRawFd> {
    inner: T,
    readiness: Rc<Readiness>,
    token: Token,
}

impl<T: AsRawFd> Registered<T> {
    /// Adds `inner`, already non-blocking, to `readiness`.
    fn new(inner: T, readiness: Rc<Readiness>) -> io::Result<Self> {
        let token = readiness.register(inner.as_raw_fd())?;
        Ok(Registered {
            inner,
            readiness,
            token,
        })
    }

    /// Runs `operation` until it is not interrupted; on "would block" leaves the waker for
    /// `direction` and returns `Pending`.
    fn attempt<Output>(
        &self,
        direction: Direction,
        context: &Context<'_>,
        mut operation: impl FnMut(&T) -> io::Result<Output>,
    ) -> Poll<io::Result<Output>> {
        loop {
            match operation(&self.inner) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.readiness.wait(self.token, direction, context.waker());
                    return Poll::Pending;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                outcome => return Poll::Ready(outcome),
            }
        }
    }
}

impl<T: AsRawFd> Drop for Registered<T> {
    fn drop(&mut self) {
        self.readiness
            .deregister(self.inner.as_raw_fd(), self.token);
    }
}

/// An eventfd in this core's readiness set: other threads write to it to wake the task
/// waiting on it here.
pub struct Wakeup {
    registered: Registered<std::os::fd::OwnedFd>,
}

impl Wakeup {
    /// Adds `eventfd` (non-blocking) to `readiness`.
    pub fn adopt(eventfd: std::os::fd::OwnedFd, readiness: Rc<Readiness>) -> io::Result<Self> {
        Ok(Wakeup {
            registered: Registered::new(eventfd, readiness)?,
        })
    }

    /// Waits until the eventfd was written to since the last wait, and resets it.
    pub async fn wait(&self) -> io::Result<()> {
        std::future::poll_fn(|context| {
            self.registered
                .attempt(Direction::Read, context, |eventfd| {
                    read_eventfd(eventfd.as_raw_fd())
                })
        })
        .await
    }
}

/// Reads (and so resets) an eventfd's counter; "would block" when it is zero.
fn read_eventfd(eventfd: std::os::fd::RawFd) -> io::Result<()> {
    let mut counter = 0u64;
    // SAFETY: `counter` is 8 writable bytes that outlive the call, the size an eventfd read
    // requires; `eventfd` is open for the call's duration.
    let read = unsafe {
        libc::read(
            eventfd,
            std::ptr::addr_of_mut!(counter).cast::<libc::c_void>(),
            std::mem::size_of::<u64>(),
        )
    };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A TCP connection of this core.
pub struct Socket {
    registered: Registered<TcpStream>,
}

impl Socket {
    /// Makes `stream` non-blocking and adds it to `readiness`.
    pub fn adopt(stream: TcpStream, readiness: Rc<Readiness>) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        Ok(Socket {
            registered: Registered::new(stream, readiness)?,
        })
    }

    /// Connects to `address` without blocking the core: starts a non-blocking `connect`,
    /// joins `readiness`, and waits until the kernel reports the connection made (the
    /// socket writable with no pending error) or failed (the pending error is answered).
    /// The caller bounds the wait with its own timeout; dropping the future closes the
    /// half-open socket.
    pub async fn connect(address: SocketAddr, readiness: Rc<Readiness>) -> io::Result<Self> {
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(address),
            socket2::Type::STREAM.cloexec(),
            Some(socket2::Protocol::TCP),
        )?;
        socket.set_nonblocking(true)?;
        match socket.connect(&address.into()) {
            Ok(()) => {}
            Err(error) if error.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(error) => return Err(error),
        }
        let registered = Registered::new(TcpStream::from(socket), readiness)?;
        std::future::poll_fn(|context| {
            registered.attempt(Direction::Write, context, connection_outcome)
        })
        .await?;
        Ok(Socket { registered })
    }

    /// Sends small writes at once rather than waiting for Nagle's algorithm.
    pub fn set_nodelay(&self, value: bool) -> io::Result<()> {
        self.registered.inner.set_nodelay(value)
    }

    /// The address of the other end.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.registered.inner.peer_addr()
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let registered = &self.registered;
        let readiness = &registered.readiness;
        if !readiness.may_read(registered.token) {
            readiness.wait(registered.token, Direction::Read, context.waker());
            return Poll::Pending;
        }
        let capacity = buffer.len();
        let outcome =
            registered.attempt(Direction::Read, context, |mut stream| stream.read(buffer));
        // A read that stopped short of the buffer emptied the socket's queue: the next one
        // waits for an input event instead of asking the kernel again. The end of input
        // (0 bytes) stays readable, as no event would follow it.
        if let Poll::Ready(Ok(count)) = outcome {
            if count > 0 && count < capacity {
                readiness.mark_drained(registered.token);
            }
        }
        outcome
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.registered
            .attempt(Direction::Write, context, |mut stream| stream.write(buffer))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.registered
            .attempt(Direction::Write, context, |mut stream| {
                stream.write_vectored(buffers)
            })
    }

    fn poll_flush(self: Pin<&mut Self>, _context: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Writes go straight to the kernel; nothing is buffered here.
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _context: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.registered.inner.shutdown(Shutdown::Write) {
            Err(error) if error.kind() != io::ErrorKind::NotConnected => Poll::Ready(Err(error)),
            _ => Poll::Ready(Ok(())),
        }
    }
}

/// Whether the connection `stream` started is made: the pending error if it failed,
/// "would block" while it is still under way.
fn connection_outcome(stream: &TcpStream) -> io::Result<()> {
    if let Some(error) = stream.take_error()? {
        return Err(error);
    }
    match stream.peer_addr() {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotConnected => {
            Err(io::ErrorKind::WouldBlock.into())
        }
        Err(error) => Err(error),
    }
}

/// A listening socket of this core.
pub struct Listener {
    registered: Registered<TcpListener>,
}

impl Listener {
    /// Makes `listener` non-blocking and adds it to `readiness`.
    pub fn adopt(listener: TcpListener, readiness: Rc<Readiness>) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        Ok(Listener {
            registered: Registered::new(listener, readiness)?,
        })
    }

    /// Accepts the next connection, adopted by the same set.
    pub async fn accept(&self) -> io::Result<Socket> {
        let stream = self.accept_stream().await?;
        Socket::adopt(stream, self.registered.readiness.clone())
    }

    /// Accepts the next connection without adopting it: the caller decides which core's
    /// set it joins ([`super::connection_balance`]).
    pub async fn accept_stream(&self) -> io::Result<TcpStream> {
        let (stream, _peer) = std::future::poll_fn(|context| {
            self.registered
                .attempt(Direction::Read, context, TcpListener::accept)
        })
        .await?;
        Ok(stream)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Duration;

    use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
    use glommio::{LocalExecutorBuilder, Placement};

    use super::*;

    /// Bytes pushed through a peer that reads slowly: far more than the socket buffers hold,
    /// so the writer must wait for room again and again.
    const BACKPRESSURE_BYTES: usize = 16 << 20;

    /// How long a test's socket work may take before the test fails instead of hanging.
    const TEST_DEADLINE: Duration = Duration::from_secs(30);

    /// Runs `work`, failing the test when it has not finished within [`TEST_DEADLINE`].
    async fn within_deadline<T>(work: impl std::future::Future<Output = T>) -> T {
        futures_lite::future::or(work, async {
            glommio::timer::sleep(TEST_DEADLINE).await;
            panic!("the socket never became ready: a wake-up was lost");
        })
        .await
    }

    fn pattern(length: usize) -> Vec<u8> {
        (0..length).map(|index| (index % 251) as u8).collect()
    }

    #[test]
    fn a_large_write_to_a_slow_reader_arrives_whole_and_in_order() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        let reader = std::thread::spawn(move || {
            let mut client = TcpStream::connect(address).expect("connect");
            let mut received = Vec::with_capacity(BACKPRESSURE_BYTES);
            let mut chunk = vec![0u8; 64 << 10];
            loop {
                std::thread::sleep(Duration::from_micros(200));
                let count = client.read(&mut chunk).expect("read");
                if count == 0 {
                    break;
                }
                received.extend_from_slice(&chunk[..count]);
            }
            received
        });
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .spawn(move || async move {
                let readiness = crate::runtime::readiness::install().expect("readiness");
                let listener = Listener::adopt(listener, readiness).expect("adopt");
                within_deadline(async {
                    let mut socket = listener.accept().await.expect("accept");
                    socket
                        .write_all(&pattern(BACKPRESSURE_BYTES))
                        .await
                        .expect("write everything");
                    socket.close().await.expect("close");
                })
                .await;
            })
            .expect("executor starts");
        handle.join().expect("server ends");
        let received = reader.join().expect("reader ends");
        assert_eq!(received.len(), BACKPRESSURE_BYTES);
        assert!(received == pattern(BACKPRESSURE_BYTES), "bytes differ");
    }

    #[test]
    fn a_read_waits_for_late_input_and_sees_the_peer_close() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        let writer = std::thread::spawn(move || {
            let mut client = TcpStream::connect(address).expect("connect");
            std::thread::sleep(Duration::from_millis(100));
            client.write_all(b"late").expect("write");
            std::thread::sleep(Duration::from_millis(50));
        });
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .spawn(move || async move {
                let readiness = crate::runtime::readiness::install().expect("readiness");
                let listener = Listener::adopt(listener, readiness).expect("adopt");
                within_deadline(async {
                    let mut socket = listener.accept().await.expect("accept");
                    let mut received = Vec::new();
                    socket
                        .read_to_end(&mut received)
                        .await
                        .expect("read until the peer closes");
                    received
                })
                .await
            })
            .expect("executor starts");
        let received = handle.join().expect("server ends");
        writer.join().expect("writer ends");
        assert_eq!(received, b"late");
    }
}
