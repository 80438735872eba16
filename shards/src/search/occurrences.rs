//! Where each query term occurs in each candidate document: the searched fields, and per
//! (document, term) the occurrences of the term's alternatives (see [`super::terms`]) with
//! their typo count and exactness.
//!
//! Invariants: only occurrences in searched fields count; an occurrence reached through a typo
//! in a field listed in `typoTolerance.disableOnAttributes` does not count; a phrase occurs
//! where its words stand at consecutive positions (stop-word holes skipped) in one field. A
//! document matches a term exactly when it has at least one occurrence of it.

use std::collections::BTreeMap;
use std::sync::Arc;

use roaring::RoaringBitmap;

use storage_engine::{ReadTransaction, ReadTree};

use crate::analysis::{Occurrence, TextSettings};
use crate::error::ShardResult;
use crate::index::inverted::{bitmap_or_empty, bitmap_within, keys_extending};
use crate::index::keys::stored_single_id;
use crate::index::position_chunks::{Occurrences, decode_occurrences_into};
use crate::index::stored_bitmap::intersection_within_counted;
use crate::index::trees::{WORD_DOCUMENTS_TREE, WORD_POSITIONS_TREE};

use super::phrase_filter::phrase_candidates;
use super::prefix_words::PrefixWords;
use super::term_postings::TermPostings;
use super::terms::{Alternative, ResolvedTerm};
use super::word_pairs::WordPairs;
use super::word_positions::{WordPositions, scan_word};

/// Scan a word's position chunks (rather than look its documents up) when at least one in
/// this many of its documents is wanted.
const SCAN_WANTED_RATIO: u64 = 8;

/// Most documents for which a prefix's words are found through the commit's
/// [`PrefixWords`] (a page's hits, a small chunk to rank) rather than word by word.
const FEW_DOCUMENTS_MAX: u64 = 256;

/// Fewest candidates of a phrase worth the position-bucket pre-filter: below, reading each
/// candidate's positions costs less than the words' bucket bitmaps.
const PHRASE_FILTER_CANDIDATES_MIN: u64 = 4096;

/// A searched field: its weight for the attribute rank and whether typos are disabled in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchedField {
    pub weight: u16,
    pub typos_disabled: bool,
}

/// Field id → searched field, for the fields this query searches.
pub type SearchedFields = BTreeMap<u16, SearchedField>;

fn covers(attribute: &str, path: &str) -> bool {
    path == attribute
        || (path.starts_with(attribute) && path.as_bytes().get(attribute.len()) == Some(&b'.'))
}

/// The fields searched: searchable under the settings and, when given, covered by
/// `attributesToSearchOn`.
pub fn searched_fields(
    fields: &BTreeMap<String, u16>,
    settings: &TextSettings,
    attributes_to_search_on: Option<&[String]>,
) -> SearchedFields {
    let mut searched = SearchedFields::new();
    for (path, id) in fields {
        let Some(weight) = settings.field_weight(path) else {
            continue;
        };
        if let Some(list) = attributes_to_search_on {
            if !list.iter().any(|attribute| covers(attribute, path)) {
                continue;
            }
        }
        let typos_disabled = settings
            .typo_tolerance
            .disable_on_attributes
            .iter()
            .any(|attribute| covers(attribute, path));
        searched.insert(
            *id,
            SearchedField {
                weight,
                typos_disabled,
            },
        );
    }
    searched
}

/// One place a term occurs in a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermOccurrence {
    pub field: u16,
    /// Position of the term's first word.
    pub start: u16,
    /// Position of the term's last word.
    pub end: u16,
    pub typos: u8,
    /// Reached through the query word itself or the phrase itself.
    pub exact: bool,
    /// Reached through an alternative several adjacent terms share.
    pub shared: bool,
    /// The term's place among the terms sharing the alternative (0 when not shared).
    pub window_offset: u8,
    /// Which alternative of the term.
    pub alternative: u16,
    /// An occurrence of a phrase's first word in a document holding the phrase: Meilisearch's
    /// attribute and word-position rules look at the first word instead of the phrase, and
    /// no other rule looks at it.
    pub anchor: bool,
}

impl TermOccurrence {
    /// Whether this occurrence counts for the rules other than attribute and position.
    pub fn is_match(&self) -> bool {
        !self.anchor
    }
}

/// Document → per term, its occurrences (the outer vector is indexed like `terms`).
pub type DocumentOccurrences = BTreeMap<u32, Vec<Vec<TermOccurrence>>>;

/// Reads where each term occurs in the documents of `universe`.
pub fn collect_occurrences(
    read: &ReadTransaction,
    prefix_words: &PrefixWords,
    universe: &RoaringBitmap,
    terms: &[ResolvedTerm],
    fields: &SearchedFields,
) -> ShardResult<DocumentOccurrences> {
    collect_within(read, prefix_words, universe, terms, None, fields)
}

/// [`collect_occurrences`] when the documents of each alternative are known already:
/// `known[term][alternative]` holds every document of `universe` where that alternative
/// occurs (the search's per-alternative documents). An alternative found in none of them is
/// not read at all (most typo alternatives, once a page of documents is chosen), and the
/// others are read only in the documents they hold.
pub fn collect_known_occurrences(
    read: &ReadTransaction,
    prefix_words: &PrefixWords,
    universe: &RoaringBitmap,
    terms: &[ResolvedTerm],
    known: &[Arc<TermPostings>],
    fields: &SearchedFields,
) -> ShardResult<DocumentOccurrences> {
    collect_within(read, prefix_words, universe, terms, Some(known), fields)
}

fn collect_within(
    read: &ReadTransaction,
    prefix_words: &PrefixWords,
    universe: &RoaringBitmap,
    terms: &[ResolvedTerm],
    known: Option<&[Arc<TermPostings>]>,
    fields: &SearchedFields,
) -> ShardResult<DocumentOccurrences> {
    // Every occurrence of every term, tagged with its document and term, in the order the
    // per-term lists keep them; a stable sort by document then groups them without one map
    // lookup per occurrence, and the map is built from sorted entries in one pass.
    let mut tagged: Vec<TaggedOccurrence> = Vec::new();
    let mut spans = AlternativeSpans::default();
    for (index, term) in terms.iter().enumerate() {
        for (alternative, found) in term.alternatives.iter().enumerate() {
            let holding = known
                .and_then(|known| known.get(index))
                .and_then(|known| known.alternatives.get(alternative));
            let narrowed;
            let universe = match holding {
                Some(holding) => {
                    narrowed = holding & universe;
                    if narrowed.is_empty() {
                        continue;
                    }
                    &narrowed
                }
                None => universe,
            };
            let alternative = u16::try_from(alternative).unwrap_or(u16::MAX);
            spans.read(read, prefix_words, universe, found)?;
            spans.tag(index, alternative, found, fields, &mut tagged);
        }
    }
    tagged.sort_by_key(|(document, _)| *document);
    Ok(group_by_document(tagged, terms.len()))
}

/// An occurrence with its document and term index; `None` for a document holding only spans
/// that do not count.
type TaggedOccurrence = (u32, Option<(usize, TermOccurrence)>);

/// The spans of one alternative in some documents, in buffers reused from one alternative to
/// the next.
#[derive(Default)]
struct AlternativeSpans {
    /// Where the alternative occurs.
    spans: FlatSpans,
    /// For a phrase, where its first word occurs in the documents holding the phrase.
    anchors: FlatSpans,
}

impl AlternativeSpans {
    /// Reads where `found` occurs in `universe` (emptying what the last alternative left).
    fn read(
        &mut self,
        read: &ReadTransaction,
        prefix_words: &PrefixWords,
        universe: &RoaringBitmap,
        found: &Alternative,
    ) -> ShardResult<()> {
        self.spans.clear();
        self.anchors.clear();
        match found.words.as_slice() {
            [Some(word)] if found.prefix => {
                prefix_occurrences(read, prefix_words, universe, word, &mut self.spans)?
            }
            [Some(word)] => word_occurrences(read, universe, word, &mut self.spans)?,
            phrase => {
                let phrase_spans = phrase_occurrences(read, universe, phrase)?;
                let holding: RoaringBitmap = phrase_spans.keys().copied().collect();
                self.spans
                    .extend(phrase_spans.into_iter().flat_map(|(document, list)| {
                        list.into_iter().map(move |span| (document, span))
                    }));
                if let Some(first) = phrase.iter().flatten().next() {
                    word_occurrences(read, &holding, first, &mut self.anchors)?;
                }
            }
        }
        Ok(())
    }

    /// Appends the spans read, as occurrences of alternative `alternative` (`found`) of term
    /// `index`, to `tagged`; a span in a field where its typos do not count tags its document
    /// alone.
    fn tag(
        &self,
        index: usize,
        alternative: u16,
        found: &Alternative,
        fields: &SearchedFields,
        tagged: &mut Vec<TaggedOccurrence>,
    ) {
        let all = self
            .spans
            .iter()
            .map(|entry| (entry, false))
            .chain(self.anchors.iter().map(|entry| (entry, true)));
        for (&(document, (field, start, end)), anchor) in all {
            let counts = fields
                .get(&field)
                .is_some_and(|searched| found.typos == 0 || !searched.typos_disabled);
            if !counts {
                // The document still gets its (possibly empty) lists, as every document
                // with a span of any term does.
                tagged.push((document, None));
                continue;
            }
            tagged.push((
                document,
                Some((
                    index,
                    TermOccurrence {
                        field,
                        start,
                        end,
                        typos: found.typos,
                        exact: found.exact,
                        shared: found.shared,
                        window_offset: found.window_offset,
                        alternative,
                        anchor,
                    },
                )),
            ));
        }
    }
}

/// `tagged` (sorted by document; `None` marks a document holding only spans that do not
/// count) as per-document lists indexed like the terms.
///
/// Each list is allocated once at its final size, from a count per term, instead of growing
/// push by push (the allocator took about 15 % of a two-word query's CPU in a profile, part of
/// it growing these lists).
fn group_by_document(tagged: Vec<TaggedOccurrence>, term_count: usize) -> DocumentOccurrences {
    let mut grouped: Vec<(u32, Vec<Vec<TermOccurrence>>)> = Vec::new();
    let mut counts = vec![0_usize; term_count];
    for same_document in tagged.chunk_by(|left, right| left.0 == right.0) {
        let Some(&(document, _)) = same_document.first() else {
            continue;
        };
        counts.fill(0);
        for (index, _) in same_document
            .iter()
            .filter_map(|(_, occurrence)| occurrence.as_ref())
        {
            if let Some(count) = counts.get_mut(*index) {
                *count += 1;
            }
        }
        let mut lists: Vec<Vec<TermOccurrence>> = counts
            .iter()
            .map(|&count| Vec::with_capacity(count))
            .collect();
        for (index, occurrence) in same_document
            .iter()
            .filter_map(|(_, occurrence)| *occurrence)
        {
            if let Some(list) = lists.get_mut(index) {
                list.push(occurrence);
            }
        }
        grouped.push((document, lists));
    }
    grouped.into_iter().collect()
}

/// Spans `(document, (field, first position, last position))`, grouped by document in
/// ascending document order.
type FlatSpans = Vec<(u32, (u16, u16, u16))>;

/// The documents of `universe` containing `word`.
pub fn word_documents(
    read: &ReadTransaction,
    universe: &RoaringBitmap,
    word: &str,
) -> ShardResult<RoaringBitmap> {
    let Some(tree) = read.open_tree(WORD_DOCUMENTS_TREE)? else {
        return Ok(RoaringBitmap::new());
    };
    bitmap_within(tree.get(word.as_bytes())?, universe)
}

/// Every document holding `word` (its whole posting: live documents only).
pub fn word_postings(read: &ReadTransaction, word: &str) -> ShardResult<RoaringBitmap> {
    let Some(tree) = read.open_tree(WORD_DOCUMENTS_TREE)? else {
        return Ok(RoaringBitmap::new());
    };
    bitmap_or_empty(tree.get(word.as_bytes())?)
}

/// Appends to `found` the occurrences of `word` in each document of `universe` containing
/// it, as spans in ascending document order.
fn word_occurrences(
    read: &ReadTransaction,
    universe: &RoaringBitmap,
    word: &str,
    found: &mut FlatSpans,
) -> ShardResult<()> {
    let Some(documents_tree) = read.open_tree(WORD_DOCUMENTS_TREE)? else {
        return Ok(());
    };
    let Some(positions) = read.open_tree(WORD_POSITIONS_TREE)? else {
        return Ok(());
    };
    let Some(stored) = documents_tree.get(word.as_bytes())? else {
        return Ok(());
    };
    let (wanted, stored_len) = intersection_within_counted(stored, universe)?;
    add_word_occurrences(&positions, word.as_bytes(), &wanted, stored_len, found)
}

/// Appends to `found` the occurrences of the word `word` in the documents of `wanted` (the
/// word's documents that are wanted; it has `stored_len` documents in all), in ascending
/// document order.
///
/// When most of the word's documents are wanted, its position chunks are read in one ordered
/// scan; otherwise each wanted document is looked up, in ascending order.
fn add_word_occurrences(
    positions: &ReadTree<'_>,
    word: &[u8],
    wanted: &RoaringBitmap,
    stored_len: u64,
    found: &mut FlatSpans,
) -> ShardResult<()> {
    if wanted.is_empty() {
        return Ok(());
    }
    let mut add = |document: u32, bytes: &[u8]| -> ShardResult<()> {
        for occurrence in Occurrences::new(bytes) {
            let occurrence = occurrence?;
            found.push((
                document,
                (occurrence.field, occurrence.position, occurrence.position),
            ));
        }
        Ok(())
    };
    if wanted.len().saturating_mul(SCAN_WANTED_RATIO) >= stored_len {
        // The scan and the wanted documents both ascend: walked side by side, and the scan
        // stops at the last wanted document.
        let mut pending = wanted.iter().peekable();
        for entry in scan_word(positions, word)? {
            let (document, bytes) = entry?;
            while pending.next_if(|&next| next < document).is_some() {}
            if pending.next_if_eq(&document).is_some() {
                add(document, bytes)?;
            }
            if pending.peek().is_none() {
                break;
            }
        }
    } else {
        let mut lookup = WordPositions::new(*positions, word);
        for document in wanted {
            if let Some(bytes) = lookup.get(document)? {
                add(document, bytes)?;
            }
        }
    }
    Ok(())
}

/// Appends to `found` (empty on entry) the occurrences of every word longer than `prefix`
/// that starts with it, in the documents of `universe`, each word's positions read only for
/// its documents in `universe`; sorted by document and span, without repeats. For a few
/// documents the words come from the commit's [`PrefixWords`] (unless the prefix is too heavy
/// to keep); otherwise word by word over the dictionary range of the prefix (so no expansion
/// is ever cut off).
fn prefix_occurrences(
    read: &ReadTransaction,
    prefix_words: &PrefixWords,
    universe: &RoaringBitmap,
    prefix: &str,
    found: &mut FlatSpans,
) -> ShardResult<()> {
    let Some(documents_tree) = read.open_tree(WORD_DOCUMENTS_TREE)? else {
        return Ok(());
    };
    let Some(positions) = read.open_tree(WORD_POSITIONS_TREE)? else {
        return Ok(());
    };
    let kept = if universe.len() <= FEW_DOCUMENTS_MAX {
        Some(prefix_words.words(read, prefix)?)
    } else {
        None
    };
    if let Some(Some(words)) = kept.as_deref() {
        for within in words.within(&documents_tree, universe)? {
            add_word_occurrences(
                &positions,
                within.word,
                &within.documents,
                within.stored_len,
                found,
            )?;
        }
    } else {
        // The word itself is its own alternative: only longer words.
        for entry in keys_extending(&documents_tree, prefix)? {
            let (word, bitmap) = entry?;
            // Most words a short prefix starts are rare, stored as their one document: that
            // one is tested against the universe in place, without decoding a bitmap per word.
            if let Some(document) = stored_single_id(bitmap) {
                if universe.contains(document) {
                    let only: RoaringBitmap = std::iter::once(document).collect();
                    add_word_occurrences(&positions, word, &only, 1, found)?;
                }
                continue;
            }
            let (wanted, stored_len) = intersection_within_counted(bitmap, universe)?;
            add_word_occurrences(&positions, word, &wanted, stored_len, found)?;
        }
    }
    found.sort_unstable();
    found.dedup();
    Ok(())
}

/// Per document, the spans of a phrase: `(field, first position, last position)`.
pub type PhraseSpans = BTreeMap<u32, Vec<(u16, u16, u16)>>;

/// Where `phrase` occurs: per document, `(field, first position, last position)`.
pub fn phrase_occurrences(
    read: &ReadTransaction,
    universe: &RoaringBitmap,
    phrase: &[Option<String>],
) -> ShardResult<PhraseSpans> {
    let mut found = BTreeMap::new();
    let real: Vec<(usize, &String)> = phrase
        .iter()
        .enumerate()
        .filter_map(|(offset, word)| word.as_ref().map(|word| (offset, word)))
        .collect();
    let Some(&(first_offset, _)) = real.first() else {
        return Ok(found);
    };
    // The pairs of consecutive words are a tighter pre-filter than the position buckets;
    // only a phrase without two consecutive words needs the buckets.
    let holding_pairs = WordPairs::open(read)?.phrase_candidates(phrase, universe)?;
    let paired = holding_pairs.is_some();
    let mut candidates = holding_pairs.unwrap_or_else(|| universe.clone());
    for (_, word) in &real {
        candidates &= word_documents(read, &candidates, word)?;
    }
    if !paired && candidates.len() >= PHRASE_FILTER_CANDIDATES_MIN {
        if let Some(possible) = phrase_candidates(read, &real)? {
            candidates &= possible;
        }
    }
    let Some(tree) = read.open_tree(WORD_POSITIONS_TREE)? else {
        return Ok(found);
    };
    let last_offset = phrase.len().saturating_sub(1);
    // One reader per word: each walks its word's chunks in ascending document order. The
    // occurrence lists are reused from document to document.
    let mut lookups: Vec<_> = real
        .iter()
        .map(|(_, word)| WordPositions::new(tree, word.as_bytes()))
        .collect();
    let mut lists: Vec<(usize, Vec<Occurrence>)> = real
        .iter()
        .map(|(offset, _)| (*offset, Vec::new()))
        .collect();
    for document in &candidates {
        for (lookup, (_, list)) in lookups.iter_mut().zip(&mut lists) {
            let bytes = lookup.get(document)?.unwrap_or_default();
            decode_occurrences_into(bytes, list)?;
        }
        let mut spans = Vec::new();
        for anchor in &lists[0].1 {
            let Some(start) = usize::from(anchor.position).checked_sub(first_offset) else {
                continue;
            };
            let all_there = lists.iter().all(|(offset, occurrences)| {
                let wanted = Occurrence {
                    field: anchor.field,
                    position: u16::try_from(start + offset).unwrap_or(u16::MAX),
                };
                start + offset <= usize::from(u16::MAX)
                    && occurrences.binary_search(&wanted).is_ok()
            });
            if all_there {
                let start = u16::try_from(start).expect("below the anchor position");
                let end = u16::try_from(start as usize + last_offset).unwrap_or(u16::MAX);
                spans.push((anchor.field, start, end));
            }
        }
        if !spans.is_empty() {
            found.insert(document, spans);
        }
    }
    Ok(found)
}
