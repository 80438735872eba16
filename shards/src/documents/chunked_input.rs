//! A payload read from any byte source in bounded chunks, with the one scan the JSON readers
//! need: where the JSON object starting at the read position ends.
//!
//! Invariants: the window `buffer[start..end]` holds the bytes read and not yet consumed; the
//! buffer never holds more than [`PAYLOAD_READ_CHUNK_BYTES`] beyond the document being read
//! (a document larger than a chunk grows it to that document's size, no more); bytes are read
//! once, in order, so any `Read` works (a file, a socket, a decoder).

use std::io::{self, Read};

/// Bytes read from the source per read call, and the buffer's initial size.
pub const PAYLOAD_READ_CHUNK_BYTES: usize = 1024 * 1024;

/// A byte source read in chunks.
pub struct ChunkedInput<R> {
    source: R,
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    exhausted: bool,
    /// Bytes read from the source so far.
    bytes_read: u64,
}

/// How far the scan of an object has come; kept across refills so no byte is scanned twice.
#[derive(Debug, Default, Clone, Copy)]
struct ObjectScan {
    /// Bytes scanned from `start`.
    scanned: usize,
    /// Open `{` and `[` not yet closed.
    depth: u32,
    in_string: bool,
    escaped: bool,
}

impl<R: Read> ChunkedInput<R> {
    /// Reads `source` from its current position.
    pub fn new(source: R) -> Self {
        Self {
            source,
            buffer: Vec::new(),
            start: 0,
            end: 0,
            exhausted: false,
            bytes_read: 0,
        }
    }

    /// The bytes read and not consumed.
    pub fn window(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    /// The bytes read and not consumed, mutable (a parser may rewrite them in place).
    pub fn window_mut(&mut self) -> &mut [u8] {
        &mut self.buffer[self.start..self.end]
    }

    /// Marks `count` bytes of the window consumed.
    pub fn consume(&mut self, count: usize) {
        debug_assert!(count <= self.end - self.start);
        self.start += count;
    }

    /// Bytes read from the source so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Where the window starts, in bytes from where the source was when this input was made.
    pub fn position(&self) -> u64 {
        self.bytes_read - (self.end - self.start) as u64
    }

    /// The source, to read it again from another position (error reporting).
    pub fn source_mut(&mut self) -> &mut R {
        &mut self.source
    }

    /// Reads one more chunk behind the window; false at the end of the source.
    pub fn fill(&mut self) -> io::Result<bool> {
        if self.exhausted {
            return Ok(false);
        }
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let wanted = self.end + PAYLOAD_READ_CHUNK_BYTES;
        if self.buffer.len() < wanted {
            self.buffer.resize(wanted, 0);
        }
        loop {
            match self.source.read(&mut self.buffer[self.end..wanted]) {
                Ok(0) => {
                    self.exhausted = true;
                    return Ok(false);
                }
                Ok(read) => {
                    self.end += read;
                    self.bytes_read += read as u64;
                    return Ok(true);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Skips JSON whitespace; answers the first other byte, `None` at the end of the source.
    pub fn skip_whitespace(&mut self) -> io::Result<Option<u8>> {
        loop {
            while self.start < self.end {
                let byte = self.buffer[self.start];
                if !matches!(byte, b' ' | b'\n' | b'\t' | b'\r') {
                    return Ok(Some(byte));
                }
                self.start += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// The length of the JSON object that starts the window (its first byte is `{`), reading
    /// more as needed; `None` when the source ends before the object closes. Only strings and
    /// nesting are followed, so the object may still be invalid JSON: the parser decides.
    pub fn object_length(&mut self) -> io::Result<Option<usize>> {
        let mut scan = ObjectScan::default();
        loop {
            if let Some(length) = scan.advance(&self.buffer[self.start..self.end]) {
                return Ok(Some(length));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }
}

impl ObjectScan {
    /// Continues over `bytes` (which start where the object starts); the object's length once
    /// its closing brace is found.
    fn advance(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut position = self.scanned;
        while position < bytes.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    position += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &bytes[position..]) {
                    Some(offset) => {
                        position += offset;
                        if bytes[position] == b'"' {
                            self.in_string = false;
                        } else {
                            self.escaped = true;
                        }
                        position += 1;
                    }
                    None => position = bytes.len(),
                }
                continue;
            }
            match bytes[position] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(position + 1);
                    }
                }
                _ => {}
            }
            position += 1;
        }
        self.scanned = position;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte per call, to cross every chunk boundary.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, output: &mut [u8]) -> io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            let Some(slot) = output.first_mut() else {
                return Ok(0);
            };
            *slot = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn object_length_follows_strings_escapes_and_nesting_across_reads() {
        let text = br#"{"a":"}\"{","b":[{"c":"]"}],"d":{}} {"next":1}"#;
        let mut input = ChunkedInput::new(Trickle(text));
        assert_eq!(input.skip_whitespace().expect("in memory"), Some(b'{'));
        let length = input
            .object_length()
            .expect("in memory")
            .expect("the object closes");
        assert_eq!(
            &input.window()[..length],
            &br#"{"a":"}\"{","b":[{"c":"]"}],"d":{}}"#[..]
        );
        input.consume(length);
        assert_eq!(input.skip_whitespace().expect("in memory"), Some(b'{'));
    }

    #[test]
    fn an_unclosed_object_has_no_length() {
        let mut input = ChunkedInput::new(&br#"{"a": "}"#[..]);
        assert_eq!(input.skip_whitespace().expect("in memory"), Some(b'{'));
        assert_eq!(input.object_length().expect("in memory"), None);
    }
}
