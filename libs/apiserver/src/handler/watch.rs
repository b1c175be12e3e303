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
use kcp_apimachinery::status::{ApiError, Cause};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::RequestContext;
use crate::ApiServer;
use crate::codec::Output;
use crate::registry::ListOptions;
use crate::registry::{Selectors, keyspace};
use crate::table::{self, IncludeObject};
use crate::watch_cache::{
    CacheEvent, CacheEventType, CachedObject, Scope, Subscription, WatchCache, WatchItem,
    json_frame,
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

/// Who a watcher is: what it asked to see.
struct Filter {
    def: Arc<ResourceDef>,
    selectors: Selectors,
    namespace: Option<String>,
}

impl Filter {
    fn matches(&self, o: &CachedObject) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|n| o.namespace.as_deref() == Some(n))
            && self.selectors.matches(&self.def, o)
    }

    /// What this watcher sees of one change: an object entering the selector is ADDED for it, one
    /// leaving it is DELETED.
    fn visible(&self, ev: &CacheEvent) -> Option<CacheEventType> {
        match ev.kind {
            CacheEventType::Added | CacheEventType::Deleted => {
                self.matches(&ev.object).then_some(ev.kind)
            }
            CacheEventType::Modified => {
                let now = self.matches(&ev.object);
                let before = ev.prev.as_deref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some(CacheEventType::Modified),
                    (false, true) => Some(CacheEventType::Added),
                    (true, false) => Some(CacheEventType::Deleted),
                    (false, false) => None,
                }
            }
        }
    }
}

/// The state of one watch response body.
struct WatchStream {
    sub: Subscription,
    encoder: Encoder,
    filter: Filter,
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

/// Resolves when the server shuts down, or when a cluster a watch of `cluster` (`None`: all) shows
/// is marked inactive. One future for the watch's whole life, polled with each frame.
fn ending(
    shutdown: CancellationToken,
    cluster: Option<String>,
    mut marked: tokio::sync::broadcast::Receiver<Arc<str>>,
) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
    Box::pin(async move {
        let inactive = async {
            loop {
                let marking = marked.recv().await;
                if crate::inactive::ends_watch(cluster.as_deref(), &marking) {
                    return;
                }
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = inactive => {}
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
        cluster: Option<&str>,
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
        let rv = opts.resource_version.as_deref().filter(|v| !v.is_empty());
        watch_options_valid(&opts, send_initial)?;
        let ks = keyspace(&def);
        let prefix = ks.all_clusters().to_string();
        let cache = self.registry.cache().clone();
        let scope = Scope {
            cluster: cluster.map(str::to_string),
            namespace: if def.namespaced {
                namespace.clone()
            } else {
                None
            },
        };
        // Initial state: synthetic ADDED events when no resourceVersion (or "0") is given, or when
        // sendInitialEvents asks for them.
        let initial = match (rv, send_initial) {
            (_, Some(true)) => true,
            (_, Some(false)) => false,
            (None | Some("0"), None) => true,
            _ => false,
        };
        let after = match rv.filter(|v| *v != "0") {
            Some(v) => Some(v.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!("resourceVersion: Invalid value: {v:?}"))
            })?),
            None => None,
        };
        if initial {
            match after {
                Some(want) => cache.wait_for(want).await,
                None if rv.is_none() => cache.wait_fresh().await,
                None => Ok(cache.revision()),
            }
            .map_err(crate::registry::cache_error)?;
        }
        let encoder = Encoder {
            def: def.clone(),
            output,
            include,
        };
        let filter = Filter {
            def: def.clone(),
            selectors: opts.selectors.clone(),
            namespace: scope.namespace.clone(),
        };
        // With an initial state, subscribe at the revision read first and list after: whatever
        // happens in between arrives through the replayed history, and duplicates are dropped by revision.
        // Subscribed before the cache's subscription: a marking from here on ends this watch.
        let inactive = self.inactive.subscribe();
        let snapshot_rev = initial.then(|| cache.revision());
        let subscribed = cache.subscribe(
            &prefix,
            scope.clone(),
            if initial { snapshot_rev } else { after },
        );
        let mut sub = match subscribed {
            Ok(s) => s,
            // kube-apiserver answers a too-old watch with 200 and one ERROR event.
            Err(err) => {
                return Ok(watch_response(
                    futures::stream::iter([error_event(&crate::registry::cache_error(err))]),
                    output,
                ));
            }
        };
        let mut pending = VecDeque::new();
        // Nothing at or before the revision asked for is sent, even when it is ahead of this
        // shard (Kubernetes' watchers send only events newer than it).
        let mut last_rev = after.unwrap_or(0);
        if let Some(at) = snapshot_rev {
            last_rev = at;
            let list_prefix = match (cluster, &scope.namespace) {
                (Some(c), Some(ns)) => ks.namespace(c, ns),
                (Some(c), None) => ks.cluster(c),
                (None, _) => prefix.clone(),
            };
            // Objects newer than the snapshot revision arrive through the replayed history instead.
            for obj in cache
                .list(&list_prefix, None)
                .iter()
                .filter(|o| o.revision <= at && filter.matches(o))
            {
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
            ending: ending(self.shutdown.clone(), cluster.map(str::to_string), inactive),
            cache,
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

/// Kubernetes' validation of a watch's options (422 `ListOptions.meta.k8s.io` with every cause):
/// `resourceVersionMatch` only as `NotOlderThan` with `sendInitialEvents`, never with `continue`.
fn watch_options_valid(opts: &ListOptions, send_initial: Option<bool>) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    let rv_match = opts
        .resource_version_match
        .as_deref()
        .filter(|m| !m.is_empty());
    let forbidden = |detail: &str| Cause::forbidden("resourceVersionMatch", detail);
    if send_initial.is_some() && rv_match != Some("NotOlderThan") {
        causes.push(forbidden(
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if let Some(m) = rv_match {
        if send_initial.is_none() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if m != "NotOlderThan" {
            causes.push(Cause::not_supported(
                "resourceVersionMatch",
                &Value::from(m),
                &["NotOlderThan"],
            ));
        }
        if opts.continue_token.is_some() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    match causes.is_empty() {
        true => Ok(()),
        false => Err(kcp_http::query::invalid_options("watch", causes)),
    }
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
