//! The faults a round inflicts on one instance of the network while a topology change runs:
//! a crash (SIGKILL, then a restart on the same data directory and address) of a follower or
//! of the leader, or a freeze (SIGSTOP, then SIGCONT after a while) of a follower.
//!
//! Invariant: every fault heals before [`Nemesis::strike`] returns, so the checker always
//! reads a network whose instances all run.

use std::time::Duration;

use crate::common::Server;
use crate::common::network::{kill_and_restart, network_options};

/// The longest freeze, in milliseconds.
const FREEZE_MILLISECONDS_MAX: u64 = 6_000;
/// The shortest freeze, in milliseconds.
const FREEZE_MILLISECONDS_MIN: u64 = 1_000;

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nemesis {
    /// SIGKILL of the instance at this position (not the leader), restarted at once.
    CrashFollower(usize),
    /// SIGKILL of the leader, restarted at once.
    CrashLeader,
    /// SIGSTOP of the instance at this position (not the leader) for this long.
    Freeze(usize, Duration),
}

impl Nemesis {
    /// A fault chosen by `random` among the instances of a network of `instances`.
    pub fn chosen(random: &mut fastrand::Rng, instances: usize) -> Nemesis {
        let follower = random.usize(1..instances);
        match random.u8(0..3) {
            0 => Nemesis::CrashFollower(follower),
            1 => Nemesis::CrashLeader,
            _ => {
                let milliseconds = random.u64(FREEZE_MILLISECONDS_MIN..=FREEZE_MILLISECONDS_MAX);
                Nemesis::Freeze(follower, Duration::from_millis(milliseconds))
            }
        }
    }

    /// Inflicts the fault on `servers` (the leader first) and heals it.
    pub fn strike(self, servers: &mut Vec<Server>) {
        match self {
            Nemesis::CrashFollower(position) => crash(servers, position),
            Nemesis::CrashLeader => crash(servers, 0),
            Nemesis::Freeze(position, duration) => {
                let pid = servers[position].pid() as i32;
                // SAFETY: signals to a child process this test started and still owns.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                std::thread::sleep(duration);
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGCONT) };
            }
        }
    }
}

/// Crashes the instance at `position` and puts its restart in its place.
fn crash(servers: &mut Vec<Server>, position: usize) {
    let victim = servers.remove(position);
    let restarted = kill_and_restart(victim, &network_options(2));
    servers.insert(position, restarted);
}
