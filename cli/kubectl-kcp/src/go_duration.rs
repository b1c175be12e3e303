//! Go's `time.ParseDuration`, which kcp's `--timeout` flags take: `30s`, `1m30s`, `1.5h`, `500ms`.

use std::time::Duration;

/// Go's errors, in its words; negative durations are refused, a timeout cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit { unit: String, text: String },
    #[error("negative duration {0:?}")]
    Negative(String),
}

/// Nanoseconds per unit.
const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Fraction digits beyond these cannot change a nanosecond count (and would overflow below).
const MAX_FRACTION_DIGITS: usize = 18;

/// A sequence of decimal numbers, each with an optional fraction and a unit.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(text.to_owned());
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let whole_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (whole, after) = rest.split_at(whole_len);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(f) => f.split_at(f.bytes().take_while(u8::is_ascii_digit).count()),
            None => ("", after),
        };
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_len = after
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(DurationError::MissingUnit(text.to_owned()));
        }
        let scale = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, scale)| *scale)
            .ok_or_else(|| DurationError::UnknownUnit {
                unit: unit.to_owned(),
                text: text.to_owned(),
            })?;
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| invalid())?
        };
        let mut part = whole.checked_mul(scale).ok_or_else(invalid)?;
        if !fraction.is_empty() {
            let digits = &fraction[..fraction.len().min(MAX_FRACTION_DIGITS)];
            let value: u128 = digits.parse().map_err(|_| invalid())?;
            let denominator = 10u128.pow(digits.len() as u32);
            let scaled = value.checked_mul(scale).ok_or_else(invalid)? / denominator;
            part = part.checked_add(scaled).ok_or_else(invalid)?;
        }
        nanos = nanos.checked_add(part).ok_or_else(invalid)?;
        rest = after;
    }
    if negative && nanos > 0 {
        return Err(DurationError::Negative(text.to_owned()));
    }
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| invalid())?;
    let subsec = u32::try_from(nanos % 1_000_000_000).map_err(|_| invalid())?;
    Ok(Duration::new(secs, subsec))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let d = |s: &str| parse(s).unwrap();
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("1m30s"), Duration::from_secs(90));
        assert_eq!(d("1.5h"), Duration::from_secs(5400));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d(".5s"), Duration::from_millis(500));
        assert_eq!(d("1.s"), Duration::from_secs(1));
        assert_eq!(
            d("2h45m0.5s"),
            Duration::from_millis((2 * 3600 + 45 * 60) * 1000 + 500)
        );
        assert_eq!(d("10us"), Duration::from_micros(10));
        assert_eq!(d("10µs"), Duration::from_micros(10));
        assert_eq!(d("7ns"), Duration::from_nanos(7));
        assert_eq!(d("0"), Duration::ZERO);
        assert_eq!(d("+0"), Duration::ZERO);
        assert_eq!(d("-0s"), Duration::ZERO);
    }

    #[test]
    fn go_errors() {
        assert_eq!(parse(""), Err(DurationError::Invalid(String::new())));
        assert_eq!(parse("."), Err(DurationError::Invalid(".".into())));
        assert_eq!(parse("s"), Err(DurationError::Invalid("s".into())));
        assert_eq!(
            parse("10").map_err(|e| e.to_string()),
            Err("time: missing unit in duration \"10\"".into())
        );
        assert_eq!(
            parse("1d").map_err(|e| e.to_string()),
            Err("time: unknown unit \"d\" in duration \"1d\"".into())
        );
        assert_eq!(parse("-1s"), Err(DurationError::Negative("-1s".into())));
        assert!(parse("99999999999999999999999999999999999999999h").is_err());
    }
}
