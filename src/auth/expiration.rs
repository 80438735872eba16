//! The `expiresAt` date of an API key: the formats Meilisearch accepts, the "must be in
//! the future" rule, and the RFC 3339 form dates are answered with.
//!
//! Accepted, tried in this order: RFC 3339 (offset kept as given), `YYYY-MM-DDTHH:MM:SS`,
//! `YYYY-MM-DD HH:MM:SS` and `YYYY-MM-DD` (the last three taken as UTC, a bare date as
//! midnight). The date must be strictly after `now`.

use std::fmt;

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, PrimitiveDateTime, Time};

/// A string that is not an acceptable expiration date; displays Meilisearch's message,
/// trailing newline included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpirationDateError(pub String);

impl fmt::Display for ExpirationDateError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            formatter,
            "`{}` is not a valid date. It should follow the RFC 3339 format to represents a date \
             or datetime in the future or specified as a null value. e.g. 'YYYY-MM-DD' or \
             'YYYY-MM-DD HH:MM:SS'.",
            self.0
        )
    }
}

impl std::error::Error for ExpirationDateError {}

/// Parses an expiration date given at `now`.
pub fn parse_expiration_date(
    text: &str,
    now: OffsetDateTime,
) -> Result<OffsetDateTime, ExpirationDateError> {
    let parsed = parse_any_format(text).ok_or_else(|| ExpirationDateError(text.to_string()))?;
    if parsed > now {
        Ok(parsed)
    } else {
        Err(ExpirationDateError(text.to_string()))
    }
}

fn parse_any_format(text: &str) -> Option<OffsetDateTime> {
    if let Ok(date_time) = OffsetDateTime::parse(text, &Rfc3339) {
        return Some(date_time);
    }
    let with_t = format_description!(
        "[year repr:full base:calendar]-[month repr:numerical]-[day]T[hour]:[minute]:[second]"
    );
    if let Ok(date_time) = PrimitiveDateTime::parse(text, with_t) {
        return Some(date_time.assume_utc());
    }
    let with_space = format_description!(
        "[year repr:full base:calendar]-[month repr:numerical]-[day] [hour]:[minute]:[second]"
    );
    if let Ok(date_time) = PrimitiveDateTime::parse(text, with_space) {
        return Some(date_time.assume_utc());
    }
    let date_only =
        format_description!("[year repr:full base:calendar]-[month repr:numerical]-[day]");
    Date::parse(text, date_only)
        .ok()
        .map(|date| PrimitiveDateTime::new(date, Time::MIDNIGHT).assume_utc())
}

/// Formats a date as RFC 3339, as the API answers dates.
pub fn format_rfc3339(date_time: OffsetDateTime) -> String {
    date_time
        .format(&Rfc3339)
        .unwrap_or_else(|_| format!("{date_time}"))
}

/// Parses a date this module formatted (persisted keys).
pub fn parse_rfc3339(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-21 15:00:00 UTC);

    #[test]
    fn every_accepted_format_parses_as_meilisearch_does() {
        let midnight = datetime!(2050-11-13 00:00:00 UTC);
        for text in [
            "2050-11-13T00:00:00Z",
            "2050-11-13T00:00:00",
            "2050-11-13 00:00:00",
            "2050-11-13",
        ] {
            assert_eq!(
                parse_expiration_date(text, NOW).expect("parse_expiration_date succeeds"),
                midnight,
                "{text}"
            );
        }
        let with_offset = parse_expiration_date("2050-11-13T01:00:00+01:00", NOW)
            .expect("parse_expiration_date succeeds");
        assert_eq!(with_offset, midnight);
        assert_eq!(format_rfc3339(with_offset), "2050-11-13T01:00:00+01:00");
    }

    #[test]
    fn past_and_present_dates_and_garbage_are_rejected() {
        for text in [
            "2010-11-13T00:00:00Z",
            "2026-11-21T15:00:00Z",
            "doggo",
            "2050-13-01",
            "",
        ] {
            let error = parse_expiration_date(text, NOW).unwrap_err();
            assert_eq!(error.0, text);
        }
        assert_eq!(
            ExpirationDateError("2010-11-13T00:00:00Z".into()).to_string(),
            "`2010-11-13T00:00:00Z` is not a valid date. It should follow the RFC 3339 format to \
             represents a date or datetime in the future or specified as a null value. e.g. \
             'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n"
        );
    }

    #[test]
    fn dates_format_like_the_time_crate_rfc3339() {
        assert_eq!(
            format_rfc3339(datetime!(2050-11-13 00:00:00 UTC)),
            "2050-11-13T00:00:00Z"
        );
        assert_eq!(
            format_rfc3339(datetime!(2024-08-08 17:05:55.791772 UTC)),
            "2024-08-08T17:05:55.791772Z"
        );
        let round_trip =
            parse_rfc3339("2024-08-08T17:05:55.791772Z").expect("parse_rfc3339 succeeds");
        assert_eq!(round_trip, datetime!(2024-08-08 17:05:55.791772 UTC));
    }
}
