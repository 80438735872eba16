//! Parsing of human durations on the command line: `10s`, `500ms`, `2m`,
//! `1.5s`, `250us`, or a bare number of seconds.
//!
//! Invariant: the result is finite, non-negative and at most
//! `DURATION_ARGUMENT_SECONDS_MAX`.

use std::time::Duration;

/// The longest duration accepted on the command line: one day.
pub const DURATION_ARGUMENT_SECONDS_MAX: f64 = 86_400.0;

/// Parses `text` into a duration.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|character: char| !(character.is_ascii_digit() || character == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (examples: 10s, 500ms, 2m)"))?;
    let seconds_per_unit = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        other => {
            return Err(format!(
                "`{other}` is not a duration unit (use us, ms, s or m)"
            ));
        }
    };
    let seconds = value * seconds_per_unit;
    if !seconds.is_finite() || !(0.0..=DURATION_ARGUMENT_SECONDS_MAX).contains(&seconds) {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds_parse() {
        assert_eq!(
            parse_duration("10s").expect("parse_duration succeeds"),
            Duration::from_secs(10)
        );
        assert_eq!(
            parse_duration("10").expect("parse_duration succeeds"),
            Duration::from_secs(10)
        );
        assert_eq!(
            parse_duration("500ms").expect("parse_duration succeeds"),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_duration("2m").expect("parse_duration succeeds"),
            Duration::from_secs(120)
        );
        assert_eq!(
            parse_duration("1.5s").expect("parse_duration succeeds"),
            Duration::from_millis(1_500)
        );
        assert_eq!(
            parse_duration("250us").expect("parse_duration succeeds"),
            Duration::from_micros(250)
        );
    }

    #[test]
    fn garbage_and_out_of_range_are_rejected() {
        assert!(parse_duration("").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("10h").is_err());
        assert!(parse_duration("2000m").is_err());
    }
}
