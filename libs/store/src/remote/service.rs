//! A store served over gRPC ([`kcp_proto::store::v1`]): each call is passed to the store as it
//! came, and the store's errors travel inside the answers.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use kcp_proto::store::v1 as pb;
use pb::storage_server::{Storage, StorageServer};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::MAX_MESSAGE_BYTES;
use super::wire::{error_to, kv_to, watch_to, write_from};
use crate::{RangeRequest, Revision, Store, StoreError};

/// The gRPC service of a store, to be mounted where its callers are authenticated (the shard
/// serves it on its TLS port to its administrators only).
pub fn service(
    store: Arc<dyn Store>,
    writes: Option<Arc<dyn AcknowledgedWrites>>,
    stop: CancellationToken,
) -> StorageServer<StoreService> {
    StorageServer::new(StoreService {
        store,
        writes,
        stop,
    })
    .max_decoding_message_size(MAX_MESSAGE_BYTES)
    .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

pub struct StoreService {
    store: Arc<dyn Store>,
    writes: Option<Arc<dyn AcknowledgedWrites>>,
    /// Ends every watch served, so the serving process's shutdown does not wait on them.
    stop: CancellationToken,
}

/// What the serving process knows of the writes it acknowledged: those of its own requests and
/// those made through this service. Without it, the store's current revision is the answer.
pub trait AcknowledgedWrites: Send + Sync + 'static {
    /// A write through this service was acknowledged at `revision`.
    fn note(&self, revision: Revision);
    /// The newest revision of an acknowledged write.
    fn newest(&self) -> Revision;
}

fn revision(result: Result<i64, StoreError>) -> Response<pb::RevisionAnswer> {
    Response::new(match result {
        Ok(revision) => pb::RevisionAnswer {
            revision,
            error: None,
        },
        Err(err) => pb::RevisionAnswer {
            revision: 0,
            error: Some(error_to(err)),
        },
    })
}

impl StoreService {
    /// Tells the serving process of a write acknowledged at `revision`.
    fn noted(&self, result: Result<Revision, StoreError>) -> Result<Revision, StoreError> {
        if let (Ok(revision), Some(writes)) = (&result, &self.writes) {
            writes.note(*revision);
        }
        result
    }
}

type Answers = Pin<Box<dyn Stream<Item = Result<pb::WatchAnswer, Status>> + Send>>;

#[tonic::async_trait]
impl Storage for StoreService {
    async fn current_revision(
        &self,
        _: Request<pb::Empty>,
    ) -> Result<Response<pb::RevisionAnswer>, Status> {
        Ok(revision(self.store.current_revision().await))
    }

    async fn compacted_revision(
        &self,
        _: Request<pb::Empty>,
    ) -> Result<Response<pb::RevisionAnswer>, Status> {
        Ok(revision(self.store.compacted_revision().await))
    }

    async fn identity(
        &self,
        _: Request<pb::Empty>,
    ) -> Result<Response<pb::IdentityAnswer>, Status> {
        Ok(Response::new(match self.store.identity().await {
            Ok(identity) => pb::IdentityAnswer {
                identity,
                error: None,
            },
            Err(err) => pb::IdentityAnswer {
                identity: None,
                error: Some(error_to(err)),
            },
        }))
    }

    async fn acknowledged(
        &self,
        _: Request<pb::Empty>,
    ) -> Result<Response<pb::RevisionAnswer>, Status> {
        Ok(revision(match &self.writes {
            Some(writes) => Ok(writes.newest()),
            None => self.store.current_revision().await,
        }))
    }

    async fn get(&self, req: Request<pb::GetRequest>) -> Result<Response<pb::GetAnswer>, Status> {
        Ok(Response::new(
            match self.store.get(&req.into_inner().key).await {
                Ok(kv) => pb::GetAnswer {
                    kv: kv.map(kv_to),
                    error: None,
                },
                Err(err) => pb::GetAnswer {
                    kv: None,
                    error: Some(error_to(err)),
                },
            },
        ))
    }

    async fn range(
        &self,
        req: Request<pb::RangeRequest>,
    ) -> Result<Response<pb::RangeAnswer>, Status> {
        let req = req.into_inner();
        let asked = RangeRequest {
            prefix: req.prefix,
            start_after: req.start_after,
            limit: usize::try_from(req.limit).unwrap_or(usize::MAX),
            revision: (req.revision != 0).then_some(req.revision),
        };
        Ok(Response::new(match self.store.range(asked).await {
            Ok(result) => pb::RangeAnswer {
                kvs: result.kvs.into_iter().map(kv_to).collect(),
                more: result.more,
                revision: result.revision,
                error: None,
            },
            Err(err) => pb::RangeAnswer {
                error: Some(error_to(err)),
                ..Default::default()
            },
        }))
    }

    async fn create(
        &self,
        req: Request<pb::CreateRequest>,
    ) -> Result<Response<pb::RevisionAnswer>, Status> {
        let req = req.into_inner();
        Ok(revision(self.noted(
            self.store.create(&req.key, req.value.into()).await,
        )))
    }

    async fn update(
        &self,
        req: Request<pb::UpdateRequest>,
    ) -> Result<Response<pb::RevisionAnswer>, Status> {
        let req = req.into_inner();
        Ok(revision(
            self.noted(
                (self.store)
                    .update(&req.key, req.value.into(), req.expected)
                    .await,
            ),
        ))
    }

    async fn delete(
        &self,
        req: Request<pb::DeleteRequest>,
    ) -> Result<Response<pb::DeleteAnswer>, Status> {
        let req = req.into_inner();
        Ok(Response::new(
            match self.store.delete(&req.key, req.expected).await {
                Ok((revision, deleted)) => pb::DeleteAnswer {
                    revision: self.noted(Ok(revision)).unwrap_or(revision),
                    deleted: Some(kv_to(deleted)),
                    error: None,
                },
                Err(err) => pb::DeleteAnswer {
                    error: Some(error_to(err)),
                    ..Default::default()
                },
            },
        ))
    }

    async fn delete_version(
        &self,
        req: Request<pb::DeleteVersionRequest>,
    ) -> Result<Response<pb::RevisionAnswer>, Status> {
        let req = req.into_inner();
        Ok(revision(self.noted(
            self.store.delete_version(&req.key, req.expected).await,
        )))
    }

    async fn write_all(
        &self,
        req: Request<pb::WriteAllRequest>,
    ) -> Result<Response<pb::WriteAllAnswer>, Status> {
        let writes = (req.into_inner().writes.into_iter())
            .map(write_from)
            .collect::<Result<Vec<_>, _>>();
        let result = match writes {
            Ok(writes) => self.store.write_all(&writes).await,
            Err(err) => Err(err),
        };
        if let (Ok(revisions), Some(writes)) = (&result, &self.writes)
            && let Some(newest) = revisions.iter().max()
        {
            writes.note(*newest);
        }
        Ok(Response::new(match result {
            Ok(revisions) => pb::WriteAllAnswer {
                revisions,
                error: None,
            },
            Err(err) => pb::WriteAllAnswer {
                revisions: Vec::new(),
                error: Some(error_to(err)),
            },
        }))
    }

    async fn compact(
        &self,
        req: Request<pb::CompactRequest>,
    ) -> Result<Response<pb::RevisionAnswer>, Status> {
        let at = req.into_inner().revision;
        Ok(revision(self.store.compact(at).await.map(|()| at)))
    }

    type WatchStream = Answers;

    async fn watch(&self, req: Request<pb::WatchRequest>) -> Result<Response<Answers>, Status> {
        let req = req.into_inner();
        let opened = if req.changes_only {
            self.store.watch_changes(&req.prefix, req.after).await
        } else {
            self.store.watch(&req.prefix, req.after).await
        };
        let failed = |err| pb::WatchAnswer {
            error: Some(error_to(err)),
            ..Default::default()
        };
        let answers: Answers = match opened {
            // The first error ends the stream, after it is told.
            Ok(stream) => Box::pin(
                stream
                    .take_until(self.stop.clone().cancelled_owned())
                    .scan(false, move |ended, item| {
                        let out = (!*ended).then(|| match item {
                            Ok(resp) => watch_to(resp),
                            Err(err) => {
                                *ended = true;
                                failed(err)
                            }
                        });
                        futures::future::ready(out)
                    })
                    .map(Ok),
            ),
            Err(err) => Box::pin(futures::stream::once(futures::future::ready(Ok(failed(
                err,
            ))))),
        };
        Ok(Response::new(answers))
    }
}

/// The body of an HTTP server that cannot fail mid-response (kcp-http's).
pub type CallBody =
    http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, std::convert::Infallible>;

/// The store's gRPC service answering one HTTP request at a time, for a server that also serves
/// other things on its port (the shard serves this beside the Kubernetes API).
#[derive(Clone)]
pub struct StoreCalls(StorageServer<StoreService>);

impl StoreCalls {
    /// `stop` ends the watches served (the server's shutdown).
    pub fn new(
        store: Arc<dyn Store>,
        writes: Arc<dyn AcknowledgedWrites>,
        stop: CancellationToken,
    ) -> StoreCalls {
        StoreCalls(service(store, Some(writes), stop))
    }

    /// Answers one call (see [`super::is_store_call`]); the caller has authenticated and
    /// authorized it.
    pub async fn call<B>(&self, req: http::Request<B>) -> http::Response<CallBody>
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
    {
        use tower::ServiceExt;
        match self.0.clone().oneshot(req).await {
            Ok(resp) => resp.map(end_on_error),
            Err(never) => match never {},
        }
    }

    /// The answer to an authenticated caller who may not call the store.
    pub fn refuse(message: &str) -> http::Response<CallBody> {
        Status::permission_denied(message)
            .into_http()
            .map(end_on_error)
    }

    /// The answer to a caller who did not authenticate.
    pub fn unauthenticated() -> http::Response<CallBody> {
        Status::unauthenticated("unauthenticated")
            .into_http()
            .map(end_on_error)
    }
}

/// A gRPC body as the HTTP server's: a failure mid-stream ends it, without the status trailer
/// (tonic's client reads that as a plain end; [`super::RemoteStore`] turns every end of a watch
/// into an error, so its caller resumes).
fn end_on_error(body: tonic::body::Body) -> CallBody {
    use http_body_util::BodyExt;
    let frames = http_body_util::BodyStream::new(body)
        .take_while(|frame| futures::future::ready(frame.is_ok()))
        .filter_map(|frame| futures::future::ready(frame.ok().map(Ok)));
    http_body_util::StreamBody::new(frames).boxed_unsync()
}
