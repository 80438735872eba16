//! A complete vector index held in memory: the same graph algorithm, buffer, merge, filtered
//! search and re-scoring as the persisted graph, over `MemoryLinks` and `MemoryRecords`.
//! It is the model the persisted graph is tested against and a fast way to test the
//! algorithm itself.
//!
//! Float records keep vectors as inserted, like the persisted graph's format-2 files (cosine
//! ones with their scale, see `distance`).
//!
//! Invariants: `live_ids` holds exactly the ids of `record_of_id`; a live record is either in
//! `buffer` or a node of `links`, never both; records are append-only (a deleted record's
//! bytes stay until the index is rebuilt).

use super::error::VectorError;
use super::estimator::{CENTRE_LEVEL_MIN, Centres};
use super::graph::centres::{local_centre, nearest_centre};
use super::graph::check::check_graph;
use super::graph::delete::delete_nodes;
use super::graph::insert::{insert_node, random_level};
use super::graph::memory::MemoryLinks;
use super::graph::reachability::ensure_reachable;
use super::graph::visited::SearchScratch;
use super::parameters::GraphParameters;
use super::random::SplitMix64;
use super::records::{MemoryRecords, PayloadKind, RecordLayout, RecordStore};
use super::searching::{
    Hit, RecordVectors, SearchRequest, SearchView, search_view, validate_vector,
};
use super::space::Space;
use roaring::RoaringBitmap;
use std::collections::HashMap;

/// What a merge did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MergeReport {
    /// Buffered vectors linked into the graph.
    pub merged: usize,
    /// Nodes in the graph before the merge.
    pub nodes_before: usize,
    /// Nodes that existed before the merge and whose links it changed.
    pub relinked_existing: u64,
}

impl MergeReport {
    /// Fraction of the pre-existing nodes whose links the merge changed.
    pub fn relinked_fraction(&self) -> f64 {
        if self.nodes_before == 0 {
            0.0
        } else {
            self.relinked_existing as f64 / self.nodes_before as f64
        }
    }
}

/// The whole index in memory.
pub struct MemoryIndex {
    parameters: GraphParameters,
    records: MemoryRecords,
    full: Option<MemoryRecords>,
    /// Centres of the centred codes (binary quantization with full vectors).
    centres: Centres,
    links: MemoryLinks,
    record_of_id: HashMap<u32, u32>,
    live_ids: RoaringBitmap,
    buffer: Vec<u32>,
    random: SplitMix64,
    scratch: SearchScratch,
}

impl MemoryIndex {
    /// An empty index.
    pub fn new(parameters: GraphParameters) -> Result<Self, VectorError> {
        parameters.validate()?;
        let kind = match (parameters.binary_quantized, parameters.keeps_full_vectors()) {
            (false, _) => PayloadKind::Floats,
            (true, false) => PayloadKind::Codes,
            (true, true) => PayloadKind::CentredCodes,
        };
        let layout = RecordLayout {
            kind,
            dimensions: parameters.dimensions,
        };
        let full = (parameters.binary_quantized && parameters.keeps_full_vectors()).then(|| {
            MemoryRecords::new(RecordLayout {
                kind: PayloadKind::Floats,
                dimensions: parameters.dimensions,
            })
        });
        Ok(Self {
            parameters,
            records: MemoryRecords::new(layout),
            full,
            centres: Centres::new(parameters.dimensions),
            links: MemoryLinks::new(),
            record_of_id: HashMap::new(),
            live_ids: RoaringBitmap::new(),
            buffer: Vec::new(),
            random: SplitMix64::new(parameters.seed),
            scratch: SearchScratch::new(),
        })
    }

    /// The parameters.
    pub fn parameters(&self) -> &GraphParameters {
        &self.parameters
    }

    /// Live vectors.
    pub fn len(&self) -> usize {
        self.record_of_id.len()
    }

    /// Whether no vector is live.
    pub fn is_empty(&self) -> bool {
        self.record_of_id.is_empty()
    }

    /// Vectors waiting in the buffer.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// The graph's links (for checks and statistics).
    pub fn links(&self) -> &MemoryLinks {
        &self.links
    }

    /// Adds or replaces the vector of `internal_id`; merges when the buffer reaches the
    /// threshold and returns that merge's report.
    pub fn insert(
        &mut self,
        internal_id: u32,
        vector: &[f32],
    ) -> Result<Option<MergeReport>, VectorError> {
        validate_vector(&self.parameters, vector)?;
        if self.record_of_id.contains_key(&internal_id) {
            self.delete(&RoaringBitmap::from_iter([internal_id]))?;
        }
        let metric = self.parameters.metric;
        let mut prepared = vector.to_vec();
        metric.prepare(&mut prepared);
        let record = match &mut self.full {
            Some(full) => {
                let space = Space::new(&*full, metric);
                let centre = nearest_centre(
                    &self.links,
                    &space,
                    &self.centres,
                    &prepared,
                    &mut self.scratch,
                )?;
                full.push(internal_id, metric.stored_scale(vector), vector);
                self.records
                    .push_centred(metric, internal_id, &prepared, &self.centres, centre)
            }
            None if self.records.layout().kind == PayloadKind::Floats => {
                self.records
                    .push(internal_id, metric.stored_scale(vector), vector)
            }
            None => self.records.push(internal_id, 0, &prepared),
        };
        self.record_of_id.insert(internal_id, record);
        self.live_ids.insert(internal_id);
        self.buffer.push(record);
        if self.buffer.len() >= self.parameters.merge_threshold_vectors {
            return self.merge().map(Some);
        }
        Ok(None)
    }

    /// Links every buffered vector into the graph (by full-precision distances when the full
    /// vectors are kept; binary-quantized graphs make a centre of every node of level
    /// `CENTRE_LEVEL_MIN` or more).
    pub fn merge(&mut self) -> Result<MergeReport, VectorError> {
        let nodes_before = self.links.len();
        let building = self.full.as_ref().unwrap_or(&self.records);
        let space = Space::new(building, self.parameters.metric);
        let mut relinked = RoaringBitmap::new();
        let level_factor = self.parameters.level_factor();
        let buffer = std::mem::take(&mut self.buffer);
        for &record in &buffer {
            let level = random_level(&mut self.random, level_factor);
            let found = insert_node(
                &mut self.links,
                &space,
                &self.parameters,
                record,
                level,
                &mut self.scratch,
                &mut relinked,
            )?;
            if level >= CENTRE_LEVEL_MIN
                && let Some(full) = &self.full
            {
                self.centres.push(
                    record,
                    &local_centre(&Space::new(full, self.parameters.metric), record, &found),
                );
            }
        }
        ensure_reachable(
            &mut self.links,
            &space,
            &self.parameters,
            &mut self.scratch,
            &mut relinked,
        )?;
        let new_records: RoaringBitmap = buffer.iter().copied().collect();
        Ok(MergeReport {
            merged: buffer.len(),
            nodes_before,
            relinked_existing: relinked.difference_len(&new_records),
        })
    }

    /// Removes the vectors of `internal_ids` (absent ids are ignored), patching the graph.
    pub fn delete(&mut self, internal_ids: &RoaringBitmap) -> Result<(), VectorError> {
        let mut graph_records = RoaringBitmap::new();
        for internal_id in internal_ids {
            let Some(record) = self.record_of_id.remove(&internal_id) else {
                continue;
            };
            self.live_ids.remove(internal_id);
            if let Some(position) = self.buffer.iter().position(|buffered| *buffered == record) {
                self.buffer.swap_remove(position);
            } else {
                graph_records.insert(record);
            }
        }
        let building = self.full.as_ref().unwrap_or(&self.records);
        let space = Space::new(building, self.parameters.metric);
        let mut relinked = RoaringBitmap::new();
        delete_nodes(
            &mut self.links,
            &space,
            &self.parameters,
            &graph_records,
            &mut self.scratch,
            &mut relinked,
        )
    }

    /// Answers one query.
    pub fn search(&mut self, request: &SearchRequest<'_>) -> Result<Vec<Hit>, VectorError> {
        let record_of_id = &self.record_of_id;
        let record_of = |internal_id: u32| Ok(record_of_id.get(&internal_id).copied());
        let full = RecordVectors(self.full.as_ref().unwrap_or(&self.records));
        let has_full = self.parameters.keeps_full_vectors();
        let view = SearchView {
            links: &self.links,
            records: &self.records,
            full: has_full.then_some(&full),
            parameters: &self.parameters,
            buffer: &self.buffer,
            live_count: self.record_of_id.len() as u64,
            live_ids: &self.live_ids,
            record_of: &record_of,
            record_ids: None,
            sketch: None,
            centres: &self.centres,
        };
        search_view(&view, request, &mut self.scratch)
    }

    /// The first broken graph invariant, if any (plus the buffer/graph partition).
    pub fn check(&self) -> Result<Option<String>, VectorError> {
        if let Some(problem) = check_graph(&self.links, &self.parameters)? {
            return Ok(Some(problem));
        }
        if self.links.len() + self.buffer.len() != self.record_of_id.len() {
            return Ok(Some(
                "live vectors are not partitioned into graph and buffer".to_owned(),
            ));
        }
        Ok(None)
    }

    /// Bytes of the link lists (one count byte per layer plus four bytes per link).
    pub fn link_bytes(&self) -> usize {
        self.links.link_bytes()
    }
}
