//! Payload parsing: JSON, NDJSON, CSV documents and Meilisearch v1.41's exact errors, plus a real
//! slice of the PyPI dataset.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};
use shards::documents::Document;
use shards::documents::document_id::extract_document_id;
use shards::documents::payload::{
    PayloadFile, PayloadFormat, count_documents, csv_delimiter_from_parameter, documents,
};

const CSV: PayloadFormat = PayloadFormat::Csv { delimiter: b',' };

fn parse(payload: &str, format: PayloadFormat) -> Vec<Value> {
    documents(payload.as_bytes(), format)
        .expect("documents succeeds")
        .map(|document| Value::Object(document.expect("`document` holds a value")))
        .collect()
}

/// The (code, message) of the first error reading the payload.
fn failure(payload: &str, format: PayloadFormat) -> (&'static str, String) {
    let error = match documents(payload.as_bytes(), format) {
        Err(error) => error,
        Ok(mut documents) => documents
            .find_map(Result::err)
            .expect("the payload must fail"),
    };
    (error.code(), error.to_string())
}

#[test]
fn json_array_yields_each_object_in_order_with_key_order_kept() {
    let documents = parse(
        r#" [ {"z": 1, "a": {"y": 2, "b": 3}}, {"id": "x"} ] "#,
        PayloadFormat::Json,
    );
    assert_eq!(
        documents,
        vec![json!({"z": 1, "a": {"y": 2, "b": 3}}), json!({"id": "x"})]
    );
    let keys: Vec<&String> = documents[0]
        .as_object()
        .expect("as_object finds a value")
        .keys()
        .collect();
    assert_eq!(keys, ["z", "a"]);
}

#[test]
fn json_single_object_counts_one_and_empty_array_counts_zero() {
    assert_eq!(
        count_documents(br#"{"id": 1}"#, PayloadFormat::Json).expect("count_documents succeeds"),
        1
    );
    assert_eq!(
        count_documents(b"[]", PayloadFormat::Json).expect("count_documents succeeds"),
        0
    );
    assert_eq!(
        count_documents(b" [ ] ", PayloadFormat::Json).expect("count_documents succeeds"),
        0
    );
}

#[test]
fn json_bytes_after_the_closing_bracket_are_ignored_like_meilisearch() {
    assert_eq!(
        count_documents(br#"[{"id": 1}] trailing"#, PayloadFormat::Json)
            .expect("count_documents succeeds"),
        1
    );
}

#[test]
fn json_syntax_error_reports_position_in_whole_payload() {
    let (code, message) = failure(r#"[{"id": 1}, {id: 2}]"#, PayloadFormat::Json);
    assert_eq!(code, "malformed_payload");
    assert_eq!(
        message,
        "The `json` payload provided is malformed. `Couldn't serialize document value: key must be a string at line 1 column 14`."
    );
}

#[test]
fn json_scalar_is_neither_an_object_nor_a_list() {
    let long = "0123456789".repeat(10);
    for payload in [
        format!("\"{long}\""),
        format!("\"{long}m\""),
        "12".to_string(),
        "null".to_string(),
    ] {
        let (code, message) = failure(&payload, PayloadFormat::Json);
        assert_eq!(code, "malformed_payload");
        assert_eq!(
            message,
            "The `json` payload provided is malformed. `Couldn't serialize document value: data are neither an object nor a list of objects`."
        );
    }
}

#[test]
fn json_single_object_syntax_errors_keep_serde_wording() {
    let (_, message) = failure(r#"{"id": 1"#, PayloadFormat::Json);
    assert_eq!(
        message,
        "The `json` payload provided is malformed. `Couldn't serialize document value: EOF while parsing an object at line 1 column 8`."
    );
    let (_, message) = failure(r#"{"id": 1} x"#, PayloadFormat::Json);
    assert_eq!(
        message,
        "The `json` payload provided is malformed. `Couldn't serialize document value: trailing characters at line 1 column 11`."
    );
    let (_, message) = failure("   ", PayloadFormat::Json);
    assert_eq!(
        message,
        "The `json` payload provided is malformed. `Couldn't serialize document value: EOF while parsing a value at line 1 column 3`."
    );
}

#[test]
fn json_array_errors_trailing_comma_and_unclosed() {
    let (_, message) = failure(r#"[{"id": 1},]"#, PayloadFormat::Json);
    assert_eq!(
        message,
        "The `json` payload provided is malformed. `Couldn't serialize document value: trailing comma at line 1 column 12`."
    );
    let (_, message) = failure("[{\"id\": 1}\n", PayloadFormat::Json);
    assert_eq!(
        message,
        "The `json` payload provided is malformed. `Couldn't serialize document value: EOF while parsing a list at line 2 column 0`."
    );
    let (_, message) = failure(r#"[{"id": 1} {"id": 2}]"#, PayloadFormat::Json);
    assert_eq!(
        message,
        "The `json` payload provided is malformed. `Couldn't serialize document value: expected `,` or `]` at line 1 column 12`."
    );
}

#[test]
fn json_array_element_that_is_not_an_object_is_an_internal_error() {
    let (code, message) = failure(r#"[{"id": 1}, 2]"#, PayloadFormat::Json);
    assert_eq!(code, "internal");
    assert_eq!(
        message,
        "invalid type: integer `2`, expected a map at line 1 column 1"
    );
}

#[test]
fn documents_before_an_error_are_yielded_then_the_error_then_nothing() {
    let mut iterator = documents(br#"[{"id": 1}, {"id": 2}, {id}]"#, PayloadFormat::Json)
        .expect("documents succeeds");
    assert!(iterator.next().expect("next finds a value").is_ok());
    assert!(iterator.next().expect("next finds a value").is_ok());
    assert!(iterator.next().expect("next finds a value").is_err());
    assert!(iterator.next().is_none());
}

#[test]
fn empty_payload_is_missing_payload_for_each_format() {
    for (format, message) in [
        (PayloadFormat::Json, "A json payload is missing."),
        (PayloadFormat::Ndjson, "A ndjson payload is missing."),
        (CSV, "A csv payload is missing."),
    ] {
        let (code, text) = failure("", format);
        assert_eq!((code, text.as_str()), ("missing_payload", message));
    }
}

#[test]
fn ndjson_yields_whitespace_separated_objects() {
    let documents = parse(
        "{\"id\": 1}\n\n{\"id\": 2} {\"id\": 3}\n",
        PayloadFormat::Ndjson,
    );
    assert_eq!(
        documents,
        vec![json!({"id": 1}), json!({"id": 2}), json!({"id": 3})]
    );
    assert_eq!(
        count_documents(b"\n \n", PayloadFormat::Ndjson).expect("count_documents succeeds"),
        0
    );
}

#[test]
fn ndjson_syntax_error_reports_line_and_column_of_whole_payload() {
    let (code, message) = failure("{\"id\": 1}\n{id: 2}", PayloadFormat::Ndjson);
    assert_eq!(code, "malformed_payload");
    assert_eq!(
        message,
        "The `ndjson` payload provided is malformed. `Couldn't serialize document value: key must be a string at line 2 column 2`."
    );
}

#[test]
fn ndjson_value_that_is_not_an_object_is_an_internal_error() {
    let (code, message) = failure("{\"id\": 1}\n[1]", PayloadFormat::Ndjson);
    assert_eq!(code, "internal");
    assert_eq!(
        message,
        "invalid type: sequence, expected a map at line 1 column 0"
    );
}

#[test]
fn ndjson_syntax_error_inside_a_non_object_is_malformed_payload() {
    let (code, message) = failure("{\"id\": 1}\n[1, }", PayloadFormat::Ndjson);
    assert_eq!(code, "malformed_payload");
    assert_eq!(
        message,
        "The `ndjson` payload provided is malformed. `Couldn't serialize document value: expected value at line 2 column 5`."
    );
}

#[test]
fn csv_untyped_columns_are_strings_and_empty_cells_null() {
    let documents = parse("#id,name,race\n0,jean,bernese mountain\n1,, \n", CSV);
    assert_eq!(
        documents,
        vec![
            json!({"#id": "0", "name": "jean", "race": "bernese mountain"}),
            json!({"#id": "1", "name": null, "race": " "}),
        ]
    );
}

#[test]
fn csv_typed_headers_convert_numbers_and_booleans() {
    let payload = "#id:number,name:string,race:string,age:number,cute:boolean\n0,jean,bernese mountain,2.5,true\n1,,,,\n2,lilou,pug,-2,false";
    assert_eq!(
        parse(payload, CSV),
        vec![
            json!({"#id": 0, "name": "jean", "race": "bernese mountain", "age": 2.5, "cute": true}),
            json!({"#id": 1, "name": null, "race": null, "age": null, "cute": null}),
            json!({"#id": 2, "name": "lilou", "race": "pug", "age": -2, "cute": false}),
        ]
    );
}

#[test]
fn csv_number_cells_are_trimmed_and_non_finite_floats_become_null() {
    let documents = parse("n:number,b:boolean\n 12 , true \n1e999,\n", CSV);
    assert_eq!(
        documents,
        vec![json!({"n": 12, "b": true}), json!({"n": null, "b": null})]
    );
}

#[test]
fn csv_unknown_type_suffix_keeps_the_whole_header_and_last_colon_decides() {
    let documents = parse("a:date,b:c:number,c.d\nx,1,y\n", CSV);
    assert_eq!(
        documents,
        vec![json!({"a:date": "x", "b:c": 1, "c.d": "y"})]
    );
}

#[test]
fn csv_quoting_and_custom_delimiter() {
    let payload = "id|text\n1|\"a|b \"\"quoted\"\"\nnext line\"\n";
    let documents = parse(payload, PayloadFormat::Csv { delimiter: b'|' });
    assert_eq!(
        documents,
        vec![json!({"id": "1", "text": "a|b \"quoted\"\nnext line"})]
    );
    let documents = parse("#id;name\n0;jean\n", PayloadFormat::Csv { delimiter: b';' });
    assert_eq!(documents, vec![json!({"#id": "0", "name": "jean"})]);
}

#[test]
fn csv_header_only_has_zero_documents() {
    assert_eq!(
        count_documents(b"id,name\n", CSV).expect("count_documents succeeds"),
        0
    );
}

#[test]
fn csv_record_length_mismatch_is_malformed_with_csv_crate_message() {
    let (code, message) = failure("id, content\n1234, hello, world\n12, hello world", CSV);
    assert_eq!(code, "malformed_payload");
    assert_eq!(
        message,
        "The `csv` payload provided is malformed: `CSV error: record 1 (line: 2, byte: 12): found record with 3 fields, but the previous record has 2 fields`."
    );
}

#[test]
fn csv_bad_typed_cells_report_record_number_and_reason() {
    let (code, message) = failure("#id:number,a:boolean,b:number\n0,doggo,1", CSV);
    assert_eq!(code, "malformed_payload");
    assert_eq!(
        message,
        "The `csv` payload provided is malformed: `Error parsing boolean \"doggo\" at line 1: provided string was not `true` or `false``."
    );
    let (_, message) = failure(
        "#id:number,a:boolean,b:number\n0,true,1\n1,false, doggo",
        CSV,
    );
    assert_eq!(
        message,
        "The `csv` payload provided is malformed: `Error parsing number \" doggo\" at line 2: invalid float literal`."
    );
}

#[test]
fn csv_delimiter_parameter_must_be_one_ascii_character() {
    assert_eq!(
        csv_delimiter_from_parameter(";").expect("csv_delimiter_from_parameter succeeds"),
        b';'
    );
    let cases = [
        (
            "",
            "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found an empty string",
        ),
        (
            "doggo",
            "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found the following string of 5 characters: `doggo`",
        ),
        (
            "🍰",
            "csv delimiter must be an ascii character. Found: `🍰`",
        ),
    ];
    for (parameter, expected) in cases {
        let error = csv_delimiter_from_parameter(parameter).unwrap_err();
        assert_eq!(error.code(), "invalid_document_csv_delimiter");
        assert_eq!(error.to_string(), expected);
    }
}

#[test]
fn payload_file_reads_from_the_mapped_update_file() {
    let mut file = tempfile_in_target();
    file.write_all(b"{\"id\": 1}\n{\"id\": 2}\n")
        .expect("write_all succeeds");
    let payload = PayloadFile::open(&file).expect("open succeeds");
    assert_eq!(
        payload
            .documents(PayloadFormat::Ndjson)
            .expect("documents succeeds")
            .count(),
        2
    );
    let empty = tempfile_in_target();
    let payload = PayloadFile::open(&empty).expect("open succeeds");
    let Err(error) = payload.documents(PayloadFormat::Json) else {
        panic!("an empty payload is refused");
    };
    assert_eq!(error.code(), "missing_payload");
}

/// A fresh, already unlinked file in the system temporary directory.
fn tempfile_in_target() -> std::fs::File {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "documents-payload-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .expect("open succeeds");
    std::fs::remove_file(&path).expect("remove_file succeeds");
    file
}

/// How many lines of the PyPI dataset the real-data test reads.
const DATASET_LINES: usize = 2000;

#[test]
fn pypi_dataset_slice_parses_with_one_valid_id_per_document() {
    // `shared/` sits beside the repository (CI, main checkout) or beside the worktrees' parent.
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = ["../../shared", "../../../shared"]
        .iter()
        .map(|relative| {
            manifest
                .join(relative)
                .join("datasets/pypi-packages.ndjson.zst")
        })
        .find(|candidate| candidate.exists())
        .expect("shared/datasets/pypi-packages.ndjson.zst beside the repository");
    let decoder = zstd::Decoder::new(std::fs::File::open(&path).expect("open succeeds"))
        .expect("new succeeds");
    let lines: Vec<String> = BufReader::new(decoder)
        .lines()
        .take(DATASET_LINES)
        .map(Result::unwrap)
        .collect();
    let payload = lines.join("\n");
    let documents: Vec<Document> = documents(payload.as_bytes(), PayloadFormat::Ndjson)
        .expect("documents succeeds")
        .map(Result::unwrap)
        .collect();
    assert_eq!(documents.len(), DATASET_LINES);
    let mut ids = std::collections::BTreeSet::new();
    for (document, line) in documents.iter().zip(&lines) {
        let expected: Value = serde_json::from_str(line).expect("from_str succeeds");
        assert_eq!(&Value::Object(document.clone()), &expected);
        let primary_key =
            shards::documents::primary_key::resolve_primary_key(None, None, Some(document))
                .expect("resolve_primary_key succeeds");
        let id =
            extract_document_id(document, &primary_key.name).expect("extract_document_id succeeds");
        ids.insert(id);
    }
    assert_eq!(ids.len(), DATASET_LINES, "ids are unique in the slice");
    // The same slice as one JSON array parses to the same documents.
    let array = format!("[{}]", lines.join(","));
    assert_eq!(
        count_documents(array.as_bytes(), PayloadFormat::Json).expect("count_documents succeeds"),
        DATASET_LINES as u64
    );
}

/// Each document's span, read back from the payload, is exactly that document's text: for a
/// JSON array, a single JSON object and NDJSON, with documents crossing the reader's chunks; a
/// CSV record has none.
#[test]
fn last_span_names_the_bytes_of_the_document_just_read() {
    use shards::documents::chunked_input::PAYLOAD_READ_CHUNK_BYTES;
    use shards::documents::payload::documents_from;
    // Documents of about 3 KiB: several fall across each chunk boundary.
    let texts: Vec<String> = (0..(3 * PAYLOAD_READ_CHUNK_BYTES / 3_000))
        .map(|number| {
            format!(
                r#"{{"id":{number},"text":"{}","nested":{{"a":[1,"}}"]}}}}"#,
                "x".repeat(3_000 + number % 7)
            )
        })
        .collect();
    let array = format!(" [ {} ] ", texts.join(" ,\n"));
    let ndjson = format!("\n{}\n", texts.join("\n  \n"));
    for (payload, format) in [
        (array.as_str(), PayloadFormat::Json),
        (ndjson.as_str(), PayloadFormat::Ndjson),
    ] {
        let mut read = documents_from(std::io::Cursor::new(payload.as_bytes()), format)
            .expect("the payload opens");
        assert_eq!(read.last_span(), None, "nothing read yet");
        let mut count = 0;
        while let Some(id) = read.next_id("id") {
            let id = id.expect("every document has an id");
            let span = read.last_span().expect("a JSON document has a span");
            let start = usize::try_from(span.offset).expect("offsets fit usize");
            let end = start + usize::try_from(span.length).expect("lengths fit usize");
            assert_eq!(
                &payload[start..end],
                texts[count],
                "{format} document {count}"
            );
            assert_eq!(id, count.to_string());
            count += 1;
        }
        assert_eq!(count, texts.len(), "{format}: every document read");
    }
    let single = r#"  {"id":"only","a":{"b":"{"}}  "#;
    let mut read = documents(single.as_bytes(), PayloadFormat::Json).expect("the payload opens");
    read.next()
        .expect("one document")
        .expect("the document parses");
    let span = read.last_span().expect("a JSON object has a span");
    assert_eq!(
        &single[span.offset as usize..(span.offset + span.length) as usize],
        r#"{"id":"only","a":{"b":"{"}}"#
    );
    let mut csv = documents(b"id,name\n1,a\n".as_slice(), CSV).expect("the payload opens");
    csv.next().expect("one record").expect("the record parses");
    assert_eq!(csv.last_span(), None, "a CSV record is not one JSON object");
}
