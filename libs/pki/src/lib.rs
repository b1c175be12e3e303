//! kcp-pki: what every kcp-rs binary needs of certificates and kubeconfigs.
//!
//! [`pki`] makes (on first start) and reads back a CA and the certificates issued by it, files under
//! a directory, reused across restarts; [`kubeconfig`] writes the admin kubeconfig that points
//! clients at a server with those certificates.

pub mod kubeconfig;
pub mod pki;

pub use pki::{CertKey, Pki, PkiError, ServiceAccountKey};
