//! A task's place in a sharded network (the task's `network` field, Meilisearch
//! Enterprise's bookkeeping): on the leader, the task each remote registered for it; on a
//! follower, the leader's task it copies; on an importer, where an import came from.
//!
//! The JSON is Meilisearch's, untagged, with snake_case outer keys (`remote_tasks`,
//! `network_version`, `import_from`, `network_change`) and camelCase inner ones; a dump or
//! another instance reads it back as written.
//!
//! Invariants: a task registered without network headers on an instance without a leader
//! has no `network`; a leader's task starts with empty `remote_tasks` and gets one entry per
//! remote it was forwarded to (a task uid or the error that remote answered), never an entry
//! for the leader itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// A task uid (the task layer names it `TaskUid`; the network layer sits below it).
pub type TaskUid = u32;

/// Who registered the original of a copied task: the leader's name, its task and the
/// network version it was forwarded under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    pub remote_name: String,
    pub task_uid: TaskUid,
    #[serde(default)]
    pub network_version: Uuid,
}

/// What a remote answered when the leader forwarded a task to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTask {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_uid: Option<TaskUid>,
    /// The error object (as the API shows errors) when the remote refused or failed.
    pub error: Option<Value>,
}

impl RemoteTask {
    /// The remote registered the copy as `task_uid`.
    pub fn registered(task_uid: TaskUid) -> RemoteTask {
        RemoteTask {
            task_uid: Some(task_uid),
            error: None,
        }
    }

    /// The remote did not register the copy; `error` is the error object.
    pub fn failed(error: Value) -> RemoteTask {
        RemoteTask {
            task_uid: None,
            error: Some(error),
        }
    }
}

/// Where a document import of a network change comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportData {
    pub remote_name: String,
    pub index_name: Option<String>,
    pub document_count: u64,
}

/// The `network` of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TaskNetwork {
    /// A copy of a task the leader registered.
    Origin { origin: Origin },
    /// A task the leader registered and forwarded to every remote.
    Remotes {
        remote_tasks: BTreeMap<String, RemoteTask>,
        #[serde(default)]
        network_version: Uuid,
    },
    /// A document import sent by another instance during a network change.
    Import {
        import_from: ImportData,
        network_change: Origin,
    },
}

impl TaskNetwork {
    /// The network version the task belongs to.
    pub fn network_version(&self) -> Uuid {
        match self {
            TaskNetwork::Origin { origin } => origin.network_version,
            TaskNetwork::Remotes {
                network_version, ..
            } => *network_version,
            TaskNetwork::Import { network_change, .. } => network_change.network_version,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_three_forms_read_back_as_meilisearch_writes_them() {
        let version = Uuid::now_v7();
        let remotes = json!({
            "remote_tasks": {"ms1": {"taskUid": 3, "error": null}, "ms2": {"error": {"code": "remote_timeout"}}},
            "network_version": version,
        });
        let parsed: TaskNetwork = serde_json::from_value(remotes.clone()).unwrap();
        assert_eq!(parsed.network_version(), version);
        assert_eq!(serde_json::to_value(&parsed).unwrap(), remotes);
        let origin =
            json!({"origin": {"remoteName": "ms0", "taskUid": 7, "networkVersion": version}});
        let parsed: TaskNetwork = serde_json::from_value(origin.clone()).unwrap();
        assert!(matches!(parsed, TaskNetwork::Origin { .. }));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), origin);
        let import = json!({
            "import_from": {"remoteName": "ms1", "indexName": "movies", "documentCount": 10},
            "network_change": {"remoteName": "ms0", "taskUid": 2, "networkVersion": version},
        });
        let parsed: TaskNetwork = serde_json::from_value(import.clone()).unwrap();
        assert!(matches!(parsed, TaskNetwork::Import { .. }));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), import);
    }
}
