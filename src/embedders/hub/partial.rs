//! A blob being downloaded: `blobs/{etag}.incomplete`, appended to as the bytes come,
//! resumed from its length by the next download, and renamed to `blobs/{etag}` only once
//! whole and checked.
//!
//! Invariants (blocking IO: call from a helper thread): the partial file never holds more
//! bytes than the file's announced size (more is a corrupted partial, removed); `finish`
//! renames it into place only when its length is the size and, for an etag that is a
//! sha256 (an LFS file's), its digest is the etag; a partial whose digest is wrong is
//! removed, so the next download starts over.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::failure::HubFailure;

/// How many bytes one read of the digest check takes.
const HASH_READ_BYTES: usize = 1 << 20;
/// The length of a sha256 written in hex.
const SHA256_HEX_LENGTH: usize = 64;

/// A partial blob, open for appending.
#[derive(Debug)]
pub struct PartialBlob {
    file: File,
    path: PathBuf,
    written: u64,
    size: u64,
}

impl PartialBlob {
    /// The partial file at `path` of a file of `size` bytes, created when absent; what it
    /// already holds is kept (the download resumes after it).
    pub fn open(path: &Path, size: u64) -> Result<Self, HubFailure> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let written = file.metadata()?.len();
        if written > size {
            drop(file);
            std::fs::remove_file(path)?;
            return Err(HubFailure::InvalidResume);
        }
        Ok(PartialBlob {
            file,
            path: path.to_path_buf(),
            written,
            size,
        })
    }

    /// How many bytes the partial file holds.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends `bytes`; the new length.
    pub fn append(&mut self, bytes: &[u8]) -> Result<u64, HubFailure> {
        let length = u64::try_from(bytes.len()).map_err(|_| HubFailure::InvalidResume)?;
        if self.written.saturating_add(length) > self.size {
            std::fs::remove_file(&self.path)?;
            return Err(HubFailure::InvalidResume);
        }
        self.file.write_all(bytes)?;
        self.written += length;
        Ok(self.written)
    }

    /// Empties the partial file (the server sent the whole file again); the new length.
    pub fn restart(&mut self) -> Result<u64, HubFailure> {
        self.file.set_len(0)?;
        self.written = 0;
        Ok(0)
    }

    /// Checks the partial file and renames it to `blob`; `name` is the file's name in the
    /// repository (for the error).
    pub fn finish(self, blob: &Path, etag: &str, name: &str) -> Result<(), HubFailure> {
        self.file.sync_all()?;
        drop(self.file);
        if self.written != self.size {
            return Err(HubFailure::ended_early());
        }
        if is_sha256(etag) {
            let actual = sha256_of(&self.path)?;
            if !actual.eq_ignore_ascii_case(etag) {
                std::fs::remove_file(&self.path)?;
                return Err(HubFailure::Checksum {
                    file: name.to_owned(),
                    expected: etag.to_ascii_lowercase(),
                    actual,
                });
            }
        }
        std::fs::rename(&self.path, blob)?;
        Ok(())
    }
}

/// Whether `etag` is a sha256 in hex (an LFS file's etag).
pub fn is_sha256(etag: &str) -> bool {
    etag.len() == SHA256_HEX_LENGTH && etag.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// The sha256 of the file at `path`, in lower-case hex.
pub fn sha256_of(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; HASH_READ_BYTES];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTENT: &[u8] = b"the weights of a very small model";

    fn digest(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    fn size() -> u64 {
        u64::try_from(CONTENT.len()).expect("a small length")
    }

    #[test]
    fn a_download_resumes_after_what_the_partial_file_holds() {
        let directory = tempfile::tempdir().expect("a tempdir");
        let partial_path = directory.path().join("blobs/e.incomplete");
        let mut partial = PartialBlob::open(&partial_path, size()).expect("opened");
        assert_eq!(partial.append(&CONTENT[..10]).expect("appended"), 10);
        drop(partial);
        let mut resumed = PartialBlob::open(&partial_path, size()).expect("reopened");
        assert_eq!(resumed.written(), 10);
        resumed.append(&CONTENT[10..]).expect("appended");
        let etag = digest(CONTENT);
        let blob = directory.path().join("blobs").join(&etag);
        resumed
            .finish(&blob, &etag, "model.safetensors")
            .expect("checked");
        assert_eq!(std::fs::read(&blob).expect("the blob"), CONTENT);
        assert!(!partial_path.exists());
    }

    #[test]
    fn a_short_file_is_not_renamed_into_place() {
        let directory = tempfile::tempdir().expect("a tempdir");
        let partial_path = directory.path().join("e.incomplete");
        let mut partial = PartialBlob::open(&partial_path, size()).expect("opened");
        partial.append(&CONTENT[..5]).expect("appended");
        let blob = directory.path().join("e");
        let failure = partial.finish(&blob, "e", "config.json");
        assert_eq!(failure, Err(HubFailure::ended_early()));
        assert!(!blob.exists());
        assert!(partial_path.exists(), "kept to resume from");
    }

    #[test]
    fn a_wrong_digest_removes_the_partial_file() {
        let directory = tempfile::tempdir().expect("a tempdir");
        let partial_path = directory.path().join("e.incomplete");
        let mut partial = PartialBlob::open(&partial_path, size()).expect("opened");
        let mut wrong = CONTENT.to_vec();
        wrong[0] ^= 1;
        partial.append(&wrong).expect("appended");
        let etag = digest(CONTENT);
        let blob = directory.path().join(&etag);
        let failure = partial.finish(&blob, &etag, "model.safetensors");
        assert!(
            matches!(failure, Err(HubFailure::Checksum { ref actual, .. }) if *actual == digest(&wrong)),
            "{failure:?}"
        );
        assert!(!blob.exists());
        assert!(!partial_path.exists());
    }

    #[test]
    fn a_partial_file_longer_than_the_file_is_discarded() {
        let directory = tempfile::tempdir().expect("a tempdir");
        let partial_path = directory.path().join("e.incomplete");
        std::fs::write(&partial_path, CONTENT).expect("written");
        let failure = PartialBlob::open(&partial_path, 3).map(|_| ());
        assert_eq!(failure, Err(HubFailure::InvalidResume));
        assert!(!partial_path.exists());
        let mut partial = PartialBlob::open(&partial_path, 3).expect("opened anew");
        assert_eq!(partial.written(), 0);
        assert_eq!(
            partial.append(CONTENT).map(|_| ()),
            Err(HubFailure::InvalidResume)
        );
    }

    #[test]
    fn a_restart_empties_the_partial_file() {
        let directory = tempfile::tempdir().expect("a tempdir");
        let partial_path = directory.path().join("e.incomplete");
        let mut partial = PartialBlob::open(&partial_path, size()).expect("opened");
        partial.append(b"garbage").expect("appended");
        partial.restart().expect("emptied");
        partial.append(CONTENT).expect("appended");
        let blob = directory.path().join("e");
        partial.finish(&blob, "e", "config.json").expect("whole");
        assert_eq!(std::fs::read(&blob).expect("the blob"), CONTENT);
    }

    #[test]
    fn only_64_hex_digits_are_a_sha256() {
        assert!(is_sha256(&digest(b"x")));
        assert!(!is_sha256("0123abcd"));
        assert!(!is_sha256(&"g".repeat(SHA256_HEX_LENGTH)));
    }
}
