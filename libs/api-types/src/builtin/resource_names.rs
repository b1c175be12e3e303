//! Compute-resource names (`cpu`, `requests.memory`, `example.com/gpu`) and which of them each
//! kind accepts, as Kubernetes' core helpers sort them; shared by LimitRanges and ResourceQuotas.

use kcp_apimachinery::names::is_qualified_name;
use kcp_apimachinery::quantity::Quantity;
use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use super::go_values::{invalid_shown, quoted};

/// Names every resource list may use without a domain (`IsStandardResourceName`), beside the
/// hugepages families.
const STANDARD: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// What quota tracks (`IsStandardQuotaResourceName`): the standard names but `storage`.
pub fn is_standard_quota(name: &str) -> bool {
    (name != "storage" && STANDARD.contains(&name)) || is_quota_hugepages(name)
}

/// Counted in whole units (`IsIntegerResourceName`).
const INTEGER: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_quota_hugepages(name: &str) -> bool {
    is_hugepages(name) || name.starts_with("requests.hugepages-")
}

fn is_standard(name: &str) -> bool {
    STANDARD.contains(&name) || is_quota_hugepages(name)
}

/// Unqualified names and those under `kubernetes.io/` are Kubernetes' own.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// A device plugin's resource (`example.com/gpu`): not native, and still a qualified name once
/// quota prefixes it with `requests.`.
fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// Whether requests may be below limits: not for hugepages and extended resources, whose default
/// and default request must then be equal.
pub fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

fn is_integer(name: &str) -> bool {
    INTEGER.contains(&name) || is_extended(name)
}

/// Kubernetes' `validateResourceName`: a qualified name, and a standard one unless it has a
/// domain.
pub fn resource_name_causes(name: &str, path: &str) -> Vec<Cause> {
    let causes: Vec<Cause> = is_qualified_name(name)
        .iter()
        .map(|msg| Cause::invalid(path, &json!(name), msg))
        .collect();
    if causes.is_empty() && !name.contains('/') && !is_standard(name) {
        return vec![Cause::invalid(
            path,
            &json!(name),
            "must be a standard resource type or fully qualified",
        )];
    }
    causes
}

/// Kubernetes' `validateContainerResourceName`: what a container (or a pod, in a LimitRange)
/// may ask for.
pub fn container_resource_name_causes(name: &str, path: &str) -> Vec<Cause> {
    let mut causes = resource_name_causes(name, path);
    if !name.contains('/') {
        if !(["cpu", "memory", "ephemeral-storage"].contains(&name) || is_hugepages(name)) {
            causes.push(Cause::invalid(
                path,
                &json!(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        causes.push(Cause::invalid(
            path,
            &json!(name),
            "doesn't follow extended resource name standard",
        ));
    }
    causes
}

/// Kubernetes' `ValidateResourceQuotaResourceName`.
pub fn quota_resource_name_causes(name: &str, path: &str) -> Vec<Cause> {
    let mut causes = resource_name_causes(name, path);
    if !name.contains('/') && !is_standard_quota(name) {
        causes.push(Cause::invalid(
            path,
            &json!(name),
            "must be a standard resource for quota",
        ));
    }
    causes
}

/// Kubernetes' `ValidateResourceQuantityValue`: not negative, and whole for counted resources.
pub fn quantity_value_causes(name: &str, quantity: &Quantity, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if quantity.is_negative() {
        causes.push(Cause::invalid(
            path,
            &json!(quantity.to_string()),
            "must be greater than or equal to 0",
        ));
    }
    if is_integer(name) && quantity.milli_value() % 1000 != 0 {
        causes.push(invalid_shown(
            path,
            &quantity.to_string(),
            "must be an integer",
        ));
    }
    causes
}

/// The quantity of a resource list's entry; one that does not parse is a cause (Kubernetes
/// refuses it while decoding the body, with the same words).
pub fn quantity_at(value: &Value, path: &str, causes: &mut Vec<Cause>) -> Option<Quantity> {
    match Quantity::from_json(value) {
        Ok(q) => Some(q),
        Err(err) => {
            let shown = match value {
                Value::String(s) => quoted(s),
                other => other.to_string(),
            };
            causes.push(invalid_shown(path, &shown, &err.to_string()));
            None
        }
    }
}

/// Rewrites each parseable quantity of a resource list in its canonical form, as Kubernetes
/// stores what it decoded (`1000m` becomes `1`, `0.5` becomes `500m`).
pub fn canonicalize_list(list: Option<&mut Value>) {
    for value in list
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        if let (Value::String(_) | Value::Number(_), Ok(q)) = (&*value, Quantity::from_json(value))
        {
            *value = json!(q.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::full_message).collect()
    }

    #[test]
    fn names_are_sorted_as_kubernetes_sorts_them() {
        assert!(container_resource_name_causes("cpu", "p").is_empty());
        assert!(container_resource_name_causes("hugepages-2Mi", "p").is_empty());
        assert!(container_resource_name_causes("example.com/gpu", "p").is_empty());
        assert_eq!(
            messages(&container_resource_name_causes("pods", "p")),
            ["p: Invalid value: \"pods\": must be a standard resource for containers"]
        );
        assert_eq!(
            messages(&container_resource_name_causes("foo", "p")),
            [
                "p: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "p: Invalid value: \"foo\": must be a standard resource for containers",
            ]
        );
        assert!(resource_name_causes("storage", "p").is_empty());
        assert!(quota_resource_name_causes("count/deployments.apps", "p").is_empty());
        assert!(quota_resource_name_causes("requests.hugepages-1Gi", "p").is_empty());
        assert_eq!(quota_resource_name_causes("storage", "p").len(), 1);
        assert!(!overcommit_allowed("hugepages-2Mi"));
        assert!(!overcommit_allowed("example.com/gpu"));
        assert!(overcommit_allowed("cpu"));
    }

    #[test]
    fn quantities_are_checked_and_canonical() {
        let q = |s: &str| s.parse::<Quantity>().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(
            messages(&quantity_value_causes("pods", &q("1500m"), "p")),
            ["p: Invalid value: 1500m: must be an integer"]
        );
        assert_eq!(
            messages(&quantity_value_causes("cpu", &q("-2000m"), "p")),
            ["p: Invalid value: \"-2\": must be greater than or equal to 0"]
        );
        assert!(quantity_value_causes("cpu", &q("1500m"), "p").is_empty());
        let mut causes = Vec::new();
        assert!(quantity_at(&json!("1 k"), "p", &mut causes).is_none());
        assert!(
            causes[0]
                .message
                .starts_with("Invalid value: \"1 k\": quantities must match")
        );
        let mut list = json!({"cpu": "1000m", "memory": 1024, "bad": "x"});
        canonicalize_list(Some(&mut list));
        assert_eq!(list, json!({"cpu": "1", "memory": "1024", "bad": "x"}));
    }
}
