//! kcp-proto: the gRPC contracts between kcp-rs processes, generated from `proto/kcp/...`.
//!
//! - [`store::v1`]: a shard's store served to the processes beside it (the standalone
//!   virtual-workspace server reads and writes its shard through it).

pub mod store {
    pub mod v1 {
        #![allow(clippy::all, missing_docs)] // generated code
        tonic::include_proto!("kcp.store.v1");
    }
}
