//! Engines implementing [`crate::Store`]: [`MemoryStore`] for tests, [`RedbStore`] as the embedded default
//! and [`EtcdStore`] for etcd 3.4+.

mod embedded;
mod etcd;
mod memory;

pub use embedded::{RedbOptions, RedbStats, RedbStore};
pub use etcd::{EtcdOptions, EtcdStore};
pub use memory::MemoryStore;
