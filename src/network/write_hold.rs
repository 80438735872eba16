//! The leader's hold on writes while a network change sends documents between instances.
//!
//! Why: an instance sends the documents it holds as they are when it reads them; a newer
//! write of the same document forwarded meanwhile could reach the new owner first and then
//! be overwritten by the older copy. So from the moment the leader registers a change until
//! every instance has sent its documents, the leader registers no new write (requests wait,
//! none is refused); the writes it holds are then registered and forwarded after the
//! documents, in order, everywhere.
//!
//! Invariants: the flag lives on the control core (where the leader's write sequencer and
//! the scheduler run) and is only read and written there; it is raised when the leader
//! registers a change (or restarts with one running) and lowered once the leader and every
//! other instance sent their documents (the change's driver, `crate::tasks::network_change`),
//! or when that change ends in any way.

use std::cell::Cell;
use std::time::Duration;

/// How often a held write looks whether the hold was lifted.
pub const HELD_WRITE_POLL_INTERVAL: Duration = Duration::from_millis(20);

thread_local! {
    static HELD: Cell<bool> = const { Cell::new(false) };
}

/// Raises (`true`) or lowers the hold.
pub fn set_held(held: bool) {
    HELD.with(|cell| cell.set(held));
}

/// Whether writes are held.
pub fn is_held() -> bool {
    HELD.with(Cell::get)
}

/// Waits until writes are no longer held.
pub async fn wait_until_released() {
    while is_held() {
        crate::runtime::sleep(HELD_WRITE_POLL_INTERVAL).await;
    }
}
