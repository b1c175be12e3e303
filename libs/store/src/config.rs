//! Choosing and opening an engine from configuration.

use std::path::PathBuf;
use std::sync::Arc;

use crate::{
    EtcdOptions, EtcdStore, MemoryStore, RedbOptions, RedbStore, Store, StoreError, WatchConfig,
};

/// Responses a watcher of an opened shard store may have queued before it is cut off. A shard has
/// one store watcher (its watch cache), which must ride out write bursts: cutting it off means a full
/// reload and ending every client watch, so it gets far more room than the per-watcher default.
pub const SHARD_WATCH_QUEUE: usize = 65_536;

fn shard_watch_config() -> WatchConfig {
    WatchConfig {
        queue_len: SHARD_WATCH_QUEUE,
        ..WatchConfig::default()
    }
}

/// Which engine a shard stores its data in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreConfig {
    /// Nothing survives the process; for tests.
    Memory,
    /// The embedded redb store in one file.
    Embedded { path: PathBuf },
    /// etcd; every key is stored under `prefix`.
    Etcd {
        endpoints: Vec<String>,
        prefix: String,
    },
    /// Another process's store over gRPC (a shard's, for the virtual-workspace server).
    Remote(crate::remote::RemoteOptions),
}

/// Opens the configured engine.
pub async fn open(config: &StoreConfig) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match config {
        StoreConfig::Memory => Arc::new(MemoryStore::with_watch_config(shard_watch_config())),
        StoreConfig::Embedded { path } => {
            let path = path.clone();
            // Opening may repair the file after a crash, which reads all of it.
            let options = RedbOptions {
                watch: shard_watch_config(),
                ..RedbOptions::default()
            };
            let store = tokio::task::spawn_blocking(move || RedbStore::open_with(path, options))
                .await
                .map_err(|e| StoreError::Backend(format!("opening redb: {e}")))??;
            Arc::new(store)
        }
        StoreConfig::Etcd { endpoints, prefix } => {
            Arc::new(EtcdStore::connect(EtcdOptions::new(endpoints.clone(), prefix.clone())).await?)
        }
        StoreConfig::Remote(options) => Arc::new(crate::remote::RemoteStore::connect(options)?),
    })
}
