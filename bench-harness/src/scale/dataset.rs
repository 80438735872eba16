//! The documents of the size ladder: the dataset's lines, then copy 1 of them, copy 2, and so
//! on, made one document at a time while the payloads are built.
//!
//! Invariants: document `p` of the sequence is line `p % N` of copy `p / N` (N lines); copy 0
//! is the line exactly as read; copy `k ≥ 1` has `id + k · ID_STRIDE` as its `id`, its
//! `summary` followed by ` edition{k}` when that is a string, and every other field (and the
//! field order) unchanged. Copies are made only of documents whose `id` is an integer below
//! `ID_STRIDE`, so no two documents of the sequence share an id; `check_ids` refuses a
//! dataset that breaks this before any server starts.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::Value;

/// The id distance between a document and its copy of the next round (above every id of the
/// PyPI dataset, whose ids are below 1,000,000).
pub const ID_STRIDE: u64 = 1_000_000;
/// The primary key of the documents.
pub const ID_FIELD: &str = "id";
/// The field a copy marks with its edition.
pub const SUMMARY_FIELD: &str = "summary";
/// What a copy appends to its summary, before the copy number.
pub const EDITION_PREFIX: &str = " edition";

/// The dataset's lines, copied `copies` times end to end.
#[derive(Debug, Clone, Copy)]
pub struct CopiedDataset<'lines> {
    lines: &'lines [String],
    copies: u64,
}

impl<'lines> CopiedDataset<'lines> {
    /// `copies` copies of `lines` (copy 0 included).
    pub fn new(lines: &'lines [String], copies: u64) -> CopiedDataset<'lines> {
        CopiedDataset { lines, copies }
    }

    /// Documents in the whole sequence.
    pub fn len(&self) -> u64 {
        (self.lines.len() as u64).saturating_mul(self.copies)
    }

    /// Whether the sequence holds no document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Document `position` of the sequence as one NDJSON line (without its newline).
    pub fn document(&self, position: u64) -> Result<Cow<'lines, str>, String> {
        let count = self.lines.len() as u64;
        if position >= self.len() {
            return Err(format!(
                "document {position} is past the {} of the sequence",
                self.len()
            ));
        }
        let line = usize::try_from(position % count)
            .ok()
            .and_then(|index| self.lines.get(index))
            .ok_or_else(|| format!("document {position} has no line"))?;
        match position / count {
            0 => Ok(Cow::Borrowed(line.as_str())),
            copy => copy_line(line, copy).map(Cow::Owned),
        }
    }

    /// Documents `range` of the sequence as one NDJSON payload, each followed by a newline.
    pub fn payload(&self, range: Range<u64>) -> Result<Vec<u8>, String> {
        let mut payload = Vec::new();
        for position in range {
            payload.extend_from_slice(self.document(position)?.as_bytes());
            payload.push(b'\n');
        }
        Ok(payload)
    }

    /// Fails, naming the first offending line, unless every line can be copied (checked only
    /// when there is more than one copy: copy 0 alone needs nothing of its ids).
    pub fn check_ids(&self) -> Result<(), String> {
        if self.copies <= 1 {
            return Ok(());
        }
        self.lines.iter().enumerate().try_for_each(|(index, line)| {
            parse_copyable(line)
                .map(drop)
                .map_err(|error| format!("dataset line {index}: {error}"))
        })
    }
}

/// The JSON object of `line` and its id, when the id is an integer below `ID_STRIDE`.
fn parse_copyable(line: &str) -> Result<(Value, u64), String> {
    let document: Value =
        serde_json::from_str(line).map_err(|error| format!("not JSON ({error})"))?;
    let id = document[ID_FIELD]
        .as_u64()
        .filter(|id| *id < ID_STRIDE)
        .ok_or_else(|| {
            format!("no integer `{ID_FIELD}` below {ID_STRIDE}: it cannot be copied under a new id")
        })?;
    Ok((document, id))
}

/// Copy `copy` (at least 1) of the document `line`.
pub fn copy_line(line: &str, copy: u64) -> Result<String, String> {
    let (mut document, id) = parse_copyable(line)?;
    document[ID_FIELD] = Value::from(id + copy.saturating_mul(ID_STRIDE));
    if let Some(Value::String(summary)) = document.get_mut(SUMMARY_FIELD) {
        summary.push_str(EDITION_PREFIX);
        summary.push_str(&copy.to_string());
    }
    Ok(document.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<String> {
        vec![
            r#"{"id":5,"name":"a","summary":"first","year":2020}"#.to_string(),
            r#"{"id":7,"name":"b","summary":null}"#.to_string(),
        ]
    }

    #[test]
    fn a_copy_moves_the_id_marks_a_string_summary_and_keeps_the_rest_in_order() {
        let copied = copy_line(&lines()[0], 2).expect("the line can be copied");
        assert_eq!(
            copied,
            r#"{"id":2000005,"name":"a","summary":"first edition2","year":2020}"#
        );
        let null_summary = copy_line(&lines()[1], 1).expect("the line can be copied");
        assert_eq!(null_summary, r#"{"id":1000007,"name":"b","summary":null}"#);
        let no_summary = copy_line(r#"{"id":1,"name":"c"}"#, 3).expect("copyable");
        assert_eq!(no_summary, r#"{"id":3000001,"name":"c"}"#);
    }

    #[test]
    fn the_sequence_is_the_lines_then_their_copies() {
        let lines = lines();
        let dataset = CopiedDataset::new(&lines, 3);
        assert_eq!(dataset.len(), 6);
        assert_eq!(dataset.document(1).expect("in range"), lines[1].as_str());
        assert!(matches!(dataset.document(0), Ok(Cow::Borrowed(_))));
        let fifth = dataset.document(5).expect("in range");
        assert!(fifth.starts_with(r#"{"id":2000007,"#), "{fifth}");
        assert!(dataset.document(6).is_err());
        let payload = dataset.payload(1..3).expect("in range");
        let text = String::from_utf8(payload).expect("the payload is UTF-8");
        let expected = format!(
            "{}\n{}\n",
            lines[1], r#"{"id":1000005,"name":"a","summary":"first edition1","year":2020}"#
        );
        assert_eq!(text, expected);
        assert!(CopiedDataset::new(&[], 3).is_empty());
    }

    #[test]
    fn ids_that_would_collide_are_refused_when_copies_are_made() {
        let large = vec![r#"{"id":1000000}"#.to_string()];
        assert!(copy_line(&large[0], 1).is_err());
        assert!(CopiedDataset::new(&large, 1).check_ids().is_ok());
        let error = CopiedDataset::new(&large, 2)
            .check_ids()
            .expect_err("the id is too large");
        assert!(error.contains("line 0"), "{error}");
        let text_id = vec![r#"{"id":"x"}"#.to_string()];
        assert!(CopiedDataset::new(&text_id, 2).check_ids().is_err());
        assert!(CopiedDataset::new(&lines(), 2).check_ids().is_ok());
    }
}
