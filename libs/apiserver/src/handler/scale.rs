//! The `scale` subresource of custom resources: an `autoscaling/v1` Scale read from and written
//! into the paths the CRD names (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`).

use http::{Response, StatusCode};
use kcp_api_types::{ResourceDef, ScaleDef};
use kcp_apimachinery::status::{ApiError, Cause};
use serde_json::{Value, json};

use super::RequestContext;
use crate::ApiServer;
use crate::apply;
use crate::codec::{self, Produces, negotiate};
use crate::registry::{ObjectRef, UpdateKind, WriteOptions};
use kcp_http::{Body, response};

/// A path such as `.spec.replicas` as its field names.
fn fields(path: &str) -> Vec<&str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect()
}

fn read<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    fields(path).iter().try_fold(obj, |v, f| v.get(*f))
}

fn write(obj: &mut Value, path: &str, value: Value) {
    let names = fields(path);
    let Some((last, parents)) = names.split_last() else {
        return;
    };
    let mut at = obj;
    for name in parents {
        if !at.get(*name).is_some_and(Value::is_object)
            && let Some(map) = at.as_object_mut()
        {
            map.insert((*name).to_string(), json!({}));
        }
        match at.get_mut(*name) {
            Some(next) => at = next,
            None => return,
        }
    }
    if let Some(map) = at.as_object_mut() {
        map.insert((*last).to_string(), value);
    }
}

/// The Scale view of an object.
fn scale_of(scale: &ScaleDef, obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or_default();
    let mut status = json!({
        "replicas": read(obj, &scale.status_replicas_path).cloned().unwrap_or(json!(0)),
    });
    if let Some(selector) = scale
        .label_selector_path
        .as_deref()
        .and_then(|p| read(obj, p))
        .and_then(Value::as_str)
    {
        status["selector"] = json!(selector);
    }
    // Only what Kubernetes' Scale of a custom resource carries (not its labels or annotations).
    let mut metadata = json!({});
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(key) {
            metadata[key] = v.clone();
        }
    }
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": metadata,
        "spec": {"replicas": read(obj, &scale.spec_replicas_path).cloned().unwrap_or(json!(0))},
        "status": status,
    })
}

impl ApiServer {
    pub(super) async fn serve_scale(
        &self,
        ctx: &RequestContext,
        def: &ResourceDef,
        scale: &ScaleDef,
        at: ObjectRef<'_>,
        verb: &str,
        body: kcp_http::request_body::RequestBody,
    ) -> Result<Response<Body>, ApiError> {
        negotiate(ctx.accept.as_deref(), Produces::JsonOnly)?;
        let current = || async {
            let obj = self.registry.get(def, at).await?;
            obj.value().map_err(ApiError::internal)
        };
        let desired: Value = match verb {
            "get" => {
                return Ok(response::json_value(
                    StatusCode::OK,
                    &scale_of(scale, &current().await?),
                ));
            }
            "update" => {
                let raw = codec::read_body(body).await?;
                codec::decode_object(ctx.content_type.as_deref(), &raw)?
            }
            "patch" => {
                let raw = codec::read_body(body).await?;
                let patch: Value = serde_json::from_slice(&raw)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                let now = scale_of(scale, &current().await?);
                let ct = codec::essence(ctx.content_type.as_deref());
                use kcp_apimachinery::patch;
                match ct.as_str() {
                    "application/json-patch+json" => patch::apply_json_patch(&now, &patch),
                    "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                        patch::apply_merge_patch(&now, &patch)
                    }
                    other => return Err(ApiError::unsupported_media_type(other)),
                }
                .map_err(|e| ApiError::bad_request(e.to_string()))?
            }
            other => {
                return Err(ApiError::method_not_allowed(format!(
                    "{other} is not supported on {}/scale",
                    def.plural
                )));
            }
        };
        let manager =
            apply::field_manager(ctx.query.get("fieldManager"), ctx.user_agent.as_deref())
                .map_err(|cause| ApiError::invalid("autoscaling", "Scale", at.name, vec![cause]))?;
        let replicas = desired
            .pointer("/spec/replicas")
            .cloned()
            .unwrap_or(json!(0));
        if !replicas
            .as_i64()
            .is_some_and(|r| (0..=i64::from(i32::MAX)).contains(&r))
        {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                at.name,
                vec![Cause::invalid(
                    "spec.replicas",
                    &replicas,
                    "must be greater than or equal to 0",
                )],
            ));
        }
        let precondition = desired
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let opts = WriteOptions {
            dry_run: ctx.dry_run()?,
            user: Some(&ctx.user),
            ..Default::default()
        };
        let written = self
            .registry
            .update(def, at, UpdateKind::Main, opts, |old| {
                let mut new = old.clone();
                write(&mut new, &scale.spec_replicas_path, replicas.clone());
                if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                    if precondition.is_empty() {
                        meta.remove("resourceVersion");
                    } else {
                        meta.insert("resourceVersion".into(), json!(precondition));
                    }
                }
                Ok(apply::track_scale_write(def, &manager, old, new))
            })
            .await?;
        Ok(response::json_value(
            StatusCode::OK,
            &scale_of(scale, &written.object),
        ))
    }
}
