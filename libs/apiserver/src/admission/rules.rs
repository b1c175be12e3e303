//! Which requests a webhook's `rules` select: operations, API groups and versions, resources (with
//! `*`, `*/*` and subresource forms) and scope, as `admissionregistration.k8s.io/v1` defines them.

use serde_json::Value;

use super::Operation;

/// One `RuleWithOperations`, parsed once per configuration revision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    /// `*` (the default), `Cluster` or `Namespaced`.
    pub scope: String,
}

/// The request as rules see it.
#[derive(Clone, Copy, Debug)]
pub struct RuleInput<'a> {
    pub operation: Operation,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    /// Empty for the main resource.
    pub subresource: &'a str,
    /// Whether the object is cluster-scoped (a Namespace counts as cluster-scoped).
    pub cluster_scoped: bool,
}

/// The strings of a JSON array (other entries skipped); nothing when `v` is absent or no array.
pub(crate) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    pub fn parse(v: &Value) -> Rule {
        Rule {
            operations: strings(v.get("operations")),
            api_groups: strings(v.get("apiGroups")),
            api_versions: strings(v.get("apiVersions")),
            resources: strings(v.get("resources")),
            scope: v
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_string(),
        }
    }

    /// Whether the rule selects the request; `any_version` widens the version check for
    /// `matchPolicy: Equivalent`.
    pub fn matches(&self, req: &RuleInput<'_>, any_version: bool) -> bool {
        let listed = |list: &[String], value: &str| list.iter().any(|x| x == "*" || x == value);
        listed(&self.operations, req.operation.as_str())
            && listed(&self.api_groups, req.group)
            && (any_version || listed(&self.api_versions, req.version))
            && self.resource_matches(req.resource, req.subresource)
            && self.scope_matches(req.cluster_scoped)
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|entry| {
            let (res, sub) = entry.split_once('/').unwrap_or((entry.as_str(), ""));
            // `*` alone covers every resource but no subresource; `*/*` covers both; `pods/*`
            // pods and all its subresources; `*/status` one subresource of all.
            (res == "*" || res == resource) && (sub == "*" || sub == subresource)
        })
    }

    fn scope_matches(&self, cluster_scoped: bool) -> bool {
        match self.scope.as_str() {
            "Cluster" => cluster_scoped,
            "Namespaced" => !cluster_scoped,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(op: Operation, resource: &'static str, sub: &'static str) -> RuleInput<'static> {
        RuleInput {
            operation: op,
            group: "",
            version: "v1",
            resource,
            subresource: sub,
            cluster_scoped: false,
        }
    }

    fn rule(resources: &[&str]) -> Rule {
        Rule::parse(&json!({
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": resources,
        }))
    }

    #[test]
    fn star_covers_resources_but_not_subresources() {
        let r = rule(&["*"]);
        assert!(r.matches(&input(Operation::Create, "configmaps", ""), false));
        assert!(!r.matches(&input(Operation::Update, "namespaces", "status"), false));
    }

    #[test]
    fn star_slash_star_covers_subresources() {
        let r = rule(&["*/*"]);
        assert!(r.matches(&input(Operation::Create, "configmaps", ""), false));
        assert!(r.matches(&input(Operation::Update, "namespaces", "status"), false));
    }

    #[test]
    fn named_subresource_forms() {
        let r = rule(&["namespaces/*"]);
        assert!(r.matches(&input(Operation::Update, "namespaces", "status"), false));
        // `x/*` covers the resource itself as well, as `*/*` does.
        assert!(r.matches(&input(Operation::Update, "namespaces", ""), false));
        assert!(!r.matches(&input(Operation::Update, "secrets", "status"), false));
        let r = rule(&["*/status"]);
        assert!(r.matches(&input(Operation::Update, "namespaces", "status"), false));
        assert!(!r.matches(&input(Operation::Update, "namespaces", "finalize"), false));
        let r = rule(&["configmaps"]);
        assert!(r.matches(&input(Operation::Create, "configmaps", ""), false));
        assert!(!r.matches(&input(Operation::Create, "secrets", ""), false));
    }

    #[test]
    fn operations_groups_and_versions() {
        let r = rule(&["configmaps"]);
        assert!(!r.matches(&input(Operation::Delete, "configmaps", ""), false));
        let all_ops = Rule {
            operations: vec!["*".into()],
            ..r.clone()
        };
        assert!(all_ops.matches(&input(Operation::Delete, "configmaps", ""), false));
        let mut other_group = input(Operation::Create, "configmaps", "");
        other_group.group = "apps";
        assert!(!r.matches(&other_group, false));
        let mut other_version = input(Operation::Create, "configmaps", "");
        other_version.version = "v2";
        assert!(!r.matches(&other_version, false));
        assert!(
            r.matches(&other_version, true),
            "Equivalent ignores the version"
        );
    }

    #[test]
    fn scope() {
        let mut r = rule(&["*"]);
        let mut cluster = input(Operation::Create, "namespaces", "");
        cluster.cluster_scoped = true;
        let namespaced = input(Operation::Create, "configmaps", "");
        assert_eq!(r.scope, "*");
        assert!(r.matches(&cluster, false) && r.matches(&namespaced, false));
        r.scope = "Cluster".into();
        assert!(r.matches(&cluster, false) && !r.matches(&namespaced, false));
        r.scope = "Namespaced".into();
        assert!(!r.matches(&cluster, false) && r.matches(&namespaced, false));
    }
}
