//! Documents a shard reads from a batch's update files itself.
//!
//! Why: planning already walks every document of a batch and records where each lies
//! ([`DocumentSpan`]). When a document's planned outcome is to write exactly that one
//! document, the coordinator sends the shard only its id and span ([`ReadDocument`]), and the
//! shard's own core reads the text. The coordinator then neither reads the update files again
//! nor copies their text: on a busy machine its core is shared with a shard, and the other
//! shards waited on it for their documents.
//!
//! Invariants: a span names one JSON object of an update file that was validated when it was
//! uploaded, and planning read that object's id from it, so the text read here is the
//! document the payload reader would have handed on; the update files stay unchanged while
//! their batch runs (they are deleted only once the batch's tasks are done); one read covers
//! at most [`READ_RUN_BYTES_MAX`] bytes, unless a single document is larger.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use shards::documents::operation::{Outcome, PlannedDocument};
use shards::documents::payload::DocumentSpan;
use shards::documents::payload_document::PayloadDocument;

use crate::errors::ResponseError;

/// Bytes one read of several neighbouring documents covers at most.
pub const READ_RUN_BYTES_MAX: u64 = 1 << 20;

/// A document whose batch writes exactly what one update file holds at `span`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadDocument {
    pub external_id: String,
    /// Which of the batch's update files holds it.
    pub payload: u32,
    pub span: DocumentSpan,
    /// Whether it updates the stored document (merged onto it) rather than replacing it.
    pub onto_stored: bool,
}

/// Reads `documents` from `files` (indexed by [`ReadDocument::payload`]) into planned
/// documents holding their text, in the order given. Neighbouring documents of one file are
/// read together.
pub fn read_documents(
    files: &[PathBuf],
    documents: Vec<ReadDocument>,
) -> Result<Vec<(String, PlannedDocument<PayloadDocument>)>, ResponseError> {
    let mut opened: Vec<Option<File>> = files.iter().map(|_| None).collect();
    let mut buffer = Vec::new();
    let mut planned = Vec::with_capacity(documents.len());
    let mut start = 0;
    while start < documents.len() {
        let end = run_end(&documents, start);
        let first = documents[start].span.offset;
        let last = &documents[end - 1].span;
        let file = open(files, &mut opened, documents[start].payload)?;
        read_range(file, first, last.offset + last.length - first, &mut buffer)?;
        for document in &documents[start..end] {
            let from = usize::try_from(document.span.offset - first).map_err(too_large)?;
            let length = usize::try_from(document.span.length).map_err(too_large)?;
            planned.push((
                document.external_id.clone(),
                text_outcome(document, &buffer[from..from + length]),
            ));
        }
        start = end;
    }
    Ok(planned)
}

/// The end of the run of documents starting at `start` that one read covers: same file,
/// ascending and not overlapping, within [`READ_RUN_BYTES_MAX`] of the first.
fn run_end(documents: &[ReadDocument], start: usize) -> usize {
    let first = &documents[start];
    let mut end = start + 1;
    let mut covered = first.span.offset + first.span.length;
    while let Some(next) = documents.get(end) {
        let next_end = next.span.offset + next.span.length;
        let joins = next.payload == first.payload
            && next.span.offset >= covered
            && next_end - first.span.offset <= READ_RUN_BYTES_MAX;
        if !joins {
            break;
        }
        covered = next_end;
        end += 1;
    }
    end
}

/// The planned outcome writing the document whose text is `text`.
fn text_outcome(document: &ReadDocument, text: &[u8]) -> PlannedDocument<PayloadDocument> {
    PlannedDocument::Unconditional(Outcome::Written {
        onto_stored: document.onto_stored,
        document: PayloadDocument::Text(text.into()),
    })
}

/// Update file `payload`, opened at its first use.
fn open<'f>(
    files: &[PathBuf],
    opened: &'f mut [Option<File>],
    payload: u32,
) -> Result<&'f File, ResponseError> {
    let index = payload as usize;
    let (Some(path), Some(slot)) = (files.get(index), opened.get_mut(index)) else {
        return Err(ResponseError::internal(format!(
            "a document names update file {payload} of a batch of {}",
            files.len()
        )));
    };
    if slot.is_none() {
        *slot = Some(File::open(path).map_err(|error| crate::errors::io_error(&error))?);
    }
    slot.as_ref()
        .ok_or_else(|| ResponseError::internal("an update file was opened and lost"))
}

/// Fills `buffer` with the `length` bytes of `file` at `offset`.
fn read_range(
    file: &File,
    offset: u64,
    length: u64,
    buffer: &mut Vec<u8>,
) -> Result<(), ResponseError> {
    buffer.resize(usize::try_from(length).map_err(too_large)?, 0);
    file.read_exact_at(buffer, offset)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::UnexpectedEof => ResponseError::internal(
                "an update file is shorter than the documents its batch planned",
            ),
            _ => crate::errors::io_error(&error),
        })
}

fn too_large(_: std::num::TryFromIntError) -> ResponseError {
    ResponseError::internal("a document span does not fit this machine's memory")
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn span(offset: u64, length: u64) -> DocumentSpan {
        DocumentSpan { offset, length }
    }

    fn document(id: &str, payload: u32, span: DocumentSpan) -> ReadDocument {
        ReadDocument {
            external_id: id.to_owned(),
            payload,
            span,
            onto_stored: id.ends_with('u'),
        }
    }

    fn text_of(planned: &PlannedDocument<PayloadDocument>) -> (bool, String) {
        match planned {
            PlannedDocument::Unconditional(Outcome::Written {
                onto_stored,
                document: PayloadDocument::Text(text),
            }) => (
                *onto_stored,
                String::from_utf8(text.to_vec()).expect("utf-8"),
            ),
            other => panic!("a read document is written text, got {other:?}"),
        }
    }

    #[test]
    fn runs_join_ascending_neighbours_of_one_file_within_the_bound() {
        let documents = [
            document("a", 0, span(0, 10)),
            document("b", 0, span(20, 10)),
            document("c", 1, span(30, 10)),
            document("d", 1, span(5, 10)),
            document("e", 1, span(15, READ_RUN_BYTES_MAX)),
            document("f", 1, span(15 + READ_RUN_BYTES_MAX, 1)),
        ];
        assert_eq!(run_end(&documents, 0), 2, "another file ends the run");
        assert_eq!(
            run_end(&documents, 2),
            3,
            "a document before the last ends it"
        );
        assert_eq!(run_end(&documents, 3), 4, "a run stays within the bound");
        assert_eq!(run_end(&documents, 4), 5, "a larger document is read alone");
        assert_eq!(run_end(&documents, 5), 6);
    }

    #[test]
    fn every_document_gets_exactly_its_own_text_in_the_order_given() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let mut files = Vec::new();
        for (name, content) in [
            ("one", "[{\"id\":1},{\"id\":2},  {\"id\":3}]"),
            ("two", "{\"id\":\"x\"}\n{\"id\":\"y\"}"),
        ] {
            let path = directory.path().join(name);
            File::create(&path)
                .and_then(|mut file| file.write_all(content.as_bytes()))
                .expect("the file is written");
            files.push(path);
        }
        let documents = vec![
            document("2u", 0, span(10, 8)),
            document("x", 1, span(0, 10)),
            document("1", 0, span(1, 8)),
            document("3", 0, span(21, 8)),
            document("y", 1, span(11, 10)),
        ];
        let read = read_documents(&files, documents).expect("the spans are read");
        let got: Vec<(String, bool, String)> = read
            .iter()
            .map(|(id, planned)| {
                let (onto_stored, text) = text_of(planned);
                (id.clone(), onto_stored, text)
            })
            .collect();
        let expected = [
            ("2u", true, "{\"id\":2}"),
            ("x", false, "{\"id\":\"x\"}"),
            ("1", false, "{\"id\":1}"),
            ("3", false, "{\"id\":3}"),
            ("y", false, "{\"id\":\"y\"}"),
        ];
        let expected: Vec<(String, bool, String)> = expected
            .iter()
            .map(|(id, onto, text)| ((*id).to_owned(), *onto, (*text).to_owned()))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn a_span_past_the_file_or_an_unknown_file_is_an_internal_error() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let path = directory.path().join("short");
        File::create(&path)
            .and_then(|mut file| file.write_all(b"{\"id\":1}"))
            .expect("the file is written");
        let files = vec![path];
        let past = read_documents(&files, vec![document("1", 0, span(4, 8))])
            .expect_err("the span ends past the file");
        assert!(past.message.contains("shorter"), "{}", past.message);
        let unknown = read_documents(&files, vec![document("1", 1, span(0, 8))])
            .expect_err("there is no second file");
        assert!(
            unknown.message.contains("update file 1"),
            "{}",
            unknown.message
        );
    }
}
