//! Server-sent events (the `text/event-stream` format) read from a body that arrives in
//! pieces: [`EventStreamParser::feed`] takes each piece and gives back the events it
//! completed.
//!
//! As the format says: lines end with CRLF, LF or CR; a line starting with `:` is a comment;
//! `field: value` (one space after the colon dropped) sets `event`, `data` (several `data`
//! lines join with LF), `id` or `retry`; an empty line dispatches the event when it has data.
//!
//! Invariants: a line, or the data of one event, longer than [`EVENT_BYTES_MAX`] is an error
//! (a server cannot grow the buffer without end); a CR at the end of a piece waits for the
//! next piece, which may start with its LF.

/// The longest line, and the most data of one event, accepted.
pub const EVENT_BYTES_MAX: usize = 16 << 20;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSentEvent {
    /// `event`, when named.
    pub event: Option<String>,
    /// The `data` lines, joined with LF.
    pub data: String,
    /// `id`, when given.
    pub id: Option<String>,
}

/// Why a stream cannot be read as events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventStreamError {
    /// A line or an event's data is longer than [`EVENT_BYTES_MAX`].
    TooLong,
    /// A line is not UTF-8.
    NotUtf8,
}

impl std::fmt::Display for EventStreamError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventStreamError::TooLong => write!(
                formatter,
                "an event stream line or event is longer than {EVENT_BYTES_MAX} bytes"
            ),
            EventStreamError::NotUtf8 => formatter.write_str("an event stream line is not UTF-8"),
        }
    }
}

impl std::error::Error for EventStreamError {}

/// The state of an event stream between pieces.
#[derive(Debug, Default)]
pub struct EventStreamParser {
    /// Bytes of the line being read.
    pending: Vec<u8>,
    /// The event being built.
    event: ServerSentEvent,
    /// Whether the event has a `data` line yet.
    has_data: bool,
}

impl EventStreamParser {
    pub fn new() -> Self {
        EventStreamParser::default()
    }

    /// Reads `piece`; the events it completed, in order.
    pub fn feed(&mut self, piece: &[u8]) -> Result<Vec<ServerSentEvent>, EventStreamError> {
        self.pending.extend_from_slice(piece);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.pending[start..]
            .iter()
            .position(|&byte| byte == b'\n' || byte == b'\r')
        {
            let end = start + offset;
            let next = match self.pending[end] {
                b'\r' if end + 1 == self.pending.len() => break,
                b'\r' if self.pending[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            let line = std::str::from_utf8(&self.pending[start..end])
                .map_err(|_| EventStreamError::NotUtf8)?
                .to_owned();
            if let Some(event) = self.line(&line)? {
                events.push(event);
            }
            start = next;
        }
        self.pending.drain(..start);
        if self.pending.len() > EVENT_BYTES_MAX {
            return Err(EventStreamError::TooLong);
        }
        Ok(events)
    }

    /// Applies one line; the event an empty line dispatches.
    fn line(&mut self, line: &str) -> Result<Option<ServerSentEvent>, EventStreamError> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            return Ok(std::mem::take(&mut self.has_data).then_some(event));
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.has_data = true;
                if self.event.data.len() > EVENT_BYTES_MAX {
                    return Err(EventStreamError::TooLong);
                }
            }
            "event" => self.event.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.event.id = Some(value.to_owned()),
            // `retry` and unknown fields change nothing a reader of one stream needs.
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(events: &[ServerSentEvent]) -> Vec<&str> {
        events.iter().map(|event| event.data.as_str()).collect()
    }

    #[test]
    fn events_split_anywhere_are_put_together() {
        let stream = "retry: 10000\n\ndata: {\"a\":1}\n\n: a comment\nevent: x\ndata: two\ndata:lines\r\n\r\ndata: [DONE]\n\n";
        for split in 0..stream.len() {
            let mut parser = EventStreamParser::new();
            let mut events = parser.feed(&stream.as_bytes()[..split]).expect("valid");
            events.extend(parser.feed(&stream.as_bytes()[split..]).expect("valid"));
            assert_eq!(
                data(&events),
                ["{\"a\":1}", "two\nlines", "[DONE]"],
                "split at {split}"
            );
            assert_eq!(events[1].event.as_deref(), Some("x"));
        }
    }

    #[test]
    fn carriage_returns_alone_end_lines() {
        let mut parser = EventStreamParser::new();
        let events = parser.feed(b"data: a\r\rdata: b\r").expect("valid");
        assert_eq!(data(&events), ["a"]);
        // The last CR may be the first half of a CRLF: it waits for the next piece.
        let events = parser.feed(b"\r").expect("valid");
        assert!(events.is_empty());
        let events = parser.feed(b"\n").expect("valid");
        assert_eq!(data(&events), ["b"]);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut parser = EventStreamParser::new();
        let piece = vec![b'x'; EVENT_BYTES_MAX + 1];
        assert_eq!(parser.feed(&piece), Err(EventStreamError::TooLong));
    }
}
