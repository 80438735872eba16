//! The consumer that streams a body into a [`BodySink`]: raw pieces are decoded as they arrive
//! (gzip, deflate, br or identity) and the decoded bytes are handed to the sink.
//!
//! Invariants: the decoder gives at most one bounded step of output at a time (see
//! [`super::bounded_decoder`]), handed on before the next, so a body never holds more than a
//! step of decoded bytes whatever it expands to; the decoded total never passes the payload
//! limit (a zip bomb stops one step past it with `TooLarge`); the core's other tasks run
//! between steps; a sink error stops the body with [`BodyError::Sink`].

use super::body::BodyConsumer;
use super::bounded_decoder::{BoundedDecoder, STEP_OUTPUT_BYTES};
use super::decode::ContentCoding;
use super::request::BodyError;
use super::sink::{BodySink, SpooledBody};

/// Decoded bytes after which the consumer lets the core's other tasks run: a body that
/// expands a lot is decoded in many steps, none of which may hold the core for long.
const YIELD_EVERY_DECODED_BYTES: u64 = 4 * STEP_OUTPUT_BYTES as u64;

/// Streams a body into a sink through its content decoder.
pub(crate) struct StreamingConsumer<Sink> {
    decoder: BoundedDecoder,
    sink: Sink,
    decoded: u64,
    limit: u64,
    /// Decoded bytes since the consumer last let other tasks run.
    since_yield: u64,
}

impl<Sink: BodySink> StreamingConsumer<Sink> {
    pub(crate) fn new(sink: Sink, coding: ContentCoding, limit: u64) -> Self {
        StreamingConsumer {
            decoder: BoundedDecoder::new(coding),
            sink,
            decoded: 0,
            limit,
            since_yield: 0,
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
        self.sink
            .write(decoded)
            .await
            .map_err(BodyError::from_sink)?;
        self.since_yield += decoded.len() as u64;
        if self.since_yield >= YIELD_EVERY_DECODED_BYTES {
            self.since_yield = 0;
            futures_lite::future::yield_now().await;
        }
        Ok(())
    }

    /// Hands on what the decoder produced in its last step.
    async fn hand_on_step(&mut self) -> Result<(), BodyError> {
        let decoded = self.decoder.take_output();
        self.hand_on(&decoded).await
    }

    /// The body ended: completes the decoding and the sink.
    pub(crate) async fn finish(mut self) -> Result<SpooledBody, BodyError> {
        while !self.decoder.finish_step().map_err(malformed)? {
            self.hand_on_step().await?;
        }
        self.hand_on_step().await?;
        self.sink.finish().await.map_err(BodyError::from_sink)
    }
}

impl<Sink: BodySink> BodyConsumer for StreamingConsumer<Sink> {
    async fn take(&mut self, raw: &[u8]) -> Result<(), BodyError> {
        let mut rest = raw;
        while !rest.is_empty() {
            let consumed = self.decoder.step(rest).map_err(malformed)?;
            rest = &rest[consumed..];
            self.hand_on_step().await?;
        }
        Ok(())
    }
}

fn malformed(error: std::io::Error) -> BodyError {
    BodyError::MalformedEncoding(format!("{error:?}"))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::io::{self, Write};
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
