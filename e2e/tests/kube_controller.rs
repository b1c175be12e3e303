//! A kube-rs `runtime::Controller` reconciling a custom resource against the real shard, on both
//! stores: it adds a finalizer, writes status through the status subresource, follows spec changes,
//! and runs its cleanup when the object is deleted.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kcp_e2e::{EVENTUALLY, Shard, StoreKind, on_both_stores};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::Mutex;

on_both_stores!(async controller_reconciles_with_finalizer_and_status);

const FINALIZER: &str = "example.com/cleanup";

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
    #[error("finalizer: {0}")]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<ReconcileError>>),
}

struct Ctx {
    api: Api<DynamicObject>,
    cleaned: Mutex<Vec<String>>,
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let api = ctx.api.clone();
    finalizer(&api, FINALIZER, obj, |event| async {
        match event {
            Event::Apply(w) => {
                let size = w.data["spec"]["size"].clone();
                let name = w.metadata.name.clone().unwrap_or_default();
                let status = json!({"status": {"phase": "Ready", "observedSize": size}});
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                    .await?;
                Ok(Action::await_change())
            }
            Event::Cleanup(w) => {
                ctx.cleaned
                    .lock()
                    .await
                    .push(w.metadata.name.clone().unwrap_or_default());
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| ReconcileError::Finalizer(Box::new(e)))
}

fn error_policy(_obj: Arc<DynamicObject>, _err: &ReconcileError, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

async fn controller_reconciles_with_finalizer_and_status(store: StoreKind) {
    let shard = Shard::start(store);
    let client = shard.kube_client().await;

    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string"}, "observedSize": {"type": "integer"}}}
                }}}
            }]
        }
    }))
    .expect("CRD value");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("CRD created");
    let established = tokio::time::timeout(EVENTUALLY, async {
        loop {
            let got = crds.get("widgets.example.com").await.expect("get CRD");
            let ok = got.status.and_then(|s| s.conditions).is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
            if ok {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(established.is_ok(), "the CRD never became Established");

    let ar = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let ctx = Arc::new(Ctx {
        api: api.clone(),
        cleaned: Mutex::new(Vec::new()),
    });
    let controller = Controller::new_with(api.clone(), watcher::Config::default(), ar.clone())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);

    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"size": 3}
    }))
    .expect("widget value");
    api.create(&PostParams::default(), &widget)
        .await
        .expect("widget created");

    let wait_for = |what: &'static str, check: fn(&DynamicObject) -> bool| {
        let api = api.clone();
        async move {
            let found = tokio::time::timeout(EVENTUALLY, async {
                loop {
                    if let Ok(obj) = api.get("w1").await
                        && check(&obj)
                    {
                        return obj;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .await;
            found.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        }
    };
    let ready = wait_for("status Ready with size 3", |o| {
        o.data["status"]["phase"] == "Ready" && o.data["status"]["observedSize"] == 3
    })
    .await;
    assert_eq!(
        ready.metadata.finalizers.as_deref(),
        Some(&[FINALIZER.to_string()][..])
    );

    // A spec change is reconciled into status.
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 5}})),
    )
    .await
    .expect("spec patched");
    wait_for("observedSize 5", |o| o.data["status"]["observedSize"] == 5).await;

    // Deletion waits for the controller's cleanup, which releases the finalizer.
    api.delete("w1", &DeleteParams::default())
        .await
        .expect("delete accepted");
    let gone = tokio::time::timeout(EVENTUALLY, async {
        loop {
            if let Err(kube::Error::Api(e)) = api.get("w1").await
                && e.code == 404
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the widget was never deleted");
    assert_eq!(*ctx.cleaned.lock().await, vec!["w1".to_string()]);
    controller.abort();
}
