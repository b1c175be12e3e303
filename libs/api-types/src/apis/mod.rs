//! The kcp `apis.kcp.io` group: APIExport and APIBinding.

pub mod conversion;
