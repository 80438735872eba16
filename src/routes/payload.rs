//! The payload of a document addition, from the request to a durable update file: a streamed
//! body (the usual case, see [`crate::tasks::update_file_sink`]) is validated by reading its
//! upload back in bounded chunks, then persisted under its format's name; a body the HTTP
//! layer buffered (an empty one) is validated and written as before.
//!
//! Invariants: the update file is synced (file and directory) before its name is returned;
//! on every error the upload is removed (the spooled body is dropped, not kept); reading
//! failures answer the document routes' errors (`payload_too_large` with Meilisearch's
//! wording for document payloads, `missing_payload`, `malformed_payload`, and an I/O error's
//! own code, `no_space_left_on_device` for a full disk).

use std::fs::File;

use shards::documents::DocumentsError;
use shards::documents::payload::{PayloadFormat, count_documents, count_documents_from};

use crate::decode::BodyReadFailure;
use crate::decode::payload::body_read_error;
use crate::errors::documents_error;
use crate::errors::{Code, ResponseError, io_error};
use crate::http::{BodyError, Request, SpooledBody};
use crate::routes::Services;
use crate::tasks::update_files::UpdateFiles;

/// Validates and stores the payload of `request`; answers the update file's name, the number
/// of documents and the payload's size in bytes.
pub async fn store_payload(
    services: &Services,
    mut request: Request,
    format: PayloadFormat,
) -> Result<(String, u64, u64), ResponseError> {
    let files = services.update_files.clone();
    let body = std::mem::replace(&mut request.body, Ok(Vec::new()));
    let payload = body.map_err(|error| payload_read_error(&error))?;
    match request.spooled.take() {
        Some(spooled) => store_spooled(files, spooled, format).await,
        None => store_buffered(files, payload, format).await,
    }
}

/// The document routes' error for a body that could not be read. A body whose compression
/// does not decode is, as Meilisearch answers it there, a payload cut short.
fn payload_read_error(error: &BodyError) -> ResponseError {
    if let BodyError::MalformedEncoding(_) = error {
        return body_read_error(BodyReadFailure::Incomplete);
    }
    match crate::routes::body::read_failure(error) {
        Ok(BodyReadFailure::TooLarge { limit, .. }) => payload_too_large(limit),
        Ok(failure) => body_read_error(failure),
        Err(error) => error,
    }
}

/// 413 `payload_too_large` as the document routes word it.
pub fn payload_too_large(limit: u64) -> ResponseError {
    ResponseError::new(
        Code::PayloadTooLarge,
        format!(
            "The provided payload reached the size limit. The maximum accepted payload size is {}.",
            crate::tasks::view::human_size(limit)
        ),
    )
}

async fn store_spooled(
    files: UpdateFiles,
    spooled: SpooledBody,
    format: PayloadFormat,
) -> Result<(String, u64, u64), ResponseError> {
    if spooled.bytes == 0 {
        return Err(documents_error(DocumentsError::MissingPayload { format }));
    }
    let upload = spooled.name.clone();
    let reading = files.clone();
    let counted = crate::runtime::blocking::run(move || {
        let file = File::open(reading.path(&upload))?;
        count_documents_from(file, format)
    })
    .await
    .map_err(documents_error)?;
    let upload = spooled.name.clone();
    let name = crate::runtime::blocking::run(move || files.persist(&upload, format))
        .await
        .map_err(|error| io_error(&error))?;
    let (_, bytes) = spooled.keep();
    Ok((name, counted, bytes))
}

async fn store_buffered(
    files: UpdateFiles,
    payload: Vec<u8>,
    format: PayloadFormat,
) -> Result<(String, u64, u64), ResponseError> {
    let counted = count_documents(&payload, format).map_err(documents_error)?;
    let bytes = payload.len() as u64;
    let name = crate::runtime::blocking::run(move || files.write(&payload, format))
        .await
        .map_err(|error| io_error(&error))?;
    Ok((name, counted, bytes))
}
