//! APIResourceSchema admission (kcp's `apis.kcp.io/APIResourceSchema`): on create and update, the
//! name, group and versions as kcp wants them, each version's schema through the CRD validation
//! ([`kcp_schema::crd::validate_api_resource_schema`]), and a spec that never changes.

use async_trait::async_trait;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::admission::{Admission, Attributes, Operation};
use serde_json::Value;

use super::{forbidden, is};

pub struct ResourceSchemaAdmission;

#[async_trait]
impl Admission for ResourceSchemaAdmission {
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !is(attrs, "apiresourceschemas") || attrs.operation == Operation::Delete {
            return Ok(());
        }
        let Some(object) = object else {
            return Ok(());
        };
        let causes = kcp_schema::crd::validate_api_resource_schema(object, attrs.old_object);
        if causes.is_empty() {
            return Ok(());
        }
        let errors: Vec<String> = (causes.iter())
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        Err(forbidden(attrs, &errors))
    }
}
