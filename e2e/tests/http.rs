//! The HTTP edge with curl, an HTTP/2 client (nghttp2) other than Go's, on both stores: answers given
//! before a request's body is read (an unknown workspace or resource, a body over the limit) reach
//! the client whole, not as a reset stream. And clients that hold connections without finishing
//! (Python's ssl, raw): a connection that sends nothing after its TLS handshake is closed after the
//! header deadline, whatever protocol TLS agreed on; a request whose body never completes is 504
//! at its deadline.

use kcp_e2e::{Shard, StoreKind, on_both_stores};

on_both_stores!(
    early_answers_reach_the_client,
    silent_and_slow_clients_are_let_go
);

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
