//! What a shard's files hold, part by part: each tree of its page store, the store's bytes
//! that hold no live data, and each embedder's graph trees and vector files. `GET /stats`
//! and `GET /indexes/{uid}/stats` with `showInternalDatabaseSizes=true` sum these over an
//! index's shards.
//!
//! A tree's bytes are its branch, leaf and overflow pages (`ReadTree::fill`), measured in
//! one read snapshot. The walk reads every branch and leaf page header of the store once, so
//! it costs about one sequential read of the tree pages: it runs only when a client asks.
//!
//! Invariants: every tree of the snapshot is counted once, under one part; an embedder's
//! graph trees (`vector.embedder{slot}.*`) count under its part, named by the embedder when
//! the slot is in the snapshot's settings; the parts' names are camelCase, like the
//! other fields of the stats.

use std::collections::BTreeMap;

use crate::error::ShardResult;
use crate::shard::ShardSnapshot;
use crate::vectors::GraphSet;

/// Part name of the store's bytes without live data (free pages and the grown tail).
pub const FREE_PAGES_PART: &str = "freePages";
/// Prefix of an embedder's graph trees' part.
pub const VECTOR_GRAPH_PART_PREFIX: &str = "vectorGraph.";
/// Prefix of an embedder's vector files' part.
pub const VECTOR_FILES_PART_PREFIX: &str = "vectorFiles.";
/// Prefix of the page-store trees of a vector graph.
const VECTOR_TREE_PREFIX: &str = "vector.";

/// Bytes per part of a shard's files.
pub type StoreSizes = BTreeMap<String, u64>;

impl ShardSnapshot {
    /// The bytes of every tree, and of every embedder's vector files in `graphs`' directory.
    pub(in crate::shard) fn store_sizes(&self, graphs: &GraphSet) -> ShardResult<StoreSizes> {
        let graph_parts = self.graph_parts();
        let mut sizes = StoreSizes::new();
        for name in self.read_transaction().tree_names()? {
            let Some(tree) = self.read_transaction().open_tree(&name)? else {
                continue;
            };
            let part = match graph_tree_graph(&name) {
                Some(graph) => graph_parts
                    .get(graph)
                    .cloned()
                    .unwrap_or_else(|| format!("{VECTOR_GRAPH_PART_PREFIX}{graph}")),
                None => camel_case(&name),
            };
            *sizes.entry(part).or_default() += tree.fill()?.bytes();
        }
        for slot in &self.vector_settings().slots {
            let part = format!("{VECTOR_FILES_PART_PREFIX}{}", slot.name);
            *sizes.entry(part).or_default() += graphs.file_bytes(slot);
        }
        Ok(sizes)
    }

    /// Graph name → the part its trees count under, for the embedders of the settings.
    fn graph_parts(&self) -> BTreeMap<String, String> {
        self.vector_settings()
            .slots
            .iter()
            .map(|slot| {
                let part = format!("{VECTOR_GRAPH_PART_PREFIX}{}", slot.name);
                (slot.graph_name(), part)
            })
            .collect()
    }
}

/// The graph a vector tree belongs to (`vector.{graph}.{part}`), `None` for other trees.
fn graph_tree_graph(tree: &str) -> Option<&str> {
    let rest = tree.strip_prefix(VECTOR_TREE_PREFIX)?;
    rest.rsplit_once('.').map(|(graph, _)| graph)
}

/// `word_pairs_2` → `wordPairs2`.
fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for character in snake.chars() {
        if character == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(character.to_uppercase());
            upper = false;
        } else {
            out.push(character);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_names_become_camel_case_parts() {
        assert_eq!(camel_case("word_pairs_2"), "wordPairs2");
        assert_eq!(camel_case("documents"), "documents");
        assert_eq!(camel_case("external_ids"), "externalIds");
        assert_eq!(camel_case("_leading"), "leading");
    }

    #[test]
    fn vector_trees_name_their_graph() {
        assert_eq!(
            graph_tree_graph("vector.embedder3.nodes"),
            Some("embedder3")
        );
        assert_eq!(graph_tree_graph("vector.a.b.links"), Some("a.b"));
        assert_eq!(graph_tree_graph("word_pairs"), None);
        assert_eq!(graph_tree_graph("vector.alone"), None);
    }
}
