//! Durable storage of the key set behind the [`KeyPersistence`] trait.
//!
//! For now the key set is one JSON file, `<db>/auth/keys.json`, replaced atomically on every
//! change: write `keys.json.tmp`, fsync it, rename it over `keys.json`, fsync the directory.
//! A crash leaves either the old or the new file, never a mix. This moves to the page store
//! (one tree in the control core's store) when the storage engine lands; only a new
//! [`KeyPersistence`] implementation is needed then.
//!
//! These writes are blocking file I/O: they run on the control core only, once per key
//! change (rare, admin-driven), until the page store and io_uring take over.
//!
//! Invariants: the file is versioned (`formatVersion`); everything read from it is
//! validated like input (actions, patterns, dates, uid uniqueness) and a bad file is an
//! error ([`PersistenceError::Corrupted`]), never a panic or a silently dropped key.

use std::collections::HashSet;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::actions::Action;
use super::expiration::{format_rfc3339, parse_rfc3339};
use super::index_pattern::IndexUidPattern;
use super::key::Key;

/// The on-disk format version of `keys.json`.
pub const KEY_FILE_FORMAT_VERSION: u32 = 1;

/// The directory of the key file, under the database directory.
pub const AUTH_DIRECTORY_NAME: &str = "auth";

/// The key file's name.
pub const KEY_FILE_NAME: &str = "keys.json";

/// The temporary file a new key file is written to before the rename.
const KEY_FILE_TEMPORARY_NAME: &str = "keys.json.tmp";

/// A failure to read or write the key set.
#[derive(Debug)]
pub enum PersistenceError {
    Io { path: PathBuf, error: io::Error },
    Corrupted { path: PathBuf, reason: String },
}

impl fmt::Display for PersistenceError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistenceError::Io { path, error } => {
                write!(formatter, "{}: {error}", path.display())
            }
            PersistenceError::Corrupted { path, reason } => {
                write!(formatter, "corrupted key file {}: {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for PersistenceError {}

/// Where the key set is kept.
pub trait KeyPersistence {
    /// Every stored key, in creation order (empty on first launch).
    fn load(&mut self) -> Result<Vec<Key>, PersistenceError>;

    /// Replaces the stored set with `keys` (creation order), durably and atomically.
    fn store(&mut self, keys: &[&Key]) -> Result<(), PersistenceError>;
}

/// Keeps the key set in memory only (tests, and `--no-persistence` style tools).
#[derive(Debug, Default, Clone)]
pub struct MemoryKeyPersistence {
    keys: Vec<Key>,
}

impl KeyPersistence for MemoryKeyPersistence {
    fn load(&mut self) -> Result<Vec<Key>, PersistenceError> {
        Ok(self.keys.clone())
    }

    fn store(&mut self, keys: &[&Key]) -> Result<(), PersistenceError> {
        self.keys = keys.iter().map(|key| (*key).clone()).collect();
        Ok(())
    }
}

/// The key set as one JSON file replaced atomically.
#[derive(Debug, Clone)]
pub struct JsonFileKeyPersistence {
    directory: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KeyFile {
    format_version: u32,
    keys: Vec<KeyRecord>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KeyRecord {
    uid: String,
    name: Option<String>,
    description: Option<String>,
    actions: Vec<String>,
    indexes: Vec<String>,
    expires_at: Option<String>,
    created_at: String,
    updated_at: String,
}

impl KeyRecord {
    fn from_key(key: &Key) -> KeyRecord {
        KeyRecord {
            uid: key.uid.hyphenated().to_string(),
            name: key.name.clone(),
            description: key.description.clone(),
            actions: key
                .actions
                .iter()
                .map(|action| action.wire_name().to_string())
                .collect(),
            indexes: key.indexes.iter().map(ToString::to_string).collect(),
            expires_at: key.expires_at.map(format_rfc3339),
            created_at: format_rfc3339(key.created_at),
            updated_at: format_rfc3339(key.updated_at),
        }
    }

    fn into_key(self) -> Result<Key, String> {
        let date = |text: &str| parse_rfc3339(text).ok_or_else(|| format!("bad date `{text}`"));
        let actions = self
            .actions
            .iter()
            .map(|name| Action::from_wire_name(name).ok_or_else(|| format!("bad action `{name}`")))
            .collect::<Result<_, _>>()?;
        let indexes = self
            .indexes
            .iter()
            .map(|pattern| IndexUidPattern::parse(pattern).map_err(|error| error.to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Key {
            uid: Uuid::parse_str(&self.uid).map_err(|error| format!("bad uid: {error}"))?,
            name: self.name,
            description: self.description,
            actions,
            indexes,
            expires_at: self.expires_at.as_deref().map(date).transpose()?,
            created_at: date(&self.created_at)?,
            updated_at: date(&self.updated_at)?,
        })
    }
}

impl JsonFileKeyPersistence {
    /// Keys under `<database_directory>/auth/` (the directory is created on first store).
    pub fn new(database_directory: &Path) -> JsonFileKeyPersistence {
        JsonFileKeyPersistence {
            directory: database_directory.join(AUTH_DIRECTORY_NAME),
        }
    }

    /// The path of the key file.
    pub fn file_path(&self) -> PathBuf {
        self.directory.join(KEY_FILE_NAME)
    }

    fn io_error(path: &Path) -> impl FnOnce(io::Error) -> PersistenceError + '_ {
        move |error| PersistenceError::Io {
            path: path.to_path_buf(),
            error,
        }
    }

    fn corrupted(&self, reason: String) -> PersistenceError {
        PersistenceError::Corrupted {
            path: self.file_path(),
            reason,
        }
    }

    fn parse(&self, bytes: &[u8]) -> Result<Vec<Key>, PersistenceError> {
        let file: KeyFile =
            serde_json::from_slice(bytes).map_err(|error| self.corrupted(error.to_string()))?;
        if file.format_version != KEY_FILE_FORMAT_VERSION {
            return Err(self.corrupted(format!("unknown format version {}", file.format_version)));
        }
        let mut seen = HashSet::new();
        let mut keys = Vec::with_capacity(file.keys.len());
        for record in file.keys {
            let key = record.into_key().map_err(|reason| self.corrupted(reason))?;
            if !seen.insert(key.uid) {
                return Err(self.corrupted(format!("duplicate key uid {}", key.uid)));
            }
            keys.push(key);
        }
        Ok(keys)
    }

    /// Creates the `auth` directory on first use, durably (its parent entry synced too).
    fn create_directory(&self) -> Result<(), PersistenceError> {
        if self.directory.is_dir() {
            return Ok(());
        }
        fs::create_dir_all(&self.directory).map_err(Self::io_error(&self.directory))?;
        match self.directory.parent() {
            Some(parent) => sync_directory(parent),
            None => Ok(()),
        }
    }

    /// Writes `bytes` to the temporary file and syncs it.
    fn write_temporary(&self, bytes: &[u8]) -> Result<PathBuf, PersistenceError> {
        let temporary = self.directory.join(KEY_FILE_TEMPORARY_NAME);
        let mut file = File::create(&temporary).map_err(Self::io_error(&temporary))?;
        file.write_all(bytes).map_err(Self::io_error(&temporary))?;
        file.sync_all().map_err(Self::io_error(&temporary))?;
        Ok(temporary)
    }
}

impl KeyPersistence for JsonFileKeyPersistence {
    fn load(&mut self) -> Result<Vec<Key>, PersistenceError> {
        let path = self.file_path();
        match fs::read(&path) {
            Ok(bytes) => self.parse(&bytes),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(error) => Err(Self::io_error(&path)(error)),
        }
    }

    fn store(&mut self, keys: &[&Key]) -> Result<(), PersistenceError> {
        self.create_directory()?;
        let file = KeyFile {
            format_version: KEY_FILE_FORMAT_VERSION,
            keys: keys.iter().map(|key| KeyRecord::from_key(key)).collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file).expect("a key file always serializes");
        let temporary = self.write_temporary(&bytes)?;
        let path = self.file_path();
        fs::rename(&temporary, &path).map_err(Self::io_error(&path))?;
        // The rename is durable only once the directory entry is synced.
        sync_directory(&self.directory)
    }
}

/// Syncs a directory, making the entries created or renamed in it durable.
fn sync_directory(directory: &Path) -> Result<(), PersistenceError> {
    File::open(directory)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| PersistenceError::Io {
            path: directory.to_path_buf(),
            error,
        })
}
