//! The `date` response header value (IMF-fixdate, RFC 9110 §5.6.7), formatted at most once
//! per second per thread.
//!
//! Invariant: the cached text always describes the second it is tagged with.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) const DATE_BYTES: usize = 29;

pub(crate) const SECONDS_PER_DAY: u64 = 86_400;
const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

thread_local! {
    static CACHE: Cell<(u64, [u8; DATE_BYTES])> = const { Cell::new((u64::MAX, [0; DATE_BYTES])) };
}

/// The current date as an IMF-fixdate.
pub(crate) fn now() -> [u8; DATE_BYTES] {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|duration| duration.as_secs())
        .unwrap_or(0);
    CACHE.with(|cache| {
        let (cached_second, text) = cache.get();
        if cached_second == seconds {
            return text;
        }
        let text = format_imf_fixdate(seconds);
        cache.set((seconds, text));
        text
    })
}

/// Formats seconds since the Unix epoch as an IMF-fixdate.
pub(crate) fn format_imf_fixdate(seconds: u64) -> [u8; DATE_BYTES] {
    let days = seconds / SECONDS_PER_DAY;
    let second_of_day = seconds % SECONDS_PER_DAY;
    let (year, month, day) = civil_from_days(days);
    let weekday = WEEKDAYS[(days % 7) as usize];
    let text = format!(
        "{weekday}, {day:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        MONTHS[(month - 1) as usize],
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    );
    let mut bytes = [b' '; DATE_BYTES];
    let length = text.len().min(DATE_BYTES);
    bytes[..length].copy_from_slice(&text.as_bytes()[..length]);
    bytes
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
pub(crate) fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(&format_imf_fixdate(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            &format_imf_fixdate(784_111_777),
            b"Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            &format_imf_fixdate(951_782_400),
            b"Tue, 29 Feb 2000 00:00:00 GMT"
        );
        assert_eq!(
            &format_imf_fixdate(4_102_444_799),
            b"Thu, 31 Dec 2099 23:59:59 GMT"
        );
    }

    #[test]
    fn cached_date_has_the_fixdate_shape() {
        let text = now();
        assert_eq!(&text[25..], b" GMT");
        assert_eq!(now().len(), DATE_BYTES);
    }
}
