//! Update files: the payload of a document addition, written by the core that received it
//! and synced before the task is registered (so an acknowledged task always finds its
//! payload), read by the shards' batch, deleted once the task is finished.
//!
//! A file's name says how to read it: `<uuid>.json`, `<uuid>.ndjson` or `<uuid>.csv-<d>`
//! where `<d>` is the CSV delimiter byte in decimal. A payload being received is an upload,
//! `<uuid>.upload`, written in chunks as it arrives ([`super::update_file_sink`]), then
//! persisted: synced and renamed to its format's name.
//!
//! Invariants: a file is complete and durable (file and directory synced) before its name is
//! handed out; a name is never reused (random v4 uuids); removing a missing file succeeds;
//! an upload no task refers to is removed at startup like any unreferenced file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use shards::documents::payload::PayloadFormat;

/// The directory of the data directory that holds the update files.
pub const UPDATE_FILES_DIRECTORY: &str = "update_files";
/// The extension of a payload still being received.
const UPLOAD_EXTENSION: &str = "upload";

/// The update files of one data directory.
#[derive(Debug, Clone)]
pub struct UpdateFiles {
    directory: PathBuf,
}

impl UpdateFiles {
    /// The update files under `data_directory` (the directory is created when missing).
    pub fn open(data_directory: &Path) -> std::io::Result<UpdateFiles> {
        let directory = data_directory.join(UPDATE_FILES_DIRECTORY);
        std::fs::create_dir_all(&directory)?;
        Ok(UpdateFiles { directory })
    }

    /// Writes and syncs `payload` as a new update file; returns its name.
    pub fn write(&self, payload: &[u8], format: PayloadFormat) -> std::io::Result<String> {
        let name = format!("{}.{}", uuid::Uuid::new_v4(), extension(format));
        let path = self.directory.join(&name);
        let mut file = File::create(&path)?;
        file.write_all(payload)?;
        file.sync_all()?;
        File::open(&self.directory)?.sync_all()?;
        Ok(name)
    }

    /// Creates a new, empty upload; returns its name and the file, open for writing.
    pub fn create_upload(&self) -> std::io::Result<(String, File)> {
        let name = format!("{}.{UPLOAD_EXTENSION}", uuid::Uuid::new_v4());
        let file = File::create(self.path(&name))?;
        Ok((name, file))
    }

    /// Makes the complete upload `upload` durable as an update file of `format`: syncs it,
    /// renames it, syncs the directory; returns the update file's name.
    pub fn persist(&self, upload: &str, format: PayloadFormat) -> std::io::Result<String> {
        let stem = upload
            .strip_suffix(UPLOAD_EXTENSION)
            .and_then(|stem| stem.strip_suffix('.'))
            .ok_or_else(|| std::io::Error::other(format!("{upload} is not an upload")))?;
        let name = format!("{stem}.{}", extension(format));
        File::open(self.path(upload))?.sync_all()?;
        std::fs::rename(self.path(upload), self.path(&name))?;
        File::open(&self.directory)?.sync_all()?;
        Ok(name)
    }

    /// The path of the file `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.directory.join(name)
    }

    /// Deletes the file `name` (a missing file is not an error).
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.path(name)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        }
    }

    /// Names of every update file present (to collect the ones no task refers to).
    pub fn names(&self) -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.directory)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }
}

fn extension(format: PayloadFormat) -> String {
    match format {
        PayloadFormat::Json => "json".to_owned(),
        PayloadFormat::Ndjson => "ndjson".to_owned(),
        PayloadFormat::Csv { delimiter } => format!("csv-{delimiter}"),
    }
}

/// The format of the update file `name`, from its extension.
pub fn format_of(name: &str) -> Option<PayloadFormat> {
    let (_, extension) = name.rsplit_once('.')?;
    match extension {
        "json" => Some(PayloadFormat::Json),
        "ndjson" => Some(PayloadFormat::Ndjson),
        other => {
            let delimiter = other.strip_prefix("csv-")?.parse().ok()?;
            Some(PayloadFormat::Csv { delimiter })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_with_its_format() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let files = UpdateFiles::open(directory.path()).expect("open succeeds");
        for format in [
            PayloadFormat::Json,
            PayloadFormat::Ndjson,
            PayloadFormat::Csv { delimiter: b';' },
        ] {
            let name = files.write(b"payload", format).expect("write succeeds");
            assert_eq!(format_of(&name), Some(format));
            assert_eq!(
                std::fs::read(files.path(&name)).expect("read succeeds"),
                b"payload"
            );
            files.remove(&name).expect("remove succeeds");
            files.remove(&name).expect("remove succeeds");
            assert!(!files.path(&name).exists());
        }
        assert_eq!(format_of("no-extension"), None);
        let (upload, mut file) = files.create_upload().expect("create_upload succeeds");
        file.write_all(b"streamed").expect("the upload takes bytes");
        drop(file);
        let name = files
            .persist(&upload, PayloadFormat::Ndjson)
            .expect("persist succeeds");
        assert_eq!(format_of(&name), Some(PayloadFormat::Ndjson));
        assert_eq!(format_of(&upload), None);
        assert!(!files.path(&upload).exists());
        assert_eq!(
            std::fs::read(files.path(&name)).expect("the update file reads back"),
            b"streamed"
        );
        assert_eq!(format_of("x.csv-abc"), None);
    }
}
