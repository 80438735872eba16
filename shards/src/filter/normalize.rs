//! How facet strings are compared: trimmed, decomposed (NFKD, character by character) and
//! lowercased; stored facet strings are further cut to [`FACET_STRING_BYTES_MAX`] bytes.
//!
//! Invariant: the same function normalizes stored values and filter operands (`=`, `IN`,
//! `CONTAINS`, `STARTS WITH`), so equality is case- and compatibility-insensitive.

use unicode_normalization::UnicodeNormalization;

/// The longest facet string kept for filtering, in bytes (longer ones are cut on a character
/// boundary), as Meilisearch's limit of a facet key.
pub const FACET_STRING_BYTES_MAX: usize = 468;

/// The normalized form of a facet string or of a filter operand.
pub fn normalize_facet(original: &str) -> String {
    let decomposed: String = original
        .trim()
        .chars()
        .flat_map(|character| character.nfkd())
        .collect();
    decomposed.to_lowercase()
}

/// `normalized` cut to at most [`FACET_STRING_BYTES_MAX`] bytes on a character boundary.
pub fn truncate_facet(normalized: &str) -> &str {
    if normalized.len() <= FACET_STRING_BYTES_MAX {
        return normalized;
    }
    let mut end = FACET_STRING_BYTES_MAX;
    while !normalized.is_char_boundary(end) {
        end -= 1;
    }
    &normalized[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_trims_decomposes_and_lowercases() {
        assert_eq!(normalize_facet("  Hello World "), "hello world");
        assert_eq!(normalize_facet("Ｆｕｌｌ"), "full");
        assert_eq!(normalize_facet("É"), "e\u{301}");
        assert_eq!(normalize_facet("ﬁ"), "fi");
    }

    #[test]
    fn truncation_keeps_character_boundaries() {
        let long = "é".repeat(300);
        let cut = truncate_facet(&long);
        assert!(cut.len() <= FACET_STRING_BYTES_MAX);
        assert_eq!(cut.len(), 468);
        let odd = format!("a{}", "é".repeat(300));
        assert_eq!(truncate_facet(&odd).len(), 467);
    }
}
