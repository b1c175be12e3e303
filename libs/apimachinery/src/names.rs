//! Name validators with Kubernetes' exact messages (`Vec<String>`, empty = valid), `generateName`
//! handling, and kcp logical-cluster names and workspace paths.
//!
//! The character classes are checked by hand instead of with regexes: each rule is a tiny
//! grammar, and the crate stays free of a regex engine.

use crate::field_error::FieldError;

pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
pub const LABEL_KEY_NAME_MAX_LENGTH: usize = 63;
/// Upper bound on the summed length of all annotation keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// "must be no more than N characters".
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// Kubernetes' `RegexError`: the message, examples and the pattern used.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(ex);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(fmt);
    s.push_str("')");
    s
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-'),
        _ => false,
    }
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// DNS-1123 label (namespace names, among others): at most 63 characters.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain that is not a label can only be failing on its dots.
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// DNS-1123 subdomain (most object names): at most 253 characters.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// DNS-1035 label (service names): must start with a letter.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Names that end up as one URL path segment (RBAC objects, custom resources).
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    is_valid_path_segment_prefix(name)
}

/// Like [`is_valid_path_segment_name`] but for a `generateName` prefix: a suffix follows, so
/// `.` and `..` are fine.
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Qualified name (label keys, annotation keys, finalizers): optional DNS-subdomain prefix and
/// `/`, then a name of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_KEY_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(LABEL_KEY_NAME_MAX_LENGTH)
        ));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Label value: empty, or at most 63 alphanumerics with `-`, `_`, `.` inside.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Keys of `ConfigMap.data`, `ConfigMap.binaryData` and `Secret.data`.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let charset_ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !charset_ok {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    // Keys become file names when mounted, so they may not walk up the directory tree.
    if value == "." {
        errs.push("must not be '.'".to_owned());
    } else if value == ".." {
        errs.push("must not be '..'".to_owned());
    } else if value.starts_with("..") {
        errs.push("must not start with '..'".to_owned());
    }
    errs
}

/// Replaces a trailing dash of a `generateName` prefix so the prefix can be checked with the
/// full-name rules (random characters always follow it).
fn mask_trailing_dash(name: &str) -> std::borrow::Cow<'_, str> {
    match name.strip_suffix('-') {
        Some(rest) if name.len() > 1 => format!("{rest}a").into(),
        _ => name.into(),
    }
}

/// Name rule of most kinds (ConfigMap, Secret, ServiceAccount, ...); `prefix` = checking a
/// `generateName`.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// Name rule of Namespace; `prefix` = checking a `generateName`.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// Name rule of RBAC kinds and custom resources; `prefix` = checking a `generateName`.
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_valid_path_segment_prefix(name)
    } else {
        is_valid_path_segment_name(name)
    }
}

/// Validates `metadata.labels` (keys are qualified names, values label values).
/// `field` is the path prefix, usually `metadata.labels`.
pub fn validate_labels<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    field: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        errs.extend(
            is_qualified_name(k)
                .into_iter()
                .map(|m| FieldError::invalid(field, k, m)),
        );
        errs.extend(
            is_valid_label_value(v)
                .into_iter()
                .map(|m| FieldError::invalid(field, v, m)),
        );
    }
    errs
}

/// Validates `metadata.annotations`: keys are qualified names (case-insensitive) and all keys
/// plus values together stay within 256 KiB.
pub fn validate_annotations<'a>(
    annotations: impl IntoIterator<Item = (&'a str, &'a str)>,
    field: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        errs.extend(
            is_qualified_name(&k.to_lowercase())
                .into_iter()
                .map(|m| FieldError::invalid(field, k, m)),
        );
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(
            field,
            TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
        ));
    }
    errs
}

/// Alphabet of generated suffixes: no vowels (no accidental words) and no look-alike characters.
pub const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const GENERATED_SUFFIX_LENGTH: usize = 5;
/// A `generateName` prefix is cut to this many bytes so prefix + suffix fit in 63.
pub const MAX_GENERATED_NAME_PREFIX_LENGTH: usize = 63 - GENERATED_SUFFIX_LENGTH;

/// Generates names from `generateName` prefixes. Seeded by the caller so this crate needs no
/// entropy source; successive calls (retries after a name clash) give different suffixes.
#[derive(Debug, Clone)]
pub struct NameGenerator {
    state: u64,
}

impl NameGenerator {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// splitmix64: tiny, fast and well distributed, which is all a name suffix needs.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `base` (cut to 58 bytes, on a character boundary) followed by 5 random characters.
    pub fn generate(&mut self, base: &str) -> String {
        let mut cut = base.len().min(MAX_GENERATED_NAME_PREFIX_LENGTH);
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut name = String::with_capacity(cut + GENERATED_SUFFIX_LENGTH);
        name.push_str(&base[..cut]);
        for _ in 0..GENERATED_SUFFIX_LENGTH {
            let n = GENERATE_NAME_ALPHABET.len() as u64;
            let idx = (self.next_u64() % n) as usize;
            name.push(char::from(GENERATE_NAME_ALPHABET[idx]));
        }
        name
    }
}

/// One-shot [`NameGenerator::generate`].
pub fn generate_name(base: &str, seed: u64) -> String {
    NameGenerator::new(seed).generate(base)
}

/// Prefix of kcp's system logical clusters (`system:admin`, `system:cache:server`, ...).
pub const SYSTEM_CLUSTER_PREFIX: &str = "system:";

/// One logical-cluster name segment: `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`.
fn is_cluster_name_segment(s: &str) -> bool {
    s.len() <= 63 && matches_dns1123_label(s)
}

/// A kcp logical-cluster name: one segment, or `system:` followed by colon-joined segments.
pub fn is_valid_cluster_name(name: &str) -> bool {
    if is_cluster_name_segment(name) {
        return true;
    }
    match name.strip_prefix(SYSTEM_CLUSTER_PREFIX) {
        Some(rest) => rest.split(':').all(is_cluster_name_segment),
        None => false,
    }
}

/// `n` in lower-case base 36, as kcp spells the logical-cluster names it generates.
pub fn base36(mut n: u128) -> String {
    const DIGITS: &[u8] = BASE36_DIGITS;
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.iter().rev().map(|&b| char::from(b)).collect()
}

/// `bytes` as one big-endian number in base 36, with a `0` in front for each leading zero byte
/// (all zeros: one `0` per byte), as kcp's `BytesPad` encodes its hashes.
pub fn base36_pad(bytes: &[u8]) -> String {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    let mut out = "0".repeat(zeros);
    out.push_str(&in_base(&bytes[zeros..], BASE36_DIGITS));
    out
}

/// `bytes` as one big-endian number in base 62 (`0-9a-zA-Z`, Go's `big.Int.Text(62)`), as kcp's
/// `Base62` encodes the hashes in its labels: leading zero bytes add nothing, zero is `0`.
pub fn base62(bytes: &[u8]) -> String {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    match in_base(&bytes[zeros..], BASE62_DIGITS) {
        digits if digits.is_empty() => "0".to_string(),
        digits => digits,
    }
}

const BASE36_DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
const BASE62_DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The big-endian number `number` (no leading zero byte) in the base of `digits`; empty for none.
fn in_base(number: &[u8], digits: &[u8]) -> String {
    let base = digits.len() as u32;
    let mut number: Vec<u8> = number.to_vec();
    let mut out = Vec::new();
    // Long division, most significant byte first, until the number is zero.
    while !number.is_empty() {
        let mut rest = 0u32;
        let mut quotient = Vec::with_capacity(number.len());
        for b in &number {
            let acc = (rest << 8) | u32::from(*b);
            let q = acc / base;
            rest = acc % base;
            if !(quotient.is_empty() && q == 0) {
                quotient.push(q as u8);
            }
        }
        out.push(digits[rest as usize]);
        number = quotient;
    }
    out.iter().rev().map(|&d| char::from(d)).collect()
}

/// A workspace path: colon-joined segments `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (`root:org:team`).
pub fn is_valid_path(path: &str) -> bool {
    path.split(':').all(matches_dns1123_label)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {

    #[test]
    fn base36_spells_numbers() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
        assert_eq!(base36(u128::from(u64::MAX)), "3w5e11264sgsf");
    }

    use super::*;

    #[test]
    fn base62_is_go_big_int_text() {
        assert_eq!(base62(&[255]), "47");
        assert_eq!(base62(&[0, 1, 0]), "48");
        assert_eq!(base62(&[61]), "Z");
        assert_eq!(base62(&[0, 0]), "0");
        assert_eq!(base36_pad(&[0, 1]), "01");
    }

    const LABEL_RE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN_RE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const KEY_NAME_RE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_RE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn dns1123_label() {
        let long = "a".repeat(64);
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("a", vec![]),
            ("my-name", vec![]),
            ("123-abc", vec![]),
            ("", vec![LABEL_RE]),
            ("-a", vec![LABEL_RE]),
            ("a-", vec![LABEL_RE]),
            ("A", vec![LABEL_RE]),
            ("a.b", vec!["must not contain dots"]),
            (&long, vec!["must be no more than 63 characters"]),
        ];
        for (input, want) in cases {
            assert_eq!(is_dns1123_label(input), want, "{input}");
        }
        assert!(is_dns1123_label(&"a".repeat(63)).is_empty());
    }

    #[test]
    fn dns1123_subdomain() {
        let long = format!("{}.{}", "a".repeat(63), "b".repeat(190));
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("example.com", vec![]),
            ("a", vec![]),
            ("a..b", vec![SUBDOMAIN_RE]),
            (".a", vec![SUBDOMAIN_RE]),
            ("a.", vec![SUBDOMAIN_RE]),
            ("Upper", vec![SUBDOMAIN_RE]),
            ("a_b", vec![SUBDOMAIN_RE]),
            (&long, vec!["must be no more than 253 characters"]),
        ];
        for (input, want) in cases {
            assert_eq!(is_dns1123_subdomain(input), want, "{input}");
        }
    }

    #[test]
    fn dns1035_label() {
        assert!(is_dns1035_label("abc-123").is_empty());
        assert_eq!(is_dns1035_label("1abc").len(), 1);
    }

    #[test]
    fn path_segment_names() {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("ok", vec![]),
            ("a.b:c", vec![]),
            (".", vec!["may not be '.'"]),
            ("..", vec!["may not be '..'"]),
            ("a/b", vec!["may not contain '/'"]),
            ("a/%b", vec!["may not contain '/'", "may not contain '%'"]),
        ];
        for (input, want) in cases {
            assert_eq!(is_valid_path_segment_name(input), want, "{input}");
        }
        assert!(validate_path_segment_name("..", true).is_empty());
    }

    #[test]
    fn qualified_names() {
        let long = "a".repeat(64);
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("app", vec![]),
            ("example.com/app", vec![]),
            ("kubernetes.io/metadata.name", vec![]),
            ("/app", vec!["prefix part must be non-empty".into()]),
            (
                "example.com/",
                vec!["name part must be non-empty".into(), KEY_NAME_RE.into()],
            ),
            (
                "Example.com/app",
                vec![format!("prefix part {SUBDOMAIN_RE}")],
            ),
            (
                "a/b/c",
                vec![format!(
                    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                )],
            ),
            ("-app", vec![KEY_NAME_RE.into()]),
            (
                &long,
                vec!["name part must be no more than 63 characters".into()],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(is_qualified_name(input), want, "{input}");
        }
    }

    #[test]
    fn label_values() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("my_value.1-2").is_empty());
        assert_eq!(is_valid_label_value("a b"), vec![VALUE_RE]);
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn config_map_keys() {
        let re = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("a", vec![]),
            (".env", vec![]),
            ("KEY_NAME", vec![]),
            ("", vec![re]),
            ("a/b", vec![re]),
            (".", vec!["must not be '.'"]),
            ("..", vec!["must not be '..'"]),
            ("..a", vec!["must not start with '..'"]),
        ];
        for (input, want) in cases {
            assert_eq!(is_config_map_key(input), want, "{input}");
        }
        assert_eq!(
            is_config_map_key(&"a".repeat(254)),
            vec!["must be no more than 253 characters"]
        );
    }

    #[test]
    fn generate_name_prefix_rules() {
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
        assert!(name_is_dns_label("ns-", true).is_empty());
        assert!(!name_is_dns_label("-", true).is_empty());
    }

    #[test]
    fn labels_and_annotations() {
        assert!(validate_labels([("app", "web")], "metadata.labels").is_empty());
        let errs = validate_labels([("app", "a b")], "metadata.labels");
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .to_string()
                .starts_with("metadata.labels: Invalid value: \"a b\": a valid label")
        );
        // Annotation keys are checked case-insensitively.
        assert!(
            validate_annotations([("Example.COM/Key", "v")], "metadata.annotations").is_empty()
        );
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
        let errs = validate_annotations([("k", big.as_str())], "metadata.annotations");
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        let fits = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - 1);
        assert!(validate_annotations([("k", fits.as_str())], "metadata.annotations").is_empty());
    }

    #[test]
    fn generated_names() {
        let a = generate_name("web-", 1);
        assert_eq!(a.len(), 9);
        assert!(a.starts_with("web-"));
        assert!(a[4..].bytes().all(|c| GENERATE_NAME_ALPHABET.contains(&c)));
        assert_eq!(a, generate_name("web-", 1), "same seed, same name");
        let mut g = NameGenerator::new(7);
        assert_ne!(g.generate("x-"), g.generate("x-"), "retries differ");
        let long = generate_name(&"p".repeat(100), 3);
        assert_eq!(long.len(), 63);
        // Multi-byte prefixes are cut on a character boundary.
        let multi = generate_name(&"é".repeat(40), 3);
        assert!(multi.len() <= 63);
        assert!(is_dns1123_subdomain(&generate_name("abc-", 99)).is_empty());
    }

    #[test]
    fn cluster_names_and_paths() {
        for ok in [
            "root",
            "1a2b3c",
            "system:admin",
            "system:system-crds",
            "system:cache:server",
            "a",
        ] {
            assert!(is_valid_cluster_name(ok), "{ok}");
        }
        for bad in [
            "",
            "Root",
            "root:org",
            "-a",
            "a-",
            "system:",
            "system::a",
            "system:A",
            &"a".repeat(64),
        ] {
            assert!(!is_valid_cluster_name(bad), "{bad}");
        }
        for ok in ["root", "root:org:team", "user:alice", "a-b:c"] {
            assert!(is_valid_path(ok), "{ok}");
        }
        for bad in ["", "root:", ":root", "root::a", "root:Org", "root:-a"] {
            assert!(!is_valid_path(bad), "{bad}");
        }
    }

    #[test]
    fn base36_pad_is_kcps_bytes_pad() {
        assert_eq!(base36_pad(&[]), "");
        assert_eq!(base36_pad(&[0, 0]), "00");
        assert_eq!(base36_pad(&[0, 36]), "010");
        assert_eq!(base36_pad(&[1, 0]), base36(256));
        let big = [0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab];
        let n = big.iter().fold(0u128, |n, b| (n << 8) | u128::from(*b));
        assert_eq!(base36_pad(&big), base36(n));
    }
}
