//! The persisted graph on the real page store: reopening from disk, readers on snapshots
//! while the writer commits, and crash images taken at every sync point of inserts, merges
//! and deletes, each of which must reopen to a consistent graph at a committed state.
//! Knobs: `VECTOR_CRASH_ROUNDS` (default 8), `VECTOR_CRASH_VARIANTS` (default 2).
#![allow(clippy::unwrap_used)]

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
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = directory.path().join("shard.pages");
    let options = Options {
        maximum_size_bytes: 1 << 30,
        ..Options::default()
    };
    let vectors = clustered_vectors(1_200, DIMENSIONS, 12, 0.3, seed, seed);
    let queries = clustered_vectors(20, DIMENSIONS, 12, 0.3, seed, seed + 1);
    {
        let database = Database::open(&path, options.clone()).unwrap();
        let write = database.begin_write().unwrap();
        let graph = Graph::create(&write, directory.path(), "default", parameters()).unwrap();
        write.commit().unwrap();
        for batch in vectors.chunks(400 * DIMENSIONS).enumerate() {
            let write = database.begin_write().unwrap();
            let mut writer = graph.writer(&write).unwrap();
            for (row, vector) in batch.1.chunks_exact(DIMENSIONS).enumerate() {
                writer.insert((batch.0 * 400 + row) as u32, vector).unwrap();
            }
            writer.finish().unwrap();
            write.commit().unwrap();
        }
        let write = database.begin_write().unwrap();
        let mut writer = graph.writer(&write).unwrap();
        writer.delete(&(0..1_200).step_by(5).collect()).unwrap();
        writer.merge().unwrap();
        writer.finish().unwrap();
        write.commit().unwrap();
    }
    let database = Database::open(&path, options).unwrap();
    database.check_integrity().unwrap();
    let read = database.begin_read();
    let graph = Graph::open(
        &read,
        directory.path(),
        "default",
        GraphOptions {
            prefetch_memory: true,
        },
    )
    .unwrap();
    assert!(graph.prefetched_bytes() > 0);
    let reader = graph.reader(&read).unwrap();
    assert_eq!(reader.check().unwrap(), None);
    assert_eq!((reader.len(), reader.buffered()), (960, 0));
    let live: RoaringBitmap = (0..1_200).filter(|id| id % 5 != 0).collect();
    let mut scratch = SearchScratch::new();
    let mut total = 0.0;
    for query in queries.chunks_exact(DIMENSIONS) {
        let hits = reader
            .search(&SearchRequest::new(query, 10), &mut scratch)
            .unwrap();
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
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let options = Options {
        maximum_size_bytes: 1 << 30,
        ..Options::default()
    };
    let database = Database::open(&directory.path().join("shard.pages"), options).unwrap();
    let write = database.begin_write().unwrap();
    let graph = Graph::create(&write, directory.path(), "default", parameters()).unwrap();
    write.commit().unwrap();
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
                        let reader = graph.reader(&read).unwrap();
                        let count = reader.len();
                        assert_eq!(count % BATCH as u64, 0, "a reader never sees half a batch");
                        assert!(count >= seen, "snapshots only move forward");
                        seen = count;
                        let row = (round * 7 + reader_number) % 800;
                        let query = &vectors[row * DIMENSIONS..(row + 1) * DIMENSIONS];
                        let hits = reader
                            .search(&SearchRequest::new(query, 5), &mut scratch)
                            .unwrap();
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
            let write = database.begin_write().unwrap();
            let mut writer = graph.writer(&write).unwrap();
            for row in batch * BATCH..(batch + 1) * BATCH {
                writer
                    .insert(
                        row as u32,
                        &vectors[row * DIMENSIONS..(row + 1) * DIMENSIONS],
                    )
                    .unwrap();
            }
            writer.finish().unwrap();
            write.commit().unwrap();
        }
        for reader in readers {
            reader.join().unwrap();
        }
    });
    let read = database.begin_read();
    assert_eq!(graph.reader(&read).unwrap().check().unwrap(), None);
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
    let database = Database::open_with_io(Box::new(page_io.clone()), page_store_options()).unwrap();
    let write = database.begin_write().unwrap();
    let graph =
        Graph::create_with_backends(&write, "default", parameters(), disks.backends()).unwrap();
    write.commit().unwrap();
    page_io.record_crash_images(variants);
    let mut random = SplitMix64::new(seed);
    let mut committed = RoaringBitmap::new();
    let mut images_checked = 0;
    for round in 0..rounds {
        let mut next = committed.clone();
        let write = database.begin_write().unwrap();
        let mut writer = graph.writer(&write).unwrap();
        for _ in 0..random.next_below(150) {
            let id = random.next_below(2_000) as u32;
            writer
                .insert(id, &vectors[id as usize * DIMENSIONS..][..DIMENSIONS])
                .unwrap();
            next.insert(id);
        }
        if random.next_below(2) == 0 {
            let doomed: RoaringBitmap = next.iter().filter(|_| random.next_below(6) == 0).collect();
            writer.delete(&doomed).unwrap();
            next -= doomed;
        }
        if random.next_below(3) == 0 {
            writer.merge().unwrap();
        }
        // A power loss in the middle of the transaction (after inserts, deletes and merges,
        // before the commit) leaves the last committed graph.
        let mid_transaction = (page_io.durable_image(), disks.after_power_loss());
        writer.finish().unwrap();
        let last_sync_before = page_io.sync_count();
        write.commit().unwrap();
        let last_sync = page_io.sync_count();
        let survivors = disks.after_power_loss();
        for image in page_io.take_crash_images() {
            let reopened = SimulatedIo::from_image(&image.bytes, PAGE_STORE_BYTES, 0);
            let database =
                Database::open_with_io(Box::new(reopened), page_store_options()).unwrap();
            database.check_integrity().unwrap();
            let read = database.begin_read();
            let graph = Graph::open_with_backends(
                &read,
                "default",
                survivors.backends(),
                GraphOptions::default(),
            )
            .unwrap();
            let reader = graph.reader(&read).unwrap();
            assert_eq!(
                reader.check().unwrap(),
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
                    .unwrap();
                assert!(hits[0].distance < 1e-5);
            }
            images_checked += 1;
        }
        let (image, survivors) = mid_transaction;
        let reopened = SimulatedIo::from_image(&image, PAGE_STORE_BYTES, 0);
        let database = Database::open_with_io(Box::new(reopened), page_store_options()).unwrap();
        let read = database.begin_read();
        let graph = Graph::open_with_backends(
            &read,
            "default",
            survivors.backends(),
            GraphOptions::default(),
        )
        .unwrap();
        let reader = graph.reader(&read).unwrap();
        assert_eq!(
            reader.check().unwrap(),
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
