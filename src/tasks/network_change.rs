//! The `networkTopologyChange` task of this version: every instance of a sharded network
//! (the leader and each follower) registers one when the leader changes the network, and
//! runs it alone in its batch, before any other waiting task.
//!
//! What it does here: nothing has to move, so it finishes at once with Meilisearch's final
//! details (`movedDocuments: 0`, `message: "Finished"`). That is true because the leader
//! accepts a change of shards only while no instance of the old or the new network holds a
//! document, or when the change leaves every shard's owners as they were
//! (`crate::routes::network`); the new network is already in force when the task runs
//! (it was stored when the change was registered), so writes after it follow the new shards.
//!
//! Not implemented yet (refused by the leader instead): Meilisearch's export, import and
//! deletion steps that move documents between instances when shard owners change.

use super::model::Details;

/// The message of a finished network change.
pub const FINISHED_MESSAGE: &str = "Finished";

/// Sets `task`'s details to those of a change that moved nothing.
pub fn finished_details(details: &mut Details) {
    if let Details::NetworkTopologyChange {
        moved_documents,
        message,
    } = details
    {
        *moved_documents = 0;
        FINISHED_MESSAGE.clone_into(message);
    }
}
