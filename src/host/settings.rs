//! The settings a shard keeps itself: [`SetFacetSettings`] (filterable and sortable
//! attributes), [`SetTextSettings`] (what the inverted index and ranking depend on) and
//! [`SetEmbedders`] (the embedders whose vectors it keeps).
//!
//! Invariant: each is committed at once and idempotent; a change that touches what an index
//! was built from rebuilds it on the core's helper thread.

use serde_json::Value;
use shards::analysis::TextSettings;

use super::protocol::ShardRequest;
use super::{ShardAddress, ShardHost};
use crate::errors::{ResponseError, shard_error};

/// Replaces the facet settings, rebuilding the facet indexes when they change.
#[derive(Debug)]
pub struct SetFacetSettings {
    pub filterable: Value,
    pub sortable: Vec<String>,
}

impl ShardRequest for SetFacetSettings {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        let shard = host.shard(&address)?;
        let SetFacetSettings {
            filterable,
            sortable,
        } = self;
        crate::runtime::indexing_thread::run(move || {
            shard.set_facet_settings(&filterable, &sortable)
        })
        .await
        .map(drop)
        .map_err(shard_error)
    }
}

/// Replaces the text settings, rebuilding the inverted index when what it depends on
/// changed.
#[derive(Debug)]
pub struct SetTextSettings {
    pub settings: Box<TextSettings>,
}

impl ShardRequest for SetTextSettings {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        let shard = host.shard(&address)?;
        let settings = self.settings;
        crate::runtime::indexing_thread::run(move || shard.set_text_settings(*settings))
            .await
            .map(drop)
            .map_err(shard_error)
    }
}

/// Replaces the embedders the shard keeps vectors for; a new embedder adopts the `_vectors`
/// entries stored documents already give it.
#[derive(Debug)]
pub struct SetEmbedders {
    pub specs: Vec<shards::vectors::EmbedderSpec>,
}

impl ShardRequest for SetEmbedders {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        let shard = host.shard(&address)?;
        let specs = self.specs;
        crate::runtime::indexing_thread::run(move || shard.set_embedders(&specs))
            .await
            .map(drop)
            .map_err(shard_error)
    }
}
