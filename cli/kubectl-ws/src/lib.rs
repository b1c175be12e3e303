//! `kubectl ws` and `kubectl create workspace`: kcp's workspace plugins.
//!
//! The binaries are thin: they parse flags ([`cli`]) and call [`commands`]. Path arithmetic ([`path`],
//! [`cluster_url`]), kubeconfig reading and rewriting ([`kubeconfig`]), selector conversion ([`location`]),
//! permission-claim checks ([`claims`]) and column alignment ([`tabwriter`]) do no network I/O; [`client`]
//! makes the calls, with the connection flags of [`overrides`].

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
