//! Name rules of apimachinery's `util/validation` with their exact messages.

const DNS1123_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    // Go's RegexError: every example is followed by ", " and joined by " or ".
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{format}')"));
    out
}

fn is_label_1123(label: &str) -> bool {
    let bytes = label.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// `IsDNS1123Subdomain`.
pub(crate) fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push("must be no more than 253 characters".to_owned());
    }
    if !value.split('.').all(is_label_1123) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            &format!("{DNS1123_LABEL}(\\.{DNS1123_LABEL})*"),
            &["example.com"],
        ));
    }
    errors
}

/// `IsDNS1123Label` holds.
pub(crate) fn dns1123_label_ok(value: &str) -> bool {
    value.len() <= 63 && is_label_1123(value)
}

/// `IsDNS1123Subdomain` holds.
pub(crate) fn dns1123_subdomain_ok(value: &str) -> bool {
    dns1123_subdomain(value).is_empty()
}

/// `IsDNS1035Label`.
pub(crate) fn dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    let bytes = value.as_bytes();
    let valid = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if !valid {
        errors.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// `NameIsDNSSubdomain`: a generateName prefix may end in '-'.
pub(crate) fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix && let Some(stem) = name.strip_suffix('-') {
        return dns1123_subdomain(&format!("{stem}a"));
    }
    dns1123_subdomain(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_apimachinery() {
        assert!(dns1123_subdomain("stable.example.com").is_empty());
        assert_eq!(
            dns1123_subdomain("Bad_Group"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert!(dns1035_label("v1beta1").is_empty());
        assert_eq!(
            dns1035_label("1v"),
            vec![
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(dns1035_label(&"a".repeat(64)).len(), 1);
        assert!(name_is_dns_subdomain("crontab-", true).is_empty());
        assert!(!name_is_dns_subdomain("crontab-", false).is_empty());
    }
}
