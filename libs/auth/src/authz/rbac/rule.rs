//! One RBAC `PolicyRule` and whether it covers a request, with the semantics of Kubernetes'
//! `rbac/v1` evaluation helpers.

use serde_json::{Map, Value, json};

use crate::authz::Attributes;

/// The wildcard of verbs, API groups, resources and non-resource URLs.
pub const ALL: &str = "*";

/// A rule of a Role or ClusterRole (`rbac.authorization.k8s.io/v1` `PolicyRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    /// `res`, `res/sub`, `*/sub` or `*`.
    pub resources: Vec<String>,
    /// Empty means any name; otherwise only requests naming one of these.
    pub resource_names: Vec<String>,
    /// Exact paths, `*`, or prefixes ending in `*`.
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Reads a rule from its JSON. Absent or null lists are empty; anything else that is not a list of
    /// strings is an error (the API server's validation would have refused it).
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let obj = v.as_object().ok_or("a rule must be an object")?;
        Ok(PolicyRule {
            verbs: strings(obj, "verbs")?,
            api_groups: strings(obj, "apiGroups")?,
            resources: strings(obj, "resources")?,
            resource_names: strings(obj, "resourceNames")?,
            non_resource_urls: strings(obj, "nonResourceURLs")?,
        })
    }

    /// The rule's JSON, omitting empty lists as Kubernetes does.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        for (field, list) in [
            ("verbs", &self.verbs),
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() || field == "verbs" {
                obj.insert(field.into(), json!(list));
            }
        }
        Value::Object(obj)
    }

    /// Whether this rule alone allows the request (Kubernetes' `RuleAllows`). Resource requests are
    /// matched on verb, group, resource (with subresource) and name; non-resource requests on verb and
    /// path only.
    pub fn allows(&self, attrs: &Attributes<'_>) -> bool {
        if !verb_matches(self, attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return non_resource_url_matches(self, attrs.path);
        }
        api_group_matches(self, attrs.api_group)
            && resource_matches(self, attrs.resource, attrs.subresource)
            && resource_name_matches(self, attrs.name)
    }
}

fn strings(obj: &Map<String, Value>, field: &str) -> Result<Vec<String>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{field} must be a list of strings"))
            })
            .collect(),
        Some(_) => Err(format!("{field} must be a list of strings")),
    }
}

pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `""` in a rule is the core group, so it only matches core requests; `*` matches every group.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// A rule entry matches the request's `resource` (`resource/subresource` when it names a
/// subresource) when it is `*`, equal to it, or `*/<subresource>`. As in Kubernetes, `resource/*` is not a pattern: it only matches
/// itself literally, so `*` or explicit `res/sub` entries must be used to grant subresources.
pub fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == ALL
            || if subresource.is_empty() {
                r == resource
            } else {
                // `<resource>/<subresource>`, compared in place.
                r.strip_prefix(resource)
                    .and_then(|rest| rest.strip_prefix('/'))
                    == Some(subresource)
                    || r.strip_prefix("*/") == Some(subresource)
            }
    })
}

/// An empty list allows any name. A non-empty list only matches requests that name one of its
/// entries: create, list, watch and deletecollection carry no name, so named rules never cover them.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// `*` matches any path, an entry ending in `*` any path with that prefix, anything else only itself.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == ALL
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_json(&v).unwrap()
    }

    fn res<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            verb,
            resource_request: true,
            api_group: group,
            resource,
            subresource: sub,
            name,
            namespace: "ns",
            ..Attributes::default()
        }
    }

    fn path<'a>(verb: &'a str, path: &'a str) -> Attributes<'a> {
        Attributes {
            verb,
            path,
            ..Attributes::default()
        }
    }

    #[test]
    fn resource_rules() {
        let cases: Vec<(Value, Attributes<'_>, bool)> = vec![
            // verbs
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}),
                res("get", "", "configmaps", "", ""),
                true,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}),
                res("list", "", "configmaps", "", ""),
                false,
            ),
            (
                json!({"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}),
                res("escalate", "", "configmaps", "", ""),
                true,
            ),
            (
                json!({"verbs": [], "apiGroups": ["*"], "resources": ["*"]}),
                res("get", "", "configmaps", "", ""),
                false,
            ),
            // groups: "" is only core
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}),
                res("get", "apps", "configmaps", "", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["configmaps"]}),
                res("get", "apps", "configmaps", "", ""),
                true,
            ),
            (
                json!({"verbs": ["get"], "resources": ["configmaps"]}),
                res("get", "", "configmaps", "", ""),
                false,
            ),
            // resources and subresources
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}),
                res("get", "", "configmaps", "status", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps/status"]}),
                res("get", "", "configmaps", "status", ""),
                true,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps/status"]}),
                res("get", "", "configmaps", "", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}),
                res("get", "", "secrets", "status", ""),
                true,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}),
                res("get", "", "secrets", "scale", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}),
                res("get", "", "secrets", "", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/tatus"]}),
                res("get", "", "secrets", "status", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}),
                res("get", "", "secrets", "status", ""),
                true,
            ),
            // `res/*` is literal in Kubernetes
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets/*"]}),
                res("get", "", "secrets", "status", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets/*"]}),
                res("get", "", "secrets", "", ""),
                false,
            ),
            // resource names
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                res("get", "", "secrets", "", "a"),
                true,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                res("get", "", "secrets", "", "b"),
                false,
            ),
            (
                json!({"verbs": ["*"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                res("create", "", "secrets", "", ""),
                false,
            ),
            (
                json!({"verbs": ["*"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                res("list", "", "secrets", "", ""),
                false,
            ),
            (
                json!({"verbs": ["*"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                res("deletecollection", "", "secrets", "", ""),
                false,
            ),
            (
                json!({"verbs": ["update"], "apiGroups": [""], "resources": ["secrets/status"], "resourceNames": ["a"]}),
                res("update", "", "secrets", "status", "a"),
                true,
            ),
            // a resource rule never matches a path, a path rule never a resource
            (
                json!({"verbs": ["get"], "nonResourceURLs": ["*"]}),
                res("get", "", "secrets", "", ""),
                false,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}),
                path("get", "/healthz"),
                false,
            ),
        ];
        for (i, (r, attrs, want)) in cases.iter().enumerate() {
            assert_eq!(
                rule(r.clone()).allows(attrs),
                *want,
                "case {i}: {r} vs {attrs:?}"
            );
        }
    }

    #[test]
    fn non_resource_rules() {
        let cases = [
            (json!(["/healthz"]), "/healthz", true),
            (json!(["/healthz"]), "/healthz/etcd", false),
            (json!(["/healthz/*"]), "/healthz/etcd", true),
            (json!(["/healthz/*"]), "/healthz/", true),
            (json!(["/healthz/*"]), "/healthz", false),
            (json!(["/healthz*"]), "/healthz", true),
            (json!(["*"]), "/anything/at/all", true),
            (json!(["/api", "/apis/*"]), "/apis/apps/v1", true),
            (json!([]), "/", false),
        ];
        for (urls, p, want) in cases {
            let r = rule(json!({"verbs": ["get"], "nonResourceURLs": urls}));
            assert_eq!(r.allows(&path("get", p)), want, "{urls} vs {p}");
            assert!(!r.allows(&path("post", p)));
        }
    }

    #[test]
    fn malformed_rules_are_errors() {
        for bad in [
            json!("rule"),
            json!({"verbs": "get"}),
            json!({"verbs": [1]}),
            json!({"verbs": ["get"], "resources": {"a": 1}}),
        ] {
            assert!(PolicyRule::from_json(&bad).is_err(), "{bad}");
        }
        assert_eq!(
            PolicyRule::from_json(&json!({"verbs": null})).unwrap(),
            PolicyRule::default()
        );
    }

    #[test]
    fn json_round_trip() {
        let v = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["a"], "resourceNames": ["x"]});
        assert_eq!(rule(v.clone()).to_json(), v);
    }
}
