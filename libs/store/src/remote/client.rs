//! [`RemoteStore`]: the store of another process (a shard's), reached over gRPC with mTLS.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use kcp_proto::store::v1 as pb;
use pb::storage_client::StorageClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use super::MAX_MESSAGE_BYTES;
use super::wire::{answered, kv_from, status_error, watch_from, write_to};
use crate::{KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, WatchStream, Write};

/// How long a consistent read waits to learn what the serving process acknowledged.
const ACKNOWLEDGED_TIMEOUT: Duration = Duration::from_secs(2);

/// Why [`RemoteStore::check_access`] failed.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The serving process refuses this caller.
    #[error("the store refuses this caller: {0}")]
    Refused(String),
    /// Not reachable, or the store failed.
    #[error(transparent)]
    Store(StoreError),
}

/// Where the store is and how to prove who calls it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteOptions {
    /// `https://host:port` of the process serving the store (`http://` without TLS, for tests).
    pub url: String,
    pub tls: Option<RemoteTls>,
}

/// mTLS to the store's process.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteTls {
    /// The CA that signed its serving certificate (PEM).
    pub ca_pem: String,
    /// The client certificate and key presented to it (PEM).
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for RemoteTls {
    // The key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteTls").finish_non_exhaustive()
    }
}

/// A [`Store`] served by another process ([`super::service`]). Connections are made on first use
/// and again after a failure; a call that cannot reach the store is a [`StoreError::Backend`].
#[derive(Clone)]
pub struct RemoteStore {
    client: StorageClient<Channel>,
    channel: Channel,
}

impl RemoteStore {
    pub fn connect(options: &RemoteOptions) -> Result<RemoteStore, StoreError> {
        let bad = |e: tonic::transport::Error| StoreError::Backend(format!("remote store: {e}"));
        let mut endpoint = Endpoint::from_shared(options.url.clone()).map_err(bad)?;
        if let Some(tls) = &options.tls {
            endpoint = endpoint
                .tls_config(
                    ClientTlsConfig::new()
                        .ca_certificate(Certificate::from_pem(&tls.ca_pem))
                        .identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem)),
                )
                .map_err(bad)?;
        }
        let channel = endpoint
            .connect_timeout(Duration::from_secs(5))
            // A dead peer is noticed while a watch is idle, as etcd's client notices one.
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(10))
            .keep_alive_while_idle(true)
            .connect_lazy();
        let client = StorageClient::new(channel.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        Ok(RemoteStore { client, channel })
    }

    /// The HTTP/2 connection to the serving process (mTLS as the store's user), for other
    /// requests to it: kcp-vw's SubjectAccessReviews to its shard.
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    fn client(&self) -> StorageClient<Channel> {
        self.client.clone()
    }

    /// The newest revision of a write the serving process has acknowledged (see the RPC). A
    /// consistent read waits for it, so it is not waited for long.
    pub async fn acknowledged(&self) -> Result<Revision, StoreError> {
        let mut req = tonic::Request::new(pb::Empty {});
        req.set_timeout(ACKNOWLEDGED_TIMEOUT);
        let answer = (self.client().acknowledged(req).await)
            .map_err(status_error)?
            .into_inner();
        revision(answer)
    }

    /// Whether the store answers this caller: its current revision, or why not, telling a
    /// refusal (which waiting will not mend) from a store not reachable yet.
    pub async fn check_access(&self) -> Result<Revision, AccessError> {
        match self.client().current_revision(pb::Empty {}).await {
            Ok(answer) => revision(answer.into_inner()).map_err(AccessError::Store),
            Err(status) => match status.code() {
                tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => {
                    Err(AccessError::Refused(status.message().to_string()))
                }
                _ => Err(AccessError::Store(status_error(status))),
            },
        }
    }
}

fn revision(answer: pb::RevisionAnswer) -> Result<Revision, StoreError> {
    answered(answer.error)?;
    Ok(answer.revision)
}

#[async_trait]
impl Store for RemoteStore {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        let answer = (self.client().current_revision(pb::Empty {}).await)
            .map_err(status_error)?
            .into_inner();
        revision(answer)
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        let answer = (self.client())
            .get(pb::GetRequest {
                key: key.to_owned(),
            })
            .await
            .map_err(status_error)?
            .into_inner();
        answered(answer.error)?;
        Ok(answer.kv.map(kv_from))
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError> {
        let answer = (self.client())
            .range(pb::RangeRequest {
                prefix: req.prefix,
                start_after: req.start_after,
                limit: req.limit as u64,
                revision: req.revision.unwrap_or(0),
            })
            .await
            .map_err(status_error)?
            .into_inner();
        answered(answer.error)?;
        Ok(RangeResult {
            kvs: answer.kvs.into_iter().map(kv_from).collect(),
            more: answer.more,
            revision: answer.revision,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StoreError> {
        let req = pb::CreateRequest {
            key: key.to_owned(),
            value: value.into(),
        };
        revision(
            (self.client().create(req).await)
                .map_err(status_error)?
                .into_inner(),
        )
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StoreError> {
        let req = pb::UpdateRequest {
            key: key.to_owned(),
            value: value.into(),
            expected,
        };
        revision(
            (self.client().update(req).await)
                .map_err(status_error)?
                .into_inner(),
        )
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(Revision, KeyValue), StoreError> {
        let req = pb::DeleteRequest {
            key: key.to_owned(),
            expected,
        };
        let answer = (self.client().delete(req).await)
            .map_err(status_error)?
            .into_inner();
        answered(answer.error)?;
        let deleted = (answer.deleted.map(kv_from)).ok_or_else(|| {
            StoreError::Backend("remote store: a delete without its value".into())
        })?;
        Ok((answer.revision, deleted))
    }

    async fn delete_version(&self, key: &str, expected: Revision) -> Result<Revision, StoreError> {
        let req = pb::DeleteVersionRequest {
            key: key.to_owned(),
            expected,
        };
        revision(
            (self.client().delete_version(req).await)
                .map_err(status_error)?
                .into_inner(),
        )
    }

    async fn write_all(&self, writes: &[Write]) -> Result<Vec<Revision>, StoreError> {
        let req = pb::WriteAllRequest {
            writes: writes.iter().map(write_to).collect(),
        };
        let answer = (self.client().write_all(req).await)
            .map_err(status_error)?
            .into_inner();
        answered(answer.error)?;
        Ok(answer.revisions)
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StoreError> {
        self.open_watch(prefix, after, false).await
    }

    async fn watch_changes(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<WatchStream, StoreError> {
        self.open_watch(prefix, after, true).await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        let answer = (self.client())
            .compact(pb::CompactRequest { revision })
            .await
            .map_err(status_error)?
            .into_inner();
        answered(answer.error)
    }

    async fn compacted_revision(&self) -> Result<Revision, StoreError> {
        let answer = (self.client().compacted_revision(pb::Empty {}).await)
            .map_err(status_error)?
            .into_inner();
        revision(answer)
    }

    async fn identity(&self) -> Result<Option<String>, StoreError> {
        let answer = (self.client().identity(pb::Empty {}).await)
            .map_err(status_error)?
            .into_inner();
        answered(answer.error)?;
        Ok(answer.identity)
    }
}

impl RemoteStore {
    async fn open_watch(
        &self,
        prefix: &str,
        after: Revision,
        changes_only: bool,
    ) -> Result<WatchStream, StoreError> {
        let req = pb::WatchRequest {
            prefix: prefix.to_owned(),
            after,
            changes_only,
        };
        let answers = (self.client().watch(req).await)
            .map_err(status_error)?
            .into_inner();
        // A broken connection ends the watch with an error: the watcher relists or resumes, as
        // after any store error.
        let stream = answers.map(|item| item.map_err(status_error).and_then(watch_from));
        // The end of the stream without an error is the peer going away, which a watcher must
        // hear about.
        let ended = futures::stream::once(async {
            Err(StoreError::Backend("remote store: the watch ended".into()))
        });
        // Nothing after the first error.
        let stream = stream.chain(ended).scan(false, |failed, item| {
            let out = (!*failed).then(|| {
                *failed = item.is_err();
                item
            });
            futures::future::ready(out)
        });
        Ok(Box::pin(stream))
    }
}
