//! Watch: chunked JSON events from the watch cache, filtered per watcher.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::RequestContext;
use super::resource::list_options;
use crate::codec::Output;
use crate::registry::{Selectors, keyspace};
use crate::table::{self, IncludeObject};
use crate::watch_cache::{CacheEvent, CacheEventType, CachedObject, Scope, WatchItem};
use crate::{ApiServer, Body};

/// How often a watcher that asked for bookmarks gets one.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(30);

struct Encoder {
    def: Arc<ResourceDef>,
    output: Output,
    include: IncludeObject,
}

impl Encoder {
    fn event(&self, kind: &str, obj: &CachedObject) -> Option<Bytes> {
        let mut out = Vec::with_capacity(obj.json.len() + 32);
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        match self.output {
            Output::Table => {
                let value: Value = serde_json::from_slice(&obj.json).ok()?;
                let rv = value
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null);
                let t = table::table(
                    &self.def,
                    &[value],
                    json!({"resourceVersion": rv}),
                    self.include,
                );
                out.extend_from_slice(&serde_json::to_vec(&t).ok()?);
            }
            Output::PartialMetadata => {
                let value: Value = serde_json::from_slice(&obj.json).ok()?;
                out.extend_from_slice(&serde_json::to_vec(&table::partial_metadata(&value)).ok()?);
            }
            _ => out.extend_from_slice(&obj.json),
        }
        out.extend_from_slice(b"}\n");
        Some(Bytes::from(out))
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

/// Decides what a watcher with selectors sees of one change.
fn visible(
    def: &ResourceDef,
    selectors: &Selectors,
    ns: Option<&str>,
    ev: &CacheEvent,
) -> Option<&'static str> {
    let matches = |o: &CachedObject| {
        ns.is_none_or(|n| o.namespace.as_deref() == Some(n)) && selectors.matches(def, o)
    };
    match ev.kind {
        CacheEventType::Added => matches(&ev.object).then_some("ADDED"),
        CacheEventType::Deleted => matches(&ev.object).then_some("DELETED"),
        CacheEventType::Modified => {
            let now = matches(&ev.object);
            let before = ev.prev.as_deref().is_some_and(matches);
            match (before, now) {
                (true, true) => Some("MODIFIED"),
                (false, true) => Some("ADDED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
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
        output: Output,
    ) -> Result<Response<Body>, ApiError> {
        let q = &ctx.query;
        let opts = list_options(ctx, &def)?;
        let bookmarks = q.flag("allowWatchBookmarks")?;
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
        if send_initial == Some(true)
            && opts.resource_version_match.as_deref() != Some("NotOlderThan")
        {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![kcp_apimachinery::status::Cause::forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )],
            ));
        }
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
        if let Some(v) = rv.filter(|v| *v != "0") {
            let want: i64 = v.parse().map_err(|_| {
                ApiError::bad_request(format!("resourceVersion: Invalid value: {v:?}"))
            })?;
            if initial {
                cache
                    .wait_for(want)
                    .await
                    .map_err(crate::registry::cache_error)?;
            }
        } else if initial && rv.is_none() {
            cache
                .wait_fresh()
                .await
                .map_err(crate::registry::cache_error)?;
        }
        let encoder = Encoder {
            def: def.clone(),
            output,
            include,
        };
        let (tx, rx) = mpsc::channel::<Bytes>(64);
        let subscribe = if initial {
            // Snapshot and subscription at one revision: subscribe after the revision read, replaying
            // whatever happened in between, then list; duplicates are dropped by revision.
            let at = cache.revision();
            cache
                .subscribe(&prefix, scope.clone(), Some(at))
                .map(|s| (s, Some(at)))
        } else {
            let after = rv.and_then(|v| v.parse::<i64>().ok());
            cache
                .subscribe(&prefix, scope.clone(), after)
                .map(|s| (s, None))
        };
        let (mut sub, snapshot_rev) = match subscribe {
            Ok(s) => s,
            Err(err) => {
                // kube-apiserver answers a too-old watch with 200 and one ERROR event.
                let _ = tx.try_send(error_event(&crate::registry::cache_error(err)));
                drop(tx);
                return Ok(watch_response(rx, output));
            }
        };
        let mut initial_objects = Vec::new();
        if let Some(at) = snapshot_rev {
            let list_prefix = match (cluster, &scope.namespace) {
                (Some(c), Some(ns)) => ks.namespace(c, ns),
                (Some(c), None) => ks.cluster(c),
                (None, _) => prefix.clone(),
            };
            // Objects newer than the snapshot revision arrive through the backlog instead.
            initial_objects = cache
                .list(&list_prefix, None)
                .into_iter()
                .filter(|o| o.revision <= at)
                .collect::<Vec<_>>();
        }
        let selectors = opts.selectors.clone();
        let ns_filter = scope.namespace.clone();
        let shutdown = self.shutdown.clone();
        let send_initial_bookmark = send_initial == Some(true) && bookmarks;
        tokio::spawn(async move {
            let mut last_rev = snapshot_rev.unwrap_or(0);
            for obj in &initial_objects {
                if !(ns_filter
                    .as_deref()
                    .is_none_or(|n| obj.namespace.as_deref() == Some(n))
                    && selectors.matches(&encoder.def, obj))
                {
                    continue;
                }
                let Some(frame) = encoder.event("ADDED", obj) else {
                    continue;
                };
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
            if send_initial_bookmark
                && tx
                    .send(encoder.bookmark(last_rev.max(cache.revision()), true))
                    .await
                    .is_err()
            {
                return;
            }
            let backlog = std::mem::take(&mut sub.backlog);
            for ev in backlog {
                last_rev = last_rev.max(ev.revision);
                let Some(kind) = visible(&encoder.def, &selectors, ns_filter.as_deref(), &ev)
                else {
                    continue;
                };
                let Some(frame) = encoder.event(kind, &ev.object) else {
                    continue;
                };
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
            ticker.tick().await;
            loop {
                tokio::select! {
                    item = sub.rx.recv() => {
                        let Some(item) = item else { return }; // cut off (too slow) or cache reset
                        if let WatchItem::Event(ev) = item {
                            if ev.revision <= last_rev {
                                continue;
                            }
                            last_rev = ev.revision;
                            let Some(kind) = visible(&encoder.def, &selectors, ns_filter.as_deref(), &ev) else { continue };
                            let Some(frame) = encoder.event(kind, &ev.object) else { continue };
                            if tx.send(frame).await.is_err() {
                                return;
                            }
                        }
                    }
                    _ = ticker.tick(), if bookmarks => {
                        if tx.send(encoder.bookmark(cache.revision().max(last_rev), false)).await.is_err() {
                            return;
                        }
                    }
                    _ = &mut deadline => return,
                    _ = shutdown.cancelled() => return,
                    _ = tx.closed() => return,
                }
            }
        });
        Ok(watch_response(rx, output))
    }
}

fn watch_response(rx: mpsc::Receiver<Bytes>, output: Output) -> Response<Body> {
    use futures::StreamExt;
    let stream = ReceiverStream::new(rx)
        .map(|b| Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(b)));
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
