//! Property test: after any sequence of inserts, merges and deletes, the graph keeps its
//! invariants (links join live nodes of the link's layer, caps, entry point, reachability on
//! every layer), no deleted id is ever returned, and every live id can still be found.
//! Cases: `VECTOR_PROPTEST_CASES` (default 12).
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use roaring::RoaringBitmap;
use storage_engine::vector::synthetic::clustered_vectors;
use storage_engine::vector::{GraphParameters, MemoryIndex, Metric, SearchRequest};

const DIMENSIONS: usize = 8;
const IDS: u32 = 160;

#[derive(Debug, Clone)]
enum Operation {
    Insert(u32),
    Delete(Vec<u32>),
    Merge,
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        6 => (0..IDS).prop_map(Operation::Insert),
        2 => proptest::collection::vec(0..IDS, 1..20).prop_map(Operation::Delete),
        1 => Just(Operation::Merge),
    ]
}

fn cases() -> u32 {
    std::env::var("VECTOR_PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_inserts_and_deletes_keep_the_graph_valid_and_reachable(
        operations in proptest::collection::vec(operation(), 1..150),
        seed in 0_u64..1_000,
        m in 2_usize..6,
    ) {
        println!("seed {seed} m {m}");
        let vectors = clustered_vectors(IDS as usize, DIMENSIONS, 4, 0.2, seed, seed);
        let mut parameters = GraphParameters::new(Metric::Euclidean, DIMENSIONS);
        parameters.m = m;
        parameters.m0 = 2 * m;
        parameters.ef_construction = 16;
        parameters.merge_threshold_vectors = 17;
        parameters.seed = seed;
        let mut index = MemoryIndex::new(parameters).expect("new succeeds");
        let mut live = RoaringBitmap::new();
        for operation in operations {
            match operation {
                Operation::Insert(id) => {
                    let vector = &vectors[id as usize * DIMENSIONS..][..DIMENSIONS];
                    index.insert(id, vector).expect("insert succeeds");
                    live.insert(id);
                }
                Operation::Delete(ids) => {
                    let ids: RoaringBitmap = ids.into_iter().collect();
                    index.delete(&ids).expect("delete succeeds");
                    live -= &ids;
                }
                Operation::Merge => { index.merge().expect("merge succeeds"); }
            }
            prop_assert_eq!(index.check().expect("check succeeds"), None);
            prop_assert_eq!(index.len() as u64, live.len());
        }
        index.merge().expect("merge succeeds");
        prop_assert_eq!(index.check().expect("check succeeds"), None);
        for id in &live {
            let vector = &vectors[id as usize * DIMENSIONS..][..DIMENSIONS];
            let mut request = SearchRequest::new(vector, 3);
            request.ef = Some(IDS as usize);
            let hits = index.search(&request).expect("search succeeds");
            prop_assert!(hits.iter().all(|hit| live.contains(hit.internal_id)));
            prop_assert!(hits[0].distance < 1e-6, "live id {} not found", id);
        }
    }
}
