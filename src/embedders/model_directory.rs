//! Where a `huggingFace` model's files are on this machine: the Hugging Face cache layout
//! (the hub cache [`crate::config::hugging_face_hub_cache`] names, then
//! `models--{org}--{name}/snapshots/{revision}/`), or the model named by an absolute path.
//!
//! Invariants: nothing here touches the network: a model that is not on disk is an error
//! that names the model and the directory looked in; a revision is a commit hash, or a
//! branch or tag whose `refs/{name}` file holds the commit; without a revision the model's
//! `refs/main` picks the snapshot, else its only snapshot.

use std::path::{Path, PathBuf};

use crate::config::hugging_face_hub_cache as hub_cache;

use super::error::{Fault, NewEmbedderError, NewEmbedderErrorKind};

/// The files a BERT-family model needs.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// The branch whose snapshot a model without a revision uses.
const DEFAULT_BRANCH: &str = "main";

/// The directory holding `model`'s files at `revision`, each of [`REQUIRED_FILES`] present.
pub fn locate(model: &str, revision: Option<&str>) -> Result<PathBuf, NewEmbedderError> {
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
    for file in REQUIRED_FILES {
        if !directory.join(file).is_file() {
            return Err(missing(model, revision, &directory, file));
        }
    }
    Ok(directory)
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

/// The error of a model whose `file` is not in `directory`.
fn missing(model: &str, revision: Option<&str>, directory: &Path, file: &str) -> NewEmbedderError {
    let revision =
        revision.map_or_else(String::new, |revision| format!(" at revision `{revision}`"));
    NewEmbedderError {
        kind: NewEmbedderErrorKind::ModelNotFound(format!(
            "model `{model}`{revision} is not available locally: `{}` was not found.\n  - Note: this server never downloads models; put the model's {} in `{}` (the Hugging Face cache layout under `{}`).",
            directory.join(file).display(),
            REQUIRED_FILES.join(", "),
            directory.display(),
            hub_cache().display(),
        )),
        fault: Fault::Undecided,
    }
}
