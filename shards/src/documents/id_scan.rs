//! Reading a document's id straight from the text of an object already known to be valid JSON,
//! without parsing the rest: a scan of the top level that skips every other value.
//!
//! Why: planning a batch reads the id of every document of its update files, which were
//! validated when they were uploaded; a full parse (even simd-json's tape) only to find one
//! top-level key costs most of that read.
//!
//! Invariants: [`scan_top_level_id`] answers `Some` only in the simple cases, and then exactly
//! what [`super::simd_document::SimdParser::id`] answers on the same valid object: the last
//! top-level occurrence of the (undotted) key holds a string without escapes that is a valid
//! id, or an integer (no fraction, no exponent) that is not zero and fits `u64` (or `i64` when
//! negative). Any escaped top-level key or id, any other value, a missing key and a dotted
//! key answer `None`, and the caller goes the exact way. Text that is not valid JSON may get
//! any answer: callers pass only validated objects.

use super::document_id::is_valid_document_id;

/// What the scan found under the key.
enum Found<'text> {
    /// A string's bytes, without its quotes (no escape inside).
    Text(&'text [u8]),
    /// A number's bytes.
    Number(&'text [u8]),
    /// Anything else, or an escaped string: only the exact way can tell.
    Other,
}

/// The id under `primary_key` of the valid JSON object `text`, in the simple cases (see the
/// module's invariants); `None` otherwise.
pub fn scan_top_level_id(text: &[u8], primary_key: &str) -> Option<String> {
    if primary_key.contains('.') {
        return None;
    }
    let mut position = skip_whitespace(text, 0);
    if text.get(position) != Some(&b'{') {
        return None;
    }
    position = skip_whitespace(text, position + 1);
    let mut found = None;
    while text.get(position) == Some(&b'"') {
        let (key, escaped, after_key) = string_at(text, position)?;
        if escaped {
            return None;
        }
        position = skip_whitespace(text, after_key);
        if text.get(position) != Some(&b':') {
            return None;
        }
        position = skip_whitespace(text, position + 1);
        let (value, after_value) = value_at(text, position)?;
        if key == primary_key.as_bytes() {
            found = Some(value);
        }
        position = skip_whitespace(text, after_value);
        match text.get(position) {
            Some(b',') => position = skip_whitespace(text, position + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    match found? {
        Found::Text(bytes) => std::str::from_utf8(bytes)
            .ok()
            .filter(|id| is_valid_document_id(id))
            .map(str::to_owned),
        Found::Number(bytes) => integer_id(bytes),
        Found::Other => None,
    }
}

/// The id an integer's bytes give: its decimal form, when it is a non-zero `u64` (or `i64`).
fn integer_id(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.contains(['.', 'e', 'E']) {
        return None;
    }
    if text.starts_with('-') {
        let integer: i64 = text.parse().ok()?;
        (integer != 0).then(|| integer.to_string())
    } else {
        let integer: u64 = text.parse().ok()?;
        (integer != 0).then(|| integer.to_string())
    }
}

fn skip_whitespace(text: &[u8], mut position: usize) -> usize {
    while matches!(text.get(position), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        position += 1;
    }
    position
}

/// The string starting at `position` (its opening quote): its bytes between the quotes,
/// whether it holds an escape, and the position after its closing quote.
fn string_at(text: &[u8], position: usize) -> Option<(&[u8], bool, usize)> {
    let start = position + 1;
    let mut escaped = false;
    let mut cursor = start;
    loop {
        cursor += memchr::memchr2(b'"', b'\\', text.get(cursor..)?)?;
        if text[cursor] == b'"' {
            return Some((&text[start..cursor], escaped, cursor + 1));
        }
        escaped = true;
        cursor += 2;
    }
}

/// The value starting at `position` and the position after it.
fn value_at(text: &[u8], position: usize) -> Option<(Found<'_>, usize)> {
    match text.get(position)? {
        b'"' => {
            let (bytes, escaped, after) = string_at(text, position)?;
            let found = if escaped {
                Found::Other
            } else {
                Found::Text(bytes)
            };
            Some((found, after))
        }
        b'{' | b'[' => Some((Found::Other, after_nested(text, position)?)),
        b'-' | b'0'..=b'9' => {
            let length = text[position..]
                .iter()
                .take_while(|byte| matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                .count();
            Some((
                Found::Number(&text[position..position + length]),
                position + length,
            ))
        }
        _ => {
            // `true`, `false` or `null`.
            let length = text[position..]
                .iter()
                .take_while(|byte| byte.is_ascii_lowercase())
                .count();
            (length > 0).then_some((Found::Other, position + length))
        }
    }
}

/// The position after the object or array opening at `position`.
fn after_nested(text: &[u8], position: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut cursor = position;
    loop {
        match text.get(cursor)? {
            b'"' => {
                let (_, _, after) = string_at(text, cursor)?;
                cursor = after;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(cursor + 1);
                }
            }
            _ => {}
        }
        cursor += 1;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::documents::document_id::extract_document_id;
    use crate::documents::simd_document::SimdParser;
    use crate::test_random::Random;

    /// A random JSON value of bounded depth, with the awkward cases ids and skipping meet.
    fn random_value(random: &mut Random, depth: u32) -> Value {
        let strings = [
            "abc",
            "a-b_c",
            "",
            "a b",
            "é",
            "x\"y",
            "back\\slash",
            "{[",
            "9",
            "a\u{1}",
        ];
        match random.below(if depth == 0 { 6 } else { 8 }) {
            0 => json!(strings[random.below(strings.len() as u64) as usize]),
            1 => json!(random.below(5) as i64 - 2),
            2 => [
                json!(u64::MAX),
                json!(i64::MIN),
                json!(1.5),
                json!(-0.0),
                json!(1e3),
            ][random.below(5) as usize]
                .clone(),
            3 => json!(random.below(2) == 0),
            4 => Value::Null,
            5 => json!(random.next()),
            6 => Value::Array(
                (0..random.below(3))
                    .map(|_| random_value(random, depth - 1))
                    .collect(),
            ),
            _ => random_object(random, depth - 1),
        }
    }

    fn random_object(random: &mut Random, depth: u32) -> Value {
        let keys = ["id", "name", "i\"d", "idx", "nested"];
        let mut object = serde_json::Map::new();
        for _ in 0..random.below(5) {
            let key = keys[random.below(keys.len() as u64) as usize];
            object.insert(key.to_owned(), random_value(random, depth));
        }
        Value::Object(object)
    }

    /// `text` with duplicate `"id"` keys and whitespace added the way payloads may hold them.
    fn with_duplicate_and_spaces(random: &mut Random, text: &str) -> String {
        let mut text = text.to_owned();
        if text.len() > 2 && random.below(3) == 0 {
            let id = random_value(random, 0).to_string();
            text.insert_str(1, &format!("\"id\" : {id} ,\n "));
        }
        if random.below(2) == 0 {
            text = format!(" \t{text}\r\n");
        }
        text
    }

    #[test]
    fn the_scan_answers_what_the_tape_answers_whenever_it_answers() {
        let mut parser = SimdParser::new();
        let mut random = Random(0x1D5C_A11D_0C5E_7EA7);
        let mut answered = 0;
        for _ in 0..20_000 {
            let object = random_object(&mut random, 3);
            let text = with_duplicate_and_spaces(&mut random, &object.to_string());
            // Only valid objects reach the scan.
            if serde_json::from_str::<serde_json::Map<String, Value>>(&text).is_err() {
                continue;
            }
            let scanned = scan_top_level_id(text.as_bytes(), "id");
            if let Some(id) = &scanned {
                answered += 1;
                // What reading the id answered before the scan: the tape, else the document.
                let exact = parser.id(text.as_bytes(), "id").or_else(|| {
                    let document = parser.parse(text.as_bytes()).ok()?;
                    extract_document_id(&document, "id").ok()
                });
                assert_eq!(exact.as_ref(), Some(id), "{text}");
            }
        }
        assert!(answered > 1_000, "the scan answered {answered} times");
    }

    #[test]
    fn simple_ids_are_read_and_hard_ones_are_left_to_the_exact_way() {
        let cases: [(&str, Option<&str>); 12] = [
            (r#"{"id": 7, "a": {"id": 8}}"#, Some("7")),
            (r#"{"a": [1, {"b": "}"}], "id": "x-1"}"#, Some("x-1")),
            (r#"{"id": 1, "id": 2}"#, Some("2")),
            (r#"{"id": -3}"#, Some("-3")),
            (r#"{"id": 0}"#, None),
            (r#"{"id": 1.0}"#, None),
            (r#"{"id": "a b"}"#, None),
            (r#"{"id": "\u0061"}"#, None),
            (r#"{"i\u0064": 1}"#, None),
            (r#"{"id": null}"#, None),
            (r#"{"name": "id"}"#, None),
            (r#"{"id": 18446744073709551616}"#, None),
        ];
        for (text, expected) in cases {
            assert_eq!(
                scan_top_level_id(text.as_bytes(), "id").as_deref(),
                expected,
                "{text}"
            );
        }
        assert_eq!(scan_top_level_id(br#"{"a": {"b": 1}}"#, "a.b"), None);
    }
}
