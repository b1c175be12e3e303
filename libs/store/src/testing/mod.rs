//! Test support (feature `test-util`): a throwaway etcd and the conformance suite every engine passes.

pub mod conformance;
mod etcd_process;

pub use etcd_process::EtcdProcess;
