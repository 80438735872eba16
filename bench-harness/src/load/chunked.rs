//! An incremental decoder of the HTTP/1.1 chunked transfer coding that only
//! skips the data (the driver measures responses, it does not keep them).
//!
//! Invariants: it consumes exactly the bytes of one chunked body (chunks, the
//! last chunk, trailers and the final CRLF) and never a byte past the end, so
//! the next pipelined response starts where it stops; it accepts the input in
//! pieces of any size; chunk-size and line lengths are bounded.

use std::fmt;

/// The most hex digits in a chunk size (a 64-bit size).
pub const CHUNK_SIZE_DIGITS_MAX: u32 = 16;
/// The longest chunk extension or trailer line accepted.
pub const CHUNK_LINE_BYTES_MAX: usize = 8 * 1024;

/// Where the decoder is inside the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex digits of a chunk size.
    Size,
    /// Skipping a chunk extension up to CR.
    Extension,
    /// Expecting the LF that ends the chunk-size line.
    SizeLineFeed,
    /// Skipping chunk data.
    Data,
    /// Expecting the CR after chunk data.
    DataCarriageReturn,
    /// Expecting the LF after chunk data.
    DataLineFeed,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer line, up to CR.
    Trailer,
    /// Expecting the LF that ends a trailer line.
    TrailerLineFeed,
    /// Expecting the LF of the final empty line.
    FinalLineFeed,
    /// The body is complete.
    Done,
}

/// A malformed chunked body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkedError {
    /// A byte that has no place at this point of the coding.
    UnexpectedByte { byte: u8, at: &'static str },
    /// A chunk size over `CHUNK_SIZE_DIGITS_MAX` hex digits.
    SizeTooLong,
    /// An extension or trailer line over `CHUNK_LINE_BYTES_MAX`.
    LineTooLong,
}

impl fmt::Display for ChunkedError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkedError::UnexpectedByte { byte, at } => {
                write!(
                    formatter,
                    "chunked body: unexpected byte 0x{byte:02x} in {at}"
                )
            }
            ChunkedError::SizeTooLong => write!(formatter, "chunked body: chunk size too long"),
            ChunkedError::LineTooLong => write!(formatter, "chunked body: line too long"),
        }
    }
}

impl std::error::Error for ChunkedError {}

/// Decodes (skips) one chunked body.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// The size being read, then the data bytes still to skip.
    remaining: u64,
    /// Digits of the current size, or bytes of the current line.
    length: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder::new()
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a body.
    pub fn new() -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::Size,
            remaining: 0,
            length: 0,
        }
    }

    /// Whether the whole body has been consumed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes from `input` and returns how many bytes belong to the body.
    /// Stops right after the body's end; check `is_done`.
    pub fn feed(&mut self, input: &[u8]) -> Result<usize, ChunkedError> {
        let mut position = 0;
        while position < input.len() && self.state != State::Done {
            if self.state == State::Data {
                let available = (input.len() - position) as u64;
                let skipped = self.remaining.min(available);
                position += usize::try_from(skipped).expect("bounded by the input length");
                self.remaining -= skipped;
                if self.remaining == 0 {
                    self.state = State::DataCarriageReturn;
                }
                continue;
            }
            self.step(input[position])?;
            position += 1;
        }
        Ok(position)
    }

    /// Advances over one byte of framing (anything but chunk data).
    fn step(&mut self, byte: u8) -> Result<(), ChunkedError> {
        let unexpected = |at| ChunkedError::UnexpectedByte { byte, at };
        self.state = match self.state {
            State::Size => return self.step_size(byte),
            State::Extension => self.step_line(byte, State::Extension, State::SizeLineFeed)?,
            State::SizeLineFeed if byte == b'\n' => {
                self.length = 0;
                if self.remaining == 0 {
                    State::TrailerStart
                } else {
                    State::Data
                }
            }
            State::SizeLineFeed => return Err(unexpected("chunk-size line end")),
            State::DataCarriageReturn if byte == b'\r' => State::DataLineFeed,
            State::DataLineFeed if byte == b'\n' => State::Size,
            State::DataCarriageReturn | State::DataLineFeed => {
                return Err(unexpected("chunk data end"));
            }
            State::TrailerStart if byte == b'\r' => State::FinalLineFeed,
            State::TrailerStart => self.step_line(byte, State::Trailer, State::TrailerLineFeed)?,
            State::Trailer => self.step_line(byte, State::Trailer, State::TrailerLineFeed)?,
            State::TrailerLineFeed if byte == b'\n' => {
                self.length = 0;
                State::TrailerStart
            }
            State::TrailerLineFeed => return Err(unexpected("trailer line end")),
            State::FinalLineFeed if byte == b'\n' => State::Done,
            State::FinalLineFeed => return Err(unexpected("final line end")),
            State::Data | State::Done => self.state,
        };
        Ok(())
    }

    /// One byte of a chunk-size line before any extension.
    fn step_size(&mut self, byte: u8) -> Result<(), ChunkedError> {
        if let Some(digit) = char::from(byte).to_digit(16) {
            if self.length as u32 >= CHUNK_SIZE_DIGITS_MAX {
                return Err(ChunkedError::SizeTooLong);
            }
            self.remaining = self.remaining * 16 + u64::from(digit);
            self.length += 1;
            return Ok(());
        }
        if self.length == 0 {
            return Err(ChunkedError::UnexpectedByte {
                byte,
                at: "chunk size",
            });
        }
        self.state = match byte {
            b'\r' => State::SizeLineFeed,
            b';' | b' ' | b'\t' => {
                self.length = 0;
                State::Extension
            }
            _ => {
                return Err(ChunkedError::UnexpectedByte {
                    byte,
                    at: "chunk size",
                });
            }
        };
        Ok(())
    }

    /// One byte of a skipped line (extension or trailer): `CR` ends it.
    fn step_line(
        &mut self,
        byte: u8,
        inside: State,
        after_cr: State,
    ) -> Result<State, ChunkedError> {
        if byte == b'\r' {
            return Ok(after_cr);
        }
        if byte == b'\n' {
            return Err(ChunkedError::UnexpectedByte { byte, at: "line" });
        }
        self.length += 1;
        if self.length > CHUNK_LINE_BYTES_MAX {
            return Err(ChunkedError::LineTooLong);
        }
        Ok(inside)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const BODY: &[u8] =
        b"5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n";

    #[test]
    fn whole_body_is_consumed_and_nothing_after_it() {
        let mut input = BODY.to_vec();
        input.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.feed(&input).expect("feed succeeds"), BODY.len());
        assert!(decoder.is_done());
    }

    #[test]
    fn every_split_point_gives_the_same_result() {
        for split in 0..=BODY.len() {
            let mut decoder = ChunkedDecoder::new();
            let first = decoder.feed(&BODY[..split]).expect("feed succeeds");
            assert_eq!(first, split, "split {split}");
            assert_eq!(decoder.is_done(), split == BODY.len());
            let second = decoder.feed(&BODY[split..]).expect("feed succeeds");
            assert_eq!(first + second, BODY.len(), "split {split}");
            assert!(decoder.is_done(), "split {split}");
        }
    }

    #[test]
    fn byte_by_byte_feeding_completes() {
        let mut decoder = ChunkedDecoder::new();
        for byte in BODY {
            assert!(!decoder.is_done());
            assert_eq!(
                decoder
                    .feed(std::slice::from_ref(byte))
                    .expect("feed succeeds"),
                1
            );
        }
        assert!(decoder.is_done());
    }

    #[test]
    fn malformed_bodies_are_errors() {
        assert!(ChunkedDecoder::new().feed(b"zz\r\n").is_err());
        assert!(ChunkedDecoder::new().feed(b"\r\n").is_err());
        assert!(ChunkedDecoder::new().feed(b"2\r\nabX\r\n").is_err());
        assert!(ChunkedDecoder::new().feed(b"2\nab").is_err());
        assert_eq!(
            ChunkedDecoder::new().feed(b"11111111111111111\r\n"),
            Err(ChunkedError::SizeTooLong)
        );
        let long_extension = [b"1;".as_slice(), &[b'x'; CHUNK_LINE_BYTES_MAX + 1]].concat();
        assert_eq!(
            ChunkedDecoder::new().feed(&long_extension),
            Err(ChunkedError::LineTooLong)
        );
    }
}
