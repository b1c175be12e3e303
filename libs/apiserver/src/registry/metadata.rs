//! Object metadata as the API server maintains it: system fields on create and update, and the
//! validation every kind shares.

use kcp_api_types::{NameRule, ResourceDef};
use kcp_apimachinery::names;
use kcp_apimachinery::status::{ApiError, Cause};
use serde_json::{Map, Value, json};

use super::CLUSTER_ANNOTATION;

/// `2026-11-21T14:30:00Z`: Kubernetes timestamps have second precision.
pub use kcp_api_types::conditions::now_rfc3339;

pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

pub fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
}

/// The string at JSON pointer `pointer`, or "".
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_deleting(obj: &Value) -> bool {
    meta(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
}

/// The kind's name rule applied to a name (or a generateName prefix).
pub fn name_errors(rule: &NameRule, name: &str, prefix: bool) -> Vec<String> {
    match rule {
        NameRule::Dns1123Subdomain => names::name_is_dns_subdomain(name, prefix),
        NameRule::Dns1123Label => names::name_is_dns_label(name, prefix),
        NameRule::PathSegment => names::validate_path_segment_name(name, prefix),
        NameRule::Fixed(fixed) if !prefix && name != *fixed => vec![format!("must be {fixed:?}")],
        NameRule::Fixed(_) => Vec::new(),
    }
}

fn string_map<'a>(
    m: &'a Map<String, Value>,
    field: &str,
    causes: &mut Vec<Cause>,
) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    for (k, v) in m {
        match v.as_str() {
            Some(s) => out.push((k.as_str(), s)),
            None => causes.push(Cause::invalid(
                &format!("{field}.{k}"),
                v,
                "must be a string",
            )),
        }
    }
    out
}

/// Validation of the metadata every kind shares: name, labels, annotations.
pub fn validate_metadata(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(m) = meta(obj) else {
        causes.push(Cause::required("metadata", ""));
        return causes;
    };
    let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
    if name.is_empty() {
        causes.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_errors(&def.name_rule, name, false) {
            causes.push(Cause::invalid("metadata.name", &json!(name), &msg));
        }
    }
    if let Some(labels) = m.get("labels").filter(|l| !l.is_null()) {
        match labels.as_object() {
            Some(l) => {
                let pairs = string_map(l, "metadata.labels", &mut causes);
                causes.extend(
                    names::validate_labels(pairs, "metadata.labels")
                        .iter()
                        .map(Cause::from),
                );
            }
            None => causes.push(Cause::invalid(
                "metadata.labels",
                labels,
                "must be a map of strings",
            )),
        }
    }
    if let Some(annotations) = m.get("annotations").filter(|a| !a.is_null()) {
        match annotations.as_object() {
            Some(a) => {
                let pairs = string_map(a, "metadata.annotations", &mut causes);
                causes.extend(
                    names::validate_annotations(pairs, "metadata.annotations")
                        .iter()
                        .map(Cause::from),
                );
            }
            None => causes.push(Cause::invalid(
                "metadata.annotations",
                annotations,
                "must be a map of strings",
            )),
        }
    }
    if let Some(f) = m.get("finalizers").filter(|f| !f.is_null()) {
        match f.as_array().filter(|a| a.iter().all(Value::is_string)) {
            Some(list) => finalizer_causes(def, list, &mut causes),
            None => causes.push(Cause::invalid(
                "metadata.finalizers",
                f,
                "must be a list of strings",
            )),
        }
    }
    if let Some(refs) = m.get("ownerReferences").and_then(Value::as_array) {
        owner_reference_causes(refs, &mut causes);
    }
    causes
}

/// Checks `apiVersion` and `kind` of a body against the endpoint, and fills them when absent.
pub fn check_type(def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
    let api_version = def.api_version();
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request("the request body must be an object"));
    };
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        // A custom resource's kind is checked by its validation (422, see `custom_kind_causes`).
        Some(k) if !k.is_empty() && k != def.kind && def.custom_schema.is_some() => return Ok(()),
        Some(k) if !k.is_empty() && k != def.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )));
        }
        _ => {}
    }
    map.insert("apiVersion".into(), json!(api_version));
    map.insert("kind".into(), json!(def.kind));
    // Keep the usual field order: apiVersion, kind, metadata first. Most bodies have it already.
    let mut keys = map.keys();
    let in_order = ["apiVersion", "kind", "metadata"]
        .into_iter()
        .filter(|k| map.contains_key(*k))
        .all(|want| keys.next().is_some_and(|k| k == want));
    if in_order {
        return Ok(());
    }
    let mut ordered = Map::new();
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(v) = map.remove(key) {
            ordered.insert(key.to_string(), v);
        }
    }
    ordered.append(map);
    *map = ordered;
    Ok(())
}

/// A custom resource of another kind than its endpoint's: the cause kube-apiserver's validation
/// gives alone (apiextensions-apiserver's customResourceValidator.ValidateTypeMeta; a decode
/// error, 400, for built-in kinds, see [`check_type`]).
pub fn custom_kind_causes(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    if def.custom_schema.is_none() || kind == def.kind {
        return Vec::new();
    }
    vec![Cause::invalid(
        "kind",
        &json!(kind),
        &format!("must be {}", def.kind),
    )]
}

/// The namespace in the body must agree with the URL; an absent one is filled in.
/// An object written to `url_name` names it too, or names nothing; another name is Kubernetes'
/// 400.
pub fn same_name_as_url(obj: &Value, url_name: &str) -> Result<(), ApiError> {
    match meta_str(obj, "name") {
        "" => Ok(()),
        name if name == url_name => Ok(()),
        name => Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({url_name})"
        ))),
    }
}

/// The name in a PUT's body must be the URL's, as Kubernetes' `checkName` has it: without one
/// the object's name is undeterminable.
pub fn name_is_url_name(obj: &Value, url_name: &str) -> Result<(), ApiError> {
    match meta_str(obj, "name") {
        "" => Err(ApiError::bad_request(format!(
            "the name of the object ({url_name} based on URL) was undeterminable: name must be provided"
        ))),
        _ => same_name_as_url(obj, url_name),
    }
}

/// [`same_name_as_url`], then an object that names nothing is named after the URL.
pub fn check_url_name(obj: &mut Value, url_name: &str) -> Result<(), ApiError> {
    same_name_as_url(obj, url_name)?;
    if meta_str(obj, "name").is_empty()
        && let Some(m) = meta_mut(obj)
    {
        m.insert("name".into(), json!(url_name));
    }
    Ok(())
}

pub fn check_namespace(
    def: &ResourceDef,
    obj: &mut Value,
    namespace: Option<&str>,
) -> Result<(), ApiError> {
    let Some(m) = meta_mut(obj) else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    if !def.namespaced {
        m.remove("namespace");
        return Ok(());
    }
    let url_ns = namespace.unwrap_or_default();
    match m.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() && ns != url_ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            m.insert("namespace".into(), json!(url_ns));
            Ok(())
        }
    }
}

/// System fields on create: uid, creationTimestamp, generation, the cluster annotation.
pub fn prepare_create(def: &ResourceDef, obj: &mut Value, cluster: &str) {
    let tracks_generation = def.strategy.tracks_generation();
    let Some(m) = meta_mut(obj) else { return };
    m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    m.insert("creationTimestamp".into(), json!(now_rfc3339()));
    m.remove("resourceVersion");
    m.remove("deletionTimestamp");
    m.remove("deletionGracePeriodSeconds");
    m.remove("selfLink");
    if tracks_generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
    set_cluster_annotation(m, cluster);
}

fn set_cluster_annotation(m: &mut Map<String, Value>, cluster: &str) {
    let annotations = m.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if let Some(a) = annotations.as_object_mut() {
        a.insert(CLUSTER_ANNOTATION.into(), json!(cluster));
    }
}

/// The content of an object whose change bumps `generation`: all but metadata, and but status
/// when the kind has a status subresource (without one, status is written like the rest, and a
/// custom resource's generation follows it, as Kubernetes' custom resource strategy has it).
fn spec_part(obj: &Value, status_subresource: bool) -> Value {
    match obj.as_object() {
        Some(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    k.as_str() != "metadata" && !(status_subresource && k.as_str() == "status")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        None => Value::Null,
    }
}

/// System fields on update: what clients may not change is carried over from the stored object.
pub fn prepare_update(
    def: &ResourceDef,
    new: &mut Value,
    old: &Value,
    cluster: &str,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let old_meta = meta(old).cloned().unwrap_or_default();
    let bump = def.strategy.tracks_generation()
        && spec_part(new, def.status_subresource) != spec_part(old, def.status_subresource);
    let Some(m) = meta_mut(new) else {
        return causes;
    };
    if let Some(uid) = m
        .get("uid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        && Some(uid) != old_meta.get("uid").and_then(Value::as_str)
    {
        causes.push(Cause::invalid(
            "metadata.uid",
            &json!(uid),
            "field is immutable",
        ));
    }
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match old_meta.get(field) {
            Some(v) => {
                m.insert(field.into(), v.clone());
            }
            None => {
                m.remove(field);
            }
        }
    }
    m.remove("selfLink");
    if def.strategy.tracks_generation() {
        let old_gen = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        m.insert(
            "generation".into(),
            json!(if bump { old_gen + 1 } else { old_gen }),
        );
    } else {
        m.remove("generation");
    }
    set_cluster_annotation(m, cluster);
    causes
}

/// Objects compared without the fields that change on every read (resourceVersion).
pub fn same_content(a: &Value, b: &Value) -> bool {
    // Compared in place (every update asks): maps as maps, `metadata` without its resourceVersion.
    fn same_map(a: &Map<String, Value>, b: &Map<String, Value>, skip: &str) -> bool {
        let len = |m: &Map<String, Value>| m.len() - usize::from(m.contains_key(skip));
        len(a) == len(b)
            && a.iter()
                .filter(|(k, _)| k.as_str() != skip)
                .all(|(k, v)| b.get(k) == Some(v))
    }
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter().all(|(k, v)| match (k.as_str(), b.get(k)) {
                    ("metadata", Some(other)) => match (v.as_object(), other.as_object()) {
                        (Some(x), Some(y)) => same_map(x, y, "resourceVersion"),
                        _ => v == other,
                    },
                    (_, other) => other == Some(v),
                })
        }
        _ => a == b,
    }
}

/// Finalizer names are qualified names; on Kubernetes' own kinds (not custom resources, CRDs or
/// kcp's kinds, whose validation is apiextensions') one without a `/` must be a standard one. The
/// orphan and foreground finalizers exclude each other.
fn finalizer_causes(def: &ResourceDef, finalizers: &[Value], causes: &mut Vec<Cause>) {
    let kubes_own = def.custom_schema.is_none()
        && def.group != "apiextensions.k8s.io"
        && !def.group.ends_with(".kcp.io");
    for (i, name) in finalizers.iter().filter_map(Value::as_str).enumerate() {
        for msg in names::is_qualified_name(name) {
            causes.push(Cause::invalid("metadata.finalizers", &json!(name), &msg));
        }
        if kubes_own {
            causes.extend(kube_finalizer_cause(
                &format!("metadata.finalizers[{i}]"),
                name,
            ));
        }
    }
    let has = |f: &str| finalizers.iter().any(|v| v == f);
    if has("orphan") && has("foregroundDeletion") {
        causes.push(Cause::invalid(
            "metadata.finalizers",
            &Value::from(finalizers.to_vec()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
}

/// Kubernetes' rule for its own kinds' finalizers: one without a `/` must be a standard one.
fn kube_finalizer_cause(field: &str, name: &str) -> Option<Cause> {
    const STANDARD: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];
    (!name.contains('/') && !STANDARD.contains(&name)).then(|| {
        Cause::invalid(
            field,
            &json!(name),
            "name is neither a standard finalizer name nor is it fully qualified",
        )
    })
}

/// Kubernetes' `ValidateNamespaceFinalizeUpdate`: each of a Namespace's `spec.finalizers` is a
/// qualified name, and a standard one when it has no `/`.
pub fn namespace_finalizer_causes(ns: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let finalizers = ns.pointer("/spec/finalizers").and_then(Value::as_array);
    for (i, name) in finalizers
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .enumerate()
    {
        let field = format!("spec.finalizers[{i}]");
        for msg in names::is_qualified_name(name) {
            causes.push(Cause::invalid(&field, &json!(name), &msg));
        }
        causes.extend(kube_finalizer_cause(&field, name));
    }
    causes
}

/// Drops owner references that repeat an earlier one whole (Kubernetes dedups them rather than
/// refusing the write). Answers the dropped ones' uids, for the request's warning.
pub fn dedup_owner_references(obj: &mut Value) -> Vec<String> {
    let Some(refs) = obj
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    else {
        return Vec::new();
    };
    let uid = |r: &Value| {
        r.get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    // Whole entries are compared only among those sharing a uid (a body may hold many).
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<Value> = Vec::with_capacity(refs.len());
    let mut dropped = Vec::new();
    for r in refs.drain(..) {
        let id = uid(&r);
        if !seen.insert(id.clone()) && kept.contains(&r) {
            dropped.push(id);
        } else {
            kept.push(r);
        }
    }
    *refs = kept;
    dropped
}

/// Kubernetes' `ValidateOwnerReferences`: each reference names its owner whole, and at most one
/// is the controller. Causes are at `metadata.ownerReferences` (no index), as Kubernetes puts them.
fn owner_reference_causes(refs: &[Value], causes: &mut Vec<Cause>) {
    const PATH: &str = "metadata.ownerReferences";
    let mut controller: Option<String> = None;
    for r in refs {
        let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default();
        // The version is what follows the group's `/` (or the whole apiVersion of the core group).
        let version = text("apiVersion").rsplit('/').next().unwrap_or_default();
        for (field, empty, detail) in [
            (
                "apiVersion",
                version.is_empty(),
                "version must not be empty",
            ),
            ("kind", text("kind").is_empty(), "kind must not be empty"),
            ("name", text("name").is_empty(), "name must not be empty"),
            ("uid", text("uid").is_empty(), "uid must not be empty"),
        ] {
            if empty {
                causes.push(Cause::invalid(
                    &format!("{PATH}.{field}"),
                    &json!(text(field)),
                    detail,
                ));
            }
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &controller {
                Some(first) => causes.push(Cause::invalid(
                    PATH,
                    &Value::from(refs.to_vec()),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => controller = Some(this),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn type_fields_come_first() {
        let def = kcp_api_types::builtin::catalogue()
            .into_iter()
            .find(|d| d.group.is_empty() && d.plural == "configmaps")
            .expect("configmaps");
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        let mut shuffled = json!({"data": {}, "metadata": {"name": "a"}, "kind": "ConfigMap"});
        assert!(super::check_type(&def, &mut shuffled).is_ok());
        assert_eq!(keys(&shuffled), ["apiVersion", "kind", "metadata", "data"]);
        let mut ordered =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": {}});
        assert!(super::check_type(&def, &mut ordered).is_ok());
        assert_eq!(keys(&ordered), ["apiVersion", "kind", "metadata", "data"]);
        let mut bare = json!({"metadata": {"name": "a"}, "data": {}});
        assert!(super::check_type(&def, &mut bare).is_ok());
        assert_eq!(keys(&bare), ["apiVersion", "kind", "metadata", "data"]);
        let mut wrong = json!({"apiVersion": "v2", "kind": "ConfigMap"});
        assert_eq!(
            super::check_type(&def, &mut wrong).map_err(|e| e.code),
            Err(400)
        );
    }

    #[test]
    fn timestamps_are_rfc3339_in_whole_seconds_utc() {
        let now = super::now_rfc3339();
        let parsed = chrono::DateTime::parse_from_rfc3339(&now).map(|t| t.to_utc());
        assert!(parsed.is_ok(), "{now}");
        // Kubernetes' metav1.Time: `2006-01-02T15:04:05Z`, no fraction, no offset.
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && !now.contains('.'), "{now}");
    }

    #[test]
    fn same_content_ignores_only_the_resource_version() {
        let a = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}, "data": {"k": "v"}});
        let b = json!({"data": {"k": "v"}, "metadata": {"resourceVersion": "9", "name": "a"}, "kind": "ConfigMap"});
        assert!(super::same_content(&a, &b));
        let no_rv = json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
        assert!(super::same_content(&a, &no_rv));
        let changed = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}, "data": {"k": "w"}});
        assert!(!super::same_content(&a, &changed));
        let labelled = json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}});
        assert!(!super::same_content(&a, &labelled));
        let extra = json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}, "immutable": true});
        assert!(!super::same_content(&a, &extra));
    }
}
