//! Claim labels on every write (kcp's `apis.kcp.io/PermissionClaims` mutating admission): an
//! object created or updated in a logical cluster gets exactly the claim labels its cluster's
//! accepted claims give it ([`crate::claims`]); claim labels nothing backs are dropped, so a
//! client can neither forge nor strip them.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::admission::{Admission, Attributes, Operation};
use serde_json::Value;

use crate::Shared;
use crate::claims::restamp;

pub struct ClaimAdmission {
    shared: Arc<Shared>,
}

impl ClaimAdmission {
    pub fn new(shared: Arc<Shared>) -> ClaimAdmission {
        ClaimAdmission { shared }
    }
}

#[async_trait]
impl Admission for ClaimAdmission {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        if !matches!(attrs.operation, Operation::Create | Operation::Update)
            || attrs.subresource.is_some()
        {
            return Ok(false);
        }
        let Some(object) = object else {
            return Ok(false);
        };
        let expected = (self.shared.claims).labels_for(
            attrs.cluster,
            &attrs.def.group,
            &attrs.def.plural,
            object,
        );
        Ok(restamp(object, &expected))
    }
}
