//! Kubernetes storage semantics of the generic registry, on the embedded store and on etcd:
//! resource versions, conflicts, pagination snapshots, watch resume and expiry, finalizers.

mod common;

use kcp_apiserver::on_both_stores;
use kcp_apiserver::testing::lc;

use common::Harness;

use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_apiserver::registry::{
    Batch, Companion, DeleteOptions, DeleteOutcome, ListOptions, ListScope, NewObject,
    ObjectDeletion, ObjectRef, ObjectUpdate, Registry, UpdateKind, WriteOptions,
};
use kcp_apiserver::watch_cache::{CacheEventType, Scope, WatchItem};
use serde_json::{Value, json};

fn def(plural: &str) -> ResourceDef {
    common::builtin("", plural)
}

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn at<'a>(name: &'a str) -> ObjectRef<'a> {
    ObjectRef {
        cluster: lc("root"),
        namespace: Some("default"),
        name,
    }
}

fn rv(v: &Value) -> i64 {
    v.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .expect("resourceVersion")
}

async fn conflicts_and_versions(h: &Harness) {
    let reg: &Registry = h.server.registry();
    let cms = def("configmaps");
    let created = reg
        .create(
            &cms,
            lc("root"),
            Some("default"),
            cm("a", json!({"k": "1"})),
            WriteOptions::default(),
        )
        .await
        .expect("create");
    let rv1 = rv(&created.object);
    assert!(created.object.pointer("/metadata/uid").is_some());
    assert_eq!(
        created.object["metadata"]["annotations"]["kcp.io/cluster"],
        "root"
    );

    // A second create of the same name is AlreadyExists (409).
    let again = reg
        .create(
            &cms,
            lc("root"),
            Some("default"),
            cm("a", json!({})),
            WriteOptions::default(),
        )
        .await
        .err()
        .expect("conflict");
    assert_eq!((again.code, again.reason.as_str()), (409, "AlreadyExists"));

    // An update naming the current resourceVersion succeeds and moves it forward.
    let mut body = created.object.clone();
    body["data"]["k"] = json!("2");
    let updated = reg
        .update(
            &cms,
            at("a"),
            UpdateKind::Main,
            WriteOptions::default(),
            |_| Ok(body.clone()),
        )
        .await
        .expect("update");
    assert!(rv(&updated.object) > rv1);

    // The same stale body again is a Conflict (409), and nothing changes.
    let stale = reg
        .update(
            &cms,
            at("a"),
            UpdateKind::Main,
            WriteOptions::default(),
            |_| Ok(body.clone()),
        )
        .await
        .err()
        .expect("stale");
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    let now = reg.get(&cms, at("a")).await.expect("get");
    assert_eq!(now.value().expect("json")["data"]["k"], "2");

    // A no-op update writes nothing: the resourceVersion stays.
    let current = now.value().expect("json");
    let same = reg
        .update(
            &cms,
            at("a"),
            UpdateKind::Main,
            WriteOptions::default(),
            |_| Ok(current.clone()),
        )
        .await
        .expect("no-op");
    assert_eq!(rv(&same.object), rv(&updated.object));

    // Dry run validates but writes nothing.
    let dry = reg
        .create(
            &cms,
            lc("root"),
            Some("default"),
            cm("dry", json!({})),
            WriteOptions {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .expect("dry create");
    assert_eq!(dry.object["metadata"]["name"], "dry");
    assert_eq!(
        reg.get(&cms, at("dry")).await.err().map(|e| e.code),
        Some(404)
    );

    // Invalid names are 422 with a cause on metadata.name; a missing namespace is 404.
    let bad = reg
        .create(
            &cms,
            lc("root"),
            Some("default"),
            cm("Bad_Name", json!({})),
            WriteOptions::default(),
        )
        .await
        .err()
        .expect("invalid");
    assert_eq!(bad.code, 422);
    assert_eq!(
        bad.details.causes.first().map(|c| c.field.as_str()),
        Some("metadata.name")
    );
    let no_ns = reg
        .create(
            &cms,
            lc("root"),
            Some("nope"),
            cm("x", json!({})),
            WriteOptions::default(),
        )
        .await
        .err()
        .expect("no namespace");
    assert_eq!(no_ns.code, 404);
}

async fn pagination_is_a_snapshot(h: &Harness) {
    let reg = h.server.registry();
    let cms = def("configmaps");
    for i in 0..7 {
        reg.create(
            &cms,
            lc("root"),
            Some("default"),
            cm(&format!("p{i}"), json!({})),
            WriteOptions::default(),
        )
        .await
        .expect("create");
    }
    let scope = ListScope {
        cluster: Some(lc("root")),
        namespace: Some("default"),
    };
    let first = reg
        .list(
            &cms,
            scope,
            &ListOptions {
                limit: 3,
                ..Default::default()
            },
        )
        .await
        .expect("page 1");
    assert_eq!(first.items.len(), 3);
    assert_eq!(first.remaining, Some(4));
    let token = first.continue_token.clone().expect("continue");
    // Changes after the first page do not show up in later pages of the same list.
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        cm("p99", json!({})),
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let mut names: Vec<String> = first.items.iter().map(|o| o.name.clone()).collect();
    let mut next = Some(token);
    while let Some(token) = next {
        let page = reg
            .list(
                &cms,
                scope,
                &ListOptions {
                    limit: 3,
                    continue_token: Some(token),
                    ..Default::default()
                },
            )
            .await
            .expect("page");
        assert_eq!(
            page.revision, first.revision,
            "every page is read at the first page's revision"
        );
        names.extend(page.items.iter().map(|o| o.name.clone()));
        next = page.continue_token;
    }
    assert_eq!(names, (0..7).map(|i| format!("p{i}")).collect::<Vec<_>>());
    // A garbage token is 400.
    let bad = reg
        .list(
            &cms,
            scope,
            &ListOptions {
                limit: 3,
                continue_token: Some("garbage".into()),
                ..Default::default()
            },
        )
        .await
        .err();
    assert_eq!(bad.map(|e| e.code), Some(400));
    // Other logical clusters see nothing of root's objects.
    let other = reg
        .list(
            &cms,
            ListScope {
                cluster: Some(lc("other")),
                namespace: None,
            },
            &ListOptions::default(),
        )
        .await
        .expect("list");
    assert!(other.items.is_empty());
    // The wildcard sees them, each with its cluster.
    let all = reg
        .list(
            &cms,
            ListScope {
                cluster: None,
                namespace: None,
            },
            &ListOptions::default(),
        )
        .await
        .expect("list");
    assert!(all.items.iter().all(|o| o.cluster == "root"));
    assert!(all.items.len() >= 8);
}

/// A continued list whose snapshot is no longer the newest revision is still served from the
/// cache while its resource is unchanged since (writes elsewhere move the revision); once it
/// changed, the snapshot is read from the store, and a compacted one is 410 Expired.
async fn continued_lists_read_the_store_only_after_a_change(h: &Harness) {
    let reg = h.server.registry();
    let cms = def("configmaps");
    let ns = "pages";
    reg.create(
        &def("namespaces"),
        lc("root"),
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        WriteOptions::default(),
    )
    .await
    .expect("namespace");
    for i in 0..5 {
        reg.create(
            &cms,
            lc("root"),
            Some(ns),
            cm(&format!("q{i}"), json!({})),
            WriteOptions::default(),
        )
        .await
        .expect("create");
    }
    let scope = ListScope {
        cluster: Some(lc("root")),
        namespace: Some(ns),
    };
    let page = |token: Option<String>| ListOptions {
        limit: 2,
        continue_token: token,
        ..Default::default()
    };
    let first = reg.list(&cms, scope, &page(None)).await.expect("page 1");
    let token = first.continue_token.clone().expect("continue");
    // A write to another resource, then history compacted past the first page's revision: the
    // store can no longer read that snapshot, the cache still holds it.
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    reg.create(
        &def("secrets"),
        lc("root"),
        Some(ns),
        secret,
        WriteOptions::default(),
    )
    .await
    .expect("secret");
    let now = reg.cache().wait_fresh().await.expect("fresh");
    reg.store().compact(now).await.expect("compact");
    let second = reg
        .list(&cms, scope, &page(Some(token.clone())))
        .await
        .expect("page 2 from the cache");
    assert_eq!(second.revision, first.revision);
    assert_eq!(
        second
            .items
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["q2", "q3"]
    );
    // A ConfigMap changes: the snapshot is gone from the cache, and compacted in the store.
    reg.create(
        &cms,
        lc("root"),
        Some(ns),
        cm("q9", json!({})),
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let now = reg.cache().wait_fresh().await.expect("fresh");
    reg.store().compact(now).await.expect("compact");
    let err = reg
        .list(&cms, scope, &page(Some(token)))
        .await
        .err()
        .expect("expired");
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    // Kubernetes' inconsistent continue: a token for the rest of the list as it is now.
    let rest = err
        .details
        .list_continue
        .clone()
        .expect("a token for the rest");
    assert_eq!(
        err.to_status()["metadata"]["continue"],
        json!(rest),
        "the token is the Status's metadata.continue"
    );
    let next = reg
        .list(&cms, scope, &page(Some(rest)))
        .await
        .expect("the rest, at the latest revision");
    assert_eq!(
        next.items
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["q2", "q3"]
    );
    assert_eq!(next.revision, now);
    // An exact list at a compacted revision is simply too old.
    let exact = ListOptions {
        resource_version: Some(first.revision.to_string()),
        resource_version_match: Some("Exact".into()),
        ..Default::default()
    };
    let err = reg.list(&cms, scope, &exact).await.err().expect("expired");
    assert_eq!(err.code, 410);
    assert_eq!(
        err.message,
        "The resourceVersion for the provided list is too old."
    );
}

async fn watch_resumes_from_a_revision(h: &Harness) {
    let reg = h.server.registry();
    let cms = def("configmaps");
    let a = reg
        .create(
            &cms,
            lc("root"),
            Some("default"),
            cm("w1", json!({})),
            WriteOptions::default(),
        )
        .await
        .expect("create");
    let from = rv(&a.object);
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        cm("w2", json!({})),
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let cache = reg.cache();
    let prefix = kcp_apiserver::registry::keyspace(&cms)
        .all_clusters()
        .to_string();
    let scope = Scope {
        cluster: Some(lc("root").clone()),
        namespace: Some("default".into()),
    };
    // Acknowledged writes may still be on their way into the cache; a consistent reader waits for them.
    cache.wait_fresh().await.expect("fresh");
    let mut sub = cache
        .subscribe(&prefix, scope, Some(from))
        .expect("subscribe");
    assert_eq!(
        sub.backlog
            .iter()
            .map(|e| e.object.name.as_str())
            .collect::<Vec<_>>(),
        vec!["w2"]
    );
    reg.delete(&cms, at("w1"), &DeleteOptions::default())
        .await
        .expect("delete");
    let ev = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match sub.rx.recv().await {
                Some(WatchItem::Event(ev)) => return ev,
                Some(WatchItem::Progress(_)) => continue,
                None => panic!("watch ended"),
            }
        }
    })
    .await
    .expect("event arrives");
    assert_eq!(
        (ev.kind, ev.object.name.as_str()),
        (CacheEventType::Deleted, "w1")
    );
    // A watch cache started later (as after a restart) keeps no history from before its start: a
    // resourceVersion from then is too old (410 Expired).
    let restarted = common::server(reg.store().clone()).await;
    let gone = restarted.registry().cache().subscribe(
        &prefix,
        Scope {
            cluster: None,
            namespace: None,
        },
        Some(from),
    );
    let err = kcp_apiserver::registry::cache_error(
        gone.err().expect("history before the cache start is gone"),
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
}

async fn finalizers_hold_deletion(h: &Harness) {
    let reg = h.server.registry();
    let cms = def("configmaps");
    let mut obj = cm("fin", json!({}));
    obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        obj,
        WriteOptions::default(),
    )
    .await
    .expect("create");
    match reg
        .delete(&cms, at("fin"), &DeleteOptions::default())
        .await
        .expect("delete")
    {
        DeleteOutcome::Pending(w) => {
            assert!(w.object.pointer("/metadata/deletionTimestamp").is_some())
        }
        DeleteOutcome::Deleted(_) => panic!("finalizer must hold the object"),
    }
    // New finalizers may not be added while deleting.
    let err = reg
        .update(
            &cms,
            at("fin"),
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut o = old.clone();
                o["metadata"]["finalizers"] = json!(["example.com/hold", "example.com/more"]);
                Ok(o)
            },
        )
        .await
        .err();
    assert_eq!(err.map(|e| e.code), Some(422));
    // Removing the last finalizer completes the deletion: one write, seen by a watcher as one
    // DELETED event of the last stored state (finalizer still listed), as Kubernetes shows it.
    let cache = reg.cache();
    let from = cache.wait_fresh().await.expect("fresh");
    let prefix = kcp_apiserver::registry::keyspace(&cms)
        .all_clusters()
        .to_string();
    let scope = Scope {
        cluster: Some(lc("root").clone()),
        namespace: Some("default".into()),
    };
    let mut sub = cache
        .subscribe(&prefix, scope, Some(from))
        .expect("subscribe");
    let released = reg
        .update(
            &cms,
            at("fin"),
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut o = old.clone();
                o["metadata"]["finalizers"] = json!([]);
                Ok(o)
            },
        )
        .await
        .expect("release");
    assert_eq!(
        reg.get(&cms, at("fin")).await.err().map(|e| e.code),
        Some(404)
    );
    let ev = match tokio::time::timeout(Duration::from_secs(5), sub.rx.recv()).await {
        Ok(Some(WatchItem::Event(ev))) => ev,
        other => panic!("expected the release's event, got {other:?}"),
    };
    assert_eq!(ev.kind, CacheEventType::Deleted, "no MODIFIED before it");
    assert_eq!(ev.revision, rv(&released.object));
    let last = ev.object.value().expect("json");
    assert_eq!(last["metadata"]["finalizers"], json!(["example.com/hold"]));
    assert_eq!(rv(&last), ev.revision);
    // Preconditions on delete.
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        cm("pre", json!({})),
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let opts = DeleteOptions {
        precondition_uid: Some("wrong".into()),
        ..Default::default()
    };
    assert_eq!(
        reg.delete(&cms, at("pre"), &opts)
            .await
            .err()
            .map(|e| e.code),
        Some(409)
    );
}

async fn namespaces_are_emptied_on_delete(h: &Harness) {
    let reg = h.server.registry();
    let ns = def("namespaces");
    let cms = def("configmaps");
    reg.create(
        &ns,
        lc("root"),
        None,
        json!({"metadata": {"name": "gone"}}),
        WriteOptions::default(),
    )
    .await
    .expect("ns");
    reg.create(
        &cms,
        lc("root"),
        Some("gone"),
        cm("inside", json!({})),
        WriteOptions::default(),
    )
    .await
    .expect("cm");
    let nsref = ObjectRef {
        cluster: lc("root"),
        namespace: None,
        name: "gone",
    };
    match reg
        .delete(&ns, nsref, &DeleteOptions::default())
        .await
        .expect("delete ns")
    {
        DeleteOutcome::Pending(w) => assert_eq!(w.object["status"]["phase"], "Terminating"),
        DeleteOutcome::Deleted(_) => panic!("a namespace waits for its content"),
    }
    // Creating into a namespace known to be terminating is refused (as in Kubernetes, the check reads
    // the cache; content created in the race window is removed by finalization all the same).
    reg.cache().wait_fresh().await.expect("fresh");
    let refused = reg
        .create(
            &cms,
            lc("root"),
            Some("gone"),
            cm("late", json!({})),
            WriteOptions::default(),
        )
        .await
        .err();
    assert_eq!(refused.map(|e| e.code), Some(403));
    // Finalization (which the HTTP delete path starts) empties the namespace, then removes it.
    h.server.finalize_namespaces_now().await;
    assert_eq!(
        reg.get(
            &cms,
            ObjectRef {
                cluster: lc("root"),
                namespace: Some("gone"),
                name: "inside"
            }
        )
        .await
        .err()
        .map(|e| e.code),
        Some(404)
    );
    assert_eq!(reg.get(&ns, nsref).await.err().map(|e| e.code), Some(404));
}

/// `create_all` writes objects that belong together, a namespace with its content included, in
/// one step: all of them, prepared as single creates are, or none.
async fn objects_created_together(h: &Harness) {
    let reg = h.server.registry();
    let (ns, cms, sas) = (def("namespaces"), def("configmaps"), def("serviceaccounts"));
    let new = |def, namespace, object| NewObject {
        def,
        cluster: lc("together"),
        namespace,
        object,
    };
    let sa = |name: &str| json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}});
    let written = reg
        .create_all(vec![
            new(
                &ns,
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}),
            ),
            new(&cms, Some("fresh"), cm("a", json!({"k": "1"}))),
            new(&sas, Some("fresh"), sa("robot")),
        ])
        .await
        .expect("created together");
    assert_eq!(written.len(), 3);
    let revisions: Vec<i64> = written.iter().map(|w| rv(&w.object)).collect();
    assert!(revisions.windows(2).all(|w| w[0] <= w[1]), "{revisions:?}");
    let get = |def, namespace, name| {
        reg.get(
            def,
            ObjectRef {
                cluster: lc("together"),
                namespace,
                name,
            },
        )
    };
    let stored = get(&cms, Some("fresh"), "a").await.expect("configmap");
    let stored = stored.value().expect("readable");
    assert_eq!(rv(&stored), revisions[1]);
    assert_eq!(
        stored["metadata"]["uid"],
        written[1].object["metadata"]["uid"]
    );
    assert_eq!(
        stored["metadata"]["annotations"]["kcp.io/cluster"],
        "together"
    );
    let namespace = get(&ns, None, "fresh").await.expect("namespace");
    let namespace = namespace.value().expect("readable");
    assert_eq!(namespace["status"]["phase"], "Active", "{namespace}");

    // Refused whole, naming what was refused: a name taken, an object in a namespace that is not
    // there, an invalid name.
    let refusals = [
        (
            vec![
                new(&cms, Some("fresh"), cm("b", json!({}))),
                new(&sas, Some("fresh"), sa("robot")),
            ],
            (409, "AlreadyExists", r#"serviceaccounts "robot""#),
        ),
        (
            vec![
                new(&cms, Some("fresh"), cm("b", json!({}))),
                new(&sas, Some("nowhere"), sa("robot")),
            ],
            (404, "NotFound", r#"namespaces "nowhere""#),
        ),
        (
            vec![
                new(&cms, Some("fresh"), cm("b", json!({}))),
                new(&sas, Some("fresh"), sa("Not_A_Name")),
            ],
            (422, "Invalid", r#"ServiceAccount "Not_A_Name""#),
        ),
    ];
    for (objects, (code, reason, names)) in refusals {
        let err = reg.create_all(objects).await.err().expect("refused");
        assert_eq!((err.code, err.reason.as_str()), (code, reason), "{err:?}");
        assert!(err.message.contains(names), "{err:?}");
        let half = get(&cms, Some("fresh"), "b").await.err().map(|e| e.code);
        assert_eq!(half, Some(404), "nothing of a refused call is written");
    }
}

/// `write_batch` creates, updates and checks in one step: the update made as `update` makes it,
/// from the object as read; refused whole when that object changed since or a required object
/// is missing.
async fn creates_updates_and_requirements_in_one_write(h: &Harness) {
    let reg = h.server.registry();
    let (ns, cms) = (def("namespaces"), def("configmaps"));
    let held = reg
        .create(
            &cms,
            lc("root"),
            Some("default"),
            cm("held", json!({"k": "1"})),
            WriteOptions::default(),
        )
        .await
        .expect("create");
    let old = held.object;
    let namespace = |name: &str| NewObject {
        def: &ns,
        cluster: lc("batch"),
        namespace: None,
        object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    };
    let required = |name| {
        (
            &ns,
            ObjectRef {
                cluster: lc("root"),
                namespace: None,
                name,
            },
        )
    };
    let batch = |name: &str, revision: i64, requires: &'static str| Batch {
        creates: vec![namespace(name)],
        updates: vec![ObjectUpdate {
            def: &cms,
            at: at("held"),
            kind: UpdateKind::Main,
            old: &old,
            revision,
            desired: cm("held", json!({"k": name})),
        }],
        requires: vec![required(requires)],
        ..Batch::default()
    };
    let ns_def = &ns;
    let ns_code = |name| async move {
        let at = ObjectRef {
            cluster: lc("batch"),
            namespace: None,
            name,
        };
        reg.get(ns_def, at).await.err().map(|e| e.code)
    };

    // Refused whole, naming what was refused.
    let stale = reg
        .write_batch(batch("stale", rv(&old) - 1, "default"))
        .await
        .err()
        .expect("a changed object is refused");
    assert_eq!(
        (stale.code, stale.reason.as_str()),
        (409, "Conflict"),
        "{stale:?}"
    );
    assert!(stale.message.contains(r#"configmaps "held""#), "{stale:?}");
    let missing = reg
        .write_batch(batch("missing", rv(&old), "nowhere"))
        .await
        .err()
        .expect("a missing requirement is refused");
    assert_eq!(
        (missing.code, missing.reason.as_str()),
        (404, "NotFound"),
        "{missing:?}"
    );
    assert!(
        missing.message.contains(r#"namespaces "nowhere""#),
        "{missing:?}"
    );
    assert_eq!(
        ns_code("stale").await,
        Some(404),
        "nothing of a refused call is written"
    );
    assert_eq!(
        ns_code("missing").await,
        Some(404),
        "nothing of a refused call is written"
    );
    let unchanged = reg.get(&cms, at("held")).await.expect("held");
    assert_eq!(unchanged.value().expect("json")["data"]["k"], "1");

    let written = reg
        .write_batch(batch("made", rv(&old), "default"))
        .await
        .expect("written together");
    assert_eq!((written.created.len(), written.updated.len()), (1, 1));
    assert_eq!(ns_code("made").await, None, "created");
    let updated = reg.get(&cms, at("held")).await.expect("held");
    let updated = updated.value().expect("json");
    assert_eq!(updated["data"]["k"], "made");
    assert_eq!(rv(&updated), rv(&written.updated[0].object));
    assert_eq!(updated["metadata"]["uid"], old["metadata"]["uid"]);
}

/// `write_batch` deletes as a DELETE does: an object with finalizers is marked deleting, one
/// without is removed; an update that removes a deleting object's last finalizer removes it. All
/// in one write, from the objects as read, refused whole when one has changed since.
async fn deletions_in_one_write(h: &Harness) {
    let reg = h.server.registry();
    let (cms, secrets) = (def("configmaps"), def("secrets"));
    let held = |name: &str| {
        let mut obj = cm(name, json!({}));
        obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
        obj
    };
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}});
    let mut read = Vec::new();
    for (d, obj) in [(&cms, held("marked")), (&secrets, secret)] {
        let w = reg
            .create(d, lc("root"), Some("default"), obj, WriteOptions::default())
            .await
            .expect("create");
        read.push(w.object);
    }
    // A third object, already deleting, whose last finalizer the batch removes.
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        held("released"),
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let DeleteOutcome::Pending(releasing) = reg
        .delete(&cms, at("released"), &DeleteOptions::default())
        .await
        .expect("delete")
    else {
        panic!("held by its finalizer");
    };
    let releasing = releasing.object;
    let mut released = releasing.clone();
    released["metadata"]["finalizers"] = json!([]);
    // Different resources, as the store's rule asks: the release is of ConfigMaps, so the
    // marking goes in a batch of its own.
    let batch = |marked_rev: i64| Batch {
        deletes: vec![
            ObjectDeletion {
                def: &cms,
                at: at("marked"),
                old: &read[0],
                revision: marked_rev,
            },
            ObjectDeletion {
                def: &secrets,
                at: at("plain"),
                old: &read[1],
                revision: rv(&read[1]),
            },
        ],
        ..Batch::default()
    };
    let stale = reg
        .write_batch(batch(rv(&read[0]) - 1))
        .await
        .err()
        .expect("a changed object is refused");
    assert_eq!(stale.code, 409, "{stale:?}");
    let plain_code = || async { reg.get(&secrets, at("plain")).await.err().map(|e| e.code) };
    assert_eq!(
        plain_code().await,
        None,
        "nothing of a refused call is written"
    );

    let written = reg
        .write_batch(batch(rv(&read[0])))
        .await
        .expect("written together");
    let marked = reg.get(&cms, at("marked")).await.expect("still there");
    let marked = marked.value().expect("json");
    assert!(marked.pointer("/metadata/deletionTimestamp").is_some());
    assert_eq!(rv(&marked), rv(&written.deleted[0].object));
    assert_eq!(plain_code().await, Some(404), "removed");

    let release = Batch {
        updates: vec![ObjectUpdate {
            def: &cms,
            at: at("released"),
            kind: UpdateKind::Main,
            old: &releasing,
            revision: rv(&releasing),
            desired: released,
        }],
        ..Batch::default()
    };
    reg.write_batch(release).await.expect("released");
    assert_eq!(
        reg.get(&cms, at("released")).await.err().map(|e| e.code),
        Some(404),
        "its last finalizer gone, it is removed"
    );
}

/// What `add_companions` brings along is created in the create's own store write, before the
/// object; a companion whose name is taken is left out, and the create still happens; a create
/// that does not happen brings nothing.
async fn creates_bring_their_companions(h: &Harness) {
    let reg = h.server.registry();
    let cms = def("configmaps");
    let companion_def = std::sync::Arc::new(def("namespaces"));
    // A ConfigMap labelled `brings: <ns>` brings namespace `<ns>` of LC `companions`.
    reg.add_companions(std::sync::Arc::new(move |def, _cluster, obj| {
        let brings = obj
            .pointer("/metadata/labels/brings")
            .and_then(Value::as_str);
        match (def.plural.as_str(), brings) {
            ("configmaps", Some(ns)) => vec![Companion {
                def: companion_def.clone(),
                cluster: lc("companions").clone(),
                namespace: None,
                object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            }],
            _ => Vec::new(),
        }
    }));
    let ns_def = def("namespaces");
    let namespace = |name| {
        let at = ObjectRef {
            cluster: lc("companions"),
            namespace: None,
            name,
        };
        reg.get(&ns_def, at)
    };
    let create = |name: &str, brings: &str, data: Value, dry_run: bool| {
        let mut object = cm(name, data);
        if !brings.is_empty() {
            object["metadata"]["labels"] = json!({"brings": brings});
        }
        let opts = WriteOptions {
            dry_run,
            ..WriteOptions::default()
        };
        reg.create(&cms, lc("root"), Some("default"), object, opts)
    };
    let first = create("first", "alpha", json!({}), false)
        .await
        .expect("create");
    let alpha = namespace("alpha").await.expect("the companion was created");
    let alpha = alpha.value().expect("json");
    assert!(
        rv(&alpha) <= rv(&first.object),
        "written with or before the object"
    );
    assert_eq!(
        alpha["status"]["phase"], "Active",
        "prepared as creates are"
    );

    // Its name taken now: left out, the ConfigMap created all the same, the namespace untouched.
    let second = create("second", "alpha", json!({}), false)
        .await
        .expect("created without its companion");
    assert!(rv(&second.object) > rv(&first.object));
    let kept = namespace("alpha").await.expect("still there");
    assert_eq!(rv(&kept.value().expect("json")), rv(&alpha));

    // A create that does not happen brings nothing: its own name taken (the companion's free),
    // refused by validation, a dry run.
    let taken = create("first", "beta", json!({}), false).await.err();
    let taken = taken.expect("the object's own name is checked as always");
    assert_eq!((taken.code, taken.reason.as_str()), (409, "AlreadyExists"));
    assert!(taken.message.contains(r#"configmaps "first""#), "{taken:?}");
    let invalid = create("third", "gamma", json!({"not a key!": "x"}), false).await;
    assert_eq!(invalid.err().map(|e| e.code), Some(422));
    create("fourth", "delta", json!({}), true)
        .await
        .expect("dry run");
    for ns in ["beta", "gamma", "delta"] {
        let code = namespace(ns).await.err().map(|e| e.code);
        assert_eq!(code, Some(404), "no companion {ns}");
    }
}

/// Companions of companions come first, namespaced ones may live in a namespace created beside
/// them, a resource the write already holds is not added again, and batches bring them too.
async fn companions_of_companions_and_batches(h: &Harness) {
    let reg = h.server.registry();
    let (cms, ns_def, secrets) = (def("configmaps"), def("namespaces"), def("secrets"));
    let namespaces = std::sync::Arc::new(def("namespaces"));
    let secret_def = std::sync::Arc::new(def("secrets"));
    let cm_def = std::sync::Arc::new(def("configmaps"));
    // A ConfigMap labelled `brings: <ns>` brings namespace `<ns>` of LC `chain`, which brings a
    // Secret `token` and a ConfigMap `extra` in itself.
    reg.add_companions(std::sync::Arc::new(move |def, cluster, obj| {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str);
        let brings = obj
            .pointer("/metadata/labels/brings")
            .and_then(Value::as_str);
        match (def.plural.as_str(), brings, name) {
            ("configmaps", Some(ns), _) => vec![Companion {
                def: namespaces.clone(),
                cluster: lc("chain").clone(),
                namespace: None,
                object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            }],
            ("namespaces", _, Some(ns)) if cluster == "chain" => vec![
                Companion {
                    def: secret_def.clone(),
                    cluster: cluster.clone(),
                    namespace: Some(ns.into()),
                    object: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}}),
                },
                Companion {
                    def: cm_def.clone(),
                    cluster: cluster.clone(),
                    namespace: Some(ns.into()),
                    object: cm("extra", json!({})),
                },
            ],
            _ => Vec::new(),
        }
    }));
    let in_chain = |namespace, name| ObjectRef {
        cluster: lc("chain"),
        namespace,
        name,
    };
    let revision_of =
        |found: Result<std::sync::Arc<kcp_apiserver::watch_cache::CachedObject>, _>| {
            let found: std::sync::Arc<kcp_apiserver::watch_cache::CachedObject> =
                found.expect("found");
            rv(&found.value().expect("json"))
        };

    let mut object = cm("bringer", json!({}));
    object["metadata"]["labels"] = json!({"brings": "one"});
    let created = reg
        .create(
            &cms,
            lc("root"),
            Some("default"),
            object,
            WriteOptions::default(),
        )
        .await
        .expect("create");
    let ns = revision_of(reg.get(&ns_def, in_chain(None, "one")).await);
    let token = revision_of(reg.get(&secrets, in_chain(Some("one"), "token")).await);
    assert!(token <= ns && ns <= rv(&created.object), "{token} {ns}");
    let extra = reg.get(&cms, in_chain(Some("one"), "extra")).await.err();
    assert_eq!(
        extra.map(|e| e.code),
        Some(404),
        "the write already holds a ConfigMap"
    );

    // A batch's namespace brings its companions too, unless the batch writes that resource.
    let new_namespace = |name: &'static str| NewObject {
        def: &ns_def,
        cluster: lc("chain"),
        namespace: None,
        object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    };
    let written = reg
        .create_all(vec![new_namespace("two")])
        .await
        .expect("create_all");
    assert_eq!(written.len(), 1, "the caller's objects alone are answered");
    assert_eq!(written[0].object["metadata"]["name"], "two");
    let ns = rv(&written[0].object);
    let token = revision_of(reg.get(&secrets, in_chain(Some("two"), "token")).await);
    let extra = revision_of(reg.get(&cms, in_chain(Some("two"), "extra")).await);
    assert!(token <= ns && extra <= ns, "{token} {extra} {ns}");
    let own_secret = NewObject {
        def: &secrets,
        cluster: lc("chain"),
        namespace: Some("three"),
        object: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mine"}}),
    };
    reg.create_all(vec![new_namespace("three"), own_secret])
        .await
        .expect("create_all");
    reg.get(&secrets, in_chain(Some("three"), "mine"))
        .await
        .expect("the batch's own secret");
    let token = reg
        .get(&secrets, in_chain(Some("three"), "token"))
        .await
        .err();
    assert_eq!(token.map(|e| e.code), Some(404));
    reg.get(&cms, in_chain(Some("three"), "extra"))
        .await
        .expect("another resource's companion");
}

fn events_def() -> ResourceDef {
    common::builtin("events.k8s.io", "events")
}

async fn events_are_one_set_of_objects_in_two_apis(h: &Harness) {
    let reg = h.server.registry();
    let core = def("events");
    let events = events_def();
    let scope = ListScope {
        cluster: Some(lc("root")),
        namespace: Some("default"),
    };
    // Written through events.k8s.io/v1, read through core/v1 ...
    let obj = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
        "eventTime": "2026-11-21T10:00:00.000000Z", "reportingController": "ctl", "reportingInstance": "ctl-1",
        "action": "Poke", "reason": "Poked", "type": "Normal", "note": "hello",
        "regarding": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
    });
    let created = reg
        .create(
            &events,
            lc("root"),
            Some("default"),
            obj,
            WriteOptions::default(),
        )
        .await
        .expect("create");
    assert_eq!(created.object["note"], "hello");
    let as_core = reg
        .get(&core, at("e1"))
        .await
        .expect("core view")
        .value()
        .expect("json");
    assert_eq!(
        (as_core["apiVersion"].as_str(), as_core["message"].as_str()),
        (Some("v1"), Some("hello"))
    );
    assert_eq!(as_core["involvedObject"]["name"], "c");
    assert_eq!(as_core["reportingComponent"], "ctl");
    // ... and the other way round, including lists and field selectors of each API.
    let core_obj = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e2"}, "message": "from core", "reason": "R", "type": "Warning", "involvedObject": {"kind": "Secret", "name": "s"}});
    reg.create(
        &core,
        lc("root"),
        Some("default"),
        core_obj,
        WriteOptions::default(),
    )
    .await
    .expect("create core");
    let listed = reg
        .list(&events, scope, &ListOptions::default())
        .await
        .expect("list");
    let notes: Vec<String> = listed
        .items
        .iter()
        .map(|o| {
            o.value().expect("json")["note"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(notes, ["hello", "from core"]);
    let selected = ListOptions {
        selectors: kcp_apiserver::registry::Selectors::parse(
            &events,
            None,
            Some("regarding.kind=Secret"),
        )
        .expect("selector"),
        ..Default::default()
    };
    let only = reg.list(&events, scope, &selected).await.expect("list");
    assert_eq!(
        only.items
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["e2"]
    );
    // Updating through one API keeps the other's view in step.
    let series = json!({"count": 2, "lastObservedTime": "2026-11-21T10:01:00.000000Z"});
    reg.update(
        &events,
        at("e2"),
        UpdateKind::Main,
        WriteOptions::default(),
        |old| {
            let mut o = old.clone();
            o["series"] = series.clone();
            Ok(o)
        },
    )
    .await
    .expect("update");
    let as_core = reg
        .get(&core, at("e2"))
        .await
        .expect("core view")
        .value()
        .expect("json");
    assert_eq!(as_core["series"], series);
    assert!(as_core.get("note").is_none());
    // What happened is fixed through events.k8s.io/v1 (Kubernetes validates by the request's
    // version), not through core/v1.
    let renote = |field: &'static str| {
        move |old: &Value| {
            let mut o = old.clone();
            o[field] = json!("changed");
            Ok(o)
        }
    };
    let err = reg
        .update(
            &events,
            at("e2"),
            UpdateKind::Main,
            WriteOptions::default(),
            renote("note"),
        )
        .await
        .err()
        .expect("immutable");
    assert_eq!(err.code, 422);
    assert_eq!(err.details.causes[0].field, "message");
    reg.update(
        &core,
        at("e2"),
        UpdateKind::Main,
        WriteOptions::default(),
        renote("message"),
    )
    .await
    .expect("core/v1 may change it");
}

async fn kind_rules_are_enforced(h: &Harness) {
    let reg = h.server.registry();
    let rbs = common::builtin("rbac.authorization.k8s.io", "rolebindings");
    // Required fields of the kind's schema are 422 with one cause each.
    let missing = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"}, "subjects": [{"kind": "User"}]});
    let err = reg
        .create(
            &rbs,
            lc("root"),
            Some("default"),
            missing,
            WriteOptions::default(),
        )
        .await
        .err()
        .expect("invalid");
    assert_eq!(err.code, 422);
    let fields: Vec<&str> = err
        .details
        .causes
        .iter()
        .map(|c| c.field.as_str())
        .collect();
    assert_eq!(fields, ["roleRef", "subjects[0].name"]);
    assert!(
        err.details
            .causes
            .iter()
            .all(|c| c.reason == "FieldValueRequired")
    );
    // A binding's roleRef cannot change.
    let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"}});
    reg.create(
        &rbs,
        lc("root"),
        Some("default"),
        rb,
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let err = reg
        .update(
            &rbs,
            at("rb"),
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut o = old.clone();
                o["roleRef"]["name"] = json!("b");
                Ok(o)
            },
        )
        .await
        .err()
        .expect("immutable");
    assert_eq!(
        (
            err.code,
            err.details.causes.first().map(|c| c.field.as_str())
        ),
        (422, Some("roleRef"))
    );
}

/// Every write the registry prepares is decoded as a request body would be, and repeated owner
/// references are dropped with Kubernetes' warning, whoever writes (not only the HTTP handler).
async fn writes_are_decoded_and_owner_references_deduplicated(h: &Harness) {
    let reg = h.server.registry();
    let cms = def("configmaps");
    let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"});
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "p", "uid": "u2"});
    // Same uid, another entry: kept, as Kubernetes keeps it.
    let same_uid = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1", "controller": true});
    let mut obj = cm("owned", json!({}));
    obj["metadata"]["ownerReferences"] = json!([owner, other, owner, same_uid]);
    let (created, warnings) = kcp_apiserver::admission::warnings::collect(reg.create(
        &cms,
        lc("root"),
        Some("default"),
        obj,
        WriteOptions::default(),
    ))
    .await;
    let created = created.expect("create");
    assert_eq!(
        created.object["metadata"]["ownerReferences"],
        json!([owner, other, same_uid])
    );
    assert_eq!(
        warnings,
        [
            ".metadata.ownerReferences contains duplicate entries; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: u1"
        ]
    );
    let (updated, warnings) = kcp_apiserver::admission::warnings::collect(reg.update(
        &cms,
        at("owned"),
        UpdateKind::Main,
        WriteOptions::default(),
        |old| {
            let mut o = old.clone();
            o["metadata"]["ownerReferences"] = json!([other, other, other]);
            Ok(o)
        },
    ))
    .await;
    assert_eq!(
        updated.expect("update").object["metadata"]["ownerReferences"],
        json!([other])
    );
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].ends_with("observed: u2, u2"), "{warnings:?}");
    // A Secret's stringData lands in data on an update that no handler decoded.
    let secrets = def("secrets");
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": "YQ=="}});
    reg.create(
        &secrets,
        lc("root"),
        Some("default"),
        secret,
        WriteOptions::default(),
    )
    .await
    .expect("create secret");
    let updated = reg
        .update(
            &secrets,
            at("s"),
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut o = old.clone();
                o["stringData"] = json!({"b": "bee"});
                Ok(o)
            },
        )
        .await
        .expect("update secret");
    assert_eq!(updated.object["data"], json!({"a": "YQ==", "b": "YmVl"}));
    assert!(updated.object.get("stringData").is_none());
}

on_both_stores!(conflicts_and_versions);
on_both_stores!(writes_are_decoded_and_owner_references_deduplicated);
on_both_stores!(pagination_is_a_snapshot);
on_both_stores!(continued_lists_read_the_store_only_after_a_change);
on_both_stores!(watch_resumes_from_a_revision);
on_both_stores!(finalizers_hold_deletion);
on_both_stores!(namespaces_are_emptied_on_delete);
on_both_stores!(events_are_one_set_of_objects_in_two_apis);
on_both_stores!(kind_rules_are_enforced);
on_both_stores!(objects_created_together);
on_both_stores!(creates_updates_and_requirements_in_one_write);
on_both_stores!(deletions_in_one_write);
on_both_stores!(creates_bring_their_companions);
on_both_stores!(companions_of_companions_and_batches);
