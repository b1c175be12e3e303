//! Kubernetes' `resource.Quantity` as quota and the kinds' validation need it: parsing every form
//! the API accepts (`5`, `2k`, `1Mi`, `500m`, `1e3`), comparing, adding, rounding to units or
//! thousandths, and printing the canonical form Kubernetes writes back (`2000` → `2k`, `1024Ki` →
//! `1Mi`, `1.5k` → `1500`).
//!
//! Values are kept as an integer number of nano-units, so every quantity from `1n` to well beyond
//! `1E` is exact; Kubernetes rounds finer values up to the nano, and so does this.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// How a quantity prints: the family of its suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// No suffix or `n u m k M G T P E`.
    DecimalSi,
    /// `Ki Mi Gi Ti Pi Ei`.
    BinarySi,
    /// `e<exponent>` / `E<exponent>`.
    DecimalExponent,
}

#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Kubernetes' `ErrFormatWrong`.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// Kubernetes' `ErrNumeric`.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// Kubernetes' `ErrSuffix`.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// Beyond what this representation holds (about 10^29); Kubernetes would keep it exactly.
    #[error("quantity is too large")]
    TooLarge,
}

/// What a suffix multiplies by.
enum Scale {
    /// × 10^exp
    Decimal(i32),
    /// × 2^exp
    Binary(u32),
}

fn parse_suffix(suffix: &str) -> Result<(Scale, Format), QuantityError> {
    let decimal = |exp| Ok((Scale::Decimal(exp), Format::DecimalSi));
    let binary = |exp| Ok((Scale::Binary(exp), Format::BinarySi));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let exponent = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or(QuantityError::Suffix)?;
            let exp: i32 = exponent.parse().map_err(|_| QuantityError::Suffix)?;
            Ok((Scale::Decimal(exp), Format::DecimalExponent))
        }
    }
}

/// `numerator / denominator`, rounded away from zero (Kubernetes rounds sub-nano amounts up).
fn div_away(numerator: i128, denominator: i128) -> i128 {
    let q = numerator / denominator;
    if numerator % denominator == 0 {
        q
    } else {
        q + numerator.signum()
    }
}

fn pow10(exp: u32) -> Result<i128, QuantityError> {
    10i128.checked_pow(exp).ok_or(QuantityError::TooLarge)
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Quantity, QuantityError> {
        if text.is_empty() {
            return Err(QuantityError::Format);
        }
        let (negative, rest) = match text.as_bytes()[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_len);
        if !number.bytes().any(|b| b.is_ascii_digit()) {
            return Err(QuantityError::Format);
        }
        // The suffix grammar of the regular expression: letters, then an optional signed integer.
        let letters = suffix
            .find(|c: char| !"eEinumkKMGTP".contains(c))
            .unwrap_or(suffix.len());
        let tail = suffix[letters..]
            .strip_prefix(['+', '-'])
            .unwrap_or(&suffix[letters..]);
        if !tail.bytes().all(|b| b.is_ascii_digit()) {
            return Err(QuantityError::Format);
        }
        let (whole, fraction) = match number.split_once('.') {
            Some((w, f)) if !f.contains('.') => (w, f),
            Some(_) => return Err(QuantityError::Numeric),
            None => (number, ""),
        };
        let (scale, format) = parse_suffix(suffix)?;

        // mantissa × 10^-fraction_digits is the number as written.
        let mut mantissa: i128 = 0;
        for digit in whole.bytes().chain(fraction.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(digit - b'0')))
                .ok_or(QuantityError::TooLarge)?;
        }
        let fraction_digits = i32::try_from(fraction.len()).map_err(|_| QuantityError::TooLarge)?;
        let nanos = match scale {
            Scale::Decimal(exp) => {
                let shift = exp
                    .checked_add(9)
                    .and_then(|e| e.checked_sub(fraction_digits))
                    .ok_or(QuantityError::TooLarge)?;
                if shift >= 0 {
                    mantissa
                        .checked_mul(pow10(shift.unsigned_abs())?)
                        .ok_or(QuantityError::TooLarge)?
                } else if mantissa == 0 {
                    0
                } else {
                    // A divisor beyond i128 leaves less than one nano: round up to one.
                    match pow10(shift.unsigned_abs()) {
                        Ok(divisor) => div_away(mantissa, divisor),
                        Err(_) => 1,
                    }
                }
            }
            Scale::Binary(exp) => {
                let scaled = mantissa
                    .checked_mul(1i128 << exp)
                    .and_then(|m| m.checked_mul(NANOS_PER_UNIT))
                    .ok_or(QuantityError::TooLarge)?;
                div_away(scaled, pow10(fraction_digits.unsigned_abs())?)
            }
        };
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }
}

impl Quantity {
    /// A count, as Kubernetes' quota evaluators report it (`resource.NewQuantity(n, DecimalSI)`).
    pub fn from_count(count: i64) -> Quantity {
        Quantity {
            nanos: i128::from(count) * NANOS_PER_UNIT,
            format: Format::DecimalSi,
        }
    }

    /// A quantity as JSON holds it: a string, or a bare number (Kubernetes' unmarshalling takes
    /// both); `null` is the zero quantity.
    pub fn from_json(value: &serde_json::Value) -> Result<Quantity, QuantityError> {
        match value {
            serde_json::Value::String(s) => s.parse(),
            serde_json::Value::Number(n) => n.to_string().parse(),
            serde_json::Value::Null => Ok(Quantity::from_count(0)),
            _ => Err(QuantityError::Format),
        }
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// Whole units, rounded away from zero (`Quantity.Value`).
    pub fn value(&self) -> i128 {
        div_away(self.nanos, NANOS_PER_UNIT)
    }

    /// Thousandths, rounded away from zero (`Quantity.MilliValue`).
    pub fn milli_value(&self) -> i128 {
        div_away(self.nanos, NANOS_PER_UNIT / 1000)
    }

    /// The sum, in the format of `self` (as `Quantity.Add` keeps the receiver's format).
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        Some(Quantity {
            nanos: self.nanos.checked_add(other.nanos)?,
            format: self.format,
        })
    }

    /// The canonical form Kubernetes serialises.
    pub fn canonical(&self) -> String {
        self.to_string()
    }

    fn decimal_parts(&self) -> (i128, i32) {
        let mut mantissa = self.nanos;
        let mut exp: i32 = -9;
        while mantissa != 0 && mantissa % 10 == 0 {
            mantissa /= 10;
            exp += 1;
        }
        // Exponents are printed in steps of three (k, M, m, ...).
        match exp.rem_euclid(3) {
            1 => (mantissa * 10, exp - 1),
            2 => (mantissa * 100, exp - 2),
            _ => (mantissa, exp),
        }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Quantity) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let mut format = self.format;
        if format == Format::BinarySi
            && (self.nanos.abs() < 1024 * NANOS_PER_UNIT || self.nanos % NANOS_PER_UNIT != 0)
        {
            // Small or fractional binary amounts print as decimal, exactly as Kubernetes does.
            format = Format::DecimalSi;
        }
        match format {
            Format::BinarySi => {
                const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
                let mut units = self.nanos / NANOS_PER_UNIT;
                let mut step = 0;
                while step + 1 < SUFFIXES.len() && units % 1024 == 0 {
                    units /= 1024;
                    step += 1;
                }
                write!(f, "{units}{}", SUFFIXES[step])
            }
            Format::DecimalSi => {
                let (mantissa, exp) = self.decimal_parts();
                let suffix = match exp {
                    -9 => "n",
                    -6 => "u",
                    -3 => "m",
                    0 => "",
                    3 => "k",
                    6 => "M",
                    9 => "G",
                    12 => "T",
                    15 => "P",
                    18 => "E",
                    _ => return write!(f, "{mantissa}e{exp}"),
                };
                write!(f, "{mantissa}{suffix}")
            }
            Format::DecimalExponent => {
                let (mantissa, exp) = self.decimal_parts();
                if exp == 0 {
                    write!(f, "{mantissa}")
                } else {
                    write!(f, "{mantissa}e{exp}")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        text.parse::<Quantity>()
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .to_string()
    }

    #[test]
    fn canonical_forms_match_kubernetes() {
        for (input, want) in [
            ("0", "0"),
            ("2", "2"),
            ("2000", "2k"),
            ("1500", "1500"),
            ("1.5k", "1500"),
            ("2k", "2k"),
            ("1M", "1M"),
            ("0.5", "500m"),
            ("0.1", "100m"),
            ("500m", "500m"),
            ("1000m", "1"),
            ("1Mi", "1Mi"),
            ("1024Ki", "1Mi"),
            ("1.5Gi", "1536Mi"),
            ("512Ki", "512Ki"),
            ("0.5Ki", "512"),
            ("1536", "1536"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("12e6", "12e6"),
            ("1500e0", "1500"),
            ("+5", "5"),
            ("-5", "-5"),
            ("-2000", "-2k"),
            ("1n", "1n"),
            ("0.0000000001", "1n"),
            ("1E", "1E"),
            ("1000E", "1e21"),
            (".5", "500m"),
            ("5.", "5"),
        ] {
            assert_eq!(canonical(input), want, "canonical form of {input}");
        }
    }

    #[test]
    fn rejects_what_kubernetes_rejects() {
        for (input, err) in [
            ("", QuantityError::Format),
            ("abc", QuantityError::Format),
            ("k", QuantityError::Format),
            (".", QuantityError::Format),
            ("1 k", QuantityError::Format),
            ("1.2.3", QuantityError::Numeric),
            ("1K", QuantityError::Suffix),
            ("1Ki3", QuantityError::Suffix),
            ("1e", QuantityError::Suffix),
            ("1kk", QuantityError::Suffix),
        ] {
            assert_eq!(
                input.parse::<Quantity>().err(),
                Some(err),
                "parsing {input:?}"
            );
        }
        assert_eq!(
            "99999999999999999999999999999999999999999"
                .parse::<Quantity>()
                .err(),
            Some(QuantityError::TooLarge)
        );
    }

    #[test]
    fn compares_and_adds_by_value() {
        let q = |s: &str| s.parse::<Quantity>().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(q("1k"), q("1000"));
        assert_eq!(q("1Ki"), q("1024"));
        assert!(q("500m") < Quantity::from_count(1));
        assert!(q("2") > Quantity::from_count(1));
        assert_eq!(q("1500m").value(), 2);
        assert_eq!(q("-1500m").value(), -2);
        assert_eq!(q("1n").milli_value(), 1);
        assert_eq!(q("2k").milli_value(), 2_000_000);
        assert!(q("-1m").is_negative());
        let json = |v: serde_json::Value| Quantity::from_json(&v).map(|q| q.to_string());
        assert_eq!(json(serde_json::json!("1000m")).as_deref(), Ok("1"));
        assert_eq!(json(serde_json::json!(0.5)).as_deref(), Ok("500m"));
        assert_eq!(json(serde_json::json!(true)), Err(QuantityError::Format));
        let sum = Quantity::from_count(1999)
            .checked_add(&Quantity::from_count(1))
            .map(|s| s.to_string());
        assert_eq!(sum.as_deref(), Some("2k"));
    }
}
