//! Admission: the checks a write passes after it is decoded and before it is stored, beyond the
//! kind's own validation.
//!
//! The registry calls an [`Admission`] twice per write: [`Admission::mutate`] once the object is
//! decoded and merged (before the kind's defaulting and validation), and [`Admission::validate`]
//! after validation, right before the store write (also on dry runs). Deletes are mutated without an
//! object and validated with the object being deleted as `oldObject`, as kube-apiserver does.
//!
//! Only requests carry a user; the shard's own writes (bootstrap, namespace finalization, the CRD
//! controller) carry none and are not admitted: they must not depend on a tenant's webhook being
//! up, and a tenant must not be able to block the shard's housekeeping.
//!
//! [`webhook::WebhookAdmission`] implements admission webhooks per logical cluster,
//! [`policy::PolicyAdmission`] ValidatingAdmissionPolicies; [`Chain`] runs both. [`quota`]
//! (ResourceQuota object counts) runs last on creates, as kube-apiserver orders its plugins.
//! [`rbac_escalation`] refuses RBAC objects granting more than their author holds (Kubernetes'
//! RBAC registry check).

mod certificates;
mod client;
mod config;
mod matching;
mod namespace_lifecycle;
pub mod policy;
mod policy_params;
pub mod quota;
pub mod rbac_escalation;
mod review;
pub mod rules;
pub mod warnings;
pub mod webhook;

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_auth::UserInfo;
use serde_json::Value;

use crate::registry::Registry;

pub use certificates::CertificateAdmission;
pub use namespace_lifecycle::NamespaceLifecycle;
pub use policy::PolicyAdmission;
pub use rbac_escalation::RbacEscalationAdmission;
pub use webhook::WebhookAdmission;

/// The operation admitted, as AdmissionReview names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The kind of the options object sent along (`request.options`).
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// What is being admitted, besides the object itself.
#[derive(Clone, Copy)]
pub struct Attributes<'a> {
    pub def: &'a ResourceDef,
    pub cluster: &'a str,
    pub namespace: Option<&'a str>,
    /// Empty on a create whose name is still to be generated.
    pub name: &'a str,
    pub operation: Operation,
    /// `status`, `finalize`, or `None` for the main resource.
    pub subresource: Option<&'a str>,
    pub user: &'a UserInfo,
    pub dry_run: bool,
    /// The stored object an update or delete starts from.
    pub old_object: Option<&'a Value>,
}

/// An admission chain. Errors are the `Status` the client receives.
#[async_trait]
pub trait Admission: Send + Sync + 'static {
    /// May change `object` (absent for deletes); answers whether it may have changed, so the
    /// registry redoes what depends on the object only then. By default changes nothing.
    async fn mutate(
        &self,
        _attrs: &Attributes<'_>,
        _object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        Ok(false)
    }

    /// May only refuse. By default refuses nothing.
    async fn validate(
        &self,
        _attrs: &Attributes<'_>,
        _object: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Webhook configurations and admission policies are never admitted by webhooks or policies, as
/// in kube-apiserver: a broken webhook must not lock its own configuration in.
fn exempt(def: &ResourceDef) -> bool {
    def.group == "admissionregistration.k8s.io"
}

/// Where an admitted object lives, for the registry's hook calls.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub cluster: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub subresource: Option<&'a str>,
}

impl Registry {
    fn attributes<'a>(
        def: &'a ResourceDef,
        at: Target<'a>,
        operation: Operation,
        user: &'a UserInfo,
        dry_run: bool,
        old_object: Option<&'a Value>,
    ) -> Attributes<'a> {
        Attributes {
            def,
            cluster: at.cluster,
            namespace: at.namespace,
            name: at.name,
            operation,
            subresource: at.subresource,
            user,
            dry_run,
            old_object,
        }
    }

    /// Mutating admission of a request's write; the shard's own writes (no user) pass untouched.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn admit_mutate(
        &self,
        def: &ResourceDef,
        at: Target<'_>,
        operation: Operation,
        user: Option<&UserInfo>,
        dry_run: bool,
        object: Option<&mut Value>,
        old_object: Option<&Value>,
    ) -> Result<bool, ApiError> {
        let (Some(admission), Some(user)) = (self.admission(), user) else {
            return Ok(false);
        };
        if exempt(def) {
            return Ok(false);
        }
        let attrs = Self::attributes(def, at, operation, user, dry_run, old_object);
        let mut object = object;
        let changed = admission.mutate(&attrs, object.as_deref_mut()).await?;
        // A mutation may not move the object elsewhere (updates re-check name and namespace
        // when they merge the result).
        let namespace = object
            .as_deref()
            .and_then(|o| o.pointer("/metadata/namespace"))
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty());
        if operation == Operation::Create
            && def.namespaced
            && namespace.is_some()
            && namespace != at.namespace
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Ok(changed)
    }

    /// Validating admission of a request's write; the shard's own writes (no user) pass.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn admit_validate(
        &self,
        def: &ResourceDef,
        at: Target<'_>,
        operation: Operation,
        user: Option<&UserInfo>,
        dry_run: bool,
        object: Option<&Value>,
        old_object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let (Some(admission), Some(user)) = (self.admission(), user) else {
            return Ok(());
        };
        if exempt(def) {
            return Ok(());
        }
        let attrs = Self::attributes(def, at, operation, user, dry_run, old_object);
        admission.validate(&attrs, object).await
    }
}

/// Several admission chains run in order (mutations of one are seen by the next).
pub struct Chain(pub Vec<Arc<dyn Admission>>);

#[async_trait]
impl Admission for Chain {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        mut object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        let mut changed = false;
        for a in &self.0 {
            changed |= a.mutate(attrs, object.as_deref_mut()).await?;
        }
        Ok(changed)
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        for a in &self.0 {
            a.validate(attrs, object).await?;
        }
        Ok(())
    }
}
