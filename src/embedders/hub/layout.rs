//! The standard Hugging Face cache layout of one model repository, as hf-hub and the
//! Python libraries share it:
//!
//! ```text
//! models--{org}--{name}/
//!   blobs/{etag}               a complete file, named by the hub's etag
//!   blobs/{etag}.incomplete    a file being downloaded (resumed from its length)
//!   blobs/{etag}.lock          held while one download writes the blob
//!   snapshots/{commit}/{file}  a relative symlink to ../../blobs/{etag}
//!   refs/{revision}            the commit the revision resolved to
//! ```
//!
//! Invariants (blocking IO: call from a helper thread): a snapshot entry and a ref are
//! written only after their blob is complete and checked, each replaced atomically (made
//! aside, then renamed), so a reader never sees a half-written file in `snapshots/`; every
//! name taken from the hub (etag, commit) or the settings (revision, file) is checked to
//! stay inside the repository directory.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The suffix of a blob being downloaded.
const INCOMPLETE_SUFFIX: &str = ".incomplete";
/// The suffix of a blob's lock file.
const LOCK_SUFFIX: &str = ".lock";
/// The suffix of a symlink or ref made aside before it is renamed into place.
const ASIDE_SUFFIX: &str = ".tmp";

/// One model's directory in the hub cache, at one revision.
#[derive(Debug, Clone)]
pub struct RepositoryCache {
    root: PathBuf,
    revision: String,
}

/// Whether `name` is one plain path component (no separator, not `.` or `..`).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['/', '\\', '\0']) && name != "." && name != ".."
}

/// Whether `path` is relative and only goes down (no `..`, no root).
fn goes_down(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} would leave the model's cache directory"),
    )
}

impl RepositoryCache {
    /// The cache of `model` (`org/name`) under `hub_cache`, at `revision`.
    pub fn new(hub_cache: &Path, model: &str, revision: &str) -> Self {
        RepositoryCache {
            root: hub_cache.join(format!("models--{}", model.replace('/', "--"))),
            revision: revision.to_owned(),
        }
    }

    /// The file of `revision`'s ref.
    fn ref_path(&self) -> io::Result<PathBuf> {
        if !goes_down(&self.revision) {
            return Err(invalid("the revision"));
        }
        Ok(self.root.join("refs").join(&self.revision))
    }

    /// The complete blob of `etag`.
    pub fn blob(&self, etag: &str) -> io::Result<PathBuf> {
        if !is_plain_name(etag) {
            return Err(invalid("the etag"));
        }
        Ok(self.root.join("blobs").join(etag))
    }

    /// Where `etag`'s blob is written while it downloads.
    pub fn incomplete(&self, etag: &str) -> io::Result<PathBuf> {
        Ok(with_suffix(&self.blob(etag)?, INCOMPLETE_SUFFIX))
    }

    /// The lock file of `etag`'s blob.
    pub fn lock(&self, etag: &str) -> io::Result<PathBuf> {
        Ok(with_suffix(&self.blob(etag)?, LOCK_SUFFIX))
    }

    /// The snapshot entry of `file` at `commit`.
    pub fn pointer(&self, commit: &str, file: &str) -> io::Result<PathBuf> {
        if !is_plain_name(commit) {
            return Err(invalid("the commit"));
        }
        if !goes_down(file) {
            return Err(invalid("the file name"));
        }
        Ok(self.root.join("snapshots").join(commit).join(file))
    }

    /// `file` as the cache already holds it at the revision (its ref names a commit whose
    /// snapshot has the file), as hf-hub looks before any request.
    pub fn cached(&self, file: &str) -> Option<PathBuf> {
        let commit = std::fs::read_to_string(self.ref_path().ok()?).ok()?;
        let pointer = self.pointer(commit.trim(), file).ok()?;
        pointer.exists().then_some(pointer)
    }

    /// Links `file` of `commit` to `etag`'s blob and points the revision's ref at
    /// `commit`; the snapshot entry's path.
    pub fn install(&self, etag: &str, commit: &str, file: &str) -> io::Result<PathBuf> {
        let blob = self.blob(etag)?;
        let pointer = self.pointer(commit, file)?;
        if !blob.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no blob at {}", blob.display()),
            ));
        }
        if let Some(parent) = pointer.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let aside = with_suffix(&pointer, ASIDE_SUFFIX);
        let _ = std::fs::remove_file(&aside);
        std::os::unix::fs::symlink(relative_blob(file, etag), &aside)?;
        std::fs::rename(&aside, &pointer)?;
        self.write_ref(commit)?;
        Ok(pointer)
    }

    /// Points the revision's ref at `commit`.
    fn write_ref(&self, commit: &str) -> io::Result<()> {
        let path = self.ref_path()?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let aside = with_suffix(&path, ASIDE_SUFFIX);
        std::fs::write(&aside, commit)?;
        std::fs::rename(&aside, &path)
    }
}

/// `path` with `suffix` added to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The target of `file`'s snapshot symlink: up out of `snapshots/{commit}/` and the file's
/// own directories, then `blobs/{etag}`.
pub fn relative_blob(file: &str, etag: &str) -> PathBuf {
    let depth = Path::new(file).components().count() + 1;
    let mut target: PathBuf = std::iter::repeat_n("..", depth).collect();
    target.push("blobs");
    target.push(etag);
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_entry_links_up_to_its_blob() {
        assert_eq!(
            relative_blob("config.json", "abc"),
            Path::new("../../blobs/abc")
        );
        assert_eq!(
            relative_blob("1_Pooling/config.json", "abc"),
            Path::new("../../../blobs/abc")
        );
    }

    #[test]
    fn an_installed_file_is_found_through_its_ref() {
        let hub = tempfile::tempdir().expect("a tempdir");
        let cache = RepositoryCache::new(hub.path(), "org/name", "main");
        assert_eq!(cache.cached("config.json"), None);
        let blob = cache.blob("e1").expect("a plain etag");
        std::fs::create_dir_all(blob.parent().expect("a parent")).expect("blobs/ is made");
        std::fs::write(&blob, b"{}").expect("the blob is written");
        for file in ["config.json", "1_Pooling/config.json"] {
            let pointer = cache.install("e1", "c0ffee", file).expect("installed");
            assert_eq!(std::fs::read(&pointer).expect("readable"), b"{}");
            assert_eq!(cache.cached(file), Some(pointer));
        }
        let root = hub.path().join("models--org--name");
        let reference = std::fs::read_to_string(root.join("refs/main")).expect("a ref");
        assert_eq!(reference, "c0ffee");
        assert!(root.join("snapshots/c0ffee/config.json").is_symlink());
        assert_eq!(cache.cached("tokenizer.json"), None);
    }

    #[test]
    fn a_missing_blob_is_not_linked_into_a_snapshot() {
        let hub = tempfile::tempdir().expect("a tempdir");
        let cache = RepositoryCache::new(hub.path(), "org/name", "main");
        assert!(cache.install("absent", "c0ffee", "config.json").is_err());
        assert!(!hub.path().join("models--org--name/refs/main").exists());
        assert_eq!(cache.cached("config.json"), None);
    }

    #[test]
    fn names_from_the_hub_stay_inside_the_repository() {
        let cache = RepositoryCache::new(Path::new("/cache"), "org/name", "../../etc");
        assert!(cache.blob("../x").is_err());
        assert!(cache.blob("").is_err());
        assert!(cache.pointer("..", "config.json").is_err());
        assert!(cache.pointer("c0ffee", "../config.json").is_err());
        assert!(cache.pointer("c0ffee", "/config.json").is_err());
        assert!(cache.ref_path().is_err());
        assert_eq!(
            cache.incomplete("e1").expect("a plain etag"),
            Path::new("/cache/models--org--name/blobs/e1.incomplete")
        );
    }
}
