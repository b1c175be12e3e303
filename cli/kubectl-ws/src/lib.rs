//! `kubectl ws` and `kubectl create workspace`: kcp's workspace plugins.
//!
//! The binaries are thin: they parse flags ([`cli`]) and call [`commands`]. Path arithmetic ([`path`],
//! [`cluster_url`]) and kubeconfig rewriting ([`kubeconfig`]) do no network I/O; [`client`] makes the calls.

pub mod claims;
pub mod cli;
pub mod client;
pub mod cluster_url;
pub mod commands;
pub mod error;
pub mod kubeconfig;
pub mod location;
pub mod overrides;
pub mod path;
pub mod tabwriter;
pub mod workspace;

pub use error::{Error, Result};
