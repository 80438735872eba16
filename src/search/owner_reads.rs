//! One read of a network shard asked of its owners in turn (the order of
//! [`super::shard_partition::shard_copies`]: available owners first): the first answer, or
//! every owner's failure. Each failure and each answer is recorded in the network's
//! availability ([`crate::network::availability`]).
//!
//! Invariant: an owner is asked at most once per read, and no owner is asked once one
//! answered.

use std::collections::BTreeMap;

use serde_json::Value;

use super::remote::{NetworkContext, record_failure};
use crate::errors::ResponseError;
use crate::network::remote_call::{IndexRead, remote_index_read};

/// Asks `owners` in turn for `read` of `index_uid` with `body`; `parse` turns an answer into
/// what the caller merges (a failure to parse counts as the owner's failure).
pub async fn ask_owners<T>(
    index_uid: &str,
    read: IndexRead,
    owners: &[String],
    body: &Value,
    network: &NetworkContext,
    parse: impl Fn(Value) -> Result<T, ResponseError>,
) -> Result<T, BTreeMap<String, ResponseError>> {
    let mut failures = BTreeMap::new();
    let Some(client) = crate::outgoing::shared::core_client() else {
        if let Some(owner) = owners.first() {
            let error = ResponseError::internal("a remote read outside of a core");
            failures.insert(owner.clone(), error);
        }
        return Err(failures);
    };
    for owner in owners {
        let Some(remote) = network.network.remotes.get(owner) else {
            continue;
        };
        let answer = remote_index_read(&client, remote, index_uid, read, body)
            .await
            .and_then(&parse);
        match answer {
            Ok(answer) => {
                network.availability.answered(owner);
                return Ok(answer);
            }
            Err(error) => {
                record_failure(&network.availability, owner, &error);
                failures.insert(owner.clone(), error);
            }
        }
    }
    Err(failures)
}
