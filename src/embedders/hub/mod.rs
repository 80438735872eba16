//! Fetching a `huggingFace` model from the Hugging Face hub into the standard cache, as
//! Meilisearch's embedder fetches it (hf-hub's synchronous API): `config.json`, then
//! `tokenizer.json`, then the weights (`model.safetensors`, else `pytorch_model.bin`), then
//! `1_Pooling/config.json` when the hub has one, each from
//! `{endpoint}/{model}/resolve/{revision}/{file}` ([`endpoint`]) into the cache layout of
//! [`layout`], each skipped when the revision's ref already leads to it.
//!
//! Invariants:
//! - a model the cache already holds ([`super::model_directory::locate`] finds it) is never
//!   fetched: no request leaves, whatever the hub settings;
//! - a model named by its path, or any model while `HF_HUB_OFFLINE` is set, is never
//!   fetched: missing, it is the [`super::model_directory::MissingModel`] error;
//! - every request goes through the core's [`OutgoingClient`] (its IP policy, timeouts,
//!   retries); file IO runs on helper threads ([`blocking`]);
//! - a file reaches `snapshots/` only once whole and checked ([`partial`]): a half
//!   downloaded file is never loaded;
//! - a failure is Meilisearch's error: `fetching file from HG_HUB failed:\n  - {reason}`
//!   with hf-hub's reason ([`failure`]); when the safetensors cannot be fetched, the
//!   pytorch weights are tried and their failure is the one reported, as in Meilisearch;
//!   a pooling file the hub does not have (404) is no failure.

mod download;
mod endpoint;
mod failure;
mod layout;
mod metadata;
mod partial;

use std::path::Path;

use crate::config::hugging_face_hub_cache;
use crate::outgoing::OutgoingClient;
use crate::runtime::blocking;

use super::error::{Fault, NewEmbedderError, NewEmbedderErrorKind};
use super::model_directory::{
    self, CONFIG_FILE, POOLING_FILE, PYTORCH_FILE, SAFETENSORS_FILE, TOKENIZER_FILE,
};

pub use endpoint::{DEFAULT_REVISION, HubSettings, OFFLINE_VARIABLE};
pub use failure::HubFailure;
use layout::RepositoryCache;

/// The status of a file the hub does not have.
const NOT_FOUND: u16 = 404;

/// Fetches what the cache lacks of `model` at `revision` (the default branch when
/// `None`); nothing when the cache holds it.
pub async fn fetch_missing(
    client: &OutgoingClient,
    model: &str,
    revision: Option<&str>,
) -> Result<(), NewEmbedderError> {
    let (wanted, at) = (model.to_owned(), revision.map(str::to_owned));
    let located = blocking::run(move || model_directory::locate(&wanted, at.as_deref())).await;
    let Err(missing) = located else {
        return Ok(());
    };
    let settings = HubSettings::from_environment();
    if Path::new(model).is_absolute() || settings.offline() {
        return Err(missing.into_error());
    }
    let revision = revision.unwrap_or(DEFAULT_REVISION);
    let hub = Hub {
        client,
        cache: RepositoryCache::new(&hugging_face_hub_cache(), model, revision),
        settings,
        model,
        revision,
    };
    hub.get(CONFIG_FILE).await.map_err(fetch_error)?;
    hub.get(TOKENIZER_FILE).await.map_err(fetch_error)?;
    if let Err(failure) = hub.get(SAFETENSORS_FILE).await {
        tracing::warn!(model, %failure, "no safetensors weights: trying the pytorch weights");
        hub.get(PYTORCH_FILE).await.map_err(fetch_error)?;
    }
    match hub.get(POOLING_FILE).await {
        Ok(()) | Err(HubFailure::Status(NOT_FOUND)) => Ok(()),
        Err(failure) => Err(fetch_error(failure)),
    }
}

/// Meilisearch's error for a file that could not be fetched.
fn fetch_error(failure: HubFailure) -> NewEmbedderError {
    NewEmbedderError {
        kind: NewEmbedderErrorKind::HubFetch(failure.to_string()),
        fault: Fault::Undecided,
    }
}

/// One model at one revision on the hub, and its cache.
struct Hub<'fetch> {
    client: &'fetch OutgoingClient,
    cache: RepositoryCache,
    settings: HubSettings,
    model: &'fetch str,
    revision: &'fetch str,
}

impl Hub<'_> {
    /// Makes `file` of the revision's snapshot present: found through the revision's ref,
    /// or fetched, checked and linked.
    async fn get(&self, file: &str) -> Result<(), HubFailure> {
        let (cache, name) = (self.cache.clone(), file.to_owned());
        if blocking::run(move || cache.cached(&name).is_some()).await {
            return Ok(());
        }
        let url = self.settings.file_url(self.model, self.revision, file);
        let metadata = metadata::fetch(self.client, &url).await?;
        tracing::info!(
            model = self.model, file, size = metadata.size, commit = %metadata.commit,
            "fetching a model file from the hub"
        );
        download::fetch_blob(self.client, &metadata, &self.cache, file).await?;
        let (cache, name) = (self.cache.clone(), file.to_owned());
        blocking::run(move || cache.install(&metadata.etag, &metadata.commit, &name)).await?;
        Ok(())
    }
}
