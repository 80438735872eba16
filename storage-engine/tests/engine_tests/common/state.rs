//! A database's whole committed state as a model, and the deterministic generator the
//! randomized tests draw their operations from.

use std::collections::BTreeMap;
use std::ops::Bound;

use storage_engine::{Database, Direction};

/// Tree name → its entries.
pub type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// A small deterministic generator (splitmix64).
pub struct Random(pub u64);

impl Random {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    pub fn below(&mut self, limit: u64) -> u64 {
        self.next() % limit
    }
}

/// Every tree of the last commit, with its entries.
pub fn read_state(database: &Database) -> Model {
    let read = database.begin_read();
    let mut model = Model::new();
    for name in read.tree_names().expect("tree_names succeeds") {
        let tree = read
            .open_tree(&name)
            .expect("open_tree succeeds")
            .expect("a listed tree exists");
        let entries = tree
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .expect("range succeeds")
            .map(|entry| {
                let (key, value) = entry.expect("the entry reads");
                (key.to_vec(), value.to_vec())
            })
            .collect();
        model.insert(name, entries);
    }
    model
}
