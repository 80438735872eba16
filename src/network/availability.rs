//! Which remotes answer, as Meilisearch 1.50 tracks it: a remote whose read failed with a
//! server-side error (a 5xx: unreachable, timed out, failing) is unavailable for a while —
//! [`FIRST_UNAVAILABILITY`], doubled at each further failure up to [`LONGEST_UNAVAILABILITY`]
//! — and an operator (or another instance) may mark it unavailable until told otherwise, or
//! available again, with a `statusChangeForRemote` message on `POST /network/control`.
//! `GET /network` shows each remote's `status`.
//!
//! Where coresearch goes further: a read skips the unavailable owners of a shard only while
//! an available one is left (Meilisearch leaves the shard out), so a shard whose owners all
//! failed lately is still read; and a remote that answers is available again at once.
//!
//! Invariants: one map for the process, shared by every core (a remote's status is the
//! process's view, as `GET /network` shows it on any core); a remote absent from the map is
//! available; an indefinite unavailability ends only by a message marking it available (or
//! an answer, when it was asked as a shard's last owner).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a remote stays unavailable after its first failure.
pub const FIRST_UNAVAILABILITY: Duration = Duration::from_secs(30);
/// The longest a failure makes a remote unavailable.
pub const LONGEST_UNAVAILABILITY: Duration = Duration::from_secs(5 * 60);

/// A remote's `status` in `GET /network` and in `statusChangeForRemote`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RemoteStatus {
    Available,
    Unavailable,
}

/// Since when, and until when (`None`: until told otherwise), a remote is unavailable.
#[derive(Debug, Clone, Copy)]
struct Unavailability {
    since: Instant,
    until: Option<Instant>,
}

impl Unavailability {
    fn first(now: Instant) -> Unavailability {
        Unavailability {
            since: now,
            until: Some(now + FIRST_UNAVAILABILITY),
        }
    }

    /// The period after one more failure: twice the last one, at most the longest.
    fn next(self, now: Instant) -> Unavailability {
        match self.until {
            Some(until) => {
                let doubled = until.saturating_duration_since(self.since) * 2;
                Unavailability {
                    since: now,
                    until: Some(now + doubled.min(LONGEST_UNAVAILABILITY)),
                }
            }
            None => self,
        }
    }

    fn is_over(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now > until)
    }
}

/// The unavailable remotes of the process.
#[derive(Debug, Default)]
pub struct RemoteAvailability {
    unavailable: Mutex<HashMap<String, Unavailability>>,
}

impl RemoteAvailability {
    /// Whether `remote` is available now (an unavailability that is over is forgotten).
    pub fn is_available(&self, remote: &str) -> bool {
        self.is_available_at(remote, Instant::now())
    }

    fn is_available_at(&self, remote: &str, now: Instant) -> bool {
        let mut unavailable = self.lock();
        match unavailable.get(remote) {
            Some(period) if period.is_over(now) => {
                unavailable.remove(remote);
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// `remote`'s status now.
    pub fn status(&self, remote: &str) -> RemoteStatus {
        if self.is_available(remote) {
            RemoteStatus::Available
        } else {
            RemoteStatus::Unavailable
        }
    }

    /// `remote` failed a read with a server-side error: unavailable for the next period.
    pub fn failed(&self, remote: &str) {
        self.failed_at(remote, Instant::now());
    }

    fn failed_at(&self, remote: &str, now: Instant) {
        let mut unavailable = self.lock();
        let period = match unavailable.get(remote) {
            Some(period) => period.next(now),
            None => Unavailability::first(now),
        };
        unavailable.insert(remote.to_owned(), period);
    }

    /// `remote` answered, or was marked available: available from now on.
    pub fn answered(&self, remote: &str) {
        self.lock().remove(remote);
    }

    /// Applies a `statusChangeForRemote` message.
    pub fn set_status(&self, remote: &str, status: RemoteStatus) {
        match status {
            RemoteStatus::Available => self.answered(remote),
            RemoteStatus::Unavailable => {
                let now = Instant::now();
                self.lock().insert(
                    remote.to_owned(),
                    Unavailability {
                        since: now,
                        until: None,
                    },
                );
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Unavailability>> {
        self.unavailable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_make_a_remote_unavailable_for_periods_that_double_up_to_the_longest() {
        let availability = RemoteAvailability::default();
        let start = Instant::now();
        assert!(availability.is_available_at("ms1", start));
        availability.failed_at("ms1", start);
        assert!(!availability.is_available_at("ms1", start + FIRST_UNAVAILABILITY / 2));
        assert!(availability.is_available_at("ms1", start + FIRST_UNAVAILABILITY * 2));
        // Forgotten once over: the next failure starts again from the first period.
        availability.failed_at("ms1", start);
        availability.failed_at("ms1", start);
        let doubled = start + FIRST_UNAVAILABILITY + FIRST_UNAVAILABILITY / 2;
        assert!(!availability.is_available_at("ms1", doubled));
        let mut now = start;
        for _ in 0..10 {
            availability.failed_at("ms1", now);
            now += Duration::from_secs(1);
        }
        assert!(!availability.is_available_at("ms1", now + LONGEST_UNAVAILABILITY / 2));
        assert!(availability.is_available_at("ms1", now + LONGEST_UNAVAILABILITY * 2));
        assert!(availability.is_available_at("ms2", now));
    }

    #[test]
    fn a_message_marks_a_remote_unavailable_until_told_otherwise() {
        let availability = RemoteAvailability::default();
        availability.set_status("ms1", RemoteStatus::Unavailable);
        assert_eq!(availability.status("ms1"), RemoteStatus::Unavailable);
        availability.failed("ms1");
        assert_eq!(availability.status("ms1"), RemoteStatus::Unavailable);
        availability.set_status("ms1", RemoteStatus::Available);
        assert_eq!(availability.status("ms1"), RemoteStatus::Available);
        availability.failed("ms1");
        availability.answered("ms1");
        assert_eq!(availability.status("ms1"), RemoteStatus::Available);
    }
}
