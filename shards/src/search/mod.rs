//! Full-text search inside one shard: reading the inverted index kept in the shard's page
//! store (its format is [`crate::index::inverted`]'s), query parsing, word derivations (prefix, typos, synonyms), the matching
//! strategies, Meilisearch's ranking rules with `_rankingScore` and `_rankingScoreDetails`,
//! and [`crate::shard::ShardSnapshot::search`].
//!
//! Entry points: [`crate::shard::Shard::set_text_settings`] (stores the
//! [`crate::analysis::TextSettings`], rebuilding the index when searchable attributes, stop
//! words, separators or the dictionary change), [`crate::shard::ShardSnapshot::search`] with a
//! [`SearchQuery`] → [`ShardHits`] (first `offset + limit` hits, each with its internal id,
//! `_rankingScore`, per-rule [`ScoreDetail`]s rendered by [`details_json`], the words it
//! matched through, and its distinct values), and
//! [`crate::shard::ShardSnapshot::term_document_counts`] for `matchingStrategy: frequency`
//! across shards. The inverted index is kept by `shard::apply` in the same write transaction
//! as the documents (see [`crate::index`] for the trees and their encoding). [`format`] computes a
//! hit's `_formatted` and `_matchesPosition` (highlighting, cropping, match positions).
//!
//! The contract the server relies on: a hit's score and details depend only on the document
//! and the query, never on the other documents of the shard, so merging shards' hits with
//! [`compare_details`] (then any tie-break) gives the order one big shard would give.
//! To keep that, maximum ranks are computed from the query alone (Meilisearch bounds a term's
//! typo maximum by the typos its index actually holds; here it is the typos the term is
//! allowed), and `matchingStrategy: frequency` takes index-wide term counts from the caller
//! ([`SearchQuery::term_document_counts`]).
//!
//! Not done yet (known differences from Meilisearch 1.41):
//! - n-grams (2 or 3 adjacent query words concatenated, see [`ngrams`]) have no split
//!   words of their own (Meilisearch's have their joined word's best split); each term's
//!   typos are its fewest over its alternatives, so one word of an n-gram may be priced
//!   through the n-gram while the other is priced alone (Meilisearch's path takes both words
//!   through the n-gram or neither); an n-gram counts as side by side for proximity (its
//!   proximity edge costs one per word it adds); a query word's split
//!   into two words side by side ([`split_words`]) is chosen by this shard's pair counts,
//!   Meilisearch's by the index's;
//! - with a distinct attribute the hits are candidates the server applies distinct over (see
//!   [`distinct`]) and the total counts every match (the server computes Meilisearch's);
//! - proximity picks the closest pair per adjacent term pair independently (Meilisearch keeps
//!   one derivation per term along a path); like Meilisearch's later rules, proximity,
//!   attribute and word position look only at each term's fewest-typo occurrences, and a
//!   phrase's attribute and position are its first word's; the exact-attribute check wants
//!   every term in one field;
//! - typo expansions are capped per query word (see [`derivations`]), as Meilisearch's are,
//!   but over this shard's dictionary: the union over shards holds more words than
//!   Meilisearch's first 150 of the index; whether a prefix is in Meilisearch's prefix cache
//!   is decided from this shard's words too ([`prefix_cache`]);
//!   prefix expansions are not (every word of the prefix's dictionary range);
//! - the lazy bucket sort ([`refine`]) splits by typo, attribute rank, word position and sort
//!   from bitmaps, and by exactness as the last rule reading only what the page needs, but
//!   proximity (and exactness before another rule) reads every document of the bucket it
//!   splits, so a large bucket of frequent words still costs at the proximity rule
//!   (Meilisearch has a word-pair proximity index); phrases are checked document by document;
//! - the full evaluation (every matching document ranked) still serves `distinct`,
//!   `attributesToSearchOn`, attributes with typos disabled, and rules that put `words`
//!   after another rule;
//! - `rankingScoreThreshold` is not handled here (the server applies it after merging);
//! - without `locales`, a query is analysed in the languages of the localized fields this
//!   shard has (Meilisearch takes the index's fields: they differ only when a localized field
//!   exists in some shards and not in others);
//! - past `searchCutoffMs` ([`SearchQuery::deadline`]) the documents not ranked yet are taken
//!   by lowest internal id; which ones differ from Meilisearch's (other ids, and a deadline
//!   looked at between steps, not inside one), their details end with `skipped` as its do;
//! - a custom `field:asc|desc` rule and the distinct attribute read the field's facet index
//!   (the server facets them as Meilisearch does, beside the filterable and sortable ones).

mod best_first;
mod bitmap_union;
mod buckets;
pub mod derivation_carry;
pub mod derivation_memo;
pub mod derivations;
mod details;
pub mod dictionary;
pub mod distinct;
pub mod distinct_narrowing;
mod execute;
pub mod facet_columns;
pub mod facet_counts;
pub mod facet_forms;
pub mod facet_values;
mod field_starts;
pub mod format;
pub mod geo_sort;
mod lazy_exactness;
mod ngrams;
pub mod occurrences;
mod phrase_filter;
mod prefix_cache;
pub mod prefix_carry;
pub mod prefix_unions;
pub mod prefix_words;
mod proximity_bitmaps;
mod query;
pub mod ranking;
mod refine;
mod rule_bitmaps;
mod score;
mod slot_split;
mod sort_values;
pub(crate) mod split_words;
mod steps;
pub(crate) mod term_postings;
pub mod terms;
pub mod touched_postings;
mod typo_split;
pub mod vector;
pub mod weighted_score;
mod word_pairs;
pub mod word_positions;

pub use distinct_narrowing::DistinctNarrowing;
pub use execute::{ShardHit, ShardHits};
pub use facet_counts::FieldFacetCounts;
pub use query::{
    MatchingStrategy, ParsedQuery, QUERY_TERMS_MAX, QueryTerm, SearchQuery, SearchSort, TermKind,
    parse_query, typos_allowed,
};
pub use score::{
    ExactAttribute, Rank, ScoreDetail, SortValue, compare_details, details_json, global_score,
};
pub use vector::{VectorQuery, similarity_of};
