//! Tenancy's reconcilers, on kcp-controllers' runtime (feeds from the watch cache, work queues):
//! the workspace lifecycle ([`workspaces`]) and where each WorkspaceType's virtual workspaces are
//! served ([`type_urls`]).

pub mod type_urls;
pub mod workspaces;
