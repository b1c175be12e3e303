//! Watch semantics at their edges, on both stores: a watch from a resourceVersion ahead of the
//! shard (one read from another shard, say) sends nothing at or before it.

use kcp_e2e::{Shard, StoreKind, on_both_stores};
use serde_json::Value;

on_both_stores!(nothing_at_or_before_the_resource_version);

const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";

fn nothing_at_or_before_the_resource_version(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "configmap", "cm", "--from-literal=k=v"]);
    let (code, body) = shard.curl("GET", CMS, None);
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).expect("a list");
    let now: i64 = list["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("the list's resourceVersion");
    // Ahead of the shard by three writes; then six writes come.
    let from = now + 3;
    let events = std::thread::scope(|scope| {
        let watch = scope.spawn(|| {
            shard.curl(
                "GET",
                &format!("{CMS}?watch=true&resourceVersion={from}&timeoutSeconds=4"),
                None,
            )
        });
        // Let the watch start first.
        std::thread::sleep(std::time::Duration::from_millis(500));
        for i in 0..6 {
            let (code, body) = shard.curl(
                "PATCH",
                &format!("{CMS}/cm"),
                Some((
                    "application/merge-patch+json",
                    &format!(r#"{{"data":{{"k":"v{i}"}}}}"#),
                )),
            );
            assert_eq!(code, 200, "{body}");
        }
        watch.join().expect("the watch thread")
    });
    let (code, body) = events;
    assert_eq!(code, 200, "{body}");
    let revisions: Vec<i64> = body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()?
                .parse()
                .ok()
        })
        .collect();
    assert!(!revisions.is_empty(), "{body}");
    assert!(
        revisions.iter().all(|rv| *rv > from),
        "from {from}: {revisions:?}"
    );
}
