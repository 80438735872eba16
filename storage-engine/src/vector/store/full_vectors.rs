//! Re-scoring reads of full-precision vectors from a vector file: records whose pages are
//! resident (seen so before, or per `mincore`; see `resident`) are read in place through the
//! mapping; the others are read together in one
//! batch through io_uring instead of faulting them in one page at a time.
//!
//! Invariant: the distances returned are exactly those computed from the stored vectors,
//! whichever way they were read.

use super::vector_file::FileRecords;
use crate::vector::distance::Metric;
use crate::vector::error::VectorError;
use crate::vector::records::{RECORD_HEADER_BYTES, RecordStore, view_floats};
use crate::vector::searching::FullVectors;

/// Full vectors of a vector file.
pub struct FileVectors<'a> {
    /// The float records.
    pub records: FileRecords<'a>,
}

impl FullVectors for FileVectors<'_> {
    fn distances(
        &self,
        metric: Metric,
        query: &[f32],
        records: &[u32],
    ) -> Result<Vec<f32>, VectorError> {
        let mut distances = vec![0.0_f32; records.len()];
        let mut missing_positions = Vec::new();
        let mut missing_records = Vec::new();
        let batched = self.records.file().direct().is_some();
        for (position, &record) in records.iter().enumerate() {
            let bytes = self.records.record_bytes(record);
            if batched && !self.records.file().is_record_resident(record, bytes) {
                missing_positions.push(position);
                missing_records.push(record);
            } else {
                distances[position] = metric.distance(query, self.records.floats(record));
            }
        }
        if missing_records.is_empty() {
            return Ok(distances);
        }
        let mut buffers = Vec::new();
        self.records
            .file()
            .read_records_batched(&missing_records, &mut buffers)?;
        let payload_bytes = self.records.layout().payload_bytes();
        for (position, buffer) in missing_positions.into_iter().zip(&buffers) {
            // SAFETY: a u64 slice is a valid byte slice of eight times its length.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    buffer.as_ptr().cast::<u8>(),
                    size_of_val(buffer.as_slice()),
                )
            };
            let payload = &bytes[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + payload_bytes];
            distances[position] = metric.distance(query, view_floats(payload));
        }
        Ok(distances)
    }
}

/// The full vectors a graph search reads: in place from the navigation records (full-precision
/// graphs, already being read through the mapping), or from the separate full-vector file with
/// batched reads of non-resident records (binary-quantized graphs).
pub enum GraphVectors<'a> {
    /// The navigation records are the full vectors (read in place: through the mapping, or
    /// from the memory copy for a committed snapshot that has one).
    Mapped(FileRecords<'a>),
    /// A separate full-vector file.
    Batched(FileVectors<'a>),
}

impl FullVectors for GraphVectors<'_> {
    fn distances(
        &self,
        metric: Metric,
        query: &[f32],
        records: &[u32],
    ) -> Result<Vec<f32>, VectorError> {
        match self {
            GraphVectors::Mapped(file_records) => Ok(records
                .iter()
                .map(|&record| metric.distance(query, file_records.floats(record)))
                .collect()),
            GraphVectors::Batched(vectors) => vectors.distances(metric, query, records),
        }
    }
}
