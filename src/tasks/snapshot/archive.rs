//! The `.snapshot` file: what it holds, how it is written, and how it is read back.
//!
//! coresearch's own format (only coresearch reads it back): a tar archive compressed with
//! zstd (one frame, with its content checksum) holding, in this order,
//! - `snapshot.json` ([`SnapshotHeader`]): the format name `coresearch-snapshot`, the
//!   snapshot format version, the data directory format version, the coresearch version that
//!   wrote it and when;
//! - `data/…`: a data directory as coresearch opens it — its format marker
//!   `coresearch-format`; `tasks.store`, the task queue with the batches and the index
//!   catalog (compacted, without the snapshot's own tasks); `update_files/`, the payloads of
//!   the enqueued tasks; `auth/keys.json`; the experimental features, network, webhooks,
//!   dynamic search rules and chat workspaces files when they exist; and per index `indexes/<storage>/shard-N.store` (each shard's
//!   page store, compacted) with its vector files in `shard-N.store.vectors/`;
//! - `manifest.json`, last ([`Manifest`]): every file of `data/` with its size and XXH3-64.
//!
//! Writing ([`write_archive`]): the data directory staged in the staging directory is
//! archived into a temporary file, synced, made read-only (as Meilisearch leaves its
//! snapshots) and only then renamed to its final name, the directory synced: a crash never
//! leaves a partial snapshot under a snapshot's name, and an earlier snapshot stays whole
//! until the new one replaces it.
//!
//! Reading ([`unpack_archive`]) trusts nothing: a file that is not a zstd stream (a
//! Meilisearch snapshot is a gzip stream) or whose header is not ours or of a newer format
//! is refused; entries must be plain relative paths under `data/`; the zstd stream must end
//! whole (its checksum checked); and the files unpacked must be exactly the manifest's, with
//! its sizes and hashes. A truncated, damaged or edited snapshot is an error, never a shorter
//! data directory.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use xxhash_rust::xxh3::Xxh3;

/// The extension of a snapshot file (`<db name>.snapshot`).
pub const SNAPSHOT_EXTENSION: &str = "snapshot";
/// The format name in every header.
pub const SNAPSHOT_FORMAT_NAME: &str = "coresearch-snapshot";
/// The snapshot format this binary writes and reads.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 1;
/// The header entry, first in the archive.
pub const HEADER_ENTRY: &str = "snapshot.json";
/// The manifest entry, last in the archive.
pub const MANIFEST_ENTRY: &str = "manifest.json";
/// The folder of the archive holding the data directory.
pub const DATA_FOLDER: &str = "data";
/// The zstd level of snapshots: a low one, as page stores compress well and compressing is
/// most of a snapshot's CPU time.
pub const SNAPSHOT_COMPRESSION_LEVEL: i32 = 1;
/// The permissions of a finished snapshot: read-only for everyone (`r--r--r--`).
pub const SNAPSHOT_FILE_MODE: u32 = 0o444;
/// The largest header or manifest read back (a manifest names a few entries per shard).
const METADATA_BYTES_MAX: u64 = 64 << 20;
/// The buffer between the archive and its file.
const ARCHIVE_BUFFER_BYTES: usize = 1 << 20;
/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The first bytes of a gzip stream (Meilisearch's snapshots and dumps).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The first entry of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotHeader {
    /// Always [`SNAPSHOT_FORMAT_NAME`].
    pub format: String,
    pub format_version: u32,
    /// The format of the data directory inside (`crate::data_dir::FORMAT_VERSION`).
    pub data_format_version: u32,
    /// The coresearch version that wrote the snapshot.
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl SnapshotHeader {
    /// The header of a snapshot written now by this binary.
    pub fn current(created_at: OffsetDateTime) -> SnapshotHeader {
        SnapshotHeader {
            format: SNAPSHOT_FORMAT_NAME.to_owned(),
            format_version: SNAPSHOT_FORMAT_VERSION,
            data_format_version: crate::data_dir::FORMAT_VERSION,
            created_by: env!("CARGO_PKG_VERSION").to_owned(),
            created_at,
        }
    }
}

/// One file of the data directory, as the manifest lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    pub bytes: u64,
    /// XXH3-64 of the content, in hexadecimal.
    #[serde(with = "hex_u64")]
    pub xxh3: u64,
}

/// The last entry of a snapshot: every file of `data/` by its path in the archive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub files: BTreeMap<String, ManifestFile>,
}

/// A `u64` written as 16 hexadecimal digits.
mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{value:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        u64::from_str_radix(&text, 16).map_err(serde::de::Error::custom)
    }
}

/// A reader that hashes and counts what goes through it.
struct Hashing<R> {
    inner: R,
    hasher: Xxh3,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.hasher.update(&buffer[..read]);
        self.bytes += read as u64;
        Ok(read)
    }
}

/// Archives the data directory `data` with `header` into `temporary` (synced, read-only),
/// then renames it to `destination` and syncs the directory; answers the archive's size.
pub fn write_archive(
    data: &Path,
    header: &SnapshotHeader,
    temporary: &Path,
    destination: &Path,
) -> io::Result<u64> {
    let file = File::create(temporary)?;
    let mut encoder = zstd::stream::write::Encoder::new(
        BufWriter::with_capacity(ARCHIVE_BUFFER_BYTES, file),
        SNAPSHOT_COMPRESSION_LEVEL,
    )?;
    encoder.include_checksum(true)?;
    let mut builder = tar::Builder::new(encoder);
    builder.mode(tar::HeaderMode::Deterministic);
    append_bytes(
        &mut builder,
        HEADER_ENTRY,
        &serde_json::to_vec_pretty(header)?,
    )?;
    let mut manifest = Manifest::default();
    append_directory(&mut builder, data, Path::new(DATA_FOLDER), &mut manifest)?;
    append_bytes(
        &mut builder,
        MANIFEST_ENTRY,
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    let file = builder
        .into_inner()?
        .finish()?
        .into_inner()
        .map_err(|error| error.into_error())?;
    file.sync_all()?;
    let bytes = file.metadata()?.len();
    file.set_permissions(fs::Permissions::from_mode(SNAPSHOT_FILE_MODE))?;
    drop(file);
    fs::rename(temporary, destination)?;
    let directory = destination
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(directory)?.sync_all()?;
    Ok(bytes)
}

/// Appends `bytes` as the regular file `name`.
fn append_bytes<W: Write>(
    builder: &mut tar::Builder<W>,
    name: &str,
    bytes: &[u8],
) -> io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    builder.append_data(&mut header, name, bytes)
}

/// Appends the directory `root` as `inside`, its entries in name order, each file hashed
/// into `manifest` as it is read.
fn append_directory<W: Write>(
    builder: &mut tar::Builder<W>,
    root: &Path,
    inside: &Path,
    manifest: &mut Manifest,
) -> io::Result<()> {
    builder.append_dir(inside, root)?;
    let mut names = Vec::new();
    for entry in fs::read_dir(root)? {
        names.push(entry?.file_name());
    }
    names.sort();
    for name in names {
        let path = root.join(&name);
        let inside = inside.join(&name);
        let metadata = fs::symlink_metadata(&path)?;
        if metadata.is_dir() {
            append_directory(builder, &path, &inside, manifest)?;
        } else if metadata.is_file() {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(metadata.len());
            header.set_mode(0o644);
            let mut reader = Hashing {
                inner: BufReader::with_capacity(ARCHIVE_BUFFER_BYTES, File::open(&path)?),
                hasher: Xxh3::new(),
                bytes: 0,
            };
            builder.append_data(&mut header, &inside, &mut reader)?;
            if reader.bytes != metadata.len() {
                return Err(io::Error::other(format!(
                    "{} changed while it was archived",
                    path.display()
                )));
            }
            let file = ManifestFile {
                bytes: reader.bytes,
                xxh3: reader.hasher.digest(),
            };
            manifest.files.insert(archive_path(&inside), file);
        }
    }
    Ok(())
}

/// `path` with `/` separators, as the archive names it.
fn archive_path(path: &Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// What is wrong with a snapshot file.
fn damaged(error: impl std::fmt::Display) -> String {
    format!("is damaged or truncated: {error}")
}

/// Unpacks the snapshot at `archive` into the existing directory `destination`, where its
/// data directory becomes `destination/data`; answers its header. The error says what is
/// wrong with the file (see the module documentation for what is checked).
pub fn unpack_archive(archive: &Path, destination: &Path) -> Result<SnapshotHeader, String> {
    let mut file = File::open(archive).map_err(|error| format!("cannot be read: {error}"))?;
    check_magic(&mut file)?;
    let decoder =
        zstd::stream::read::Decoder::new(BufReader::with_capacity(ARCHIVE_BUFFER_BYTES, file))
            .map_err(damaged)?;
    let mut tar = tar::Archive::new(decoder);
    let mut entries = tar.entries().map_err(damaged)?;
    let header = match entries.next() {
        Some(entry) => read_header(entry.map_err(damaged)?)?,
        None => return Err(damaged("it holds no entry")),
    };
    let mut unpacked = Manifest::default();
    let mut manifest = None;
    for entry in entries {
        let entry = entry.map_err(damaged)?;
        if manifest.is_some() {
            return Err(damaged("entries follow its manifest"));
        }
        let path = entry.path().map_err(damaged)?.into_owned();
        if path == Path::new(MANIFEST_ENTRY) {
            manifest = Some(read_json::<Manifest, _>(entry, MANIFEST_ENTRY)?);
        } else {
            unpack_entry(entry, &path, destination, &mut unpacked)?;
        }
    }
    // Whatever follows the tar's end, the zstd frame must end whole (its checksum checked).
    let mut decoder = tar.into_inner();
    io::copy(&mut decoder, &mut io::sink()).map_err(damaged)?;
    let manifest = manifest.ok_or_else(|| damaged("its manifest is missing"))?;
    compare_with_manifest(&manifest, &unpacked)?;
    Ok(header)
}

/// Refuses a file that does not start as a zstd frame, naming what it looks like; leaves
/// the file at its start.
fn check_magic(file: &mut File) -> Result<(), String> {
    let mut magic = [0; 4];
    let read = file
        .read(&mut magic)
        .map_err(|error| format!("cannot be read: {error}"))?;
    if read == magic.len() && magic == ZSTD_MAGIC {
        return file
            .seek(io::SeekFrom::Start(0))
            .map(|_| ())
            .map_err(|error| format!("cannot be read: {error}"));
    }
    if read >= GZIP_MAGIC.len() && magic[..GZIP_MAGIC.len()] == GZIP_MAGIC {
        return Err(
            "is a gzip-compressed archive, as Meilisearch writes its snapshots and \
                    dumps, not a coresearch snapshot: coresearch cannot open Meilisearch's \
                    database files; move a Meilisearch instance with a dump instead \
                    (`POST /dumps` there, then `--import-dump` here)"
                .to_owned(),
        );
    }
    Err("is not a coresearch snapshot (it is not a zstd-compressed archive)".to_owned())
}

/// Reads the first entry, which must be a header of a format this binary reads.
fn read_header<R: Read>(entry: tar::Entry<'_, R>) -> Result<SnapshotHeader, String> {
    let path = entry.path().map_err(damaged)?.into_owned();
    if path != Path::new(HEADER_ENTRY) {
        return Err(format!(
            "is not a coresearch snapshot (its first entry is {path:?}, not `{HEADER_ENTRY}`)"
        ));
    }
    let header: SnapshotHeader = read_json(entry, HEADER_ENTRY)?;
    if header.format != SNAPSHOT_FORMAT_NAME {
        return Err(format!(
            "is not a coresearch snapshot (its format is `{}`)",
            header.format
        ));
    }
    if header.format_version > SNAPSHOT_FORMAT_VERSION {
        return Err(format!(
            "was written by coresearch {} in snapshot format {}, newer than the format \
             {SNAPSHOT_FORMAT_VERSION} this coresearch {} reads: start a coresearch of that \
             version or later",
            header.created_by,
            header.format_version,
            env!("CARGO_PKG_VERSION")
        ));
    }
    Ok(header)
}

/// Reads a JSON entry of at most [`METADATA_BYTES_MAX`] bytes.
fn read_json<T: serde::de::DeserializeOwned, R: Read>(
    entry: tar::Entry<'_, R>,
    name: &str,
) -> Result<T, String> {
    let mut bytes = Vec::new();
    entry
        .take(METADATA_BYTES_MAX)
        .read_to_end(&mut bytes)
        .map_err(damaged)?;
    serde_json::from_slice(&bytes).map_err(|error| damaged(format!("`{name}`: {error}")))
}

/// Unpacks one entry of `data/` under `destination`, hashing a file into `unpacked`.
fn unpack_entry<R: Read>(
    entry: tar::Entry<'_, R>,
    path: &Path,
    destination: &Path,
    unpacked: &mut Manifest,
) -> Result<(), String> {
    let mut components = path.components();
    let under_data = components.next() == Some(Component::Normal(DATA_FOLDER.as_ref()));
    if !under_data
        || !path
            .components()
            .all(|part| matches!(part, Component::Normal(_)))
    {
        return Err(format!("holds the unexpected entry {path:?}"));
    }
    let target = destination.join(path);
    let kind = entry.header().entry_type();
    let failure = |error: io::Error| format!("could not unpack {path:?}: {error}");
    if kind.is_dir() {
        return fs::create_dir_all(&target).map_err(failure);
    }
    if !kind.is_file() {
        return Err(format!("holds the unexpected entry {path:?}"));
    }
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(failure)?;
    }
    let mut reader = Hashing {
        inner: entry,
        hasher: Xxh3::new(),
        bytes: 0,
    };
    let mut file = BufWriter::with_capacity(
        ARCHIVE_BUFFER_BYTES,
        File::create(&target).map_err(failure)?,
    );
    // A read error here is the archive's (the decoder's or the tar's); a write error ours.
    io::copy(&mut reader, &mut file).map_err(|error| match error.kind() {
        io::ErrorKind::WriteZero | io::ErrorKind::StorageFull => failure(error),
        _ => damaged(error),
    })?;
    file.into_inner()
        .map_err(|error| failure(error.into_error()))?
        .sync_all()
        .map_err(failure)?;
    let file = ManifestFile {
        bytes: reader.bytes,
        xxh3: reader.hasher.digest(),
    };
    unpacked.files.insert(archive_path(path), file);
    Ok(())
}

/// Refuses unpacked files that differ from the manifest's, or that it does not list.
fn compare_with_manifest(manifest: &Manifest, unpacked: &Manifest) -> Result<(), String> {
    for (path, expected) in &manifest.files {
        match unpacked.files.get(path) {
            None => return Err(damaged(format!("`{path}` is missing"))),
            Some(found) if found != expected => {
                return Err(damaged(format!(
                    "`{path}` differs from its manifest entry ({} bytes, XXH3 {:016x}; the \
                     manifest says {} bytes, XXH3 {:016x})",
                    found.bytes, found.xxh3, expected.bytes, expected.xxh3
                )));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = unpacked
        .files
        .keys()
        .find(|path| !manifest.files.contains_key(*path))
    {
        return Err(damaged(format!("`{extra}` is not in its manifest")));
    }
    Ok(())
}

/// The data directory a snapshot unpacked into `destination` holds.
pub fn data_folder(destination: &Path) -> PathBuf {
    destination.join(DATA_FOLDER)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn staged(root: &Path) -> PathBuf {
        let data = root.join("staging");
        fs::create_dir_all(data.join("indexes/index-0/shard-0.store.vectors")).unwrap();
        fs::create_dir_all(data.join("update_files")).unwrap();
        fs::write(data.join("coresearch-format"), "marker").unwrap();
        let store: Vec<u8> = (0..300_000u32)
            .flat_map(|n| (n % 251).to_le_bytes())
            .collect();
        fs::write(data.join("indexes/index-0/shard-0.store"), store).unwrap();
        fs::write(
            data.join("indexes/index-0/shard-0.store.vectors/01.vectors"),
            [1, 2, 3],
        )
        .unwrap();
        data
    }

    fn write(root: &Path, data: &Path, name: &str) -> PathBuf {
        let destination = root.join(name);
        let header = SnapshotHeader::current(OffsetDateTime::UNIX_EPOCH);
        write_archive(
            data,
            &header,
            &root.join(format!("{name}.tmp")),
            &destination,
        )
        .unwrap();
        destination
    }

    #[test]
    fn a_snapshot_unpacks_to_the_same_files_and_is_read_only() {
        let scratch = tempfile::tempdir().unwrap();
        let data = staged(scratch.path());
        let snapshot = write(scratch.path(), &data, "data.ms.snapshot");
        assert!(!scratch.path().join("data.ms.snapshot.tmp").exists());
        let mode = fs::metadata(&snapshot).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, SNAPSHOT_FILE_MODE);
        let unpacked = tempfile::tempdir().unwrap();
        let header = unpack_archive(&snapshot, unpacked.path()).unwrap();
        assert_eq!(header.format_version, SNAPSHOT_FORMAT_VERSION);
        let restored = data_folder(unpacked.path());
        for file in [
            "coresearch-format",
            "indexes/index-0/shard-0.store",
            "indexes/index-0/shard-0.store.vectors/01.vectors",
        ] {
            assert_eq!(
                fs::read(restored.join(file)).unwrap(),
                fs::read(data.join(file)).unwrap(),
                "{file}"
            );
        }
        assert!(restored.join("update_files").is_dir());
        // A second snapshot replaces the read-only first one.
        fs::write(data.join("coresearch-format"), "changed").unwrap();
        let again = write(scratch.path(), &data, "data.ms.snapshot");
        let unpacked = tempfile::tempdir().unwrap();
        unpack_archive(&again, unpacked.path()).unwrap();
        assert_eq!(
            fs::read_to_string(data_folder(unpacked.path()).join("coresearch-format")).unwrap(),
            "changed"
        );
    }

    #[test]
    fn truncated_damaged_and_foreign_files_are_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let data = staged(scratch.path());
        let snapshot = write(scratch.path(), &data, "good.snapshot");
        let bytes = fs::read(&snapshot).unwrap();
        let mut flipped = bytes.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x40;
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "half",
                bytes[..bytes.len() / 2].to_vec(),
                "damaged or truncated",
            ),
            (
                "tail",
                bytes[..bytes.len() - 3].to_vec(),
                "damaged or truncated",
            ),
            ("flipped", flipped, "damaged or truncated"),
            ("gzip", vec![0x1f, 0x8b, 8, 0, 0, 0], "Meilisearch"),
            (
                "text",
                b"not a snapshot".to_vec(),
                "not a coresearch snapshot",
            ),
            ("empty", Vec::new(), "not a coresearch snapshot"),
        ];
        for (name, content, message) in cases {
            let path = scratch.path().join(name);
            fs::write(&path, content).unwrap();
            let unpacked = tempfile::tempdir().unwrap();
            let error = unpack_archive(&path, unpacked.path()).unwrap_err();
            assert!(error.contains(message), "{name}: {error}");
        }
    }
}
