//! Primary key resolution for a batch of document additions (Meilisearch v1.41
//! `retrieve_or_guess_primary_key`).
//!
//! Invariants:
//! - an index that already has a primary key keeps it: asking for a different one fails with
//!   `index_primary_key_already_exists`; asking for the same one (or none) uses it;
//! - otherwise the requested primary key is used as is (and becomes the index's);
//! - otherwise it is inferred from the **first document** of the batch: the candidates are the
//!   top-level fields whose Unicode-lowercased name ends with `id`, sorted by bytes; exactly one is
//!   chosen, none fails with `index_primary_key_no_candidate_found` (also when the batch has no
//!   document), several with `index_primary_key_multiple_candidates_found`;
//! - a primary key containing `.` is a nested path (see [`super::document_id`]).

use super::Document;
use super::error::DocumentsError;

/// The suffix that makes a field a primary key candidate (compared after lowercasing).
pub const PRIMARY_KEY_CANDIDATE_SUFFIX: &str = "id";

/// The separator of the components of a nested primary key.
pub const PRIMARY_KEY_SEPARATOR: char = '.';

/// The primary key a batch uses, and whether the index must store it (it had none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPrimaryKey {
    /// The primary key's name (a dotted path when nested).
    pub name: String,
    /// True when the index had no primary key: the index must record `name`.
    pub is_new: bool,
}

/// Decides the primary key of a batch from the index's stored primary key, the `primaryKey`
/// requested by the operation, and the first document of the batch.
pub fn resolve_primary_key(
    stored: Option<&str>,
    requested: Option<&str>,
    first_document: Option<&Document>,
) -> Result<ResolvedPrimaryKey, DocumentsError> {
    if let Some(stored) = stored {
        return match requested {
            Some(requested) if requested != stored => {
                Err(DocumentsError::PrimaryKeyAlreadyExists {
                    primary_key: stored.to_string(),
                })
            }
            _ => Ok(ResolvedPrimaryKey {
                name: stored.to_string(),
                is_new: false,
            }),
        };
    }
    if let Some(requested) = requested {
        return Ok(ResolvedPrimaryKey {
            name: requested.to_string(),
            is_new: true,
        });
    }
    let first_document = first_document.ok_or(DocumentsError::NoPrimaryKeyCandidate)?;
    let mut candidates = primary_key_candidates(first_document);
    match candidates.len() {
        0 => Err(DocumentsError::NoPrimaryKeyCandidate),
        1 => Ok(ResolvedPrimaryKey {
            name: candidates.remove(0),
            is_new: true,
        }),
        _ => Err(DocumentsError::MultiplePrimaryKeyCandidates { candidates }),
    }
}

/// The top-level fields of `document` that could be its primary key, sorted by bytes.
pub fn primary_key_candidates(document: &Document) -> Vec<String> {
    let mut candidates: Vec<String> = document
        .keys()
        .filter(|name| name.to_lowercase().ends_with(PRIMARY_KEY_CANDIDATE_SUFFIX))
        .cloned()
        .collect();
    candidates.sort_unstable();
    candidates
}

/// Every way to split a primary key into a first-level field name and the rest of the path:
/// at each `.`, then the whole name with an empty rest (`"a.b.c"` gives `("a", "b.c")`,
/// `("a.b", "c")`, `("a.b.c", "")`).
pub fn possible_level_names(primary_key: &str) -> impl Iterator<Item = (&str, &str)> + '_ {
    primary_key
        .match_indices(PRIMARY_KEY_SEPARATOR)
        .map(move |(index, _)| {
            (
                &primary_key[..index],
                &primary_key[index + PRIMARY_KEY_SEPARATOR.len_utf8()..],
            )
        })
        .chain(std::iter::once((primary_key, "")))
}
