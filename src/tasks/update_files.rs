//! Update files: the payload of a document addition, written by the core that received it
//! and synced before the task is registered (so an acknowledged task always finds its
//! payload), read by the shards' batch, deleted once the task is finished.
//!
//! A file's name says how to read it: `<uuid>.json`, `<uuid>.ndjson` or `<uuid>.csv-<d>`
//! where `<d>` is the CSV delimiter byte in decimal.
//!
//! Invariants: a file is complete and durable (file and directory synced) before its name is
//! handed out; a name is never reused (random v4 uuids); removing a missing file succeeds.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use shards::documents::payload::PayloadFormat;

/// The directory of the data directory that holds the update files.
pub const UPDATE_FILES_DIRECTORY: &str = "update_files";

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
        let directory = tempfile::tempdir().unwrap();
        let files = UpdateFiles::open(directory.path()).unwrap();
        for format in [
            PayloadFormat::Json,
            PayloadFormat::Ndjson,
            PayloadFormat::Csv { delimiter: b';' },
        ] {
            let name = files.write(b"payload", format).unwrap();
            assert_eq!(format_of(&name), Some(format));
            assert_eq!(std::fs::read(files.path(&name)).unwrap(), b"payload");
            files.remove(&name).unwrap();
            files.remove(&name).unwrap();
            assert!(!files.path(&name).exists());
        }
        assert_eq!(format_of("no-extension"), None);
        assert_eq!(format_of("x.csv-abc"), None);
    }
}
