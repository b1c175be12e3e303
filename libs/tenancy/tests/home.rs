//! The home-workspace hook answers `GET workspaces/~` in root and nothing else, on both stores: any
//! other request goes on untouched and makes no home.

mod common;

use http::Method;
use kcp_apiserver::hooks::RequestHook;
use kcp_apiserver::on_both_stores;
use kcp_auth::UserInfo;
use kcp_http::request_info::{VerbHints, parse};

use common::Harness;

async fn only_the_home_request_is_answered(h: &Harness) {
    let server = &h.h.server;
    let hook = kcp_tenancy::home::HomeWorkspaces::new(h.tenancy.paths().clone());
    let user = UserInfo {
        name: "alice".into(),
        groups: vec!["system:authenticated".into()],
        ..UserInfo::default()
    };
    let home = kcp_api_types::tenancy::home_cluster_name("alice");
    let request = |path: &str| parse(&Method::GET, path, VerbHints { watch: false });
    for other in [
        "/clusters/root/api/v1/configmaps",
        "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces",
        "/clusters/other/apis/tenancy.kcp.io/v1alpha1/workspaces/~",
    ] {
        assert!(
            hook.answer(server, &request(other), &user).await.is_none(),
            "{other}"
        );
    }
    server.registry().cache().wait_fresh().await.expect("cache");
    assert!(
        (server.logical_cluster(&home).await)
            .expect("lookup")
            .is_none(),
        "a request that is not the home's made one"
    );
    let asked = request("/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~");
    assert!(hook.answer(server, &asked, &user).await.is_some());
}

on_both_stores!(with common::harness; only_the_home_request_is_answered);
