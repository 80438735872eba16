//! A persisted graph: one per embedder, any number per page store file, each named.
//!
//! A graph named `N` keeps four trees in the page store — `vector.N.nodes` (record number
//! BE -> node links, see `node_codec`), `vector.N.ids` (internal id BE -> record LE),
//! `vector.N.records` (record -> internal id in chunks, see `record_ids`) and
//! `vector.N.meta` (`state`, `live`, `buffer`, see `metadata`; with centred codes also
//! `centre` + centre number BE -> its node's record `u32` LE + the centre's floats LE, see
//! `estimator`) — and one or two
//! vector files beside it: `<hex N>.vectors` (full-precision floats) and, with binary
//! quantization, `<hex N>.codes` (the 1-bit codes the graph navigates). A binary-quantized
//! graph with full vectors links its nodes by full-precision distances (the writer reads the
//! float file) and navigates searches by estimates from its codes.
//!
//! The float file of a graph (the full vectors if kept, else the navigation file when it holds
//! floats) keeps every vector exactly as inserted when it is of format 2 (every file created
//! now; see `vector_file`): then `Graph::holds_originals` and `original` gives an id's vector
//! back bit for bit, so callers need no copy of their own. Format-1 files (cosine vectors
//! normalised) open, search and take inserts as before, in their own format.
//!
//! One writer at a time works in a write transaction (`GraphWriter`); readers
//! (`GraphReader`) work on read snapshots and never wait for it: the trees are copy-on-write
//! and the vector files append-only (see `vector_file`).
//!
//! The writer works on a dense in-memory copy of the nodes (`graph::dense`), loaded from the
//! node tree at its first merge or delete and kept until it ends: searches during a merge read
//! links by index, and each operation writes only the nodes it changed back to the tree, once,
//! before returning — so the tree (what commits) always holds the writer's whole state between
//! operations, and a crash or abort simply loses the in-memory copy. Readers search the same
//! kind of adjacency, shared per committed links version (`links_cache`): the writer's copy
//! once its transaction commits, or one built from the snapshot's tree at its first search.
//!
//! Invariants: `live` holds exactly the keys of the ids tree; every live record is either in
//! `buffer` (inserted, searched by brute force) or a node of the graph; the committed record
//! count covers every record any committed tree names, and those records are durable before
//! the commit (`GraphWriter::finish` syncs the files; call it before committing).

use super::full_vectors::{FileVectors, GraphVectors};
use super::links_cache::{LINKS_VERSION_NONE, LinksCache, new_links_version};
use super::metadata::{GraphState, decode_state, encode_state, has_centred_codes};
use super::record_ids::{RecordIdCache, RecordIdMaps, append_record_id};
use super::tree_links::{ReadLinks, flush_dense, load_dense};
use super::trees::{ReadTrees, TreeRead, TreeWrite, WriteTrees};
use super::vector_file::{FileRecords, VectorFile};
use crate::io::PageIo;
use crate::vector::distance::Metric;
use crate::vector::error::VectorError;
use crate::vector::estimator::{self, CENTRE_LEVEL_MIN, Centres};
use crate::vector::graph::centres::{local_centre, nearest_centre};
use crate::vector::graph::check::check_graph;
use crate::vector::graph::delete::delete_nodes;
use crate::vector::graph::dense::DenseLinks;
use crate::vector::graph::insert::{insert_node, random_level};
use crate::vector::graph::reachability::ensure_reachable;
use crate::vector::graph::visited::SearchScratch;
use crate::vector::memory_index::MergeReport;
use crate::vector::parameters::GraphParameters;
use crate::vector::random::SplitMix64;
use crate::vector::records::{PayloadKind, RecordLayout, RecordStore, encode_record};
use crate::vector::searching::{
    FullVectors, Hit, SearchRequest, SearchView, search_view, validate_vector,
};
use crate::vector::sketch::{SKETCH_DIMENSIONS_MIN, Sketch, SketchCache};
use crate::vector::space::Space;
use roaring::RoaringBitmap;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Longest graph name accepted (tree names stay far below the page store's key limit).
pub const GRAPH_NAME_BYTES_MAX: usize = 200;
/// Metadata key of the encoded `GraphState`.
const STATE_KEY: &[u8] = b"state";
/// Metadata key of the live internal ids.
const LIVE_KEY: &[u8] = b"live";
/// Metadata key of the buffered records.
const BUFFER_KEY: &[u8] = b"buffer";
/// Prefix of the metadata keys of centres (followed by the centre number BE).
const CENTRE_KEY_PREFIX: &[u8] = b"centre";
/// Searches of a links version without a cached adjacency that read the node tree before a
/// reader builds the adjacency: a cold graph answers its first queries from the few tree
/// pages they touch, and pays the whole-tree read only once it is evidently in use (or at open
/// with `prefetch_memory`).
pub const TREE_SEARCHES_BEFORE_DENSE_LINKS: u64 = 256;
/// Metadata key of the links version (`u64` LE, see `links_cache`).
const LINKS_VERSION_KEY: &[u8] = b"links_version";

/// How a graph is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphOptions {
    /// Load the graph's node pages into memory once, at open, and keep the navigation
    /// vectors of committed snapshots in memory: copied at open into anonymous memory on huge
    /// pages (not reclaimable; see `memory_copy`), which grows as later snapshots are searched
    /// (`VECTORSTORE_READER_PREFETCH_MEMORY`, read by the server's config).
    pub prefetch_memory: bool,
    /// Keep an 8-bit sketch of the float vectors in memory for readers' searches (cosine and
    /// dot-product graphs of at least `SKETCH_DIMENSIONS_MIN` dimensions without binary
    /// quantization; see `vector::sketch`): same results,
    /// fewer vectors loaded, `Sketch` row bytes of memory per record. Built with the dense
    /// adjacency (at open with `prefetch_memory`, else once the graph is searched).
    pub distance_sketch: bool,
}

impl Default for GraphOptions {
    fn default() -> Self {
        Self {
            prefetch_memory: false,
            distance_sketch: true,
        }
    }
}

/// Storage backends of a graph's vector files (tests pass simulated ones).
pub struct VectorBackends {
    /// The records the graph navigates (floats, or codes with binary quantization).
    pub navigation: Box<dyn PageIo>,
    /// Full-precision floats kept beside codes (binary quantization, non-Hamming metric).
    pub full: Option<Box<dyn PageIo>>,
}

/// An open graph: its parameters and vector files. Share it between the writer and readers.
pub struct Graph {
    name: String,
    parameters: GraphParameters,
    navigation: VectorFile,
    full: Option<VectorFile>,
    prefetched_bytes: u64,
    record_ids: RecordIdCache,
    links_cache: LinksCache,
    tree_searches: AtomicU64,
    /// The readers' distance sketch (`GraphOptions::distance_sketch`, dot-product metrics).
    sketch: Option<SketchCache>,
    /// Committed centres (a prefix of every later snapshot's: centres are only appended),
    /// extended from the snapshots that need more.
    centres: Mutex<Arc<Centres>>,
}

fn tree_name(name: &str, part: &str) -> String {
    format!("vector.{name}.{part}")
}

/// The layouts of a graph's navigation file and full vector file (if any).
pub(super) fn layouts(parameters: &GraphParameters) -> (RecordLayout, Option<RecordLayout>) {
    let floats = RecordLayout {
        kind: PayloadKind::Floats,
        dimensions: parameters.dimensions,
    };
    if parameters.binary_quantized {
        let codes = RecordLayout {
            kind: if has_centred_codes(parameters) {
                PayloadKind::CentredCodes
            } else {
                PayloadKind::Codes
            },
            dimensions: parameters.dimensions,
        };
        (codes, parameters.keeps_full_vectors().then_some(floats))
    } else {
        (floats, None)
    }
}

/// Paths of the navigation and full vector files of graph `name` in `directory`.
pub fn vector_file_paths(
    directory: &Path,
    name: &str,
    parameters: &GraphParameters,
) -> (PathBuf, Option<PathBuf>) {
    let stem: String = name.bytes().map(|byte| format!("{byte:02x}")).collect();
    let floats = directory.join(format!("{stem}.vectors"));
    if parameters.binary_quantized {
        (
            directory.join(format!("{stem}.codes")),
            parameters.keeps_full_vectors().then_some(floats),
        )
    } else {
        (floats, None)
    }
}

fn validate_name(name: &str) -> Result<(), VectorError> {
    if name.is_empty() || name.len() > GRAPH_NAME_BYTES_MAX {
        return Err(VectorError::InvalidParameters(
            "graph names are 1 to 200 bytes long",
        ));
    }
    Ok(())
}

fn read_state(meta: &dyn TreeRead, name: &str) -> Result<GraphState, VectorError> {
    let bytes = meta
        .get(STATE_KEY)?
        .ok_or_else(|| VectorError::UnknownGraph(name.to_owned()))?;
    decode_state(&bytes)
}

fn read_bitmap(meta: &dyn TreeRead, key: &[u8]) -> Result<RoaringBitmap, VectorError> {
    match meta.get(key)? {
        Some(bytes) => RoaringBitmap::deserialize_from(&bytes[..])
            .map_err(|error| VectorError::Corrupted(format!("graph bitmap: {error}"))),
        None => Ok(RoaringBitmap::new()),
    }
}

/// The buffered records; one at or past `record_count` is `Corrupted`.
fn read_buffer(meta: &dyn TreeRead, record_count: u32) -> Result<RoaringBitmap, VectorError> {
    let buffer = read_bitmap(meta, BUFFER_KEY)?;
    if buffer.max().is_some_and(|record| record >= record_count) {
        return Err(VectorError::Corrupted(
            "buffered record past the records".into(),
        ));
    }
    Ok(buffer)
}

/// The links version of the state in `meta` (`LINKS_VERSION_NONE` when never stored).
fn read_links_version(meta: &dyn TreeRead) -> Result<u64, VectorError> {
    match meta.get(LINKS_VERSION_KEY)? {
        Some(bytes) => {
            let bytes: [u8; 8] = bytes[..]
                .try_into()
                .map_err(|_| VectorError::Corrupted("links version is not eight bytes".into()))?;
            Ok(u64::from_le_bytes(bytes))
        }
        None => Ok(LINKS_VERSION_NONE),
    }
}

/// Bytes one centre of `dimensions` floats takes in the graph's meta tree with pages of
/// `page_bytes` (leaf fill aside): its key, its node number and its floats, inline or in an
/// overflow run.
pub fn centre_stored_bytes(page_bytes: usize, dimensions: usize) -> usize {
    let key_bytes = CENTRE_KEY_PREFIX.len() + size_of::<u32>();
    let value_bytes = (1 + dimensions) * size_of::<f32>();
    crate::stored_entry_bytes(page_bytes, key_bytes, value_bytes)
}

/// The metadata key of centre `centre`.
fn centre_key(centre: u32) -> Vec<u8> {
    let mut key = CENTRE_KEY_PREFIX.to_vec();
    key.extend_from_slice(&centre.to_be_bytes());
    key
}

/// Appends centres `centres.len()..count` read from `meta` to `centres`.
fn read_centres(meta: &dyn TreeRead, count: u32, centres: &mut Centres) -> Result<(), VectorError> {
    for centre in centres.len()..count {
        let bytes = meta
            .get(&centre_key(centre))?
            .ok_or_else(|| VectorError::Corrupted(format!("centre {centre} missing")))?;
        if bytes.len() != (1 + centres.dimensions()) * size_of::<f32>() {
            return Err(VectorError::Corrupted(format!("centre {centre} length")));
        }
        let words: Vec<[u8; 4]> = bytes
            .chunks_exact(size_of::<f32>())
            .map(|chunk| [chunk[0], chunk[1], chunk[2], chunk[3]])
            .collect();
        let vector: Vec<f32> = words[1..]
            .iter()
            .map(|word| f32::from_le_bytes(*word))
            .collect();
        centres.push(u32::from_le_bytes(words[0]), &vector);
    }
    Ok(())
}

fn write_bitmap(
    meta: &dyn TreeWrite,
    key: &[u8],
    bitmap: &RoaringBitmap,
) -> Result<(), VectorError> {
    let mut bytes = Vec::with_capacity(bitmap.serialized_size());
    bitmap.serialize_into(&mut bytes)?;
    meta.put(key, &bytes)
}

impl Graph {
    /// Creates graph `name` (trees in the write transaction, files in `directory`), or opens
    /// it if it exists with the same parameters.
    pub fn create(
        trees: &dyn WriteTrees,
        directory: &Path,
        name: &str,
        parameters: GraphParameters,
    ) -> Result<Graph, VectorError> {
        parameters.validate()?;
        let backends = open_file_backends(directory, name, &parameters)?;
        Self::create_with_backends(trees, name, parameters, backends)
    }

    /// `create` over given file backends.
    pub fn create_with_backends(
        trees: &dyn WriteTrees,
        name: &str,
        parameters: GraphParameters,
        backends: FileBackends,
    ) -> Result<Graph, VectorError> {
        validate_name(name)?;
        parameters.validate()?;
        let meta = trees.open_write(&tree_name(name, "meta"))?;
        let state = match meta.get(STATE_KEY)? {
            Some(bytes) => {
                let state = decode_state(&bytes)?;
                if state.parameters != parameters {
                    return Err(VectorError::ParametersMismatch(name.to_owned()));
                }
                state
            }
            None => {
                let state = GraphState {
                    parameters,
                    random_state: parameters.seed,
                    entry_point: None,
                    record_count: 0,
                    centre_count: 0,
                };
                meta.put(STATE_KEY, &encode_state(&state))?;
                state
            }
        };
        trees.open_write(&tree_name(name, "nodes"))?;
        trees.open_write(&tree_name(name, "ids"))?;
        trees.open_write(&tree_name(name, "records"))?;
        let graph = Self::from_backends(name, parameters, backends, GraphOptions::default())?;
        graph.ensure_files(state.record_count)?;
        Ok(graph)
    }

    /// Opens graph `name` as committed in the snapshot `trees`.
    pub fn open(
        trees: &dyn ReadTrees,
        directory: &Path,
        name: &str,
        options: GraphOptions,
    ) -> Result<Graph, VectorError> {
        let meta = trees
            .open_read(&tree_name(name, "meta"))?
            .ok_or_else(|| VectorError::UnknownGraph(name.to_owned()))?;
        let state = read_state(&*meta, name)?;
        let backends = open_file_backends(directory, name, &state.parameters)?;
        Self::open_with_backends(trees, name, backends, options)
    }

    /// `open` over given file backends.
    pub fn open_with_backends(
        trees: &dyn ReadTrees,
        name: &str,
        backends: FileBackends,
        options: GraphOptions,
    ) -> Result<Graph, VectorError> {
        let meta = trees
            .open_read(&tree_name(name, "meta"))?
            .ok_or_else(|| VectorError::UnknownGraph(name.to_owned()))?;
        let state = read_state(&*meta, name)?;
        let mut graph = Self::from_backends(name, state.parameters, backends, options)?;
        graph.ensure_files(state.record_count)?;
        if options.prefetch_memory {
            graph.prefetched_bytes = graph.prefetch(trees, state.record_count)?;
        }
        Ok(graph)
    }

    fn from_backends(
        name: &str,
        parameters: GraphParameters,
        backends: FileBackends,
        options: GraphOptions,
    ) -> Result<Graph, VectorError> {
        let (navigation_layout, full_layout) = layouts(&parameters);
        let mut navigation = backends.navigation.open(navigation_layout)?;
        if options.prefetch_memory {
            navigation.keep_memory_copy()?;
        }
        let full = match (full_layout, backends.full) {
            (Some(layout), Some(backend)) => Some(backend.open(layout)?),
            (None, None) => None,
            _ => {
                return Err(VectorError::InvalidParameters(
                    "full vector file expected iff BQ",
                ));
            }
        };
        Ok(Graph {
            name: name.to_owned(),
            parameters,
            navigation,
            full,
            prefetched_bytes: 0,
            record_ids: RecordIdCache::new(),
            links_cache: LinksCache::new(),
            tree_searches: AtomicU64::new(0),
            centres: Mutex::new(Arc::new(Centres::new(parameters.dimensions))),
            sketch: (options.distance_sketch
                && parameters.dimensions >= SKETCH_DIMENSIONS_MIN
                && !parameters.binary_quantized
                && matches!(parameters.metric, Metric::Cosine | Metric::DotProduct))
            .then(|| SketchCache::new(parameters.dimensions, parameters.metric)),
        })
    }

    /// The readers' sketch of records `0..record_count` (extended if needed), if the graph
    /// keeps one.
    fn sketch_up_to(&self, record_count: u32) -> Option<Arc<Sketch>> {
        let cache = self.sketch.as_ref()?;
        cache.up_to(
            &self.navigation.committed_records(record_count),
            record_count,
        )
    }

    /// The centres `0..count` (or more) of `meta`: the cached committed ones, extended from
    /// `meta` when the cache holds fewer. Only a committed snapshot's `meta` may extend the
    /// cache (`committed`); a write transaction's centres are read without caching them.
    fn centres_up_to(
        &self,
        meta: &dyn TreeRead,
        count: u32,
        committed: bool,
    ) -> Result<Arc<Centres>, VectorError> {
        let mut cached = self
            .centres
            .lock()
            .map_err(|_| VectorError::Corrupted("centre cache poisoned".into()))?;
        if cached.len() >= count {
            return Ok(Arc::clone(&cached));
        }
        let mut extended = Centres::clone(&cached);
        read_centres(meta, count, &mut extended)?;
        let extended = Arc::new(extended);
        if committed {
            *cached = Arc::clone(&extended);
        }
        Ok(extended)
    }

    /// Bytes of memory held by the committed centres read so far.
    pub fn centre_bytes(&self) -> usize {
        self.centres
            .lock()
            .map_or(0, |centres| centres.memory_bytes())
    }

    /// Bytes of memory held by the readers' distance sketch (0 without one).
    pub fn sketch_bytes(&self) -> usize {
        self.sketch.as_ref().map_or(0, SketchCache::memory_bytes)
    }

    fn ensure_files(&self, record_count: u32) -> Result<(), VectorError> {
        self.navigation.ensure_records(record_count)?;
        if let Some(full) = &self.full {
            full.ensure_records(record_count)?;
        }
        Ok(())
    }

    /// Reads every node into the shared dense adjacency (or touches every node page when the
    /// graph has no links version), the record id map, and every navigation record once.
    fn prefetch(&self, trees: &dyn ReadTrees, record_count: u32) -> Result<u64, VectorError> {
        let mut bytes = 0_u64;
        let meta = trees
            .open_read(&tree_name(&self.name, "meta"))?
            .ok_or_else(|| VectorError::UnknownGraph(self.name.clone()))?;
        let state = read_state(&*meta, &self.name)?;
        let version = read_links_version(&*meta)?;
        if let Some(nodes) = trees.open_read(&tree_name(&self.name, "nodes"))? {
            nodes.for_each(&mut |key, value| {
                bytes += (key.len() + value.len()) as u64;
                Ok(())
            })?;
            if version != LINKS_VERSION_NONE {
                let dense = load_dense(
                    &*nodes,
                    state.entry_point,
                    state.record_count,
                    &self.parameters,
                )?;
                self.links_cache.install(version, Arc::new(dense));
            }
        }
        // Records first (read-ahead advice, then the memory copy when kept), then what reads
        // them.
        let navigation = self.navigation.prefetch(record_count);
        let records = self.navigation.committed_records(record_count);
        let map = trees.open_read(&tree_name(&self.name, "records"))?;
        let ids = self
            .record_ids
            .ids_up_to(map.as_deref(), &records, record_count)?;
        bytes += size_of_val(ids.ids()) as u64;
        if let Some(sketch) = self.sketch_up_to(record_count) {
            bytes += sketch.memory_bytes() as u64;
        }
        Ok(bytes + navigation)
    }

    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The graph's parameters.
    pub fn parameters(&self) -> &GraphParameters {
        &self.parameters
    }

    /// Bytes loaded into memory by `prefetch_memory` at open (0 without it).
    pub fn prefetched_bytes(&self) -> u64 {
        self.prefetched_bytes
    }

    /// The navigation vector file (codes with binary quantization).
    pub fn navigation_file(&self) -> &VectorFile {
        &self.navigation
    }

    /// The records links are built from: the full vectors when kept beside codes (links by
    /// full-precision distances), else the navigation records.
    fn building_records(&self, record_count: u32) -> FileRecords<'_> {
        self.full
            .as_ref()
            .unwrap_or(&self.navigation)
            .records(record_count)
    }

    /// The full-precision vector file kept beside codes, if any.
    pub fn full_file(&self) -> Option<&VectorFile> {
        self.full.as_ref()
    }

    /// The file holding the graph's float records: the full vectors beside codes, else the
    /// navigation file when it holds floats; `None` for codes without a float copy.
    fn float_file(&self) -> Option<&VectorFile> {
        match &self.full {
            Some(full) => Some(full),
            None => {
                (self.navigation.layout().kind == PayloadKind::Floats).then_some(&self.navigation)
            }
        }
    }

    /// Whether the float records hold every vector exactly as it was inserted, so that
    /// [`GraphReader::original`] gives it back bit for bit and the caller need not keep its
    /// own copy: exactly when the float file is of format 2. Files of format 1 keep cosine
    /// vectors normalised (and keep doing so for vectors appended to them): not originals. A
    /// graph of codes without a float copy holds no floats at all.
    pub fn holds_originals(&self) -> bool {
        self.float_file().is_some_and(VectorFile::holds_originals)
    }

    /// The stored vectors of the snapshot `trees` by id: lighter than a reader (no live set,
    /// buffer, links or centres), for reading a few documents' vectors.
    pub fn originals<'a>(
        &'a self,
        trees: &'a dyn ReadTrees,
    ) -> Result<GraphOriginals<'a>, VectorError> {
        let missing = || VectorError::UnknownGraph(self.name.clone());
        let meta = trees
            .open_read(&tree_name(&self.name, "meta"))?
            .ok_or_else(missing)?;
        let state = read_state(&*meta, &self.name)?;
        self.ensure_files(state.record_count)?;
        Ok(GraphOriginals {
            graph: self,
            ids: trees
                .open_read(&tree_name(&self.name, "ids"))?
                .ok_or_else(missing)?,
            record_count: state.record_count,
        })
    }

    /// The float payload of `internal_id`'s record among the first `record_count` records
    /// (`None` when the id has no record, or the graph no float records).
    fn stored_floats(
        &self,
        ids: &dyn TreeRead,
        internal_id: u32,
        record_count: u32,
    ) -> Result<Option<Vec<f32>>, VectorError> {
        let Some(file) = self.float_file() else {
            return Ok(None);
        };
        let Some(record) = record_of(ids, internal_id, record_count)? else {
            return Ok(None);
        };
        Ok(Some(file.records(record_count).floats(record).to_vec()))
    }

    /// The writer, in the write transaction `trees`. Call `finish` before committing.
    pub fn writer<'a>(&'a self, trees: &'a dyn WriteTrees) -> Result<GraphWriter<'a>, VectorError> {
        let meta = trees.open_write(&tree_name(&self.name, "meta"))?;
        let state = read_state(&*meta, &self.name)?;
        let live = read_bitmap(&*meta, LIVE_KEY)?;
        let buffer = read_buffer(&*meta, state.record_count)?;
        let links_seed = self.links_cache.get(read_links_version(&*meta)?);
        let centres = self.centres_up_to(&*meta, state.centre_count, false)?;
        let mut centres = Centres::clone(&centres);
        centres.truncate(state.centre_count);
        Ok(GraphWriter {
            graph: self,
            nodes: trees.open_write(&tree_name(&self.name, "nodes"))?,
            ids: trees.open_write(&tree_name(&self.name, "ids"))?,
            record_map: trees.open_write(&tree_name(&self.name, "records"))?,
            meta,
            state,
            live,
            buffer,
            scratch: SearchScratch::new(),
            appended: false,
            links: None,
            links_seed,
            links_changed: false,
            centres,
        })
    }

    /// A reader of the snapshot `trees`.
    pub fn reader<'a>(&'a self, trees: &'a dyn ReadTrees) -> Result<GraphReader<'a>, VectorError> {
        let missing = || VectorError::UnknownGraph(self.name.clone());
        let meta = trees
            .open_read(&tree_name(&self.name, "meta"))?
            .ok_or_else(missing)?;
        let state = read_state(&*meta, &self.name)?;
        if state.parameters != self.parameters {
            return Err(VectorError::ParametersMismatch(self.name.clone()));
        }
        self.ensure_files(state.record_count)?;
        Ok(GraphReader {
            graph: self,
            nodes: trees
                .open_read(&tree_name(&self.name, "nodes"))?
                .ok_or_else(missing)?,
            ids: trees
                .open_read(&tree_name(&self.name, "ids"))?
                .ok_or_else(missing)?,
            record_map: trees.open_read(&tree_name(&self.name, "records"))?,
            live: read_bitmap(&*meta, LIVE_KEY)?,
            buffer: read_buffer(&*meta, state.record_count)?.iter().collect(),
            links_version: read_links_version(&*meta)?,
            dense: OnceCell::new(),
            sketch: OnceCell::new(),
            centres: self.centres_up_to(&*meta, state.centre_count, true)?,
            state,
        })
    }

    /// Removes graph `name`'s trees (its vector files are left to the caller to delete after
    /// the commit, with `vector_file_paths`).
    pub fn drop_trees(trees: &dyn WriteTrees, name: &str) -> Result<bool, VectorError> {
        let mut existed = false;
        for part in ["nodes", "ids", "records", "meta"] {
            existed |= trees.drop_tree(&tree_name(name, part))?;
        }
        Ok(existed)
    }
}

/// One vector file's backend: a path or a `PageIo`.
pub enum FileBackend {
    /// A real file (memory-mapped, io_uring for batched reads).
    Path(PathBuf),
    /// Any backend (no batched reads).
    Io(Box<dyn PageIo>),
}

impl FileBackend {
    fn open(self, layout: RecordLayout) -> Result<VectorFile, VectorError> {
        match self {
            FileBackend::Path(path) => VectorFile::open_path(&path, layout),
            FileBackend::Io(io) => VectorFile::open_io(io, layout),
        }
    }
}

/// The backends of a graph's vector files.
pub struct FileBackends {
    /// The navigation file.
    pub navigation: FileBackend,
    /// The full-precision file, iff binary quantization keeps full vectors.
    pub full: Option<FileBackend>,
}

impl From<VectorBackends> for FileBackends {
    fn from(backends: VectorBackends) -> Self {
        FileBackends {
            navigation: FileBackend::Io(backends.navigation),
            full: backends.full.map(FileBackend::Io),
        }
    }
}

fn open_file_backends(
    directory: &Path,
    name: &str,
    parameters: &GraphParameters,
) -> Result<FileBackends, VectorError> {
    validate_name(name)?;
    let (navigation, full) = vector_file_paths(directory, name, parameters);
    Ok(FileBackends {
        navigation: FileBackend::Path(navigation),
        full: full.map(FileBackend::Path),
    })
}

/// Encodes the float record of `internal_id` for `file`: the `vector` as inserted with its
/// scale word when the file holds originals (format 2), else (format 1) the `prepared` vector
/// with a 0 word, as that format's readers expect.
fn encode_float_record(
    file: &VectorFile,
    metric: Metric,
    internal_id: u32,
    vector: &[f32],
    prepared: &[f32],
    out: &mut Vec<u8>,
) {
    if file.holds_originals() {
        let scale_word = metric.stored_scale(vector);
        encode_record(file.layout(), internal_id, scale_word, vector, out);
    } else {
        encode_record(file.layout(), internal_id, 0, prepared, out);
    }
}

/// The record of `internal_id`; a record at or past `record_count` is `Corrupted`.
fn record_of(
    ids: &dyn TreeRead,
    internal_id: u32,
    record_count: u32,
) -> Result<Option<u32>, VectorError> {
    match ids.get(&internal_id.to_be_bytes())? {
        Some(bytes) => {
            let bytes: [u8; 4] = bytes[..]
                .try_into()
                .map_err(|_| VectorError::Corrupted("id entry is not four bytes".into()))?;
            let record = u32::from_le_bytes(bytes);
            if record >= record_count {
                return Err(VectorError::Corrupted(format!(
                    "id {internal_id} past the records"
                )));
            }
            Ok(Some(record))
        }
        None => Ok(None),
    }
}

/// Searches one state of a graph (shared by reader and writer) whose navigation records are
/// `records` (from the memory copy for a committed snapshot that has one).
#[allow(clippy::too_many_arguments)]
fn search_state<L: crate::vector::graph::Links>(
    graph: &Graph,
    links: &L,
    ids: &dyn TreeRead,
    records: FileRecords<'_>,
    live: &RoaringBitmap,
    buffer: &[u32],
    record_ids: Option<&RecordIdMaps>,
    sketch: Option<&Sketch>,
    centres: &Centres,
    request: &SearchRequest<'_>,
    scratch: &mut SearchScratch,
) -> Result<Vec<Hit>, VectorError> {
    let record_count = records.record_count();
    let full = match &graph.full {
        Some(file) => GraphVectors::Batched(FileVectors {
            records: file.records(record_count),
        }),
        None => GraphVectors::Mapped(records),
    };
    // A live id's record: from the id array when it can tell, else from the ids tree.
    let lookup = |internal_id: u32| match record_ids
        .and_then(|maps| maps.live_record(internal_id, record_count))
    {
        Some(record) => Ok(Some(record)),
        None => record_of(ids, internal_id, record_count),
    };
    let view = SearchView {
        links,
        records: &records,
        full: graph.parameters.keeps_full_vectors().then_some(&full),
        parameters: &graph.parameters,
        buffer,
        live_count: live.len(),
        live_ids: live,
        record_of: &lookup,
        record_ids: record_ids.map(RecordIdMaps::ids),
        sketch,
        centres,
    };
    search_view(&view, request, scratch)
}

/// One snapshot's stored vectors by id (see [`Graph::originals`]).
pub struct GraphOriginals<'a> {
    graph: &'a Graph,
    ids: Box<dyn TreeRead + 'a>,
    record_count: u32,
}

impl GraphOriginals<'_> {
    /// The vector of `internal_id` as stored in the snapshot (`None` when it has none): the
    /// vector as inserted when [`Graph::holds_originals`].
    pub fn get(&self, internal_id: u32) -> Result<Option<Vec<f32>>, VectorError> {
        self.graph
            .stored_floats(&*self.ids, internal_id, self.record_count)
    }
}

/// Searches one committed snapshot of a graph.
pub struct GraphReader<'a> {
    graph: &'a Graph,
    nodes: Box<dyn TreeRead + 'a>,
    ids: Box<dyn TreeRead + 'a>,
    /// The record -> id map (absent in graphs created before it existed).
    record_map: Option<Box<dyn TreeRead + 'a>>,
    state: GraphState,
    live: RoaringBitmap,
    buffer: Vec<u32>,
    links_version: u64,
    /// The snapshot's adjacency, taken from the graph's cache or built at the first search.
    dense: OnceCell<Arc<DenseLinks>>,
    /// The graph's sketch of this snapshot's records, taken once the adjacency is in use.
    sketch: OnceCell<Option<Arc<Sketch>>>,
    /// The centres of this snapshot's centred codes (and possibly later ones).
    centres: Arc<Centres>,
}

impl GraphReader<'_> {
    /// The snapshot's dense adjacency, `None` for graphs without a links version and, unless
    /// `build_now`, while the graph has served fewer than `TREE_SEARCHES_BEFORE_DENSE_LINKS`
    /// searches from the tree.
    fn dense_links(&self, build_now: bool) -> Result<Option<&DenseLinks>, VectorError> {
        if let Some(dense) = self.dense.get() {
            return Ok(Some(dense));
        }
        if self.links_version == LINKS_VERSION_NONE {
            return Ok(None);
        }
        let dense = match self.graph.links_cache.get(self.links_version) {
            Some(dense) => dense,
            None if !build_now
                && self.graph.tree_searches.fetch_add(1, Ordering::Relaxed)
                    < TREE_SEARCHES_BEFORE_DENSE_LINKS =>
            {
                return Ok(None);
            }
            None => {
                let dense = Arc::new(load_dense(
                    &*self.nodes,
                    self.state.entry_point,
                    self.state.record_count,
                    &self.graph.parameters,
                )?);
                self.graph
                    .links_cache
                    .install(self.links_version, Arc::clone(&dense));
                dense
            }
        };
        Ok(Some(self.dense.get_or_init(|| dense)))
    }

    /// Answers one query.
    pub fn search(
        &self,
        request: &SearchRequest<'_>,
        scratch: &mut SearchScratch,
    ) -> Result<Vec<Hit>, VectorError> {
        let (graph, ids, record_count) = (self.graph, &*self.ids, self.state.record_count);
        let records = graph.navigation.committed_records(record_count);
        // Only a filtered search checks ids along the way (and maps candidate ids to records
        // when exact); the maps are read (or extended) once per graph, not per query.
        let record_ids = match request.candidates {
            Some(_) => Some(graph.record_ids.ids_up_to(
                self.record_map.as_deref(),
                &records,
                record_count,
            )?),
            None => None,
        };
        let record_ids = record_ids.as_deref();
        match self.dense_links(false)? {
            Some(dense) => {
                // A graph searched from its dense adjacency is in use: sketch it too.
                let sketch = self
                    .sketch
                    .get_or_init(|| self.graph.sketch_up_to(record_count));
                search_state(
                    graph,
                    dense,
                    ids,
                    records,
                    &self.live,
                    &self.buffer,
                    record_ids,
                    sketch.as_deref(),
                    &self.centres,
                    request,
                    scratch,
                )
            }
            None => search_state(
                graph,
                &ReadLinks {
                    tree: &*self.nodes,
                    entry_point: self.state.entry_point,
                    record_count,
                },
                ids,
                records,
                &self.live,
                &self.buffer,
                record_ids,
                None,
                &self.centres,
                request,
                scratch,
            ),
        }
    }

    /// The vector of `internal_id` as stored in this snapshot (`None` when it has none): the
    /// vector as inserted when [`Graph::holds_originals`].
    pub fn original(&self, internal_id: u32) -> Result<Option<Vec<f32>>, VectorError> {
        self.graph
            .stored_floats(&*self.ids, internal_id, self.state.record_count)
    }

    /// Live vectors in this snapshot.
    pub fn len(&self) -> u64 {
        self.live.len()
    }

    /// Whether the snapshot holds no vector.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Live internal ids.
    pub fn live_ids(&self) -> &RoaringBitmap {
        &self.live
    }

    /// Records in this snapshot's vector files.
    pub fn record_count(&self) -> u32 {
        self.state.record_count
    }

    /// Vectors waiting in the insert buffer.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// The first broken invariant of this snapshot, if any (graph structure, partition of
    /// live ids into graph and buffer, id map agreement).
    pub fn check(&self) -> Result<Option<String>, VectorError> {
        let links = ReadLinks {
            tree: &*self.nodes,
            entry_point: self.state.entry_point,
            record_count: self.state.record_count,
        };
        if let Some(problem) = check_graph(&links, &self.graph.parameters)? {
            return Ok(Some(problem));
        }
        let records = self
            .graph
            .navigation
            .committed_records(self.state.record_count);
        let nodes = crate::vector::graph::Links::nodes(&links)?;
        let mut live_records = RoaringBitmap::new();
        for internal_id in &self.live {
            match record_of(&*self.ids, internal_id, self.state.record_count)? {
                Some(record) if record < self.state.record_count => {
                    use crate::vector::records::RecordStore;
                    if records.internal_id(record) != internal_id {
                        return Ok(Some(format!("record {record} is not id {internal_id}")));
                    }
                    live_records.insert(record);
                }
                _ => return Ok(Some(format!("live id {internal_id} has no valid record"))),
            }
        }
        let graph_records: RoaringBitmap = nodes.iter().map(|(record, _)| *record).collect();
        let buffer_records: RoaringBitmap = self.buffer.iter().copied().collect();
        if !graph_records.is_disjoint(&buffer_records)
            || (&graph_records | &buffer_records) != live_records
        {
            return Ok(Some(
                "live records are not partitioned into graph and buffer".into(),
            ));
        }
        if let Some(problem) = self.check_record_ids(&records)? {
            return Ok(Some(problem));
        }
        self.check_dense_links(&links, &nodes)
    }

    /// The record -> id map (where stored) and the graph's id cache agree with the headers,
    /// and their id -> record arrays with the ids tree.
    fn check_record_ids(&self, records: &FileRecords<'_>) -> Result<Option<String>, VectorError> {
        use crate::vector::records::RecordStore;
        let count = self.state.record_count;
        let stored = RecordIdCache::new().ids_up_to(self.record_map.as_deref(), records, count)?;
        let cached = self
            .graph
            .record_ids
            .ids_up_to(self.record_map.as_deref(), records, count)?;
        for record in 0..count {
            let header = records.internal_id(record);
            if stored.ids()[record as usize] != header || cached.ids()[record as usize] != header {
                return Ok(Some(format!(
                    "record {record}: id map disagrees with header"
                )));
            }
        }
        // The id -> record arrays agree with the ids tree for every live id; built from this
        // snapshot alone (`stored`), they must answer every live id.
        for internal_id in &self.live {
            let tree = record_of(&*self.ids, internal_id, count)?;
            let fresh = stored.live_record(internal_id, count);
            if fresh.is_some_and(|record| Some(record) != tree)
                || (fresh.is_none() && stored.has_id_array())
            {
                return Ok(Some(format!(
                    "id {internal_id}: id array gives {fresh:?}, the tree {tree:?}"
                )));
            }
            let shared = cached.live_record(internal_id, count);
            if shared.is_some_and(|record| Some(record) != tree) {
                return Ok(Some(format!(
                    "id {internal_id}: shared id array gives {shared:?}, the tree {tree:?}"
                )));
            }
        }
        Ok(None)
    }

    /// The dense adjacency searches would use holds exactly the node tree's links.
    fn check_dense_links(
        &self,
        tree: &ReadLinks<'_>,
        nodes: &[(u32, u8)],
    ) -> Result<Option<String>, VectorError> {
        use crate::vector::graph::Links;
        let Some(dense) = self.dense_links(true)? else {
            return Ok(None);
        };
        if dense.nodes()? != nodes || dense.entry_point() != tree.entry_point() {
            return Ok(Some("dense adjacency: other nodes or entry point".into()));
        }
        let mut list = Vec::new();
        for &(record, level) in nodes {
            for layer in 0..=level {
                tree.neighbours(record, layer, &mut list)?;
                if dense.list(record, layer) != list.as_slice() {
                    return Ok(Some(format!(
                        "dense adjacency: node {record} layer {layer} differs from the tree"
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Bytes of the node entries (keys and values) of this snapshot.
    pub fn node_bytes(&self) -> Result<u64, VectorError> {
        let mut bytes = 0_u64;
        self.nodes.for_each(&mut |key, value| {
            bytes += (key.len() + value.len()) as u64;
            Ok(())
        })?;
        Ok(bytes)
    }
}

/// The one writer of a graph, inside a write transaction.
pub struct GraphWriter<'a> {
    graph: &'a Graph,
    nodes: Box<dyn TreeWrite + 'a>,
    ids: Box<dyn TreeWrite + 'a>,
    record_map: Box<dyn TreeWrite + 'a>,
    meta: Box<dyn TreeWrite + 'a>,
    state: GraphState,
    live: RoaringBitmap,
    buffer: RoaringBitmap,
    scratch: SearchScratch,
    appended: bool,
    /// The graph's nodes in memory, loaded at the first merge or delete and kept until the
    /// writer ends; `None` again after a failed operation (the tree still holds the state
    /// before it, so the next operation reloads from there).
    links: Option<DenseLinks>,
    /// The cached adjacency of the state the writer started from, if any: its first merge or
    /// delete starts from a copy of it instead of reading the node tree.
    links_seed: Option<Arc<DenseLinks>>,
    /// Whether an operation of this writer changed links (a new links version at `finish`).
    links_changed: bool,
    /// The centres of the writer's state (`state.centre_count` of them).
    centres: Centres,
}

/// The writer's dense adjacency, loaded from the node tree on first use.
fn writer_links<'l>(
    slot: &'l mut Option<DenseLinks>,
    seed: &mut Option<Arc<DenseLinks>>,
    nodes: &dyn TreeWrite,
    state: &GraphState,
) -> Result<&'l mut DenseLinks, VectorError> {
    if slot.is_none() {
        *slot = Some(match seed.take() {
            Some(cached) => Arc::unwrap_or_clone(cached),
            None => load_dense(
                nodes,
                state.entry_point,
                state.record_count,
                &state.parameters,
            )?,
        });
    }
    Ok(slot.as_mut().expect("loaded just above"))
}

impl GraphWriter<'_> {
    /// The vector of `internal_id` as stored in the writer's state, uncommitted inserts
    /// included (`None` when it has none): the vector as inserted when
    /// [`Graph::holds_originals`].
    pub fn original(&self, internal_id: u32) -> Result<Option<Vec<f32>>, VectorError> {
        self.graph
            .stored_floats(&*self.ids, internal_id, self.state.record_count)
    }

    /// Live vectors.
    pub fn len(&self) -> u64 {
        self.live.len()
    }

    /// Whether no vector is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Vectors waiting in the insert buffer.
    pub fn buffered(&self) -> u64 {
        self.buffer.len()
    }

    /// Adds or replaces the vector of `internal_id`; when the buffer reaches the merge
    /// threshold, merges it and returns the merge's report.
    pub fn insert(
        &mut self,
        internal_id: u32,
        vector: &[f32],
    ) -> Result<Option<MergeReport>, VectorError> {
        let parameters = self.graph.parameters;
        validate_vector(&parameters, vector)?;
        if self.live.contains(internal_id) {
            self.delete(&RoaringBitmap::from_iter([internal_id]))?;
        }
        let record = self.state.record_count;
        let next = record.checked_add(1).ok_or(VectorError::InvalidParameters(
            "a graph holds at most 2^32 - 1 records",
        ))?;
        let mut prepared = vector.to_vec();
        parameters.metric.prepare(&mut prepared);
        let mut bytes = Vec::new();
        let navigation = &self.graph.navigation;
        match navigation.layout().kind {
            PayloadKind::CentredCodes => {
                let centre = self.centre_for(&prepared)?;
                estimator::encode_record(
                    navigation.layout(),
                    parameters.metric,
                    internal_id,
                    &prepared,
                    &self.centres,
                    centre,
                    &mut bytes,
                );
            }
            PayloadKind::Codes => {
                encode_record(navigation.layout(), internal_id, 0, &prepared, &mut bytes)
            }
            PayloadKind::Floats => encode_float_record(
                navigation,
                parameters.metric,
                internal_id,
                vector,
                &prepared,
                &mut bytes,
            ),
        }
        navigation.write_record(record, &bytes)?;
        if let Some(full) = &self.graph.full {
            bytes.clear();
            encode_float_record(
                full,
                parameters.metric,
                internal_id,
                vector,
                &prepared,
                &mut bytes,
            );
            full.write_record(record, &bytes)?;
        }
        self.appended = true;
        self.state.record_count = next;
        self.ids
            .put(&internal_id.to_be_bytes(), &record.to_le_bytes())?;
        append_record_id(&*self.record_map, record, internal_id)?;
        self.live.insert(internal_id);
        self.buffer.insert(record);
        if self.buffer.len() >= parameters.merge_threshold_vectors as u64 {
            return self.merge().map(Some);
        }
        Ok(None)
    }

    /// The centre a new prepared vector is coded against (`graph::centres::nearest_centre`).
    fn centre_for(&mut self, prepared: &[f32]) -> Result<u32, VectorError> {
        if self.centres.is_empty() {
            return Ok(estimator::NO_CENTRE);
        }
        let records = self.graph.building_records(self.state.record_count);
        let space = Space::new(&records, self.graph.parameters.metric);
        let outcome = writer_links(
            &mut self.links,
            &mut self.links_seed,
            &*self.nodes,
            &self.state,
        )
        .and_then(|links| {
            nearest_centre(&*links, &space, &self.centres, prepared, &mut self.scratch)
        });
        if outcome.is_err() {
            self.links = None;
        }
        outcome
    }

    /// Links every buffered vector into the graph.
    pub fn merge(&mut self) -> Result<MergeReport, VectorError> {
        let outcome = self.merge_buffer();
        if outcome.is_err() {
            self.links = None;
        }
        outcome
    }

    fn merge_buffer(&mut self) -> Result<MergeReport, VectorError> {
        if self.buffer.is_empty() {
            return Ok(MergeReport {
                merged: 0,
                nodes_before: self.live.len() as usize,
                relinked_existing: 0,
            });
        }
        let parameters = self.graph.parameters;
        let graph = self.graph;
        let records = graph.building_records(self.state.record_count);
        let space = Space::new(&records, parameters.metric);
        // From here on the node tree may change (even if the operation fails half-way): the
        // links version must change at `finish`.
        self.links_changed = true;
        let links = writer_links(
            &mut self.links,
            &mut self.links_seed,
            &*self.nodes,
            &self.state,
        )?;
        let nodes_before = (self.live.len() - self.buffer.len()) as usize;
        let mut random = SplitMix64::new(self.state.random_state);
        let mut relinked = RoaringBitmap::new();
        for record in &self.buffer {
            let level = random_level(&mut random, parameters.level_factor());
            let found = insert_node(
                links,
                &space,
                &parameters,
                record,
                level,
                &mut self.scratch,
                &mut relinked,
            )?;
            if level >= CENTRE_LEVEL_MIN && graph.full.is_some() {
                let centre = local_centre(&space, record, &found);
                let number = self.centres.push(record, &centre);
                let bytes: Vec<u8> = record
                    .to_le_bytes()
                    .into_iter()
                    .chain(centre.iter().flat_map(|value| value.to_le_bytes()))
                    .collect();
                self.meta.put(&centre_key(number), &bytes)?;
                self.state.centre_count = self.centres.len();
            }
        }
        ensure_reachable(links, &space, &parameters, &mut self.scratch, &mut relinked)?;
        flush_dense(links, &*self.nodes)?;
        let report = MergeReport {
            merged: self.buffer.len() as usize,
            nodes_before,
            relinked_existing: relinked.difference_len(&self.buffer),
        };
        self.state.entry_point = crate::vector::graph::Links::entry_point(&*links);
        self.state.random_state = random.state();
        self.buffer.clear();
        Ok(report)
    }

    /// Removes the vectors of `internal_ids` (absent ids are ignored), patching the graph's
    /// links in place (no tombstones).
    pub fn delete(&mut self, internal_ids: &RoaringBitmap) -> Result<(), VectorError> {
        let outcome = self.delete_records(internal_ids);
        if outcome.is_err() {
            self.links = None;
        }
        outcome
    }

    fn delete_records(&mut self, internal_ids: &RoaringBitmap) -> Result<(), VectorError> {
        let mut graph_records = RoaringBitmap::new();
        for internal_id in &(internal_ids & &self.live) {
            let record = record_of(&*self.ids, internal_id, self.state.record_count)?
                .ok_or_else(|| VectorError::Corrupted(format!("live id {internal_id} unmapped")))?;
            self.ids.delete(&internal_id.to_be_bytes())?;
            self.live.remove(internal_id);
            if !self.buffer.remove(record) {
                graph_records.insert(record);
            }
        }
        if graph_records.is_empty() {
            return Ok(());
        }
        let parameters = self.graph.parameters;
        let records = self.graph.building_records(self.state.record_count);
        let space = Space::new(&records, parameters.metric);
        // From here on the node tree may change (even if the operation fails half-way): the
        // links version must change at `finish`.
        self.links_changed = true;
        let links = writer_links(
            &mut self.links,
            &mut self.links_seed,
            &*self.nodes,
            &self.state,
        )?;
        let mut relinked = RoaringBitmap::new();
        delete_nodes(
            links,
            &space,
            &parameters,
            &graph_records,
            &mut self.scratch,
            &mut relinked,
        )?;
        flush_dense(links, &*self.nodes)?;
        self.state.entry_point = crate::vector::graph::Links::entry_point(&*links);
        Ok(())
    }

    /// Answers a query over the writer's current state (its own changes included).
    pub fn search(&mut self, request: &SearchRequest<'_>) -> Result<Vec<Hit>, VectorError> {
        let links = ReadLinks {
            tree: &*self.nodes,
            entry_point: self.state.entry_point,
            record_count: self.state.record_count,
        };
        let buffer: Vec<u32> = self.buffer.iter().collect();
        search_state(
            self.graph,
            &links,
            &*self.ids,
            self.graph.navigation.records(self.state.record_count),
            &self.live,
            &buffer,
            None,
            None,
            &self.centres,
            request,
            &mut self.scratch,
        )
    }

    /// Makes the appended vectors durable and records the graph's state in the transaction.
    /// Must be called before the transaction commits.
    pub fn finish(self) -> Result<(), VectorError> {
        if self.appended {
            self.graph.navigation.sync()?;
            if let Some(full) = &self.graph.full {
                full.sync()?;
            }
        }
        self.meta.put(STATE_KEY, &encode_state(&self.state))?;
        write_bitmap(&*self.meta, LIVE_KEY, &self.live)?;
        write_bitmap(&*self.meta, BUFFER_KEY, &self.buffer)?;
        if self.links_changed {
            let version = new_links_version();
            self.meta.put(LINKS_VERSION_KEY, &version.to_le_bytes())?;
            if let Some(links) = self.links {
                // Valid only once a snapshot carrying `version` is committed.
                self.graph
                    .links_cache
                    .publish_pending(version, Arc::new(links));
            }
        }
        Ok(())
    }
}

/// Full vectors reachable from a graph (for benchmarks that want raw re-scoring numbers).
pub fn full_vectors(graph: &Graph, record_count: u32) -> impl FullVectors + '_ {
    let file = graph.full.as_ref().unwrap_or(&graph.navigation);
    FileVectors {
        records: file.records(record_count),
    }
}
