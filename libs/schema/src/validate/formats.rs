//! String formats custom-resource validation checks (the go-openapi `strfmt` registry kube-apiserver
//! uses). Formats not known here are accepted, as Kubernetes ignores unsupported formats.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use base64::Engine;
use regex::Regex;

/// Whether `value` is valid for `format`; `None` when the format is not checked at all.
pub(crate) fn check(format: &str, value: &str) -> Option<bool> {
    Some(match format {
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(value)
            .is_ok(),
        "date" => is_date(value),
        "date-time" | "datetime" => is_date_time(value),
        "uuid" => matches(&UUID, value),
        "uuid3" => matches(&UUID3, value),
        "uuid4" => matches(&UUID4, value),
        "uuid5" => matches(&UUID5, value),
        "ipv4" => value.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => value.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(value),
        "mac" => matches(&MAC, value),
        "hostname" => is_hostname(value),
        "email" => matches(&EMAIL, value),
        "hexcolor" => matches(&HEX_COLOR, value),
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "duration" => matches(&DURATION, value),
        _ => return None,
    })
}

fn regex(pattern: &str) -> Regex {
    // The patterns below are constants of this file, exercised by its tests.
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("constant pattern compiles")
}

fn matches(re: &LazyLock<Regex>, value: &str) -> bool {
    re.is_match(value)
}

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static MAC: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$")
});
static EMAIL: LazyLock<Regex> = LazyLock::new(|| regex(r"^[^@\s]+@[^@\s]+\.[^@\s]+$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*)+$",
    )
});
static TIME: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});

/// `YYYY-MM-DD`, a real calendar day.
fn is_date(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = value.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 date-time: a date, `T` (any case), a time with a zone.
fn is_date_time(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let Some((date, time)) = lower.split_once('t') else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let Some(caps) = TIME.captures(time) else {
        return false;
    };
    let part = |index: usize| {
        caps.get(index)
            .and_then(|m| m.as_str().parse::<u32>().ok())
            .unwrap_or(99)
    };
    part(1) <= 23 && part(2) <= 59 && part(3) <= 59
}

fn is_cidr(value: &str) -> bool {
    let Some((address, prefix)) = value.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    if address.parse::<Ipv4Addr>().is_ok() {
        prefix <= 32
    } else {
        address.parse::<Ipv6Addr>().is_ok() && prefix <= 128
    }
}

/// RFC 1123 host names (labels of letters, digits and inner hyphens, at most 255 bytes).
fn is_hostname(value: &str) -> bool {
    let value = value.strip_suffix('.').unwrap_or(value);
    !value.is_empty()
        && value.len() <= 255
        && value.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_formats() {
        assert_eq!(check("date-time", "2024-02-29T10:00:00Z"), Some(true));
        assert_eq!(check("date-time", "2024-02-30T10:00:00Z"), Some(false));
        assert_eq!(
            check("date-time", "2024-01-01T10:00:00.5+02:00"),
            Some(true)
        );
        assert_eq!(check("date-time", "2024-01-01 10:00:00Z"), Some(false));
        assert_eq!(check("date", "2023-02-29"), Some(false));
        assert_eq!(check("date", "2024-12-31"), Some(true));
        assert_eq!(check("byte", "aGVsbG8="), Some(true));
        assert_eq!(check("byte", "not base64!"), Some(false));
        assert_eq!(
            check("uuid", "123e4567-e89b-12d3-a456-426614174000"),
            Some(true)
        );
        assert_eq!(check("uuid", "123"), Some(false));
        assert_eq!(check("ipv4", "10.0.0.1"), Some(true));
        assert_eq!(check("ipv4", "10.0.0.256"), Some(false));
        assert_eq!(check("cidr", "10.0.0.0/8"), Some(true));
        assert_eq!(check("cidr", "10.0.0.0/33"), Some(false));
        assert_eq!(check("hostname", "a.example.com"), Some(true));
        assert_eq!(check("hostname", "-a.com"), Some(false));
        assert_eq!(check("duration", "1h30m"), Some(true));
        assert_eq!(check("duration", "soon"), Some(false));
        assert_eq!(check("mac", "00:11:22:33:44:55"), Some(true));
        assert_eq!(check("email", "a@b.io"), Some(true));
        assert_eq!(check("int32", "x"), None);
        assert_eq!(check("my-format", "x"), None);
    }
}
