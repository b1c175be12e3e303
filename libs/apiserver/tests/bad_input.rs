//! Whatever a client sends, the request edge answers with a value or a typed error, never a panic.

use http::Method;
use kcp_apiserver::codec::{Produces, decode_object, negotiate};
use kcp_http::query::Query;
use kcp_http::request_info::{VerbHints, parse};
use proptest::prelude::*;

fn method() -> impl Strategy<Value = Method> {
    prop_oneof![
        Just(Method::GET),
        Just(Method::POST),
        Just(Method::PUT),
        Just(Method::PATCH),
        Just(Method::DELETE),
        Just(Method::HEAD)
    ]
}

/// Paths built from the pieces real URLs are made of, so the parser's branches are all reached.
fn path() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        Just("clusters".to_string()),
        Just("*".to_string()),
        Just("root".to_string()),
        Just("api".to_string()),
        Just("apis".to_string()),
        Just("v1".to_string()),
        Just("namespaces".to_string()),
        Just("watch".to_string()),
        Just("status".to_string()),
        Just("openapi".to_string()),
        Just("".to_string()),
        "[a-z0-9.:%-]{0,12}",
        ".{0,8}",
    ];
    proptest::collection::vec(segment, 0..9).prop_map(|s| format!("/{}", s.join("/")))
}

proptest! {
    #[test]
    fn request_paths_never_panic(m in method(), p in path(), watch in any::<bool>()) {
        let info = parse(&m, &p, VerbHints { watch });
        prop_assert!(info.path.starts_with('/') || info.path.is_empty());
    }

    #[test]
    fn query_strings_never_panic(q in ".{0,64}") {
        let query = Query::parse(Some(&q));
        let _ = query.flag("watch");
        let _ = query.number("limit");
        let _ = query.dry_run("create");
    }

    #[test]
    fn bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..256), ct in prop_oneof![
        Just("application/json"), Just("application/yaml"), Just("application/vnd.kubernetes.protobuf"), Just("text/plain"), Just("")
    ]) {
        if let Err(err) = decode_object(Some(ct), &body) {
            prop_assert!(matches!(err.code, 400 | 415), "unexpected code {}", err.code);
        }
    }

    #[test]
    fn protobuf_envelopes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut body = b"k8s\0".to_vec();
        body.extend(tail);
        if let Err(err) = decode_object(Some("application/vnd.kubernetes.protobuf"), &body) {
            prop_assert!(matches!(err.code, 400 | 415), "unexpected code {}", err.code);
        }
    }

    #[test]
    fn accept_headers_never_panic(accept in ".{0,80}") {
        for produces in [Produces::Objects, Produces::Discovery, Produces::JsonOnly] {
            if let Err(err) = negotiate(Some(&accept), produces) {
                prop_assert_eq!(err.code, 406);
            }
        }
    }
}

#[test]
fn deeply_nested_bodies_are_refused_not_overflowed() {
    for ct in ["application/json", "application/yaml"] {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = decode_object(Some(ct), deep.as_bytes())
            .err()
            .map(|e| e.code);
        assert_eq!(err, Some(400), "{ct}");
        let deep_map = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
        let err = decode_object(Some(ct), deep_map.as_bytes())
            .err()
            .map(|e| e.code);
        assert_eq!(err, Some(400), "{ct}");
    }
}
