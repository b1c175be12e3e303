//! Tenancy's reconcilers, on kcp-controllers' runtime (feeds from the watch cache, work queues):
//! the workspace lifecycle ([`workspaces`]), where each WorkspaceType's virtual workspaces are
//! served ([`type_urls`]), and the Partitions PartitionSets generate from Shard labels
//! ([`partition_sets`]).

pub mod partition_sets;
pub mod type_urls;
pub mod workspaces;
