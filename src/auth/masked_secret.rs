//! The one rule by which a secret is shown (an embedder's or chat workspace's API key in
//! settings and task details, a webhook's authorization header): as Meilisearch shows it, a
//! few leading bytes by the secret's length, then `X`s and an ellipsis.
//!
//! Invariants: at most [`KEPT_BYTES_MAX`] bytes of the secret are shown, never more than its
//! length class allows; the prefix is cut on a character boundary at or before that many
//! bytes, so a multi-byte character is never split (and never shown in part).

/// Bytes shown of a secret of at least 30 bytes; the shorter classes show fewer.
pub const KEPT_BYTES_MAX: usize = 5;

/// The length classes, by the secret's length in bytes: below the bound, the bytes shown
/// and the mask that follows them.
const CLASSES: [(usize, usize, &str); 3] =
    [(10, 0, "XXX..."), (20, 2, "XXXX..."), (30, 3, "XXXXX...")];
/// The mask after the [`KEPT_BYTES_MAX`] bytes of a secret of 30 bytes or more.
const LONGEST_MASK: &str = "XXXXXX...";

/// `secret` as it may be shown.
pub fn masked_secret(secret: &str) -> String {
    let (kept, mask) = CLASSES
        .iter()
        .find(|(below, _, _)| secret.len() < *below)
        .map_or((KEPT_BYTES_MAX, LONGEST_MASK), |(_, kept, mask)| {
            (*kept, *mask)
        });
    let mut end = kept.min(secret.len());
    while !secret.is_char_boundary(end) {
        end -= 1;
    }
    debug_assert!(
        end <= KEPT_BYTES_MAX,
        "a masked secret shows at most five bytes"
    );
    format!("{}{mask}", &secret[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_shows_a_prefix_by_its_length_class() {
        assert_eq!(masked_secret(""), "XXX...");
        assert_eq!(masked_secret("short"), "XXX...");
        assert_eq!(masked_secret("123456789"), "XXX...");
        assert_eq!(masked_secret("0123456789"), "01XXXX...");
        assert_eq!(masked_secret("0123456789abc"), "01XXXX...");
        assert_eq!(masked_secret("0123456789abcdefghijklmn"), "012XXXXX...");
        assert_eq!(masked_secret("sk-test-placeholder-api-key"), "sk-XXXXX...");
        assert_eq!(
            masked_secret("abcdefghijklmnopqrstuvwxyz0123456789"),
            "abcdeXXXXXX..."
        );
    }

    #[test]
    fn a_multi_byte_character_across_the_cut_is_left_out() {
        // "é" is two bytes: the class of 10–19 bytes shows two bytes, here "a" and half an "é".
        assert_eq!(masked_secret("aé345678901"), "aXXXX...");
        // 30 bytes or more: five bytes, "ab" then "€" (three bytes) fits exactly.
        let long = format!("ab€{}", "x".repeat(30));
        assert_eq!(masked_secret(&long), "ab€XXXXXX...");
        // "éé€": the cut at five bytes falls inside "€", which is left out.
        let split = format!("éé€{}", "x".repeat(30));
        assert_eq!(masked_secret(&split), "ééXXXXXX...");
    }
}
