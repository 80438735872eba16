//! The `.dump` archive: a directory laid out as [`super::layout`] says, as a tar stream
//! compressed with gzip — written from a staging directory, and unpacked into one.
//!
//! Writing: the staging directory is archived in name order; a file named `X.part-N` is
//! piece `N` of the JSON lines file `X` (each shard of an index writes its documents as one
//! piece), and the pieces go into the archive as the one file `X`. When every piece `N` has
//! its order file `X.order-N` (one little-endian `u32` per line: the document's internal
//! id, increasing), the lines are merged in internal id order — the order of the index, so
//! an import assigns ids in the same order and ties rank the same — otherwise they follow
//! one another in piece order. The archive is written
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
/// The marker of the order file of a piece.
const ORDER_MARKER: &str = ".order-";
/// The bytes of one entry of an order file.
const ORDER_ENTRY_BYTES: usize = 4;

/// The staging name of piece `piece` of the file `name`.
pub fn piece_name(name: &str, piece: u32) -> String {
    format!("{name}{PIECE_MARKER}{piece}")
}

/// The staging name of the order file of piece `piece` of the file `name`.
pub fn order_name(name: &str, piece: u32) -> String {
    format!("{name}{ORDER_MARKER}{piece}")
}

/// Whether the archive must stop (a cancelation): asked between files and between chunks.
pub type StopCheck<'check> = dyn Fn() -> bool + Sync + 'check;

/// The error of an archive stopped by its [`StopCheck`].
fn stopped_error() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "the dump was stopped")
}

/// Archives `staging` into `temporary` (synced), then renames it to `destination` and syncs
/// the directory; stops with an `Interrupted` error once `stopped` says so.
pub fn write_archive(
    staging: &Path,
    temporary: &Path,
    destination: &Path,
    stopped: &StopCheck<'_>,
) -> io::Result<()> {
    let file = File::create(temporary)?;
    let encoder = GzEncoder::new(
        BufWriter::with_capacity(ARCHIVE_BUFFER_BYTES, file),
        Compression::new(DUMP_COMPRESSION_LEVEL),
    );
    let mut builder = tar::Builder::new(encoder);
    builder.mode(tar::HeaderMode::Deterministic);
    append_directory(&mut builder, staging, Path::new(""), stopped)?;
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
    stopped: &StopCheck<'_>,
) -> io::Result<()> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root.join(relative))? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let mut pieces: BTreeMap<String, Vec<(u32, PathBuf)>> = BTreeMap::new();
    for name in names {
        if stopped() {
            return Err(stopped_error());
        }
        let path = root.join(relative).join(&name);
        let inside = relative.join(&name);
        if path.is_dir() {
            builder.append_dir(&inside, &path)?;
            append_directory(builder, root, &inside, stopped)?;
        } else if let Some((whole, piece)) = split_marked(&name, PIECE_MARKER) {
            pieces.entry(whole).or_default().push((piece, path));
        } else if split_marked(&name, ORDER_MARKER).is_none() {
            builder.append_path_with_name(&path, &inside)?;
        }
    }
    for (whole, mut parts) in pieces {
        parts.sort();
        let mut size = 0;
        for (_, path) in &parts {
            size += fs::metadata(path)?.len();
        }
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(size);
        header.set_mode(0o644);
        let orders: Vec<PathBuf> = parts
            .iter()
            .map(|(piece, path)| path.with_file_name(order_name(&whole, *piece)))
            .collect();
        let paths: Vec<PathBuf> = parts.into_iter().map(|(_, path)| path).collect();
        let inside = relative.join(&whole);
        if orders.iter().all(|order| order.is_file()) {
            let merged = MergedLines::open(&paths, &orders)?;
            builder.append_data(
                &mut header,
                inside,
                Stoppable {
                    inner: merged,
                    stopped,
                },
            )?;
        } else {
            let pieces = Pieces::new(paths);
            builder.append_data(
                &mut header,
                inside,
                Stoppable {
                    inner: pieces,
                    stopped,
                },
            )?;
        }
    }
    Ok(())
}

/// `X<marker>N` as (`X`, `N`).
fn split_marked(name: &str, marker: &str) -> Option<(String, u32)> {
    let (whole, piece) = name.rsplit_once(marker)?;
    Some((whole.to_owned(), piece.parse().ok()?))
}

/// One piece being merged: its lines, its order, and its next line.
struct OrderedPiece {
    lines: BufReader<File>,
    order: BufReader<File>,
    /// The internal id and bytes of the piece's next line, `None` once it is exhausted.
    next: Option<(u32, Vec<u8>)>,
}

impl OrderedPiece {
    fn advance(&mut self) -> io::Result<()> {
        let mut id = [0; ORDER_ENTRY_BYTES];
        match self.order.read_exact(&mut id) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                self.next = None;
                return Ok(());
            }
            Err(error) => return Err(error),
        }
        let mut line = Vec::new();
        std::io::BufRead::read_until(&mut self.lines, b'\n', &mut line)?;
        if line.is_empty() {
            return Err(io::Error::other(
                "an order file names more lines than its piece has",
            ));
        }
        self.next = Some((u32::from_le_bytes(id), line));
        Ok(())
    }
}

/// The lines of several pieces merged by the internal ids of their order files.
struct MergedLines {
    pieces: Vec<OrderedPiece>,
    /// The line being handed out, and how much of it was.
    pending: Vec<u8>,
    handed: usize,
}

impl MergedLines {
    fn open(paths: &[PathBuf], orders: &[PathBuf]) -> io::Result<MergedLines> {
        let mut pieces = Vec::with_capacity(paths.len());
        for (path, order) in paths.iter().zip(orders) {
            let mut piece = OrderedPiece {
                lines: BufReader::with_capacity(ARCHIVE_BUFFER_BYTES, File::open(path)?),
                order: BufReader::new(File::open(order)?),
                next: None,
            };
            piece.advance()?;
            pieces.push(piece);
        }
        Ok(MergedLines {
            pieces,
            pending: Vec::new(),
            handed: 0,
        })
    }
}

impl Read for MergedLines {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.handed == self.pending.len() {
            let smallest = self
                .pieces
                .iter_mut()
                .filter(|piece| piece.next.is_some())
                .min_by_key(|piece| piece.next.as_ref().map(|(id, _)| *id));
            let Some(piece) = smallest else {
                return Ok(0);
            };
            let (_, line) = piece.next.take().expect("the piece has a next line");
            piece.advance()?;
            self.pending = line;
            self.handed = 0;
        }
        let count = buffer.len().min(self.pending.len() - self.handed);
        buffer[..count].copy_from_slice(&self.pending[self.handed..self.handed + count]);
        self.handed += count;
        Ok(count)
    }
}

/// A reader that fails once its [`StopCheck`] says to stop.
struct Stoppable<'stop, R> {
    inner: R,
    stopped: &'stop StopCheck<'stop>,
}

impl<R: Read> Read for Stoppable<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if (self.stopped)() {
            return Err(stopped_error());
        }
        self.inner.read(buffer)
    }
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
        fs::write(
            staging.join("indexes/movies/documents.jsonl.part-10"),
            "c\n",
        )
        .unwrap();
        fs::create_dir_all(staging.join("merged")).unwrap();
        fs::write(staging.join("merged/d.part-0"), "a\nc\nd\n").unwrap();
        fs::write(staging.join("merged/d.part-1"), "b\ne\n").unwrap();
        let ids = |ids: &[u32]| -> Vec<u8> { ids.iter().flat_map(|id| id.to_le_bytes()).collect() };
        fs::write(staging.join("merged/d.order-0"), ids(&[0, 5, 7])).unwrap();
        fs::write(staging.join("merged/d.order-1"), ids(&[2, 9])).unwrap();
        let temporary = scratch.path().join("x.dump.tmp");
        let destination = scratch.path().join("x.dump");
        write_archive(&staging, &temporary, &destination, &|| false).unwrap();
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
        assert_eq!(
            fs::read_to_string(unpacked.join("merged/d")).unwrap(),
            "a\nb\nc\nd\ne\n"
        );
        assert!(!unpacked.join("merged/d.order-0").exists());
    }

    #[test]
    fn a_truncated_archive_is_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let staging = scratch.path().join("staging");
        fs::create_dir_all(&staging).unwrap();
        let text: String = (0..20_000).map(|n| format!("{{\"id\":{n}}}\n")).collect();
        fs::write(staging.join("documents.jsonl"), text).unwrap();
        let destination = scratch.path().join("x.dump");
        write_archive(&staging, &scratch.path().join("t"), &destination, &|| false).unwrap();
        let stopped = write_archive(
            &staging,
            &scratch.path().join("s"),
            &scratch.path().join("s.dump"),
            &|| true,
        );
        assert_eq!(stopped.unwrap_err().kind(), io::ErrorKind::Interrupted);
        assert!(!scratch.path().join("s.dump").exists());
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
