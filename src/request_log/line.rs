//! One request-log line, formatted by hand in the two shapes `tracing_subscriber` writes
//! for the same event (`--experimental-logs-mode human` and `json`), so that the batched
//! request log reads exactly like the rest of the logs.
//!
//! Invariants: a line is one `\n`-terminated line whatever the path holds (control
//! characters are escaped, in both modes); JSON lines are valid JSON objects; the timestamp
//! is RFC 3339 UTC with microseconds, like `tracing_subscriber`'s `SystemTime`.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::LogMode;
use crate::http::date::{SECONDS_PER_DAY, civil_from_days};
use crate::http::serialize::write_decimal;

use super::REQUEST_LOG_TARGET;

/// Length of `YYYY-MM-DDTHH:MM:SS.`, the part of a timestamp fixed within a second.
const TIMESTAMP_SECOND_BYTES: usize = 20;

/// What one request-log line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLine<'a> {
    pub core: usize,
    pub method: &'a str,
    pub path: &'a str,
    pub status: u16,
    pub duration_us: u64,
}

/// Formats lines; caches the per-second part of the timestamp.
#[derive(Debug)]
pub struct LineFormatter {
    mode: LogMode,
    cached_second: u64,
    cached_prefix: [u8; TIMESTAMP_SECOND_BYTES],
}

impl LineFormatter {
    pub fn new(mode: LogMode) -> LineFormatter {
        LineFormatter {
            mode,
            cached_second: u64::MAX,
            cached_prefix: [0; TIMESTAMP_SECOND_BYTES],
        }
    }

    /// Appends `line`, stamped `now`, to `output`.
    pub fn write(&mut self, output: &mut Vec<u8>, line: &RequestLine<'_>, now: SystemTime) {
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let prefix = self.second_prefix(since_epoch.as_secs());
        let micros = since_epoch.subsec_micros();
        match self.mode {
            LogMode::Human => write_human(output, &prefix, micros, line),
            LogMode::Json => write_json(output, &prefix, micros, line),
        }
    }

    fn second_prefix(&mut self, second: u64) -> [u8; TIMESTAMP_SECOND_BYTES] {
        if self.cached_second != second {
            self.cached_second = second;
            self.cached_prefix = format_second_prefix(second);
        }
        self.cached_prefix
    }
}

/// `2026-11-22T02:39:55.123456Z  INFO coresearch::routes: request core=0 method=GET ...`
fn write_human(
    output: &mut Vec<u8>,
    prefix: &[u8; TIMESTAMP_SECOND_BYTES],
    micros: u32,
    line: &RequestLine<'_>,
) {
    write_timestamp(output, prefix, micros);
    output.extend_from_slice(b"  INFO ");
    output.extend_from_slice(REQUEST_LOG_TARGET.as_bytes());
    output.extend_from_slice(b": request core=");
    write_decimal(output, line.core as u64);
    output.extend_from_slice(b" method=");
    write_escaped(output, line.method, false);
    output.extend_from_slice(b" path=");
    write_escaped(output, line.path, false);
    output.extend_from_slice(b" status=");
    write_decimal(output, u64::from(line.status));
    output.extend_from_slice(b" duration_us=");
    write_decimal(output, line.duration_us);
    output.push(b'\n');
}

/// `{"timestamp":"...","level":"INFO","fields":{"message":"request","core":0,...},"target":...}`
fn write_json(
    output: &mut Vec<u8>,
    prefix: &[u8; TIMESTAMP_SECOND_BYTES],
    micros: u32,
    line: &RequestLine<'_>,
) {
    output.extend_from_slice(b"{\"timestamp\":\"");
    write_timestamp(output, prefix, micros);
    output
        .extend_from_slice(b"\",\"level\":\"INFO\",\"fields\":{\"message\":\"request\",\"core\":");
    write_decimal(output, line.core as u64);
    output.extend_from_slice(b",\"method\":\"");
    write_escaped(output, line.method, true);
    output.extend_from_slice(b"\",\"path\":\"");
    write_escaped(output, line.path, true);
    output.extend_from_slice(b"\",\"status\":");
    write_decimal(output, u64::from(line.status));
    output.extend_from_slice(b",\"duration_us\":");
    write_decimal(output, line.duration_us);
    output.extend_from_slice(b"},\"target\":\"");
    output.extend_from_slice(REQUEST_LOG_TARGET.as_bytes());
    output.extend_from_slice(b"\"}\n");
}

fn write_timestamp(output: &mut Vec<u8>, prefix: &[u8; TIMESTAMP_SECOND_BYTES], micros: u32) {
    output.extend_from_slice(prefix);
    let mut digits = [b'0'; 6];
    let mut rest = micros;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    output.extend_from_slice(&digits);
    output.push(b'Z');
}

/// `YYYY-MM-DDTHH:MM:SS.` of `second` (seconds since the Unix epoch, UTC).
fn format_second_prefix(second: u64) -> [u8; TIMESTAMP_SECOND_BYTES] {
    let (year, month, day) = civil_from_days(second / SECONDS_PER_DAY);
    let second_of_day = second % SECONDS_PER_DAY;
    let text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    );
    let mut prefix = [b'0'; TIMESTAMP_SECOND_BYTES];
    let length = text.len().min(TIMESTAMP_SECOND_BYTES);
    prefix[..length].copy_from_slice(&text.as_bytes()[..length]);
    prefix
}

/// Appends `text`, escaping control characters (and, for JSON, quotes and backslashes) so
/// that a line stays one line.
fn write_escaped(output: &mut Vec<u8>, text: &str, json: bool) {
    for character in text.chars() {
        match character {
            '"' if json => output.extend_from_slice(b"\\\""),
            '\\' if json => output.extend_from_slice(b"\\\\"),
            control if control.is_control() && json => {
                output.extend_from_slice(format!("\\u{:04x}", u32::from(control)).as_bytes())
            }
            control if control.is_control() => {
                output.extend_from_slice(format!("\\u{{{:04x}}}", u32::from(control)).as_bytes())
            }
            other => {
                let mut encoded = [0u8; 4];
                output.extend_from_slice(other.encode_utf8(&mut encoded).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const LINE: RequestLine<'static> = RequestLine {
        core: 3,
        method: "GET",
        path: "/health",
        status: 200,
        duration_us: 42,
    };

    fn formatted(mode: LogMode, line: &RequestLine<'_>, micros_since_epoch: u64) -> String {
        let mut output = Vec::new();
        let now = UNIX_EPOCH + Duration::from_micros(micros_since_epoch);
        LineFormatter::new(mode).write(&mut output, line, now);
        String::from_utf8(output).expect("lines are UTF-8")
    }

    #[test]
    fn human_line_has_the_shape_of_a_tracing_line() {
        // 2026-11-22T02:39:55.000007Z
        let text = formatted(LogMode::Human, &LINE, 1_795_315_195_000_007);
        assert_eq!(
            text,
            "2026-11-22T02:39:55.000007Z  INFO coresearch::routes: request core=3 method=GET \
             path=/health status=200 duration_us=42\n"
        );
    }

    #[test]
    fn json_line_is_a_json_object_with_the_tracing_fields() {
        let line = RequestLine {
            path: "/a\"b\\c",
            ..LINE
        };
        let text = formatted(LogMode::Json, &line, 1_795_315_195_123_456);
        let value: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
        assert_eq!(value["timestamp"], "2026-11-22T02:39:55.123456Z");
        assert_eq!(value["level"], "INFO");
        assert_eq!(value["target"], REQUEST_LOG_TARGET);
        assert_eq!(value["fields"]["message"], "request");
        assert_eq!(value["fields"]["core"], 3);
        assert_eq!(value["fields"]["method"], "GET");
        assert_eq!(value["fields"]["path"], "/a\"b\\c");
        assert_eq!(value["fields"]["status"], 200);
        assert_eq!(value["fields"]["duration_us"], 42);
        assert!(text.ends_with("}\n") && text.matches('\n').count() == 1);
    }

    #[test]
    fn control_characters_cannot_split_a_line() {
        let line = RequestLine {
            path: "/a\nb\rc\u{1b}[31m",
            ..LINE
        };
        for mode in [LogMode::Human, LogMode::Json] {
            let text = formatted(mode, &line, 0);
            assert_eq!(text.matches('\n').count(), 1, "{text:?}");
            assert!(text.ends_with('\n') && !text.contains('\r') && !text.contains('\u{1b}'));
        }
        let human = formatted(LogMode::Human, &line, 0);
        assert!(
            human.contains("path=/a\\u{000a}b\\u{000d}c\\u{001b}[31m"),
            "{human:?}"
        );
        let json = formatted(LogMode::Json, &line, 0);
        let value: serde_json::Value = serde_json::from_str(&json).expect("one JSON object");
        assert_eq!(value["fields"]["path"], line.path);
    }

    #[test]
    fn timestamps_follow_the_clock_across_seconds() {
        let mut formatter = LineFormatter::new(LogMode::Human);
        let mut output = Vec::new();
        formatter.write(
            &mut output,
            &LINE,
            UNIX_EPOCH + Duration::from_micros(999_999),
        );
        formatter.write(
            &mut output,
            &LINE,
            UNIX_EPOCH + Duration::from_micros(1_000_000),
        );
        let text = String::from_utf8(output).expect("lines are UTF-8");
        let stamps: Vec<&str> = text.lines().map(|line| &line[..27]).collect();
        assert_eq!(
            stamps,
            ["1970-01-01T00:00:00.999999Z", "1970-01-01T00:00:01.000000Z"]
        );
    }
}
