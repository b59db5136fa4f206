//! Checks of the arguments an agent writes that every connector makes the
//! same way: bounded counts, calendar dates and JSON values. Each refusal is an
//! `invalid-input` error that names the argument and what it may be, before
//! anything is reserved or sent.

use crate::ToolError;

/// `value`, or `default` when absent; refused outside `min..=max`.
pub fn bounded<T>(what: &str, value: Option<T>, default: T, min: T, max: T) -> Result<T, ToolError>
where
    T: PartialOrd + Copy + std::fmt::Display,
{
    let value = value.unwrap_or(default);
    // Written so that a NaN, which compares false with everything, is refused.
    if !(value >= min && value <= max) {
        return Err(ToolError::invalid(format!(
            "{what} must be between {min} and {max}, not {value}"
        )));
    }
    Ok(value)
}

/// A `json` argument (the contract's `json` type, e.g. `filter: json`) read
/// as `T` (a `serde_json::Value` for any JSON). The host has already checked
/// that the text is JSON and handed over its canonical text (keys sorted, no
/// spaces), so a refusal here says the value has the wrong shape for `T`.
pub fn json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, ToolError> {
    serde_json::from_str(text)
        .map_err(|e| ToolError::invalid(format!("{what} is not the JSON this tool takes: {e}")))
}

/// Whether `year` is a leap year of the Gregorian calendar.
fn leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

/// The days of `month` (1-12) in `year`.
pub fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// A calendar date `YYYY-MM-DD`, as `(year, month, day)`; anything else is
/// refused naming `what`.
pub fn date(what: &str, text: &str) -> Result<(u32, u32, u32), ToolError> {
    let bad = || ToolError::invalid(format!("{what} must be a date YYYY-MM-DD, not `{text}`"));
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return Err(bad());
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let s = &text[r];
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return Err(bad());
    };
    if y == 0 || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return Err(bad());
    }
    Ok((y, m, d))
}

/// A date range: both dates valid and `start` not after `end`.
pub fn date_range(start: &str, end: &str) -> Result<(), ToolError> {
    let from = date("the start date", start)?;
    let to = date("the end date", end)?;
    if from > to {
        return Err(ToolError::invalid(format!(
            "the start date {start} is after the end date {end}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_arguments_read_as_their_type() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Filter {
            property: String,
        }
        let text = r#"{"property":"Status"}"#;
        assert_eq!(
            json::<Filter>("filter", text).unwrap(),
            Filter {
                property: "Status".into()
            }
        );
        let any: serde_json::Value = json("filter", text).unwrap();
        assert_eq!(any["property"], "Status");
        let e = json::<Filter>("filter", "[1]").unwrap_err();
        assert!(matches!(e, ToolError::InvalidInput(m) if m.starts_with("filter is not the JSON")));
    }

    #[test]
    fn bounds_and_dates() {
        assert_eq!(bounded("limit", None, 20u32, 1, 100).unwrap(), 20);
        assert_eq!(bounded("limit", Some(100u32), 20, 1, 100).unwrap(), 100);
        let e = bounded("limit", Some(0u8), 20, 1, 100).unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidInput(m) if m == "limit must be between 1 and 100, not 0")
        );
        assert!(bounded("scale", Some(f64::NAN), 1.0, 0.01, 4.0).is_err());
        assert!(bounded("scale", Some(f64::INFINITY), 1.0, 0.01, 4.0).is_err());
        assert_eq!(date("d", "2024-02-29").unwrap(), (2024, 2, 29));
        for bad in [
            "2023-02-29",
            "2026-13-01",
            "2026-1-01",
            "20260101",
            "2026-12-0x",
            "0000-01-01",
            "2026-04-31",
        ] {
            assert!(date("d", bad).is_err(), "{bad}");
        }
        assert!(date_range("2026-01-01", "2026-01-31").is_ok());
        assert!(date_range("2026-02-01", "2026-01-31").is_err());
    }
}
