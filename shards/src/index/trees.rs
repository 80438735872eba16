//! The name of every tree a shard keeps in its page-store file, the groups of trees that are
//! emptied or rebuilt together, and the names of the records of `meta`.
//!
//! Each tree is declared here and nowhere else; its key and value encodings are in the
//! module named beside it, and `shards/DESIGN.md` §2 draws them byte by byte.
//!
//! Invariants: the names are distinct (checked below), and a tree in a group is one of the
//! trees declared here; [`DOCUMENT_TREES`], [`FACET_TREES`] and [`TEXT_TREES`] hold each tree
//! at most once, and [`FIELDS_TREE`] and [`META_TREE`] are in none of them (the fields map
//! only grows, and `meta` holds the shard's state across `DeleteAll`).

/// Named records of the shard's state (see [`META_RECORDS`]); encoded by `shard::state`.
pub const META_TREE: &str = "meta";
/// External id (UTF-8) → internal id (u32 big-endian).
pub const EXTERNAL_IDS_TREE: &str = "external_ids";
/// Internal id (u32 BE) → the document, stored as [`super::document_codec`] says.
pub const DOCUMENTS_TREE: &str = "documents";
/// Dictionary id (u32 BE) → a zstd dictionary trained from the shard's documents.
pub const DOCUMENT_DICTIONARIES_TREE: &str = "document_dictionaries";
/// Field path (UTF-8) → field id (u16 BE, see [`super::keys::encode_field_id`]).
pub const FIELDS_TREE: &str = "fields";
/// Top-level field (UTF-8) → the number of documents holding it (u64 BE).
pub const FIELD_DISTRIBUTION_TREE: &str = "field_distribution";
/// Field id ‖ ordered number → bitmap (see [`super::keys::number_key`]).
pub const FACET_NUMBERS_TREE: &str = "facet_numbers";
/// Field id ‖ normalized string → original spelling ‖ bitmap (see
/// [`super::keys::string_key`], [`super::keys::encode_string_entry`]).
pub const FACET_STRINGS_TREE: &str = "facet_strings";
/// Field id ‖ presence kind → bitmap (see [`super::keys::presence_key`]).
pub const FACET_PRESENCE_TREE: &str = "facet_presence";
/// Internal id (u32 BE) → latitude ‖ longitude (see [`super::keys::encode_geo_point`]).
pub const GEO_TREE: &str = "geo";

/// Word → bitmap; also the word dictionary (see [`super::inverted`]).
pub const WORD_DOCUMENTS_TREE: &str = "word_documents";
/// Word ‖ `0xFF` ‖ a chunk's first id → the chunk (see [`super::position_chunks`]).
pub const WORD_POSITIONS_TREE: &str = "word_position_chunks";
/// The tree of one key per word and document that [`WORD_POSITIONS_TREE`] replaced: only a
/// shard written before holds it (and is re-indexed when opened).
pub const LEGACY_WORD_POSITIONS_TREE: &str = "word_positions";
/// Internal id (u32 BE) → the document's (field id, word count) pairs (see
/// [`super::inverted::encode_field_lengths`]).
pub const FIELD_LENGTHS_TREE: &str = "field_lengths";
/// Word ‖ `0xFF` ‖ field id → bitmap (see [`super::inverted::write_word_slot_key`]).
pub const WORD_FIELDS_TREE: &str = "word_fields";
/// Word ‖ `0xFF` ‖ position bucket → bitmap (see [`super::inverted::bucketed_position`]).
pub const WORD_POSITION_BUCKETS_TREE: &str = "word_position_buckets";
/// Word ‖ `0xFF` ‖ following word → bitmap (see [`super::inverted::write_pair_key`]): the
/// documents where the second word stands right after the first in one field.
pub const WORD_PAIRS_TREE: &str = "word_pairs";
/// As [`WORD_PAIRS_TREE`], the second word two positions after the first.
pub const WORD_PAIRS_AT_2_TREE: &str = "word_pairs_2";
/// As [`WORD_PAIRS_TREE`], the second word three positions after the first.
pub const WORD_PAIRS_AT_3_TREE: &str = "word_pairs_3";
/// The farthest distance between two words of one field that a pair tree records: proximity
/// ranks distances 1 to 3 apart and every farther one alike (Meilisearch's `MAX_DISTANCE`, 4).
pub const PAIR_DISTANCE_MAX: usize = 3;
/// The pair trees by distance: the tree of distance `d` is at index `d - 1`.
pub const WORD_PAIR_TREES: [&str; PAIR_DISTANCE_MAX] =
    [WORD_PAIRS_TREE, WORD_PAIRS_AT_2_TREE, WORD_PAIRS_AT_3_TREE];
/// Field id ‖ word count → bitmap (see [`super::inverted::field_word_count_key`]).
pub const FIELD_WORD_COUNTS_TREE: &str = "field_word_counts";

/// Trees emptied by `DeleteAll` besides [`GEO_TREE`] and [`TEXT_TREES`] (the fields map and
/// `meta` stay).
pub const DOCUMENT_TREES: [&str; 7] = [
    EXTERNAL_IDS_TREE,
    DOCUMENTS_TREE,
    DOCUMENT_DICTIONARIES_TREE,
    FIELD_DISTRIBUTION_TREE,
    FACET_NUMBERS_TREE,
    FACET_STRINGS_TREE,
    FACET_PRESENCE_TREE,
];
/// Trees rebuilt when the facet settings change.
pub const FACET_TREES: [&str; 4] = [
    FACET_NUMBERS_TREE,
    FACET_STRINGS_TREE,
    FACET_PRESENCE_TREE,
    GEO_TREE,
];
/// The trees of the inverted index (emptied by `DeleteAll`, rebuilt on text settings change).
pub const TEXT_TREES: [&str; 9] = [
    WORD_DOCUMENTS_TREE,
    WORD_POSITIONS_TREE,
    FIELD_LENGTHS_TREE,
    WORD_FIELDS_TREE,
    WORD_POSITION_BUCKETS_TREE,
    WORD_PAIRS_TREE,
    WORD_PAIRS_AT_2_TREE,
    WORD_PAIRS_AT_3_TREE,
    FIELD_WORD_COUNTS_TREE,
];

/// Every tree a shard of this version may hold, with the legacy one it removes.
pub const ALL_TREES: [&str; 20] = [
    META_TREE,
    EXTERNAL_IDS_TREE,
    DOCUMENTS_TREE,
    DOCUMENT_DICTIONARIES_TREE,
    FIELDS_TREE,
    FIELD_DISTRIBUTION_TREE,
    FACET_NUMBERS_TREE,
    FACET_STRINGS_TREE,
    FACET_PRESENCE_TREE,
    GEO_TREE,
    WORD_DOCUMENTS_TREE,
    WORD_POSITIONS_TREE,
    LEGACY_WORD_POSITIONS_TREE,
    FIELD_LENGTHS_TREE,
    WORD_FIELDS_TREE,
    WORD_POSITION_BUCKETS_TREE,
    WORD_PAIRS_TREE,
    WORD_PAIRS_AT_2_TREE,
    WORD_PAIRS_AT_3_TREE,
    FIELD_WORD_COUNTS_TREE,
];

/// `meta`: the uid of the last applied batch (u64 BE).
pub const META_APPLIED_BATCH: &[u8] = b"applied_batch";
/// `meta`: one past the largest internal id ever taken (u64 BE).
pub const META_NEXT_ID: &[u8] = b"next_id";
/// `meta`: the freed internal ids below `next_id` (bitmap).
pub const META_FREE_IDS: &[u8] = b"free_ids";
/// `meta`: the live internal ids (bitmap).
pub const META_DOCUMENT_IDS: &[u8] = b"document_ids";
/// `meta`: the bytes of the stored documents (u64 BE).
pub const META_DOCUMENT_BYTES: &[u8] = b"document_bytes";
/// `meta`: the facet settings (JSON).
pub const META_SETTINGS: &[u8] = b"facet_settings";
/// `meta`: the text settings (JSON).
pub const META_TEXT_SETTINGS: &[u8] = b"text_settings";
/// `meta`: the id of the dictionary new documents are compressed with (u32 BE).
pub const META_DICTIONARY: &[u8] = b"document_dictionary";
/// `meta`: the id the next trained dictionary takes (u32 BE).
pub const META_NEXT_DICTIONARY_ID: &[u8] = b"next_document_dictionary";
/// `meta`: live documents when a dictionary was last trained (u64 BE).
pub const META_DICTIONARY_TRAINED_AT: &[u8] = b"document_dictionary_trained_at";

/// `meta`: the embedder slots (JSON, see `crate::vectors::settings`).
pub const META_VECTOR_SETTINGS: &[u8] = b"vector_settings";

/// Every record of `meta`.
pub const META_RECORDS: [&[u8]; 11] = [
    META_APPLIED_BATCH,
    META_NEXT_ID,
    META_FREE_IDS,
    META_DOCUMENT_IDS,
    META_DOCUMENT_BYTES,
    META_SETTINGS,
    META_TEXT_SETTINGS,
    META_DICTIONARY,
    META_NEXT_DICTIONARY_ID,
    META_DICTIONARY_TRAINED_AT,
    META_VECTOR_SETTINGS,
];

/// Whether `names` holds no name twice (a `const fn`, for the checks below).
const fn all_distinct(names: &[&[u8]]) -> bool {
    let mut index = 0;
    while index < names.len() {
        if contains(names, index + 1, names[index]) {
            return false;
        }
        index += 1;
    }
    true
}

/// Whether `names[from..]` holds `name`.
const fn contains(names: &[&[u8]], from: usize, name: &[u8]) -> bool {
    let mut index = from;
    while index < names.len() {
        if bytes_equal(names[index], name) {
            return true;
        }
        index += 1;
    }
    false
}

const fn bytes_equal(left: &[u8], right: &[u8]) -> bool {
    if left.len() != right.len() {
        return false;
    }
    let mut index = 0;
    while index < left.len() {
        if left[index] != right[index] {
            return false;
        }
        index += 1;
    }
    true
}

/// The names as bytes, for [`all_distinct`] and [`contains`].
const fn name_bytes<const N: usize>(names: [&'static str; N]) -> [&'static [u8]; N] {
    let mut bytes: [&[u8]; N] = [b"".as_slice(); N];
    let mut index = 0;
    while index < N {
        bytes[index] = names[index].as_bytes();
        index += 1;
    }
    bytes
}

const _: () = assert!(
    all_distinct(&name_bytes(ALL_TREES)),
    "two trees share a name"
);
const _: () = assert!(all_distinct(&META_RECORDS), "two meta records share a name");
const _: () = assert!(all_distinct(&name_bytes(DOCUMENT_TREES)));
const _: () = assert!(all_distinct(&name_bytes(FACET_TREES)));
const _: () = assert!(all_distinct(&name_bytes(TEXT_TREES)));
const _: () = {
    let kept = name_bytes([FIELDS_TREE, META_TREE]);
    let mut index = 0;
    while index < kept.len() {
        assert!(!contains(&name_bytes(DOCUMENT_TREES), 0, kept[index]));
        assert!(!contains(&name_bytes(FACET_TREES), 0, kept[index]));
        assert!(!contains(&name_bytes(TEXT_TREES), 0, kept[index]));
        index += 1;
    }
};
