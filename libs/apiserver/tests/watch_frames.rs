//! Watch frames: encoded once while an event is new, forgotten once it is old, and encoded again
//! (to the same bytes) for a watcher that resumes from far back.

mod common;

use kcp_apiserver::testing::lc;
use std::time::Duration;

use common::Harness;
use kcp_apiserver::on_both_stores;
use kcp_apiserver::registry::WriteOptions;
use kcp_apiserver::watch_cache::{CacheEventType, FRAMES_KEPT, Scope, WatchItem};
use serde_json::json;

/// More events than keep their frame, fewer than the history holds.
const EVENTS: usize = 1_500;

on_both_stores!(old_events_encode_the_same_frames_again);

async fn old_events_encode_the_same_frames_again(h: &Harness) {
    let reg = h.server.registry();
    let cms = common::builtin("", "configmaps");
    let prefix = kcp_apiserver::registry::keyspace(&cms)
        .all_clusters()
        .to_string();
    let scope = Scope {
        cluster: Some(lc("root").clone()),
        namespace: Some("default".into()),
    };
    let start = reg.cache().wait_fresh().await.expect("fresh");
    let mut live = reg
        .cache()
        .subscribe(&prefix, scope.clone(), None)
        .expect("subscribe");
    // Every frame as a live watcher got it, encoded while the event was the newest.
    let mut live_frames = Vec::with_capacity(EVENTS);
    for i in 0..EVENTS {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("c{i}"), "labels": {"n": i.to_string()}},
            "data": {"k": "v".repeat(i % 300)}});
        reg.create(
            &cms,
            lc("root"),
            Some("default"),
            cm,
            WriteOptions::default(),
        )
        .await
        .expect("create");
        match tokio::time::timeout(Duration::from_secs(10), live.rx.recv()).await {
            Ok(Some(WatchItem::Event(ev))) => live_frames.push(ev.json_frame(ev.kind)),
            other => panic!("event {i}: got {other:?}"),
        }
    }
    // A watcher resuming from before the first create replays the history, old frames included.
    let resumed = reg
        .cache()
        .subscribe(&prefix, scope, Some(start))
        .expect("resume");
    assert_eq!(resumed.backlog.len(), EVENTS, "the whole history replays");
    for (i, (ev, live)) in resumed.backlog.iter().zip(&live_frames).enumerate() {
        assert_eq!(ev.kind, CacheEventType::Added);
        let old = i < EVENTS - FRAMES_KEPT;
        assert_eq!(ev.holds_frame(), !old, "event {i} keeps its frame");
        assert_eq!(&ev.json_frame(ev.kind), live, "frame of event {i}");
        // Serving an old event does not store its frame again.
        assert_eq!(
            ev.holds_frame(),
            !old,
            "event {i} keeps its frame after serving"
        );
        // Another kind (an object entering a selector) is encoded from the same object.
        let modified = ev.json_frame(CacheEventType::Modified);
        assert_eq!(
            modified.strip_prefix(b"{\"type\":\"MODIFIED\"".as_slice()),
            live.strip_prefix(b"{\"type\":\"ADDED\"".as_slice()),
            "frame of event {i} as MODIFIED"
        );
    }
}
