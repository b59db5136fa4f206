//! UTC calendar days, as the allowance ledger (a run's per-day figure) and
//! replay fixtures (`captured_at`) write them: `YYYY-MM-DD`. One place, and
//! chrono's calendar rather than one of our own.

use chrono::{DateTime, NaiveDate, Utc};
use std::time::SystemTime;

/// Milliseconds since the Unix epoch, as the store stamps its rows.
pub use crate::store::now_ms;

/// The UTC day of `at`, `YYYY-MM-DD`.
pub fn utc_day(at: SystemTime) -> String {
    DateTime::<Utc>::from(at).format("%Y-%m-%d").to_string()
}

/// `at_ms` (milliseconds since the Unix epoch) as RFC 3339 in UTC, to the
/// millisecond: `2026-12-05T06:38:33.123Z`. Empty if out of range.
pub fn rfc3339_ms(at_ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(at_ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Whether `text` is a real calendar day written `YYYY-MM-DD`.
pub fn is_day(text: &str) -> bool {
    // chrono also reads `+2026-12-1`; the fixtures' form is exactly ten
    // characters, digits but for the two dashes.
    let shaped = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    shaped && NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_times() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_796_452_550_103), "2026-12-05T06:35:50.103Z");
    }

    #[test]
    fn utc_days() {
        assert_eq!(utc_day(UNIX_EPOCH), "1970-01-01");
        assert_eq!(
            utc_day(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29"
        );
        // 2026-12-01T00:00:00Z and one second before it.
        assert_eq!(
            utc_day(UNIX_EPOCH + Duration::from_secs(1_796_083_200)),
            "2026-12-01"
        );
        assert_eq!(
            utc_day(UNIX_EPOCH + Duration::from_secs(1_796_083_199)),
            "2026-11-30"
        );
    }

    #[test]
    fn days_are_checked_against_the_calendar() {
        assert!(is_day("2026-12-01") && is_day("2000-02-29"));
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2025-02-29",
            "01-12-2026",
            "2026-12-01T00:00",
            "2026-1-01",
            "+2026-12-1",
        ] {
            assert!(!is_day(bad), "{bad}");
        }
    }
}
