//! The vector store's side of the benchmark: a persisted graph in a page store on disk.

use super::dataset::{Dataset, K, ground_truth, mean_recall};
use super::measure::{evict, percentile, print_memory, seconds, thread_cpu_seconds};
use roaring::RoaringBitmap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use storage_engine::vector::random::SplitMix64;
use storage_engine::vector::store::graph::centre_stored_bytes;
use storage_engine::vector::store::{ReadTrees, vector_file_paths};
use storage_engine::vector::{
    Graph, GraphOptions, GraphParameters, GraphReader, Metric, SearchRequest, SearchScratch,
};
use storage_engine::{Database, Options, SyncMode};

/// Queries timed cold (each on a page cache emptied of the store's files).
const COLD_QUERIES: usize = 50;
/// Beam widths swept on the quantized graph beyond the common sweep.
const QUANTIZED_EXTRA_EF: [usize; 1] = [800];
/// Name of the full-precision graph.
const FLOAT_GRAPH: &str = "float";
/// Name of the binary-quantized graph.
const QUANTIZED_GRAPH: &str = "quantized";

fn text<E: std::fmt::Display>(error: E) -> String {
    error.to_string()
}

fn options() -> Options {
    Options {
        maximum_size_bytes: 1 << 37,
        sync_mode: SyncMode::Full,
        ..Options::default()
    }
}

/// Where the store lives.
pub struct StorePaths {
    /// The directory.
    pub directory: PathBuf,
    /// The page store file.
    pub pages: PathBuf,
}

/// Wall-clock and thread CPU seconds of one measured step.
#[derive(Debug, Clone, Copy)]
struct Elapsed {
    wall: f64,
    cpu: f64,
}

/// Builds graph `name` from the whole data set in one transaction.
fn build(
    database: &Database,
    directory: &Path,
    name: &str,
    parameters: GraphParameters,
    dataset: &Dataset,
) -> Result<Elapsed, String> {
    let start = Instant::now();
    let cpu_start = thread_cpu_seconds();
    let write = database.begin_write().map_err(text)?;
    let graph = Graph::create(&write, directory, name, parameters).map_err(text)?;
    let mut writer = graph.writer(&write).map_err(text)?;
    for row in 0..dataset.count() {
        writer
            .insert(row as u32, dataset.vector(row))
            .map_err(text)?;
    }
    writer.merge().map_err(text)?;
    writer.finish().map_err(text)?;
    write.commit().map_err(text)?;
    Ok(Elapsed {
        wall: seconds(start),
        cpu: thread_cpu_seconds() - cpu_start,
    })
}

/// One sweep's outcome.
struct Sweep {
    recall: f64,
    /// Queries per wall-clock second.
    qps: f64,
    /// Queries per thread CPU second.
    cpu_qps: f64,
    /// Latencies in µs.
    latencies: Vec<f64>,
}

/// Runs every query once.
fn sweep(
    reader: &GraphReader<'_>,
    dataset: &Dataset,
    truth: &[Vec<u32>],
    ef: usize,
    rescore: bool,
    candidates: Option<&RoaringBitmap>,
) -> Result<Sweep, String> {
    let mut scratch = SearchScratch::new();
    let mut found = Vec::with_capacity(truth.len());
    let mut latencies = Vec::with_capacity(truth.len());
    let start = Instant::now();
    let cpu_start = thread_cpu_seconds();
    for row in 0..truth.len() {
        let query_start = Instant::now();
        let request = SearchRequest {
            vector: dataset.query(row),
            limit: K,
            ef: Some(ef),
            candidates,
            rescore,
        };
        let hits = reader.search(&request, &mut scratch).map_err(text)?;
        latencies.push(query_start.elapsed().as_secs_f64() * 1e6);
        found.push(hits.iter().map(|hit| hit.internal_id).collect::<Vec<u32>>());
    }
    let elapsed = seconds(start);
    let cpu = thread_cpu_seconds() - cpu_start;
    Ok(Sweep {
        recall: mean_recall(&found, truth),
        qps: truth.len() as f64 / elapsed,
        cpu_qps: truth.len() as f64 / cpu,
        latencies,
    })
}

/// The whole store benchmark; prints Markdown.
pub fn run_store(
    dataset: &Dataset,
    truth: &[Vec<u32>],
    work: &Path,
    efs: &[usize],
    flags: Sections,
) -> Result<(), String> {
    let directory = work.join(format!("store-{}-{}", dataset.name, dataset.count()));
    let paths = StorePaths {
        pages: directory.join("shard.pages"),
        directory,
    };
    let count = dataset.count();
    let mut parameters = GraphParameters::new(Metric::Cosine, dataset.dimensions);
    parameters.merge_threshold_vectors = 4_096;
    if flags.hot_rounds > 0 {
        return hot_only(&paths, dataset, truth, efs, parameters, flags);
    }
    let _ = std::fs::remove_dir_all(&paths.directory);
    std::fs::create_dir_all(&paths.directory).map_err(text)?;
    let mut float_pages = None;
    if flags.full_precision {
        let database = Database::open(&paths.pages, options()).map_err(text)?;
        let used_before = database.stats().used_pages;
        let build_time = build(
            &database,
            &paths.directory,
            FLOAT_GRAPH,
            parameters,
            dataset,
        )?;
        let build_seconds = build_time.wall;
        println!(
            "\n## Full-precision graph (M={}, M0={}, ef_construction={})\n",
            parameters.m, parameters.m0, parameters.ef_construction
        );
        println!(
            "build: {build_seconds:.1} s wall, {:.1} s thread CPU ({:.0} vectors/s wall, {:.0} vectors/s CPU; single thread, one transaction, merges every {} vectors)\n",
            build_time.cpu,
            count as f64 / build_seconds,
            count as f64 / build_time.cpu,
            parameters.merge_threshold_vectors
        );
        let stats = database.stats();
        let read = database.begin_read();
        let graph = open_float_graph(&read, &paths, false, flags.sketch)?;
        let reader = graph.reader(&read).map_err(text)?;
        float_pages = Some(report_bytes(
            &reader,
            &graph,
            (stats.used_pages - used_before) * stats.page_bytes,
            count,
        )?);
        println!(
            "\n### Hot, single thread, k=10 (vectors read through the file mapping, page cache warm)"
        );
        hot_table(&reader, dataset, truth, efs)?;
        // One open graph per file at a time (the files are locked): the same graph again,
        // opened with `prefetch_memory`, for the rest.
        drop(reader);
        drop(graph);
        let graph = open_float_graph(&read, &paths, true, flags.sketch)?;
        let reader = graph.reader(&read).map_err(text)?;
        println!(
            "\n### Hot, single thread, k=10, `prefetch_memory` (vectors read from the memory copy on huge pages)"
        );
        hot_table(&reader, dataset, truth, efs)?;
        filtered(&reader, dataset, parameters.ef_search)?;
        println!(
            "distance sketch (readers, in memory): {:.1} bytes per vector",
            graph.sketch_bytes() as f64 / count as f64
        );
        print_memory("after the full-precision build, hot sweep and filtered rows");
        drop(reader);
        drop(read);
        merge_cost(&database, &graph, dataset, build_seconds)?;
    }
    if flags.cold && flags.full_precision {
        cold(&paths, dataset, truth, parameters)?;
    }
    if flags.quantized {
        let quantized_bytes = quantized(&paths, dataset, truth, efs)?;
        if let Some(float_pages) = float_pages {
            bytes_by_dimensions(float_pages, &quantized_bytes);
        }
    }
    Ok(())
}

/// Opens the full-precision graph of `paths` for reading.
fn open_float_graph(
    read: &dyn ReadTrees,
    paths: &StorePaths,
    prefetch_memory: bool,
    distance_sketch: bool,
) -> Result<Graph, String> {
    let options = GraphOptions {
        prefetch_memory,
        distance_sketch,
    };
    Graph::open(read, &paths.directory, FLOAT_GRAPH, options).map_err(text)
}

/// One hot sweep over `efs` (after a warm-up pass at the first), as a Markdown table.
fn hot_table(
    reader: &GraphReader<'_>,
    dataset: &Dataset,
    truth: &[Vec<u32>],
    efs: &[usize],
) -> Result<(), String> {
    println!(
        "\n| ef | recall@10 | QPS (wall) | QPS (thread CPU) | p50 µs | p99 µs |\n|---|---|---|---|---|---|"
    );
    sweep(reader, dataset, truth, efs[0], true, None)?;
    for &ef in efs {
        let run = sweep(reader, dataset, truth, ef, true, None)?;
        println!(
            "| {ef} | {:.4} | {:.0} | {:.0} | {:.0} | {:.0} |",
            run.recall,
            run.qps,
            run.cpu_qps,
            percentile(&run.latencies, 0.5),
            percentile(&run.latencies, 0.99)
        );
    }
    Ok(())
}

/// Which optional sections run.
#[derive(Debug, Clone, Copy)]
pub struct Sections {
    /// Cold-start measurements.
    pub cold: bool,
    /// The binary-quantized graph.
    pub quantized: bool,
    /// When above 0: only the hot sweep, this many rounds, plus the filtered rows, on the
    /// store an earlier run left in the work directory (built first if there is none).
    pub hot_rounds: usize,
    /// Open the full-precision graph with the readers' distance sketch (hot, filtered rows).
    pub sketch: bool,
    /// Build and measure the full-precision graph (hot, filtered, merge, cold rows).
    pub full_precision: bool,
}

/// The A/B mode (`--hot-rounds N`): builds the full-precision graph only when the work
/// directory holds none, then runs the hot sweep `rounds` times and the filtered rows, so that
/// two binaries can be compared on the same graph with interleaved runs.
fn hot_only(
    paths: &StorePaths,
    dataset: &Dataset,
    truth: &[Vec<u32>],
    efs: &[usize],
    parameters: GraphParameters,
    flags: Sections,
) -> Result<(), String> {
    let rounds = flags.hot_rounds;
    let database = if paths.pages.exists() {
        Database::open(&paths.pages, options()).map_err(text)?
    } else {
        std::fs::create_dir_all(&paths.directory).map_err(text)?;
        let database = Database::open(&paths.pages, options()).map_err(text)?;
        let elapsed = build(
            &database,
            &paths.directory,
            FLOAT_GRAPH,
            parameters,
            dataset,
        )?;
        println!(
            "build: {:.1} s wall, {:.1} s thread CPU",
            elapsed.wall, elapsed.cpu
        );
        database
    };
    let read = database.begin_read();
    let graph = open_float_graph(&read, paths, true, flags.sketch)?;
    let reader = graph.reader(&read).map_err(text)?;
    println!(
        "distance sketch: {} bytes per vector",
        graph.sketch_bytes() as f64 / dataset.count() as f64
    );
    sweep(&reader, dataset, truth, efs[0], true, None)?;
    for round in 0..rounds {
        println!(
            "\n### Hot, round {round}\n\n| ef | recall@10 | QPS (wall) | QPS (thread CPU) | p50 µs |\n|---|---|---|---|---|"
        );
        for &ef in efs {
            let run = sweep(&reader, dataset, truth, ef, true, None)?;
            println!(
                "| {ef} | {:.4} | {:.0} | {:.0} | {:.0} |",
                run.recall,
                run.qps,
                run.cpu_qps,
                percentile(&run.latencies, 0.5)
            );
        }
    }
    filtered(&reader, dataset, parameters.ef_search)
}

fn report_bytes(
    reader: &GraphReader<'_>,
    graph: &Graph,
    page_store_bytes: u64,
    count: usize,
) -> Result<f64, String> {
    let node_bytes = reader.node_bytes().map_err(text)?;
    let file = graph.navigation_file();
    let vector_bytes = file.logical_bytes(reader.record_count());
    let pages_per_vector = page_store_bytes as f64 / count as f64;
    println!("| bytes per vector | value |\n|---|---|");
    println!(
        "| graph node entries (keys + link lists) | {:.1} |",
        node_bytes as f64 / count as f64
    );
    println!(
        "| page store pages (nodes + ids + meta trees, B-tree overhead and free space included) | {pages_per_vector:.1} |"
    );
    println!(
        "| vector file (record = 8-byte header + floats) | {:.1} |",
        vector_bytes as f64 / count as f64
    );
    Ok(pages_per_vector)
}

/// What the binary-quantized build measured, per vector, to price other dimensions.
struct QuantizedBytes {
    /// Page-store bytes of the graph, its centres included.
    pages: f64,
    /// Centres per vector (about one per `m` vectors).
    centres: f64,
    /// Dimensions of the measured centres.
    dimensions: usize,
    /// Page size of the store.
    page_bytes: usize,
}

impl QuantizedBytes {
    /// Bytes per vector of centres of `dimensions` floats as the meta tree stores them (key,
    /// node number and floats; whole overflow pages past a quarter page; leaf fill aside).
    fn centre_bytes(&self, dimensions: usize) -> f64 {
        self.centres * centre_stored_bytes(self.page_bytes, dimensions) as f64
    }

    /// Page-store bytes per vector besides the centres: independent of the dimensions.
    fn navigation_pages(&self) -> f64 {
        self.pages - self.centre_bytes(self.dimensions)
    }
}

/// Bytes per vector at other dimensions: the page-store bytes measured here (independent of
/// the dimensions, centres apart) plus the record strides of the vector files and, for a
/// quantized graph that keeps full vectors, its centres at those dimensions (a Hamming
/// graph has none).
fn bytes_by_dimensions(float_pages: f64, quantized: &QuantizedBytes) {
    use storage_engine::vector::records::{PayloadKind, RecordLayout};
    println!(
        "\n### Bytes per vector by dimensions (page-store bytes measured above + vector records)\n\n{:.3} centres per vector measured. Quantized with full vectors = page-store pages without centres + centred code record (codes + 2 correction factors) + centres as the meta tree stores them (key, node number and floats, in a whole overflow page once past a quarter page) + full vector record; Hamming = page-store pages without centres + code record.\n\n| dimensions | raw f32 | full precision (graph + vector file) | overhead vs raw | quantized + full vectors kept for re-scoring | of which centres | quantized only (Hamming, codes) |\n|---|---|---|---|---|---|---|",
        quantized.centres
    );
    let stride = |kind, dimensions| RecordLayout { kind, dimensions }.stride() as f64;
    for dimensions in [384, 768, 1_536, 3_072] {
        let floats = stride(PayloadKind::Floats, dimensions);
        let centred_codes = stride(PayloadKind::CentredCodes, dimensions);
        let codes = stride(PayloadKind::Codes, dimensions);
        let centres = quantized.centre_bytes(dimensions);
        let raw = 4.0 * dimensions as f64;
        let full = float_pages + floats;
        let navigation = quantized.navigation_pages();
        println!(
            "| {dimensions} | {raw:.0} | {full:.0} | {:.1} % | {:.0} | {centres:.0} | {:.0} |",
            100.0 * (full - raw) / raw,
            navigation + centred_codes + centres + floats,
            navigation + codes
        );
    }
}

fn random_subset(count: usize, fraction: f64, seed: u64) -> RoaringBitmap {
    let mut random = SplitMix64::new(seed);
    (0..count as u32)
        .filter(|_| random.next_unit_f64() < fraction)
        .collect()
}

fn filtered(reader: &GraphReader<'_>, dataset: &Dataset, ef: usize) -> Result<(), String> {
    println!(
        "\n### Filtered (random candidate sets, uncorrelated with the queries), ef={ef}\n\n| selectivity | candidates | path | recall@10 | QPS (wall) | QPS (thread CPU) | p50 µs |\n|---|---|---|---|---|---|---|"
    );
    for (fraction, seed) in [(0.01, 1), (0.10, 2)] {
        let candidates = random_subset(dataset.count(), fraction, seed);
        let truth = ground_truth(dataset, &|id| candidates.contains(id));
        let run = sweep(reader, dataset, &truth, ef, true, Some(&candidates))?;
        let threshold = (storage_engine::vector::searching::EXACT_SEARCH_SELECTIVITY_MAX
            * dataset.count() as f64) as u64;
        let path = if candidates.len()
            <= threshold
                .max(storage_engine::vector::parameters::DEFAULT_EXACT_SEARCH_CANDIDATES_MIN)
        {
            "exact"
        } else {
            "graph"
        };
        println!(
            "| {:.0}% | {} | {path} | {:.4} | {:.0} | {:.0} | {:.0} |",
            fraction * 100.0,
            candidates.len(),
            run.recall,
            run.qps,
            run.cpu_qps,
            percentile(&run.latencies, 0.5)
        );
    }
    Ok(())
}

fn merge_cost(
    database: &Database,
    graph: &Graph,
    dataset: &Dataset,
    build_seconds: f64,
) -> Result<(), String> {
    let extra = dataset.extra.len() / dataset.dimensions;
    let start = Instant::now();
    let write = database.begin_write().map_err(text)?;
    let mut writer = graph.writer(&write).map_err(text)?;
    for row in 0..extra {
        let vector = &dataset.extra[row * dataset.dimensions..(row + 1) * dataset.dimensions];
        writer
            .insert((dataset.count() + row) as u32, vector)
            .map_err(text)?;
    }
    let report = writer.merge().map_err(text)?;
    writer.finish().map_err(text)?;
    write.commit().map_err(text)?;
    let merge_seconds = seconds(start);
    println!(
        "\n### Incremental merge\n\nmerging {extra} vectors (1 %) into {} took {merge_seconds:.2} s = {:.1} % of the full build; it re-linked {:.2} % of the existing nodes\n",
        report.nodes_before,
        100.0 * merge_seconds / build_seconds,
        100.0 * report.relinked_fraction()
    );
    let write = database.begin_write().map_err(text)?;
    let mut writer = graph.writer(&write).map_err(text)?;
    writer
        .delete(&(dataset.count() as u32..(dataset.count() + extra) as u32).collect())
        .map_err(text)?;
    writer.finish().map_err(text)?;
    write.commit().map_err(text)?;
    Ok(())
}

fn evict_store(paths: &StorePaths, name: &str, parameters: &GraphParameters) -> Result<(), String> {
    evict(&paths.pages)?;
    let (navigation, full) = vector_file_paths(&paths.directory, name, parameters);
    evict(&navigation)?;
    if let Some(full) = full {
        evict(&full)?;
    }
    Ok(())
}

fn cold(
    paths: &StorePaths,
    dataset: &Dataset,
    truth: &[Vec<u32>],
    parameters: GraphParameters,
) -> Result<(), String> {
    println!(
        "\n### Cold start (page cache emptied of the store's files, then {COLD_QUERIES} queries, ef={})\n\n| prefetch_memory | open ms | first query µs | p50 µs | p99 µs | total ms (open + queries) | recall@10 |\n|---|---|---|---|---|---|---|",
        parameters.ef_search
    );
    for prefetch_memory in [false, true] {
        evict_store(paths, FLOAT_GRAPH, &parameters)?;
        let start = Instant::now();
        let database = Database::open(&paths.pages, options()).map_err(text)?;
        let read = database.begin_read();
        let graph = Graph::open(
            &read,
            &paths.directory,
            FLOAT_GRAPH,
            GraphOptions {
                prefetch_memory,
                ..GraphOptions::default()
            },
        )
        .map_err(text)?;
        let reader = graph.reader(&read).map_err(text)?;
        let open_ms = seconds(start) * 1e3;
        let Sweep {
            recall, latencies, ..
        } = sweep(
            &reader,
            dataset,
            &truth[..COLD_QUERIES],
            parameters.ef_search,
            true,
            None,
        )?;
        let total_ms = seconds(start) * 1e3;
        println!(
            "| {prefetch_memory} | {open_ms:.1} | {:.0} | {:.0} | {:.0} | {total_ms:.1} | {recall:.4} |",
            latencies[0],
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        );
    }
    Ok(())
}

fn quantized(
    paths: &StorePaths,
    dataset: &Dataset,
    truth: &[Vec<u32>],
    efs: &[usize],
) -> Result<QuantizedBytes, String> {
    let mut parameters = GraphParameters::new(Metric::Cosine, dataset.dimensions);
    parameters.binary_quantized = true;
    parameters.merge_threshold_vectors = 4_096;
    let database = Database::open(&paths.pages, options()).map_err(text)?;
    let used_before = database.stats().used_pages;
    let elapsed = build(
        &database,
        &paths.directory,
        QUANTIZED_GRAPH,
        parameters,
        dataset,
    )?;
    let build_seconds = elapsed.wall;
    let stats = database.stats();
    let quantized_pages =
        ((stats.used_pages - used_before) * stats.page_bytes) as f64 / dataset.count() as f64;
    println!(
        "\n## Binary-quantized graph (centred 1-bit codes navigated by asymmetric estimates, links by full-precision distances, re-scoring max(k x {} (per result, from the dimensions), ef) candidates; in the same page store)\n\nbuild: {build_seconds:.1} s wall, {:.1} s thread CPU ({:.0} vectors/s wall)\n",
        storage_engine::vector::searching::rescore_candidates_per_result(dataset.dimensions),
        elapsed.cpu,
        dataset.count() as f64 / build_seconds
    );
    let read = database.begin_read();
    let graph = Graph::open(
        &read,
        &paths.directory,
        QUANTIZED_GRAPH,
        GraphOptions::default(),
    )
    .map_err(text)?;
    let reader = graph.reader(&read).map_err(text)?;
    print_memory("after the quantized build");
    let codes = graph.navigation_file().logical_bytes(reader.record_count());
    let count = dataset.count() as f64;
    sweep(&reader, dataset, truth, efs[0], true, None)?;
    let centres = graph.centre_bytes() as f64;
    let nodes = reader.node_bytes().map_err(text)? as f64;
    println!(
        "code file: {:.1} bytes per vector; centres: {} ({:.1} bytes per vector); node entries: {:.1} bytes per vector; page store pages: {quantized_pages:.1} bytes per vector",
        codes as f64 / count,
        graph.centre_bytes() / (4 * dataset.dimensions),
        centres / count,
        nodes / count
    );
    println!(
        "resident for navigation (codes + centres + node entries): {:.1} bytes per vector (float vectors are read only to re-score)\n",
        (codes as f64 + centres + nodes) / count
    );
    let default_run = sweep(&reader, dataset, truth, parameters.ef_search, true, None)?;
    println!(
        "default parameters (ef_search {}, k=10): recall@10 {:.4}, {:.0} QPS (wall), {:.0} QPS (thread CPU), p50 {:.0} µs, p99 {:.0} µs\n",
        parameters.ef_search,
        default_run.recall,
        default_run.qps,
        default_run.cpu_qps,
        percentile(&default_run.latencies, 0.5),
        percentile(&default_run.latencies, 0.99)
    );
    println!(
        "| ef | recall@10 re-scored | QPS re-scored (wall) | (thread CPU) | recall@10 estimates only | QPS estimates only (wall) | (thread CPU) |\n|---|---|---|---|---|---|---|"
    );
    for &ef in efs.iter().chain(&QUANTIZED_EXTRA_EF) {
        let rescored = sweep(&reader, dataset, truth, ef, true, None)?;
        let raw = sweep(&reader, dataset, truth, ef, false, None)?;
        println!(
            "| {ef} | {:.4} | {:.0} | {:.0} | {:.4} | {:.0} | {:.0} |",
            rescored.recall, rescored.qps, rescored.cpu_qps, raw.recall, raw.qps, raw.cpu_qps
        );
    }
    drop(reader);
    drop(read);
    drop(graph);
    let (_, full) = vector_file_paths(&paths.directory, QUANTIZED_GRAPH, &parameters);
    let full = full.ok_or("a quantized cosine graph keeps full vectors")?;
    evict(&full)?;
    let read = database.begin_read();
    let graph = Graph::open(
        &read,
        &paths.directory,
        QUANTIZED_GRAPH,
        GraphOptions {
            prefetch_memory: true,
            ..GraphOptions::default()
        },
    )
    .map_err(text)?;
    let reader = graph.reader(&read).map_err(text)?;
    let Sweep {
        recall,
        qps,
        latencies,
        ..
    } = sweep(
        &reader,
        dataset,
        &truth[..COLD_QUERIES],
        parameters.ef_search,
        true,
        None,
    )?;
    let reads = graph.full_file().map_or(0, |file| file.uring_reads());
    println!(
        "\ncold re-scoring ({COLD_QUERIES} queries, codes prefetched, full vectors evicted): {reads} records read through io_uring in batches, p50 {:.0} µs, p99 {:.0} µs, {qps:.0} QPS, recall@10 {recall:.4}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    Ok(QuantizedBytes {
        pages: quantized_pages,
        centres: (centres / (size_of::<f32>() * dataset.dimensions) as f64) / count,
        dimensions: dataset.dimensions,
        page_bytes: stats.page_bytes as usize,
    })
}
