//! Watch: chunked JSON events from the watch cache, filtered per watcher.
//!
//! The response body itself polls the watcher's queue: no task or channel sits between the cache and
//! the connection, and a JSON event is encoded once and shared by every watcher that sees it.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::RequestContext;
use crate::ApiServer;
use crate::codec::Output;
use crate::registry::{ListOptions, ListScope, Watch, WatchFilter, WatchStart};
use crate::table::{self, IncludeObject};
use crate::watch_cache::{
    CacheEvent, CacheEventType, CachedObject, Subscription, WatchCache, WatchItem, json_frame,
};
use kcp_http::Body;

/// How often a watcher that asked for bookmarks gets one.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(30);

struct Encoder {
    def: Arc<ResourceDef>,
    output: Output,
    include: IncludeObject,
}

impl Encoder {
    /// The frame of an object that has no cache event (the initial state).
    /// Whether frames are this watcher's own: shared JSON frames hold the stored form as JSON.
    fn per_watcher(&self) -> bool {
        matches!(self.output, Output::Table | Output::PartialMetadata)
            || self.def.shared_storage.is_some()
    }

    fn object(&self, kind: CacheEventType, obj: &CachedObject) -> Option<Bytes> {
        if self.per_watcher() {
            self.converted(kind, obj)
        } else {
            Some(json_frame(kind, &obj.json))
        }
    }

    fn event(&self, kind: CacheEventType, ev: &CacheEvent) -> Option<Bytes> {
        if self.per_watcher() {
            self.converted(kind, &ev.object)
        } else {
            Some(ev.json_frame(kind))
        }
    }

    /// Frames that depend on the watcher (Table, PartialObjectMetadata, another API's view): built
    /// per watcher from the stored object.
    fn converted(&self, kind: CacheEventType, obj: &CachedObject) -> Option<Bytes> {
        let value = crate::registry::to_api(&self.def, obj.json.parse().ok()?);
        let object = match self.output {
            Output::Table => {
                let rv = value
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null);
                table::table(
                    &self.def,
                    &[value],
                    json!({"resourceVersion": rv}),
                    self.include,
                )
            }
            Output::PartialMetadata => table::partial_metadata(&value),
            _ => value,
        };
        let bytes = serde_json::to_vec(&object).ok()?;
        Some(json_frame(kind, &bytes.into()))
    }

    fn bookmark(&self, revision: i64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object =
            json!({"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": meta});
        let mut out =
            serde_json::to_vec(&json!({"type": "BOOKMARK", "object": object})).unwrap_or_default();
        out.push(b'\n');
        Bytes::from(out)
    }
}

fn error_event(err: &ApiError) -> Bytes {
    let mut out = serde_json::to_vec(&json!({"type": "ERROR", "object": err.to_status()}))
        .unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

/// The state of one watch response body.
struct WatchStream {
    sub: Subscription,
    encoder: Encoder,
    filter: WatchFilter,
    /// Frames ready to go before the live queue is read (initial state, replayed history).
    pending: VecDeque<Bytes>,
    /// Events at or below this revision were already sent.
    last_rev: i64,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// When the next bookmark is due, if bookmarks were asked for (see [`next_bookmark`]).
    bookmark: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Resolves when the watch must end before its time (see [`ending`]).
    ending: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
    cache: Arc<WatchCache>,
}

/// Resolves when the server shuts down, or when the server's gate closes a cluster a watch of
/// `cluster` (`None`: all) shows. One future for the watch's whole life, polled with each frame.
fn ending(
    shutdown: CancellationToken,
    closed: Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>,
) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
    Box::pin(async move {
        let closed = async {
            match closed {
                Some(closed) => closed.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = closed => {}
        }
    })
}

impl WatchStream {
    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            let deadline = self.deadline.deadline();
            let bookmark = async {
                match self.bookmark.as_mut() {
                    Some(t) => t.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                item = self.sub.rx.recv() => match item? {
                    WatchItem::Event(ev) => {
                        if ev.revision <= self.last_rev {
                            continue;
                        }
                        self.last_rev = ev.revision;
                        let Some(kind) = self.filter.visible(&ev) else { continue };
                        if let Some(frame) = self.encoder.event(kind, &ev) {
                            return Some(frame);
                        }
                    }
                    WatchItem::Progress(_) => {}
                },
                _ = bookmark => {
                    self.bookmark = next_bookmark(tokio::time::Instant::now(), deadline);
                    return Some(self.encoder.bookmark(self.cache.revision().max(self.last_rev), false));
                }
                _ = &mut self.deadline => return None,
                _ = &mut self.ending => return None,
            }
        }
    }
}

impl ApiServer {
    pub(super) async fn serve_watch(
        &self,
        ctx: &RequestContext,
        def: Arc<ResourceDef>,
        cluster: Option<&LogicalClusterName>,
        namespace: Option<String>,
        opts: ListOptions,
        output: Output,
    ) -> Result<Response<Body>, ApiError> {
        let q = &ctx.query;
        let bookmarks = q.flag("allowWatchBookmarks");
        let send_initial = q.get("sendInitialEvents").map(|v| v == "true" || v == "1");
        let timeout = match q.number("timeoutSeconds")? {
            Some(secs) if secs > 0 => Duration::from_secs(secs as u64),
            // kube-apiserver spreads watch lifetimes over [30m, 60m) so reconnects do not bunch up.
            _ => {
                Duration::from_secs(1800 + u64::from(uuid::Uuid::new_v4().as_u128() as u16 % 1800))
            }
        };
        let include = IncludeObject::parse(q.get("includeObject"))?;
        let encoder = Encoder {
            def: def.clone(),
            output,
            include,
        };
        // Subscribed before the cache's subscription: a closing from here on ends this watch.
        let closed = self.gate.as_ref().map(|gate| gate.watch_ends(cluster));
        let scope = ListScope {
            cluster,
            namespace: namespace.as_deref(),
        };
        let watch = match self
            .registry
            .watch(&def, scope, &opts, send_initial)
            .await?
        {
            WatchStart::Started(watch) => watch,
            // kube-apiserver answers a too-old watch with 200 and one ERROR event.
            WatchStart::TooOld(err) => {
                return Ok(watch_response(
                    futures::stream::iter([error_event(&err)]),
                    output,
                ));
            }
        };
        let Watch {
            subscription: mut sub,
            filter,
            initial,
            initial_at,
            after,
        } = watch;
        let mut pending = VecDeque::new();
        let mut last_rev = after;
        if let Some(at) = initial_at {
            last_rev = at;
            for obj in &initial {
                pending.extend(encoder.object(CacheEventType::Added, obj));
            }
            if send_initial == Some(true) && bookmarks {
                pending.push_back(encoder.bookmark(at, true));
            }
        }
        for ev in std::mem::take(&mut sub.backlog) {
            if ev.revision <= last_rev {
                continue;
            }
            last_rev = ev.revision;
            if let Some(kind) = filter.visible(&ev) {
                pending.extend(encoder.event(kind, &ev));
            }
        }
        let now = tokio::time::Instant::now();
        let bookmark = bookmarks
            .then(|| next_bookmark(now, now + timeout))
            .flatten();
        let state = WatchStream {
            sub,
            encoder,
            filter,
            pending,
            last_rev,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            bookmark,
            ending: ending(self.shutdown.clone(), closed),
            cache: self.registry.cache().clone(),
        };
        let stream = futures::stream::unfold(state, |mut st| async move {
            st.next_frame().await.map(|frame| (frame, st))
        });
        Ok(watch_response(stream, output))
    }
}

/// When the bookmark after `now` is due, as Kubernetes' watchers schedule them: every
/// [`BOOKMARK_INTERVAL`], and one 2 s before the watch's deadline, so a client resumes from a
/// recent revision when its watch times out; none once that one is past.
fn next_bookmark(
    now: tokio::time::Instant,
    deadline: tokio::time::Instant,
) -> Option<Pin<Box<tokio::time::Sleep>>> {
    let last_call = deadline.checked_sub(Duration::from_secs(2))?;
    let at = (now + BOOKMARK_INTERVAL).min(last_call);
    (at > now).then(|| Box::pin(tokio::time::sleep_until(at)))
}

fn watch_response<S>(frames: S, output: Output) -> Response<Body>
where
    S: futures::Stream<Item = Bytes> + Send + 'static,
{
    use futures::StreamExt;
    let stream = frames.map(|b| Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(b)));
    let body = StreamBody::new(stream).boxed_unsync();
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    let ct = match output {
        Output::Table => "application/json;as=Table;v=v1;g=meta.k8s.io",
        _ => "application/json",
    };
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}
