//! The index catalog's home on disk: the `catalog` tree of the task queue's page store (index
//! uid → its record as JSON), written in the same commit as the batch that changed it, so
//! the catalog and the tasks never disagree after a crash.
//!
//! Invariant: [`store_catalog_changes`] writes exactly the records that differ between the
//! two versions, so loading after it gives the new version.

use storage_engine::{Direction, ReadTransaction, WriteTransaction};

use super::queue::{QueueError, QueueResult};
use crate::coordinator::catalog::{CATALOG_TREE, Catalog, IndexRecord};

/// Reads the catalog stored in the queue's page store.
pub fn load_catalog(read: &ReadTransaction) -> QueueResult<Catalog> {
    let mut catalog = Catalog::default();
    let Some(tree) = read.open_tree(CATALOG_TREE)? else {
        return Ok(catalog);
    };
    for entry in tree.range(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        Direction::Forward,
    )? {
        let (_key, value) = entry?;
        let record: IndexRecord = serde_json::from_slice(value)
            .map_err(|error| QueueError::Corrupted(format!("undecodable index record: {error}")))?;
        catalog.insert(record);
    }
    Ok(catalog)
}

/// Writes the difference between `before` and `catalog` into `write`.
pub fn store_catalog_changes(
    catalog: &Catalog,
    before: &Catalog,
    write: &WriteTransaction,
) -> QueueResult<()> {
    let tree = write.create_tree(CATALOG_TREE)?;
    for uid in before.iter().map(|record| &record.uid) {
        if catalog.get(uid).is_none() {
            tree.delete(uid.as_bytes())?;
        }
    }
    for record in catalog.iter() {
        let uid = &record.uid;
        // Records no batch touched are the same `Arc` in both versions: with thousands of
        // indexes, comparing their contents at every batch would cost more than the batch.
        let unchanged = before
            .get(uid)
            .is_some_and(|old| std::sync::Arc::ptr_eq(old, record) || old == record);
        if !unchanged {
            let bytes = serde_json::to_vec(record.as_ref()).map_err(|error| {
                QueueError::Corrupted(format!("cannot encode an index record: {error}"))
            })?;
            tree.put(uid.as_bytes(), &bytes)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::coordinator::catalog::storage_name;
    use storage_engine::{Database, Options};
    use time::OffsetDateTime;

    #[test]
    fn stored_changes_read_back_as_the_same_catalog() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let database = Database::open(&directory.path().join("queue"), Options::default())
            .expect("open succeeds");
        let now = OffsetDateTime::UNIX_EPOCH;
        let mut catalog = Catalog::default();
        catalog.insert(IndexRecord::new("movies", storage_name(0), 2, None, now));
        catalog.insert(IndexRecord::new(
            "books",
            storage_name(1),
            2,
            Some("id".into()),
            now,
        ));
        let write = database.begin_write().expect("begin_write succeeds");
        store_catalog_changes(&catalog, &Catalog::default(), &write)
            .expect("store_catalog_changes succeeds");
        write.commit().expect("commit succeeds");

        let mut changed = catalog.clone();
        changed.remove("books");
        let mut movies = changed
            .get("movies")
            .expect("get succeeds")
            .as_ref()
            .clone();
        movies.primary_key = Some("key".into());
        changed.insert(movies);
        let write = database.begin_write().expect("begin_write succeeds");
        store_catalog_changes(&changed, &catalog, &write).expect("store_catalog_changes succeeds");
        write.commit().expect("commit succeeds");

        let loaded = load_catalog(&database.begin_read()).expect("load_catalog succeeds");
        assert_eq!(loaded, changed);
        assert_eq!(loaded.len(), 1);
        assert_eq!(
            loaded
                .get("movies")
                .expect("get succeeds")
                .primary_key
                .as_deref(),
            Some("key")
        );
    }
}
