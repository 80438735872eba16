//! At start, before any core opens a shard: the index storages the catalog does not name are
//! removed. A crash leaves such storages behind in three places: between the commit of a
//! batch that deleted an index (or grew it to a new storage) and the removal of its old
//! files; while a batch that creates an index or grows one has written shards whose catalog
//! it never recorded (the batch runs again and writes them again); and in a batch that
//! failed to create its index.
//!
//! Invariants: only folders directly under `indexes/` go, and only at start (nothing reads
//! them then, and every batch that could still need one runs again from the start); a
//! storage the catalog names is never touched.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use crate::coordinator::catalog::Catalog;
use crate::host::INDEXES_DIRECTORY;

/// Removes every folder of `data_directory`'s indexes that no index of `catalog` names;
/// answers their names.
pub fn remove_unnamed_storages(
    data_directory: &Path,
    catalog: &Catalog,
) -> io::Result<Vec<String>> {
    let named: BTreeSet<&str> = catalog
        .iter()
        .map(|record| record.storage.as_str())
        .collect();
    let indexes = data_directory.join(INDEXES_DIRECTORY);
    let entries = match std::fs::read_dir(&indexes) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !entry.file_type()?.is_dir() || named.contains(name.as_str()) {
            continue;
        }
        std::fs::remove_dir_all(entry.path())?;
        removed.push(name);
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;
    use crate::coordinator::catalog::IndexRecord;

    #[test]
    fn only_the_storages_the_catalog_does_not_name_are_removed() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let indexes = directory.path().join(INDEXES_DIRECTORY);
        for storage in ["index-1", "index-2", "index-1.shards-2"] {
            std::fs::create_dir_all(indexes.join(storage)).expect("the folder is made");
            std::fs::write(indexes.join(storage).join("shard-0.store"), b"pages")
                .expect("the file is written");
        }
        std::fs::write(indexes.join("stray-file"), b"kept").expect("the file is written");
        let mut catalog = Catalog::default();
        catalog.insert(IndexRecord::new(
            "books",
            "index-1.shards-2".to_owned(),
            2,
            None,
            OffsetDateTime::UNIX_EPOCH,
        ));
        let removed =
            remove_unnamed_storages(directory.path(), &catalog).expect("the sweep succeeds");
        assert_eq!(removed, ["index-1", "index-2"]);
        assert!(indexes.join("index-1.shards-2/shard-0.store").exists());
        assert!(!indexes.join("index-1").exists());
        assert!(
            indexes.join("stray-file").exists(),
            "only folders are storages"
        );
        let again =
            remove_unnamed_storages(directory.path(), &catalog).expect("the sweep succeeds");
        assert!(again.is_empty());
    }

    #[test]
    fn a_data_directory_without_indexes_is_left_alone() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let removed = remove_unnamed_storages(directory.path(), &Catalog::default())
            .expect("the sweep succeeds");
        assert!(removed.is_empty());
    }
}
