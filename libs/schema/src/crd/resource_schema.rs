//! kcp's APIResourceSchema (`apis.kcp.io/v1alpha1`), checked as kcp's admission checks it: its
//! own name, group and version rules, and each version's schema, subresources, printer columns and
//! selectable fields through the same validation as a CustomResourceDefinition's (one per version,
//! its causes moved to where that version sits in the APIResourceSchema).

use serde_json::{Map, Value, json};

use super::causes::{Causes, child, index, quoted, shown};
use super::json::{bool_of, list, obj, str_of};
use super::names::{dns1035_label, dns1123_subdomain};
use crate::FieldCause;

/// The marker that spares a CRD the `<plural>.<group>` name rule (kcp's bound CRDs).
const BOUND_CRD_ANNOTATION: &str = "apis.kcp.io/bound-crd";
/// Groups of one segment that Kubernetes itself uses.
const SINGLE_SEGMENT_GROUPS: [&str; 5] = ["apps", "batch", "extensions", "policy", "autoscaling"];

/// Validates `schema` (a create when `old` is `None`, else an update of `old`): kcp's rules, in
/// kcp's words and field paths. An update must leave `spec` as it was.
pub fn validate_api_resource_schema(schema: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let empty = Map::new();
    let root = schema.as_object().unwrap_or(&empty);
    let meta = obj(root, "metadata").unwrap_or(&empty);
    let spec = obj(root, "spec").unwrap_or(&empty);
    let mut out = Causes::default();
    name(str_of(meta, "name"), spec, &mut out);
    group(str_of(spec, "group"), &mut out);
    versions(meta, spec, &mut out);
    required_names(spec, &mut out);
    if let Some(old_spec) = old.and_then(|o| o.get("spec"))
        && schema.get("spec").unwrap_or(&Value::Null) != old_spec
    {
        let spec = schema.get("spec").unwrap_or(&Value::Null);
        out.invalid("spec".into(), &shown(spec), "is immutable");
    }
    out.0
}

/// `<prefix>.<plural>.<group>`, `core` standing for the core group.
fn name(name: &str, spec: &Map<String, Value>, out: &mut Causes) {
    let plural = obj(spec, "names")
        .map(|n| str_of(n, "plural"))
        .unwrap_or("");
    if plural.is_empty() {
        return;
    }
    let group = match str_of(spec, "group") {
        "" => "core",
        g => g,
    };
    let suffix = format!(".{plural}.{group}");
    let Some(prefix) = name.strip_suffix(&suffix) else {
        out.invalid(
            "metadata.name".into(),
            &quoted(name),
            &format!("must end in {suffix}"),
        );
        return;
    };
    if !is_prefix(prefix) {
        out.invalid(
            "metadata.name".into(),
            &quoted(name),
            &format!("must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of {suffix}"),
        );
    }
}

/// `^[a-z]([-a-z0-9]*[a-z0-9])?$`.
fn is_prefix(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

fn group(group: &str, out: &mut Causes) {
    let at = || "spec.group".to_string();
    if group.is_empty() {
        return;
    }
    if group == "core" {
        out.invalid(
            at(),
            &quoted(group),
            "must be empty string for the core group",
        );
        return;
    }
    let errors = dns1123_subdomain(group);
    if !errors.is_empty() {
        out.invalid(at(), &quoted(group), &errors.join(","));
    } else if !group.contains('.') && !SINGLE_SEGMENT_GROUPS.contains(&group) {
        out.invalid(
            at(),
            &quoted(group),
            "should be a domain with at least one dot",
        );
    }
}

fn versions(meta: &Map<String, Value>, spec: &Map<String, Value>, out: &mut Causes) {
    let versions = list(spec, "versions");
    let mut seen = Vec::new();
    let mut unique = true;
    let mut storage = 0;
    let empty = Map::new();
    for (i, version) in versions.iter().enumerate() {
        let at = index("spec.versions", i);
        let version = version.as_object().unwrap_or(&empty);
        let name = str_of(version, "name");
        if bool_of(version, "storage") {
            storage += 1;
        }
        if seen.contains(&name) {
            unique = false;
        } else {
            seen.push(name);
        }
        let errors = dns1035_label(name);
        if !errors.is_empty() {
            out.invalid(child(&at, "name"), &quoted(name), &errors.join(","));
        }
        if version.get("schema").is_none_or(Value::is_null) {
            out.required(child(&at, "schema"), "");
        }
        out.extend(as_crd_version(meta, spec, version, i));
    }
    let all = spec.get("versions").unwrap_or(&Value::Null);
    if !unique {
        out.invalid(
            "spec.versions".into(),
            &shown(all),
            "must contain unique version names",
        );
    }
    if storage != 1 {
        out.invalid(
            "spec.versions".into(),
            &shown(all),
            "must have exactly one version marked as storage version",
        );
    }
}

fn required_names(spec: &Map<String, Value>, out: &mut Causes) {
    let empty = Map::new();
    let names = obj(spec, "names").unwrap_or(&empty);
    for field in ["plural", "singular", "kind", "listKind"] {
        if str_of(names, field).is_empty() {
            out.required(format!("spec.names.{field}"), "");
        }
    }
}

/// What CRD validation says of `version` (the `i`-th) served alone, at its place here: its
/// schema, subresources, printer columns, selectable fields and deprecation warning; for the
/// first version also the names, the scope and the API-approval annotation, which every version
/// shares. The CRD's own group and naming rules are kcp's here, checked above.
fn as_crd_version(
    meta: &Map<String, Value>,
    spec: &Map<String, Value>,
    version: &Map<String, Value>,
    i: usize,
) -> Causes {
    let mut served = version.clone();
    served.insert("served".into(), Value::Bool(true));
    served.insert("storage".into(), Value::Bool(true));
    if let Some(schema) = served.remove("schema").filter(|s| !s.is_null()) {
        served.insert("schema".into(), json!({"openAPIV3Schema": schema}));
    }
    let mut annotations = obj(meta, "annotations").cloned().unwrap_or_default();
    annotations.insert(BOUND_CRD_ANNOTATION.into(), Value::String(String::new()));
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "bound", "annotations": annotations},
        "spec": {
            "group": spec.get("group").cloned().unwrap_or_default(),
            "names": spec.get("names").cloned().unwrap_or_default(),
            "scope": spec.get("scope").cloned().unwrap_or_default(),
            "versions": [served],
        },
    });
    let at = index("spec.versions", i);
    let mut out = Causes::default();
    for mut cause in super::validate_crd(&crd) {
        let moved = [
            ("spec.validation", "schema"),
            ("spec.subresources", "subresources"),
            ("spec.additionalPrinterColumns", "additionalPrinterColumns"),
            ("spec.selectableFields", "selectableFields"),
        ]
        .iter()
        .find_map(|(from, to)| {
            let rest = cause.field.strip_prefix(from)?;
            Some(format!("{}{rest}", child(&at, to)))
        })
        .or_else(|| {
            let rest = cause.field.strip_prefix("spec.versions[0]")?;
            Some(format!("{at}{rest}"))
        })
        .or_else(|| {
            let shared = ["spec.names", "spec.scope", "metadata.annotations"];
            (i == 0 && shared.iter().any(|p| cause.field.starts_with(p)))
                .then(|| cause.field.clone())
        });
        if let Some(field) = moved {
            cause.field = field;
            out.0.push(cause);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(name: &str, group: &str) -> Value {
        json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIResourceSchema",
            "metadata": {"name": name},
            "spec": {
                "group": group,
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                          "listKind": "WidgetList"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"type": "object", "properties": {"spec": {"type": "object"}}},
                }],
            },
        })
    }

    fn fields(causes: &[FieldCause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_well_formed_schema_passes() {
        let ok = schema("v260807-dac74f5.widgets.example.io", "example.io");
        assert_eq!(
            fields(&validate_api_resource_schema(&ok, None)),
            Vec::<String>::new()
        );
        let core = schema("today.widgets.core", "");
        assert!(validate_api_resource_schema(&core, None).is_empty());
    }

    #[test]
    fn names_end_in_plural_and_group_after_a_prefix() {
        let wrong = schema("today.gadgets.example.io", "example.io");
        assert_eq!(
            fields(&validate_api_resource_schema(&wrong, None)),
            [
                "metadata.name: Invalid value: \"today.gadgets.example.io\": must end in .widgets.example.io"
            ]
        );
        let dated = schema("2022-05-07.widgets.example.io", "example.io");
        assert_eq!(
            fields(&validate_api_resource_schema(&dated, None)),
            [
                "metadata.name: Invalid value: \"2022-05-07.widgets.example.io\": must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .widgets.example.io"
            ]
        );
    }

    #[test]
    fn groups_as_kcp_wants_them() {
        let core = schema("a.widgets.core", "core");
        assert!(
            fields(&validate_api_resource_schema(&core, None)).contains(
                &"spec.group: Invalid value: \"core\": must be empty string for the core group"
                    .to_string()
            )
        );
        let single = schema("a.widgets.widgets", "widgets");
        assert!(
            fields(&validate_api_resource_schema(&single, None)).contains(
                &"spec.group: Invalid value: \"widgets\": should be a domain with at least one dot"
                    .to_string()
            )
        );
        assert!(validate_api_resource_schema(&schema("a.widgets.apps", "apps"), None).is_empty());
    }

    #[test]
    fn versions_need_one_storage_unique_names_and_a_structural_schema() {
        let mut two = schema("a.widgets.example.io", "example.io");
        let first = two["spec"]["versions"][0].clone();
        two["spec"]["versions"] = json!([first.clone(), first]);
        let found = fields(&validate_api_resource_schema(&two, None));
        assert!(
            found
                .iter()
                .any(|f| f.starts_with("spec.versions: Invalid value:")
                    && f.ends_with("must contain unique version names")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|f| f.ends_with("must have exactly one version marked as storage version")),
            "{found:?}"
        );

        let mut untyped = schema("a.widgets.example.io", "example.io");
        untyped["spec"]["versions"][0]["schema"]["properties"]["spec"] = json!({});
        let found = fields(&validate_api_resource_schema(&untyped, None));
        assert!(
            found.iter().any(|f| f.starts_with(
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value"
            )),
            "{found:?}"
        );

        let mut missing = schema("a.widgets.example.io", "example.io");
        missing["spec"]["versions"][0]
            .as_object_mut()
            .expect("a version")
            .remove("schema");
        let found = fields(&validate_api_resource_schema(&missing, None));
        assert!(
            found.contains(&"spec.versions[0].schema: Required value".to_string()),
            "{found:?}"
        );
    }

    #[test]
    fn names_are_required_and_the_spec_is_immutable() {
        let mut unnamed = schema("a.widgets.example.io", "example.io");
        unnamed["spec"]["names"] = json!({"plural": "widgets"});
        let found = fields(&validate_api_resource_schema(&unnamed, None));
        for field in ["singular", "kind", "listKind"] {
            assert!(
                found.contains(&format!("spec.names.{field}: Required value")),
                "{found:?}"
            );
        }
        let old = schema("a.widgets.example.io", "example.io");
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"may": "change"});
        assert!(validate_api_resource_schema(&new, Some(&old)).is_empty());
        new["spec"]["scope"] = json!("Cluster");
        let found = fields(&validate_api_resource_schema(&new, Some(&old)));
        assert!(
            found
                .iter()
                .any(|f| f.starts_with("spec: Invalid value:") && f.ends_with(": is immutable")),
            "{found:?}"
        );
    }
}
