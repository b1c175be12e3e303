//! Choosing and opening an engine from configuration.

use std::path::PathBuf;
use std::sync::Arc;

use crate::{EtcdOptions, EtcdStore, MemoryStore, RedbStore, Store, StoreError};

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
}

/// Opens the configured engine.
pub async fn open(config: &StoreConfig) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match config {
        StoreConfig::Memory => Arc::new(MemoryStore::new()),
        StoreConfig::Embedded { path } => {
            let path = path.clone();
            // Opening may repair the file after a crash, which reads all of it.
            let store = tokio::task::spawn_blocking(move || RedbStore::open(path))
                .await
                .map_err(|e| StoreError::Backend(format!("opening redb: {e}")))??;
            Arc::new(store)
        }
        StoreConfig::Etcd { endpoints, prefix } => {
            Arc::new(EtcdStore::connect(EtcdOptions::new(endpoints.clone(), prefix.clone())).await?)
        }
    })
}
