//! The optional fields of `template` and `input` that a `kind` needs or refuses. Each kind
//! checks its fields one by one in Meilisearch's order, so the first field out of place is
//! the error.
//!
//! Invariant: a violation carries the field's name as the error message gives it
//! (Meilisearch writes `index_uid` in most messages and `indexUid` in one).

/// A field out of place, by its name in the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    Missing(&'static str),
    Disallowed(&'static str),
}

/// The value of a field the kind needs.
pub fn require<'value, Field>(
    value: &'value Option<Field>,
    name: &'static str,
) -> Result<&'value Field, Violation> {
    value.as_ref().ok_or(Violation::Missing(name))
}

/// Checks that a field the kind refuses is absent.
pub fn refuse<Field>(value: &Option<Field>, name: &'static str) -> Result<(), Violation> {
    match value {
        Some(_) => Err(Violation::Disallowed(name)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_needed_field_must_be_there_and_a_refused_one_absent() {
        assert_eq!(require(&Some(3), "three"), Ok(&3));
        assert_eq!(
            require::<u8>(&None, "three"),
            Err(Violation::Missing("three"))
        );
        assert_eq!(refuse::<u8>(&None, "four"), Ok(()));
        assert_eq!(refuse(&Some(4), "four"), Err(Violation::Disallowed("four")));
    }
}
