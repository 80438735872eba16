//! Awaiting an epoll descriptor through glommio's ring, so a core sleeps until one of its
//! sockets is ready.
//!
//! glommio 0.9 has no public "wait until this descriptor is readable". What it does have:
//! a stream adopted from a raw descriptor arms an io_uring poll for input on that
//! descriptor at once, and its first read waits for that poll. We adopt a duplicate of the
//! epoll descriptor (glommio closes what it adopts, and the set must stay open) and read
//! from it: the read waits for the poll, then tries a `recv`, which an epoll descriptor
//! refuses (`ENOTSOCK`). That refusal, coming after the poll, is the wake-up we want.
//!
//! The behaviour is pinned by glommio's exact version in `Cargo.lock`, and the tests below
//! check both halves: no wake-up while nothing is ready, a wake-up once something is.
//!
//! Invariants:
//! - [`readable`] returns only after the epoll set had a ready entry, or with an error
//!   other than the expected refusal;
//! - the duplicate descriptor is closed when [`readable`] returns or is dropped.

use std::io;
use std::os::fd::{FromRawFd, RawFd};

use futures_lite::io::AsyncReadExt;

/// Waits until the epoll set `epoll` has a ready entry.
pub async fn readable(epoll: RawFd) -> io::Result<()> {
    // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` takes no pointer; `epoll` is an open descriptor
    // owned by the caller, which stays open while this runs.
    let duplicate = unsafe { libc::fcntl(epoll, libc::F_DUPFD_CLOEXEC, 0) };
    if duplicate < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `duplicate` is a new descriptor owned by nothing else; the stream takes it
    // over and closes it when dropped.
    let mut stream = unsafe { glommio::net::UnixStream::from_raw_fd(duplicate) };
    let mut byte = [0u8; 1];
    match stream.read(&mut byte).await {
        Err(error) if error.raw_os_error() == Some(libc::ENOTSOCK) => Ok(()),
        Err(error) => Err(error),
        Ok(_) => Err(io::Error::other(
            "an epoll descriptor answered a read; readiness cannot be awaited",
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use futures_lite::future;
    use glommio::{LocalExecutorBuilder, Placement};

    use super::*;

    fn epoll_with(socket: RawFd) -> std::os::fd::OwnedFd {
        // SAFETY: plain system calls on descriptors this test owns; `event` outlives them.
        unsafe {
            let epoll = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            assert!(epoll >= 0);
            let mut event = libc::epoll_event {
                events: (libc::EPOLLIN | libc::EPOLLET) as u32,
                u64: 7,
            };
            assert_eq!(
                libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, socket, &mut event),
                0
            );
            std::os::fd::OwnedFd::from_raw_fd(epoll)
        }
    }

    /// How long a waiter must stay asleep while nothing is ready.
    const QUIET_PERIOD: Duration = Duration::from_millis(50);
    /// How long a test waits for a wake-up before it fails.
    const WAKE_DEADLINE: Duration = Duration::from_secs(5);
    /// How long the waiter is left waiting before the data arrives.
    const ARMED_BEFORE_DATA: Duration = Duration::from_millis(20);

    /// `work`'s output if it finishes within `limit`, else `None`.
    async fn within<T>(limit: Duration, work: impl std::future::Future<Output = T>) -> Option<T> {
        future::or(async { Some(work.await) }, async {
            glommio::timer::sleep(limit).await;
            None
        })
        .await
    }

    /// Runs `test` on a glommio executor of its own, with a socket pair whose reading end
    /// is the only member of an epoll set.
    fn on_executor<Test, Body>(test: Test)
    where
        Test: FnOnce(std::os::unix::net::UnixStream, std::os::fd::OwnedFd) -> Body + Send + 'static,
        Body: std::future::Future<Output = ()> + 'static,
    {
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .spawn(|| async move {
                let (writer, reader) = std::os::unix::net::UnixStream::pair().expect("socket pair");
                let epoll = epoll_with(reader.as_raw_fd());
                test(writer, epoll).await;
            })
            .expect("executor starts");
        handle.join().expect("test executor ends");
    }

    #[test]
    fn wakes_only_once_a_socket_is_ready() {
        on_executor(|mut writer, epoll| async move {
            let early = within(QUIET_PERIOD, readable(epoll.as_raw_fd())).await;
            assert!(early.is_none(), "woke with nothing ready");

            writer.write_all(b"x").expect("write");
            let woken = within(WAKE_DEADLINE, readable(epoll.as_raw_fd())).await;
            assert!(matches!(woken, Some(Ok(()))), "no wake-up: {woken:?}");
        });
    }

    #[test]
    fn wakes_a_waiter_armed_before_the_data_arrives() {
        on_executor(|mut writer, epoll| async move {
            let descriptor = epoll.as_raw_fd();
            let waiter = glommio::spawn_local(async move { readable(descriptor).await });
            glommio::timer::sleep(ARMED_BEFORE_DATA).await;
            writer.write_all(b"x").expect("write");
            let woken = within(WAKE_DEADLINE, waiter).await;
            assert!(matches!(woken, Some(Ok(()))), "no wake-up: {woken:?}");
        });
    }
}
