//! One instance's state of a network topology change, as Meilisearch Enterprise 1.41 keeps
//! it: the phase the change is in, what this instance has imported from each instance that
//! sends it documents, which instances told it they finished importing, and the networks
//! before and after.
//!
//! Phases, in order (each instance runs its own change):
//! 1. [`ChangePhase::WaitingForOlderTasks`]: the writes registered before the change run
//!    first, under the old network;
//! 2. [`ChangePhase::ExportingDocuments`]: this instance sends every other instance of the
//!    new network the documents it must now hold (the import protocol of
//!    [`super::headers`]), or tells it that it has no index;
//! 3. [`ChangePhase::ImportingDocuments`]: the payloads the others sent are processed,
//!    counted per sender and index, until every sender is finished;
//! 4. [`ChangePhase::WaitingForOthers`]: this instance tells everyone it finished importing
//!    and waits until every instance of the new network told it the same;
//! 5. [`ChangePhase::DeletingDocuments`]: every new owner holds its documents, so searches
//!    use the new shards, and the documents this instance no longer owns are deleted;
//! 6. [`ChangePhase::Finished`].
//!
//! A sender is finished once it announced how many indexes it sends, every one of them was
//! seen, and each had at least as many documents processed as the sender announced for it
//! (a sender without index is finished at once).
//!
//! Invariants: the state only moves forward; a payload's key is counted once per sender and
//! index (a second one is refused, so a sender's retry is never counted twice); the
//! messages are Meilisearch's, word for word, so both kinds of instance read each other's
//! progress the same way.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::model::Network;

/// Where a change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangePhase {
    WaitingForOlderTasks,
    ExportingDocuments,
    ImportingDocuments,
    WaitingForOthers,
    DeletingDocuments,
    Finished,
}

impl ChangePhase {
    /// The name of the phase in a batch's progress (Meilisearch's step names).
    pub fn progress_name(self) -> &'static str {
        match self {
            ChangePhase::WaitingForOlderTasks => "waiting for older tasks",
            ChangePhase::ExportingDocuments => "exporting documents",
            ChangePhase::ImportingDocuments => "importing documents",
            ChangePhase::WaitingForOthers => "waiting for others",
            ChangePhase::DeletingDocuments => "deleting documents",
            ChangePhase::Finished => "finished",
        }
    }
}

/// What this instance imported from one sender.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SenderProgress {
    /// Nothing came yet: the first payload says how many indexes the sender sends.
    #[default]
    WaitingForFirstPayload,
    Ongoing {
        indexes: BTreeMap<String, IndexImport>,
        index_count: u64,
    },
    Finished {
        index_count: u64,
        documents: u64,
    },
}

/// What this instance imported of one index from one sender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IndexImport {
    Ongoing {
        /// Documents the sender sends for the index.
        total: u64,
        received: u64,
        processed: u64,
        /// The keys of the payloads received.
        keys: BTreeSet<u64>,
    },
    Finished {
        total: u64,
    },
}

impl IndexImport {
    fn total(&self) -> u64 {
        match self {
            IndexImport::Ongoing { total, .. } | IndexImport::Finished { total } => *total,
        }
    }

    fn is_finished(&self) -> bool {
        matches!(self, IndexImport::Finished { .. })
    }
}

/// What one instance of the new network reported about its imports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ImporterReport {
    #[default]
    Ongoing,
    Finished {
        successful: bool,
    },
}

/// One payload of an import, as its headers describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedPayload<'payload> {
    pub remote: &'payload str,
    pub index: Option<&'payload str>,
    pub key: Option<u64>,
    pub documents: u64,
    pub index_count: u64,
    pub total_index_documents: u64,
}

/// Why an import was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiveError {
    /// The sender is no instance this one imports from.
    UnknownRemote(String),
    /// A payload with this key was already received from the sender for the index.
    AlreadyReceived(u64),
}

/// How many importers reported, and whether one failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportersReport {
    pub total: usize,
    pub finished: usize,
    pub has_error: bool,
}

impl ImportersReport {
    pub fn all_finished(&self) -> bool {
        self.total == self.finished
    }

    pub fn all_successful(&self) -> bool {
        self.all_finished() && !self.has_error
    }
}

/// One instance's state of a topology change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyChange {
    pub phase: ChangePhase,
    /// The instances this one imports from.
    senders: BTreeMap<String, SenderProgress>,
    /// The instances that must tell this one they finished importing.
    importers: BTreeMap<String, ImporterReport>,
    pub old: Network,
    pub new: Network,
    pub moved_documents: u64,
}

impl TopologyChange {
    /// The change from `old` to `new` as the instance named `old.local` before and
    /// `new.local` after sees it.
    pub fn new(old: Network, new: Network) -> TopologyChange {
        let import_name = new.local.clone();
        let export_name = old.local.clone().or_else(|| import_name.clone());
        let senders = match &import_name {
            Some(_) => old
                .remotes
                .keys()
                .chain(new.remotes.keys())
                .filter(|name| Some(name.as_str()) != export_name.as_deref())
                .map(|name| (name.clone(), SenderProgress::default()))
                .collect(),
            None => BTreeMap::new(),
        };
        let importers = match &export_name {
            Some(_) => new
                .remotes
                .keys()
                .filter(|name| Some(name.as_str()) != import_name.as_deref())
                .map(|name| (name.clone(), ImporterReport::default()))
                .collect(),
            None => BTreeMap::new(),
        };
        TopologyChange {
            phase: ChangePhase::WaitingForOlderTasks,
            senders,
            importers,
            old,
            new,
            moved_documents: 0,
        }
    }

    /// The name this instance imports under (`None`: the change removes it).
    pub fn import_name(&self) -> Option<&str> {
        self.new.local.as_deref()
    }

    /// The name this instance sends under: its name before the change, or its new one.
    pub fn export_name(&self) -> Option<&str> {
        self.old.local.as_deref().or_else(|| self.import_name())
    }

    /// Every instance of the old or the new network but this one (by either of its names),
    /// each once, with its newest address.
    pub fn peers(&self) -> BTreeMap<&str, &super::Remote> {
        let mut peers = BTreeMap::new();
        for (name, remote) in self.old.remotes.iter().chain(self.new.remotes.iter()) {
            let is_self = Some(name.as_str()) == self.import_name()
                || Some(name.as_str()) == self.export_name();
            if !is_self {
                peers.insert(name.as_str(), remote);
            }
        }
        peers
    }

    /// The instances this one sends documents to: the new network but itself.
    pub fn export_targets(&self) -> impl Iterator<Item = (&str, &super::Remote)> {
        self.new
            .remotes
            .iter()
            .filter(move |(name, _)| Some(name.as_str()) != self.import_name())
            .map(|(name, remote)| (name.as_str(), remote))
    }

    /// The instances told that this one finished importing: the old and the new network
    /// but itself (nobody, when the change removes this instance).
    pub fn import_finished_recipients(&self) -> BTreeMap<&str, &super::Remote> {
        if self.import_name().is_none() {
            return BTreeMap::new();
        }
        let mut recipients = BTreeMap::new();
        for (name, remote) in self.old.remotes.iter().chain(self.new.remotes.iter()) {
            if Some(name.as_str()) != self.export_name() {
                recipients.insert(name.as_str(), remote);
            }
        }
        recipients
    }

    /// Records a payload as it is registered (before it is processed).
    pub fn receive(&mut self, payload: ReceivedPayload<'_>) -> Result<(), ReceiveError> {
        let sender = self
            .senders
            .get_mut(payload.remote)
            .ok_or_else(|| ReceiveError::UnknownRemote(payload.remote.to_owned()))?;
        let progress = std::mem::take(sender);
        let received = receive_into(progress.clone(), payload);
        match received {
            Ok(next) => {
                *sender = next;
                Ok(())
            }
            Err(error) => {
                *sender = progress;
                Err(error)
            }
        }
    }

    /// Records that `remote` finished importing; whether that changed anything.
    pub fn receive_import_finished(
        &mut self,
        remote: &str,
        successful: bool,
    ) -> Result<bool, ReceiveError> {
        let report = self
            .importers
            .get_mut(remote)
            .ok_or_else(|| ReceiveError::UnknownRemote(remote.to_owned()))?;
        let changed = *report == ImporterReport::Ongoing;
        *report = ImporterReport::Finished { successful };
        Ok(changed)
    }

    /// Records that `documents` of `index` imported from `remote` were processed.
    pub fn process(&mut self, remote: &str, index: &str, documents: u64) {
        let Some(sender) = self.senders.get_mut(remote) else {
            return;
        };
        let progress = std::mem::take(sender);
        *sender = process_into(progress, index, documents);
    }

    /// Whether every sender is finished.
    pub fn is_import_finished(&self) -> bool {
        self.senders
            .values()
            .all(|sender| matches!(sender, SenderProgress::Finished { .. }))
    }

    /// What the importers reported so far.
    pub fn importers_report(&self) -> ImportersReport {
        let mut report = ImportersReport {
            total: self.importers.len(),
            finished: 0,
            has_error: false,
        };
        for importer in self.importers.values() {
            if let ImporterReport::Finished { successful } = importer {
                report.finished += 1;
                report.has_error |= !successful;
            }
        }
        report
    }

    /// Moves to the next phase when the current one is over.
    pub fn advance(&mut self) {
        self.phase = match self.phase {
            ChangePhase::WaitingForOlderTasks => ChangePhase::ExportingDocuments,
            ChangePhase::ExportingDocuments | ChangePhase::ImportingDocuments => {
                if self.is_import_finished() {
                    ChangePhase::WaitingForOthers
                } else {
                    ChangePhase::ImportingDocuments
                }
            }
            ChangePhase::WaitingForOthers => {
                if self.importers_report().all_finished() {
                    ChangePhase::DeletingDocuments
                } else {
                    ChangePhase::WaitingForOthers
                }
            }
            ChangePhase::DeletingDocuments | ChangePhase::Finished => ChangePhase::Finished,
        };
    }

    /// Whether searches use the new network's shards: from the moment every instance of
    /// the new network imported what it must hold.
    pub fn searches_use_new_shards(&self) -> bool {
        self.phase >= ChangePhase::DeletingDocuments
    }

    /// The sender states (for the messages).
    pub(super) fn senders(&self) -> &BTreeMap<String, SenderProgress> {
        &self.senders
    }

    /// The importer reports (for the messages).
    pub(super) fn importers(&self) -> &BTreeMap<String, ImporterReport> {
        &self.importers
    }
}

/// `progress` once `payload` is received.
fn receive_into(
    progress: SenderProgress,
    payload: ReceivedPayload<'_>,
) -> Result<SenderProgress, ReceiveError> {
    match progress {
        SenderProgress::WaitingForFirstPayload if payload.index_count == 0 => {
            Ok(SenderProgress::Finished {
                index_count: 0,
                documents: 0,
            })
        }
        SenderProgress::WaitingForFirstPayload => match payload.index {
            Some(index) => {
                let mut indexes = BTreeMap::new();
                indexes.insert(index.to_owned(), first_index_import(&payload));
                Ok(SenderProgress::Ongoing {
                    indexes,
                    index_count: payload.index_count,
                })
            }
            None => Ok(SenderProgress::WaitingForFirstPayload),
        },
        SenderProgress::Ongoing {
            mut indexes,
            index_count,
        } => {
            if let Some(index) = payload.index {
                let next = match indexes.remove(index) {
                    Some(import) => receive_in_index(import, &payload)?,
                    None => first_index_import(&payload),
                };
                indexes.insert(index.to_owned(), next);
            }
            Ok(SenderProgress::Ongoing {
                indexes,
                index_count,
            })
        }
        finished @ SenderProgress::Finished { .. } => Ok(finished),
    }
}

fn first_index_import(payload: &ReceivedPayload<'_>) -> IndexImport {
    IndexImport::Ongoing {
        total: payload.total_index_documents,
        received: payload.documents,
        processed: 0,
        keys: payload.key.into_iter().collect(),
    }
}

fn receive_in_index(
    import: IndexImport,
    payload: &ReceivedPayload<'_>,
) -> Result<IndexImport, ReceiveError> {
    match import {
        IndexImport::Ongoing {
            total,
            received,
            processed,
            mut keys,
        } => {
            if let Some(key) = payload.key
                && !keys.insert(key)
            {
                return Err(ReceiveError::AlreadyReceived(key));
            }
            Ok(IndexImport::Ongoing {
                total,
                received: received + payload.documents,
                processed,
                keys,
            })
        }
        finished @ IndexImport::Finished { .. } => Ok(finished),
    }
}

/// `progress` once `documents` of `index` were processed.
fn process_into(progress: SenderProgress, index: &str, documents: u64) -> SenderProgress {
    let SenderProgress::Ongoing {
        mut indexes,
        index_count,
    } = progress
    else {
        return progress;
    };
    if let Some(import) = indexes.remove(index) {
        let next = match import {
            IndexImport::Ongoing {
                total,
                received,
                processed,
                keys,
            } => {
                let processed = processed + documents;
                if processed >= total {
                    IndexImport::Finished { total }
                } else {
                    IndexImport::Ongoing {
                        total,
                        received,
                        processed,
                        keys,
                    }
                }
            }
            finished @ IndexImport::Finished { .. } => finished,
        };
        indexes.insert(index.to_owned(), next);
    }
    let every_index_seen = indexes.len() as u64 == index_count;
    if every_index_seen && indexes.values().all(IndexImport::is_finished) {
        let documents = indexes.values().map(IndexImport::total).sum();
        SenderProgress::Finished {
            index_count,
            documents,
        }
    } else {
        SenderProgress::Ongoing {
            indexes,
            index_count,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::network::{Remote, Shard};

    fn network(local: Option<&str>, names: &[&str]) -> Network {
        let mut network = Network {
            local: local.map(str::to_owned),
            leader: Some("ms0".to_owned()),
            ..Network::default()
        };
        for name in names {
            network
                .remotes
                .insert((*name).to_owned(), Remote::default());
            let remotes = BTreeSet::from([(*name).to_owned()]);
            network
                .shards
                .insert(format!("s-{name}"), Shard { remotes });
        }
        network
    }

    fn payload<'a>(remote: &'a str, key: u64, documents: u64, total: u64) -> ReceivedPayload<'a> {
        ReceivedPayload {
            remote,
            index: Some("books"),
            key: Some(key),
            documents,
            index_count: 1,
            total_index_documents: total,
        }
    }

    #[test]
    fn a_sender_is_finished_once_every_announced_document_is_processed() {
        let mut change = TopologyChange::new(
            network(Some("ms0"), &["ms0", "ms1"]),
            network(Some("ms0"), &["ms0", "ms1", "ms2"]),
        );
        assert_eq!(change.senders.len(), 2, "ms1 and ms2 send to ms0");
        change
            .receive(payload("ms1", 1, 10, 15))
            .expect("a counted import payload is accepted");
        change
            .receive(payload("ms1", 2, 5, 15))
            .expect("a counted import payload is accepted");
        assert_eq!(
            change.receive(payload("ms1", 2, 5, 15)),
            Err(ReceiveError::AlreadyReceived(2))
        );
        change.process("ms1", "books", 10);
        assert!(!change.is_import_finished());
        change.process("ms1", "books", 5);
        let no_index = ReceivedPayload {
            remote: "ms2",
            index: None,
            key: None,
            documents: 0,
            index_count: 0,
            total_index_documents: 0,
        };
        change
            .receive(no_index)
            .expect("a payload without an index is accepted");
        assert!(change.is_import_finished());
        assert_eq!(
            change.receive(payload("ms9", 1, 1, 1)),
            Err(ReceiveError::UnknownRemote("ms9".to_owned()))
        );
    }

    #[test]
    fn the_phases_follow_imports_then_the_importers_reports() {
        let mut change = TopologyChange::new(
            network(Some("ms0"), &["ms0"]),
            network(Some("ms0"), &["ms0", "ms1"]),
        );
        change.advance();
        assert_eq!(change.phase, ChangePhase::ExportingDocuments);
        change.advance();
        assert_eq!(change.phase, ChangePhase::ImportingDocuments);
        let empty = ReceivedPayload {
            remote: "ms1",
            index: None,
            key: None,
            documents: 0,
            index_count: 0,
            total_index_documents: 0,
        };
        change.receive(empty).expect("an empty payload is accepted");
        change.advance();
        assert_eq!(change.phase, ChangePhase::WaitingForOthers);
        change.advance();
        assert_eq!(change.phase, ChangePhase::WaitingForOthers);
        assert!(!change.searches_use_new_shards());
        assert!(
            change
                .receive_import_finished("ms1", true)
                .expect("a sender known to the change may finish")
        );
        assert!(
            !change
                .receive_import_finished("ms1", true)
                .expect("a sender known to the change may finish")
        );
        change.advance();
        assert_eq!(change.phase, ChangePhase::DeletingDocuments);
        assert!(change.searches_use_new_shards());
        change.advance();
        assert_eq!(change.phase, ChangePhase::Finished);
    }

    #[test]
    fn a_removed_instance_imports_nothing_and_waits_for_every_new_owner() {
        let change = TopologyChange::new(
            network(Some("ms2"), &["ms0", "ms1", "ms2"]),
            network(None, &["ms0", "ms1"]),
        );
        assert!(change.is_import_finished());
        assert_eq!(change.importers_report().total, 2);
        assert_eq!(change.export_name(), Some("ms2"));
        assert!(change.import_finished_recipients().is_empty());
        let targets: Vec<&str> = change.export_targets().map(|(name, _)| name).collect();
        assert_eq!(targets, ["ms0", "ms1"]);
    }
}
