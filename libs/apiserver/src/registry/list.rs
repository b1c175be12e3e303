//! List: selectors, pagination with continue tokens, and Kubernetes' resourceVersion semantics.
//!
//! Lists come from the watch cache. A continuation of an older snapshot is served by the cache too
//! while the listed resource is unchanged since that revision; otherwise it is read from the store
//! at that revision, so every page of one list is one consistent snapshot; once the store has
//! compacted it, the continue token is answered with 410 Expired.

use std::sync::Arc;

use base64::Engine;
use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::selector::{FieldSelector, Selector};
use kcp_apimachinery::status::ApiError;
use kcp_store::{RangeRequest, Revision};
use serde_json::{Value, json};

use super::resource_version::{self, ListAt};
use super::{Registry, cache_error, keyspace, store_error};
use crate::watch_cache::{CachedObject, decorate};

/// Label and field selectors of a request.
#[derive(Clone, Debug, Default)]
pub struct Selectors {
    pub label: Selector,
    pub field: FieldSelector,
}

/// Kubernetes' refusal of a field selector's field: a built-in kind that registers no field
/// conversion of its own (it selects on metadata only) answers with apimachinery's default
/// conversion's words; the others, custom resources and kcp's kinds included, with theirs.
fn unsupported_field(
    def: &ResourceDef,
    allowed: &[&str],
    err: kcp_apimachinery::selector::field::FieldSelectorError,
) -> String {
    use kcp_apimachinery::selector::field::FieldSelectorError;
    let metadata_only = allowed.iter().all(|f| f.starts_with("metadata."));
    let kubes_own = def.custom_schema.is_none() && !def.group.ends_with(".kcp.io");
    match err {
        FieldSelectorError::UnsupportedField(field) if metadata_only && kubes_own => format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            kcp_apimachinery::field_error::go_quote(&field)
        ),
        other => other.to_string(),
    }
}

impl Selectors {
    pub fn parse(
        def: &ResourceDef,
        label: Option<&str>,
        field: Option<&str>,
    ) -> Result<Selectors, ApiError> {
        let label = match label.filter(|s| !s.is_empty()) {
            Some(s) => Selector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?,
            None => Selector::everything(),
        };
        let field = match field.filter(|s| !s.is_empty()) {
            Some(s) => {
                let sel =
                    FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
                let allowed = def.selectable_fields();
                sel.check_supported(&allowed)
                    .map_err(|e| ApiError::bad_request(unsupported_field(def, &allowed, e)))?;
                sel
            }
            None => FieldSelector::everything(),
        };
        Ok(Selectors { label, field })
    }

    pub fn is_empty(&self) -> bool {
        self.label.is_empty() && self.field.is_empty()
    }

    pub fn matches(&self, def: &ResourceDef, obj: &CachedObject) -> bool {
        if !self.label.is_empty() && !self.label.matches(obj) {
            return false;
        }
        if self.field.is_empty() {
            return true;
        }
        // Name and namespace are known without decoding; other fields need the object.
        let needs_value = self
            .field
            .requirements()
            .iter()
            .any(|r| !matches!(r.field.as_str(), "metadata.name" | "metadata.namespace"));
        let value = if needs_value { obj.value().ok() } else { None };
        self.field.matches(|field| match field {
            "metadata.name" => Some(obj.name.clone()),
            "metadata.namespace" => Some(obj.namespace.clone().unwrap_or_default()),
            other => value.as_ref().and_then(|v| def.field_value(v, other)),
        })
    }
}

/// List query parameters.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    pub selectors: Selectors,
    pub limit: usize,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
}

pub struct ListResult {
    pub items: Vec<Arc<CachedObject>>,
    pub revision: Revision,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// Where a list looks.
#[derive(Clone, Copy, Debug)]
pub struct ListScope<'a> {
    /// `None` lists every logical cluster (wildcard).
    pub cluster: Option<&'a LogicalClusterName>,
    pub namespace: Option<&'a str>,
}

/// A continue token's revision meaning "the latest one", as Kubernetes encodes it.
const LATEST: Revision = -1;

/// Kubernetes' words for a continue token whose revision is compacted away.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";
const CONTINUE_INCONSISTENT: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn encode_continue(revision: Revision, last_key: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn decode_continue(token: &str, prefix: &str) -> Result<(Revision, String), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad("not a valid token"))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("server does not recognize this encoded version"));
    }
    // -1: go on at the latest revision (what an expired token's answer hands out).
    let rv = v
        .get("rv")
        .and_then(Value::as_i64)
        .filter(|rv| *rv > 0 || *rv == LATEST)
        .ok_or_else(|| bad("incorrect encoded start resourceVersion"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("missing start key"))?;
    // A token is only valid for the collection it came from.
    if !start.starts_with(prefix) {
        return Err(bad("the continue token does not belong to this collection"));
    }
    Ok((rv, start.to_string()))
}

/// 410 for a list at a compacted revision. A continued list gets a token for the rest at the
/// latest revision (Kubernetes' inconsistent continue); an exact list is simply too old.
fn compacted(continued: bool, resume_after: Option<&str>) -> ApiError {
    match (continued, resume_after) {
        (true, Some(key)) => {
            let mut err = ApiError::expired(CONTINUE_INCONSISTENT);
            err.details.list_continue = Some(encode_continue(LATEST, key));
            err
        }
        (true, None) => ApiError::expired(CONTINUE_EXPIRED),
        (false, _) => ApiError::expired("The resourceVersion for the provided list is too old."),
    }
}

impl Registry {
    /// Lists `def`'s objects as `def` serves them.
    pub async fn list(
        &self,
        def: &ResourceDef,
        scope: ListScope<'_>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        let mut result = self.list_stored(def, scope, opts).await?;
        if def.shared_storage.is_some() {
            result.items = result
                .items
                .into_iter()
                .map(|o| super::present(def, o))
                .collect::<Result<_, _>>()?;
        }
        Ok(result)
    }

    /// Lists stored objects (selectors apply to the stored form).
    async fn list_stored(
        &self,
        def: &ResourceDef,
        scope: ListScope<'_>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        let ks = keyspace(def);
        let prefix = match (scope.cluster, scope.namespace) {
            (Some(c), Some(ns)) if def.namespaced => ks.namespace(c, ns),
            (Some(c), _) => ks.cluster(c),
            (None, _) => ks.all_clusters().to_string(),
        };
        // With a wildcard cluster the namespace cannot narrow the key range: filter instead.
        let ns_filter = if scope.cluster.is_none() && def.namespaced {
            scope.namespace
        } else {
            None
        };
        let at = resource_version::list_at(opts)?;
        let (snapshot, start_after) = match &opts.continue_token {
            Some(token) => {
                let (rev, start) = decode_continue(token, &prefix)?;
                // LATEST: the rest of the list as it is now.
                ((rev != LATEST).then_some(rev), Some(start))
            }
            None => match at {
                ListAt::Fresh => {
                    self.cache.wait_fresh().await.map_err(cache_error)?;
                    (None, None)
                }
                ListAt::Any => (None, None),
                ListAt::Exact(rev) => (Some(rev), None),
                ListAt::NotOlderThan(rev) => {
                    self.cache.wait_for(rev).await.map_err(cache_error)?;
                    (None, None)
                }
            },
        };

        // The cache serves a snapshot while the resource is unchanged since it (checked on the
        // state it returns: it may move between any check and the read).
        let listed = self.cache.list_at(&prefix, start_after.as_deref());
        match snapshot {
            None => Ok(page_of(
                def,
                listed.objects,
                listed.revision,
                ns_filter,
                opts,
            )),
            Some(rev) if listed.unchanged_since <= rev && rev <= listed.revision => {
                Ok(page_of(def, listed.objects, rev, ns_filter, opts))
            }
            Some(rev) => {
                self.list_from_store(def, &prefix, ns_filter, rev, start_after, opts)
                    .await
            }
        }
    }

    async fn list_from_store(
        &self,
        def: &ResourceDef,
        prefix: &str,
        ns_filter: Option<&str>,
        revision: Revision,
        mut start_after: Option<String>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        let resume_after = start_after.clone();
        let mut items = Vec::new();
        let want = if opts.limit == 0 {
            usize::MAX
        } else {
            opts.limit
        };
        let mut more = false;
        loop {
            let page = self
                .store
                .range(RangeRequest {
                    prefix: prefix.to_string(),
                    start_after: start_after.clone(),
                    limit: want.clamp(1, 1000),
                    revision: Some(revision),
                })
                .await
                .map_err(|e| match e {
                    kcp_store::StoreError::Compacted { .. } => {
                        compacted(opts.continue_token.is_some(), resume_after.as_deref())
                    }
                    other => store_error(def, "", other),
                })?;
            for kv in &page.kvs {
                start_after = Some(kv.key.clone());
                let Some((value, json)) = decorate(&kv.value, kv.mod_revision) else {
                    continue;
                };
                let Some(parts) = def_key_parts(def, &kv.key) else {
                    continue;
                };
                let obj = CachedObject {
                    key: kv.key.clone(),
                    cluster: parts.0,
                    namespace: parts.1,
                    name: parts.2,
                    revision: kv.mod_revision,
                    labels: crate::watch_cache::labels_of(&value),
                    json: json.into(),
                };
                if ns_filter.is_none_or(|ns| obj.namespace.as_deref() == Some(ns))
                    && opts.selectors.matches(def, &obj)
                {
                    if items.len() == want {
                        more = true;
                        break;
                    }
                    items.push(Arc::new(obj));
                }
            }
            if more || !page.more || page.kvs.is_empty() {
                break;
            }
        }
        let continue_token = if more {
            items
                .last()
                .map(|o: &Arc<CachedObject>| encode_continue(revision, &o.key))
        } else {
            None
        };
        Ok(ListResult {
            items,
            revision,
            continue_token,
            remaining: None,
        })
    }
}

/// One page of `all` (cache objects in key order, the state at `revision`) as a list answers it.
fn page_of(
    def: &ResourceDef,
    all: Vec<Arc<CachedObject>>,
    revision: Revision,
    ns_filter: Option<&str>,
    opts: &ListOptions,
) -> ListResult {
    let matching = all.into_iter().filter(|o| {
        ns_filter.is_none_or(|ns| o.namespace.as_deref() == Some(ns))
            && opts.selectors.matches(def, o)
    });
    if opts.limit == 0 {
        return ListResult {
            items: matching.collect(),
            revision,
            continue_token: None,
            remaining: None,
        };
    }
    let mut items = Vec::with_capacity(opts.limit);
    let mut rest = 0usize;
    for o in matching {
        if items.len() < opts.limit {
            items.push(o);
        } else {
            rest += 1;
        }
    }
    let continue_token = if rest > 0 {
        items.last().map(|o| encode_continue(revision, &o.key))
    } else {
        None
    };
    let remaining = if rest > 0 && opts.selectors.is_empty() {
        Some(rest)
    } else {
        None
    };
    ListResult {
        items,
        revision,
        continue_token,
        remaining,
    }
}

fn def_key_parts(
    def: &ResourceDef,
    key: &str,
) -> Option<(LogicalClusterName, Option<String>, String)> {
    let ks = keyspace(def);
    let k = ks.parse(key)?;
    Some((
        LogicalClusterName::parse(k.cluster).ok()?,
        k.namespace.map(str::to_string),
        k.name.to_string(),
    ))
}
