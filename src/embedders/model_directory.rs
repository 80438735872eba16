//! Where a `huggingFace` model's files are on this machine: the Hugging Face cache layout
//! (the hub cache [`crate::config::hugging_face_hub_cache`] names, then
//! `models--{org}--{name}/snapshots/{revision}/`), or the model named by an absolute path.
//!
//! Invariants: nothing here touches the network ([`super::hub`] fetches what is missing
//! before the model loads); a model is there when its config, its tokenizer and its
//! weights (safetensors, else pytorch) are; a model that is not is a [`MissingModel`]
//! naming the model and the directory looked in; a revision is a commit hash, or a branch
//! or tag whose `refs/{name}` file holds the commit; without a revision the model's
//! `refs/main` picks the snapshot, else its only snapshot.

use std::path::{Path, PathBuf};

use crate::config::hugging_face_hub_cache as hub_cache;

use super::error::{Fault, NewEmbedderError, NewEmbedderErrorKind};
use super::hub::{HubSettings, OFFLINE_VARIABLE};

/// A model's configuration.
pub const CONFIG_FILE: &str = "config.json";
/// A model's tokenizer.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// A model's weights in safetensors, the format looked for first.
pub const SAFETENSORS_FILE: &str = "model.safetensors";
/// A model's weights as pytorch saves them, looked for when there are no safetensors.
pub const PYTORCH_FILE: &str = "pytorch_model.bin";
/// The pooling of a sentence-transformers model (optional).
pub const POOLING_FILE: &str = "1_Pooling/config.json";
/// The files a BERT-family model needs besides its weights.
const REQUIRED_FILES: [&str; 2] = [CONFIG_FILE, TOKENIZER_FILE];
/// The branch whose snapshot a model without a revision uses.
const DEFAULT_BRANCH: &str = "main";

/// A model one of whose files is not on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingModel {
    model: String,
    revision: Option<String>,
    directory: PathBuf,
    file: &'static str,
}

/// The directory holding `model`'s files at `revision`: its config, its tokenizer and
/// one of its weights files.
pub fn locate(model: &str, revision: Option<&str>) -> Result<PathBuf, MissingModel> {
    let local = Path::new(model);
    let directory = if local.is_absolute() {
        local.to_path_buf()
    } else {
        let repository = hub_cache().join(format!("models--{}", model.replace('/', "--")));
        snapshot(&repository, revision).unwrap_or_else(|| {
            repository
                .join("snapshots")
                .join(revision.unwrap_or(DEFAULT_BRANCH))
        })
    };
    let weights = [SAFETENSORS_FILE, PYTORCH_FILE]
        .into_iter()
        .any(|file| directory.join(file).is_file());
    let absent = REQUIRED_FILES
        .into_iter()
        .find(|file| !directory.join(file).is_file())
        .or((!weights).then_some(SAFETENSORS_FILE));
    match absent {
        None => Ok(directory),
        Some(file) => Err(MissingModel {
            model: model.to_owned(),
            revision: revision.map(str::to_owned),
            directory,
            file,
        }),
    }
}

/// The snapshot directory of `revision` (or of the default branch) in `repository`.
fn snapshot(repository: &Path, revision: Option<&str>) -> Option<PathBuf> {
    let snapshots = repository.join("snapshots");
    let wanted = revision.unwrap_or(DEFAULT_BRANCH);
    let by_name = snapshots.join(wanted);
    if by_name.is_dir() {
        return Some(by_name);
    }
    if let Ok(commit) = std::fs::read_to_string(repository.join("refs").join(wanted)) {
        return Some(snapshots.join(commit.trim()));
    }
    if revision.is_some() {
        return None;
    }
    let mut entries = std::fs::read_dir(&snapshots)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir());
    let only = entries.next()?;
    entries.next().is_none().then_some(only)
}

impl MissingModel {
    /// Whether the model is named by its path (never downloaded).
    pub fn is_local_path(&self) -> bool {
        Path::new(&self.model).is_absolute()
    }

    /// The error: the model, the file not found, and why it was not downloaded.
    pub fn into_error(self) -> NewEmbedderError {
        let files = format!(
            "{}, {}, {SAFETENSORS_FILE}",
            REQUIRED_FILES[0], REQUIRED_FILES[1]
        );
        let directory = self.directory.display();
        let note = if self.is_local_path() {
            format!(
                "a model named by its path is never downloaded; put the model's {files} in `{directory}`."
            )
        } else if HubSettings::from_environment().offline() {
            format!(
                "`{OFFLINE_VARIABLE}` is set, so models are not downloaded; put the model's {files} in `{directory}` (the Hugging Face cache layout under `{}`).",
                hub_cache().display()
            )
        } else {
            format!(
                "the model's files were not found after fetching them from the hub; the model's {files} belong in `{directory}` (the Hugging Face cache layout under `{}`).",
                hub_cache().display()
            )
        };
        let revision = self
            .revision
            .map_or_else(String::new, |revision| format!(" at revision `{revision}`"));
        NewEmbedderError {
            kind: NewEmbedderErrorKind::ModelNotFound(format!(
                "model `{}`{revision} is not available locally: `{}` was not found.\n  - Note: {note}",
                self.model,
                self.directory.join(self.file).display(),
            )),
            fault: Fault::Undecided,
        }
    }
}
