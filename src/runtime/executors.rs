//! Starting the cores: one pinned glommio executor per core, each given its own listening
//! sockets (SO_REUSEPORT on the same address, so the kernel spreads connections; each core
//! then evens the spread out, see [`super::connection_balance`]).
//!
//! Sockets are bound on the main thread before any executor starts, so a busy port is
//! reported once, clearly, and no core is left waiting for a peer that failed to start.
//! The main thread then watches the cores until each has polled its future once, waking any
//! that glommio put to sleep before that (see [`super::first_poll`]).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{IntoRawFd, RawFd};
use std::thread::JoinHandle;
use std::time::Duration;

use glommio::{CpuSet, LocalExecutorBuilder, Placement, PoolPlacement};

use super::shutdown::ShutdownFlag;

/// Locked memory each executor registers for io_uring buffers. Small on purpose: the
/// server's own I/O goes through mmap and plain reads; this only backs glommio's DMA API.
pub const IO_MEMORY_BYTES: usize = 512 << 10;

/// Helper threads each core runs its blocking calls on (`runtime::blocking::run`), all pinned
/// to the core's CPU and taking calls from one queue. A shard's indexing step holds a helper
/// for as long as it computes (a batch's final write takes seconds), so a single helper would
/// queue a request's short file write or sync behind it, and uploads would wait for indexing.
/// With several, calls wait only when this many run at once; idle helpers cost a sleeping
/// thread each.
pub const BLOCKING_THREADS_PER_CORE: usize = 4;

/// Pending connections the kernel queues per listening socket.
pub const LISTEN_BACKLOG: i32 = 4096;

/// The longest idle poll (`--idle-poll-micros`) in microseconds: beyond a millisecond an idle
/// core only burns the CPU its indexing thread could use.
pub const IDLE_POLL_MICROS_MAX: u64 = 1_000;

/// How the runtime is laid out.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// How many cores (executors) to run.
    pub cores: usize,
    /// Every address to listen on (a host name may resolve to several).
    pub addresses: Vec<SocketAddr>,
    /// How long a core that ran out of work keeps polling its rings and channels before it
    /// sleeps (glommio's `spin_before_park`; zero: it sleeps at once). At most
    /// [`IDLE_POLL_MICROS_MAX`]. See [`idle_poll`] for why, and what it costs.
    pub idle_poll: Duration,
    /// The share of a busy CPU the threads and the queue that index keep.
    pub indexing_share: super::indexing_share::IndexingShare,
}

/// What a core is told when it starts.
pub struct CoreContext {
    /// This core's index, 0 being the control core.
    pub core: usize,
    /// How many cores run.
    pub cores: usize,
    /// The listening sockets this core accepts on, one per address.
    pub listeners: Vec<super::socket::Listener>,
    /// This core's side of the connection balancing.
    pub balance: super::connection_balance::CoreBalance,
    /// Raised when the process must stop.
    pub shutdown: ShutdownFlag,
}

/// Why the runtime could not start or run.
#[derive(Debug)]
pub enum RuntimeError {
    /// An address could not be bound.
    Bind {
        address: SocketAddr,
        source: io::Error,
    },
    /// No usable CPU was found, or fewer than requested.
    Cpus(String),
    /// io_uring or locked memory is not available.
    Executor(String),
    /// A core stopped with an error.
    Core { core: usize, message: String },
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::Bind { address, source } => {
                write!(formatter, "could not listen on {address}: {source}")
            }
            RuntimeError::Cpus(message) => write!(formatter, "{message}"),
            RuntimeError::Executor(message) => write!(formatter, "{message}"),
            RuntimeError::Core { core, message } => write!(formatter, "core {core}: {message}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// Starts `options.cores` executors and runs `core_main` on each; returns when every core
/// has returned.
pub fn run<CoreMain, CoreFuture>(
    options: &RuntimeOptions,
    shutdown: ShutdownFlag,
    core_main: CoreMain,
) -> Result<(), RuntimeError>
where
    CoreMain: Fn(CoreContext) -> CoreFuture + Send + Clone + 'static,
    CoreFuture: Future<Output = Result<(), String>> + 'static,
{
    let cpus = usable_cpus(options.cores)?;
    probe_executor()?;
    let sockets_per_core = bind_listeners(&options.addresses, options.cores)?;
    let balance_setup =
        super::connection_balance::BalancerSetup::new(options.cores).map_err(|error| {
            RuntimeError::Executor(format!(
                "the connection handoff could not be set up: {error}"
            ))
        })?;
    super::first_poll::install_wake_handler().map_err(|error| {
        RuntimeError::Executor(format!(
            "the cores' wake-up signal could not be set up: {error}"
        ))
    })?;
    let first_polls = super::first_poll::FirstPolls::new(options.cores);
    let mut handles = Vec::with_capacity(options.cores);
    for (core, (&cpu, sockets)) in cpus.iter().zip(sockets_per_core).enumerate() {
        let core_main = core_main.clone();
        let start = CoreStart {
            core,
            cores: options.cores,
            cpu,
            analysis_cpu: next_core_cpu(&cpus, core),
            idle_poll: options.idle_poll,
            indexing_share: options.indexing_share,
            sockets,
            balance_setup: balance_setup.clone(),
            shutdown: shutdown.clone(),
        };
        handles.push(spawn_core(start, first_polls.clone(), core_main)?);
    }
    super::first_poll::nudge_until_polled(&handles, &first_polls);
    join_cores(handles)
}

/// One core's thread: its executor is made on a thread of our own (glommio's `spawn` does
/// the same) so that its pthread id is known to [`super::first_poll`]. Returns once the
/// executor is made: glommio numbers executors as they are made and the mesh numbers its
/// peers by that number, so cores must be made in order for peer `i` to be core `i`.
fn spawn_core<CoreMain, CoreFuture>(
    start: CoreStart,
    first_polls: super::first_poll::FirstPolls,
    core_main: CoreMain,
) -> Result<JoinHandle<Result<(), String>>, RuntimeError>
where
    CoreMain: Fn(CoreContext) -> CoreFuture + Send + 'static,
    CoreFuture: Future<Output = Result<(), String>> + 'static,
{
    let helpers = helper_placement(start.cpu)?;
    let (made, is_made) = std::sync::mpsc::sync_channel::<()>(1);
    let handle = std::thread::Builder::new()
        .name(format!("core-{}", start.core))
        .spawn(move || {
            let executor = idle_poll(
                LocalExecutorBuilder::new(Placement::Fixed(start.cpu)),
                start.idle_poll,
            )
            .blocking_thread_pool_placement(helpers)
            .io_memory(IO_MEMORY_BYTES)
            .preempt_timer(super::latency::PREEMPTION_INTERVAL)
            .make();
            // `spawn_core` waits for this before the next core is made; a send fails only if
            // it stopped waiting, which it never does before this message.
            let _ = made.send(());
            let executor = executor.map_err(|error| {
                start.shutdown.raise();
                executor_failure_message(&error.to_string())
            })?;
            executor.run(async move {
                first_polls.mark(start.core);
                start_core(start, core_main).await
            })
        })
        .map_err(|error| RuntimeError::Executor(executor_failure_message(&error.to_string())))?;
    // An error means the thread ended before making its executor; joining it reports why.
    let _ = is_made.recv();
    Ok(handle)
}

/// Waits for every core to return; the first core's error, if any.
fn join_cores(handles: Vec<JoinHandle<Result<(), String>>>) -> Result<(), RuntimeError> {
    let mut first_error = None;
    for (core, handle) in handles.into_iter().enumerate() {
        let outcome = match handle.join() {
            Ok(Ok(())) => continue,
            Ok(Err(message)) => message,
            Err(_) => "the core panicked".to_string(),
        };
        first_error.get_or_insert(RuntimeError::Core {
            core,
            message: outcome,
        });
    }
    first_error.map_or(Ok(()), Err)
}

/// Lets a core that ran out of work poll for `poll` before it sleeps.
///
/// Why: a request crosses cores (its connection's core asks every shard's core, then
/// answers), and at low concurrency each core sleeps between those steps. Waking a sleeping
/// core is slow on a virtual machine (a halted vCPU must be resumed), and it happens several
/// times per request. Measured on the PyPI index (200,000 documents, 2 cores, 2,000-query
/// mix, `load -c 1`, alternating runs): 1,181–1,483 requests/s without polling, 1,355–1,761
/// with 50 µs (p50 667–796 → 529–662 µs), 2,210 with 200 µs. At 16 connections the cores
/// rarely run out of work and nothing changes (`tuning/results/idle-poll-2026-11-27.md`).
///
/// What it costs: a polling core holds its CPU, and its indexing thread (see
/// [`super::indexing_thread`]), which paces itself for a moment after each request, gets
/// part of the CPU where it would get all of it (measured when that thread was niced to a
/// tenth instead). Indexing 150,000 documents under 1,000 searches/s took 6.2–8.5 s without
/// polling, 6.4–8.6 s with 50 µs and 7.9–15.6 s with 200 µs: hence the default of 50 µs.
/// An idle core wakes only for its timers, each followed by one poll: an idle server took
/// 0.29–0.34 s of CPU per 10 s at 50 µs against 0.23–0.26 s without.
fn idle_poll(builder: LocalExecutorBuilder, poll: Duration) -> LocalExecutorBuilder {
    assert!(
        poll <= Duration::from_micros(IDLE_POLL_MICROS_MAX),
        "the configuration bounds the idle poll"
    );
    if poll.is_zero() {
        builder
    } else {
        builder.spin_before_park(poll)
    }
}

/// The CPU of the core after `core` (the first after the last), where `core`'s analysis
/// thread runs; `None` on a single core.
fn next_core_cpu(cpus: &[usize], core: usize) -> Option<usize> {
    (cpus.len() > 1).then(|| cpus[(core + 1) % cpus.len()])
}

/// Where a core runs and what it starts with.
struct CoreStart {
    core: usize,
    cores: usize,
    cpu: usize,
    /// Where the core's analysis thread runs: the next core's CPU (`None`: a single core).
    analysis_cpu: Option<usize>,
    idle_poll: Duration,
    indexing_share: super::indexing_share::IndexingShare,
    sockets: Vec<RawFd>,
    balance_setup: super::connection_balance::BalancerSetup,
    shutdown: ShutdownFlag,
}

/// One core's life on its executor: its indexing queue and thread, its sockets, then
/// `core_main`. An error raises `shutdown` so the other cores stop rather than wait for
/// this one.
async fn start_core<CoreMain, CoreFuture>(
    start: CoreStart,
    core_main: CoreMain,
) -> Result<(), String>
where
    CoreMain: Fn(CoreContext) -> CoreFuture,
    CoreFuture: Future<Output = Result<(), String>>,
{
    let CoreStart {
        core,
        cores,
        cpu,
        analysis_cpu,
        idle_poll: _,
        indexing_share,
        sockets,
        balance_setup,
        shutdown,
    } = start;
    super::latency::install(indexing_share.queue_shares());
    super::serving_activity::serve_on_cpu(cpu);
    let indexing =
        super::indexing_thread::install(core, Some(cpu), indexing_share).and_then(|()| {
            match analysis_cpu {
                Some(analysis_cpu) => {
                    super::analysis_thread::install(core, analysis_cpu, indexing_share)
                }
                None => Ok(()),
            }
        });
    let outcome = match indexing.and_then(|()| adopt_listeners(sockets)) {
        Ok(listeners) => {
            let context = CoreContext {
                core,
                cores,
                listeners,
                balance: balance_setup.for_core(core),
                shutdown: shutdown.clone(),
            };
            core_main(context).await
        }
        Err(error) => Err(format!(
            "core {core} could not start its indexing thread or watch its sockets: {error}"
        )),
    };
    if outcome.is_err() {
        shutdown.raise();
    }
    outcome
}

/// [`BLOCKING_THREADS_PER_CORE`] helper threads, each pinned to `cpu`.
fn helper_placement(cpu: usize) -> Result<PoolPlacement, RuntimeError> {
    let online = CpuSet::online().map_err(|error| {
        RuntimeError::Cpus(format!("the online CPUs could not be read: {error}"))
    })?;
    let only_this_cpu = online.filter(|location| location.cpu == cpu);
    Ok(PoolPlacement::Custom(vec![
        only_this_cpu;
        BLOCKING_THREADS_PER_CORE
    ]))
}

/// The CPUs this process may run on, the first `cores` of them.
fn usable_cpus(cores: usize) -> Result<Vec<usize>, RuntimeError> {
    let allowed = allowed_cpus();
    if cores == 0 {
        return Err(RuntimeError::Cpus("--cores must be at least 1".to_string()));
    }
    if allowed.len() < cores {
        return Err(RuntimeError::Cpus(format!(
            "--cores {cores} asks for more cores than this process may use ({}: {:?})",
            allowed.len(),
            allowed
        )));
    }
    Ok(allowed.into_iter().take(cores).collect())
}

/// The CPUs in this process's affinity mask, in increasing order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain data; zeroed is a valid empty set, and
    // `sched_getaffinity` writes at most `size_of::<cpu_set_t>()` bytes into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map_or(1, |count| count.get()))
                .collect();
        }
        set
    };
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the capacity of the set.
        .filter(|cpu| unsafe { libc::CPU_ISSET(*cpu, &set) })
        .collect()
}

/// Makes and drops one executor, so that a missing io_uring or too little locked memory is
/// reported once, clearly, before any core starts. It is never run: an executor run with
/// nothing else in flight can sleep for good before its first poll (see
/// [`super::first_poll`]).
fn probe_executor() -> Result<(), RuntimeError> {
    let outcome = std::thread::Builder::new()
        .name("probe".to_string())
        .spawn(|| {
            LocalExecutorBuilder::new(Placement::Unbound)
                .io_memory(IO_MEMORY_BYTES)
                .make()
                .map(drop)
                .map_err(|error| error.to_string())
        })
        .map_err(|error| error.to_string())
        .and_then(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err("the probe panicked".to_string()))
        });
    outcome.map_err(|message| RuntimeError::Executor(executor_failure_message(&message)))
}

fn executor_failure_message(cause: &str) -> String {
    format!(
        "could not start an io_uring executor ({cause}). coresearch needs io_uring \
         (Linux 5.8 or newer, with /proc/sys/kernel/io_uring_disabled = 0) and at least \
         {} KiB of locked memory per core: raise `ulimit -l` (LimitMEMLOCK= in systemd). \
         Run tuning/host-check.sh to see what to change.",
        IO_MEMORY_BYTES >> 10
    )
}

/// Binds `cores` listening sockets per address, in one SO_REUSEPORT group per address;
/// returns them grouped by core.
///
/// SO_REUSEPORT lets any process of the same user join a group, so before forming ours the
/// address is bound once without it: if another server already listens there, starting
/// fails instead of silently sharing its port. Port 0 is resolved to the port the kernel
/// picks for the first socket, and every other socket joins that one.
fn bind_listeners(addresses: &[SocketAddr], cores: usize) -> Result<Vec<Vec<RawFd>>, RuntimeError> {
    let mut sockets_per_core: Vec<Vec<RawFd>> = vec![Vec::new(); cores];
    for requested in addresses {
        let error = |source| RuntimeError::Bind {
            address: *requested,
            source,
        };
        let mut address = *requested;
        if address.port() != 0 {
            ensure_address_is_free(address).map_err(error)?;
        }
        for sockets in sockets_per_core.iter_mut() {
            let (descriptor, bound) = bind_reuse_port(address).map_err(error)?;
            address = bound;
            sockets.push(descriptor);
        }
    }
    Ok(sockets_per_core)
}

/// Fails with `AddrInUse` when some socket already listens on `address`.
fn ensure_address_is_free(address: SocketAddr) -> io::Result<()> {
    use socket2::{Domain, Protocol, Socket, Type};
    let probe = Socket::new(
        Domain::for_address(address),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    // Connections of a previous run lingering in TIME_WAIT must not count as a listener.
    probe.set_reuse_address(true)?;
    if address.is_ipv6() {
        probe.set_only_v6(true)?;
    }
    probe.bind(&address.into())
}

fn bind_reuse_port(address: SocketAddr) -> io::Result<(RawFd, SocketAddr)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(
        Domain::for_address(address),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_reuse_port(true)?;
    socket.set_reuse_address(true)?;
    if address.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&address.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    let bound = socket
        .local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::other("a TCP socket has an IP address"))?;
    Ok((socket.into_raw_fd(), bound))
}

/// Creates this core's readiness set (every socket of the core joins it) and puts the
/// core's listening sockets in it.
fn adopt_listeners(descriptors: Vec<RawFd>) -> io::Result<Vec<super::socket::Listener>> {
    use std::os::fd::FromRawFd;
    let readiness = super::readiness::install()?;
    descriptors
        .into_iter()
        .map(|descriptor| {
            // SAFETY: `descriptor` is a listening TCP socket created by `bind_reuse_port`,
            // whose ownership was released with `into_raw_fd` and is handed to exactly one
            // core here.
            let listener = unsafe { std::net::TcpListener::from_raw_fd(descriptor) };
            super::socket::Listener::adopt(listener, readiness.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builder's own description names the poll it was given: glommio keeps no other
    /// trace of it before the executor runs.
    fn described_poll(poll: Duration) -> String {
        format!(
            "{:?}",
            idle_poll(LocalExecutorBuilder::new(Placement::Unbound), poll)
        )
    }

    #[test]
    fn a_core_polls_for_the_configured_time_before_it_sleeps() {
        assert!(described_poll(Duration::from_micros(50)).contains("spin_before_park: Some(50µs)"));
        assert!(described_poll(Duration::ZERO).contains("spin_before_park: None"));
    }

    #[test]
    #[should_panic(expected = "the configuration bounds the idle poll")]
    fn a_poll_beyond_the_bound_is_refused() {
        described_poll(Duration::from_micros(IDLE_POLL_MICROS_MAX + 1));
    }
}
