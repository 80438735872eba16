//! The lazy bucket sort: which documents of one words bucket are among the first `needed`.
//!
//! A bucket is split by the next ranking step into sub-buckets, best first, and only the
//! sub-buckets that reach into the first `needed` documents are split further; a bucket that
//! fits whole is taken whole, and one still too large after the last step gives its lowest
//! internal ids (the final tie-break). The typo, attribute-rank and word-position steps split
//! with bitmaps alone (see [`super::rule_bitmaps`]), reading each term's cost levels only as
//! far as the page needs ([`super::best_first`]; typo only when it is the first step to split,
//! [`super::typo_split`]), proximity with the pair trees where they
//! can tell ([`super::proximity_bitmaps`]), sort with the facet entries of its field
//! ([`super::sort_values::sort_groups`]), exactness as the last step reading only the
//! documents the page can need ([`super::lazy_exactness`]); exactness before another step, and
//! proximity where pairs cannot tell, read each document of the bucket they split.
//!
//! `searchCutoffMs`: once the deadline has passed, no bucket is ranked by a further step (even
//! one that fits the page whole); its lowest ids are taken, ranked only by the steps before
//! it, their details ending with `skipped`, as Meilisearch's degraded search gives them.
//!
//! Invariant: a document's sub-bucket is exactly the rank the step gives it in
//! [`super::ranking`] (the caller computes the full details of the selected documents with
//! those same functions), so the selection equals the first `needed` documents of the order
//! "details, then internal id". The caller uses it only where a words bucket's documents all
//! keep the same terms and every searchable field is searched with typos allowed (see
//! [`super::buckets`]).

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use roaring::RoaringBitmap;
use storage_engine::ReadTransaction;

use crate::error::ShardResult;
use crate::shard::{ShardSnapshot, SortRule};

use super::best_first::FirstSubBuckets;
use super::details::{DetailSources, FieldLengthsReader, details, sort_tables};
use super::occurrences::{
    DocumentOccurrences, SearchedFields, collect_known_occurrences, collect_occurrences,
};
use super::prefix_words::PrefixWords;
use super::ranking::{Kept, RankingContext};
use super::rule_bitmaps::BucketCosts;
use super::score::{ScoreDetail, compare_details};
use super::sort_values::sort_groups;
use super::steps::Step;
use super::term_postings::TermPostings;
use super::terms::ResolvedTerm;

/// Everything the refinement of one words bucket reads.
pub struct Refiner<'a> {
    pub snapshot: &'a ShardSnapshot,
    pub read: &'a ReadTransaction,
    pub context: &'a RankingContext<'a>,
    pub steps: &'a [Step],
    pub resolved: &'a [ResolvedTerm],
    pub fields: &'a SearchedFields,
    /// The terms every document of the bucket keeps.
    pub kept: &'a Kept,
    /// Per term, per alternative, the documents where it occurs.
    pub alternatives: &'a [Arc<TermPostings>],
    /// Occurrences already read, shared by the per-document steps.
    pub occurrences: OccurrenceCache,
    /// [`exact_terms`] of `resolved`, made when exactness first reads a bucket.
    pub exact_terms: OnceCell<Vec<ResolvedTerm>>,
    /// Occurrences of the exact alternatives only (all exactness looks at), already read.
    pub exact_occurrences: OccurrenceCache,
    /// `searchCutoffMs`: once past, no bucket is split any more.
    pub deadline: Option<Instant>,
}

/// The documents a refinement selected.
#[derive(Debug, Default)]
pub struct Selection {
    pub documents: RoaringBitmap,
    /// Documents taken by lowest id because the deadline passed before the step at this
    /// index split their bucket: only the steps before it rank them.
    pub cut: Vec<(RoaringBitmap, usize)>,
}

impl Selection {
    /// Adds the documents of `other`.
    pub fn extend(&mut self, other: Selection) {
        self.documents |= other.documents;
        self.cut.extend(other.cut);
    }

    /// Document → the number of steps that rank it, for the documents cut short.
    pub fn ranked_steps(&self) -> BTreeMap<u32, usize> {
        self.cut
            .iter()
            .flat_map(|(documents, steps)| documents.iter().map(move |id| (id, *steps)))
            .collect()
    }
}

/// Whether `deadline` has passed.
pub fn is_past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|deadline| Instant::now() >= deadline)
}

/// A sub-bucket of a split, best first.
enum SubBucket {
    /// Ranked by the step: the next step refines it.
    Ready(RoaringBitmap),
    /// Documents ranked after the ready sub-buckets before it, not split by the step yet.
    Unsplit(RoaringBitmap),
}

impl Selection {
    /// Takes the lowest ids of `bucket` up to `needed` documents in all, ranked by the steps
    /// before `step` only.
    fn cut_at(&mut self, bucket: &RoaringBitmap, step: usize, needed: u64) {
        let remaining = needed.saturating_sub(self.documents.len());
        let lowest = usize::try_from(remaining).unwrap_or(usize::MAX);
        let taken: RoaringBitmap = bucket.iter().take(lowest).collect();
        self.documents |= &taken;
        self.cut.push((taken, step));
    }
}

/// Occurrences read so far for some documents.
#[derive(Default)]
pub struct OccurrenceCache {
    found: RefCell<DocumentOccurrences>,
    /// The documents whose occurrences `found` holds.
    documents: RefCell<RoaringBitmap>,
}

impl OccurrenceCache {
    /// Reads the occurrences of `terms` in the documents of `bucket` not read yet (`known`:
    /// each alternative's documents, when `terms` are the search's resolved terms).
    fn read(
        &self,
        read: &ReadTransaction,
        prefix_words: &PrefixWords,
        bucket: &RoaringBitmap,
        terms: &[ResolvedTerm],
        known: Option<&[Arc<TermPostings>]>,
        fields: &SearchedFields,
    ) -> ShardResult<()> {
        let missing = bucket - &*self.documents.borrow();
        if missing.is_empty() {
            return Ok(());
        }
        let found = match known {
            Some(known) => {
                collect_known_occurrences(read, prefix_words, &missing, terms, known, fields)?
            }
            None => collect_occurrences(read, prefix_words, &missing, terms, fields)?,
        };
        let mut cached = self.found.borrow_mut();
        if cached.is_empty() {
            *cached = found;
        } else {
            cached.extend(found);
        }
        *self.documents.borrow_mut() |= missing;
        Ok(())
    }
}

/// The terms with their exact alternatives only (the query word or phrase itself; never an
/// n-gram): what the exactness rule looks at.
pub fn exact_terms(resolved: &[ResolvedTerm]) -> Vec<ResolvedTerm> {
    resolved
        .iter()
        .map(|term| ResolvedTerm {
            term: term.term.clone(),
            alternatives: term
                .alternatives
                .iter()
                .filter(|alternative| alternative.exact)
                .cloned()
                .collect(),
        })
        .collect()
}

/// Details ordered as the ranking orders them ([`compare_details`]: best first), to key the
/// groups of equal details.
struct RankedDetails(Vec<ScoreDetail>);

impl PartialEq for RankedDetails {
    fn eq(&self, other: &Self) -> bool {
        compare_details(&self.0, &other.0).is_eq()
    }
}

impl Eq for RankedDetails {}

impl PartialOrd for RankedDetails {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RankedDetails {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_details(&self.0, &other.0)
    }
}

impl Refiner<'_> {
    /// The documents of `bucket` among its first `needed` (all of them when it has fewer).
    /// Past the deadline, a bucket still too large is not split: its lowest ids are taken.
    pub fn select(&self, bucket: &RoaringBitmap, needed: u64) -> ShardResult<Selection> {
        let mut selected = Selection::default();
        if is_past(self.deadline) {
            selected.cut_at(bucket, 0, needed);
            return Ok(selected);
        }
        if bucket.len() <= needed {
            selected.documents |= bucket;
            return Ok(selected);
        }
        if let Some(typo_step) = self.typo_first() {
            return self.select_typo_first(bucket, typo_step, needed);
        }
        let costs = self.eager_costs(bucket)?;
        self.refine(bucket.clone(), 0, &costs, &mut selected, needed)?;
        Ok(selected)
    }

    /// Every kept term's typo levels over `bucket` (see [`BucketCosts::compute`]).
    fn eager_costs(&self, bucket: &RoaringBitmap) -> ShardResult<BucketCosts<'_>> {
        BucketCosts::compute(
            self.read,
            self.snapshot.prefix_unions(),
            self.context,
            self.resolved,
            self.kept,
            self.alternatives,
            bucket,
        )
    }

    /// The index of the typo step when only words steps (which leave a words bucket whole)
    /// come before it: the ranking rules' default order.
    fn typo_first(&self) -> Option<usize> {
        let first = self.steps.iter().position(|step| *step != Step::Words)?;
        (self.steps[first] == Step::Typo).then_some(first)
    }

    /// [`Refiner::select`] when the typo step is the first to split: its sub-buckets are read
    /// best first (see [`super::typo_split`]), and only the typo levels read are known to the
    /// later steps, which split only the documents of the ready sub-buckets.
    fn select_typo_first(
        &self,
        bucket: &RoaringBitmap,
        typo_step: usize,
        needed: u64,
    ) -> ShardResult<Selection> {
        let mut costs = BucketCosts::unranked(
            self.read,
            self.snapshot.prefix_unions(),
            self.context,
            self.resolved,
            self.kept,
        );
        let FirstSubBuckets { ready, unsplit, .. } =
            costs.first_by_typo(self.alternatives, bucket, needed)?;
        let mut selected = Selection::default();
        for ready in ready {
            self.refine(ready, typo_step + 1, &costs, &mut selected, needed)?;
            if selected.documents.len() >= needed {
                return Ok(selected);
            }
        }
        // The ready sub-buckets hold at least `needed` documents, so the rest (ranked after
        // them, its typo levels not all read) is split only if that ever fails: eagerly.
        if let Some(rest) = unsplit {
            debug_assert!(
                selected.documents.len() >= needed,
                "the ready sub-buckets fill the page"
            );
            let costs = self.eager_costs(&rest)?;
            self.refine(rest, typo_step, &costs, &mut selected, needed)?;
        }
        Ok(selected)
    }

    fn refine(
        &self,
        bucket: RoaringBitmap,
        step: usize,
        costs: &BucketCosts<'_>,
        selected: &mut Selection,
        needed: u64,
    ) -> ShardResult<()> {
        let remaining = needed.saturating_sub(selected.documents.len());
        if remaining == 0 || bucket.is_empty() {
            return Ok(());
        }
        if step < self.steps.len() && is_past(self.deadline) {
            selected.cut_at(&bucket, step, needed);
            return Ok(());
        }
        if bucket.len() <= remaining {
            selected.documents |= bucket;
            return Ok(());
        }
        let Some(current) = self.steps.get(step) else {
            let lowest = usize::try_from(remaining).unwrap_or(usize::MAX);
            selected.documents.extend(bucket.iter().take(lowest));
            return Ok(());
        };
        if let Step::Sort(rule) = current {
            return self.refine_by_sort(bucket, step, rule, costs, selected, needed);
        }
        if *current == Step::Exactness && step + 1 == self.steps.len() {
            for ready in self.split_by_last_exactness(&bucket, remaining)? {
                self.refine(ready, step + 1, costs, selected, needed)?;
                if selected.documents.len() >= needed {
                    return Ok(());
                }
            }
            return Ok(());
        }
        for sub_bucket in self.split(&bucket, current, costs, remaining)? {
            let ready = match sub_bucket {
                SubBucket::Ready(ready) => vec![ready],
                // Reached only when the sub-buckets before it did not fill the page.
                SubBucket::Unsplit(rest) => self.split_by_document(&rest, current)?,
            };
            for ready in ready {
                self.refine(ready, step + 1, costs, selected, needed)?;
                if selected.documents.len() >= needed {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// A sort step: the facet values give the sub-buckets in order, only as many as the page
    /// needs at a time (no value is read per document).
    fn refine_by_sort(
        &self,
        bucket: RoaringBitmap,
        step: usize,
        rule: &SortRule,
        costs: &BucketCosts<'_>,
        selected: &mut Selection,
        needed: u64,
    ) -> ShardResult<()> {
        let mut rest = bucket;
        while !rest.is_empty() {
            let remaining = needed.saturating_sub(selected.documents.len());
            let (groups, unsplit) = sort_groups(
                self.read,
                self.snapshot.facet_columns(),
                &rule.field,
                rule.ascending,
                &rest,
                remaining,
            )?;
            for group in groups {
                self.refine(group, step + 1, costs, selected, needed)?;
                if selected.documents.len() >= needed {
                    return Ok(());
                }
            }
            rest = unsplit;
        }
        Ok(())
    }

    /// `bucket` split by `step`, best sub-bucket first, empty ones left out; the
    /// attribute-rank and word-position splits stop once `needed` documents are ranked and
    /// leave the rest unsplit (see [`super::slot_split`]).
    fn split(
        &self,
        bucket: &RoaringBitmap,
        step: &Step,
        costs: &BucketCosts<'_>,
        needed: u64,
    ) -> ShardResult<Vec<SubBucket>> {
        let first = match step {
            Step::AttributeRank => Some(costs.first_by_attribute_rank(bucket, needed)?),
            Step::WordPosition => Some(costs.first_by_word_position(bucket, needed)?),
            _ => None,
        };
        if let Some(FirstSubBuckets { ready, unsplit, .. }) = first {
            return Ok(ready
                .into_iter()
                .map(SubBucket::Ready)
                .chain(unsplit.map(SubBucket::Unsplit))
                .collect());
        }
        let split = match step {
            Step::Words => vec![bucket.clone()],
            Step::Typo => costs.split_by_typo(bucket),
            Step::Proximity if self.context.adjacent_pairs(self.kept) == 0 => vec![bucket.clone()],
            Step::Proximity => return self.split_by_proximity(bucket, costs, needed),
            _ => self.split_by_document(bucket, step)?,
        };
        Ok(split
            .into_iter()
            .filter(|bucket| !bucket.is_empty())
            .map(SubBucket::Ready)
            .collect())
    }

    /// Proximity from the pair trees: the best sub-bucket (every adjacent pair side by side)
    /// first, with the rest left unsplit when it fills the page, else every sub-bucket; when
    /// pairs cannot tell, every document is read.
    fn split_by_proximity(
        &self,
        bucket: &RoaringBitmap,
        costs: &BucketCosts<'_>,
        needed: u64,
    ) -> ShardResult<Vec<SubBucket>> {
        let Some(best) = costs.side_by_side(bucket)? else {
            return self.split_by_document_ready(bucket, &Step::Proximity);
        };
        if best.len() < needed
            && let Some(split) = costs.split_by_proximity(bucket)?
        {
            return Ok(split.into_iter().map(SubBucket::Ready).collect());
        }
        if best.is_empty() {
            return self.split_by_document_ready(bucket, &Step::Proximity);
        }
        let rest = bucket - &best;
        let mut split = vec![SubBucket::Ready(best)];
        if !rest.is_empty() {
            split.push(SubBucket::Unsplit(rest));
        }
        Ok(split)
    }

    /// [`Refiner::split_by_document`], every sub-bucket ready for the next step.
    fn split_by_document_ready(
        &self,
        bucket: &RoaringBitmap,
        step: &Step,
    ) -> ShardResult<Vec<SubBucket>> {
        Ok(self
            .split_by_document(bucket, step)?
            .into_iter()
            .map(SubBucket::Ready)
            .collect())
    }

    /// Splits by the details `step` gives each document, read one document at a time.
    fn split_by_document(
        &self,
        bucket: &RoaringBitmap,
        step: &Step,
    ) -> ShardResult<Vec<RoaringBitmap>> {
        #[cfg(test)]
        tests::DOCUMENTS_SPLIT_ONE_BY_ONE.with(|count| count.set(count.get() + bucket.len()));
        Ok(self
            .rank_by_document(bucket, step)?
            .into_iter()
            .map(|(documents, _)| documents)
            .collect())
    }

    /// The documents of `bucket` grouped by the details `step` gives them, best first, each
    /// group with its details.
    pub(super) fn rank_by_document(
        &self,
        bucket: &RoaringBitmap,
        step: &Step,
    ) -> ShardResult<Vec<(RoaringBitmap, Vec<ScoreDetail>)>> {
        let cache = match step {
            Step::Exactness => {
                let exact = self.exact_terms.get_or_init(|| exact_terms(self.resolved));
                self.exact_occurrences.read(
                    self.read,
                    self.snapshot.prefix_words(),
                    bucket,
                    exact,
                    None,
                    self.fields,
                )?;
                &self.exact_occurrences
            }
            _ => {
                self.occurrences.read(
                    self.read,
                    self.snapshot.prefix_words(),
                    bucket,
                    self.resolved,
                    Some(self.alternatives),
                    self.fields,
                )?;
                &self.occurrences
            }
        };
        let steps = std::slice::from_ref(step);
        let tables = sort_tables(self.read, self.snapshot.facet_columns(), steps, bucket)?;
        let occurrences = cache.found.borrow();
        let none = vec![Vec::new(); self.resolved.len()];
        // Groups of equal details, ordered best first; documents come in ascending order, so
        // each is appended to its group's bitmap. A map keeps this O(n log groups) even when
        // nearly every document has its own details (a geo sort).
        let mut groups: BTreeMap<RankedDetails, RoaringBitmap> = BTreeMap::new();
        let mut sources = DetailSources {
            tables: &tables,
            lengths: FieldLengthsReader::new(self.read)?,
        };
        // Both ascend: the occurrences are walked beside the bucket, not looked up per
        // document (a lookup per document was 7 % of a two-word query's CPU).
        let mut entries = occurrences.range(bucket.min().unwrap_or(0)..).peekable();
        for document in bucket {
            while entries.next_if(|(id, _)| **id < document).is_some() {}
            // A document without an (exact) occurrence of any term ranks as having none.
            let term_occurrences = match entries.peek() {
                Some((id, lists)) if **id == document => *lists,
                _ => &none,
            };
            let details = details(
                self.context,
                steps,
                &mut sources,
                document,
                self.kept,
                term_occurrences,
            )?;
            let group = groups.entry(RankedDetails(details)).or_default();
            // Appending is the common case (ascending documents); insert otherwise.
            if group.try_push(document).is_err() {
                group.insert(document);
            }
        }
        let split: Vec<(RoaringBitmap, Vec<ScoreDetail>)> = groups
            .into_iter()
            .map(|(RankedDetails(details), documents)| (documents, details))
            .collect();
        Ok(split)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::cell::Cell;

    use serde_json::json;

    use crate::search::SearchQuery;
    use crate::shard::Shard;
    use crate::test_database::replacement;

    thread_local! {
        /// Documents this thread's searches split by a step one document at a time (bitmap
        /// splits do not count).
        pub(in crate::search) static DOCUMENTS_SPLIT_ONE_BY_ONE: Cell<u64> = const { Cell::new(0) };
    }

    /// Documents holding `sunflower seed` in a field and at a position that vary with the id.
    const JOINED_DOCUMENTS: u64 = 400;
    /// Documents holding the split `sun flower seed` instead.
    const SPLIT_DOCUMENTS: u64 = 40;

    fn shard(directory: &tempfile::TempDir) -> Shard {
        let shard = Shard::open(
            &directory.path().join("shard.pages"),
            storage_engine::Options::default(),
        )
        .expect("open succeeds");
        let filler = |id: u64| vec!["filler"; usize::try_from(id % 7).expect("small")].join(" ");
        let text = |id: u64, words: &str| {
            let (lead, rest) = (filler(id), filler(id / 7));
            json!({"id": id, "title": format!("{lead} {words} {rest}"), "body": "other"})
        };
        let operations = (0..JOINED_DOCUMENTS + SPLIT_DOCUMENTS)
            .map(|id| {
                let mut document = if id < JOINED_DOCUMENTS {
                    text(id, "sunflower seed")
                } else {
                    text(id, "sun flower seed")
                };
                if id % 3 == 0 {
                    // The words in the second field: attribute rank splits the bucket.
                    let title = document["title"].take();
                    document["title"] = document["body"].take();
                    document["body"] = title;
                }
                replacement(id, document)
            })
            .collect();
        shard.apply(1, operations).expect("apply succeeds");
        shard
    }

    #[test]
    fn a_typo_free_bucket_splits_by_bitmaps_when_a_split_alternative_is_present() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let shard = shard(&directory);
        let snapshot = shard.read().expect("read succeeds");
        for q in ["sunflower", "sunflower seed"] {
            let query = SearchQuery {
                q: Some(q.to_owned()),
                limit: 10,
                ..SearchQuery::default()
            };
            DOCUMENTS_SPLIT_ONE_BY_ONE.with(|count| count.set(0));
            let hits = snapshot.search(&query).expect("search succeeds");
            // The split `sun flower` matches too (one typo): it is an alternative of the term.
            assert_eq!(hits.total, JOINED_DOCUMENTS + SPLIT_DOCUMENTS, "{q}");
            // The page is filled from the typo-free sub-bucket (400 documents): proximity,
            // attribute rank and word position split it from bitmaps, never one by one.
            assert_eq!(DOCUMENTS_SPLIT_ONE_BY_ONE.with(Cell::get), 0, "{q}");
            // Naming every field turns the bucket sort off: the full evaluation.
            let full = SearchQuery {
                attributes_to_search_on: Some(vec!["title".to_owned(), "body".to_owned()]),
                ..query.clone()
            };
            let full_hits = snapshot.search(&full).expect("search succeeds");
            assert_eq!(hits.hits, full_hits.hits, "{q}");
        }
    }
}
