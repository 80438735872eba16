//! The runtime: one glommio executor per core, pinned, each serving its own listener and
//! owning its own state; cores talk only through the bounded [`mesh`].
//!
//! This is the only module of the server that names glommio. Everything above it (HTTP,
//! routes, control state) is written against plain futures and the traits defined here.
//!
//! Invariants:
//! - core `i` runs on CPU `cpus[i]` and never migrates;
//! - core 0 is the control core (see ARCHITECTURE.md §2.1);
//! - the runtime shares between cores only atomics: the shutdown flag, the reload
//!   counters ([`reload_signal`]), the lifecycle
//!   ([`lifecycle`]: phase and heartbeats), the open connection
//!   counts ([`connection_balance`]) and the per-CPU serving slots; what the rest of the
//!   server shares is listed in ARCHITECTURE.md §3.

pub mod analysis_thread;
pub mod blocking;
pub mod connection_balance;
mod epoll_wake;
pub mod executors;
mod first_poll;
pub mod huge_pages;
pub mod indexing_priority;
pub mod indexing_share;
pub mod indexing_thread;
pub mod invoke;
pub mod latency;
pub mod lifecycle;
pub mod listener;
pub mod mesh;
pub mod mesh_latency;
pub mod readiness;
pub mod reload_signal;
pub mod service_manager;
pub mod serving_activity;
pub mod shutdown;
pub mod socket;
pub mod startup_gate;
pub mod task;
pub mod thread_usage;
pub mod timer;

pub use executors::{CoreContext, RuntimeError, RuntimeOptions, run};
pub use invoke::{CoreRequest, Invocation, invoke_on};
pub use mesh::{CoreMesh, MeshHandler};
pub use task::{
    Detached, Semaphore, Task, sleep, spawn, spawn_detached, spawn_to_completion, yield_if_needed,
};
pub use timer::RuntimeTimer;
