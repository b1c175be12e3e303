//! The HTTP edge with curl, an HTTP/2 client (nghttp2) other than Go's, on both stores: answers given
//! before a request's body is read (an unknown workspace or resource, a body over the limit) reach
//! the client whole, not as a reset stream.

use kcp_e2e::{Shard, StoreKind, on_both_stores};

on_both_stores!(early_answers_reach_the_client);

fn early_answers_reach_the_client(store: StoreKind) {
    let shard = Shard::start(store);
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    // Each answered before the body is read; a reset lost most of them before.
    for (path, code, reason) in [
        (
            "/clusters/root:nosuch/api/v1/namespaces/default/configmaps",
            404,
            "NotFound",
        ),
        ("/clusters/root/apis/nosuch.io/v1/things", 404, "NotFound"),
    ] {
        for _ in 0..20 {
            let (got, body) = shard.curl("POST", path, Some(("application/json", cm)));
            assert_eq!(got, code, "POST {path}: {body}");
            assert!(body.contains(&format!(r#""reason":"{reason}""#)), "{body}");
        }
    }
    // Over the limit (3 MiB): 413 with the Status, every time.
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "a".repeat(5 << 20)
    );
    let file = shard.write_file("big.json", &big);
    for _ in 0..3 {
        let (got, body) = shard.curl(
            "POST",
            "/clusters/root/api/v1/namespaces/default/configmaps",
            Some(("application/json", &format!("@{}", file.display()))),
        );
        assert_eq!(got, 413, "{}", &body[..body.len().min(300)]);
        assert!(
            body.contains(r#""reason":"RequestEntityTooLarge""#),
            "{body}"
        );
    }
    let (code, body) = shard.curl(
        "GET",
        "/clusters/root/api/v1/namespaces/default/configmaps/big",
        None,
    );
    assert_eq!(code, 404, "nothing written: {body}");
}
