//! `kubectl kcp`: kcp's plugin for APIs as a service. `bind apiexport` creates an APIBinding and
//! waits for it to be bound, `claims` lists and answers its permission claims, `crd snapshot` turns
//! a CRD into an APIResourceSchema.
//!
//! The binary is thin: [`cli`] parses the flags and dispatches. Parsing the command line's values
//! ([`export_ref`], [`go_duration`], [`permission_claims`]) and building objects do no I/O; the
//! kubeconfig, the connection flags and the client are kubectl-ws's.

pub mod bind;
pub mod claims;
pub mod cli;
pub mod crd_snapshot;
pub mod error;
pub mod export_ref;
pub mod go_duration;
pub mod permission_claims;

pub use error::{Error, Result};

/// Where APIBindings are, relative to a workspace's `/clusters/<path>`.
pub(crate) const BINDINGS: &str = "apis/apis.kcp.io/v1alpha2/apibindings";
/// Where APIExports are, relative to a workspace's `/clusters/<path>`.
pub(crate) const EXPORTS: &str = "apis/apis.kcp.io/v1alpha2/apiexports";
