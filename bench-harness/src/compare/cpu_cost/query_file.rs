//! The query mix as `search_compare` writes it (`queries.ndjson`): one JSON object a line,
//! `{"kind": "...", "body": {...}}`, the body being that of `POST /indexes/{uid}/search`.
//!
//! Invariants: blank lines are skipped; every other line must be an object with a string
//! `kind` and an object `body`, or the whole file is refused with the line's number; the
//! queries keep the file's order; a file without any query is refused.

use std::path::Path;

use serde_json::Value;

/// One query of the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct MixQuery {
    /// Its kind's label (`one_word`, `typo`, ...).
    pub kind: String,
    /// The search request body.
    pub body: Value,
}

/// Parses one line (`line_number` counts from 1, for the error).
fn parse_line(line: &str, line_number: usize) -> Result<MixQuery, String> {
    let value: Value = serde_json::from_str(line)
        .map_err(|error| format!("line {line_number}: not JSON ({error})"))?;
    let kind = value["kind"]
        .as_str()
        .ok_or_else(|| format!("line {line_number}: no string `kind`"))?;
    let body = &value["body"];
    if !body.is_object() {
        return Err(format!("line {line_number}: no object `body`"));
    }
    Ok(MixQuery {
        kind: kind.to_string(),
        body: body.clone(),
    })
}

/// The queries of an NDJSON text.
pub fn parse_queries(text: &str) -> Result<Vec<MixQuery>, String> {
    let queries = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| parse_line(line, index + 1))
        .collect::<Result<Vec<MixQuery>, String>>()?;
    if queries.is_empty() {
        return Err("no query".to_string());
    }
    Ok(queries)
}

/// The queries of the file at `path`.
pub fn read_queries(path: &Path) -> Result<Vec<MixQuery>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    parse_queries(&text).map_err(|error| format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lines_become_queries_in_order_and_blank_lines_are_skipped() {
        let text = "{\"kind\":\"one_word\",\"body\":{\"q\":\"case\",\"limit\":10}}\n\n\
                    {\"kind\":\"typo\",\"body\":{\"q\":\"unpprot\"}}\n";
        let queries = parse_queries(text).expect("a valid mix parses");
        assert_eq!(
            queries,
            vec![
                MixQuery {
                    kind: "one_word".to_string(),
                    body: json!({"q": "case", "limit": 10}),
                },
                MixQuery {
                    kind: "typo".to_string(),
                    body: json!({"q": "unpprot"}),
                },
            ]
        );
    }

    #[test]
    fn malformed_lines_and_empty_files_are_refused_with_the_line_number() {
        let missing_body = "{\"kind\":\"a\",\"body\":{}}\n{\"kind\":\"b\"}\n";
        assert_eq!(
            parse_queries(missing_body),
            Err("line 2: no object `body`".to_string())
        );
        assert_eq!(
            parse_queries("{\"kind\":3,\"body\":{}}"),
            Err("line 1: no string `kind`".to_string())
        );
        assert!(
            parse_queries("\n{oops")
                .err()
                .is_some_and(|error| error.starts_with("line 2: not JSON"))
        );
        assert_eq!(parse_queries("\n \n"), Err("no query".to_string()));
    }
}
