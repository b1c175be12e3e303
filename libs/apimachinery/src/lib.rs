//! kcp-apimachinery: Kubernetes API machinery that does no I/O, so it is tested without a server.

pub mod status;
