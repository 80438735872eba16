//! The `details.message` of a `networkTopologyChange` task, word for word as Meilisearch
//! Enterprise 1.41 writes it for each phase (the phase the change moves into, since the
//! message is set after each step).
//!
//! Invariant: the text depends only on the change's state, so every instance — and another
//! instance reading it over `GET /tasks` — reads the same progress from the same state.

use super::topology_change::{
    ChangePhase, ImporterReport, IndexImport, SenderProgress, TopologyChange,
};

/// The message of a change that waits for the tasks registered before it.
pub const WAITING_FOR_OLDER_TASKS_MESSAGE: &str =
    "Waiting for tasks enqueued before the network change to finish processing";
/// The message of a change that sends its documents.
pub const EXPORTING_MESSAGE: &str = "Exporting documents";
/// The message once every instance imported what it must hold.
pub const DELETING_MESSAGE: &str = "Deleting documents in shards that are no longer owned";
/// The message of a finished change.
pub const FINISHED_MESSAGE: &str = "Finished";

/// The message of `change` in its phase.
pub fn details_message(change: &TopologyChange) -> String {
    match change.phase {
        ChangePhase::WaitingForOlderTasks => WAITING_FOR_OLDER_TASKS_MESSAGE.to_owned(),
        ChangePhase::ExportingDocuments => EXPORTING_MESSAGE.to_owned(),
        ChangePhase::ImportingDocuments => importing_message(change),
        ChangePhase::WaitingForOthers => waiting_for_others_message(change),
        ChangePhase::DeletingDocuments => DELETING_MESSAGE.to_owned(),
        ChangePhase::Finished => FINISHED_MESSAGE.to_owned(),
    }
}

/// Figures of the senders, as the importing message counts them.
#[derive(Default)]
struct SenderFigures<'change> {
    finished: usize,
    first_waiting: Option<&'change str>,
    other_waiting: usize,
    first_ongoing: Option<&'change str>,
    other_ongoing: usize,
    index_count: u64,
    processed: u64,
    missing: u64,
    total: u64,
}

impl<'change> SenderFigures<'change> {
    fn count(&mut self, name: &'change str, progress: &SenderProgress) {
        match progress {
            SenderProgress::WaitingForFirstPayload => match self.first_waiting {
                None => self.first_waiting = Some(name),
                Some(_) => self.other_waiting += 1,
            },
            SenderProgress::Ongoing {
                indexes,
                index_count,
            } => {
                match self.first_ongoing {
                    None => {
                        self.index_count = *index_count;
                        self.first_ongoing = Some(name);
                    }
                    Some(_) => self.other_ongoing += 1,
                }
                for import in indexes.values() {
                    self.count_index(import);
                }
            }
            SenderProgress::Finished {
                index_count,
                documents,
            } => {
                self.finished += 1;
                self.index_count = *index_count;
                self.total += documents;
                self.processed += documents;
            }
        }
    }

    fn count_index(&mut self, import: &IndexImport) {
        match import {
            IndexImport::Ongoing {
                total,
                received,
                processed,
                ..
            } => {
                self.total += total;
                self.processed += processed;
                self.missing += total.saturating_sub(*received);
            }
            IndexImport::Finished { total } => {
                self.total += total;
                self.processed += total;
            }
        }
    }
}

fn importing_message(change: &TopologyChange) -> String {
    let mut figures = SenderFigures::default();
    for (name, progress) in change.senders() {
        figures.count(name, progress);
    }
    let waiting = match figures.first_waiting {
        Some(first) => format!(
            ", waiting on first task from `{first}`{}",
            others(figures.other_waiting, " and {} other remotes")
        ),
        None => String::new(),
    };
    let ongoing = match figures.first_ongoing {
        Some(first) => format!(
            ", awaiting {} and processed {} out of {} documents in {} indexes from `{first}`{}",
            figures.missing,
            figures.processed,
            figures.total,
            figures.index_count,
            others(figures.other_ongoing, " and {} other remotes")
        ),
        None => String::new(),
    };
    format!(
        "Importing documents from {} remotes{waiting}{ongoing}, {} remotes finished processing",
        change.senders().len(),
        figures.finished
    )
}

fn waiting_for_others_message(change: &TopologyChange) -> String {
    let mut first_ongoing = None;
    let mut other_ongoing = 0;
    let mut finished = 0;
    for (name, report) in change.importers() {
        match report {
            ImporterReport::Ongoing if first_ongoing.is_none() => first_ongoing = Some(name),
            ImporterReport::Ongoing => other_ongoing += 1,
            ImporterReport::Finished { .. } => finished += 1,
        }
    }
    let Some(first) = first_ongoing else {
        return DELETING_MESSAGE.to_owned();
    };
    let others = match other_ongoing {
        0 => " to finish importing".to_owned(),
        count => format!(" and {count} other remote(s) to finish importing"),
    };
    let finished = match finished {
        0 => String::new(),
        count => format!(", {count} remote(s) finished"),
    };
    format!("Waiting for `{first}`{others}{finished}")
}

/// `template` with `{}` replaced by `count`, or nothing when `count` is 0.
fn others(count: usize, template: &str) -> String {
    if count == 0 {
        String::new()
    } else {
        template.replace("{}", &count.to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::network::topology_change::ReceivedPayload;
    use crate::network::{Network, Remote, Shard};

    fn network(local: &str, names: &[&str]) -> Network {
        let mut network = Network {
            local: Some(local.to_owned()),
            leader: Some("ms0".to_owned()),
            ..Network::default()
        };
        for name in names {
            network
                .remotes
                .insert((*name).to_owned(), Remote::default());
            let remotes = BTreeSet::from([(*name).to_owned()]);
            network.shards.insert((*name).to_owned(), Shard { remotes });
        }
        network
    }

    #[test]
    fn the_messages_are_meilisearchs() {
        let mut change = TopologyChange::new(
            network("ms0", &["ms0", "ms1"]),
            network("ms0", &["ms0", "ms1", "ms2"]),
        );
        assert_eq!(details_message(&change), WAITING_FOR_OLDER_TASKS_MESSAGE);
        change.advance();
        change.advance();
        assert_eq!(
            details_message(&change),
            "Importing documents from 2 remotes, waiting on first task from `ms1` and 1 other remotes, 0 remotes finished processing"
        );
        let payload = ReceivedPayload {
            remote: "ms1",
            index: Some("books"),
            key: Some(3),
            documents: 4,
            index_count: 1,
            total_index_documents: 10,
        };
        change
            .receive(payload)
            .expect("a counted import payload is accepted");
        change.process("ms1", "books", 4);
        assert_eq!(
            details_message(&change),
            "Importing documents from 2 remotes, waiting on first task from `ms2`, awaiting 6 and processed 4 out of 10 documents in 1 indexes from `ms1`, 0 remotes finished processing"
        );
        change.phase = ChangePhase::WaitingForOthers;
        assert_eq!(
            details_message(&change),
            "Waiting for `ms1` and 1 other remote(s) to finish importing"
        );
        change
            .receive_import_finished("ms1", true)
            .expect("a sender known to the change may finish");
        assert_eq!(
            details_message(&change),
            "Waiting for `ms2` to finish importing, 1 remote(s) finished"
        );
        change
            .receive_import_finished("ms2", true)
            .expect("a sender known to the change may finish");
        assert_eq!(details_message(&change), DELETING_MESSAGE);
    }
}
