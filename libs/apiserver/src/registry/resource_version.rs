//! `resourceVersion` and `resourceVersionMatch` as Kubernetes reads them on get, list and watch:
//! every rule in one place, each read asking here what state it must reflect.

use kcp_apimachinery::status::{ApiError, Cause};
use kcp_store::Revision;
use serde_json::Value;

use super::ListOptions;

/// A resourceVersion parameter: a non-negative integer (the store revision it names).
pub(crate) fn parse(rv: &str) -> Result<Revision, ApiError> {
    rv.parse::<Revision>()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "resourceVersion: Invalid value: {rv:?}: must be a non-negative integer"
            ))
        })
}

/// The parameter as given, an empty one as none.
fn given(rv: Option<&str>) -> Option<&str> {
    rv.filter(|v| !v.is_empty())
}

/// A get: a resourceVersion asks for a state not older than it; none, or "0", takes any.
pub(crate) fn get_not_older_than(rv: Option<&str>) -> Result<Option<Revision>, ApiError> {
    given(rv).filter(|v| *v != "0").map(parse).transpose()
}

/// What state a list (without a continue token) is of.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ListAt {
    /// No resourceVersion: every acknowledged write.
    Fresh,
    /// "0": whatever the cache holds.
    Any,
    /// Not older than this revision.
    NotOlderThan(Revision),
    /// Exactly this revision (`Exact`, or a paginated list naming a revision).
    Exact(Revision),
}

/// Kubernetes' ListOptions validation for a list (422 with every cause; 400 for a resourceVersion
/// beside a continue token), then the state the first page is of.
pub(crate) fn list_at(opts: &ListOptions) -> Result<ListAt, ApiError> {
    let rv = given(opts.resource_version.as_deref());
    let rv_match = given(opts.resource_version_match.as_deref());
    if let Some(m) = rv_match {
        let mut causes = Vec::new();
        let forbidden = |detail: &str| Cause::forbidden("resourceVersionMatch", detail);
        if rv.is_none() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if opts.continue_token.is_some() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if !matches!(m, "NotOlderThan" | "Exact") {
            causes.push(Cause::not_supported(
                "resourceVersionMatch",
                &Value::from(m),
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if m == "Exact" && rv == Some("0") {
            causes.push(forbidden(
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        if !causes.is_empty() {
            return Err(kcp_http::query::invalid_options("list", causes));
        }
    }
    if opts.continue_token.is_some() && rv.is_some_and(|v| v != "0") {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    let exact = rv_match == Some("Exact")
        || (opts.limit > 0 && rv_match.is_none() && rv.is_some_and(|v| v != "0"));
    Ok(match (rv, exact) {
        (None, _) => ListAt::Fresh,
        (Some("0"), _) if rv_match != Some("Exact") => ListAt::Any,
        (Some(v), true) => ListAt::Exact(parse(v)?),
        (Some(v), false) => ListAt::NotOlderThan(parse(v)?),
    })
}

/// Where a watch starts.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct WatchFrom {
    /// Whether it begins with the current state as ADDED events.
    pub initial: bool,
    /// The revision asked for: nothing at or before it is sent.
    pub after: Option<Revision>,
    /// Whether the initial state must show every acknowledged write (no resourceVersion given).
    pub fresh: bool,
}

/// Kubernetes' validation of a watch's options (422 `ListOptions.meta.k8s.io` with every cause:
/// `resourceVersionMatch` only as `NotOlderThan` with `sendInitialEvents`, never with `continue`),
/// then where the watch starts: the initial state when no resourceVersion (or "0") is given, or
/// when `sendInitialEvents` asks for it.
pub(crate) fn watch_from(
    opts: &ListOptions,
    send_initial: Option<bool>,
) -> Result<WatchFrom, ApiError> {
    let mut causes = Vec::new();
    let rv_match = given(opts.resource_version_match.as_deref());
    let forbidden = |detail: &str| Cause::forbidden("resourceVersionMatch", detail);
    if send_initial.is_some() && rv_match != Some("NotOlderThan") {
        causes.push(forbidden(
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if let Some(m) = rv_match {
        if send_initial.is_none() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if m != "NotOlderThan" {
            causes.push(Cause::not_supported(
                "resourceVersionMatch",
                &Value::from(m),
                &["NotOlderThan"],
            ));
        }
        if opts.continue_token.is_some() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(kcp_http::query::invalid_options("watch", causes));
    }
    let rv = given(opts.resource_version.as_deref());
    let initial = match (rv, send_initial) {
        (_, Some(initial)) => initial,
        (None | Some("0"), None) => true,
        _ => false,
    };
    Ok(WatchFrom {
        initial,
        after: rv.filter(|v| *v != "0").map(parse).transpose()?,
        fresh: rv.is_none(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(rv: Option<&str>, rv_match: Option<&str>, limit: usize) -> ListOptions {
        ListOptions {
            resource_version: rv.map(str::to_string),
            resource_version_match: rv_match.map(str::to_string),
            limit,
            ..ListOptions::default()
        }
    }

    #[test]
    fn every_read_refuses_what_is_no_revision() {
        for bad in ["-1", "abc", "1.5"] {
            assert_eq!(get_not_older_than(Some(bad)).map_err(|e| e.code), Err(400));
            assert_eq!(
                list_at(&opts(Some(bad), None, 0)).map_err(|e| e.code),
                Err(400)
            );
            assert_eq!(
                watch_from(&opts(Some(bad), None, 0), None).map_err(|e| e.code),
                Err(400),
                "{bad}"
            );
        }
        assert_eq!(get_not_older_than(Some("0")), Ok(None));
        assert_eq!(get_not_older_than(Some("")), Ok(None));
        assert_eq!(get_not_older_than(Some("7")), Ok(Some(7)));
    }

    #[test]
    fn lists_read_as_kubernetes_reads_them() {
        assert_eq!(list_at(&opts(None, None, 0)), Ok(ListAt::Fresh));
        assert_eq!(list_at(&opts(Some("0"), None, 0)), Ok(ListAt::Any));
        assert_eq!(
            list_at(&opts(Some("5"), None, 0)),
            Ok(ListAt::NotOlderThan(5))
        );
        // A page of a list that names a revision is of that revision.
        assert_eq!(list_at(&opts(Some("5"), None, 10)), Ok(ListAt::Exact(5)));
        assert_eq!(
            list_at(&opts(Some("5"), Some("Exact"), 0)),
            Ok(ListAt::Exact(5))
        );
        assert_eq!(
            list_at(&opts(None, Some("Exact"), 0)).map_err(|e| e.code),
            Err(422)
        );
        assert_eq!(
            list_at(&opts(Some("0"), Some("Exact"), 0)).map_err(|e| e.code),
            Err(422)
        );
    }

    #[test]
    fn watches_start_where_they_ask() {
        let from = |rv, send| watch_from(&opts(rv, None, 0), send);
        assert_eq!(
            from(None, None),
            Ok(WatchFrom {
                initial: true,
                after: None,
                fresh: true
            })
        );
        assert_eq!(
            from(Some("0"), None),
            Ok(WatchFrom {
                initial: true,
                after: None,
                fresh: false
            })
        );
        assert_eq!(
            from(Some("9"), None),
            Ok(WatchFrom {
                initial: false,
                after: Some(9),
                fresh: false
            })
        );
        // sendInitialEvents needs resourceVersionMatch=NotOlderThan.
        assert_eq!(from(Some("9"), Some(true)).map_err(|e| e.code), Err(422));
        assert_eq!(
            watch_from(&opts(Some("9"), Some("NotOlderThan"), 0), Some(true)),
            Ok(WatchFrom {
                initial: true,
                after: Some(9),
                fresh: false
            })
        );
    }
}
