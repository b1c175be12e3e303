//! The HTTP edge with curl, an HTTP/2 client (nghttp2) other than Go's, on both stores: answers given
//! before a request's body is read (an unknown workspace or resource, a body over the limit) reach
//! the client whole, not as a reset stream. And clients that hold connections without finishing
//! (Python's ssl, raw): a connection that sends nothing after its TLS handshake is closed after the
//! header deadline, whatever protocol TLS agreed on; a request whose body never completes is 504
//! at its deadline.

use kcp_e2e::{Shard, StoreKind, on_both_stores};

on_both_stores!(
    early_answers_reach_the_client,
    silent_and_slow_clients_are_let_go,
    openapi_documents_are_cached,
    health_checks
);

/// The health endpoints as kube-apiserver's: `ok`, one line per check with `?verbose`, checks left
/// out with `?exclude`, one check by its path, 404 for a check there is not; with etcd gone, the
/// store check fails (500, every check listed) until it is back.
fn health_checks(store: StoreKind) {
    let mut shard = Shard::start(store);
    let (code, body) = shard.curl_anonymous("GET", "/readyz");
    assert_eq!((code, body.as_str()), (200, "ok"));
    let (code, body) = shard.curl_anonymous("GET", "/readyz?verbose");
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]informer-sync ok\n[+]shutdown ok\nreadyz check passed\n"
    );
    let (code, body) = shard.curl_anonymous("GET", "/livez?verbose&exclude=log&exclude=nope");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("[+]log excluded: ok\n"), "{body}");
    assert!(
        body.contains("warn: some health checks cannot be excluded: no matches for \"nope\""),
        "{body}"
    );
    let (code, body) = shard.curl_anonymous("GET", "/clusters/root/readyz/etcd");
    assert_eq!((code, body.as_str()), (200, "ok"));
    let (code, _) = shard.curl_anonymous("GET", "/readyz/bogus");
    assert_eq!(code, 404);
    if store != StoreKind::Etcd {
        return;
    }
    shard.kill_etcd();
    let failing = shard.eventually("the store check fails", || {
        let (code, body) = shard.curl_anonymous("GET", "/livez");
        (code == 500).then_some(body)
    });
    assert!(
        failing.contains("[-]etcd failed: reason withheld\n"),
        "{failing}"
    );
    assert!(failing.ends_with("livez check failed\n"), "{failing}");
    shard.start_etcd_again();
    shard.eventually("ready again", || {
        (shard.curl_anonymous("GET", "/readyz") == (200, "ok".to_string())).then_some(())
    });
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// kubectl keeps OpenAPI documents in its HTTP cache instead of fetching them on each `apply` or
/// `explain`: each has its hash as ETag (304 when it matches), is immutable when asked for by that
/// hash, and an old hash is sent (301) to the current one.
fn openapi_documents_are_cached(store: StoreKind) {
    let shard = Shard::start(store);
    let (code, root) = shard.curl("GET", "/clusters/root/openapi/v3", None);
    assert_eq!(code, 200, "{root}");
    let root: serde_json::Value = serde_json::from_str(&root).expect("JSON");
    let url = root["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .expect("a URL with its hash")
        .to_string();
    let hash = url.split_once("?hash=").expect("a hash").1.to_string();

    let (code, headers) = shard.head(&format!("/clusters/root{url}"), &[]);
    assert_eq!(code, 200, "{headers:?}");
    assert_eq!(
        header(&headers, "etag"),
        Some(format!("\"{hash}\"").as_str())
    );
    assert_eq!(header(&headers, "cache-control"), Some("public, immutable"));
    assert!(header(&headers, "expires").is_some(), "{headers:?}");

    let (code, headers) = shard.head("/clusters/root/openapi/v3/api/v1", &[]);
    assert_eq!(code, 200);
    assert_ne!(header(&headers, "cache-control"), Some("public, immutable"));
    let if_none_match = format!("If-None-Match: \"{hash}\"");
    let (code, _) = shard.head("/clusters/root/openapi/v3/api/v1", &[&if_none_match]);
    assert_eq!(code, 304);

    let (code, headers) = shard.head("/clusters/root/openapi/v3/api/v1?hash=0ld", &[]);
    assert_eq!(code, 301);
    assert_eq!(
        header(&headers, "location"),
        Some(format!("/clusters/root/openapi/v3/api/v1?hash={hash}").as_str())
    );
}

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
    // HEAD over HTTP/2: the headers and no body (a body was an HTTP/2 protocol error).
    let (code, body) = shard.curl("HEAD", "/clusters/root/api/v1/namespaces/default", None);
    assert_eq!(code, 200, "{body}");
    assert!(body.trim().is_empty(), "{body}");
}

/// Runs a Python (standard library only) client against the shard; its stdout.
fn python(shard: &Shard, script: &str) -> String {
    let root = shard.root_directory();
    let port = shard
        .base_url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    let prelude = format!(
        "import socket, ssl, time\n\
         def tls(alpn=None):\n\
         \x20   c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)\n\
         \x20   c.load_verify_locations({ca:?}); c.check_hostname = False\n\
         \x20   c.load_cert_chain({crt:?}, {key:?})\n\
         \x20   if alpn: c.set_alpn_protocols(alpn)\n\
         \x20   return c.wrap_socket(socket.create_connection(('127.0.0.1', {port})))\n",
        ca = root.join("ca.crt").display().to_string(),
        crt = root.join("kcp-admin.crt").display().to_string(),
        key = root.join("kcp-admin.key").display().to_string(),
    );
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!("{prelude}{script}"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn silent_and_slow_clients_are_let_go(store: StoreKind) {
    let shard = Shard::start(store);
    // A request whose body stops coming: 504 at its deadline (here the request's own, 2 s).
    let out = python(
        &shard,
        "t = tls()\n\
         t.sendall(b'POST /clusters/root/api/v1/namespaces/default/configmaps?timeout=2s HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: 100\\r\\n\\r\\n{\\\"a\\\"')\n\
         t.settimeout(30)\n\
         print(t.recv(65536).decode(errors='replace'))\n",
    );
    assert!(out.starts_with("HTTP/1.1 504"), "{out}");
    assert!(
        out.contains("request did not complete within requested timeout"),
        "{out}"
    );
    // Connections that never send a byte, with each ALPN: closed by the header deadline (32 s).
    let out = python(
        &shard,
        "conns = [tls(a) for a in (None, ['http/1.1'], ['h2'])]\n\
         for t in conns: t.settimeout(60)\n\
         for t in conns:\n\
         \x20   try:\n\
         \x20       while t.recv(65536): pass\n\
         \x20       print('closed')\n\
         \x20   except (ConnectionError, ssl.SSLError):\n\
         \x20       print('closed')\n\
         \x20   except socket.timeout:\n\
         \x20       print('open')\n",
    );
    assert_eq!(out.lines().collect::<Vec<_>>(), ["closed"; 3], "{out}");
}
