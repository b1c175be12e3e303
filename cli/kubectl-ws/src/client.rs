//! The few HTTP calls the plugin makes, through kube's client so that the kubeconfig's CA, client
//! certificate/key, token or exec plugin are honoured exactly as kubectl would.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;

use crate::claims::{Binding, BindingList};
use crate::overrides::Overrides;
use crate::path::WorkspacePath;
use crate::workspace::{Workspace, WorkspaceList};

const WORKSPACES: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";
/// How long to sit through 429 answers while the home workspace is created; kcp's handler gives up after a
/// minute of `Retry-After: 1`, so this leaves it that minute and some slack.
const HOME_WAIT: Duration = Duration::from_secs(90);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A Kubernetes error answer; the message is the Status message, as kubectl shows it.
    #[error("{message}")]
    Api { code: u16, message: String },
    #[error("loading client configuration from {path}: {message}")]
    Config { path: String, message: String },
    #[error("{method} {path}: {message}")]
    Transport {
        method: Method,
        path: String,
        message: String,
    },
    #[error("decoding the answer to {path}: {source}")]
    Decode {
        path: String,
        source: serde_json::Error,
    },
}

impl ClientError {
    pub fn code(&self) -> Option<u16> {
        match self {
            ClientError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }

    pub fn is_already_exists(&self) -> bool {
        self.code() == Some(409)
    }
}

type Result<T, E = ClientError> = std::result::Result<T, E>;

/// A client for the kcp server behind the current context, addressing any workspace by path.
#[derive(Clone)]
pub struct Client {
    inner: kube::Client,
}

struct Answer {
    status: StatusCode,
    retry_after: Option<u64>,
    body: Vec<u8>,
}

impl Client {
    /// Builds a client from the merged kubeconfig `files` (as kube merges them: first definition wins,
    /// relative paths resolved against each file) with the command-line `overrides`, talking to `base`
    /// (the server URL with `/clusters/...` removed) so that requests can name any workspace.
    pub async fn new(files: &[PathBuf], overrides: &Overrides, base: &str) -> Result<Self> {
        let shown = files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(":");
        let config_err = |message: String| ClientError::Config {
            path: shown.clone(),
            message,
        };
        let mut merged: Option<kube::config::Kubeconfig> = None;
        for file in files.iter().filter(|f| f.exists()) {
            let kc =
                kube::config::Kubeconfig::read_from(file).map_err(|e| config_err(e.to_string()))?;
            merged = Some(match merged {
                Some(m) => m.merge(kc).map_err(|e| config_err(e.to_string()))?,
                None => kc,
            });
        }
        let mut kc = merged.unwrap_or_default();
        let opts = overrides
            .apply(&mut kc)
            .map_err(|e| config_err(e.to_string()))?;
        let mut config = kube::Config::from_custom_kubeconfig(kc, &opts)
            .await
            .map_err(|e| config_err(e.to_string()))?;
        config.cluster_url = base
            .parse()
            .map_err(|e: http::uri::InvalidUri| config_err(e.to_string()))?;
        if let Some(ns) = &overrides.namespace {
            config.default_namespace = ns.clone();
        }
        let inner = kube::Client::try_from(config).map_err(|e| config_err(e.to_string()))?;
        Ok(Self { inner })
    }

    async fn send(&self, method: Method, path: &str, body: Option<Vec<u8>>) -> Result<Answer> {
        let transport = |message: String| ClientError::Transport {
            method: method.clone(),
            path: path.to_owned(),
            message,
        };
        let mut req = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(header::ACCEPT, "application/json");
        if body.is_some() {
            req = req.header(header::CONTENT_TYPE, "application/json");
        }
        let req = req
            .body(kube::client::Body::from(body.unwrap_or_default()))
            .map_err(|e| transport(e.to_string()))?;
        let res = self
            .inner
            .send(req)
            .await
            .map_err(|e| transport(e.to_string()))?;
        let status = res.status();
        let retry_after = res
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let body = res
            .into_body()
            .collect()
            .await
            .map_err(|e| transport(e.to_string()))?
            .to_bytes()
            .to_vec();
        Ok(Answer {
            status,
            retry_after,
            body,
        })
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T> {
        let answer = self.send(method, path, body).await?;
        decode(path, answer)
    }

    /// Any JSON request, for the other kcp plugins built on this library (kubectl-kcp): `body`
    /// encoded as JSON, the answer decoded as `T`, an error answer as [`ClientError::Api`].
    pub async fn request<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T> {
        let body =
            body.map(serde_json::to_vec)
                .transpose()
                .map_err(|source| ClientError::Decode {
                    path: path.to_owned(),
                    source,
                })?;
        self.json(method, path, body).await
    }

    pub async fn get_workspace(&self, parent: &WorkspacePath, name: &str) -> Result<Workspace> {
        self.json(
            Method::GET,
            &format!("{}/{WORKSPACES}/{name}", parent.request_path()),
            None,
        )
        .await
    }

    pub async fn list_workspaces(&self, path: &WorkspacePath) -> Result<WorkspaceList> {
        self.json(
            Method::GET,
            &format!("{}/{WORKSPACES}", path.request_path()),
            None,
        )
        .await
    }

    pub async fn create_workspace(
        &self,
        parent: &WorkspacePath,
        object: &serde_json::Value,
    ) -> Result<Workspace> {
        let path = format!("{}/{WORKSPACES}", parent.request_path());
        let body = serde_json::to_vec(object).map_err(|source| ClientError::Decode {
            path: path.clone(),
            source,
        })?;
        self.json(Method::POST, &path, Some(body)).await
    }

    /// `status.phase` of the LogicalCluster of `path` (`cluster`, the one every workspace has).
    pub async fn logical_cluster_phase(&self, path: &WorkspacePath) -> Result<String> {
        #[derive(serde::Deserialize, Default)]
        struct Status {
            #[serde(default)]
            phase: String,
        }
        #[derive(serde::Deserialize)]
        struct LogicalCluster {
            #[serde(default)]
            status: Status,
        }
        let lc: LogicalCluster = self
            .json(
                Method::GET,
                &format!(
                    "{}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster",
                    path.request_path()
                ),
                None,
            )
            .await?;
        Ok(lc.status.phase)
    }

    /// The APIBindings of `path`; none when the caller may not list them or the server has no such API.
    pub async fn list_api_bindings(&self, path: &WorkspacePath) -> Result<Vec<Binding>> {
        let list: Result<BindingList> = self
            .json(
                Method::GET,
                &format!(
                    "{}/apis/apis.kcp.io/v1alpha2/apibindings",
                    path.request_path()
                ),
                None,
            )
            .await;
        match list {
            Ok(l) => Ok(l.items),
            Err(e) if e.is_forbidden() || e.is_not_found() => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// `GET /clusters/root/.../workspaces/~`: the caller's home workspace, created on first access. The server
    /// answers 429 with `Retry-After` until the home is ready; the waits end at [`HOME_WAIT`] in total.
    pub async fn home_workspace(&self) -> Result<Workspace> {
        let path = format!("/clusters/root/{WORKSPACES}/~");
        let deadline = Instant::now() + HOME_WAIT;
        loop {
            let answer = self.send(Method::GET, &path, None).await?;
            let left = deadline.saturating_duration_since(Instant::now());
            if answer.status != StatusCode::TOO_MANY_REQUESTS || left.is_zero() {
                return decode(&path, answer);
            }
            let retry_after = Duration::from_secs(answer.retry_after.unwrap_or(1).clamp(1, 10));
            tokio::time::sleep(retry_after.min(left)).await;
        }
    }

    /// How many API groups discovery shows in `path` (the legacy core group counts as one). As client-go's
    /// `ServerGroups`, 403 and 404 answers count as none.
    pub async fn discovery_groups(&self, path: &WorkspacePath) -> Result<usize> {
        #[derive(serde::Deserialize)]
        struct Versions {
            #[serde(default)]
            versions: Vec<serde_json::Value>,
        }
        #[derive(serde::Deserialize)]
        struct Groups {
            #[serde(default)]
            groups: Vec<serde_json::Value>,
        }
        fn tolerate<T>(e: ClientError) -> Result<Option<T>> {
            if e.is_forbidden() || e.is_not_found() {
                Ok(None)
            } else {
                Err(e)
            }
        }
        let base = path.request_path();
        let core: Option<Versions> = self
            .json(Method::GET, &format!("{base}/api"), None)
            .await
            .map(Some)
            .or_else(tolerate)?;
        let groups: Option<Groups> = self
            .json(Method::GET, &format!("{base}/apis"), None)
            .await
            .map(Some)
            .or_else(tolerate)?;
        let core = usize::from(core.is_some_and(|v| !v.versions.is_empty()));
        Ok(core + groups.map_or(0, |g| g.groups.len()))
    }
}

fn decode<T: DeserializeOwned>(path: &str, answer: Answer) -> Result<T> {
    if !answer.status.is_success() {
        return Err(api_error(answer.status, &answer.body));
    }
    serde_json::from_slice(&answer.body).map_err(|source| ClientError::Decode {
        path: path.to_owned(),
        source,
    })
}

/// The Status message when the body is a Status, else a description in client-go's words.
fn api_error(status: StatusCode, body: &[u8]) -> ClientError {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| match status {
            StatusCode::NOT_FOUND => "the server could not find the requested resource".to_owned(),
            StatusCode::FORBIDDEN => "forbidden".to_owned(),
            StatusCode::UNAUTHORIZED => {
                "the server has asked for the client to provide credentials".to_owned()
            }
            _ => {
                let text = String::from_utf8_lossy(body);
                format!(
                    "the server responded with status {}: {}",
                    status.as_u16(),
                    text.trim()
                )
            }
        });
    ClientError::Api {
        code: status.as_u16(),
        message,
    }
}
