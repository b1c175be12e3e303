//! CRD object validation: metadata name, spec (group, scope, names, versions, subresources,
//! printer columns, selectable fields, conversion), status names and stored versions.

use serde_json::{Map, Value};

use super::causes::{Causes, child, index, key, quoted, shown};
use super::json::{Obj, bool_of, go_strings, list, obj, opt_str, str_of, strings};
use super::names::{dns1035_label, dns1123_subdomain, name_is_dns_subdomain};
use super::{SchemaOptions, default_rules, openapi_rules, schema_rules, structural_rules};
use crate::FieldCause;

/// Groups of built-in Kubernetes APIs, which kcp lets CRDs serve (the empty string is the core
/// group).
const KUBERNETES_API_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "imagepolicy.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

const BOUND_CRD_ANNOTATION: &str = "apis.kcp.io/bound-crd";
const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";
const MAX_SELECTABLE_FIELDS: usize = 8;
const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

/// The defaults the v1 API applies to a CRD when decoding it: singular name (lowercased kind),
/// list kind (kind + "List"), conversion strategy None when no conversion is given, port 443 for
/// a conversion webhook service, and `status.storedVersions` from the storage version when empty.
pub fn apply_crd_defaults(crd: &mut Value) {
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|versions| {
            versions
                .iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .cloned();
    if let (Some(storage), Some(root)) = (storage, crd.as_object_mut()) {
        let status = root
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(status) = status.as_object_mut()
            && status
                .get("storedVersions")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
        {
            status.insert("storedVersions".into(), Value::Array(vec![storage]));
        }
    }
    if let Some(service) = crd
        .pointer_mut("/spec/conversion/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
        && !service.contains_key("port")
    {
        service.insert("port".into(), Value::from(443));
    }
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = str_of(names, "kind").to_owned();
        if str_of(names, "singular").is_empty() {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if str_of(names, "listKind").is_empty() && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    if !spec.contains_key("conversion") {
        let mut conversion = Map::new();
        conversion.insert("strategy".into(), Value::String("None".into()));
        spec.insert("conversion".into(), Value::Object(conversion));
    }
}

/// Validates `crd` (a create when `old` is `None`).
pub(crate) fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let mut crd = crd.clone();
    apply_crd_defaults(&mut crd);
    let old = old.map(|old| {
        let mut old = old.clone();
        apply_crd_defaults(&mut old);
        old
    });
    let empty = Map::new();
    let root = crd.as_object().unwrap_or(&empty);
    let spec = obj(root, "spec").unwrap_or(&empty);
    let meta = obj(root, "metadata").unwrap_or(&empty);
    let old_root = old.as_ref().and_then(Value::as_object);
    let old_spec = old_root.and_then(|o| obj(o, "spec"));

    let mut out = Causes::default();
    if old_root.is_none() {
        metadata_name(meta, spec, &mut out);
    }

    let opts = match old_spec {
        None => Options::create(),
        Some(old_spec) => Options::update(old_spec, old_root.is_some_and(established)),
    };
    validate_spec(spec, &opts, &mut out);

    if let (Some(old_spec), Some(_)) = (old_spec, old_root) {
        immutable(spec, old_spec, opts.immutable_names, &mut out);
    }

    // The registry resets status on create and keeps the old one on update; either way the
    // storage version is recorded as stored.
    let status = old_root.and_then(|o| obj(o, "status"));
    if let Some(accepted) = status.and_then(|s| obj(s, "acceptedNames")) {
        names(accepted, "status.acceptedNames", &mut out);
    }
    let mut stored: Vec<String> = status
        .map(|s| {
            strings(s, "storedVersions")
                .into_iter()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    for version in versions(spec) {
        let name = str_of(version, "name");
        if bool_of(version, "storage") && !stored.iter().any(|s| s == name) {
            stored.push(name.to_owned());
        }
    }
    stored_versions(&stored, spec, &mut out);

    api_approval(meta, spec, old_root, &mut out);
    preserve_unknown_fields(spec, old_spec, &mut out);
    out.0
}

fn versions(spec: &Obj) -> impl Iterator<Item = &Obj> {
    list(spec, "versions").iter().filter_map(Value::as_object)
}

fn established(crd: &Obj) -> bool {
    obj(crd, "status")
        .map(|s| list(s, "conditions"))
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_object)
        .any(|c| str_of(c, "type") == "Established" && str_of(c, "status") == "True")
}

/// The name rule: a DNS subdomain equal to `<plural>.<group>`.
fn metadata_name(meta: &Obj, spec: &Obj, out: &mut Causes) {
    let bound = obj(meta, "annotations").is_some_and(|a| a.contains_key(BOUND_CRD_ANNOTATION));
    let group = match str_of(spec, "group") {
        "" => "core",
        group => group,
    };
    let plural = obj(spec, "names").map_or("", |n| str_of(n, "plural"));
    let required = format!("{plural}.{group}");
    let check = |name: &str, prefix: bool| {
        let mut errors = name_is_dns_subdomain(name, prefix);
        if !bound && name != required {
            errors.push(r#"must be spec.names.plural+"."+spec.group"#.to_owned());
        }
        errors
    };
    let generate_name = str_of(meta, "generateName");
    if !generate_name.is_empty() {
        for message in check(generate_name, true) {
            out.invalid(
                "metadata.generateName".into(),
                &quoted(generate_name),
                &message,
            );
        }
    }
    let name = str_of(meta, "name");
    if name.is_empty() {
        out.required("metadata.name".into(), "name or generateName is required");
    } else {
        for message in check(name, false) {
            out.invalid("metadata.name".into(), &quoted(name), &message);
        }
    }
}

/// What create and update validation differ in.
struct Options {
    schema: SchemaOptions,
    open_api_schema: bool,
    recognized_review_version: bool,
    immutable_names: bool,
}

impl Options {
    fn create() -> Self {
        Options {
            schema: SchemaOptions::STRICT,
            open_api_schema: true,
            recognized_review_version: true,
            immutable_names: false,
        }
    }

    fn update(old: &Obj, established: bool) -> Self {
        let schemas: Vec<&Obj> = versions(old)
            .filter_map(|v| obj(v, "schema").and_then(|s| obj(s, "openAPIV3Schema")))
            .collect();
        let any = |pred: &dyn Fn(&Obj) -> bool| schemas.iter().any(|s| any_node(s, pred));
        let unpruned_defaults = schemas.iter().any(|s| {
            let mut found = Causes::default();
            if structural_rules::convertible(s) {
                default_rules::check(s, "", true, &mut found);
            }
            found
                .0
                .iter()
                .any(|c| c.message.ends_with("must not have unknown fields"))
        });
        let review_versions = conversion_review_versions(old);
        Options {
            schema: SchemaOptions {
                valid_property_type: !any(&|n| {
                    let ty = str_of(n, "type");
                    !ty.is_empty() && !openapi_rules::OPENAPI_TYPES.contains(&ty)
                }),
                structural: true,
                pruned_defaults: !unpruned_defaults,
                atomic_set_type: !any(&non_atomic_set),
                map_list_keys: !any(&|n| {
                    let mut found = Causes::default();
                    openapi_rules::map_list_keys(n, "", &mut found);
                    !found.is_empty()
                }),
            },
            open_api_schema: versions(old)
                .all(|v| obj(v, "schema").is_some_and(|s| obj(s, "openAPIV3Schema").is_some())),
            recognized_review_version: str_of(
                obj(old, "conversion").unwrap_or(&Map::new()),
                "strategy",
            ) != "Webhook"
                || review_versions.is_empty()
                || review_versions
                    .iter()
                    .any(|v| *v == "v1" || *v == "v1beta1"),
            immutable_names: established,
        }
    }
}

fn conversion_review_versions(spec: &Obj) -> Vec<&str> {
    obj(spec, "conversion")
        .and_then(|c| obj(c, "webhook"))
        .map(|w| strings(w, "conversionReviewVersions"))
        .unwrap_or_default()
}

fn non_atomic_set(s: &Obj) -> bool {
    if opt_str(s, "x-kubernetes-list-type") != Some("set") {
        return false;
    }
    let Some(items) = obj(s, "items") else {
        return false;
    };
    match str_of(items, "type") {
        "array" => opt_str(items, "x-kubernetes-list-type").is_some_and(|t| t != "atomic"),
        "object" => opt_str(items, "x-kubernetes-map-type") != Some("atomic"),
        _ => false,
    }
}

/// Whether any node of the schema satisfies `pred`.
fn any_node(s: &Obj, pred: &dyn Fn(&Obj) -> bool) -> bool {
    if pred(s) {
        return true;
    }
    let mut subs: Vec<&Obj> = Vec::new();
    if let Some(items) = obj(s, "items") {
        subs.push(items);
    }
    if let Some(properties) = obj(s, "properties") {
        subs.extend(properties.values().filter_map(Value::as_object));
    }
    if let Some(additional) = obj(s, "additionalProperties") {
        subs.push(additional);
    }
    if let Some(not) = obj(s, "not") {
        subs.push(not);
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        subs.extend(list(s, keyword).iter().filter_map(Value::as_object));
    }
    subs.into_iter().any(|sub| any_node(sub, pred))
}

/// A per-version field after v1-to-internal conversion: hoisted to the spec when identical in
/// every version.
struct Hoisted<'a> {
    top: Option<&'a Value>,
    per_version: Vec<Option<&'a Value>>,
}

fn hoist<'a>(spec: &'a Obj, field: &str) -> Hoisted<'a> {
    let values: Vec<Option<&Value>> = versions(spec).map(|v| v.get(field)).collect();
    let identical = values
        .first()
        .is_some_and(|first| values.iter().all(|v| v == first));
    if identical {
        Hoisted {
            top: values.first().copied().flatten(),
            per_version: vec![None; values.len()],
        }
    } else {
        Hoisted {
            top: None,
            per_version: values,
        }
    }
}

fn has_status(subresources: Option<&Value>) -> bool {
    subresources.and_then(|s| s.get("status")).is_some()
}

fn validate_spec(spec: &Obj, opts: &Options, out: &mut Causes) {
    let group = str_of(spec, "group");
    if !KUBERNETES_API_GROUPS.contains(&group) {
        let errors = dns1123_subdomain(group);
        if group.is_empty() {
            out.required("spec.group".into(), "");
        } else if !errors.is_empty() {
            out.invalid("spec.group".into(), &quoted(group), &errors.join(","));
        } else if group.split('.').count() < 2 {
            out.invalid(
                "spec.group".into(),
                &quoted(group),
                "should be a domain with at least one dot",
            );
        }
    }

    enum_string(
        "spec.scope",
        str_of(spec, "scope"),
        &["Cluster", "Namespaced"],
        out,
    );

    let schemas = hoist(spec, "schema");
    let subresources = hoist(spec, "subresources");
    let columns = hoist(spec, "additionalPrinterColumns");
    let selectable = hoist(spec, "selectableFields");
    let top_schema = schemas
        .top
        .and_then(Value::as_object)
        .filter(|v| obj(v, "openAPIV3Schema").is_some());
    let preserve_unknown = bool_of(spec, "preserveUnknownFields");

    if top_schema.is_none() {
        for (i, version) in versions(spec).enumerate() {
            let has_schema =
                obj(version, "schema").is_some_and(|s| obj(s, "openAPIV3Schema").is_some());
            let path = child(
                &child(&index("spec.versions", i), "schema"),
                "openAPIV3Schema",
            );
            if opts.open_api_schema && !has_schema {
                out.required(path, "");
            } else if !opts.open_api_schema
                && !preserve_unknown
                && bool_of(version, "served")
                && !has_schema
            {
                out.required(path, "because otherwise all fields are pruned");
            }
        }
    }
    let all_schemas: Vec<&Obj> = versions(spec)
        .filter_map(|v| obj(v, "schema").and_then(|s| obj(s, "openAPIV3Schema")))
        .collect();
    if preserve_unknown
        && all_schemas
            .iter()
            .any(|s| any_node(s, &|n| n.contains_key("default")))
    {
        out.invalid(
            "spec.preserveUnknownFields".into(),
            "true",
            "must be false in order to use defaults in the schema",
        );
    }

    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    let mut storage = 0;
    for (i, version) in versions(spec).enumerate() {
        let path = index("spec.versions", i);
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
            out.invalid(child(&path, "name"), &quoted(name), &errors.join(","));
        }
        let version_subresources = if subresources.top.is_some() {
            subresources.top
        } else {
            subresources.per_version.get(i).copied().flatten()
        };
        version_rules(
            version,
            &path,
            has_status(version_subresources),
            VersionParts {
                schema: schemas.per_version.get(i).copied().flatten(),
                subresources: subresources.per_version.get(i).copied().flatten(),
                columns: columns.per_version.get(i).copied().flatten(),
                selectable: selectable.per_version.get(i).copied().flatten(),
            },
            opts,
            out,
        );
    }

    let all_versions = list(spec, "versions");
    let versions_shown = versions_value(all_versions);
    if !unique {
        out.invalid(
            "spec.versions".into(),
            &versions_shown,
            "must contain unique version names",
        );
    }
    if storage != 1 {
        out.invalid(
            "spec.versions".into(),
            &versions_shown,
            "must have exactly one version marked as storage version",
        );
    }
    if let Some(first) = versions(spec).next() {
        // Conversion copies the first version's name to the internal spec.version.
        let name = str_of(first, "name");
        let errors = dns1035_label(name);
        if !name.is_empty() && !errors.is_empty() {
            out.invalid("spec.version".into(), &quoted(name), &errors.join(","));
        }
    }

    let empty = Map::new();
    let names_obj = obj(spec, "names").unwrap_or(&empty);
    for field in ["plural", "singular", "kind", "listKind"] {
        if str_of(names_obj, field).is_empty() {
            out.required(format!("spec.names.{field}"), "");
        }
    }
    names(names_obj, "spec.names", out);

    let any_status =
        has_status(subresources.top) || subresources.per_version.iter().any(|s| has_status(*s));
    schema_rules::check(top_schema, any_status, &opts.schema, "spec.validation", out);
    if let Some(top) = subresources.top.and_then(Value::as_object) {
        subresource_rules(top, "spec.subresources", out);
    }
    if let Some(top) = columns.top {
        for (i, column) in top
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .enumerate()
        {
            if let Some(column) = column.as_object() {
                column_rules(column, &index("spec.additionalPrinterColumns", i), out);
            }
        }
    }
    if let Some(top) = selectable.top {
        let fields = top.as_array().map_or(&[][..], Vec::as_slice);
        if !fields.is_empty() {
            match top_schema.and_then(|s| obj(s, "openAPIV3Schema")) {
                None => out.invalid(
                    "spec.selectableFields".into(),
                    "\"\"",
                    "may only be set when validations.schema is included",
                ),
                Some(schema) => selectable_rules(fields, schema, "spec.selectableFields", out),
            }
        }
    }

    let conversion = obj(spec, "conversion");
    let strategy = conversion.map_or("", |c| str_of(c, "strategy"));
    if conversion.is_some() && strategy != "None" && preserve_unknown {
        out.invalid(
            "spec.conversion.strategy".into(),
            &quoted(strategy),
            "must be None if spec.preserveUnknownFields is true",
        );
    }
    if let Some(conversion) = conversion {
        conversion_rules(conversion, opts.recognized_review_version, out);
    }
}

/// Go's `%#v` of the versions is unwieldy; show the JSON list instead (`(nil)` when empty, as
/// Go shows a nil slice).
fn versions_value(all: &[Value]) -> String {
    if all.is_empty() {
        "[]apiextensions.CustomResourceDefinitionVersion(nil)".to_owned()
    } else {
        Value::Array(all.to_vec()).to_string()
    }
}

fn enum_string(path: &str, value: &str, accepted: &[&str], out: &mut Causes) {
    if value.is_empty() {
        out.required(path.to_owned(), "");
    } else if !accepted.contains(&value) {
        out.not_supported(path.to_owned(), value, accepted);
    }
}

/// The per-version fields that stay per version after conversion.
struct VersionParts<'a> {
    schema: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: Option<&'a Value>,
    selectable: Option<&'a Value>,
}

fn version_rules(
    version: &Obj,
    path: &str,
    status_enabled: bool,
    parts: VersionParts<'_>,
    opts: &Options,
    out: &mut Causes,
) {
    let warning_path = child(path, "deprecationWarning");
    if let Some(warning) = version.get("deprecationWarning").and_then(Value::as_str) {
        let shown = quoted(warning);
        if !bool_of(version, "deprecated") {
            out.invalid(
                warning_path,
                &shown,
                "can only be set for deprecated versions",
            );
        } else {
            if warning.len() > 256 {
                out.invalid(
                    warning_path.clone(),
                    &shown,
                    "must be <= 256 characters long",
                );
            }
            if warning.is_empty() {
                out.invalid(warning_path.clone(), &shown, "must not be an empty string");
            }
            if let Some((i, c)) = warning
                .char_indices()
                .find(|(_, c)| c.is_control() || !is_printable(*c))
            {
                let what = if is_printable(c) {
                    "control"
                } else {
                    "non-printable"
                };
                out.invalid(
                    warning_path,
                    &shown,
                    &format!("must only contain printable UTF-8 characters; {what} character found at index {i}"),
                );
            }
        }
    }
    let schema = parts.schema.and_then(Value::as_object);
    schema_rules::check(
        schema,
        status_enabled,
        &opts.schema,
        &child(path, "schema"),
        out,
    );
    if let Some(subresources) = parts.subresources.and_then(Value::as_object) {
        subresource_rules(subresources, &child(path, "subresources"), out);
    }
    if let Some(columns) = parts.columns.and_then(Value::as_array) {
        for (i, column) in columns.iter().enumerate() {
            if let Some(column) = column.as_object() {
                column_rules(
                    column,
                    &index(&child(path, "additionalPrinterColumns"), i),
                    out,
                );
            }
        }
    }
    if let Some(fields) = parts.selectable.and_then(Value::as_array)
        && !fields.is_empty()
    {
        let at = child(path, "selectableFields");
        match schema.and_then(|s| obj(s, "openAPIV3Schema")) {
            None => out.invalid(
                at,
                "\"\"",
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            ),
            Some(schema) => selectable_rules(fields, schema, &at, out),
        }
    }
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
fn is_printable(c: char) -> bool {
    c == ' ' || !(c.is_control() || c.is_whitespace() || ('\u{e000}'..='\u{f8ff}').contains(&c))
}

/// `ValidateCustomResourceDefinitionNames`.
fn names(names: &Obj, path: &str, out: &mut Causes) {
    for field in ["plural", "singular"] {
        let value = str_of(names, field);
        let errors = dns1035_label(value);
        if !value.is_empty() && !errors.is_empty() {
            out.invalid(child(path, field), &quoted(value), &errors.join(","));
        }
    }
    for field in ["kind", "listKind"] {
        let value = str_of(names, field);
        let errors = dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !errors.is_empty() {
            out.invalid(
                child(path, field),
                &quoted(value),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errors.join(",")
                ),
            );
        }
    }
    for (i, short) in strings(names, "shortNames").into_iter().enumerate() {
        let errors = dns1035_label(short);
        if !errors.is_empty() {
            out.invalid(
                index(&child(path, "shortNames"), i),
                &quoted(short),
                &errors.join(","),
            );
        }
    }
    let kind = str_of(names, "kind");
    if !kind.is_empty() && kind == str_of(names, "listKind") {
        out.invalid(
            child(path, "listKind"),
            &quoted(kind),
            "kind and listKind may not be the same",
        );
    }
    for (i, category) in strings(names, "categories").into_iter().enumerate() {
        let errors = dns1035_label(category);
        if !errors.is_empty() {
            out.invalid(
                index(&child(path, "categories"), i),
                &quoted(category),
                &errors.join(","),
            );
        }
    }
}

/// `validateSimpleJSONPath`: a dot path like `.spec.replicas`.
fn simple_json_path(value: &str, path: &str, out: &mut Causes) -> bool {
    if value.is_empty() {
        out.invalid(path.to_owned(), &quoted(value), "must not be empty");
        false
    } else if !value.starts_with('.') {
        out.invalid(
            path.to_owned(),
            &quoted(value),
            "must be a simple json path starting with .",
        );
        false
    } else {
        true
    }
}

fn subresource_rules(subresources: &Obj, path: &str, out: &mut Causes) {
    let Some(scale) = obj(subresources, "scale") else {
        return;
    };
    for (field, prefix, detail) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let at = child(path, &format!("scale.{field}"));
        let value = str_of(scale, field);
        if value.is_empty() {
            out.required(at, "");
        } else if simple_json_path(value, &at, out) && !value.starts_with(prefix) {
            out.invalid(at, &quoted(value), detail);
        }
    }
    let selector = str_of(scale, "labelSelectorPath");
    if !selector.is_empty() {
        let at = child(path, "scale.labelSelectorPath");
        if simple_json_path(selector, &at, out)
            && !selector.starts_with(".spec.")
            && !selector.starts_with(".status.")
        {
            out.invalid(
                at,
                &quoted(selector),
                "should be a json path under either .spec or .status",
            );
        }
    }
}

fn column_rules(column: &Obj, path: &str, out: &mut Causes) {
    if str_of(column, "name").is_empty() {
        out.required(child(path, "name"), "");
    }
    let ty = str_of(column, "type");
    let types_detail = format!("must be one of {COLUMN_TYPES}");
    if ty.is_empty() {
        out.required(child(path, "type"), &types_detail);
    } else if !COLUMN_TYPES.split(',').any(|t| t == ty) {
        out.invalid(child(path, "type"), &quoted(ty), &types_detail);
    }
    let format = str_of(column, "format");
    if !format.is_empty() && !COLUMN_FORMATS.split(',').any(|f| f == format) {
        out.invalid(
            child(path, "format"),
            &quoted(format),
            &format!("must be one of {COLUMN_FORMATS}"),
        );
    }
    // The internal field is JSONPath, and so is the reported path.
    let at = child(path, "JSONPath");
    let json_path = str_of(column, "jsonPath");
    if json_path.is_empty() {
        out.required(at, "");
    } else {
        simple_json_path(json_path, &at, out);
    }
}

/// Follows a `.a.b` path through a schema's properties (no array notation).
fn resolve_field<'a>(schema: &'a Obj, json_path: &str) -> Result<(&'a Obj, String), String> {
    let Some(rest) = json_path.strip_prefix('.') else {
        return Err("must start with '.'".into());
    };
    let mut node = schema;
    let mut root = String::new();
    for (i, segment) in rest.split('.').enumerate() {
        if segment.is_empty() || segment.contains('[') {
            return Err(format!("invalid path segment {}", quoted(segment)));
        }
        if i == 0 {
            root = segment.to_owned();
        }
        node = match obj(node, "properties").and_then(|p| obj(p, segment)) {
            Some(sub) => sub,
            None => match obj(node, "additionalProperties") {
                Some(sub) => sub,
                None => {
                    return Err(format!(
                        "does not refer to a valid field: {}",
                        quoted(segment)
                    ));
                }
            },
        };
    }
    Ok((node, root))
}

fn selectable_rules(fields: &[Value], schema: &Obj, path: &str, out: &mut Causes) {
    let mut unique: Vec<&str> = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let at = child(&index(path, i), "jsonPath");
        let json_path = field.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        if json_path.is_empty() {
            out.required(at, "");
            continue;
        }
        let (node, root) = match resolve_field(schema, json_path) {
            Ok(found) => found,
            Err(err) => {
                out.invalid(
                    at,
                    &quoted(json_path),
                    &format!("is an invalid path: {err}"),
                );
                continue;
            }
        };
        if root == "metadata" {
            out.invalid(
                at.clone(),
                &quoted(json_path),
                "must not point to fields in metadata",
            );
        }
        if !matches!(str_of(node, "type"), "string" | "boolean" | "integer") {
            out.invalid(
                at.clone(),
                &quoted(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            );
        }
        if unique.contains(&json_path) {
            out.duplicate(at, &quoted(json_path));
        } else {
            unique.push(json_path);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        out.too_many(path.to_owned(), unique.len(), MAX_SELECTABLE_FIELDS);
    }
}

fn conversion_rules(conversion: &Obj, recognized_review_version: bool, out: &mut Causes) {
    let strategy = str_of(conversion, "strategy");
    enum_string(
        "spec.conversion.strategy",
        strategy,
        &["None", "Webhook"],
        out,
    );
    let webhook = obj(conversion, "webhook");
    let client_config = webhook.and_then(|w| obj(w, "clientConfig"));
    let review_versions = webhook
        .map(|w| strings(w, "conversionReviewVersions"))
        .unwrap_or_default();
    // Internal field names: webhookClientConfig, conversionReviewVersions.
    let config_path = "spec.conversion.webhookClientConfig";
    let versions_path = "spec.conversion.conversionReviewVersions";
    if strategy == "Webhook" {
        match client_config {
            None => out.required(
                config_path.into(),
                "required when strategy is set to Webhook",
            ),
            Some(config) => {
                let url = opt_str(config, "url");
                let service = obj(config, "service");
                match (url, service) {
                    (Some(url), None) => webhook_url(url, &child(config_path, "url"), out),
                    (None, Some(service)) => {
                        webhook_service(service, &child(config_path, "service"), out);
                    }
                    _ => out.required(
                        config_path.into(),
                        "exactly one of url or service is required",
                    ),
                }
            }
        }
        if review_versions.is_empty() {
            out.required(versions_path.into(), "");
        } else {
            let mut seen: Vec<&str> = Vec::new();
            let mut recognized = false;
            for (i, version) in review_versions.iter().enumerate() {
                let at = index(versions_path, i);
                if seen.contains(version) {
                    out.invalid(at, &quoted(version), "duplicate version");
                    continue;
                }
                seen.push(version);
                for message in dns1035_label(version) {
                    out.invalid(at.clone(), &quoted(version), &message);
                }
                recognized |= *version == "v1" || *version == "v1beta1";
            }
            if recognized_review_version && !recognized {
                out.invalid(
                    versions_path.into(),
                    &go_strings(&review_versions),
                    "must include at least one of v1, v1beta1",
                );
            }
        }
    } else {
        if client_config.is_some() {
            out.forbidden(
                config_path.into(),
                "should not be set when strategy is not set to Webhook",
            );
        }
        if !review_versions.is_empty() {
            out.forbidden(
                versions_path.into(),
                "should not be set when strategy is not set to Webhook",
            );
        }
    }
}

fn webhook_url(url: &str, path: &str, out: &mut Causes) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        out.invalid(
            path.to_owned(),
            &quoted(scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        );
    }
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = before_query.split('/').next().unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if scheme.is_empty() || host.is_empty() {
        out.invalid(
            path.to_owned(),
            "\"\"",
            &format!("host must be specified{FORM}"),
        );
    }
    if let Some(user) = user {
        out.invalid(
            path.to_owned(),
            &quoted(user),
            "user information is not permitted in the URL",
        );
    }
    if !fragment.is_empty() {
        out.invalid(
            path.to_owned(),
            &quoted(fragment),
            "fragments are not permitted in the URL",
        );
    }
    if !query.is_empty() {
        out.invalid(
            path.to_owned(),
            &quoted(query),
            "query parameters are not permitted in the URL",
        );
    }
}

fn webhook_service(service: &Obj, path: &str, out: &mut Causes) {
    if str_of(service, "name").is_empty() {
        out.required(child(path, "name"), "service name is required");
    }
    if str_of(service, "namespace").is_empty() {
        out.required(child(path, "namespace"), "service namespace is required");
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        out.invalid(
            child(path, "port"),
            &port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        );
    }
    if let Some(hook_path) = opt_str(service, "path")
        && !hook_path.is_empty()
        && !hook_path.starts_with('/')
    {
        out.invalid(
            child(path, "path"),
            &quoted(hook_path),
            "must start with a '/'",
        );
    }
}

fn immutable(spec: &Obj, old: &Obj, names_too: bool, out: &mut Causes) {
    let empty = Map::new();
    let new_names = obj(spec, "names").unwrap_or(&empty);
    let old_names = obj(old, "names").unwrap_or(&empty);
    let mut fields: Vec<(&str, &str, &str)> = Vec::new();
    if names_too {
        fields.push(("spec.scope", str_of(spec, "scope"), str_of(old, "scope")));
        fields.push((
            "spec.names.kind",
            str_of(new_names, "kind"),
            str_of(old_names, "kind"),
        ));
    }
    fields.push(("spec.group", str_of(spec, "group"), str_of(old, "group")));
    fields.push((
        "spec.names.plural",
        str_of(new_names, "plural"),
        str_of(old_names, "plural"),
    ));
    for (path, new, old) in fields {
        if new != old {
            out.invalid(path.into(), &quoted(new), "field is immutable");
        }
    }
}

/// `ValidateCustomResourceDefinitionStoredVersions`.
fn stored_versions(stored: &[String], spec: &Obj, out: &mut Causes) {
    let path = "status.storedVersions";
    let stored_refs: Vec<&str> = stored.iter().map(String::as_str).collect();
    if stored.is_empty() {
        out.invalid(
            path.into(),
            "[]string(nil)",
            "must have at least one stored version",
        );
        return;
    }
    let mut remaining: Vec<(usize, &str)> = stored_refs.iter().copied().enumerate().collect();
    for version in versions(spec) {
        let name = str_of(version, "name");
        let found = remaining.iter().any(|(_, v)| *v == name);
        if bool_of(version, "storage") && !found {
            out.invalid(
                path.into(),
                &go_strings(&stored_refs),
                &format!("must have the storage version {name}"),
            );
        }
        remaining.retain(|(_, v)| *v != name);
    }
    for (i, version) in remaining {
        out.invalid(
            index(path, i),
            &quoted(version),
            &format!(
                "missing from spec.versions; {version} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {version} and removes {version} from status.storedVersions"
            ),
        );
    }
}

fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// Approval state of a protected group: `None` when approved (or knowingly bypassed).
fn approval_problem(meta: &Obj) -> Option<(bool, String)> {
    let annotation = obj(meta, "annotations").and_then(|a| opt_str(a, API_APPROVAL_ANNOTATION));
    match annotation {
        None => Some((
            false,
            format!(
                "protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111",
                quoted(API_APPROVAL_ANNOTATION)
            ),
        )),
        Some(value) if value.starts_with("unapproved") => None,
        Some(value) if value.contains("://") || value.starts_with('/') => None,
        Some(_) => Some((
            true,
            format!(
                "protected groups must have approval annotation {} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
                quoted(API_APPROVAL_ANNOTATION)
            ),
        )),
    }
}

fn api_approval(meta: &Obj, spec: &Obj, old: Option<&Obj>, out: &mut Causes) {
    if !is_protected_group(str_of(spec, "group")) {
        return;
    }
    let state = approval_problem(meta);
    if let Some(old) = old {
        let old_meta = obj(old, "metadata").cloned().unwrap_or_default();
        if approval_problem(&old_meta) == state {
            return;
        }
    }
    let path = key("metadata.annotations", API_APPROVAL_ANNOTATION);
    match state {
        None => {}
        Some((false, reason)) => out.required(path, &reason),
        Some((true, reason)) => {
            let value = obj(meta, "annotations")
                .and_then(|a| a.get(API_APPROVAL_ANNOTATION))
                .map_or_else(|| "\"\"".to_owned(), shown);
            out.invalid(path, &value, &reason);
        }
    }
}

fn preserve_unknown_fields(spec: &Obj, old: Option<&Obj>, out: &mut Causes) {
    if old.is_some_and(|o| bool_of(o, "preserveUnknownFields")) {
        return;
    }
    if bool_of(spec, "preserveUnknownFields") {
        out.invalid(
            "spec.preserveUnknownFields".into(),
            "true",
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        );
    }
}
