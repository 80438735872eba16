//! Fetching one blob's bytes through the core's outgoing client, resumably.
//!
//! Each request asks `Range: bytes={held}-` for what the partial file does not hold yet
//! (a `206` must start there; a `200` is the whole file again, and the partial file starts
//! over); the body is appended piece by piece, written in batches of
//! [`WRITE_BATCH_BYTES`] on a helper thread. A transfer that breaks (the connection closes
//! early, a piece does not come within [`PIECE_IDLE_TIMEOUT`]) is resumed after the
//! client's backoff, up to [`MAX_TRANSFER_ATTEMPTS`] requests; then the bytes received stay
//! in the partial file for the next download to resume.
//!
//! Invariants: one download per blob at a time, in this process and any other sharing the
//! cache (an exclusive `flock` on `blobs/{etag}.lock`, waited for at most
//! [`LOCK_WAIT_ATTEMPTS`] × [`LOCK_RETRY_PAUSE`]); a blob already complete is not fetched
//! again; file IO never runs on the core thread.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::outgoing::retry::backoff;
use crate::outgoing::{Method, OutgoingClient, OutgoingRequest};
use crate::runtime::blocking;

use super::failure::HubFailure;
use super::layout::RepositoryCache;
use super::metadata::{FileMetadata, content_range_start};
use super::partial::PartialBlob;

/// How long a piece of a file's body may take to come.
pub const PIECE_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest file a model may have (the client's response limit for hub downloads).
pub const MAX_FILE_BYTES: usize = 64 << 30;
/// How many received bytes are written to the partial file at once.
pub const WRITE_BATCH_BYTES: usize = 4 << 20;
/// How many requests one blob's transfer makes at most (the first included).
pub const MAX_TRANSFER_ATTEMPTS: u32 = 4;
/// The pause between two attempts to take a blob's lock.
pub const LOCK_RETRY_PAUSE: Duration = Duration::from_secs(1);
/// How many times the lock is tried before the download fails (ten minutes).
pub const LOCK_WAIT_ATTEMPTS: u32 = 600;

/// An exclusive lock on a blob, released when dropped (the descriptor closes).
struct BlobLock {
    _file: File,
}

/// The lock of `path`, or `None` while another download holds it.
fn try_lock(path: &Path) -> io::Result<Option<BlobLock>> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    // SAFETY: `file` is open for the whole call, so its descriptor is valid; flock only
    // takes an advisory lock on it and touches no memory.
    let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if result == 0 {
        return Ok(Some(BlobLock { _file: file }));
    }
    let error = io::Error::last_os_error();
    if error.kind() == io::ErrorKind::WouldBlock {
        return Ok(None);
    }
    Err(error)
}

/// Takes `path`'s lock, waiting while another download holds it.
async fn lock(path: PathBuf) -> Result<BlobLock, HubFailure> {
    for _ in 0..LOCK_WAIT_ATTEMPTS {
        let candidate = path.clone();
        if let Some(lock) = blocking::run(move || try_lock(&candidate)).await? {
            return Ok(lock);
        }
        crate::runtime::sleep(LOCK_RETRY_PAUSE).await;
    }
    Err(HubFailure::LockAcquisition(path))
}

/// The partial blob, handed to helper threads one call at a time.
#[derive(Clone)]
struct SharedPartial(Arc<Mutex<PartialBlob>>);

impl SharedPartial {
    /// Runs `work` on the partial blob on a helper thread.
    async fn run<Output: Send + 'static>(
        &self,
        work: impl FnOnce(&mut PartialBlob) -> Output + Send + 'static,
    ) -> Output {
        let partial = Arc::clone(&self.0);
        blocking::run(move || work(&mut partial.lock().unwrap_or_else(PoisonError::into_inner)))
            .await
    }
}

/// Downloads the blob `metadata` describes into `cache` (`name` is the file's name in the
/// repository), unless it is already there.
pub async fn fetch_blob(
    client: &OutgoingClient,
    metadata: &FileMetadata,
    cache: &RepositoryCache,
    name: &str,
) -> Result<(), HubFailure> {
    let blob = cache.blob(&metadata.etag)?;
    let incomplete = cache.incomplete(&metadata.etag)?;
    let _lock = lock(cache.lock(&metadata.etag)?).await?;
    let existing = blob.clone();
    if blocking::run(move || existing.is_file()).await {
        return Ok(());
    }
    let size = metadata.size;
    let partial = blocking::run(move || PartialBlob::open(&incomplete, size)).await?;
    let mut written = partial.written();
    let partial = SharedPartial(Arc::new(Mutex::new(partial)));
    let mut attempt = 1;
    while written < size {
        let failure = match transfer(client, &metadata.location, &partial, &mut written).await {
            Ok(()) if written < size => HubFailure::ended_early(),
            Ok(()) => break,
            Err(failure) => failure,
        };
        if !failure.is_resumable() || attempt >= MAX_TRANSFER_ATTEMPTS {
            return Err(failure);
        }
        tracing::info!(file = name, written, size, %failure, "a model download resumes");
        crate::runtime::sleep(backoff(attempt, &client.options())).await;
        attempt += 1;
    }
    let (etag, name) = (metadata.etag.clone(), name.to_owned());
    let partial = partial.0;
    blocking::run(move || {
        let partial = Arc::into_inner(partial)
            .ok_or_else(|| HubFailure::Io("the partial file is still in use".to_owned()))?
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        partial.finish(&blob, &etag, &name)
    })
    .await
}

/// One request for the bytes after `written`, appended as they come; `written` follows.
async fn transfer(
    client: &OutgoingClient,
    location: &str,
    partial: &SharedPartial,
    written: &mut u64,
) -> Result<(), HubFailure> {
    let options = crate::outgoing::SendOptions {
        max_response_bytes: MAX_FILE_BYTES,
        ..client.options()
    };
    let request = OutgoingRequest::new(Method::Get, location)
        .map_err(HubFailure::Request)?
        .header("Range", &format!("bytes={written}-"))
        .options(options);
    let mut response = client
        .send_streamed(request, PIECE_IDLE_TIMEOUT)
        .await
        .map_err(HubFailure::Request)?;
    match response.status {
        206 => {
            let start = response
                .header("content-range")
                .and_then(content_range_start);
            if start != Some(*written) {
                return Err(HubFailure::InvalidHeader("Content-Range"));
            }
        }
        200 if *written > 0 => *written = partial.run(PartialBlob::restart).await?,
        200 => {}
        status => return Err(HubFailure::Status(status)),
    }
    let mut batch = Vec::new();
    let outcome = loop {
        match response.next_piece().await {
            Ok(Some(piece)) => {
                batch.extend_from_slice(&piece);
                if batch.len() >= WRITE_BATCH_BYTES {
                    let bytes = std::mem::take(&mut batch);
                    *written = partial.run(move |blob| blob.append(&bytes)).await?;
                }
            }
            Ok(None) => break Ok(()),
            Err(error) => break Err(HubFailure::from_body(error)),
        }
    };
    // What came before a break is kept: the next request resumes after it.
    if !batch.is_empty() {
        *written = partial.run(move |blob| blob.append(&batch)).await?;
    }
    outcome
}
