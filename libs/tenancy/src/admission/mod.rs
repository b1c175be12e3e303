//! kcp's tenancy admission, plugged into the generic server's chain.

mod logical_cluster;
mod workspace;

pub use logical_cluster::LogicalClusterAdmission;
pub use workspace::{WorkspaceAdmission, WorkspaceClusterName};
