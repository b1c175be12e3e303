//! Workspace types as `workspace_types::Types` reads them from the cache, on both stores: a changed or
//! deleted type is seen at once (type specs are parsed once per version and kept).

mod common;

use kcp_apiserver::on_both_stores;
use kcp_apiserver::registry::{DeleteOptions, ObjectRef, UpdateKind, WriteOptions};
use kcp_apiserver::testing::lc;
use kcp_tenancy::workspace_types::{TypeRef, Types};
use serde_json::json;

use common::Harness;

async fn changed_types_are_seen(h: &Harness) {
    let server = &h.h.server;
    let reg = server.registry();
    let def = common::builtin("tenancy.kcp.io", "workspacetypes");
    let wt = |children: &str| {
        json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
               "metadata": {"name": "squad"},
               "spec": {"limitAllowedChildren": {"types": [{"name": children, "path": "root"}]}}})
    };
    reg.create(&def, lc("root"), None, wt("a"), WriteOptions::default())
        .await
        .expect("create");
    let types = Types {
        cache: reg.cache(),
        paths: h.tenancy.paths(),
    };
    let squad = TypeRef {
        path: "root".into(),
        name: "squad".into(),
    };
    let allowed = |types: &Types<'_>| {
        types
            .get(&squad)
            .map(|t| t.spec["limitAllowedChildren"]["types"][0]["name"].clone())
    };
    reg.cache().wait_fresh().await.expect("cache");
    assert_eq!(allowed(&types), Some(json!("a")));
    // Asked again: the same answer from the kept spec.
    assert_eq!(allowed(&types), Some(json!("a")));

    let at = ObjectRef {
        cluster: lc("root"),
        namespace: None,
        name: "squad",
    };
    reg.update(&def, at, UpdateKind::Main, WriteOptions::default(), |_| {
        Ok(wt("b"))
    })
    .await
    .expect("update");
    reg.cache().wait_fresh().await.expect("cache");
    assert_eq!(allowed(&types), Some(json!("b")));

    reg.delete(&def, at, &DeleteOptions::default())
        .await
        .expect("delete");
    reg.cache().wait_fresh().await.expect("cache");
    assert_eq!(allowed(&types), None);
}

on_both_stores!(with common::harness; changed_types_are_seen);
