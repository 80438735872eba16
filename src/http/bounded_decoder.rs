//! A content decoder (gzip, deflate, br) that produces its output in bounded steps, whatever
//! the input: a 1.5 kB brotli body that inflates to 1 GB is decoded [`STEP_OUTPUT_BYTES`] at a
//! time, and the caller stops at its payload limit after at most one step past it.
//!
//! Why: a decoder driven by "here is a piece of input, give me everything it decodes to"
//! holds a piece's whole expansion at once, and no codec bounds it (brotli repeats a window of
//! up to 16 MiB per command, so a few bytes can stand for gigabytes). Here the decoder is asked
//! for at most one step of output at a time and keeps the rest of its input for the next step.
//!
//! Invariants:
//! - one [`BoundedDecoder::step`] or [`BoundedDecoder::finish_step`] leaves at most
//!   [`STEP_OUTPUT_BYTES`] plus one internal buffer of the codec in [`BoundedDecoder::output`];
//! - input a step did not consume is given again by the caller (the return value says how
//!   much was consumed); no input is lost or decoded twice.

use std::io::{self, Write};

use brotli::{BrotliDecompressStream, BrotliResult, BrotliState, HeapAlloc, HuffmanCode};

use super::decode::ContentCoding;

/// Decoded bytes one step may produce before it hands them on.
pub const STEP_OUTPUT_BYTES: usize = 256 * 1024;
/// Output buffer of the brotli state machine per call.
const BROTLI_OUTPUT_CHUNK_BYTES: usize = 64 * 1024;

/// A writer that takes bytes until it holds [`STEP_OUTPUT_BYTES`], then answers
/// `WouldBlock` (the flate2 decoders keep what they could not write and retry it).
#[derive(Default)]
struct StepBuffer(Vec<u8>);

impl Write for StepBuffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let room = STEP_OUTPUT_BYTES.saturating_sub(self.0.len());
        if room == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let taken = room.min(bytes.len());
        self.0.extend_from_slice(&bytes[..taken]);
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The brotli state machine with its output.
struct Brotli {
    state: Box<BrotliState<HeapAlloc<u8>, HeapAlloc<u32>, HeapAlloc<HuffmanCode>>>,
    output: Vec<u8>,
    chunk: Vec<u8>,
    total_out: usize,
    done: bool,
}

impl Brotli {
    fn new() -> Brotli {
        Brotli {
            state: Box::new(BrotliState::new(
                HeapAlloc::new(0),
                HeapAlloc::new(0),
                HeapAlloc::new(HuffmanCode::default()),
            )),
            output: Vec::new(),
            chunk: vec![0; BROTLI_OUTPUT_CHUNK_BYTES],
            total_out: 0,
            done: false,
        }
    }

    /// Decodes from `input` until the output is full or the input runs out; answers the
    /// input consumed.
    fn step(&mut self, input: &[u8]) -> io::Result<usize> {
        let mut input_offset = 0;
        while self.output.len() < STEP_OUTPUT_BYTES && !self.done {
            let mut available_in = input.len() - input_offset;
            let mut available_out = self.chunk.len();
            let mut output_offset = 0;
            let result = BrotliDecompressStream(
                &mut available_in,
                &mut input_offset,
                input,
                &mut available_out,
                &mut output_offset,
                &mut self.chunk,
                &mut self.total_out,
                &mut self.state,
            );
            self.output.extend_from_slice(&self.chunk[..output_offset]);
            match result {
                BrotliResult::ResultSuccess => self.done = true,
                BrotliResult::NeedsMoreOutput => {}
                BrotliResult::NeedsMoreInput => break,
                BrotliResult::ResultFailure => {
                    // The brotli crate's own reading error, which Meilisearch reports.
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "Invalid Data"));
                }
            }
        }
        if self.done && input_offset < input.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bytes after the end of the brotli stream",
            ));
        }
        Ok(input_offset)
    }
}

impl Brotli {
    /// Drains what the state machine still holds after the last input: answers whether the
    /// stream is complete; a stream that wants more input is truncated.
    fn finish_step(&mut self) -> io::Result<bool> {
        if self.done {
            return Ok(true);
        }
        self.step(&[])?;
        if self.done {
            Ok(true)
        } else if self.output.is_empty() {
            Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the brotli stream is truncated",
            ))
        } else {
            Ok(false)
        }
    }
}

/// One content coding's decoder.
enum Codec {
    Identity(Vec<u8>),
    Gzip(Box<flate2::write::MultiGzDecoder<StepBuffer>>),
    Deflate(Box<flate2::write::ZlibDecoder<StepBuffer>>),
    Brotli(Box<Brotli>),
}

/// A decoder producing its output in steps of at most [`STEP_OUTPUT_BYTES`].
pub(crate) struct BoundedDecoder {
    codec: Codec,
}

impl BoundedDecoder {
    pub(crate) fn new(coding: ContentCoding) -> BoundedDecoder {
        let codec = match coding {
            ContentCoding::Identity => Codec::Identity(Vec::new()),
            ContentCoding::Gzip => Codec::Gzip(Box::new(flate2::write::MultiGzDecoder::new(
                StepBuffer::default(),
            ))),
            ContentCoding::Deflate => Codec::Deflate(Box::new(flate2::write::ZlibDecoder::new(
                StepBuffer::default(),
            ))),
            ContentCoding::Brotli => Codec::Brotli(Box::new(Brotli::new())),
        };
        BoundedDecoder { codec }
    }

    /// Decodes a prefix of `input` into the output (at most one step of it); answers how many
    /// bytes of `input` it consumed. Call again with the rest once the output is taken.
    pub(crate) fn step(&mut self, input: &[u8]) -> io::Result<usize> {
        let consumed = self.step_codec(input)?;
        if consumed == 0 && !input.is_empty() && self.output_len() == 0 {
            // Neither input taken nor output given: the stream ended before its input did.
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bytes after the end of the compressed stream",
            ));
        }
        Ok(consumed)
    }

    fn step_codec(&mut self, input: &[u8]) -> io::Result<usize> {
        match &mut self.codec {
            Codec::Identity(output) => {
                let taken = input.len().min(STEP_OUTPUT_BYTES);
                output.extend_from_slice(&input[..taken]);
                Ok(taken)
            }
            Codec::Gzip(decoder) => flate_step(decoder.as_mut(), input),
            Codec::Deflate(decoder) => flate_step(decoder.as_mut(), input),
            Codec::Brotli(brotli) => brotli.step(input),
        }
    }

    /// Completes the stream after the last input, one step at a time: answers whether it is
    /// complete (else take the output and call again). A truncated stream is an error.
    pub(crate) fn finish_step(&mut self) -> io::Result<bool> {
        let outcome = match &mut self.codec {
            Codec::Identity(_) => Ok(()),
            Codec::Gzip(decoder) => decoder.try_finish().map_err(truncated_gzip),
            Codec::Deflate(decoder) => decoder.try_finish(),
            Codec::Brotli(brotli) => return brotli.finish_step(),
        };
        match outcome {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn output_len(&mut self) -> usize {
        match &mut self.codec {
            Codec::Identity(output) => output.len(),
            Codec::Gzip(decoder) => decoder.get_mut().0.len(),
            Codec::Deflate(decoder) => decoder.get_mut().0.len(),
            Codec::Brotli(brotli) => brotli.output.len(),
        }
    }

    /// The decoded bytes produced so far, emptied.
    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        let taken = match &mut self.codec {
            Codec::Identity(output) => std::mem::take(output),
            Codec::Gzip(decoder) => std::mem::take(&mut decoder.get_mut().0),
            Codec::Deflate(decoder) => std::mem::take(&mut decoder.get_mut().0),
            Codec::Brotli(brotli) => std::mem::take(&mut brotli.output),
        };
        debug_assert!(
            taken.len() <= STEP_OUTPUT_BYTES + BROTLI_OUTPUT_CHUNK_BYTES,
            "a step stays bounded"
        );
        taken
    }
}

/// A gzip stream that ends early is reported as flate2's single-member decoder reports it
/// (the one Meilisearch reads bodies with): its checksum does not match.
fn truncated_gzip(error: io::Error) -> io::Error {
    if error.kind() == io::ErrorKind::UnexpectedEof {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "corrupt gzip stream does not have a matching checksum",
        )
    } else {
        error
    }
}

/// One step of a flate2 write-side decoder over a [`StepBuffer`]: a full buffer leaves the
/// input unconsumed (flate2 writes its pending output before it reads more input).
fn flate_step(decoder: &mut impl Write, input: &[u8]) -> io::Result<usize> {
    if input.is_empty() {
        return Ok(0);
    }
    match decoder.write(input) {
        Ok(consumed) => Ok(consumed),
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(0),
        Err(error) => Err(error),
    }
}

/// Decodes all of `raw`, stopping with `Err(None)` as soon as the output passes `limit`.
pub(crate) fn decode_all(
    raw: &[u8],
    coding: ContentCoding,
    limit: u64,
) -> Result<Vec<u8>, Option<io::Error>> {
    let mut decoder = BoundedDecoder::new(coding);
    let mut decoded = Vec::new();
    let keep = |decoder: &mut BoundedDecoder, decoded: &mut Vec<u8>| {
        decoded.extend_from_slice(&decoder.take_output());
        if decoded.len() as u64 > limit {
            Err(None)
        } else {
            Ok(())
        }
    };
    let mut rest = raw;
    while !rest.is_empty() {
        let consumed = decoder.step(rest).map_err(Some)?;
        rest = &rest[consumed..];
        keep(&mut decoder, &mut decoded)?;
    }
    while !decoder.finish_step().map_err(Some)? {
        keep(&mut decoder, &mut decoded)?;
    }
    keep(&mut decoder, &mut decoded)?;
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brotli_bomb(decoded_bytes: usize) -> Vec<u8> {
        let mut encoded = Vec::new();
        {
            let mut encoder = brotli::CompressorWriter::new(&mut encoded, 4096, 11, 24);
            let zeros = vec![0u8; 1 << 20];
            for _ in 0..decoded_bytes / zeros.len() {
                encoder.write_all(&zeros).expect("the encoder takes bytes");
            }
        }
        encoded
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).expect("write");
        encoder.finish().expect("finish")
    }

    #[test]
    fn a_brotli_bomb_never_holds_more_than_a_step() {
        // 256 MiB of zeros in a few hundred bytes of brotli.
        let bomb = brotli_bomb(256 << 20);
        assert!(bomb.len() < 4096, "{} bytes", bomb.len());
        let mut decoder = BoundedDecoder::new(ContentCoding::Brotli);
        let consumed = decoder.step(&bomb).expect("a valid stream");
        let output = decoder.take_output();
        assert!(output.len() <= STEP_OUTPUT_BYTES + BROTLI_OUTPUT_CHUNK_BYTES);
        assert!(
            consumed < bomb.len(),
            "the rest of the input waits for the next step"
        );
        assert_eq!(
            decode_all(&bomb, ContentCoding::Brotli, 1 << 20).map_err(|error| error.is_none()),
            Err(true),
            "the limit stops the decoding"
        );
    }

    #[test]
    fn a_gzip_bomb_is_decoded_in_bounded_steps() {
        let bomb = gzip(&vec![0u8; 64 << 20]);
        let mut decoder = BoundedDecoder::new(ContentCoding::Gzip);
        let mut rest = &bomb[..];
        let mut total = 0;
        let mut steps = 0;
        while !rest.is_empty() {
            let consumed = decoder.step(rest).expect("a valid stream");
            rest = &rest[consumed..];
            let output = decoder.take_output();
            assert!(output.len() <= STEP_OUTPUT_BYTES);
            total += output.len();
            steps += 1;
        }
        while !decoder.finish_step().expect("a complete stream") {
            total += decoder.take_output().len();
        }
        total += decoder.take_output().len();
        assert_eq!(total, 64 << 20);
        assert!(steps > 100, "{steps} steps");
    }

    #[test]
    fn every_coding_decodes_exactly_and_truncation_is_an_error() {
        let data: Vec<u8> = (0..300_000u32).flat_map(|n| n.to_le_bytes()).collect();
        let mut brotli_encoded = Vec::new();
        {
            let mut encoder = brotli::CompressorWriter::new(&mut brotli_encoded, 4096, 5, 22);
            encoder.write_all(&data).expect("brotli takes bytes");
        }
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&data).expect("zlib takes bytes");
        let zlib = zlib.finish().expect("zlib finishes");
        for (coding, encoded) in [
            (ContentCoding::Identity, data.clone()),
            (ContentCoding::Gzip, gzip(&data)),
            (ContentCoding::Deflate, zlib),
            (ContentCoding::Brotli, brotli_encoded),
        ] {
            let limit = data.len() as u64;
            let decoded = decode_all(&encoded, coding, limit).map_err(|error| format!("{error:?}"));
            assert!(
                decoded.as_ref().is_ok_and(|decoded| *decoded == data),
                "{coding:?}: {:?}",
                decoded.map(|decoded| decoded.len())
            );
            if coding != ContentCoding::Identity {
                let truncated = &encoded[..encoded.len() / 2];
                assert!(
                    matches!(decode_all(truncated, coding, limit), Err(Some(_))),
                    "{coding:?} truncated"
                );
            }
        }
    }
}
