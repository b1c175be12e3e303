//! The `paths` of a group-version document: one operation per verb, kube-apiserver style.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::OpenApiResource;
use super::components::{Lookup, list_name, reference};
use crate::builtin;

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Builds all paths (sorted by path) for the resources.
pub(crate) fn paths(resources: &[OpenApiResource], lookup: &Lookup<'_>) -> Map<String, Value> {
    let mut paths: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for resource in resources {
        Builder { resource, lookup }.add(&mut paths);
    }
    paths
        .into_iter()
        .map(|(path, item)| (path, Value::Object(item)))
        .collect()
}

struct Builder<'r, 'l, 'e> {
    resource: &'r OpenApiResource,
    lookup: &'l Lookup<'e>,
}

/// One operation before rendering.
struct Op<'a> {
    /// `x-kubernetes-action`: list, post, deletecollection, get, put, patch, delete.
    action: &'a str,
    /// Verb of the operationId, e.g. `list`.
    id_verb: &'a str,
    /// Between version and kind in the operationId, e.g. `Namespaced`, `CollectionNamespaced`.
    id_scope: String,
    /// End of the operationId, e.g. `Status` or `ForAllNamespaces`.
    id_suffix: &'a str,
    parameters: Vec<Value>,
    request_body: Option<Value>,
    responses: Value,
}

impl Builder<'_, '_, '_> {
    fn add(&self, paths: &mut BTreeMap<String, Map<String, Value>>) {
        let r = self.resource;
        let prefix = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        let item = format!("{collection}/{{name}}");
        let scope = if r.namespaced { "Namespaced" } else { "" };
        let kind_ref = reference(&r.schema_name);
        let list_ref = reference(&list_name(&r.schema_name));
        let gvk = self.gvk(&r.kind);

        let mut ops = Map::new();
        if r.has_verb("list") {
            let op = Op {
                action: "list",
                id_verb: "list",
                id_scope: scope.into(),
                id_suffix: "",
                parameters: self.list_params(),
                request_body: None,
                responses: ok(&list_ref, true),
            };
            ops.insert("get".into(), self.operation(op, &gvk));
        }
        if r.has_verb("create") {
            let op = Op {
                action: "post",
                id_verb: "create",
                id_scope: scope.into(),
                id_suffix: "",
                parameters: write_params(),
                request_body: Some(body(&kind_ref)),
                responses: written(&kind_ref, true),
            };
            ops.insert("post".into(), self.operation(op, &gvk));
        }
        if r.has_verb("deletecollection") {
            let mut parameters = delete_params();
            parameters.extend(list_params());
            parameters.retain(|p| p["name"] != "allowWatchBookmarks");
            let op = Op {
                action: "deletecollection",
                id_verb: "delete",
                id_scope: format!("Collection{scope}"),
                id_suffix: "",
                parameters,
                request_body: Some(body(&reference(builtin::DELETE_OPTIONS))),
                responses: ok(&reference(builtin::STATUS), false),
            };
            ops.insert("delete".into(), self.operation(op, &gvk));
        }
        if !ops.is_empty() {
            let params = path_params(r.namespaced, false);
            ops.insert("parameters".into(), Value::Array(params));
            paths.entry(collection).or_default().extend(ops);
        }

        // Namespaced kinds can also be listed across namespaces.
        if r.namespaced && r.has_verb("list") {
            let op = Op {
                action: "list",
                id_verb: "list",
                id_scope: String::new(),
                id_suffix: "ForAllNamespaces",
                parameters: self.list_params(),
                request_body: None,
                responses: ok(&list_ref, true),
            };
            let mut all = Map::new();
            all.insert("get".into(), self.operation(op, &gvk));
            all.insert("parameters".into(), Value::Array(vec![pretty()]));
            let path = format!("{prefix}/{}", r.plural);
            paths.entry(path).or_default().extend(all);
        }

        let item_ops = self.item_operations(scope, "", &kind_ref, &gvk, true);
        self.insert_item_path(paths, item.clone(), item_ops);

        for sub in &r.subresources {
            let (sub_ref, sub_gvk) = if sub == "scale" {
                let scale = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
                (reference(builtin::SCALE), scale)
            } else {
                (kind_ref.clone(), gvk.clone())
            };
            let suffix = capitalize(sub);
            let sub_ops = self.item_operations(scope, &suffix, &sub_ref, &sub_gvk, false);
            self.insert_item_path(paths, format!("{item}/{sub}"), sub_ops);
        }
    }

    fn insert_item_path(
        &self,
        paths: &mut BTreeMap<String, Map<String, Value>>,
        path: String,
        mut ops: Map<String, Value>,
    ) {
        if ops.is_empty() {
            return;
        }
        let params = path_params(self.resource.namespaced, true);
        ops.insert("parameters".into(), Value::Array(params));
        paths.entry(path).or_default().extend(ops);
    }

    /// get / put / patch (and delete for the object itself) on `.../{name}[/sub]`.
    fn item_operations(
        &self,
        scope: &str,
        suffix: &str,
        kind_ref: &Value,
        gvk: &Value,
        with_delete: bool,
    ) -> Map<String, Value> {
        let r = self.resource;
        let mut ops = Map::new();
        if r.has_verb("get") {
            let op = Op {
                action: "get",
                id_verb: "read",
                id_scope: scope.into(),
                id_suffix: suffix,
                parameters: Vec::new(),
                request_body: None,
                responses: ok(kind_ref, false),
            };
            ops.insert("get".into(), self.operation(op, gvk));
        }
        if r.has_verb("update") {
            let op = Op {
                action: "put",
                id_verb: "replace",
                id_scope: scope.into(),
                id_suffix: suffix,
                parameters: write_params(),
                request_body: Some(body(kind_ref)),
                responses: written(kind_ref, false),
            };
            ops.insert("put".into(), self.operation(op, gvk));
        }
        if r.has_verb("patch") {
            let mut parameters = write_params();
            parameters.push(bool_query("force", FORCE));
            let op = Op {
                action: "patch",
                id_verb: "patch",
                id_scope: scope.into(),
                id_suffix: suffix,
                parameters,
                request_body: Some(self.patch_body()),
                responses: written(kind_ref, false),
            };
            ops.insert("patch".into(), self.operation(op, gvk));
        }
        if with_delete && r.has_verb("delete") {
            let status = reference(builtin::STATUS);
            let op = Op {
                action: "delete",
                id_verb: "delete",
                id_scope: scope.into(),
                id_suffix: suffix,
                parameters: delete_params(),
                request_body: Some(body(&reference(builtin::DELETE_OPTIONS))),
                responses: json!({
                    "200": response("OK", &status),
                    "202": response("Accepted", &status),
                    "401": {"description": "Unauthorized"},
                }),
            };
            ops.insert("delete".into(), self.operation(op, gvk));
        }
        ops
    }

    /// List parameters, with `watch` when the resource can be watched.
    fn list_params(&self) -> Vec<Value> {
        let mut params = list_params();
        if self.resource.has_verb("watch") {
            params.push(bool_query("watch", WATCH));
        }
        params
    }

    fn gvk(&self, kind: &str) -> Value {
        json!({"group": self.resource.group, "version": self.resource.version, "kind": kind})
    }

    fn patch_body(&self) -> Value {
        let patch = json!({"schema": reference(builtin::PATCH)});
        let mut content = Map::new();
        for media in [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
        ] {
            content.insert(media.into(), patch.clone());
        }
        if self.lookup.is_builtin_go_type(&self.resource.schema_name) {
            content.insert("application/strategic-merge-patch+json".into(), patch);
        }
        json!({"content": content, "required": true})
    }

    fn operation(&self, op: Op<'_>, gvk: &Value) -> Value {
        let r = self.resource;
        let (group_camel, tag) = group_names(&r.group, &r.version);
        let mut out = Map::new();
        out.insert("tags".into(), json!([tag]));
        let description = describe(op.action, &r.kind, op.id_suffix);
        out.insert("description".into(), Value::String(description));
        // kube-apiserver's shape: patchCoreV1NamespacedConfigMapStatus.
        let id = format!(
            "{}{group_camel}{}{}{}{}",
            op.id_verb,
            capitalize(&r.version),
            op.id_scope,
            r.kind,
            op.id_suffix
        );
        out.insert("operationId".into(), Value::String(id));
        if !op.parameters.is_empty() {
            out.insert("parameters".into(), Value::Array(op.parameters));
        }
        if let Some(request_body) = op.request_body {
            out.insert("requestBody".into(), request_body);
        }
        out.insert("responses".into(), op.responses);
        out.insert(
            "x-kubernetes-action".into(),
            Value::String(op.action.into()),
        );
        out.insert("x-kubernetes-group-version-kind".into(), gvk.clone());
        Value::Object(out)
    }
}

/// `rbac.authorization.k8s.io` -> (`RbacAuthorization`, `rbacAuthorization_v1`); core -> `Core`.
fn group_names(group: &str, version: &str) -> (String, String) {
    if group.is_empty() {
        return ("Core".into(), format!("core_{version}"));
    }
    let short = group.strip_suffix(".k8s.io").unwrap_or(group);
    let camel: String = short.split(['.', '-']).map(capitalize).collect();
    let mut lower = camel.clone();
    if let Some(first) = lower.get(..1) {
        lower.replace_range(..1, &first.to_lowercase());
    }
    (camel, format!("{lower}_{version}"))
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn describe(action: &str, kind: &str, suffix: &str) -> String {
    let what = if suffix.is_empty() {
        format!("the specified {kind}")
    } else {
        format!("{} of the specified {kind}", suffix.to_lowercase())
    };
    match action {
        "list" => format!("list or watch objects of kind {kind}"),
        "post" => format!("create a {kind}"),
        "deletecollection" => format!("delete collection of {kind}"),
        "get" => format!("read {what}"),
        "put" => format!("replace {what}"),
        "patch" => format!("partially update {what}"),
        "delete" => format!("delete a {kind}"),
        other => other.to_owned(),
    }
}

fn ok(schema: &Value, streams: bool) -> Value {
    let mut content = content(schema);
    if streams {
        for media in [
            "application/json;stream=watch",
            "application/vnd.kubernetes.protobuf;stream=watch",
        ] {
            content.insert(media.into(), json!({"schema": schema}));
        }
    }
    json!({
        "200": {"description": "OK", "content": content},
        "401": {"description": "Unauthorized"},
    })
}

/// Responses of create (which may also answer 202) and of replace/patch.
fn written(schema: &Value, accepted: bool) -> Value {
    let mut responses = Map::new();
    responses.insert("200".into(), response("OK", schema));
    responses.insert("201".into(), response("Created", schema));
    if accepted {
        responses.insert("202".into(), response("Accepted", schema));
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(responses)
}

fn response(description: &str, schema: &Value) -> Value {
    json!({"description": description, "content": content(schema)})
}

fn content(schema: &Value) -> Map<String, Value> {
    let mut content = Map::new();
    for media in [JSON, YAML, PROTOBUF] {
        content.insert(media.into(), json!({"schema": schema}));
    }
    content
}

fn body(schema: &Value) -> Value {
    json!({"content": {"*/*": {"schema": schema}}, "required": true})
}

fn query(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": schema})
}

fn string_query(name: &str, description: &str) -> Value {
    query(
        name,
        description,
        json!({"type": "string", "uniqueItems": true}),
    )
}

fn integer_query(name: &str, description: &str) -> Value {
    query(
        name,
        description,
        json!({"type": "integer", "uniqueItems": true}),
    )
}

fn bool_query(name: &str, description: &str) -> Value {
    query(
        name,
        description,
        json!({"type": "boolean", "uniqueItems": true}),
    )
}

fn pretty() -> Value {
    string_query("pretty", "If 'true', then the output is pretty printed.")
}

fn path_params(namespaced: bool, named: bool) -> Vec<Value> {
    let mut params = Vec::new();
    if named {
        params.push(json!({"name": "name", "in": "path", "required": true,
                           "description": "name of the object",
                           "schema": {"type": "string", "uniqueItems": true}}));
    }
    if namespaced {
        params.push(json!({"name": "namespace", "in": "path", "required": true,
                           "description": "object name and auth scope, such as for teams and projects",
                           "schema": {"type": "string", "uniqueItems": true}}));
    }
    params.push(pretty());
    params
}

const WATCH: &str = "Watch for changes to the described resources and return them as a stream of \
                     add, update, and remove notifications. Specify resourceVersion.";
const FORCE: &str = "Force is going to \"force\" Apply requests. It means user will re-acquire \
                     conflicting fields owned by other people. Force flag must be unset for \
                     non-apply patch requests.";

fn list_params() -> Vec<Value> {
    vec![
        bool_query(
            "allowWatchBookmarks",
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
        ),
        string_query(
            "continue",
            "The continue option should be set when retrieving more results from the server.",
        ),
        string_query(
            "fieldSelector",
            "A selector to restrict the list of returned objects by their fields.",
        ),
        string_query(
            "labelSelector",
            "A selector to restrict the list of returned objects by their labels.",
        ),
        integer_query(
            "limit",
            "limit is a maximum number of responses to return for a list call.",
        ),
        string_query(
            "resourceVersion",
            "resourceVersion sets a constraint on what resource versions a request may be served from.",
        ),
        string_query(
            "resourceVersionMatch",
            "resourceVersionMatch determines how resourceVersion is applied to list calls.",
        ),
        bool_query(
            "sendInitialEvents",
            "`sendInitialEvents=true` may be set together with `watch=true`.",
        ),
        integer_query("timeoutSeconds", "Timeout for the list/watch call."),
    ]
}

fn write_params() -> Vec<Value> {
    vec![
        string_query(
            "dryRun",
            "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
        ),
        string_query(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
        string_query(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn (the default) - Strict",
        ),
    ]
}

fn delete_params() -> Vec<Value> {
    vec![
        string_query(
            "dryRun",
            "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
        ),
        integer_query(
            "gracePeriodSeconds",
            "The duration in seconds before the object should be deleted.",
        ),
        bool_query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.",
        ),
        bool_query(
            "orphanDependents",
            "Deprecated: please use the PropagationPolicy.",
        ),
        string_query(
            "propagationPolicy",
            "Whether and how garbage collection will be performed: Orphan, Background or Foreground.",
        ),
    ]
}
