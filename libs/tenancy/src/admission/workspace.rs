//! kcp's workspace admission: a new Workspace gets its type (defaulted from the parent's type),
//! its creator recorded and its type's labels; it is refused unless the type and every type it
//! extends exist, the creator may `use` each of them (judged in the type's LC only, as kcp's deep
//! SubjectAccessReview does), parent and child types allow each other, and the recorded creator is
//! the requester (a mutating webhook may not name another). [`WorkspaceClusterName`], last in the
//! chain, gives it the name of its future logical cluster and the finalizer that keeps it until
//! that LC is gone. Later, the type and the scheduled cluster never change.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::tenancy::ROOT;
use kcp_apimachinery::status::{ApiError, Cause, Reason};
use kcp_auth::UserInfo;
use kcp_auth::authz::{Attributes as AuthzAttributes, Authorizer, AuthorizerChain, Decision};
use serde_json::{Value, json};

use crate::paths::PathIndex;
use crate::workspace_types::{
    CLUSTER_ANNOTATION, OWNER_ANNOTATION, REQUIRED_GROUPS_ANNOTATION, ResolvedType,
    TYPE_ANNOTATION, TypeRef, Types, WORKSPACE_FINALIZER, new_cluster_name, owner_info,
    placement_error,
};
use kcp_apiserver::admission::{Admission, Attributes, Operation};
use kcp_apiserver::registry::str_at;
use kcp_apiserver::watch_cache::WatchCache;

pub struct WorkspaceAdmission {
    cache: Arc<WatchCache>,
    paths: Arc<PathIndex>,
    authorizer: AuthorizerChain,
}

impl WorkspaceAdmission {
    pub fn new(cache: Arc<WatchCache>, paths: Arc<PathIndex>, authorizer: AuthorizerChain) -> Self {
        WorkspaceAdmission {
            cache,
            paths,
            authorizer,
        }
    }

    fn types(&self) -> Types<'_> {
        Types {
            cache: &self.cache,
            paths: &self.paths,
        }
    }

    /// One annotation of LC `cluster`'s LogicalCluster, as the cache has it.
    fn lc_annotation(&self, cluster: &str, name: &str) -> Option<String> {
        let key = kcp_apiserver::registry::keyspaces::logical_cluster_key(cluster);
        self.cache.get(&key).and_then(|lc| lc.annotation(name))
    }

    /// The `authorization.kcp.io/required-groups` of LC `cluster`, if any.
    fn required_groups(&self, cluster: &str) -> Option<String> {
        self.lc_annotation(cluster, REQUIRED_GROUPS_ANNOTATION)
    }

    /// The type chain of the workspace `cluster` is: from its LogicalCluster's type annotation.
    /// An LC not made by a workspace (a bare LogicalCluster) has no type: empty.
    fn parent_chain(&self, cluster: &str) -> Vec<ResolvedType> {
        self.lc_annotation(cluster, TYPE_ANNOTATION)
            .and_then(|t| TypeRef::parse(&t))
            .and_then(|r| self.types().chain(&r).ok())
            .unwrap_or_default()
    }

    fn may_use(&self, user: &UserInfo, t: &ResolvedType) -> bool {
        let review = AuthzAttributes::deep(
            user,
            &t.cluster,
            "use",
            "tenancy.kcp.io",
            "workspacetypes",
            &t.reference.name,
        );
        self.authorizer.authorize(&review) == Decision::Allow
    }
}

fn is_workspace(attrs: &Attributes<'_>) -> bool {
    attrs.def.group == "tenancy.kcp.io"
        && attrs.def.plural == "workspaces"
        && attrs.subresource.is_none()
}

fn invalid(name: &str, field: &str, value: &Value, message: &str) -> ApiError {
    ApiError::invalid(
        "tenancy.kcp.io",
        "Workspace",
        name,
        vec![Cause::invalid(field, value, message)],
    )
}

fn forbidden(name: &str, message: &str) -> ApiError {
    ApiError::new(
        Reason::Forbidden,
        format!("workspaces.tenancy.kcp.io \"{name}\" is forbidden: {message}"),
    )
}

/// Why an update of a workspace's `spec.type` is refused, as kcp refuses it: a changed name or
/// path by its schema's rules (422, the value shown as its type), a removed type by its admission
/// (403).
fn type_change_refusal(name: &str, old: &Value, new: &Value) -> Option<ApiError> {
    let old_type = old.pointer("/spec/type").filter(|t| !t.is_null())?;
    let Some(new_type) = new.pointer("/spec/type").filter(|t| !t.is_null()) else {
        return Some(forbidden(
            name,
            "spec.type: Invalid value: \"null\": field is immutable",
        ));
    };
    // Every rule that fails is a cause, as kube-apiserver runs them all.
    let causes: Vec<Cause> = [("name", "name is immutable"), ("path", "path is immutable")]
        .into_iter()
        .filter(|(field, _)| old_type.get(field) != new_type.get(field))
        .map(|(_, message)| Cause::invalid("spec.type", &json!("object"), message))
        .collect();
    (!causes.is_empty()).then(|| ApiError::invalid("tenancy.kcp.io", "Workspace", name, causes))
}

/// What an update may do to a workspace's placement, as kcp's schema rules and admission say:
/// `spec.cluster` never changes once set and is never unset, nor is `spec.URL`; only a
/// privileged user sets either or changes the URL; a phase turns Ready only once both are set.
fn placement_update(
    name: &str,
    old: &Value,
    new: &Value,
    privileged: bool,
) -> Result<(), ApiError> {
    let (cluster, url) = (str_at(new, "/spec/cluster"), str_at(new, "/spec/URL"));
    let (old_cluster, old_url) = (str_at(old, "/spec/cluster"), str_at(old, "/spec/URL"));
    // The schema's rules first (422), as kube-apiserver checks them before admission.
    let rule = |field: &str, value: &str, message: &str| {
        Err(invalid(name, field, &Value::String(value.into()), message))
    };
    match (old_cluster, cluster) {
        (before, "") if !before.is_empty() => {
            return rule("spec", "object", "cluster cannot be unset");
        }
        (before, now) if !before.is_empty() && before != now => {
            return rule("spec.cluster", "string", "cluster is immutable");
        }
        _ => {}
    }
    if !old_url.is_empty() && url.is_empty() {
        return rule("spec", "object", "URL cannot be unset");
    }
    if !privileged {
        for (field, before, now) in [
            ("spec.cluster", old_cluster, cluster),
            ("spec.URL", old_url, url),
        ] {
            if before != now {
                return Err(forbidden(
                    name,
                    &format!("{field} can only be changed by system privileged users"),
                ));
            }
        }
    }
    let phase = |v: &Value| str_at(v, "/status/phase") == "Ready";
    if !phase(old) && phase(new) {
        for (field, value) in [("spec.cluster", cluster), ("spec.URL", url)] {
            if value.is_empty() {
                return Err(forbidden(
                    name,
                    &format!("{field} must be set for phase Ready"),
                ));
            }
        }
    }
    Ok(())
}

/// The last step of a new Workspace's mutation, after every webhook: the name of its future
/// logical cluster and the finalizer that guards it. Chosen here rather than by a first controller
/// write, so scheduling needs no write before the LC exists; chosen last, so neither the client
/// nor a webhook can point the workspace at a logical cluster of its choosing (the shard writes
/// the new LC's content under that name).
pub struct WorkspaceClusterName;

#[async_trait]
impl Admission for WorkspaceClusterName {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        let (true, Operation::Create, Some(Value::Object(map))) =
            (is_workspace(attrs), attrs.operation, object)
        else {
            return Ok(false);
        };
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        let Some(meta) = meta.as_object_mut() else {
            return Ok(false);
        };
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(CLUSTER_ANNOTATION.into(), Value::String(new_cluster_name()));
        }
        let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
        if !finalizers.is_array() {
            *finalizers = json!([]);
        }
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == WORKSPACE_FINALIZER)
        {
            list.push(json!(WORKSPACE_FINALIZER));
        }
        Ok(true)
    }
}

#[async_trait]
impl Admission for WorkspaceAdmission {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        let (true, Operation::Create, Some(object)) =
            (is_workspace(attrs), attrs.operation, object)
        else {
            return Ok(false);
        };
        let types = self.types();
        let parent_path = types.path_of(attrs.cluster);
        let requested = object.pointer("/spec/type").and_then(TypeRef::from_value);
        let resolved = match requested {
            // A type named without a path is looked up from the parent upwards.
            Some(r) if r.path.is_empty() => types
                .find_upwards(&r.name, &parent_path)
                .map(|t| t.reference),
            Some(r) => Some(r),
            None => {
                let parent = self.parent_chain(attrs.cluster);
                let Some(parent) = parent.first() else {
                    return Err(forbidden(
                        attrs.name,
                        &format!("annotation {TYPE_ANNOTATION} on LogicalCluster must be set"),
                    ));
                };
                // kcp's schema defaults the field to root:universal, also in types stored
                // before it did.
                let mut default = (parent.spec.get("defaultChildWorkspaceType"))
                    .and_then(TypeRef::from_value)
                    .unwrap_or_else(|| TypeRef {
                        path: ROOT.into(),
                        name: "universal".into(),
                    });
                if default.path.is_empty() {
                    default.path = parent.reference.path.clone();
                }
                Some(default)
            }
        };
        let Some(reference) = resolved else {
            let name = object.pointer("/spec/type/name").and_then(Value::as_str);
            return Err(forbidden(
                attrs.name,
                &format!(
                    "workspace type {:?} cannot be resolved",
                    name.unwrap_or_default()
                ),
            ));
        };
        // kcp records no creator for system:masters (nor makes it an admin binding).
        let privileged = attrs.user.is_system_masters();
        let owner = (!privileged).then(|| owner_info(attrs.user));
        let labels = types
            .get(&reference)
            .and_then(|t| t.spec.get("additionalWorkspaceLabels").cloned());
        let Some(map) = object.as_object_mut() else {
            return Ok(false);
        };
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert("type".into(), reference.to_value());
        }
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                if let Some(owner) = owner {
                    a.insert(OWNER_ANNOTATION.into(), Value::String(owner.to_string()));
                }
                // A child needs the groups its parent needs (kcp: only system:masters may
                // give it others).
                if !privileged || !a.contains_key(REQUIRED_GROUPS_ANNOTATION) {
                    match self.required_groups(attrs.cluster) {
                        Some(groups) => a.insert(REQUIRED_GROUPS_ANNOTATION.into(), groups.into()),
                        None => a.remove(REQUIRED_GROUPS_ANNOTATION),
                    };
                }
            }
            if let Some(Value::Object(extra)) = labels {
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    for (k, v) in extra {
                        l.entry(k).or_insert(v);
                    }
                }
            }
        }
        Ok(true)
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        // Updates of the status too: a phase may only turn Ready on a placed workspace.
        let workspaces = attrs.def.group == "tenancy.kcp.io" && attrs.def.plural == "workspaces";
        let Some(object) = object.filter(|_| workspaces) else {
            return Ok(());
        };
        let privileged = attrs.user.is_system_masters();
        match attrs.operation {
            Operation::Create if attrs.subresource.is_none() => {
                // Placement is the shard's (kcp's words).
                for (path, field) in [("/spec/cluster", "spec.Cluster"), ("/spec/URL", "spec.URL")]
                {
                    if !privileged && !str_at(object, path).is_empty() {
                        return Err(forbidden(
                            attrs.name,
                            &format!("{field} can only be set by system privileged users"),
                        ));
                    }
                }
                let reference = object
                    .pointer("/spec/type")
                    .and_then(TypeRef::from_value)
                    .ok_or_else(|| invalid(attrs.name, "spec.type", &Value::Null, "required"))?;
                let chain = (self.types().chain(&reference))
                    .map_err(|message| forbidden(attrs.name, &message))?;
                for t in &chain {
                    if !self.may_use(attrs.user, t) {
                        return Err(forbidden(
                            attrs.name,
                            &format!(
                                "unable to use workspace type {}: missing verb='use' permission on workspacetype",
                                t.reference
                            ),
                        ));
                    }
                }
                // As kcp: the creator recorded is the requester, whatever a webhook made of it
                // (the workspace's admin binding is made for it).
                let owner = object
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(OWNER_ANNOTATION))
                    .and_then(Value::as_str);
                let expected = owner_info(attrs.user).to_string();
                if !privileged && owner != Some(expected.as_str()) {
                    return Err(forbidden(
                        attrs.name,
                        &format!("expected user annotation {OWNER_ANNOTATION}={expected}"),
                    ));
                }
                let expected = self.required_groups(attrs.cluster).unwrap_or_default();
                let given = (object.pointer("/metadata/annotations"))
                    .and_then(|a| a.get(REQUIRED_GROUPS_ANNOTATION))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !privileged && given != expected {
                    return Err(forbidden(
                        attrs.name,
                        &format!(
                            "missing required groups annotation {REQUIRED_GROUPS_ANNOTATION}={expected}"
                        ),
                    ));
                }
                let parent = self.parent_chain(attrs.cluster);
                if let Some(message) = placement_error(&parent, &chain) {
                    return Err(forbidden(attrs.name, &message));
                }
                Ok(())
            }
            Operation::Update => {
                let Some(old) = attrs.old_object else {
                    return Ok(());
                };
                if let Some(refusal) = type_change_refusal(attrs.name, old, object) {
                    return Err(refusal);
                }
                // The LC name the shard chose: the workspace controller writes the new LC's
                // content beside the LC itself, so no request may point it elsewhere.
                let annotation = |v: &Value| {
                    v.pointer("/metadata/annotations")
                        .and_then(|a| a.get(CLUSTER_ANNOTATION))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                if annotation(object) != annotation(old) {
                    return Err(invalid(
                        attrs.name,
                        &format!("metadata.annotations[{CLUSTER_ANNOTATION}]"),
                        &annotation(object),
                        "field is immutable",
                    ));
                }
                placement_update(attrs.name, old, object, privileged)
            }
            _ => Ok(()),
        }
    }
}
