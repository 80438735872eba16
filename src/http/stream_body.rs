//! The consumer that streams a body into a [`BodySink`]: raw pieces are decoded as they arrive
//! (gzip, deflate, br or identity) and the decoded bytes are handed to the sink.
//!
//! Invariants: the decoder is fed at most [`DECODER_INPUT_PIECE_BYTES`] raw bytes at a time and
//! drained after each, so one step never holds more than that piece's expansion; the decoded
//! total never passes the payload limit (a zip bomb stops at `limit + 1` decoded bytes with
//! `TooLarge`); a sink error stops the body with [`BodyError::Sink`].

use std::io::{self, Write};

use super::body::BodyConsumer;
use super::decode::ContentCoding;
use super::request::BodyError;
use super::sink::{BodySink, SpooledBody};

/// Raw bytes given to a decoder at once (gzip expands at most about 1000 times, so a step
/// decodes at most about 4 MB).
pub const DECODER_INPUT_PIECE_BYTES: usize = 4 * 1024;
/// Internal buffer of the streaming brotli decoder.
const BROTLI_WRITER_BUFFER_BYTES: usize = 16 * 1024;

/// An incremental decoder writing into a buffer drained after every step.
enum Decoder {
    Identity,
    Gzip(Box<flate2::write::MultiGzDecoder<Vec<u8>>>),
    Deflate(Box<flate2::write::ZlibDecoder<Vec<u8>>>),
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
}

impl Decoder {
    fn new(coding: ContentCoding) -> Decoder {
        match coding {
            ContentCoding::Identity => Decoder::Identity,
            ContentCoding::Gzip => {
                Decoder::Gzip(Box::new(flate2::write::MultiGzDecoder::new(Vec::new())))
            }
            ContentCoding::Deflate => {
                Decoder::Deflate(Box::new(flate2::write::ZlibDecoder::new(Vec::new())))
            }
            ContentCoding::Brotli => Decoder::Brotli(Box::new(brotli::DecompressorWriter::new(
                Vec::new(),
                BROTLI_WRITER_BUFFER_BYTES,
            ))),
        }
    }

    /// Feeds `raw` to the decoder.
    fn push(&mut self, raw: &[u8]) -> io::Result<()> {
        match self {
            Decoder::Identity => Ok(()),
            Decoder::Gzip(decoder) => decoder.write_all(raw),
            Decoder::Deflate(decoder) => decoder.write_all(raw),
            Decoder::Brotli(decoder) => decoder.write_all(raw),
        }
    }

    /// Completes the stream (a truncated one is an error); answers the last decoded bytes.
    fn finish(self) -> io::Result<Vec<u8>> {
        match self {
            Decoder::Identity => Ok(Vec::new()),
            Decoder::Gzip(mut decoder) => {
                decoder.try_finish()?;
                Ok(std::mem::take(decoder.get_mut()))
            }
            Decoder::Deflate(mut decoder) => {
                decoder.try_finish()?;
                Ok(std::mem::take(decoder.get_mut()))
            }
            Decoder::Brotli(mut decoder) => {
                decoder.close()?;
                Ok(std::mem::take(decoder.get_mut()))
            }
        }
    }

    /// The decoded bytes produced so far, emptied.
    fn drain(&mut self) -> Vec<u8> {
        match self {
            Decoder::Identity => Vec::new(),
            Decoder::Gzip(decoder) => std::mem::take(decoder.get_mut()),
            Decoder::Deflate(decoder) => std::mem::take(decoder.get_mut()),
            Decoder::Brotli(decoder) => std::mem::take(decoder.get_mut()),
        }
    }
}

/// Streams a body into a sink through its content decoder.
pub(crate) struct StreamingConsumer<Sink> {
    decoder: Decoder,
    sink: Sink,
    decoded: u64,
    limit: u64,
}

impl<Sink: BodySink> StreamingConsumer<Sink> {
    pub(crate) fn new(sink: Sink, coding: ContentCoding, limit: u64) -> Self {
        StreamingConsumer {
            decoder: Decoder::new(coding),
            sink,
            decoded: 0,
            limit,
        }
    }

    async fn hand_on(&mut self, decoded: &[u8]) -> Result<(), BodyError> {
        if decoded.is_empty() {
            return Ok(());
        }
        self.decoded = self.decoded.saturating_add(decoded.len() as u64);
        if self.decoded > self.limit {
            return Err(BodyError::TooLarge {
                content_length: None,
                limit: self.limit,
            });
        }
        self.sink.write(decoded).await.map_err(BodyError::from_sink)
    }

    /// The body ended: completes the decoding and the sink.
    pub(crate) async fn finish(mut self) -> Result<SpooledBody, BodyError> {
        let decoder = std::mem::replace(&mut self.decoder, Decoder::Identity);
        let rest = decoder
            .finish()
            .map_err(|error| BodyError::MalformedEncoding(error.to_string()))?;
        self.hand_on(&rest).await?;
        self.sink.finish().await.map_err(BodyError::from_sink)
    }
}

impl<Sink: BodySink> BodyConsumer for StreamingConsumer<Sink> {
    async fn take(&mut self, raw: &[u8]) -> Result<(), BodyError> {
        if matches!(self.decoder, Decoder::Identity) {
            return self.hand_on(raw).await;
        }
        for piece in raw.chunks(DECODER_INPUT_PIECE_BYTES) {
            self.decoder
                .push(piece)
                .map_err(|error| BodyError::MalformedEncoding(error.to_string()))?;
            let decoded = self.decoder.drain();
            self.hand_on(&decoded).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use futures_lite::future::block_on;

    use super::*;

    /// A sink that keeps what it is given.
    struct Collecting(Rc<RefCell<Vec<u8>>>);

    impl BodySink for Collecting {
        async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(())
        }

        async fn finish(self) -> io::Result<SpooledBody> {
            let bytes = self.0.borrow().len() as u64;
            Ok(SpooledBody::new("collected".to_string(), bytes, || {}))
        }
    }

    fn stream(raw: &[u8], coding: ContentCoding, limit: u64) -> (Result<u64, BodyError>, Vec<u8>) {
        let collected = Rc::new(RefCell::new(Vec::new()));
        let mut consumer = StreamingConsumer::new(Collecting(collected.clone()), coding, limit);
        let outcome = block_on(async {
            for piece in raw.chunks(1000) {
                consumer.take(piece).await?;
            }
            consumer.finish().await.map(|spooled| spooled.keep().1)
        });
        let seen = collected.borrow().clone();
        (outcome, seen)
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).expect("gzip takes bytes");
        encoder.finish().expect("gzip finishes")
    }

    #[test]
    fn every_coding_streams_the_decoded_body_to_the_sink() {
        let data: Vec<u8> = (0..200_000u32).flat_map(|n| n.to_le_bytes()).collect();
        let mut brotli_encoded = Vec::new();
        {
            let mut encoder = brotli::CompressorWriter::new(&mut brotli_encoded, 4096, 5, 22);
            encoder.write_all(&data).expect("brotli takes bytes");
        }
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&data).expect("zlib takes bytes");
        let zlib = zlib.finish().expect("zlib finishes");
        for (coding, raw) in [
            (ContentCoding::Identity, data.clone()),
            (ContentCoding::Gzip, gzip(&data)),
            (ContentCoding::Deflate, zlib),
            (ContentCoding::Brotli, brotli_encoded),
        ] {
            let (outcome, seen) = stream(&raw, coding, data.len() as u64);
            assert_eq!(outcome, Ok(data.len() as u64), "{coding:?}");
            assert!(seen == data, "{coding:?}");
        }
    }

    #[test]
    fn a_zip_bomb_stops_at_the_limit_without_passing_it() {
        let bomb = gzip(&vec![0u8; 50 * 1024 * 1024]);
        let limit = 1024 * 1024;
        let (outcome, seen) = stream(&bomb, ContentCoding::Gzip, limit);
        assert_eq!(
            outcome,
            Err(BodyError::TooLarge {
                content_length: None,
                limit
            })
        );
        assert!(seen.len() as u64 <= limit);
    }

    #[test]
    fn a_truncated_or_corrupt_stream_is_malformed() {
        let encoded = gzip(b"some body that is long enough to matter");
        let (truncated, _) = stream(&encoded[..encoded.len() / 2], ContentCoding::Gzip, 1000);
        assert!(matches!(truncated, Err(BodyError::MalformedEncoding(_))));
        let (corrupt, _) = stream(b"not brotli at all", ContentCoding::Brotli, 1000);
        assert!(matches!(corrupt, Err(BodyError::MalformedEncoding(_))));
    }
}
