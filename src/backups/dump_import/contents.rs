//! Reading an unpacked dump: every record of Meilisearch's dump format V6 parsed and
//! checked before anything is imported, so a damaged or foreign dump stops the start with a
//! message naming the file and what is wrong, before any data directory exists.
//!
//! What is read: `metadata.json` (the format version decides: V6 is read, older versions
//! and newer ones are refused with what to do), the instance uid, the keys, the features,
//! the network (its `self` and `leader` dropped, as Meilisearch does: a dump is usually
//! imported on another machine), the webhooks, the dynamic search rules, the chat
//! workspaces, the task and batch queues and every index's metadata and settings. Documents are read by the indexing itself.
//!
//! Invariant: every file a V6 dump must hold (`metadata.json`, `keys.jsonl`,
//! `tasks/queue.jsonl`) is present; the optional ones (instance uid, features, network,
//! webhooks, dynamic search rules, chat workspaces, batches, indexes) default to empty when
//! absent.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::auth::Key;
use crate::control::chat_workspaces::{ChatCompletionSettings, ChatWorkspaces};
use crate::control::dynamic_search_rules::{DynamicSearchRule, DynamicSearchRules};
use crate::control::features::RuntimeFeatures;
use crate::control::legacy_dynamic_search_rules::StoredRule;
use crate::control::webhooks::Webhook;
use crate::network::model::{Network, Remote, Shard};
use crate::settings::decode::{SettingsFeatures, decode_settings_body, validate_update};
use crate::tasks::dump::batch_records::BatchRecord;
use crate::tasks::dump::key_records::{KeyRecord, key_from_record};
use crate::tasks::dump::layout::{self, DumpMetadata, DumpVersion, IndexMetadata};
use crate::tasks::dump::task_records::{TaskRecord, task_from_record};
use crate::tasks::model::{KindWithContent, Status, Task};

/// A task of the dump, and where its documents are when it is an enqueued document
/// addition that has them.
pub struct DumpedTask {
    pub task: Task,
    pub update_file: Option<PathBuf>,
}

/// One index of the dump.
pub struct DumpedIndex {
    pub metadata: IndexMetadata,
    /// The settings, checked, as a settings update carries them.
    pub settings: Map<String, Value>,
    /// `documents.jsonl`, when present.
    pub documents: Option<PathBuf>,
}

/// Everything a dump holds but the documents.
pub struct DumpContents {
    pub metadata: DumpMetadata,
    pub instance_uid: Option<Uuid>,
    pub keys: Vec<Key>,
    pub features: RuntimeFeatures,
    pub network: Network,
    pub webhooks: BTreeMap<Uuid, Webhook>,
    pub dynamic_search_rules: DynamicSearchRules,
    pub chat_workspaces: ChatWorkspaces,
    pub tasks: Vec<DumpedTask>,
    pub batches: Vec<BatchRecord>,
    pub indexes: Vec<DumpedIndex>,
}

/// Reads the dump unpacked at `root`; the error names the file and the problem.
pub fn read_contents(root: &Path) -> Result<DumpContents, String> {
    let metadata: DumpMetadata = read_json(&root.join(layout::METADATA_FILE))?;
    check_version(&metadata)?;
    let instance_uid = match fs::read_to_string(root.join(layout::INSTANCE_UID_FILE)) {
        Ok(text) => Some(
            Uuid::parse_str(text.trim())
                .map_err(|error| format!("{}: {error}", layout::INSTANCE_UID_FILE))?,
        ),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(format!("{}: {error}", layout::INSTANCE_UID_FILE)),
    };
    let keys = read_lines::<KeyRecord>(&root.join(layout::KEYS_FILE))?
        .into_iter()
        .map(key_from_record)
        .collect::<Result<_, _>>()
        .map_err(|error| format!("{}: {error}", layout::KEYS_FILE))?;
    Ok(DumpContents {
        metadata,
        instance_uid,
        keys,
        features: read_optional_json(&root.join(layout::FEATURES_FILE))?.unwrap_or_default(),
        network: read_network(root)?,
        webhooks: read_webhooks(root)?,
        dynamic_search_rules: read_dynamic_search_rules(root)?,
        chat_workspaces: read_chat_workspaces(root)?,
        tasks: read_tasks(root)?,
        batches: read_batches(root)?,
        indexes: read_indexes(root)?,
    })
}

/// Refuses the dumps of other format versions, saying what to do.
fn check_version(metadata: &DumpMetadata) -> Result<(), String> {
    match DumpVersion::parse(&metadata.dump_version) {
        DumpVersion::V6 => Ok(()),
        DumpVersion::Older(version) => Err(format!(
            "the dump is in format V{version} (written by Meilisearch {} before 1.0), which \
             coresearch does not read: it reads format V6 (Meilisearch 1.x). Import the dump \
             into Meilisearch 1.x, create a new dump there, and import that one.",
            metadata.db_version
        )),
        DumpVersion::Newer(version) => Err(format!(
            "the dump is in format `{version}` (written by version {}), newer than the \
             format V6 this coresearch {} reads. Use a coresearch that reads it.",
            metadata.db_version,
            env!("CARGO_PKG_VERSION")
        )),
    }
}

/// `network.json` as Meilisearch writes it (any field may be absent in older dumps).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NetworkRecord {
    #[serde(default)]
    remotes: BTreeMap<String, RemoteRecord>,
    #[serde(default)]
    shards: BTreeMap<String, Shard>,
    #[serde(default)]
    version: Option<Uuid>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteRecord {
    url: String,
    #[serde(default)]
    search_api_key: Option<String>,
    #[serde(default)]
    write_api_key: Option<String>,
}

fn read_network(root: &Path) -> Result<Network, String> {
    let Some(record) = read_optional_json::<NetworkRecord>(&root.join(layout::NETWORK_FILE))?
    else {
        return Ok(Network::default());
    };
    Ok(Network {
        local: None,
        remotes: record
            .remotes
            .into_iter()
            .map(|(name, remote)| {
                let remote = Remote {
                    url: remote.url,
                    search_api_key: remote.search_api_key,
                    write_api_key: remote.write_api_key,
                };
                (name, remote)
            })
            .collect(),
        shards: record.shards,
        leader: None,
        version: record.version.unwrap_or_else(Uuid::nil),
    })
}

#[derive(Deserialize)]
struct WebhooksRecord {
    #[serde(default)]
    webhooks: BTreeMap<Uuid, Webhook>,
}

fn read_webhooks(root: &Path) -> Result<BTreeMap<Uuid, Webhook>, String> {
    let record: Option<WebhooksRecord> = read_optional_json(&root.join(layout::WEBHOOKS_FILE))?;
    Ok(record.map(|record| record.webhooks).unwrap_or_default())
}

/// Every `*.json` file of `dynamic-search-rules/` (absent in dumps older than the rules): one
/// rule each, in the 1.50 or the 1.41 form, keyed by its uid. A 1.41 rule whose conditions
/// can never hold together is left out with a warning, as Meilisearch's upgrade leaves it.
fn read_dynamic_search_rules(root: &Path) -> Result<DynamicSearchRules, String> {
    let mut rules = BTreeMap::new();
    for (path, _) in json_files(root, layout::DYNAMIC_SEARCH_RULES_DIRECTORY)? {
        let stored: StoredRule = read_json(&path)?;
        match DynamicSearchRule::try_from(stored) {
            Ok(rule) => {
                rules.insert(rule.uid.clone(), rule);
            }
            Err(reason) => tracing::warn!("{}: rule left out: {reason}", path.display()),
        }
    }
    Ok(rules)
}

/// Every `*.json` file of `chat-completions-settings/` (absent in dumps older than chats):
/// one workspace's settings each, named by the file's stem.
fn read_chat_workspaces(root: &Path) -> Result<ChatWorkspaces, String> {
    let mut workspaces = BTreeMap::new();
    for (path, stem) in json_files(root, layout::CHAT_WORKSPACES_DIRECTORY)? {
        let settings: ChatCompletionSettings = read_json(&path)?;
        workspaces.insert(layout::chat_workspace_uid(&stem), settings);
    }
    Ok(workspaces)
}

/// The `*.json` files directly in `root`'s `directory`, each with its (UTF-8) stem; none when
/// the directory is absent.
fn json_files(root: &Path, directory: &str) -> Result<Vec<(PathBuf, String)>, String> {
    let directory = root.join(directory);
    let entries = match fs::read_dir(&directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(format!("{}: {error}", display(root, &directory))),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| format!("{}: {error}", display(root, &directory)))?;
        let path = entry.path();
        let is_json = path
            .extension()
            .is_some_and(|extension| extension == "json");
        let stem = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .map(str::to_owned);
        if let (true, Some(stem)) = (is_json && path.is_file(), stem) {
            files.push((path, stem));
        }
    }
    Ok(files)
}

fn read_tasks(root: &Path) -> Result<Vec<DumpedTask>, String> {
    let directory = root.join(layout::TASKS_DIRECTORY);
    let queue = directory.join(layout::QUEUE_FILE);
    let mut tasks = Vec::new();
    for record in read_lines::<TaskRecord>(&queue)? {
        let update_file = directory
            .join(layout::UPDATE_FILES_DIRECTORY)
            .join(layout::update_file_name(record.uid));
        let task = task_from_record(record, None)
            .map_err(|error| format!("{}: {error}", display(root, &queue)))?;
        let waits_for_documents = task.status == Status::Enqueued
            && matches!(task.kind, KindWithContent::DocumentAdditionOrUpdate { .. });
        tasks.push(DumpedTask {
            update_file: (waits_for_documents && update_file.is_file()).then_some(update_file),
            task,
        });
    }
    Ok(tasks)
}

fn read_batches(root: &Path) -> Result<Vec<BatchRecord>, String> {
    let path = root
        .join(layout::BATCHES_DIRECTORY)
        .join(layout::QUEUE_FILE);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    read_lines(&path)
}

/// The indexes, in uid order.
fn read_indexes(root: &Path) -> Result<Vec<DumpedIndex>, String> {
    let directory = root.join(layout::INDEXES_DIRECTORY);
    if !directory.is_dir() {
        return Ok(Vec::new());
    }
    let mut folders = Vec::new();
    for entry in fs::read_dir(&directory).map_err(|error| format!("indexes: {error}"))? {
        let path = entry.map_err(|error| format!("indexes: {error}"))?.path();
        if path.is_dir() {
            folders.push(path);
        }
    }
    folders.sort();
    folders
        .iter()
        .map(|folder| read_index(root, folder))
        .collect()
}

fn read_index(root: &Path, folder: &Path) -> Result<DumpedIndex, String> {
    let metadata: IndexMetadata = read_json(&folder.join(layout::INDEX_METADATA_FILE))?;
    let settings_path = folder.join(layout::INDEX_SETTINGS_FILE);
    let settings: Value = read_json(&settings_path)?;
    let invalid = |message: String| format!("{}: {message}", display(root, &settings_path));
    let update = decode_settings_body(settings).map_err(|error| invalid(error.message))?;
    let every_feature = SettingsFeatures {
        chat_completions: true,
        foreign_keys: true,
        composite_embedders: true,
        multimodal: true,
    };
    validate_update(&update, every_feature).map_err(|error| invalid(error.message))?;
    let Value::Object(settings) = crate::settings::apply::task_settings(&update) else {
        return Err(invalid("the settings are not an object".to_owned()));
    };
    let documents = folder.join(layout::INDEX_DOCUMENTS_FILE);
    Ok(DumpedIndex {
        metadata,
        settings,
        documents: documents.is_file().then_some(documents),
    })
}

/// `path` relative to the dump, for messages.
fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, String> {
    let bytes = fs::read(path).map_err(|error| format!("{}: {error}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|error| format!("{}: {error}", path.display()))
}

fn read_optional_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, String> {
    if !path.exists() {
        return Ok(None);
    }
    read_json(path).map(Some)
}

/// Every non-empty line of `path` as a `T`; the error names the line.
fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, String> {
    let file = File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut values = Vec::new();
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|error| format!("{}: {error}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(&line)
            .map_err(|error| format!("{}, line {}: {error}", path.display(), number + 1))?;
        values.push(value);
    }
    Ok(values)
}
