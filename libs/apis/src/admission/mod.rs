//! kcp's admission of the `apis.kcp.io` kinds, plugged into the generic server's chain. Refusals
//! are 403 Forbidden, as kcp's admission plugins answer.

mod binding;
mod claims;
mod crd;
mod endpoint_slice;
mod export;
mod resource_schema;

pub use binding::BindingAdmission;
pub use claims::ClaimAdmission;
pub use crd::CrdAdmission;
pub use endpoint_slice::EndpointSliceAdmission;
pub use export::ExportAdmission;
pub use resource_schema::ResourceSchemaAdmission;

use kcp_apimachinery::status::ApiError;
use kcp_apiserver::admission::Attributes;

/// Whether the write is of `plural` in `apis.kcp.io` (any version).
fn is(attrs: &Attributes<'_>, plural: &str) -> bool {
    attrs.def.group == kcp_api_types::apis::GROUP && attrs.def.plural == plural
}

/// kcp's refusal of `attrs`'s object for `errors` (field errors as apimachinery renders them: one
/// alone, several in brackets).
fn forbidden(attrs: &Attributes<'_>, errors: &[String]) -> ApiError {
    let detail = match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    ApiError::forbidden(&attrs.def.group, &attrs.def.plural, attrs.name, &detail)
}
