//! The facet search forms of one commit's facet values, made once per field and locales and
//! kept with the commit's view: normalized facet value → its form (see
//! [`crate::analysis::facet_search_form`]).
//!
//! charabia's normalization costs about a microsecond per value, so a facet search that formed
//! every value of a field with tens of thousands of values on every keystroke would spend its
//! time there; Meilisearch keeps an on-disk dictionary of these forms for the same reason.
//!
//! Invariants: a memo entry holds the form of every string value of its field in its commit
//! (commits are immutable, so it never goes stale); the memo holds at most
//! [`FACET_FORMS_BYTES_MAX`] bytes of keys and forms — the forms of a field that would pass it
//! are made for the one search that asked and not kept.

use std::collections::HashMap;
use std::sync::Arc;

use charabia::Language;

use crate::cache_meter::CacheAccount;
use crate::commit_memo::{CommitMemo, WhenFull};

/// The most bytes of values and forms one commit's memo keeps.
pub const FACET_FORMS_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Normalized facet value → facet search form.
pub type FieldForms = HashMap<String, String>;

/// Which forms an entry holds: a field, and the locales its values were formed with.
type FormsKey = (u16, Option<Vec<Language>>);

/// The forms made on one commit.
pub struct FacetForms {
    memo: CommitMemo<FormsKey, FieldForms>,
}

impl Default for FacetForms {
    /// Outside any cache budget.
    fn default() -> Self {
        FacetForms::charging(CacheAccount::unbounded())
    }
}

impl FacetForms {
    /// An empty memo whose values are charged to `account`.
    pub fn charging(account: Arc<CacheAccount>) -> Self {
        FacetForms {
            memo: CommitMemo::charging(FACET_FORMS_BYTES_MAX, WhenFull::KeepWhatIsThere, account),
        }
    }
}

impl FacetForms {
    /// The forms of `field`'s values for `locales`, made by `make` when not kept yet.
    pub fn of_field<E>(
        &self,
        field: u16,
        locales: Option<&[Language]>,
        make: impl FnOnce() -> Result<FieldForms, E>,
    ) -> Result<Arc<FieldForms>, E> {
        let key: FormsKey = (field, locales.map(<[Language]>::to_vec));
        if let Some(kept) = self.memo.get(&key) {
            return Ok(kept);
        }
        let made = Arc::new(make()?);
        let bytes = forms_bytes(&made);
        Ok(self.memo.keep(key, made, bytes))
    }
}

/// The bytes of the strings a memo entry holds.
fn forms_bytes(forms: &FieldForms) -> usize {
    forms
        .iter()
        .map(|(value, form)| value.len() + form.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms_of(values: &[(&str, &str)]) -> FieldForms {
        values
            .iter()
            .map(|(value, form)| ((*value).to_owned(), (*form).to_owned()))
            .collect()
    }

    #[test]
    fn forms_are_made_once_per_field_and_locales() {
        let memo = FacetForms::default();
        let mut made = 0;
        for _ in 0..3 {
            let forms = memo
                .of_field(1, None, || {
                    made += 1;
                    Ok::<_, ()>(forms_of(&[("école", "ecole")]))
                })
                .expect("made");
            assert_eq!(forms.get("école").map(String::as_str), Some("ecole"));
        }
        assert_eq!(made, 1);
        memo.of_field(1, Some(&[Language::Fra]), || {
            made += 1;
            Ok::<_, ()>(FieldForms::new())
        })
        .expect("made");
        assert_eq!(made, 2, "other locales are another entry");
    }

    #[test]
    fn forms_past_the_byte_bound_are_answered_but_not_kept() {
        let memo = FacetForms::default();
        let big = "x".repeat(FACET_FORMS_BYTES_MAX);
        let mut made = 0;
        for _ in 0..2 {
            let forms = memo
                .of_field(2, None, || {
                    made += 1;
                    Ok::<_, ()>(forms_of(&[(big.as_str(), "y")]))
                })
                .expect("made");
            assert_eq!(forms.len(), 1);
        }
        assert_eq!(made, 2);
    }

    #[test]
    fn a_failed_make_keeps_nothing() {
        let memo = FacetForms::default();
        assert!(memo.of_field(3, None, || Err("read failed")).is_err());
        let forms = memo
            .of_field(3, None, || Ok::<_, ()>(forms_of(&[("a", "a")])))
            .expect("made");
        assert_eq!(forms.len(), 1);
    }
}
