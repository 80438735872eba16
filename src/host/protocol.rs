//! The shard protocol: one request type per command, each naming its answer type, so the
//! compiler pairs every command with its answer and adding a command touches one request
//! type and its handler (the `impl` beside it).
//!
//! A [`ShardRequest`] runs on the core that owns the shard, with that core's [`ShardHost`];
//! the coordinator carries it there (`crate::coordinator::Coordinator::ask_shard`), except a
//! request that only reads a snapshot ([`ShardRequest::READS_SNAPSHOT`]), which the
//! coordinator may run where it arrives. A
//! [`ShardRead`] is the common case of a request that only reads the shard's last commit:
//! [`ShardRequest`] comes with it through [`shard_reads!`].
//!
//! Invariant: a request whose [`ShardRequest::IS_WRITE`] is true is part of the write path
//! (a batch, a settings rebuild, an index removal, maintenance) and runs in the indexing
//! latency class; reads never see a prepared batch.

use std::future::Future;

use shards::shard::ShardSnapshot;

use super::{ShardAddress, ShardHost};
use crate::errors::ResponseError;

/// A command for one shard, answered with [`Self::Answer`].
pub trait ShardRequest: Send + 'static {
    /// What the shard answers.
    type Answer: Send + 'static;
    /// Whether the command is part of the write path (see the module doc).
    const IS_WRITE: bool;
    /// Whether the command only reads a snapshot of the shard's last commit (and the
    /// registry every core shares), so any core may run it once the owner opened the shard
    /// (see [`super::registry`]). Such a command uses no state of the owner core.
    const READS_SNAPSHOT: bool = false;
    /// Runs the command on the shard at `address`, on its owner core.
    fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> impl Future<Output = Result<Self::Answer, ResponseError>>;
}

/// A command that reads the last commit of a shard.
pub trait ShardRead: Send + 'static {
    /// What the shard answers.
    type Answer: Send + 'static;
    /// Answers from `snapshot`.
    fn read(self, snapshot: &ShardSnapshot) -> Result<Self::Answer, ResponseError>;
}

/// Makes each listed [`ShardRead`] a [`ShardRequest`] that reads a snapshot of the shard's
/// last commit.
macro_rules! shard_reads {
    ($($read:ty),* $(,)?) => {
        $(
            impl $crate::host::protocol::ShardRequest for $read {
                type Answer = <$read as $crate::host::protocol::ShardRead>::Answer;
                const IS_WRITE: bool = false;
                const READS_SNAPSHOT: bool = true;

                async fn run(
                    self,
                    host: &$crate::host::ShardHost,
                    address: $crate::host::ShardAddress,
                ) -> Result<Self::Answer, $crate::errors::ResponseError> {
                    let snapshot = host.snapshot(&address)?;
                    $crate::host::protocol::ShardRead::read(self, &snapshot)
                }
            }
        )*
    };
}
pub(crate) use shard_reads;
