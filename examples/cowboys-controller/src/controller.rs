//! The controller: follow the endpoint slice's URLs; for each, watch Cowboys across all
//! workspaces (`<url>/clusters/*`) and write each one's status in its own workspace
//! (`<url>/clusters/<logical cluster>`, named by the object's `kcp.io/cluster` annotation).
//!
//! Objects of different workspaces may share a namespace and name, so they are told apart by
//! their logical cluster: this is why the watch stream is reconciled object by object rather than
//! through kube-runtime's `Controller`, whose store is keyed by namespace and name alone.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Config};
use serde_json::{Value, json};

/// How often the slice is read again for URLs that came or went.
const SLICE_POLL: Duration = Duration::from_secs(2);

fn cowboys() -> ApiResource {
    ApiResource {
        group: "wildwest.dev".into(),
        version: "v1alpha1".into(),
        api_version: "wildwest.dev/v1alpha1".into(),
        kind: "Cowboy".into(),
        plural: "cowboys".into(),
    }
}

fn endpoint_slices() -> ApiResource {
    ApiResource {
        group: "apis.kcp.io".into(),
        version: "v1alpha1".into(),
        api_version: "apis.kcp.io/v1alpha1".into(),
        kind: "APIExportEndpointSlice".into(),
        plural: "apiexportendpointslices".into(),
    }
}

/// The client configuration of the provider's workspace.
pub async fn provider_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    server: Option<&str>,
) -> anyhow::Result<Config> {
    // kube's TLS is rustls; it needs a process-wide crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let mut config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path).context("reading the kubeconfig")?;
            Config::from_custom_kubeconfig(file, &options).await?
        }
        None => Config::from_kubeconfig(&options).await?,
    };
    if let Some(server) = server {
        config.cluster_url = server.parse().context("--server")?;
    }
    Ok(config)
}

/// Runs until the process is stopped: one reconciling task per URL the slice lists.
pub async fn run(provider: Config, slice: &str, name: &str) -> anyhow::Result<()> {
    let slices =
        Api::<DynamicObject>::all_with(Client::try_from(provider.clone())?, &endpoint_slices());
    let mut running: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
    loop {
        let urls: HashSet<String> = match slices.get_opt(slice).await {
            Ok(Some(s)) => (s.data["status"]["endpoints"].as_array().into_iter())
                .flatten()
                .filter_map(|e| e["url"].as_str())
                .map(str::to_string)
                .collect(),
            Ok(None) => {
                tracing::warn!(slice, "endpoint slice not found");
                HashSet::new()
            }
            Err(err) => {
                tracing::warn!(slice, error = %err, "reading the endpoint slice");
                running.keys().cloned().collect()
            }
        };
        running.retain(|url, task| {
            let keep = urls.contains(url);
            if !keep {
                tracing::info!(url, "endpoint gone; stopping");
                task.abort();
            }
            keep
        });
        for url in urls {
            if running.contains_key(&url) {
                continue;
            }
            tracing::info!(url, "endpoint found; reconciling its Cowboys");
            let endpoint = Endpoint {
                base: provider.clone(),
                url: url.clone(),
                name: name.to_string(),
                clients: HashMap::new(),
            };
            running.insert(url, tokio::spawn(endpoint.reconcile_all()));
        }
        tokio::time::sleep(SLICE_POLL).await;
    }
}

/// One virtual-workspace URL of the slice.
struct Endpoint {
    /// Credentials and trust come from the provider's configuration; only the URL changes.
    base: Config,
    url: String,
    name: String,
    /// A client per logical cluster written to.
    clients: HashMap<String, Client>,
}

impl Endpoint {
    fn client(&self, cluster: &str) -> anyhow::Result<Client> {
        let mut config = self.base.clone();
        config.cluster_url = format!("{}/clusters/{cluster}", self.url).parse()?;
        Ok(Client::try_from(config)?)
    }

    /// Watches the Cowboys of every workspace behind the URL (a list, then a watch from its
    /// resourceVersion, relisting when told to) and reconciles each as it comes.
    async fn reconcile_all(mut self) {
        let all = match self.client("*") {
            Ok(client) => Api::<DynamicObject>::all_with(client, &cowboys()),
            Err(err) => {
                tracing::error!(url = self.url, error = %err, "no client for the endpoint");
                return;
            }
        };
        let mut events = watcher(all, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        loop {
            match events.try_next().await {
                Ok(Some(cowboy)) => {
                    if let Err(err) = self.reconcile(&cowboy).await {
                        tracing::warn!(error = %err, "reconcile failed; it is retried on its next change");
                    }
                }
                Ok(None) => return,
                Err(err) => tracing::warn!(error = %err, "watch interrupted; resuming"),
            }
        }
    }

    /// `status.result` becomes `<name>: <spec.intent>`, written in the Cowboy's own workspace.
    async fn reconcile(&mut self, cowboy: &DynamicObject) -> anyhow::Result<()> {
        let meta = &cowboy.metadata;
        let cluster = (meta.annotations.as_ref())
            .and_then(|a| a.get("kcp.io/cluster"))
            .context("a Cowboy without its kcp.io/cluster annotation")?;
        let (Some(namespace), Some(object)) = (&meta.namespace, &meta.name) else {
            return Ok(());
        };
        let intent = cowboy.data["spec"]["intent"].as_str().unwrap_or_default();
        let wanted = format!("{}: {intent}", self.name);
        if cowboy.data["status"]["result"] == Value::String(wanted.clone()) {
            return Ok(());
        }
        let client = match self.clients.get(cluster) {
            Some(client) => client.clone(),
            None => {
                let client = self.client(cluster)?;
                self.clients.insert(cluster.clone(), client.clone());
                client
            }
        };
        let api = Api::<DynamicObject>::namespaced_with(client, namespace, &cowboys());
        api.patch_status(
            object,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"result": wanted}})),
        )
        .await?;
        tracing::info!(
            cluster,
            namespace,
            name = object,
            result = wanted,
            "reconciled"
        );
        Ok(())
    }
}
