//! The [`BodySink`] of document additions: the decoded payload is appended to a new upload
//! (see [`super::update_files`]) in chunks of [`UPDATE_FILE_WRITE_CHUNK_BYTES`] as it arrives,
//! the writes running on a helper thread so the core keeps serving.
//!
//! Invariants: at most one chunk of the payload is in memory per request; the upload is
//! created at the first bytes (an empty body leaves no file and spools as zero bytes); a
//! sink dropped before `finish` removes its upload, and so does a spooled body dropped
//! without being kept; `finish` writes what is pending but does not sync (persisting, once
//! the format is known, does).

use std::fs::File;
use std::io::{self, Write};

use crate::http::{BodySink, SpooledBody};

use super::update_files::UpdateFiles;

/// Payload bytes gathered before one write to the upload.
pub const UPDATE_FILE_WRITE_CHUNK_BYTES: usize = 1024 * 1024;

/// Streams one payload into a new upload.
pub struct UpdateFileSink {
    files: UpdateFiles,
    /// The upload's name and file, once created.
    upload: Option<(String, File)>,
    pending: Vec<u8>,
    written: u64,
}

impl UpdateFileSink {
    pub fn new(files: UpdateFiles) -> UpdateFileSink {
        UpdateFileSink {
            files,
            upload: None,
            pending: Vec::new(),
            written: 0,
        }
    }

    /// Writes the pending bytes to the upload (creating it first if needed), off the core.
    async fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let files = self.files.clone();
        let upload = self.upload.take();
        let chunk = std::mem::take(&mut self.pending);
        let (upload, chunk, outcome) = crate::runtime::blocking::run(move || {
            let mut upload = match upload {
                Some(upload) => upload,
                None => match files.create_upload() {
                    Ok(upload) => upload,
                    Err(error) => return (None, chunk, Err(error)),
                },
            };
            let outcome = upload.1.write_all(&chunk);
            (Some(upload), chunk, outcome)
        })
        .await;
        self.upload = upload;
        self.written += chunk.len() as u64;
        self.pending = chunk;
        self.pending.clear();
        outcome
    }
}

impl BodySink for UpdateFileSink {
    async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let room = UPDATE_FILE_WRITE_CHUNK_BYTES.saturating_sub(self.pending.len());
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.pending.extend_from_slice(now);
            rest = later;
            if self.pending.len() >= UPDATE_FILE_WRITE_CHUNK_BYTES {
                self.write_pending().await?;
            }
        }
        Ok(())
    }

    async fn finish(mut self) -> io::Result<SpooledBody> {
        self.write_pending().await?;
        let bytes = self.written;
        let Some((name, _file)) = self.upload.take() else {
            return Ok(SpooledBody::new(String::new(), 0, || {}));
        };
        let files = self.files.clone();
        let discarded = name.clone();
        Ok(SpooledBody::new(name, bytes, move || {
            remove_later(files, discarded)
        }))
    }
}

impl Drop for UpdateFileSink {
    fn drop(&mut self) {
        if let Some((name, _file)) = self.upload.take() {
            remove_later(self.files.clone(), name);
        }
    }
}

/// Removes the file `name` on a helper thread, without waiting (a failure is logged; a file
/// left behind is collected at the next start).
fn remove_later(files: UpdateFiles, name: String) {
    crate::runtime::spawn_detached(async move {
        let outcome = crate::runtime::blocking::run({
            let name = name.clone();
            move || files.remove(&name)
        })
        .await;
        if let Err(error) = outcome {
            tracing::warn!(%error, name, "could not remove an unused upload");
        }
    });
}
