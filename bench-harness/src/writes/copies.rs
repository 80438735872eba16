//! New documents for a writer that must not run out: copies of the dataset's documents under
//! new ids. The unbounded writer sends them once the dataset's own documents after the base
//! are spent, so that a server that indexes fast still writes through the whole phase.
//!
//! Invariants: copy round `r` (from 1) of a document whose integer `id` is `i` has id
//! `i + r · COPY_ID_OFFSET` and every other field unchanged, so no copy has the id of a
//! dataset document or of another copy (every dataset id must be a non-negative integer
//! below `COPY_ID_OFFSET`, or the copies are refused); copies are made before any server
//! starts, never while one is measured.

use serde_json::Value;

/// The id distance between a document and its copy of the next round (above every id of the
/// PyPI dataset, whose ids are below 1,000,000).
pub const COPY_ID_OFFSET: u64 = 100_000_000;
/// The primary key of the copied documents.
const ID_FIELD: &str = "id";

/// `rounds` copies of every document of `lines`, round after round, each under a new id.
pub fn copies_with_new_ids(lines: &[String], rounds: u64) -> Result<Vec<String>, String> {
    let mut copies = Vec::with_capacity(lines.len().saturating_mul(rounds as usize));
    for round in 1..=rounds {
        for (position, line) in lines.iter().enumerate() {
            let mut document: Value = serde_json::from_str(line)
                .map_err(|error| format!("document {position} is not JSON: {error}"))?;
            let id = document[ID_FIELD]
                .as_u64()
                .filter(|id| *id < COPY_ID_OFFSET)
                .ok_or_else(|| {
                    format!(
                        "document {position} has no integer id below {COPY_ID_OFFSET}: cannot copy it under a new id"
                    )
                })?;
            document[ID_FIELD] = Value::from(id + round * COPY_ID_OFFSET);
            copies.push(document.to_string());
        }
    }
    Ok(copies)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_round_moves_the_ids_and_keeps_the_rest() {
        let lines = vec![
            r#"{"id":5,"name":"a"}"#.to_string(),
            r#"{"id":7,"name":"b"}"#.to_string(),
        ];
        let copies = copies_with_new_ids(&lines, 2).unwrap();
        let ids: Vec<u64> = copies
            .iter()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["id"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ids, [100_000_005, 100_000_007, 200_000_005, 200_000_007]);
        assert!(copies[1].contains(r#""name":"b""#), "{}", copies[1]);
        assert!(copies_with_new_ids(&lines, 0).unwrap().is_empty());
        let string_id = vec![r#"{"id":"x"}"#.to_string()];
        assert!(copies_with_new_ids(&string_id, 1).is_err());
    }
}
