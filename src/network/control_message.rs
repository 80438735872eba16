//! The body of `POST /network/control` (Meilisearch Enterprise's `NetworkChange`): a message
//! about a running topology change, from one instance of the network to another — "I have
//! no index to send you" or "I finished importing" — or (1.50) a remote's new status.
//!
//! Invariant: the JSON is Meilisearch's (camelCase, the message tagged by `type`), so either
//! kind of instance reads what the other sends.

use serde::{Deserialize, Serialize};

use super::availability::RemoteStatus;
use super::task_network::Origin;

/// Where `/network/control` is.
pub const NETWORK_CONTROL_PATH: &str = "/network/control";

/// One message about the change `origin` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkControl {
    /// The change: its leader, the leader's task and the network version.
    pub origin: Origin,
    pub message: ControlMessage,
}

/// What the sender says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum ControlMessage {
    /// The instance named `remote` has no index, so it sends no document.
    ExportNoIndexForRemote { remote: String },
    /// The instance named `remote` processed every document sent to it.
    ImportFinishedForRemote { remote: String, successful: bool },
    /// The instance named `remote` is now `status` (Meilisearch 1.50).
    StatusChangeForRemote {
        remote: String,
        status: RemoteStatus,
    },
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    #[test]
    fn the_body_reads_and_writes_as_meilisearchs() {
        let version = Uuid::now_v7();
        let body = json!({
            "origin": {"remoteName": "ms0", "taskUid": 4, "networkVersion": version},
            "message": {"type": "importFinishedForRemote", "remote": "ms2", "successful": true},
        });
        let read: NetworkControl =
            serde_json::from_value(body.clone()).expect("a control message with every field reads");
        assert_eq!(
            read.message,
            ControlMessage::ImportFinishedForRemote {
                remote: "ms2".to_owned(),
                successful: true
            }
        );
        assert_eq!(
            serde_json::to_value(&read).expect("a control message serializes"),
            body
        );
        let none = json!({"origin": body["origin"], "message": {"type": "exportNoIndexForRemote", "remote": "ms1"}});
        let read: NetworkControl =
            serde_json::from_value(none).expect("a control message without optional fields reads");
        assert!(matches!(
            read.message,
            ControlMessage::ExportNoIndexForRemote { .. }
        ));
        let status = json!({"origin": body["origin"], "message": {"type": "statusChangeForRemote", "remote": "ms1", "status": "unavailable"}});
        let read: NetworkControl = serde_json::from_value(status).expect("a status change reads");
        assert_eq!(
            read.message,
            ControlMessage::StatusChangeForRemote {
                remote: "ms1".to_owned(),
                status: RemoteStatus::Unavailable
            }
        );
    }
}
