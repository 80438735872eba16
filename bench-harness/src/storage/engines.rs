//! The three engines behind one small trait: batched durable inserts, point reads in one
//! read transaction, and forward range scans.

use std::ops::Bound;
use std::path::{Path, PathBuf};

use storage_engine::{Database, Direction, Options};

/// Address space each engine may map.
pub const MAP_BYTES_MAX: u64 = 64 << 30;
/// The tree / table / database every engine uses.
const TABLE_NAME: &str = "bench";

/// A key-value engine under test.
pub trait Engine {
    /// Inserts `entries` in one transaction and commits it durably.
    fn insert_batch(&mut self, entries: &[(Vec<u8>, Vec<u8>)]);
    /// Looks every key up in one read transaction; returns the total bytes of values found.
    fn read_keys(&self, keys: &[Vec<u8>]) -> u64;
    /// From each start key, reads `length` entries forward; returns the entries seen.
    fn scan(&self, starts: &[Vec<u8>], length: usize) -> u64;
    /// Paths of the files the engine stores data in.
    fn files(&self) -> Vec<PathBuf>;
}

/// Opens engine `name` in `directory`.
pub fn open(name: &str, directory: &Path) -> Box<dyn Engine> {
    std::fs::create_dir_all(directory).expect("the bench directory can be created");
    match name {
        "coresearch" => Box::new(PageStore::open(directory)),
        "lmdb" => Box::new(Lmdb::open(directory)),
        "redb" => Box::new(Redb::open(directory)),
        other => panic!("unknown engine {other}"),
    }
}

/// Our page store.
pub struct PageStore {
    database: Database,
    path: PathBuf,
}

impl PageStore {
    fn open(directory: &Path) -> PageStore {
        let path = directory.join("store.pages");
        let options = Options {
            maximum_size_bytes: MAP_BYTES_MAX,
            ..Options::default()
        };
        let database = Database::open(&path, options).expect("page store opens");
        PageStore { database, path }
    }
}

impl Engine for PageStore {
    fn insert_batch(&mut self, entries: &[(Vec<u8>, Vec<u8>)]) {
        let write = self.database.begin_write().expect("write transaction");
        {
            let tree = write.create_tree(TABLE_NAME).expect("tree");
            for (key, value) in entries {
                tree.put(key, value).expect("put");
            }
        }
        write.commit().expect("commit");
    }

    fn read_keys(&self, keys: &[Vec<u8>]) -> u64 {
        let read = self.database.begin_read();
        let tree = read
            .open_tree(TABLE_NAME)
            .expect("tree")
            .expect("tree exists");
        keys.iter()
            .map(|key| {
                tree.get(key)
                    .expect("get")
                    .map_or(0, |value| value.len() as u64)
            })
            .sum()
    }

    fn scan(&self, starts: &[Vec<u8>], length: usize) -> u64 {
        let read = self.database.begin_read();
        let tree = read
            .open_tree(TABLE_NAME)
            .expect("tree")
            .expect("tree exists");
        let mut seen = 0;
        for start in starts {
            let range = tree
                .range(
                    Bound::Included(start.as_slice()),
                    Bound::Unbounded,
                    Direction::Forward,
                )
                .expect("range");
            for entry in range.take(length) {
                let (_, value) = entry.expect("entry");
                seen += u64::from(!value.is_empty());
            }
        }
        seen
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

/// LMDB through heed, default (durable) flags.
pub struct Lmdb {
    environment: heed::Env,
    database: heed::Database<'static, heed::types::Bytes, heed::types::Bytes>,
    directory: PathBuf,
}

impl Lmdb {
    fn open(directory: &Path) -> Lmdb {
        let mut options = heed::EnvOpenOptions::new();
        options.map_size(MAP_BYTES_MAX as usize).max_dbs(4);
        // SAFETY: the directory belongs to this benchmark process alone.
        let environment = unsafe { options.open(directory) }.expect("LMDB opens");
        let write = environment.write_txn().expect("write transaction");
        let database = environment
            .create_databases_and_commit(write, |opener, write| {
                opener
                    .create_database(write, Some(TABLE_NAME))
                    .map(heed::CommitOrAbort::<_, ()>::Commit)
            })
            .expect("database")
            .unwrap_commit();
        Lmdb {
            environment,
            database,
            directory: directory.to_path_buf(),
        }
    }
}

impl Engine for Lmdb {
    fn insert_batch(&mut self, entries: &[(Vec<u8>, Vec<u8>)]) {
        let mut write = self.environment.write_txn().expect("write transaction");
        for (key, value) in entries {
            self.database.put(&mut write, key, value).expect("put");
        }
        write.commit().expect("commit");
    }

    fn read_keys(&self, keys: &[Vec<u8>]) -> u64 {
        let read = self.environment.read_txn().expect("read transaction");
        keys.iter()
            .map(|key| {
                self.database
                    .get(&read, key)
                    .expect("get")
                    .map_or(0, |value| value.len() as u64)
            })
            .sum()
    }

    fn scan(&self, starts: &[Vec<u8>], length: usize) -> u64 {
        let read = self.environment.read_txn().expect("read transaction");
        let mut seen = 0;
        for start in starts {
            let bounds = (Bound::Included(start.as_slice()), Bound::Unbounded);
            for entry in self
                .database
                .range(&read, &bounds)
                .expect("range")
                .take(length)
            {
                let (_, value) = entry.expect("entry");
                seen += u64::from(!value.is_empty());
            }
        }
        seen
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.directory.join("data.mdb")]
    }
}

/// redb, default (immediate) durability.
pub struct Redb {
    database: redb::Database,
    path: PathBuf,
}

const REDB_TABLE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new(TABLE_NAME);

impl Redb {
    fn open(directory: &Path) -> Redb {
        let path = directory.join("store.redb");
        let database = redb::Database::create(&path).expect("redb opens");
        Redb { database, path }
    }
}

impl Engine for Redb {
    fn insert_batch(&mut self, entries: &[(Vec<u8>, Vec<u8>)]) {
        let write = self.database.begin_write().expect("write transaction");
        {
            let mut table = write.open_table(REDB_TABLE).expect("table");
            for (key, value) in entries {
                table
                    .insert(key.as_slice(), value.as_slice())
                    .expect("insert");
            }
        }
        write.commit().expect("commit");
    }

    fn read_keys(&self, keys: &[Vec<u8>]) -> u64 {
        use redb::ReadableDatabase;
        let read = self.database.begin_read().expect("read transaction");
        let table = read.open_table(REDB_TABLE).expect("table");
        keys.iter()
            .map(|key| {
                table
                    .get(key.as_slice())
                    .expect("get")
                    .map_or(0, |value| value.value().len() as u64)
            })
            .sum()
    }

    fn scan(&self, starts: &[Vec<u8>], length: usize) -> u64 {
        use redb::ReadableDatabase;
        let read = self.database.begin_read().expect("read transaction");
        let table = read.open_table(REDB_TABLE).expect("table");
        let mut seen = 0;
        for start in starts {
            for entry in table.range(start.as_slice()..).expect("range").take(length) {
                let (_, value) = entry.expect("entry");
                seen += u64::from(!value.value().is_empty());
            }
        }
        seen
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}
