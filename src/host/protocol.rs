//! The shard protocol: one request type per command, each naming its answer type, so the
//! compiler pairs every command with its answer and adding a command touches one request
//! type and its handler (the `impl` beside it).
//!
//! A [`ShardRequest`] runs on the core that owns the shard, with that core's [`ShardHost`];
//! the coordinator carries it there (`crate::coordinator::Coordinator::ask_shard`). A
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
