//! The `.dump` archive: a directory laid out as [`super::layout`] says, as a tar stream
//! compressed with gzip — written from a staging directory, and unpacked into one.
//!
//! Writing: the staging directory is archived in name order; a file named `X.part-N` is
//! piece `N` of file `X` (each shard of an index writes its documents as one piece), and the
//! pieces go into the archive as the one file `X`, in piece order. The archive is written
//! to a temporary file, synced, and only then renamed to its final name (and the directory
//! synced), so a crash never leaves a partial dump under a dump's name.
//!
//! Unpacking: only regular files and directories are taken, under relative paths without
//! `..`; the gzip stream is read to its end (its checksum checked), so a truncated or
//! damaged archive is an error, never a silently shorter dump.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

/// The gzip level of dumps: the fastest. Compressing is most of a dump's CPU time, and the
/// fastest level already divides JSON by about four.
pub const DUMP_COMPRESSION_LEVEL: u32 = 1;

/// The buffer between the archive and its file.
const ARCHIVE_BUFFER_BYTES: usize = 1 << 20;

/// The marker of a piece of a file in the staging directory.
const PIECE_MARKER: &str = ".part-";

/// The staging name of piece `piece` of the file `name`.
pub fn piece_name(name: &str, piece: u32) -> String {
    format!("{name}{PIECE_MARKER}{piece}")
}

/// Archives `staging` into `temporary` (synced), then renames it to `destination` and syncs
/// the directory.
pub fn write_archive(staging: &Path, temporary: &Path, destination: &Path) -> io::Result<()> {
    let file = File::create(temporary)?;
    let encoder = GzEncoder::new(
        BufWriter::with_capacity(ARCHIVE_BUFFER_BYTES, file),
        Compression::new(DUMP_COMPRESSION_LEVEL),
    );
    let mut builder = tar::Builder::new(encoder);
    builder.mode(tar::HeaderMode::Deterministic);
    append_directory(&mut builder, staging, Path::new(""))?;
    let file = builder
        .into_inner()?
        .finish()?
        .into_inner()
        .map_err(|error| error.into_error())?;
    file.sync_all()?;
    drop(file);
    fs::rename(temporary, destination)?;
    let directory = destination
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(directory)?.sync_all()
}

/// Appends the entries of `root/relative` in name order (pieces joined, see the module doc).
fn append_directory<W: Write>(
    builder: &mut tar::Builder<W>,
    root: &Path,
    relative: &Path,
) -> io::Result<()> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root.join(relative))? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let mut pieces: BTreeMap<String, Vec<(u32, PathBuf)>> = BTreeMap::new();
    for name in names {
        let path = root.join(relative).join(&name);
        let inside = relative.join(&name);
        if path.is_dir() {
            builder.append_dir(&inside, &path)?;
            append_directory(builder, root, &inside)?;
        } else if let Some((whole, piece)) = split_piece(&name) {
            pieces.entry(whole).or_default().push((piece, path));
        } else {
            builder.append_path_with_name(&path, &inside)?;
        }
    }
    for (whole, mut parts) in pieces {
        parts.sort();
        let paths: Vec<PathBuf> = parts.into_iter().map(|(_, path)| path).collect();
        let mut size = 0;
        for path in &paths {
            size += fs::metadata(path)?.len();
        }
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(size);
        header.set_mode(0o644);
        builder.append_data(&mut header, relative.join(whole), Pieces::new(paths))?;
    }
    Ok(())
}

/// `X.part-N` as (`X`, `N`).
fn split_piece(name: &str) -> Option<(String, u32)> {
    let (whole, piece) = name.rsplit_once(PIECE_MARKER)?;
    Some((whole.to_owned(), piece.parse().ok()?))
}

/// The files of a list read one after the other.
struct Pieces {
    pending: std::vec::IntoIter<PathBuf>,
    current: Option<BufReader<File>>,
}

impl Pieces {
    fn new(paths: Vec<PathBuf>) -> Pieces {
        Pieces {
            pending: paths.into_iter(),
            current: None,
        }
    }
}

impl Read for Pieces {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(current) = &mut self.current {
                let read = current.read(buffer)?;
                if read > 0 || buffer.is_empty() {
                    return Ok(read);
                }
            }
            match self.pending.next() {
                Some(path) => {
                    self.current = Some(BufReader::with_capacity(
                        ARCHIVE_BUFFER_BYTES,
                        File::open(path)?,
                    ));
                }
                None => return Ok(0),
            }
        }
    }
}

/// Unpacks the archive at `archive` into the existing directory `destination` (see the
/// module doc for what is taken); the error says what is wrong with the archive.
pub fn unpack_archive(archive: &Path, destination: &Path) -> Result<(), String> {
    let file = File::open(archive).map_err(|error| format!("cannot be read: {error}"))?;
    let damaged = |error: io::Error| format!("is damaged or truncated: {error}");
    let decoder = GzDecoder::new(BufReader::with_capacity(ARCHIVE_BUFFER_BYTES, file));
    let mut tar = tar::Archive::new(decoder);
    for entry in tar.entries().map_err(damaged)? {
        let mut entry = entry.map_err(damaged)?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        let path = entry.path().map_err(damaged)?.into_owned();
        if !is_plain_relative(&path) {
            return Err(format!("holds the unsafe path {path:?}"));
        }
        if !entry.unpack_in(destination).map_err(damaged)? {
            return Err(format!("holds the unsafe path {path:?}"));
        }
    }
    // Whatever follows the tar's end, the gzip stream must end whole (its checksum checked).
    let mut decoder = tar.into_inner();
    io::copy(&mut decoder, &mut io::sink()).map_err(damaged)?;
    Ok(())
}

/// Whether `path` is relative and names no parent (`.` components are allowed).
fn is_plain_relative(path: &Path) -> bool {
    path.components()
        .all(|component| matches!(component, Component::Normal(_) | Component::CurDir))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_and_the_archive_unpacks_to_the_same_files() {
        let scratch = tempfile::tempdir().unwrap();
        let staging = scratch.path().join("staging");
        fs::create_dir_all(staging.join("indexes/movies")).unwrap();
        fs::write(staging.join("metadata.json"), "{}").unwrap();
        fs::write(staging.join("indexes/movies/documents.jsonl.part-1"), "b\n").unwrap();
        fs::write(staging.join("indexes/movies/documents.jsonl.part-0"), "a\n").unwrap();
        fs::write(staging.join("indexes/movies/documents.jsonl.part-10"), "c\n").unwrap();
        let temporary = scratch.path().join("x.dump.tmp");
        let destination = scratch.path().join("x.dump");
        write_archive(&staging, &temporary, &destination).unwrap();
        assert!(!temporary.exists());
        let unpacked = scratch.path().join("unpacked");
        fs::create_dir(&unpacked).unwrap();
        unpack_archive(&destination, &unpacked).unwrap();
        assert_eq!(
            fs::read_to_string(unpacked.join("indexes/movies/documents.jsonl")).unwrap(),
            "a\nb\nc\n"
        );
        assert_eq!(
            fs::read_to_string(unpacked.join("metadata.json")).unwrap(),
            "{}"
        );
    }

    #[test]
    fn a_truncated_archive_is_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let staging = scratch.path().join("staging");
        fs::create_dir_all(&staging).unwrap();
        let text: String = (0..20_000).map(|n| format!("{{\"id\":{n}}}\n")).collect();
        fs::write(staging.join("documents.jsonl"), text).unwrap();
        let destination = scratch.path().join("x.dump");
        write_archive(&staging, &scratch.path().join("t"), &destination).unwrap();
        let bytes = fs::read(&destination).unwrap();
        for keep in [bytes.len() - 4, bytes.len() / 2, 10] {
            let truncated = scratch.path().join("truncated.dump");
            fs::write(&truncated, &bytes[..keep]).unwrap();
            let unpacked = tempfile::tempdir().unwrap();
            let error = unpack_archive(&truncated, unpacked.path()).unwrap_err();
            assert!(error.contains("damaged or truncated"), "{keep}: {error}");
        }
    }
}
