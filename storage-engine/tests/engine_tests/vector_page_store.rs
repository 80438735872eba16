//! The persisted graph on the real page store: reopening from disk, readers on snapshots
//! while the writer commits, and crash images taken at every sync point of inserts, merges
//! and deletes, each of which must reopen to a consistent graph at a committed state.
//! Knobs: `VECTOR_CRASH_ROUNDS` (default 8), `VECTOR_CRASH_VARIANTS` (default 2).
#![allow(clippy::unwrap_used)]
// A test file is a test module: its scenario functions read top to bottom as one story, so the
// 70-line limit of the engine's own code does not apply here.
#![allow(clippy::too_many_lines)]

use roaring::RoaringBitmap;
use storage_engine::io::{PageIo, SimulatedIo};
use storage_engine::vector::random::SplitMix64;
use storage_engine::vector::store::{FileBackends, Graph, GraphOptions, VectorBackends};
use storage_engine::vector::synthetic::{brute_force, clustered_vectors, recall};
use storage_engine::vector::{GraphParameters, Metric, SearchRequest, SearchScratch};
use storage_engine::{Database, Options, SyncMode};

const DIMENSIONS: usize = 24;
const PAGE_STORE_BYTES: usize = 16 << 20;
const VECTOR_FILE_BYTES: usize = 8 << 20;

fn environment_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn parameters() -> GraphParameters {
    let mut parameters = GraphParameters::new(Metric::Cosine, DIMENSIONS);
    parameters.merge_threshold_vectors = 64;
    parameters
}

#[test]
fn a_graph_in_the_page_store_reopens_from_disk_with_high_recall() {
    let seed = 51;
    println!("seed {seed}");
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir_in succeeds");
    let path = directory.path().join("shard.pages");
    let options = Options {
        maximum_size_bytes: 1 << 30,
        ..Options::default()
    };
    let vectors = clustered_vectors(1_200, DIMENSIONS, 12, 0.3, seed, seed);
    let queries = clustered_vectors(20, DIMENSIONS, 12, 0.3, seed, seed + 1);
    {
        let database = Database::open(&path, options.clone()).expect("open succeeds");
        let write = database.begin_write().expect("begin_write succeeds");
        let graph = Graph::create(&write, directory.path(), "default", parameters())
            .expect("create succeeds");
        write.commit().expect("commit succeeds");
        for batch in vectors.chunks(400 * DIMENSIONS).enumerate() {
            let write = database.begin_write().expect("begin_write succeeds");
            let mut writer = graph.writer(&write).expect("writer succeeds");
            for (row, vector) in batch.1.chunks_exact(DIMENSIONS).enumerate() {
                writer
                    .insert((batch.0 * 400 + row) as u32, vector)
                    .expect("insert succeeds");
            }
            writer.finish().expect("finish succeeds");
            write.commit().expect("commit succeeds");
        }
        let write = database.begin_write().expect("begin_write succeeds");
        let mut writer = graph.writer(&write).expect("writer succeeds");
        writer
            .delete(&(0..1_200).step_by(5).collect())
            .expect("delete succeeds");
        writer.merge().expect("merge succeeds");
        writer.finish().expect("finish succeeds");
        write.commit().expect("commit succeeds");
    }
    let database = Database::open(&path, options).expect("open succeeds");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    let read = database.begin_read();
    let graph = Graph::open(
        &read,
        directory.path(),
        "default",
        GraphOptions {
            prefetch_memory: true,
            ..GraphOptions::default()
        },
    )
    .expect("open succeeds");
    assert!(graph.prefetched_bytes() > 0);
    let reader = graph.reader(&read).expect("reader succeeds");
    assert_eq!(reader.check().expect("check succeeds"), None);
    assert_eq!((reader.len(), reader.buffered()), (960, 0));
    let live: RoaringBitmap = (0..1_200).filter(|id| id % 5 != 0).collect();
    let mut scratch = SearchScratch::new();
    let mut total = 0.0;
    for query in queries.chunks_exact(DIMENSIONS) {
        let hits = reader
            .search(&SearchRequest::new(query, 10), &mut scratch)
            .expect("search succeeds");
        let truth = brute_force(Metric::Cosine, &vectors, DIMENSIONS, query, 10, Some(&live));
        total += recall(
            &hits.iter().map(|hit| hit.internal_id).collect::<Vec<_>>(),
            &truth,
        );
    }
    println!("recall@10 after reopening: {:.3}", total / 20.0);
    assert!(total / 20.0 >= 0.95);
}

#[test]
fn readers_on_snapshots_stay_consistent_while_the_writer_commits() {
    let seed = 52;
    println!("seed {seed}");
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir_in succeeds");
    let options = Options {
        maximum_size_bytes: 1 << 30,
        ..Options::default()
    };
    let database =
        Database::open(&directory.path().join("shard.pages"), options).expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let graph =
        Graph::create(&write, directory.path(), "default", parameters()).expect("create succeeds");
    write.commit().expect("commit succeeds");
    let vectors = clustered_vectors(800, DIMENSIONS, 8, 0.3, seed, seed);
    const BATCH: usize = 100;
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|reader_number| {
                let (database, graph, vectors) = (&database, &graph, &vectors);
                scope.spawn(move || {
                    let mut scratch = SearchScratch::new();
                    let mut seen = 0_u64;
                    for round in 0..40 {
                        let read = database.begin_read();
                        let reader = graph.reader(&read).expect("reader succeeds");
                        let count = reader.len();
                        assert_eq!(count % BATCH as u64, 0, "a reader never sees half a batch");
                        assert!(count >= seen, "snapshots only move forward");
                        seen = count;
                        let row = (round * 7 + reader_number) % 800;
                        let query = &vectors[row * DIMENSIONS..(row + 1) * DIMENSIONS];
                        let hits = reader
                            .search(&SearchRequest::new(query, 5), &mut scratch)
                            .expect("search succeeds");
                        assert!(
                            hits.iter()
                                .all(|hit| reader.live_ids().contains(hit.internal_id))
                        );
                        if (row as u64) < count {
                            assert_eq!(hits[0].internal_id, row as u32);
                        }
                        assert_eq!(reader.len(), count, "a snapshot does not change");
                    }
                })
            })
            .collect();
        for batch in 0..800 / BATCH {
            let write = database.begin_write().expect("begin_write succeeds");
            let mut writer = graph.writer(&write).expect("writer succeeds");
            for row in batch * BATCH..(batch + 1) * BATCH {
                writer
                    .insert(
                        row as u32,
                        &vectors[row * DIMENSIONS..(row + 1) * DIMENSIONS],
                    )
                    .expect("insert succeeds");
            }
            writer.finish().expect("finish succeeds");
            write.commit().expect("commit succeeds");
        }
        for reader in readers {
            reader.join().expect("join succeeds");
        }
    });
    let read = database.begin_read();
    assert_eq!(
        graph
            .reader(&read)
            .expect("reader succeeds")
            .check()
            .expect("check succeeds"),
        None
    );
}

struct VectorDisks {
    navigation: SimulatedIo,
}

impl VectorDisks {
    fn backends(&self) -> FileBackends {
        VectorBackends {
            navigation: Box::new(self.navigation.clone()) as Box<dyn PageIo>,
            full: None,
        }
        .into()
    }

    fn after_power_loss(&self) -> VectorDisks {
        VectorDisks {
            navigation: SimulatedIo::from_image(
                &self.navigation.durable_image(),
                VECTOR_FILE_BYTES,
                0,
            ),
        }
    }
}

fn page_store_options() -> Options {
    Options {
        maximum_size_bytes: PAGE_STORE_BYTES as u64,
        sync_mode: SyncMode::Full,
        ..Options::default()
    }
}

#[test]
fn a_crash_during_insert_merge_or_delete_reopens_to_a_consistent_graph() {
    let seed = environment_number("VECTOR_CRASH_SEED", 53);
    let rounds = environment_number("VECTOR_CRASH_ROUNDS", 8);
    let variants = environment_number("VECTOR_CRASH_VARIANTS", 2) as usize;
    println!("seed {seed}, {rounds} rounds, {variants} images per sync point");
    let vectors = clustered_vectors(2_000, DIMENSIONS, 10, 0.3, seed, seed);
    let page_io = SimulatedIo::new(PAGE_STORE_BYTES, seed);
    let disks = VectorDisks {
        navigation: SimulatedIo::new(VECTOR_FILE_BYTES, seed + 1),
    };
    let database = Database::open_with_io(Box::new(page_io.clone()), page_store_options())
        .expect("open_with_io succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let graph = Graph::create_with_backends(&write, "default", parameters(), disks.backends())
        .expect("create_with_backends succeeds");
    write.commit().expect("commit succeeds");
    page_io.record_crash_images(variants);
    let mut random = SplitMix64::new(seed);
    let mut committed = RoaringBitmap::new();
    let mut images_checked = 0;
    for round in 0..rounds {
        let mut next = committed.clone();
        let write = database.begin_write().expect("begin_write succeeds");
        let mut writer = graph.writer(&write).expect("writer succeeds");
        for _ in 0..random.next_below(150) {
            let id = random.next_below(2_000) as u32;
            writer
                .insert(id, &vectors[id as usize * DIMENSIONS..][..DIMENSIONS])
                .expect("insert succeeds");
            next.insert(id);
        }
        if random.next_below(2) == 0 {
            let doomed: RoaringBitmap = next.iter().filter(|_| random.next_below(6) == 0).collect();
            writer.delete(&doomed).expect("delete succeeds");
            next -= doomed;
        }
        if random.next_below(3) == 0 {
            writer.merge().expect("merge succeeds");
        }
        // A power loss in the middle of the transaction (after inserts, deletes and merges,
        // before the commit) leaves the last committed graph.
        let mid_transaction = (page_io.durable_image(), disks.after_power_loss());
        writer.finish().expect("finish succeeds");
        let last_sync_before = page_io.sync_count();
        write.commit().expect("commit succeeds");
        let last_sync = page_io.sync_count();
        let survivors = disks.after_power_loss();
        for image in page_io.take_crash_images() {
            let reopened = SimulatedIo::from_image(&image.bytes, PAGE_STORE_BYTES, 0);
            let database = Database::open_with_io(Box::new(reopened), page_store_options())
                .expect("open_with_io succeeds");
            database
                .check_integrity()
                .expect("check_integrity succeeds");
            let read = database.begin_read();
            let graph = Graph::open_with_backends(
                &read,
                "default",
                survivors.backends(),
                GraphOptions::default(),
            )
            .expect("open_with_backends succeeds");
            let reader = graph.reader(&read).expect("reader succeeds");
            assert_eq!(
                reader.check().expect("check succeeds"),
                None,
                "round {round} sync {}",
                image.sync_index
            );
            let state = reader.live_ids().clone();
            let in_flight = image.sync_index == last_sync && state == next;
            assert!(
                state == committed || in_flight,
                "round {round}: crash at sync {} (commit syncs {}..={last_sync}) reopened to another state",
                image.sync_index,
                last_sync_before + 1
            );
            if let Some(id) = state.iter().next() {
                let query = &vectors[id as usize * DIMENSIONS..][..DIMENSIONS];
                let hits = reader
                    .search(&SearchRequest::new(query, 1), &mut SearchScratch::new())
                    .expect("search succeeds");
                assert!(hits[0].distance < 1e-5);
            }
            images_checked += 1;
        }
        let (image, survivors) = mid_transaction;
        let reopened = SimulatedIo::from_image(&image, PAGE_STORE_BYTES, 0);
        let database = Database::open_with_io(Box::new(reopened), page_store_options())
            .expect("open_with_io succeeds");
        let read = database.begin_read();
        let graph = Graph::open_with_backends(
            &read,
            "default",
            survivors.backends(),
            GraphOptions::default(),
        )
        .expect("open_with_backends succeeds");
        let reader = graph.reader(&read).expect("reader succeeds");
        assert_eq!(
            reader.check().expect("check succeeds"),
            None,
            "round {round}: mid-transaction crash"
        );
        assert_eq!(
            reader.live_ids(),
            &committed,
            "round {round}: mid-transaction crash"
        );
        committed = next;
    }
    println!("checked {images_checked} crash images");
    assert!(images_checked as u64 >= rounds);
}

/// Every query's hits (ids only), optionally filtered.
fn all_hits(
    reader: &storage_engine::vector::GraphReader<'_>,
    queries: &[f32],
    candidates: Option<&RoaringBitmap>,
) -> Vec<Vec<u32>> {
    let mut scratch = SearchScratch::new();
    queries
        .chunks_exact(DIMENSIONS)
        .map(|query| {
            let request = SearchRequest {
                candidates,
                ..SearchRequest::new(query, 10)
            };
            reader
                .search(&request, &mut scratch)
                .expect("search succeeds")
                .iter()
                .map(|hit| hit.internal_id)
                .collect()
        })
        .collect()
}

/// Inside `write`: inserts the rows of `vectors` from `first_row` on (ids = row numbers),
/// deletes every `delete_step`-th id below 400, merges and finishes.
fn insert_from_and_delete_every(
    graph: &Graph,
    write: &storage_engine::WriteTransaction,
    vectors: &[f32],
    first_row: usize,
    delete_step: usize,
) {
    let mut writer = graph.writer(write).expect("writer succeeds");
    for (row, vector) in vectors[first_row * DIMENSIONS..]
        .chunks_exact(DIMENSIONS)
        .enumerate()
    {
        let id = u32::try_from(first_row + row).expect("test ids fit in u32");
        writer.insert(id, vector).expect("insert succeeds");
    }
    writer
        .delete(&(0..400).step_by(delete_step).collect())
        .expect("delete succeeds");
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
}

#[test]
fn readers_use_only_the_links_and_ids_of_committed_transactions() {
    committed_only(None);
}

/// The same with the graph reopened after its first commit with `prefetch_memory`, so that
/// readers read vectors from the memory copy, which must grow with every commit and never
/// take the aborted transaction's records.
#[test]
fn the_memory_copy_holds_only_committed_records() {
    committed_only(Some(GraphOptions {
        prefetch_memory: true,
        ..GraphOptions::default()
    }));
}

/// Readers of snapshots before, after an aborted and after a committed transaction see only
/// committed state; with `reopen`, the graph is reopened with those options after the first
/// commit.
fn committed_only(reopen: Option<GraphOptions>) {
    let seed = 57;
    println!("seed {seed}");
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir_in succeeds");
    let path = directory.path().join("shard.pages");
    let options = Options {
        maximum_size_bytes: 1 << 30,
        ..Options::default()
    };
    let vectors = clustered_vectors(900, DIMENSIONS, 8, 0.3, seed, seed);
    let queries = clustered_vectors(10, DIMENSIONS, 8, 0.3, seed, seed + 1);
    // Sparse enough for the filtered graph path (above the exact-search threshold of 4,096
    // matches only with the minimum lowered).
    let candidates: RoaringBitmap = (0..900).filter(|id| id % 3 == 0).collect();
    let mut parameters = parameters();
    parameters.exact_search_candidates_min = 10;
    let database = Database::open(&path, options).expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let graph =
        Graph::create(&write, directory.path(), "default", parameters).expect("create succeeds");
    let mut writer = graph.writer(&write).expect("writer succeeds");
    for (row, vector) in vectors[..400 * DIMENSIONS]
        .chunks_exact(DIMENSIONS)
        .enumerate()
    {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    write.commit().expect("commit succeeds");
    let read = database.begin_read();
    let graph = match reopen {
        Some(options) => {
            drop(graph);
            let graph =
                Graph::open(&read, directory.path(), "default", options).expect("open succeeds");
            let copied = graph.navigation_file().memory_copy_bytes() as u64;
            assert_eq!(copied, graph.navigation_file().logical_bytes(400));
            graph
        }
        None => graph,
    };
    let copied = |graph: &Graph| graph.navigation_file().memory_copy_bytes() as u64;
    let committed = graph.reader(&read).expect("reader succeeds");
    assert_eq!(committed.check().expect("check succeeds"), None);
    let committed_hits = all_hits(&committed, &queries, None);
    let committed_filtered = all_hits(&committed, &queries, Some(&candidates));
    // An aborted transaction: merges, deletes and a finished writer, never committed. Its
    // records are overwritten by the next transaction with other ids.
    let write = database.begin_write().expect("begin_write succeeds");
    insert_from_and_delete_every(&graph, &write, &vectors, 400, 3);
    write.abort();
    let read = database.begin_read();
    let after_abort = graph.reader(&read).expect("reader succeeds");
    assert_eq!(after_abort.check().expect("check succeeds"), None);
    assert_eq!(all_hits(&after_abort, &queries, None), committed_hits);
    assert_eq!(
        all_hits(&after_abort, &queries, Some(&candidates)),
        committed_filtered
    );
    if reopen.is_some() {
        assert_eq!(copied(&graph), graph.navigation_file().logical_bytes(400));
    }
    // A committed transaction reusing the aborted record numbers for other ids.
    let write = database.begin_write().expect("begin_write succeeds");
    insert_from_and_delete_every(&graph, &write, &vectors, 600, 7);
    write.commit().expect("commit succeeds");
    let read = database.begin_read();
    let published = graph.reader(&read).expect("reader succeeds");
    assert_eq!(published.check().expect("check succeeds"), None);
    let published_hits = all_hits(&published, &queries, None);
    let filtered = all_hits(&published, &queries, Some(&candidates));
    if reopen.is_some() {
        // The 300 rows from 600 on took the aborted transaction's record numbers 400..700.
        assert_eq!(copied(&graph), graph.navigation_file().logical_bytes(700));
    } else {
        assert_eq!(copied(&graph), 0);
    }
    drop((committed, after_abort, published));
    drop(graph);
    // A graph opened afresh builds its adjacency and id cache from this snapshot alone.
    let reopened = Graph::open(&read, directory.path(), "default", GraphOptions::default())
        .expect("open succeeds");
    let rebuilt = reopened.reader(&read).expect("reader succeeds");
    assert_eq!(rebuilt.check().expect("check succeeds"), None);
    assert_eq!(published_hits, all_hits(&rebuilt, &queries, None));
    assert_eq!(filtered, all_hits(&rebuilt, &queries, Some(&candidates)));
    assert!(
        filtered
            .iter()
            .flatten()
            .all(|id| candidates.contains(*id) && (*id >= 600 || id % 7 != 0))
    );
}
