//! Index uid patterns, as API keys and tenant tokens name the indexes they may reach: `*`
//! (every index), `prefix*` (every index whose uid starts with `prefix`) or an exact index
//! uid.
//!
//! Invariants:
//! - a pattern built by [`IndexUidPattern::parse`] is `*`, or a valid index uid optionally
//!   followed by one `*` (index uid: 1 to [`INDEX_UID_BYTES_MAX`] bytes of `[A-Za-z0-9_-]`);
//! - tenant-token patterns are NOT validated (Meilisearch reads them with plain serde), so
//!   [`IndexUidPattern::new_unchecked`] exists for them; matching works on any string.

use std::fmt;

/// The longest index uid, in bytes (the error message says 512; the check is 400).
pub const INDEX_UID_BYTES_MAX: usize = 400;

/// A pattern naming one index, a prefix of index uids, or every index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IndexUidPattern(String);

/// Why a string is not an index uid pattern; displays Meilisearch's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexUidPatternError {
    /// The part that failed the index uid rules (the prefix, without its `*`).
    pub invalid_uid: String,
}

impl fmt::Display for IndexUidPatternError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "`{}` is not a valid index uid pattern. Index uid patterns can be an integer or a \
             string containing only alphanumeric characters, hyphens (-), underscores (_), and \
             optionally end with a star (*).",
            self.invalid_uid
        )
    }
}

impl std::error::Error for IndexUidPatternError {}

/// Whether `uid` is a valid index uid.
pub fn is_valid_index_uid(uid: &str) -> bool {
    !uid.is_empty()
        && uid.len() <= INDEX_UID_BYTES_MAX
        && uid
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

impl IndexUidPattern {
    /// The pattern matching every index.
    pub fn all() -> IndexUidPattern {
        IndexUidPattern("*".to_string())
    }

    /// Validates a pattern as API-key creation does.
    pub fn parse(pattern: &str) -> Result<IndexUidPattern, IndexUidPatternError> {
        let checked_uid = match pattern.strip_suffix('*') {
            Some("") => return Ok(IndexUidPattern::all()),
            Some(prefix) => prefix,
            None => pattern,
        };
        if is_valid_index_uid(checked_uid) {
            Ok(IndexUidPattern(pattern.to_string()))
        } else {
            Err(IndexUidPatternError {
                invalid_uid: checked_uid.to_string(),
            })
        }
    }

    /// A pattern taken as is, without validation (tenant-token search rules).
    pub fn new_unchecked(pattern: impl Into<String>) -> IndexUidPattern {
        IndexUidPattern(pattern.into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the pattern is `*`.
    pub fn matches_all(&self) -> bool {
        self.0 == "*"
    }

    /// Whether the pattern names one index exactly (does not end with `*`).
    pub fn is_exact(&self) -> bool {
        !self.0.ends_with('*')
    }

    /// Whether the pattern matches the index uid.
    pub fn matches(&self, index_uid: &str) -> bool {
        match self.0.strip_suffix('*') {
            Some(prefix) => index_uid.starts_with(prefix),
            None => self.0 == index_uid,
        }
    }
}

impl fmt::Display for IndexUidPattern {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn valid_patterns_are_star_prefixes_and_uids() {
        for pattern in ["*", "movies", "movies*", "a-b_C9", "42", "m*"] {
            assert_eq!(
                IndexUidPattern::parse(pattern)
                    .expect("parse succeeds")
                    .as_str(),
                pattern
            );
        }
        let longest = "a".repeat(INDEX_UID_BYTES_MAX);
        assert!(IndexUidPattern::parse(&longest).is_ok());
        assert!(IndexUidPattern::parse(&format!("{longest}*")).is_ok());
    }

    #[test]
    fn invalid_patterns_report_the_offending_uid() {
        let cases = [
            ("good doggo", "good doggo"),
            ("bad doggo*", "bad doggo"),
            ("**", "*"),
            ("", ""),
            ("mo*vies", "mo*vies"),
            ("movies**", "movies*"),
        ];
        for (pattern, invalid_uid) in cases {
            let error = IndexUidPattern::parse(pattern).unwrap_err();
            assert_eq!(error.invalid_uid, invalid_uid, "{pattern:?}");
        }
        let too_long = "a".repeat(INDEX_UID_BYTES_MAX + 1);
        assert!(IndexUidPattern::parse(&too_long).is_err());
        assert_eq!(
            IndexUidPattern::parse("good doggo")
                .unwrap_err()
                .to_string(),
            "`good doggo` is not a valid index uid pattern. Index uid patterns can be an integer \
             or a string containing only alphanumeric characters, hyphens (-), underscores (_), \
             and optionally end with a star (*)."
        );
    }

    #[test]
    fn matching_is_exact_prefix_or_all() {
        let all = IndexUidPattern::parse("*").expect("parse succeeds");
        assert!(all.matches("anything") && all.matches_all() && !all.is_exact());
        let prefix = IndexUidPattern::parse("prod*").expect("parse succeeds");
        assert!(prefix.matches("prod") && prefix.matches("products") && !prefix.matches("pro"));
        let exact = IndexUidPattern::parse("prod").expect("parse succeeds");
        assert!(exact.matches("prod") && !exact.matches("products") && exact.is_exact());
    }
}
