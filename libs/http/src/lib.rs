//! kcp-http: serving the Kubernetes API without any storage behind it.
//!
//! The shard, the virtual-workspace server and the front proxy all serve HTTPS the way
//! kube-apiserver does; this crate is that part, and links no store, schema or registry.
//!
//! The request chain, outermost first (each step a module here, assembled by the server that uses
//! them):
//!
//! 1. [`serve`]: TCP accept, TLS with the client's certificate chain captured into [`PeerInfo`]
//!    ([`client_auth`]: key possession proven, the chain left to the authenticators), h1 or h2 as
//!    ALPN agreed, the header deadline ([`first_bytes`]) and 1 MiB headers.
//! 2. [`in_flight`]: kube-apiserver's in-flight bounds (429 beyond them), health checks and watches
//!    exempt; a place is held until the response body is sent.
//! 3. [`deadline`]: the request timeout (504), none for a watch.
//! 4. [`request_body`]: the body read to its end (bounded) even when a handler answers without it.
//! 5. [`request_info`]: the percent-decoded path parsed into its path family (`/clusters/<name>/...`,
//!    `/services/<family>/...`, bare paths) and kube-apiserver's grammar; [`query`] its parameters.
//! 6. [`authentication`]: the configured authenticators, then the identity headers stripped.
//! 7. What the server does with the request (authorization, resources) is the server's; its errors
//!    become `metav1.Status` answers through [`response::error`], the one place that renders them.

pub mod authentication;
pub mod client_auth;
pub mod deadline;
pub mod first_bytes;
pub mod in_flight;
pub mod query;
pub mod request_body;
pub mod request_info;
pub mod response;
pub mod serve;

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;

pub use serve::PeerInfo;

/// The response body type of every handler: whole bodies and streamed watches alike.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;
