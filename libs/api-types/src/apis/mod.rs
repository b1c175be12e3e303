//! kcp's `apis.kcp.io` group (APIs as a service): names shared by its kinds' admission,
//! controllers and serving, the v1alpha1 ↔ v1alpha2 conversions of APIExport and APIBinding, and
//! the snapshot of a CRD as an APIResourceSchema.

pub mod claims;
pub mod conversion;
pub mod snapshot;

use sha2::{Digest, Sha224};

/// The group of APIResourceSchema, APIExport, APIBinding, APIExportEndpointSlice, APIConversion.
pub const GROUP: &str = "apis.kcp.io";
/// Where an APIExport's identity Secret is kept, in the export's logical cluster.
pub const IDENTITY_NAMESPACE: &str = "kcp-system";
/// The identity Secret's key holding the identity.
pub const IDENTITY_SECRET_KEY: &str = "key";
/// The label of an APIBinding naming its export (see [`export_label_value`]).
pub const EXPORT_LABEL: &str = "internal.apis.kcp.io/export";
/// On an object-partitioned APIExportEndpointSlice: the logical cluster its export was found in
/// when it was made, so a workspace path that later leads elsewhere serves nothing through it.
pub const SLICE_EXPORT_CLUSTER_ANNOTATION: &str = "internal.apis.kcp.io/export-cluster";
/// What holds an APIBinding until what it bound is gone.
pub const BINDING_FINALIZER: &str = "apis.kcp.io/apibinding-finalizer";

/// kcp's `Base62Sha224`: SHA-224 of `text`, as one big-endian number in base 62.
pub fn base62_sha224(text: &str) -> String {
    kcp_apimachinery::names::base62(&Sha224::digest(text.as_bytes()))
}

/// The value of [`EXPORT_LABEL`] for the export `name` in logical cluster `cluster`.
pub fn export_label_value(cluster: &str, name: &str) -> String {
    base62_sha224(&format!("{cluster}:{name}"))
}
