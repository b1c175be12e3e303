//! String formats custom-resource validation checks (the go-openapi `strfmt` registry kube-apiserver
//! uses). Formats not known here are accepted, as Kubernetes ignores unsupported formats.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use base64::Engine;
use regex::Regex;

/// Whether `value` is valid for `format`; `None` when the format is not checked at all. Names are
/// compared without dashes, as go-openapi does (`date-time` is `datetime`).
pub(crate) fn check(format: &str, value: &str) -> Option<bool> {
    Some(match format.replace('-', "").as_str() {
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(value)
            .is_ok(),
        "date" => is_date(value),
        "datetime" => is_date_time(value),
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
        "uri" => matches(&URI, value),
        "hexcolor" => matches(&HEX_COLOR, value),
        "rgbcolor" => matches(&RGB_COLOR, value),
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "duration" => matches(&DURATION, value),
        "ssn" => matches(&SSN, value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        // Kubernetes names (1.34+): a DNS label and a DNS subdomain.
        "k8sshortname" => crate::crd::dns1123_label_ok(value),
        "k8slongname" => crate::crd::dns1123_subdomain_ok(value),
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
static URI: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^(/[^\s]*|[A-Za-z][A-Za-z0-9+.-]*:[^\s]*)$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
});
static SSN: LazyLock<Regex> = LazyLock::new(|| regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
    )
});
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*)+$",
    )
});
static TIME: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});

/// ISBN digits with spaces and dashes taken out.
fn isbn_digits(value: &str) -> String {
    value.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

fn is_isbn10(value: &str) -> bool {
    let digits = isbn_digits(value);
    let bytes = digits.as_bytes();
    if bytes.len() != 10
        || !bytes[..9].iter().all(u8::is_ascii_digit)
        || !(bytes[9].is_ascii_digit() || bytes[9] == b'X')
    {
        return false;
    }
    let sum: u32 = bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let digit = if *b == b'X' { 10 } else { u32::from(b - b'0') };
            (i as u32 + 1) * digit
        })
        .sum();
    sum.is_multiple_of(11)
}

fn is_isbn13(value: &str) -> bool {
    let digits = isbn_digits(value);
    let bytes = digits.as_bytes();
    if bytes.len() != 13 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = bytes[..12]
        .iter()
        .enumerate()
        .map(|(i, b)| u32::from(b - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    (10 - sum % 10) % 10 == u32::from(bytes[12] - b'0')
}

/// Known card number shapes (non-digits ignored) with a valid Luhn checksum.
fn is_credit_card(value: &str) -> bool {
    let digits: String = value.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

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
        assert_eq!(check("datetime", "2024-02-29T10:00:00Z"), Some(true));
        assert_eq!(check("uri", "https://example.com/x"), Some(true));
        assert_eq!(check("uri", "not a uri"), Some(false));
        assert_eq!(check("rgbcolor", "rgb(255, 0, 10)"), Some(true));
        assert_eq!(check("rgbcolor", "rgb(256,0,0)"), Some(false));
        assert_eq!(check("ssn", "123-45-6789"), Some(true));
        assert_eq!(check("isbn10", "0-321-75104-3"), Some(true));
        assert_eq!(check("isbn10", "0321751044"), Some(false));
        assert_eq!(check("isbn13", "978-0321751041"), Some(true));
        assert_eq!(check("isbn", "9780321751042"), Some(false));
        assert_eq!(check("creditcard", "4111 1111 1111 1111"), Some(true));
        assert_eq!(check("creditcard", "4111 1111 1111 1112"), Some(false));
        assert_eq!(check("k8s-short-name", "my-app"), Some(true));
        assert_eq!(check("k8s-short-name", "my.app"), Some(false));
        assert_eq!(check("k8s-long-name", "my.app"), Some(true));
        assert_eq!(check("password", "anything"), None);
        assert_eq!(check("int32", "x"), None);
        assert_eq!(check("my-format", "x"), None);
    }
}
