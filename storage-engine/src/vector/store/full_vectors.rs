//! Re-scoring reads of full-precision vectors from a vector file: records whose pages are
//! resident (seen so before, or per `mincore`; see `resident`) are read in place through the
//! mapping; the others are read together in one
//! batch through io_uring instead of faulting them in one page at a time.
//!
//! Resident records are read in request order with the whole record
//! [`RESCORE_PREFETCH_AHEAD`] places ahead being loaded, so the memory loads of the next
//! records overlap the distance of the current one (a 384-float record is 24 cache lines).
//!
//! Invariant: the distances returned are exactly those computed from the stored vectors and
//! their scales (`Metric::scaled_distance`; a batched read holds the record's header, so the
//! scale comes with the vector), whichever way they were read.

use super::vector_file::FileRecords;
use crate::vector::distance::Metric;
use crate::vector::error::VectorError;
use crate::vector::kernels;
use crate::vector::records::{RECORD_HEADER_BYTES, RecordStore, scale_of_record, view_floats};
use crate::vector::searching::FullVectors;

/// How many records ahead of the one being re-scored are prefetched.
pub const RESCORE_PREFETCH_AHEAD: usize = 2;
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
        for &record in records.iter().take(RESCORE_PREFETCH_AHEAD) {
            kernels::prefetch(self.records.record_bytes(record));
        }
        for (position, &record) in records.iter().enumerate() {
            if let Some(&ahead) = records.get(position + RESCORE_PREFETCH_AHEAD) {
                kernels::prefetch(self.records.record_bytes(ahead));
            }
            let bytes = self.records.record_bytes(record);
            if batched && !self.records.file().is_record_resident(record, bytes) {
                missing_positions.push(position);
                missing_records.push(record);
            } else {
                distances[position] = metric.scaled_distance(
                    query,
                    self.records.floats(record),
                    self.records.scale(record),
                );
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
            distances[position] =
                metric.scaled_distance(query, view_floats(payload), scale_of_record(bytes));
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
                .map(|&record| {
                    metric.scaled_distance(
                        query,
                        file_records.floats(record),
                        file_records.scale(record),
                    )
                })
                .collect()),
            GraphVectors::Batched(vectors) => vectors.distances(metric, query, records),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{PageIo, SimulatedIo};
    use crate::vector::random::SplitMix64;
    use crate::vector::records::{PayloadKind, RecordLayout, encode_record};
    use crate::vector::searching::RecordVectors;
    use crate::vector::space::{Query, Space};
    use crate::vector::store::vector_file::VectorFile;

    /// Bytes the simulated file may grow to.
    const SIMULATED_FILE_BYTES: usize = 4 << 20;

    #[test]
    fn every_way_of_reading_full_vectors_scores_like_the_space() {
        let seed = 61;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let dimensions = 19;
        let layout = RecordLayout {
            kind: PayloadKind::Floats,
            dimensions,
        };
        for metric in [Metric::Cosine, Metric::Euclidean, Metric::DotProduct] {
            let io = SimulatedIo::new(SIMULATED_FILE_BYTES, seed);
            let file = VectorFile::open_io(Box::new(io) as Box<dyn PageIo>, layout)
                .expect("the file opens");
            let count = 40;
            let mut bytes = Vec::new();
            for record in 0..count {
                let spread = [0.01, 1.0, 300.0][record as usize % 3];
                let vector: Vec<f32> = (0..dimensions)
                    .map(|_| random.next_signed_f32() * spread)
                    .collect();
                bytes.clear();
                encode_record(
                    layout,
                    record,
                    metric.stored_scale(&vector),
                    &vector,
                    &mut bytes,
                );
                file.write_record(record, &bytes).expect("write");
            }
            let records = file.records(count);
            let space = Space::new(&records, metric);
            let user: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
            let query = space.prepare_query(&user);
            let Query::Floats(prepared) = &query else {
                panic!("float records take float queries");
            };
            let numbers: Vec<u32> = (0..count).rev().collect();
            let expected: Vec<u32> = numbers
                .iter()
                .map(|&record| space.to_query(&query, record).to_bits())
                .collect();
            let from_file = FileVectors { records };
            let mapped = GraphVectors::Mapped(records);
            let in_place = RecordVectors(&records);
            for (name, distances) in [
                ("file", from_file.distances(metric, prepared, &numbers)),
                ("mapped", mapped.distances(metric, prepared, &numbers)),
                ("records", in_place.distances(metric, prepared, &numbers)),
            ] {
                let distances = distances.expect("distances");
                let found: Vec<u32> = distances.iter().map(|value| value.to_bits()).collect();
                assert_eq!(found, expected, "{metric:?} {name}");
            }
        }
    }
}
