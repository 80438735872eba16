//! A vector file: a 64-byte header, then fixed-stride records (see `records`) packed densely,
//! record `r` at byte `VECTOR_FILE_HEADER_BYTES + r * stride` — no page rounding.
//!
//! Header: magic `CSVECT01`, then `u32` LE format version, payload kind (0 floats, 1 codes, 2
//! centred codes), dimensions and stride, zero to 64 bytes.
//!
//! Format versions: 2 (written for new files) keeps every float vector exactly as inserted,
//! cosine ones with their scale word (see `records`); 1 (older files, still opened and
//! appended to) keeps cosine float vectors normalised with a 0 scale word. Readers need not
//! tell them apart (a 0 word reads as scale 1.0); writers do: a record appended to a file
//! follows the file's format (`holds_originals`), so a format-1 file stays one for any reader.
//! Code records are the same in both. Every other header field must match exactly.
//!
//! Crash safety: records are only appended, at numbers at or past the committed record count
//! (kept in the graph's state in the page store), and the file is synced before the page store
//! commit that raises that count. So every committed record is durable, no committed record is
//! ever rewritten (readers of old snapshots stay valid), and bytes past the committed count —
//! left by a crash or an aborted transaction — are ignored and later overwritten.
//!
//! Reads go through the backend's stable mapping (`PageIo::read`), zero-copy. The file backend
//! also keeps a plain descriptor for batched io_uring reads of records that are not resident.
//! A file opened for a graph with `prefetch_memory` also keeps a copy of its committed records
//! on huge pages (`memory_copy`), which committed snapshots read instead of the mapping
//! (`committed_records`); the writer keeps reading the mapping, which also holds records not
//! yet committed.

use super::memory_copy::MemoryCopy;
use super::resident::ResidentPages;
use super::uring;
use crate::io::{FileIo, PageIo};
use crate::vector::error::VectorError;
use crate::vector::records::{
    PayloadKind, RECORD_HEADER_BYTES, RecordLayout, RecordStore, scale_of_record, view_codes,
    view_floats,
};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes before the first record.
pub const VECTOR_FILE_HEADER_BYTES: u64 = 64;
/// The file grows by whole, aligned steps of this size (one huge page of x86-64), each
/// filled with zeros in one write (see [`VectorFile::write_record`]).
pub const VECTOR_FILE_GROWTH_BYTES: u64 = 2 << 20;
/// The most a vector file may grow to: a limit, not a reservation (the mapping follows the
/// file in generations, see `io::FileIo`), so the disk bounds a vector file.
pub const VECTOR_FILE_CAPACITY_BYTES: u64 = 1 << 46;
/// A search copies at most this much of the records committed since the last copy into the
/// memory copy (a few milliseconds of `memcpy`), so no query pays for a whole large commit.
pub const COPY_STEP_BYTES: usize = 16 << 20;
/// First bytes of every vector file.
const MAGIC: [u8; 8] = *b"CSVECT01";
/// Format version written for new files: float records keep vectors as inserted.
pub const FORMAT_VERSION: u32 = 2;
/// The older format, still opened: cosine float records keep normalised vectors.
pub const FORMAT_VERSION_NORMALISED: u32 = 1;
/// Bytes of the header before the format version (the magic).
const VERSION_OFFSET_BYTES: usize = 8;

/// One open vector file.
pub struct VectorFile {
    io: Box<dyn PageIo>,
    layout: RecordLayout,
    direct: Option<File>,
    uring_reads: AtomicU64,
    /// Pages seen resident (re-scoring checks these before asking the kernel).
    resident: ResidentPages,
    /// Committed records in memory, when kept (see `keep_memory_copy`).
    copy: Option<MemoryCopy>,
    /// The file's format version (`FORMAT_VERSION` or `FORMAT_VERSION_NORMALISED`).
    format_version: u32,
}

impl VectorFile {
    /// Opens or creates the vector file at `path` for records of `layout`.
    pub fn open_path(path: &Path, layout: RecordLayout) -> Result<Self, VectorError> {
        let io = FileIo::open(path, true, VECTOR_FILE_CAPACITY_BYTES)?;
        let direct = File::open(path)?;
        Self::open_io_with_direct(Box::new(io), layout, Some(direct))
    }

    /// Opens or creates a vector file over any backend (the simulated one in tests).
    pub fn open_io(io: Box<dyn PageIo>, layout: RecordLayout) -> Result<Self, VectorError> {
        Self::open_io_with_direct(io, layout, None)
    }

    fn open_io_with_direct(
        io: Box<dyn PageIo>,
        layout: RecordLayout,
        direct: Option<File>,
    ) -> Result<Self, VectorError> {
        Self::open_or_create(io, layout, direct, FORMAT_VERSION)
    }

    /// Opens the file of `io` (version 1 or 2), or creates it with format `new_version`.
    fn open_or_create(
        io: Box<dyn PageIo>,
        layout: RecordLayout,
        direct: Option<File>,
        new_version: u32,
    ) -> Result<Self, VectorError> {
        let mut file = Self {
            io,
            layout,
            direct,
            uring_reads: AtomicU64::new(0),
            resident: ResidentPages::new(),
            copy: None,
            format_version: new_version,
        };
        if file.io.length() == 0 {
            file.io.grow(VECTOR_FILE_HEADER_BYTES)?;
            file.io.write(0, &file.header())?;
            file.io.sync()?;
            return Ok(file);
        }
        let stored = file.stored_header()?;
        let version_bytes = VERSION_OFFSET_BYTES..VERSION_OFFSET_BYTES + size_of::<u32>();
        let version_word: [u8; 4] = stored[version_bytes.clone()]
            .try_into()
            .expect("the header holds the version");
        let version = u32::from_le_bytes(version_word);
        if version != FORMAT_VERSION && version != FORMAT_VERSION_NORMALISED {
            return Err(VectorError::Corrupted(format!(
                "vector file format version {version} is not supported"
            )));
        }
        file.format_version = version;
        if stored != file.header() {
            return Err(VectorError::Corrupted(
                "vector file header does not match".into(),
            ));
        }
        Ok(file)
    }

    /// Opens or creates a format-1 vector file (tests of files written before format 2).
    #[cfg(test)]
    pub(crate) fn open_io_normalised(
        io: Box<dyn PageIo>,
        layout: RecordLayout,
    ) -> Result<Self, VectorError> {
        Self::open_or_create(io, layout, None, FORMAT_VERSION_NORMALISED)
    }

    /// The header as stored. Read with a plain read when possible: a fault on the mapping
    /// would make the kernel read around it and load records nobody asked for.
    fn stored_header(&self) -> Result<[u8; VECTOR_FILE_HEADER_BYTES as usize], VectorError> {
        let mut header = [0_u8; VECTOR_FILE_HEADER_BYTES as usize];
        if self.io.length() < VECTOR_FILE_HEADER_BYTES {
            return Err(VectorError::Corrupted(
                "vector file shorter than its header".into(),
            ));
        }
        match &self.direct {
            Some(direct) => direct.read_exact_at(&mut header, 0)?,
            None => header.copy_from_slice(
                self.io
                    .read(0, VECTOR_FILE_HEADER_BYTES as usize)
                    .ok_or_else(|| {
                        VectorError::Corrupted("vector file header unreadable".into())
                    })?,
            ),
        }
        Ok(header)
    }

    fn header(&self) -> [u8; VECTOR_FILE_HEADER_BYTES as usize] {
        let mut header = [0_u8; VECTOR_FILE_HEADER_BYTES as usize];
        header[..8].copy_from_slice(&MAGIC);
        header[VERSION_OFFSET_BYTES..VERSION_OFFSET_BYTES + size_of::<u32>()]
            .copy_from_slice(&self.format_version.to_le_bytes());
        let kind: u32 = match self.layout.kind {
            PayloadKind::Floats => 0,
            PayloadKind::Codes => 1,
            PayloadKind::CentredCodes => 2,
        };
        header[12..16].copy_from_slice(&kind.to_le_bytes());
        let dimensions = u32::try_from(self.layout.dimensions).unwrap_or(u32::MAX);
        header[16..20].copy_from_slice(&dimensions.to_le_bytes());
        let stride = u32::try_from(self.layout.stride()).unwrap_or(u32::MAX);
        header[20..24].copy_from_slice(&stride.to_le_bytes());
        header
    }

    /// The record layout.
    pub fn layout(&self) -> RecordLayout {
        self.layout
    }

    /// The file's format version (see the module documentation).
    pub fn format_version(&self) -> u32 {
        self.format_version
    }

    /// Whether the file's float records keep every vector exactly as inserted (format 2 of
    /// float records); records appended to it must then be encoded from the inserted vector
    /// with its scale word, else (format 1) from the prepared vector with a 0 word.
    pub fn holds_originals(&self) -> bool {
        self.layout.kind == PayloadKind::Floats && self.format_version == FORMAT_VERSION
    }

    /// Byte offset of record `record`.
    pub fn record_offset(&self, record: u32) -> u64 {
        VECTOR_FILE_HEADER_BYTES + u64::from(record) * self.layout.stride() as u64
    }

    /// Bytes used by the header and `count` records (the file may be longer by growth slack).
    pub fn logical_bytes(&self, count: u32) -> u64 {
        self.record_offset(count)
    }

    /// Current length of the file.
    pub fn file_bytes(&self) -> u64 {
        self.io.length()
    }

    /// Fails with `Corrupted` unless records `0..count` lie within the file.
    pub fn ensure_records(&self, count: u32) -> Result<(), VectorError> {
        if self.io.length() < self.logical_bytes(count) {
            return Err(VectorError::Corrupted(format!(
                "vector file holds fewer than its {count} committed records"
            )));
        }
        Ok(())
    }

    /// Writes one encoded record (`stride` bytes) as record `record`, growing the file.
    pub fn write_record(&self, record: u32, bytes: &[u8]) -> Result<(), VectorError> {
        assert_eq!(bytes.len(), self.layout.stride(), "one whole record");
        let offset = self.record_offset(record);
        let end = offset + bytes.len() as u64;
        if end > self.io.length() {
            self.grow_filled(end)?;
        }
        Ok(self.io.write(offset, bytes)?)
    }

    /// Grows the file past `end` by whole growth steps, writing each new step's zeros in one
    /// write before any record lands in it.
    ///
    /// Why write zeros the file would read as anyway: the page cache sizes a page's memory
    /// (its folio) when a write first creates it. Records appended one by one (hundreds of
    /// bytes each) create 4 KiB folios; one 2 MiB write creates large ones, and the records
    /// written afterwards land in them. Searches then read the vectors 15 % faster
    /// (`tuning/results/vector-store-2026-11-24.md`), the speed a file read back from disk
    /// had and a freshly built one lacked. Bytes past the committed records are never read,
    /// so their zeros change nothing else.
    fn grow_filled(&self, end: u64) -> Result<(), VectorError> {
        let start = self.io.length();
        let length = end.next_multiple_of(VECTOR_FILE_GROWTH_BYTES);
        self.io.grow(length)?;
        let zeros = vec![0_u8; VECTOR_FILE_GROWTH_BYTES as usize];
        let mut offset = start;
        while offset < length {
            // Up to the next step boundary, so every later write covers one aligned step.
            let boundary = (offset / VECTOR_FILE_GROWTH_BYTES + 1) * VECTOR_FILE_GROWTH_BYTES;
            let step = boundary.min(length) - offset;
            self.io.write(offset, &zeros[..step as usize])?;
            offset += step;
        }
        Ok(())
    }

    /// Makes every written record durable.
    pub fn sync(&self) -> Result<(), VectorError> {
        Ok(self.io.sync()?)
    }

    /// Records `0..count` (the caller checked them with `ensure_records`), read through the
    /// mapping.
    pub fn records(&self, count: u32) -> FileRecords<'_> {
        let length = usize::try_from(self.logical_bytes(count)).expect("mapped files fit memory");
        let bytes = self
            .io
            .read(0, length)
            .expect("records below the committed count lie within the file (ensure_records)");
        self.records_in(bytes, count)
    }

    /// Records `0..count` of a committed snapshot: from the memory copy when one is kept and
    /// holds them, else as `records`. Each call first copies up to `COPY_STEP_BYTES` of the
    /// records committed since (so a search after a large commit pays a bounded copy, and
    /// the searches after it catch up), unless another thread is copying. A copy that cannot
    /// grow (out of address space or memory) leaves reads on the mapping for good.
    ///
    /// Contract: `count` is a committed snapshot's record count (never the writer's, whose
    /// records past the committed count may still be overwritten).
    pub(crate) fn committed_records(&self, count: u32) -> FileRecords<'_> {
        let mapped = self.records(count);
        match &self.copy {
            Some(copy) if self.copy_committed(mapped.bytes, COPY_STEP_BYTES) => copy
                .prefix(mapped.bytes.len())
                .map_or(mapped, |bytes| self.records_in(bytes, count)),
            _ => mapped,
        }
    }

    /// Extends the memory copy (if kept) toward `committed`, the mapping's bytes of a
    /// committed snapshot, by at most `step` bytes (waiting for another thread's copy only
    /// when `step` is unbounded), then drops the newly copied pages from this process's
    /// mapping: the page cache keeps them (clean, reclaimable), but they no longer count in
    /// the process's resident memory twice, and a later read through the mapping (the
    /// writer's) maps them again. Returns whether the copy now holds all of `committed`.
    fn copy_committed(&self, committed: &[u8], step: usize) -> bool {
        let Some(copy) = &self.copy else {
            return false;
        };
        let before = copy.copied_bytes();
        if committed.len() <= before {
            return true;
        }
        let target = committed.len().min(before.saturating_add(step));
        let wait = step == usize::MAX;
        if !copy.extend_to(&committed[..target], wait) {
            return false;
        }
        let page = uring::page_bytes();
        let start = before - before % page;
        let end = target - target % page;
        if end > start {
            // Only advice: failing to drop the pages leaves them mapped, nothing else.
            let _ = self.io.unmap_resident(start as u64, (end - start) as u64);
        }
        target == committed.len()
    }

    /// Bytes held by the memory copy (0 without one).
    pub fn memory_copy_bytes(&self) -> usize {
        self.copy.as_ref().map_or(0, MemoryCopy::copied_bytes)
    }

    fn records_in<'a>(&'a self, bytes: &'a [u8], count: u32) -> FileRecords<'a> {
        FileRecords {
            file: self,
            bytes,
            stride: self.layout.stride(),
            payload_bytes: self.layout.payload_bytes(),
            count,
        }
    }

    /// The descriptor used for batched reads, when the backend is a real file.
    pub fn direct(&self) -> Option<&File> {
        self.direct.as_ref()
    }

    /// Whether record `record` (its bytes `bytes` in the mapping) is resident, from the memo
    /// of pages seen resident or from the kernel (see `resident`).
    pub fn is_record_resident(&self, record: u32, bytes: &[u8]) -> bool {
        self.resident.check(self.record_offset(record), bytes)
    }

    /// Records read through io_uring so far (not resident when needed).
    pub fn uring_reads(&self) -> u64 {
        self.uring_reads.load(Ordering::Relaxed)
    }

    /// Reads records by number through io_uring into `out` (one `stride`-long buffer each).
    pub fn read_records_batched(
        &self,
        records: &[u32],
        out: &mut Vec<Vec<u64>>,
    ) -> Result<(), VectorError> {
        let direct = self.direct.as_ref().ok_or_else(|| {
            VectorError::Io(std::io::Error::other("batched reads need a file backend"))
        })?;
        let offsets: Vec<u64> = records
            .iter()
            .map(|record| self.record_offset(*record))
            .collect();
        uring::read_batch(direct, &offsets, self.layout.stride(), out)?;
        self.uring_reads
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// From now on, keeps committed records in memory on huge pages (see `memory_copy`), copied
    /// as committed snapshots first read them.
    pub fn keep_memory_copy(&mut self) -> Result<(), VectorError> {
        let capacity = self
            .io
            .capacity()
            .min(MemoryCopy::capacity_for_this_machine());
        self.copy = Some(MemoryCopy::reserve(capacity)?);
        Ok(())
    }

    /// Loads the first `count` records into memory: `madvise(WILLNEED)` on the range, then
    /// into the memory copy when one is kept, else one read per page so that the pages are
    /// resident before the first search. Only for committed records.
    pub(crate) fn prefetch(&self, count: u32) -> u64 {
        let length = self.logical_bytes(count);
        let Some(bytes) = usize::try_from(length)
            .ok()
            .and_then(|length| self.io.read(0, length))
        else {
            return 0;
        };
        uring::advise_will_need(bytes);
        if self.copy_committed(bytes, usize::MAX) {
            return length;
        }
        let mut checksum = 0_u64;
        for page in bytes.chunks(uring::page_bytes()) {
            checksum = checksum.wrapping_add(u64::from(page[0]));
        }
        std::hint::black_box(checksum);
        length
    }
}

/// Records `0..count` of a vector file.
#[derive(Clone, Copy)]
pub struct FileRecords<'a> {
    file: &'a VectorFile,
    /// The header and records `0..count`, from the backend's stable mapping or from the
    /// memory copy (`committed_records`).
    bytes: &'a [u8],
    stride: usize,
    payload_bytes: usize,
    count: u32,
}

impl FileRecords<'_> {
    /// The file.
    pub fn file(&self) -> &VectorFile {
        self.file
    }
}

impl RecordStore for FileRecords<'_> {
    fn layout(&self) -> RecordLayout {
        self.file.layout
    }

    fn record_count(&self) -> u32 {
        self.count
    }

    #[inline]
    fn contiguous_records(&self) -> Option<&[u8]> {
        self.bytes.get(VECTOR_FILE_HEADER_BYTES as usize..)
    }

    #[inline]
    fn record_bytes(&self, record: u32) -> &[u8] {
        let start = VECTOR_FILE_HEADER_BYTES as usize + record as usize * self.stride;
        &self.bytes[start..start + self.stride]
    }

    #[inline]
    fn floats(&self, record: u32) -> &[f32] {
        let start =
            VECTOR_FILE_HEADER_BYTES as usize + record as usize * self.stride + RECORD_HEADER_BYTES;
        view_floats(&self.bytes[start..start + self.payload_bytes])
    }

    #[inline]
    fn scale(&self, record: u32) -> f32 {
        let start = VECTOR_FILE_HEADER_BYTES as usize + record as usize * self.stride;
        scale_of_record(&self.bytes[start..start + RECORD_HEADER_BYTES])
    }

    #[inline]
    fn codes(&self, record: u32) -> &[u64] {
        let start =
            VECTOR_FILE_HEADER_BYTES as usize + record as usize * self.stride + RECORD_HEADER_BYTES;
        view_codes(&self.bytes[start..start + self.payload_bytes])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::records::encode_record;

    const DIMENSIONS: usize = 128;

    fn vector_of(record: u32) -> Vec<f32> {
        (0..DIMENSIONS)
            .map(|dimension| record as f32 + dimension as f32 / 1000.0)
            .collect()
    }

    #[test]
    fn records_across_growth_steps_read_back_as_written_and_the_file_grows_in_whole_steps() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let layout = RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: DIMENSIONS,
        };
        let file =
            VectorFile::open_path(&directory.path().join("vectors"), layout).expect("vector file");
        // Enough records to cross two growth steps.
        let count = u32::try_from(2 * VECTOR_FILE_GROWTH_BYTES / layout.stride() as u64 + 10)
            .expect("few records");
        let mut encoded = Vec::new();
        for record in 0..count {
            encoded.clear();
            encode_record(layout, record, 0, &vector_of(record), &mut encoded);
            file.write_record(record, &encoded).expect("write");
            assert_eq!(
                file.file_bytes() % VECTOR_FILE_GROWTH_BYTES,
                0,
                "the file grows by whole steps"
            );
            assert!(file.file_bytes() >= file.logical_bytes(record + 1));
        }
        assert_eq!(file.file_bytes(), 3 * VECTOR_FILE_GROWTH_BYTES);
        file.ensure_records(count)
            .expect("every record lies in the file");
        let records = file.records(count);
        for record in [0, 1, count / 2, count - 1] {
            assert_eq!(records.floats(record), vector_of(record).as_slice());
        }
    }

    #[test]
    fn files_of_format_1_and_2_open_with_their_version_and_other_versions_are_refused() {
        use crate::io::SimulatedIo;
        let layout = RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: 4,
        };
        let open = |io: &SimulatedIo, layout| VectorFile::open_io(Box::new(io.clone()), layout);
        // New files are of format 2 and hold originals (floats only).
        let new = SimulatedIo::new(1 << 20, 1);
        let file = open(&new, layout).expect("a new file is created");
        assert_eq!(file.format_version(), FORMAT_VERSION);
        assert!(file.holds_originals());
        drop(file);
        let file = open(&new, layout).expect("a format-2 file reopens");
        assert_eq!(file.format_version(), FORMAT_VERSION);
        let codes = RecordLayout {
            kind: PayloadKind::Codes,
            dimensions: 4,
        };
        let code_file = open(&SimulatedIo::new(1 << 20, 2), codes).expect("codes");
        assert!(!code_file.holds_originals(), "codes are no originals");
        // A format-1 file reopens as one, with its header as versions before 2 wrote it.
        let old = SimulatedIo::new(1 << 20, 3);
        drop(VectorFile::open_io_normalised(Box::new(old.clone()), layout).expect("created"));
        let file = open(&old, layout).expect("a format-1 file opens");
        assert_eq!(file.format_version(), FORMAT_VERSION_NORMALISED);
        assert!(!file.holds_originals());
        let header = old
            .read(0, VECTOR_FILE_HEADER_BYTES as usize)
            .expect("header");
        assert_eq!(&header[..8], b"CSVECT01");
        assert_eq!(header[8..12], 1_u32.to_le_bytes());
        assert_eq!(header[12..16], 0_u32.to_le_bytes());
        assert_eq!(header[16..20], 4_u32.to_le_bytes());
        assert_eq!(header[20..24], 24_u32.to_le_bytes());
        assert!(header[24..].iter().all(|byte| *byte == 0));
        drop(file);
        // Only the version may differ from the expected header, and only to 1 or 2.
        let other_dimensions = RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: 5,
        };
        assert!(open(&old, other_dimensions).is_err());
        for version in [0_u32, 3, u32::MAX] {
            old.write(8, &version.to_le_bytes()).expect("patch");
            assert!(open(&old, layout).is_err(), "version {version}");
        }
    }
}
