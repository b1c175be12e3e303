//! kcp-apimachinery: Kubernetes API machinery that does no I/O, so it is tested without a server.
//!
//! - [`names`]: name validators with Kubernetes' messages, `generateName`, kcp cluster names/paths
//! - [`selector`]: `labelSelector` / `fieldSelector` parsing and matching, `metav1.LabelSelector`
//! - [`patch`]: strategic merge patch for built-in kinds, JSON patch, merge patch
//! - [`protobuf`]: Kubernetes protobuf request bodies decoded into JSON
//! - [`intern`]: equal values stored once, as shared `Arc`s
//! - [`field_error`]: field-level errors rendered as Kubernetes renders them
//! - [`quantity`]: `resource.Quantity`: parsing, comparing, the canonical form
//! - [`status`]: `metav1.Status` errors

pub mod field_error;
pub mod intern;
pub mod logical_cluster;
pub mod managed_fields;
pub mod names;
pub mod numbers;
pub mod patch;
pub mod protobuf;
pub mod quantity;
pub mod selector;
pub mod status;
