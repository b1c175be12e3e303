//! `/metrics`, on both stores: kube-apiserver's request metrics, kcp's workspace and logical cluster
//! counts, served at the top level only and authorized by RBAC of `root` alone.

use kcp_e2e::{Background, Caller, Shard, StoreKind, on_both_stores};

on_both_stores!(metrics);

const READER_TOKEN: &str = "token-of-scraper-51a9";
const OTHER_TOKEN: &str = "token-of-carol-0d2e";

/// The value of the sample `name{labels}` in `text` (labels exactly as printed).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

fn metrics(store: StoreKind) {
    let files = tempfile::Builder::new()
        .prefix("kcp-e2e-metrics-")
        .tempdir()
        .expect("a temporary directory");
    let tokens = files.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("{READER_TOKEN},scraper,uid-scraper\n{OTHER_TOKEN},carol,uid-carol\n"),
    )
    .expect("writing tokens.csv");
    let shard =
        Shard::start_with_args(store, ["--token-auth-file".into(), tokens.into_os_string()]);
    let reader = Caller::Token(READER_TOKEN.to_string());
    let carol = Caller::Token(OTHER_TOKEN.to_string());

    // Nobody but an admin may scrape until root binds the role.
    let (code, body) = shard.curl_with(&reader, "GET", "/metrics", &[], None);
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"User \"scraper\" cannot get path \"/metrics\""#),
        "{body}"
    );
    shard.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "scrapers",
        "--clusterrole",
        "system:kcp:metrics-reader",
        "--user",
        "scraper",
    ]);
    // The binding lets the scraper read metrics and nothing else of root.
    let (code, body) = shard.curl_with(&carol, "GET", "/metrics", &[], None);
    assert_eq!(code, 403, "{body}");
    let (code, body) = shard.curl_with(&reader, "GET", "/clusters/root/api/v1/secrets", &[], None);
    assert_eq!(code, 403, "{body}");

    // Under a workspace the shard's metrics are not served, whoever asks.
    for path in ["/clusters/root/metrics", "/clusters/*/metrics"] {
        let (code, body) = shard.curl_with(&reader, "GET", path, &[], None);
        assert_eq!(code, 501, "{path}: {body}");
        assert_eq!(
            body,
            "shard-level endpoint not available at workspace scope\n"
        );
    }

    // Some traffic: a workspace, a configmap, a refused create, a dry run, and a watch left open.
    shard
        .kubectl_cmd()
        .stdin("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: metered\n")
        .ok(&["create", "-f", "-"]);
    shard.eventually("workspace metered Ready", || {
        (shard.kubectl_ok(&[
            "get",
            "workspace",
            "metered",
            "-o",
            "jsonpath={.status.phase}",
        ]) == "Ready")
            .then_some(())
    });
    shard.kubectl_ok(&["create", "configmap", "one", "-n", "default"]);
    shard.kubectl_fails(&["create", "configmap", "one", "-n", "default"]);
    shard.kubectl_ok(&[
        "create",
        "configmap",
        "two",
        "-n",
        "default",
        "--dry-run=server",
    ]);
    let watch = Background::spawn(
        shard
            .kubectl_cmd()
            .command(&["get", "configmaps", "-n", "default", "--watch"]),
        shard.dir(),
        "metrics-watch",
    );
    let open_watches = r#"apiserver_longrunning_requests{verb="WATCH",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver"}"#;
    let scrape = || {
        let (code, body) = shard.curl_with(&reader, "GET", "/metrics", &[], None);
        assert_eq!(code, 200, "{body}");
        body
    };
    shard.eventually("the watch is counted", || {
        (sample(&scrape(), open_watches) == Some(1.0)).then_some(())
    });

    let text = scrape();
    assert!(
        text.ends_with("# EOF\n"),
        "OpenMetrics text ends so:\n{text}"
    );
    let create = |code: u16, dry_run: &str| {
        format!(
            r#"apiserver_request_total{{verb="POST",dry_run="{dry_run}",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver",code="{code}"}}"#
        )
    };
    assert_eq!(sample(&text, &create(201, "")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &create(409, "")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &create(201, "All")), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            r#"apiserver_request_total{verb="GET",dry_run="",group="",version="",resource="",subresource="",scope="",component="apiserver",code="403"}"#
        ),
        Some(2.0),
        "the two refused scrapes:\n{text}"
    );
    assert!(
        text.contains(r#"apiserver_request_duration_seconds_count{verb="POST",dry_run="",group="tenancy.kcp.io",version="v1alpha1",resource="workspaces",subresource="",scope="resource",component="apiserver"}"#),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"kcp_workspace_count{shard="root",phase="Ready"}"#),
        Some(1.0),
        "{text}"
    );
    // root, system:admin and the workspace's.
    assert_eq!(
        sample(
            &text,
            r#"kcp_logicalcluster_count{shard="root",phase="Ready"}"#
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        sample(&text, "process_resident_memory_bytes").is_some_and(|v| v > 0.0),
        "{text}"
    );

    // The watch ends: no longer counted.
    watch.kill();
    shard.eventually("the watch is gone from the gauge", || {
        (sample(&scrape(), open_watches) == Some(0.0)).then_some(())
    });
}
