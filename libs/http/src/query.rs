//! Query parameters: percent-decoded pairs, tolerant of empty pairs such as `?&limit=500`.

use kcp_apimachinery::status::{ApiError, Cause};
use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .filter(|(k, _)| !k.is_empty())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Query { pairs }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> impl Iterator<Item = &str> {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean query parameter as Kubernetes decodes one: absent, `0` or `false` (any case) is
    /// false, anything else (a bare key included) is true.
    pub fn flag(&self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(v) => v != "0" && !v.eq_ignore_ascii_case("false"),
        }
    }

    pub fn number(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.get(key).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
                ApiError::bad_request(format!("{key}: invalid value {v:?}: must be an integer"))
            }),
        }
    }

    /// `dryRun=All` (the only value Kubernetes accepts).
    /// `dryRun` of a write: `All` or nothing. Anything else is the 422 Kubernetes gives for the
    /// write's options (`CreateOptions`, `PatchOptions`... per `verb`).
    pub fn dry_run(&self, verb: &str) -> Result<bool, ApiError> {
        let mut dry = false;
        for v in self.all("dryRun") {
            match v {
                "All" => dry = true,
                "" => {}
                other => {
                    let cause = Cause::not_supported("dryRun", &Value::from(other), &["All"]);
                    return Err(invalid_options(verb, vec![cause]));
                }
            }
        }
        Ok(dry)
    }
}

/// Kubernetes' 422 for invalid options of a write: `<Kind>Options.meta.k8s.io "" is invalid`.
pub fn invalid_options(verb: &str, causes: Vec<Cause>) -> ApiError {
    let kind = match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        "patch" => "PatchOptions",
        "delete" | "deletecollection" => "DeleteOptions",
        _ => "ListOptions",
    };
    ApiError::invalid("meta.k8s.io", kind, "", causes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_empty_pairs_and_decodes() {
        let q = Query::parse(Some("&limit=500&labelSelector=a%3Db%2Cc%21%3Dd&watch=1"));
        assert_eq!(q.get("limit"), Some("500"));
        assert_eq!(q.get("labelSelector"), Some("a=b,c!=d"));
        assert!(q.flag("watch"));
        for (raw, want) in [
            ("w=maybe", true),
            ("w", true),
            ("w=FALSE", false),
            ("w=0", false),
        ] {
            assert_eq!(Query::parse(Some(raw)).flag("w"), want, "{raw}");
        }
        assert!(!q.flag("absent"));
        assert_eq!(q.number("limit").ok().flatten(), Some(500));
        assert!(Query::parse(Some("limit=x")).number("limit").is_err());
        let err = Query::parse(Some("dryRun=Some"))
            .dry_run("create")
            .expect_err("an unknown dryRun");
        assert_eq!(err.code, 422);
        assert!(
            err.message
                .starts_with("CreateOptions.meta.k8s.io \"\" is invalid"),
            "{}",
            err.message
        );
    }
}
