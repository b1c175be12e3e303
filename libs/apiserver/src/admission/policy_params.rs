//! A ValidatingAdmissionPolicy's params: the objects of the policy's `paramKind` that a binding's
//! `paramRef` names (by name, or by label selector), read from the watch cache of the write's
//! logical cluster. The policy's expressions see each as `params`, one evaluation per param.
//! `paramKind` may be a built-in kind or a CRD's kind in that LC.

use kcp_apimachinery::selector::Selector;
use kcp_apimachinery::selector::label::from_label_selector;
use kcp_store::keys::ResourceKeyspace;
use serde_json::Value;

use crate::registry::keyspace;
use crate::watch_cache::WatchCache;

/// Kubernetes' words when a binding's params are missing and it says `Deny`.
pub(super) const NOT_FOUND: &str = "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction";

/// A policy's `paramKind`.
pub(super) struct ParamKind {
    group: String,
    version: String,
    kind: String,
}

impl ParamKind {
    pub(super) fn parse(v: Option<&Value>) -> Option<ParamKind> {
        let v = v.filter(|v| !v.is_null())?;
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Some(ParamKind {
            group: group.to_string(),
            version: version.to_string(),
            kind: v
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        })
    }

    /// Where objects of this kind live in `cluster`, and whether they are namespaced.
    fn keyspace(&self, cache: &WatchCache, cluster: &str) -> Option<ResourceKeyspace> {
        let builtin = kcp_api_types::builtin::catalogue()
            .into_iter()
            .find(|d| d.group == self.group && d.version == self.version && d.kind == self.kind);
        if let Some(def) = builtin {
            return Some(keyspace(&def));
        }
        let crds = ResourceKeyspace::new(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
            false,
        );
        cache
            .list(&crds.cluster(cluster), None)
            .iter()
            .filter_map(|c| c.value().ok())
            .find(|crd| {
                let spec = crd.get("spec").unwrap_or(&Value::Null);
                let text = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or("");
                text("/group") == self.group
                    && text("/names/kind") == self.kind
                    && (spec
                        .get("versions")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten())
                    .any(|v| v.get("name").and_then(Value::as_str) == Some(&self.version))
            })
            .map(|crd| {
                let spec = crd.get("spec").unwrap_or(&Value::Null);
                let plural = spec
                    .pointer("/names/plural")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let namespaced = spec.get("scope").and_then(Value::as_str) == Some("Namespaced");
                ResourceKeyspace::new(&self.group, plural, None, namespaced)
            })
    }
}

/// A binding's `paramRef`.
pub(super) struct ParamRef {
    name: String,
    namespace: String,
    selector: Option<Result<Selector, String>>,
    /// `parameterNotFoundAction: Deny` (the default); `Allow` skips the binding.
    pub(super) deny_when_missing: bool,
}

impl ParamRef {
    pub(super) fn parse(v: Option<&Value>) -> Option<ParamRef> {
        let v = v.filter(|v| !v.is_null())?;
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(ParamRef {
            name: text("name"),
            namespace: text("namespace"),
            selector: v
                .get("selector")
                .filter(|s| !s.is_null())
                .map(|s| from_label_selector(s).map_err(|e| e.to_string())),
            deny_when_missing: v.get("parameterNotFoundAction").and_then(Value::as_str)
                != Some("Allow"),
        })
    }
}

/// The params `param_ref` names for a write in `cluster` (and `request_namespace`, where a
/// namespaced param is looked for when the binding names no namespace). Empty: none found.
pub(super) fn resolve(
    cache: &WatchCache,
    cluster: &str,
    kind: &ParamKind,
    param_ref: &ParamRef,
    request_namespace: Option<&str>,
) -> Result<Vec<Value>, String> {
    let Some(ks) = kind.keyspace(cache, cluster) else {
        return Err(format!(
            "failed to find resource referenced by paramKind: '{}/{}, Kind={}'",
            kind.group, kind.version, kind.kind
        ));
    };
    let namespace = match (ks.is_namespaced(), param_ref.namespace.as_str()) {
        (false, _) => None,
        (true, "") => Some(request_namespace.ok_or(
            "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources",
        )?),
        (true, ns) => Some(ns),
    };
    if !param_ref.name.is_empty() {
        let key = ks.object(cluster, namespace, &param_ref.name);
        return Ok(cache
            .get(&key)
            .and_then(|o| o.value().ok())
            .into_iter()
            .collect());
    }
    let selector = match &param_ref.selector {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(format!("invalid paramRef selector: {e}")),
        None => return Err("paramRef must set a name or a selector".into()),
    };
    let prefix = match namespace {
        Some(ns) => ks.namespace(cluster, ns),
        None => ks.cluster(cluster),
    };
    Ok(cache
        .list(&prefix, None)
        .iter()
        .filter(|o| selector.matches(o.as_ref()))
        .filter_map(|o| o.value().ok())
        .collect())
}
