//! A small file replaced atomically and durably: the new content is written to a temporary
//! file, synced, renamed over the old one, and the directory is synced.
//!
//! Invariant: after a crash at any point the file holds either the old or the new content,
//! never a mix, and once [`write`] returned the new content survives a crash.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Replaces the content of `path` with `bytes`, durably.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let directory = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file path has a parent"))?;
    let mut temporary_name = path.as_os_str().to_owned();
    temporary_name.push(".tmp");
    let temporary = Path::new(&temporary_name);
    {
        let mut file = File::create(temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(temporary, path)?;
    File::open(directory)?.sync_all()
}

/// Reads `path`, or `None` when it does not exist.
pub fn read(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn written_content_is_read_back_and_replaces_the_old_one() {
        let directory = std::env::temp_dir().join(format!(
            "coresearch-durable-file-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        fs::create_dir_all(&directory).unwrap();
        let path = directory.join("state.json");
        assert_eq!(read(&path).unwrap(), None);
        write(&path, b"first").unwrap();
        write(&path, b"second").unwrap();
        assert_eq!(read(&path).unwrap().as_deref(), Some(&b"second"[..]));
        assert!(!directory.join("state.json.tmp").exists());
        fs::remove_dir_all(&directory).unwrap();
    }
}
