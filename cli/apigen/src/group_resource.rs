//! A group and resource, as apigen keys CRDs, schemas and ignored exports by them.

use std::fmt;

/// The empty group is the core group. Ordered by group, then resource, for stable output.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }
}

impl fmt::Display for GroupResource {
    /// Kubernetes' `GroupResource.String`: `resource.group`, `resource` for the core group; also
    /// the middle of `apiresourceschema-<...>.yaml`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}
