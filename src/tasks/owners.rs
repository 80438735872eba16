//! Which shard of an index owns each external id of a batch, computed once per batch.
//!
//! A batch's ids are weighed against every shard name (rendezvous hashing), serially on the
//! control core while the shards wait. Looking up stored ids, sharing out internal ids and
//! sending the documents each need the owner of every id, so the owners are computed once, in
//! the batch's order of ids, and read by position afterwards.
//!
//! Invariant: `owners[i]` is the owner of `ids[i]`; `None` only when the index has no shard
//! (asserted where the ids are shared out by owner).

use shards::rendezvous::rendezvous_winner_position;

use crate::host::batch::APPLY_CHUNK_DOCUMENTS;

/// The owning shard's position in `names` of each id of `ids`, in order. Yields to the
/// core's other tasks every [`APPLY_CHUNK_DOCUMENTS`] ids.
pub async fn owning_shards(names: &[String], ids: &[String]) -> Vec<Option<u32>> {
    let mut owners = Vec::with_capacity(ids.len());
    for (position, id) in ids.iter().enumerate() {
        if position % APPLY_CHUNK_DOCUMENTS == 0 {
            crate::runtime::yield_if_needed().await;
        }
        owners.push(rendezvous_winner_position(names, id).map(|shard| shard as u32));
    }
    owners
}

/// `items` by owning shard, for an index of `shards` shards: one list per shard, each in the
/// order of `items`; an item without an owner (an index without shards) goes nowhere, and
/// an owner out of range is a bug (asserted).
pub fn share_out<Item>(
    shards: u32,
    items: impl IntoIterator<Item = (Option<u32>, Item)>,
) -> Vec<Vec<Item>> {
    let mut shares: Vec<Vec<Item>> = (0..shards).map(|_| Vec::new()).collect();
    for (owner, item) in items {
        assert_owner_in_range(owner, shards);
        if let Some(share) = owner.and_then(|shard| shares.get_mut(shard as usize)) {
            share.push(item);
        }
    }
    shares
}

/// The ids of `ids` by owning shard (`owners` as [`owning_shards`] answers it), for an index
/// of `shards` shards: one list per shard, each in the order of `ids`. Copying a large
/// batch's ids takes milliseconds, so it yields on the core's budget as it goes.
pub async fn shares_by_owner(
    shards: u32,
    ids: &[String],
    owners: &[Option<u32>],
) -> Vec<Vec<String>> {
    assert_eq!(
        owners.len(),
        ids.len(),
        "one owner for each id of the batch"
    );
    let mut shares: Vec<Vec<String>> = (0..shards).map(|_| Vec::new()).collect();
    for (position, (owner, id)) in owners.iter().zip(ids).enumerate() {
        if position % APPLY_CHUNK_DOCUMENTS == 0 {
            crate::runtime::yield_if_needed().await;
        }
        assert_owner_in_range(*owner, shards);
        if let Some(share) = owner.and_then(|shard| shares.get_mut(shard as usize)) {
            share.push(id.clone());
        }
    }
    shares
}

/// Asserts that `owner` is one of the `shards` shards of the index, or `None` for an index
/// without shards: owners weighed over other shard names would send documents to shards
/// that do not hold them, or drop them.
fn assert_owner_in_range(owner: Option<u32>, shards: u32) {
    assert!(
        owner.map_or(shards == 0, |shard| shard < shards),
        "owner {owner:?} of a document of an index of {shards} shards"
    );
}

#[cfg(test)]
mod tests {
    use super::{owning_shards, shares_by_owner};
    use shards::rendezvous::rendezvous_winner_position;

    #[test]
    fn owners_follow_rendezvous_and_shares_keep_the_order_of_ids() {
        let names: Vec<String> = ["shard-0", "shard-1", "shard-2"]
            .iter()
            .map(|name| name.to_string())
            .collect();
        let ids: Vec<String> = (0..3000).map(|number| format!("id-{number}")).collect();
        let (names_moved, ids_moved) = (names.clone(), ids.clone());
        let (owners, shares) = crate::runtime::task::run_on_test_core(move || async move {
            let owners = owning_shards(&names_moved, &ids_moved).await;
            let shares = shares_by_owner(3, &ids_moved, &owners).await;
            (owners, shares)
        });
        assert_eq!(owners.len(), ids.len());
        for (id, owner) in ids.iter().zip(&owners) {
            let expected = rendezvous_winner_position(&names, id).map(|shard| shard as u32);
            assert_eq!(*owner, expected, "{id}");
        }
        assert_eq!(shares.iter().map(Vec::len).sum::<usize>(), ids.len());
        for (shard, share) in shares.iter().enumerate() {
            assert!(!share.is_empty(), "3,000 ids leave no shard empty");
            let expected: Vec<&String> = ids
                .iter()
                .zip(&owners)
                .filter(|(_, owner)| **owner == Some(shard as u32))
                .map(|(id, _)| id)
                .collect();
            assert_eq!(share.iter().collect::<Vec<_>>(), expected);
        }
        let two_ids = ids[..2].to_vec();
        let (no_shard, no_shares) = crate::runtime::task::run_on_test_core(move || async move {
            let owners = owning_shards(&[], &two_ids).await;
            let shares = shares_by_owner(0, &two_ids, &owners).await;
            (owners, shares)
        });
        assert_eq!(no_shard, vec![None, None]);
        assert!(no_shares.is_empty());
    }
}
