//! Resource requests: the verbs of the generic registry, encoded as the client asked.

use std::sync::Arc;

use http::{Method, Response, StatusCode};
use kcp_api_types::builtin::certificates::{GROUP as CSR_GROUP, RESOURCE as CSR_RESOURCE};
use kcp_api_types::{ResourceDef, ResourceKind};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::selector::{FieldSelector, field};
use kcp_apimachinery::status::{ApiError, Cause, success_status};
use serde_json::{Value, json};

use super::RequestContext;
use crate::codec::{self, Output, Produces, negotiate};
use crate::registry::{
    DeleteOptions, DeleteOutcome, ListOptions, ListScope, ObjectRef, Selectors, UpdateKind,
    WriteOptions, Written, required_labels,
};
use crate::table::{self, IncludeObject};
use crate::watch_cache::CachedObject;
use crate::{ApiServer, apply};
use kcp_http::request_info::{ClusterTarget, ResourceRequest, Target};
use kcp_http::{Body, response};

/// How a request body is to be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl ApiServer {
    pub(super) async fn serve_resource(
        &self,
        ctx: &RequestContext,
        method: &Method,
        body: kcp_http::request_body::RequestBody,
    ) -> Result<Response<Body>, ApiError> {
        let Target::Resource(req) = &ctx.info.target else {
            return Err(ApiError::path_not_found());
        };
        let def = match (&ctx.info.cluster, req.resource.split_once(':')) {
            // Across clusters, a bound resource is named by its export's identity (kcp's
            // `/clusters/*/apis/<g>/<v>/<resource>:<identityHash>`). Not through a virtual
            // workspace: it serves its own set only, whatever identity a caller names.
            (ClusterTarget::Wildcard, Some((plural, identity))) if !ctx.virtual_workspace => {
                (self.apis).bound_by_identity(&req.group, &req.version, plural, identity)
            }
            _ => (ctx.apis)
                .find(&req.group, &req.version, &req.resource)
                .cloned(),
        };
        let def = def.ok_or_else(ApiError::path_not_found)?;
        let _ = ctx.served.set(def.clone());
        // Every request through a deprecated version says so, whatever its outcome.
        if let Some(warning) = &def.deprecation_warning {
            crate::admission::warnings::add(warning.clone());
        }
        if req.verb.is_empty() {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
        // Scope: namespaced kinds are addressed inside a namespace (except list/watch across them).
        if !def.namespaced && req.namespace.is_some() {
            return Err(ApiError::path_not_found());
        }
        if def.namespaced && req.namespace.is_none() && req.name.is_some() {
            return Err(ApiError::path_not_found());
        }
        if def.namespaced
            && req.namespace.is_none()
            && matches!(req.verb.as_str(), "create" | "deletecollection")
        {
            return Err(ApiError::path_not_found());
        }
        // A virtual workspace serves objects and their status, as kcp's do: no other subresource
        // (a scale or a ServiceAccount token would bypass what the view lets through).
        if ctx.virtual_workspace && req.subresource.as_deref().is_some_and(|s| s != "status") {
            return Err(ApiError::path_not_found());
        }
        if req.subresource.as_deref() == Some("scale")
            && let Some(scale) = &def.scale
        {
            let cluster = match &ctx.info.cluster {
                ClusterTarget::Name(name) => name,
                _ => return Err(ApiError::path_not_found()),
            };
            return self
                .serve_scale(
                    ctx,
                    &def,
                    scale,
                    object_ref(Some(cluster), req)?,
                    &req.verb,
                    body,
                )
                .await;
        }
        if req.subresource.as_deref() == Some("token")
            && def.group.is_empty()
            && def.plural == "serviceaccounts"
        {
            let ClusterTarget::Name(cluster) = &ctx.info.cluster else {
                return Err(ApiError::path_not_found());
            };
            return self
                .serve_token_request(ctx, &def, cluster, req, body)
                .await;
        }
        let update_kind = match req.subresource.as_deref() {
            None => UpdateKind::Main,
            Some("status") if def.status_subresource => UpdateKind::Status,
            Some("finalize") if def.is("", "namespaces") => UpdateKind::Finalize,
            Some("approval") if def.is(CSR_GROUP, CSR_RESOURCE) => UpdateKind::Approval,
            Some(_) => return Err(ApiError::path_not_found()),
        };
        // A Namespace's finalize endpoint only replaces (Kubernetes' FinalizeREST has no Get,
        // so no PATCH either).
        if update_kind == UpdateKind::Finalize && req.verb != "update" {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        if update_kind != UpdateKind::Main
            && !matches!(req.verb.as_str(), "get" | "update" | "patch")
        {
            return Err(ApiError::method_not_allowed(format!(
                "{} is not supported on {}/{}",
                req.verb,
                req.resource,
                req.subresource.as_deref().unwrap_or_default()
            )));
        }
        if !def.verbs.contains(&req.verb) {
            // A custom resource takes no create only while its CRD is being deleted.
            if req.verb == "create" && def.custom_schema.is_some() {
                return Err(ApiError::method_not_allowed(
                    "create not allowed while custom resource definition is terminating",
                ));
            }
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
        let cluster = match &ctx.info.cluster {
            ClusterTarget::Name(name) => Some(name),
            ClusterTarget::Wildcard if matches!(req.verb.as_str(), "list" | "watch") => None,
            ClusterTarget::Wildcard => {
                return Err(ApiError::method_not_allowed(format!(
                    "{:?} is not supported in the \"*\" logical cluster",
                    req.verb
                )));
            }
            _ => return Err(ApiError::path_not_found()),
        };
        if def.backing == ResourceKind::Review {
            let raw = codec::read_body(body).await?;
            let obj = codec::decode_object(ctx.content_type.as_deref(), &raw)?;
            return self.serve_review(ctx, &def, obj);
        }
        match req.verb.as_str() {
            "get" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                if let Some(rev) = crate::registry::resource_version::get_not_older_than(
                    ctx.query.get("resourceVersion"),
                )? {
                    self.registry
                        .cache()
                        .wait_for(rev)
                        .await
                        .map_err(crate::registry::cache_error)?;
                }
                let at = object_ref(cluster, req)?;
                let obj = self.registry.get(&def, at).await?;
                if !required_labels::carried(&ctx.required_labels, |k| obj.labels.get(k)) {
                    return Err(required_labels::not_found(&def, at.name));
                }
                encode_object(ctx, &def, &obj.json.to_bytes(), output, StatusCode::OK)
            }
            "list" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                if ctx.query.get("sendInitialEvents").is_some() {
                    let cause = Cause::forbidden(
                        "sendInitialEvents",
                        "sendInitialEvents is forbidden for list",
                    );
                    return Err(kcp_http::query::invalid_options("list", vec![cause]));
                }
                let opts = list_options(ctx, &def, None)?;
                let scope = ListScope {
                    cluster,
                    namespace: req.namespace.as_deref(),
                };
                let result = self.registry.list(&def, scope, &opts).await?;
                encode_list(
                    ctx,
                    &def,
                    &result.items,
                    list_meta(result.revision, result.continue_token, result.remaining),
                    output,
                )
            }
            "watch" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                let opts = list_options(ctx, &def, req.name.as_deref())?;
                self.serve_watch(
                    ctx,
                    def.clone(),
                    cluster,
                    req.namespace.clone(),
                    opts,
                    output,
                )
                .await
            }
            "create" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                let raw = codec::read_body(body).await?;
                let obj = codec::decode_object(ctx.content_type.as_deref(), &raw)?;
                let (obj, warnings) = self.field_validation(ctx, &def, obj, &raw)?;
                let opts = WriteOptions {
                    dry_run: ctx.dry_run()?,
                    user: Some(&ctx.user),
                    required_labels: &ctx.required_labels,
                    ..Default::default()
                };
                let cluster = cluster.ok_or_else(ApiError::path_not_found)?;
                if def.is("apiextensions.k8s.io", "customresourcedefinitions") {
                    crate::crd::check_reserved_group(cluster, &obj)?;
                }
                let manager = self.field_manager(ctx, &def)?;
                let obj = apply::track_write(&def, UpdateKind::Main, &manager, None, obj);
                let written = self
                    .registry
                    .create(&def, cluster, req.namespace.as_deref(), obj, opts)
                    .await?;
                self.after_create(&def, cluster, &written).await;
                let mut resp =
                    encode_object(ctx, &def, &written.json()?, output, StatusCode::CREATED)?;
                response::add_warnings(&mut resp, &warnings);
                Ok(resp)
            }
            "update" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                let raw = codec::read_body(body).await?;
                let obj = codec::decode_object(ctx.content_type.as_deref(), &raw)?;
                let (obj, warnings) = self.field_validation(ctx, &def, obj, &raw)?;
                let opts = WriteOptions {
                    dry_run: ctx.dry_run()?,
                    user: Some(&ctx.user),
                    required_labels: &ctx.required_labels,
                    ..Default::default()
                };
                let at = object_ref(cluster, req)?;
                // Before anything else is judged (a create by PUT needs the name too).
                crate::registry::metadata::name_is_url_name(&obj, at.name)?;
                let unconditional = obj
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                let must_name_version = unconditional && !def.strategy.allow_unconditional_update();
                let manager = self.field_manager(ctx, &def)?;
                // A uid in the body is a precondition, as Kubernetes takes it: replacing an object
                // that was deleted (and made again) since is a conflict, not an invalid change.
                let precondition_uid = obj
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .filter(|u| !u.is_empty())
                    .map(str::to_string);
                let uid_conflict = |uid: &str, stored: &str| {
                    ApiError::conflict(
                        &def.group,
                        &def.plural,
                        at.name,
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}"
                        ),
                    )
                };
                let updated = self
                    .registry
                    .update(&def, at, update_kind, opts, |old| {
                        let stored = old
                            .pointer("/metadata/uid")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if let Some(uid) = &precondition_uid
                            && uid != stored
                        {
                            return Err(uid_conflict(uid, stored));
                        }
                        // Only a replacement needs the version (a PUT that creates does not).
                        // Kubernetes names the resource where the kind would be, and shows the
                        // missing version as Go prints a zero uint64.
                        if must_name_version {
                            let cause = Cause::new(
                                "FieldValueInvalid",
                                "metadata.resourceVersion",
                                "Invalid value: 0x0: must be specified for an update",
                            );
                            return Err(ApiError::invalid(
                                &def.group,
                                &def.plural,
                                at.name,
                                vec![cause],
                            ));
                        }
                        ctx.check_update(&def, at.name, old, &obj)?;
                        Ok(apply::track_write(
                            &def,
                            update_kind,
                            &manager,
                            Some(old),
                            obj.clone(),
                        ))
                    })
                    .await;
                let (written, status) = match updated {
                    Err(err)
                        if err.is_not_found()
                            && update_kind == UpdateKind::Main
                            && def.strategy.allow_create_on_update() =>
                    {
                        // A uid names an object that was there: gone, it is not made again.
                        if let Some(uid) = &precondition_uid {
                            return Err(uid_conflict(uid, ""));
                        }
                        let obj = apply::track_write(&def, UpdateKind::Main, &manager, None, obj);
                        let written = self
                            .registry
                            .create(&def, at.cluster, at.namespace, obj, opts)
                            .await?;
                        self.after_create(&def, at.cluster, &written).await;
                        (written, StatusCode::CREATED)
                    }
                    other => (other?, StatusCode::OK),
                };
                let mut resp = encode_object(ctx, &def, &written.json()?, output, status)?;
                response::add_warnings(&mut resp, &warnings);
                Ok(resp)
            }
            "patch" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                let raw = codec::read_body(body).await?;
                let (written, warnings, status) = self
                    .patch(ctx, &def, object_ref(cluster, req)?, update_kind, &raw)
                    .await?;
                let mut resp = encode_object(ctx, &def, &written.json()?, output, status)?;
                response::add_warnings(&mut resp, &warnings);
                Ok(resp)
            }
            "delete" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                let raw = codec::read_body(body).await?;
                let opts = delete_options(ctx, &raw)?;
                let at = object_ref(cluster, req)?;
                match self.registry.delete(&def, at, &opts).await? {
                    DeleteOutcome::Deleted(obj) => {
                        let uid = obj
                            .pointer("/metadata/uid")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        Ok(response::json_value(
                            StatusCode::OK,
                            &success_status(&def.group, &def.plural, at.name, uid),
                        ))
                    }
                    DeleteOutcome::Pending(written) => {
                        self.after_delete_started(&def, at).await;
                        encode_object(ctx, &def, &written.json()?, output, StatusCode::OK)
                    }
                }
            }
            "deletecollection" => {
                let output = negotiate(ctx.accept.as_deref(), Produces::Objects)?;
                let raw = codec::read_body(body).await?;
                let opts = delete_options(ctx, &raw)?;
                let list_opts = list_options(ctx, &def, None)?;
                // With a limit, one page goes (Kubernetes' answer carries its continue token);
                // without, every object selected (from a continue token on, if one came).
                let paged = list_opts.limit > 0;
                let scope = ListScope {
                    cluster,
                    namespace: req.namespace.as_deref(),
                };
                let result = self.registry.list(&def, scope, &list_opts).await?;
                let meta = match paged {
                    true => list_meta(result.revision, result.continue_token, result.remaining),
                    false => list_meta(self.registry.cache().revision(), None, None),
                };
                let mut deleted = Vec::new();
                for item in result.items {
                    let at = ObjectRef {
                        cluster: &item.cluster,
                        namespace: item.namespace.as_deref(),
                        name: &item.name,
                    };
                    match self.registry.delete(&def, at, &opts).await {
                        Ok(DeleteOutcome::Deleted(_)) => deleted.push(item.clone()),
                        Ok(DeleteOutcome::Pending(_)) => {
                            self.after_delete_started(&def, at).await;
                            deleted.push(item.clone());
                        }
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(e),
                    }
                }
                encode_list(ctx, &def, &deleted, meta, output)
            }
            other => Err(ApiError::method_not_allowed(format!(
                "verb {other:?} is not supported"
            ))),
        }
    }

    async fn patch(
        &self,
        ctx: &RequestContext,
        def: &Arc<ResourceDef>,
        at: ObjectRef<'_>,
        kind: UpdateKind,
        raw: &[u8],
    ) -> Result<(Written, Vec<String>, StatusCode), ApiError> {
        let ct = codec::essence(ctx.content_type.as_deref());
        let patch_type = match ct.as_str() {
            "application/json-patch+json" => PatchType::Json,
            "application/merge-patch+json" => PatchType::Merge,
            // Custom resources have no Go struct tags to merge by.
            "application/strategic-merge-patch+json" if def.custom_schema.is_some() => {
                return Err(ApiError::unsupported_media_type(&ct));
            }
            "application/strategic-merge-patch+json" => PatchType::Strategic,
            "application/apply-patch+yaml" => PatchType::Apply,
            other => return Err(ApiError::unsupported_media_type(other)),
        };
        // Kubernetes reads a query boolean leniently: only `false` and `0` are false.
        let force = ctx.query.get("force").map(|_| ctx.query.flag("force"));
        let mut option_errors = Vec::new();
        let has_manager = ctx.query.get("fieldManager").is_some_and(|m| !m.is_empty());
        if patch_type == PatchType::Apply && !has_manager {
            option_errors.push(Cause::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
        if patch_type != PatchType::Apply && force.is_some() {
            option_errors.push(Cause::forbidden(
                "force",
                "may not be specified for non-apply patch",
            ));
        }
        if !option_errors.is_empty() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                option_errors,
            ));
        }
        let manager = self.field_manager(ctx, def)?;
        let opts = WriteOptions {
            dry_run: ctx.dry_run()?,
            user: Some(&ctx.user),
            required_labels: &ctx.required_labels,
            ..Default::default()
        };
        if patch_type == PatchType::Apply {
            let config = codec::decode_yaml(raw)?;
            let (config, warnings) = self.field_validation(ctx, def, config, raw)?;
            let (written, created) = self
                .server_side_apply(
                    ctx,
                    def,
                    at,
                    kind,
                    opts,
                    &manager,
                    force.unwrap_or(false),
                    config,
                )
                .await?;
            let status = match created {
                true => StatusCode::CREATED,
                false => StatusCode::OK,
            };
            return Ok((written, warnings, status));
        }
        let patch: Value = serde_json::from_slice(raw)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let mode = validation_mode(ctx)?;
        let schema = def.schema();
        self.registry
            .update(def, at, kind, opts, |old| {
                let patched = apply_patch(def, &patch_type, old, &patch)?;
                let patched = match &schema {
                    Some(schema) => {
                        decode_patched(def, schema, mode, (&patch_type, &patch), patched)?
                    }
                    None => patched,
                };
                ctx.check_update(def, at.name, old, &patched)?;
                Ok(apply::track_write(def, kind, &manager, Some(old), patched))
            })
            .await
            .map(|written| (written, Vec::new(), StatusCode::OK))
    }

    /// `application/apply-patch+yaml`: merges the applied configuration into the live object
    /// (creating it when absent: then `true`) with field ownership; conflicts are 409 unless
    /// forced.
    #[allow(clippy::too_many_arguments)]
    async fn server_side_apply(
        &self,
        ctx: &RequestContext,
        def: &Arc<ResourceDef>,
        at: ObjectRef<'_>,
        kind: UpdateKind,
        opts: WriteOptions<'_>,
        manager: &str,
        force: bool,
        config: Value,
    ) -> Result<(Written, bool), ApiError> {
        if !config.is_object() {
            return Err(ApiError::bad_request(
                "the applied configuration must be an object",
            ));
        }
        crate::registry::metadata::same_name_as_url(&config, at.name)?;
        // Field ownership is per version: an apply must name the endpoint's (kube-apiserver's
        // structured-merge manager refuses it before anything else).
        let version = config
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if version != def.api_version() {
            return Err(ApiError::bad_request(format!(
                "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
                def.api_version()
            )));
        }
        let result = self
            .registry
            .update(def, at, kind, opts, |old| {
                let applied = apply::apply(def, kind, manager, force, Some(old), &config)?;
                ctx.check_update(def, at.name, old, &applied)?;
                Ok(applied)
            })
            .await;
        match result {
            Err(err) if err.is_not_found() && kind == UpdateKind::Main => {
                let mut obj = apply::apply(def, kind, manager, force, None, &config)?;
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("name".into(), Value::String(at.name.to_string()));
                }
                let written = self
                    .registry
                    .create(def, at.cluster, at.namespace, obj, opts)
                    .await?;
                self.after_create(def, at.cluster, &written).await;
                Ok((written, true))
            }
            other => other.map(|written| (written, false)),
        }
    }

    /// The field manager of a write, or 422 for an invalid `fieldManager`.
    fn field_manager(&self, ctx: &RequestContext, def: &ResourceDef) -> Result<String, ApiError> {
        apply::field_manager(ctx.query.get("fieldManager"), ctx.user_agent.as_deref())
            .map_err(|cause| ApiError::invalid(&def.group, &def.kind, "", vec![cause]))
    }

    /// `fieldValidation`: unknown or duplicate fields are an error (Strict), a warning (Warn, the
    /// default) or ignored; they are never stored.
    fn field_validation(
        &self,
        ctx: &RequestContext,
        def: &ResourceDef,
        obj: Value,
        raw: &[u8],
    ) -> Result<(Value, Vec<String>), ApiError> {
        let mode = validation_mode(ctx)?;
        let Some(schema) = def.schema() else {
            return Ok((obj, Vec::new()));
        };
        // A value of the wrong type cannot be decoded into a built-in kind at all: 400, whatever
        // the validation mode. Custom resources report it as a 422 cause instead (their strategy).
        if def.custom_schema.is_none()
            && let Some(message) = kcp_schema::validate::decode_error(&schema, &obj, &def.kind, raw)
        {
            return Err(ApiError::bad_request(message));
        }
        let mut problems = kcp_schema::unknown_fields(&schema, &obj);
        if codec::essence(ctx.content_type.as_deref()) == "application/json"
            || ctx.content_type.is_none()
        {
            problems.extend(kcp_schema::duplicate_fields(raw));
        }
        let pruned = kcp_schema::prune(&schema, obj);
        match mode {
            "Strict" if !problems.is_empty() => Err(ApiError::bad_request(format!(
                "strict decoding error: {}",
                problems.join(", ")
            ))),
            "Ignore" => Ok((pruned, Vec::new())),
            _ => Ok((pruned, problems)),
        }
    }
}

/// The request's `fieldValidation` (Warn when absent), or 422 for a value Kubernetes lacks.
fn validation_mode(ctx: &RequestContext) -> Result<&str, ApiError> {
    let mode = ctx.query.get("fieldValidation").unwrap_or("Warn");
    if matches!(mode, "Strict" | "Warn" | "Ignore" | "") {
        return Ok(mode);
    }
    let cause = Cause::not_supported(
        "fieldValidation",
        &Value::from(mode),
        &["Ignore", "Strict", "Warn"],
    );
    let verb = match &ctx.info.target {
        Target::Resource(r) => r.verb.as_str(),
        _ => "",
    };
    Err(kcp_http::query::invalid_options(verb, vec![cause]))
}

/// What kube-apiserver's decode of a JSON, merge or strategic patch's result does: a value a
/// built-in kind cannot hold is refused (422 at `patch`; stored, it would break every typed
/// client), and unknown fields are dropped, reported as `fieldValidation` says (422 when Strict).
fn decode_patched(
    def: &ResourceDef,
    schema: &kcp_schema::Schema,
    mode: &str,
    (patch_type, patch): (&PatchType, &Value),
    mut patched: Value,
) -> Result<Value, ApiError> {
    // A strategic merge is decoded from its map of float64s (`15.0` fits an integer field), the
    // others from JSON bytes by Go's decoder.
    let strategic = *patch_type == PatchType::Strategic;
    if strategic {
        kcp_apimachinery::numbers::integral_floats_to_integers(&mut patched);
    }
    // Kubernetes shows a strategic merge's refusal with the patch (as Go prints its map), the
    // others with the patched object.
    let refused = |detail: String| {
        let value = Value::String(match strategic {
            true => kcp_apimachinery::field_error::go_print_untyped(patch),
            false => patched.to_string(),
        });
        ApiError::invalid("", "", "", vec![Cause::invalid("patch", &value, &detail)])
    };
    if def.custom_schema.is_none()
        && let Some(first) = kcp_schema::validate::type_mismatches(schema, &patched).first()
    {
        return Err(refused(first.go_message()));
    }
    let unknown = kcp_schema::unknown_fields(schema, &patched);
    match mode {
        "Strict" if !unknown.is_empty() => {
            return Err(refused(format!(
                "strict decoding error: {}",
                unknown.join(", ")
            )));
        }
        "Ignore" => {}
        _ => unknown
            .iter()
            .cloned()
            .for_each(crate::admission::warnings::add),
    }
    // Pruning only drops unknown fields: with none, the walk is saved.
    Ok(match unknown.is_empty() {
        true => patched,
        false => kcp_schema::prune(schema, patched),
    })
}

fn apply_patch(
    def: &ResourceDef,
    patch_type: &PatchType,
    old: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    use kcp_apimachinery::patch::{self, ErrorClass, JsonPatchError};
    let json_err = |e: JsonPatchError| match e {
        JsonPatchError::ApplyFailed(_) => {
            ApiError::new(kcp_apimachinery::status::Reason::Invalid, e.to_string())
        }
        _ => ApiError::bad_request(e.to_string()),
    };
    match patch_type {
        PatchType::Json => patch::apply_json_patch(old, patch).map_err(json_err),
        PatchType::Merge => patch::apply_merge_patch(old, patch).map_err(json_err),
        PatchType::Strategic => {
            let meta = patch::builtin_patch_meta(&def.group, &def.kind);
            patch::apply_strategic_merge_patch(old, patch, &meta).map_err(|e| match e.class() {
                ErrorClass::BadRequest => ApiError::bad_request(e.to_string()),
                ErrorClass::Unprocessable => {
                    ApiError::new(kcp_apimachinery::status::Reason::Invalid, e.to_string())
                }
                ErrorClass::Internal => ApiError::internal(e),
            })
        }
        PatchType::Apply => Err(ApiError::internal("apply patches take their own path")),
    }
}

fn object_ref<'a>(
    cluster: Option<&'a LogicalClusterName>,
    req: &'a ResourceRequest,
) -> Result<ObjectRef<'a>, ApiError> {
    Ok(ObjectRef {
        cluster: cluster.ok_or_else(ApiError::path_not_found)?,
        namespace: req.namespace.as_deref(),
        name: req.name.as_deref().ok_or_else(ApiError::path_not_found)?,
    })
}

/// A list's or watch's options from the query; `name` (a watch of one object by its path) narrows
/// the field selector to it, as Kubernetes does.
pub(super) fn list_options(
    ctx: &RequestContext,
    def: &ResourceDef,
    name: Option<&str>,
) -> Result<ListOptions, ApiError> {
    let q = &ctx.query;
    let limit = q.number("limit")?.unwrap_or(0);
    let field = q.get("fieldSelector").filter(|s| !s.is_empty());
    let named;
    let field = match name {
        None => field,
        Some(name) => {
            let requested = field
                .map(FieldSelector::parse)
                .transpose()
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            if let Some(other) = requested
                .as_ref()
                .and_then(|s| s.requires_exact_match("metadata.name"))
                && other != name
            {
                return Err(ApiError::bad_request(
                    "fieldSelector metadata.name doesn't match requested name",
                ));
            }
            let by_name = format!("metadata.name={}", field::escape_value(name));
            named = match field {
                Some(f) => format!("{f},{by_name}"),
                None => by_name,
            };
            Some(named.as_str())
        }
    };
    let mut selectors = Selectors::parse(def, q.get("labelSelector"), field)?;
    if !ctx.required_labels.is_empty() && !selectors.label.matches_nothing() {
        use kcp_apimachinery::selector::label::{Operator, Requirement, Selector};
        let mut requirements = selectors.label.requirements().to_vec();
        for (key, value) in &ctx.required_labels {
            let required = Requirement::new(key, Operator::Equals, vec![value.clone()])
                .map_err(ApiError::internal)?;
            requirements.push(required);
        }
        selectors.label = Selector::from_requirements(requirements);
    }
    Ok(ListOptions {
        selectors,
        limit: usize::try_from(limit.max(0)).unwrap_or(0),
        continue_token: q
            .get("continue")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        resource_version: q.get("resourceVersion").map(str::to_string),
        resource_version_match: q.get("resourceVersionMatch").map(str::to_string),
    })
}

fn delete_options(ctx: &RequestContext, raw: &[u8]) -> Result<DeleteOptions, ApiError> {
    // As Kubernetes: the options come from the query only when no body came.
    let mut opts = if raw.iter().all(u8::is_ascii_whitespace) {
        // Checked, not used: deletions here have no grace period.
        ctx.query.number("gracePeriodSeconds")?;
        let orphan =
            (ctx.query.get("orphanDependents")).map(|_| ctx.query.flag("orphanDependents"));
        let policy = ctx.query.get("propagationPolicy").filter(|p| !p.is_empty());
        DeleteOptions::with_propagation(policy, orphan)?
    } else {
        let body = codec::decode_object(
            ctx.content_type.as_deref().or(Some("application/json")),
            raw,
        )?;
        DeleteOptions::from_body(&body)?
    };
    if ctx.dry_run()? {
        opts.dry_run = true;
    }
    opts.user = Some(ctx.user.clone());
    opts.required_labels = ctx.required_labels.clone();
    Ok(opts)
}

pub(super) fn list_meta(
    revision: i64,
    continue_token: Option<String>,
    remaining: Option<usize>,
) -> Value {
    let mut meta = json!({"resourceVersion": revision.to_string()});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = remaining {
        meta["remainingItemCount"] = json!(r);
    }
    meta
}

pub(super) fn encode_object(
    ctx: &RequestContext,
    def: &ResourceDef,
    json: &[u8],
    output: Output,
    code: StatusCode,
) -> Result<Response<Body>, ApiError> {
    match output {
        Output::Json | Output::DiscoveryV2 { .. } => Ok(response::json_bytes(
            code,
            bytes::Bytes::copy_from_slice(json),
        )),
        Output::Yaml => Ok(response::yaml_value(code, &parse(json)?)),
        Output::PartialMetadata => Ok(response::json_value(
            code,
            &table::partial_metadata(&parse(json)?),
        )),
        Output::Table => {
            let include = IncludeObject::parse(ctx.query.get("includeObject"))?;
            let obj = parse(json)?;
            let rv = obj
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null);
            let t = table::table(def, &[obj], json!({"resourceVersion": rv}), include);
            let mut resp = response::json_value(code, &t);
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json;as=Table;v=v1;g=meta.k8s.io"),
            );
            Ok(resp)
        }
    }
}

fn parse(json: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(json).map_err(ApiError::internal)
}

pub(super) fn encode_list(
    ctx: &RequestContext,
    def: &ResourceDef,
    items: &[Arc<CachedObject>],
    meta: Value,
    output: Output,
) -> Result<Response<Body>, ApiError> {
    match output {
        Output::Json | Output::DiscoveryV2 { .. } => {
            // Items are already serialized: splice them into the list without re-encoding.
            let head =
                json!({"kind": def.list_kind, "apiVersion": def.api_version(), "metadata": meta});
            // Sized once: a list of thousands of objects would otherwise be copied by every doubling.
            let items_len: usize = items.iter().map(|i| i.json.len() + 1).sum();
            let mut out = Vec::with_capacity(items_len + 256);
            serde_json::to_writer(&mut out, &head).map_err(ApiError::internal)?;
            out.pop();
            out.extend_from_slice(b",\"items\":[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                item.json.write_to(&mut out);
            }
            out.extend_from_slice(b"]}");
            Ok(response::json_bytes(StatusCode::OK, out))
        }
        Output::Yaml => {
            let values: Vec<Value> = items
                .iter()
                .map(|i| i.json.parse().map_err(ApiError::internal))
                .collect::<Result<_, _>>()?;
            let list = json!({"kind": def.list_kind, "apiVersion": def.api_version(), "metadata": meta, "items": values});
            Ok(response::yaml_value(StatusCode::OK, &list))
        }
        Output::PartialMetadata => {
            let values: Vec<Value> = items
                .iter()
                .map(|i| {
                    i.json
                        .parse()
                        .map(|v| table::partial_metadata(&v))
                        .map_err(ApiError::internal)
                })
                .collect::<Result<_, _>>()?;
            let list = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": values});
            Ok(response::json_value(StatusCode::OK, &list))
        }
        Output::Table => {
            let include = IncludeObject::parse(ctx.query.get("includeObject"))?;
            let values: Vec<Value> = items
                .iter()
                .map(|i| i.json.parse().map_err(ApiError::internal))
                .collect::<Result<_, _>>()?;
            let t = table::table(def, &values, meta, include);
            let mut resp = response::json_value(StatusCode::OK, &t);
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json;as=Table;v=v1;g=meta.k8s.io"),
            );
            Ok(resp)
        }
    }
}
