//! The leader's export of the dynamic search rules during a network change, as Meilisearch
//! 1.50 sends them: the rules count as one more index of the import protocol (named
//! [`RULES_IMPORT_NAME`]), sent to every other instance of the new network as a clear
//! (`DELETE /dynamic-search-rules`, no document) and then one `PATCH
//! /dynamic-search-rules/{uid}` per rule (one document each, the whole rule), before any
//! index. So an instance that joins the network, or one whose rules drifted, ends the change
//! with the leader's rules.
//!
//! When: only the leader of the new network sends them, and only with the
//! `dynamicSearchRules` feature on there. An instance that refuses the clear (its feature is
//! off) is not counted as sent the rules: its other payloads announce one index fewer, as
//! though the leader had none, so its change still finishes.
//!
//! Invariants: a target is in the answer only once it accepted the clear, and then every
//! rule was accepted after it, in uid order; each call announces the same index count and
//! the same total (the number of rules), so the receiver counts the rules as it counts an
//! index's documents; a call that fails otherwise is sent again until it is taken or the
//! change is canceled (a task key is never set, as in 1.50).

use std::collections::{BTreeMap, BTreeSet};

use super::export::SEND_RETRY_INTERVAL;
use super::{NetworkChangeWork, Stop};
use crate::control::dynamic_search_rule_patch::RulePatch;
use crate::control::dynamic_search_rules::DynamicSearchRule;
use crate::errors::{Code, ResponseError};
use crate::host::export::remote::{ExportTarget, RemoteError};
use crate::network::headers::{ImportMetadata, import_headers};
use crate::network::task_network::{ImportData, Origin};
use crate::network::topology_change::TopologyChange;
use crate::outgoing::{Method, path_segment};

/// The name the rules are imported under (Meilisearch's reserved index of the rules).
pub const RULES_IMPORT_NAME: &str = ".meili_dsr";
/// The route of the rules.
const RULES_PATH: &str = "/dynamic-search-rules";

/// What every call of the rules export carries.
struct RulesExport<'change> {
    origin: &'change Origin,
    export_name: &'change str,
    /// Every index the sender sends, the rules included.
    index_count: u64,
    rules: Vec<DynamicSearchRule>,
}

impl RulesExport<'_> {
    /// The import headers of a call carrying `documents` rules.
    fn headers(&self, documents: u64) -> Vec<(String, String)> {
        let import = ImportData {
            remote_name: self.export_name.to_owned(),
            index_name: Some(RULES_IMPORT_NAME.to_owned()),
            document_count: documents,
        };
        let metadata = ImportMetadata {
            index_count: self.index_count,
            task_key: None,
            total_index_documents: self.rules.len() as u64,
        };
        import_headers(self.origin, &import, &metadata)
    }
}

impl NetworkChangeWork {
    /// Sends the rules to every target when this instance leads the new network, before
    /// the `indexes` indexes; answers the targets that took them.
    pub(super) async fn export_rules(
        &self,
        change: &TopologyChange,
        targets: &BTreeMap<String, ExportTarget>,
        (export_name, origin): (&str, &Origin),
        indexes: u64,
    ) -> Result<BTreeSet<String>, Stop> {
        let leads = change.new.local.is_some() && change.new.leader == change.new.local;
        if !leads || !self.control_plane.features().dynamic_search_rules {
            return Ok(BTreeSet::new());
        }
        let export = RulesExport {
            origin,
            export_name,
            index_count: indexes + 1,
            rules: self
                .control_plane
                .dynamic_search_rules()
                .values()
                .cloned()
                .collect(),
        };
        let mut taken = BTreeSet::new();
        for (name, target) in targets {
            if self.send_rules(&export, name, target).await? {
                taken.insert(name.clone());
            }
        }
        Ok(taken)
    }

    /// Sends `target` the clear and then every rule; answers `false` when it refused the
    /// clear because its rules are off.
    async fn send_rules(
        &self,
        export: &RulesExport<'_>,
        name: &str,
        target: &ExportTarget,
    ) -> Result<bool, Stop> {
        let clear = || -> Result<_, ResponseError> {
            let mut request = target
                .request(Method::Delete, RULES_PATH)
                .map_err(RemoteError::into_task_error)?;
            for (header, value) in export.headers(0) {
                request = request.header(&header, &value);
            }
            Ok(request)
        };
        if !self.send_until_taken(target, name, clear).await? {
            tracing::warn!(remote = %name, "a remote without dynamic search rules is not sent the leader's rules");
            return Ok(false);
        }
        for rule in &export.rules {
            let body = serde_json::to_vec(&RulePatch::replacing(rule).to_json())
                .map_err(ResponseError::internal)?;
            let path = format!("{RULES_PATH}/{}", path_segment(&rule.uid));
            let upsert = || -> Result<_, ResponseError> {
                let mut request = target
                    .request(Method::Patch, &path)
                    .map_err(RemoteError::into_task_error)?;
                for (header, value) in export.headers(1) {
                    request = request.header(&header, &value);
                }
                Ok(request.json(body.clone()))
            };
            if !self.send_until_taken(target, name, upsert).await? {
                return Err(Stop::Failed(ResponseError::internal(format!(
                    "remote `{name}` turned its dynamic search rules off during a network change"
                ))));
            }
        }
        Ok(true)
    }

    /// Sends the request `request` makes until `target` takes it (`true`) or refuses it
    /// because the rules are off there (`false`); anything else is tried again.
    async fn send_until_taken(
        &self,
        target: &ExportTarget,
        name: &str,
        request: impl Fn() -> Result<crate::outgoing::OutgoingRequest, ResponseError>,
    ) -> Result<bool, Stop> {
        loop {
            if self.interrupted() {
                return Err(Stop::Interrupted);
            }
            match target.send(request()?).await {
                Ok(_) => return Ok(true),
                Err(error) if error.remote_code() == Some(Code::FeatureNotEnabled.name()) => {
                    return Ok(false);
                }
                Err(error) => {
                    tracing::warn!(remote = %name, %error, "a network change sends the dynamic search rules again");
                    crate::runtime::sleep(SEND_RETRY_INTERVAL).await;
                }
            }
        }
    }
}
