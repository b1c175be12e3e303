//! List, watch and get semantics at their edges, on both stores: a watch from a resourceVersion
//! ahead of the shard (one read from another shard, say) sends nothing at or before it; invalid
//! list and watch options are Kubernetes' 422 with every cause; a get or list from a
//! resourceVersion the shard has not reached waits, then is 504 with the cause clients know; a
//! watch with bookmarks gets one shortly before its timeout.

use kcp_e2e::{Shard, StoreKind, on_both_stores};
use serde_json::Value;

on_both_stores!(
    nothing_at_or_before_the_resource_version,
    invalid_options_are_422,
    versions_not_reached_are_504,
    a_bookmark_before_the_timeout,
);

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

fn invalid_options_are_422(store: StoreKind) {
    let shard = Shard::start(store);
    for (query, message) in [
        (
            "resourceVersionMatch=Exact",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            r#"resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""#,
        ),
        (
            "resourceVersion=1&resourceVersionMatch=Newest",
            "resourceVersionMatch: Unsupported value",
        ),
        (
            "sendInitialEvents=true",
            "sendInitialEvents is forbidden for list",
        ),
        (
            "watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
    ] {
        let (code, body) = shard.curl("GET", &format!("{CMS}?{query}"), None);
        assert_eq!(code, 422, "{query}: {body}");
        assert!(
            body.contains(r#"ListOptions.meta.k8s.io \"\" is invalid"#),
            "{query}: {body}"
        );
        assert!(body.contains(message), "{query}: {body}");
    }
}

fn versions_not_reached_are_504(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "configmap", "cm", "--from-literal=k=v"]);
    for path in [
        format!("{CMS}/cm?resourceVersion=999999999"),
        format!("{CMS}?resourceVersion=999999999"),
    ] {
        let (code, body) = shard.curl("GET", &path, None);
        assert_eq!(code, 504, "{path}: {body}");
        let status: Value = serde_json::from_str(&body).expect("a Status");
        assert_eq!(status["reason"], "Timeout", "{body}");
        assert_eq!(
            status["details"]["causes"][0]["reason"], "ResourceVersionTooLarge",
            "{body}"
        );
        assert_eq!(status["details"]["retryAfterSeconds"], 1, "{body}");
    }
    let (code, body) = shard.curl("GET", &format!("{CMS}/cm?resourceVersion=abc"), None);
    assert_eq!(code, 400, "{body}");
    let (code, body) = shard.curl("GET", &format!("{CMS}/cm?resourceVersion=0"), None);
    assert_eq!(code, 200, "{body}");
}

fn a_bookmark_before_the_timeout(store: StoreKind) {
    let shard = Shard::start(store);
    let (code, body) = shard.curl("GET", CMS, None);
    assert_eq!(code, 200, "{body}");
    let rv = serde_json::from_str::<Value>(&body).expect("a list")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // A quiet collection: the only frame is the bookmark 2 s before the 4 s timeout.
    let (code, body) = shard.curl(
        "GET",
        &format!("{CMS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=4"),
        None,
    );
    assert_eq!(code, 200, "{body}");
    let kinds: Vec<String> = body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds, ["BOOKMARK"], "{body}");
}
