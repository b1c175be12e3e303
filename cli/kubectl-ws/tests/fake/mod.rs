//! A fake kcp server for the plugin tests: HTTPS on 127.0.0.1:0 with a self-signed certificate, bearer-token
//! auth, and the few Workspace endpoints the plugins call. Workspaces become Ready on the first GET after
//! their creation; the home workspace answers 429 once before it is ready.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

pub const TOKEN: &str = "test-token";
/// The logical cluster of the test user's home workspace.
pub const HOME_LC: &str = "homelc";

#[derive(Clone)]
struct Ws {
    name: String,
    cluster: String,
    type_path: String,
    type_name: String,
    phase: String,
}

#[derive(Default)]
struct State {
    /// Children per logical cluster (paths and LC names both resolve through `lcs`).
    children: BTreeMap<String, Vec<Ws>>,
    /// Path or LC name → LC name.
    lcs: BTreeMap<String, String>,
    home_429s: u32,
    counter: u32,
    /// APIBindings per LC name; LCs without an entry answer 404 for the resource, as a server without
    /// the API does.
    bindings: BTreeMap<String, Vec<Value>>,
    pub requests: Vec<String>,
}

pub struct Fake {
    pub base: String,
    pub ca_pem: String,
    /// With [`Fake::start_mtls`]: a client certificate and key (PEM) the server trusts.
    pub client_cert: Option<(String, String)>,
    state: Arc<Mutex<State>>,
}

impl State {
    fn add_lc(&mut self, path: &str, lc: &str) {
        self.lcs.insert(path.to_owned(), lc.to_owned());
        self.lcs.insert(lc.to_owned(), lc.to_owned());
        self.children.entry(lc.to_owned()).or_default();
    }

    fn add_ws(
        &mut self,
        parent_path: &str,
        name: &str,
        type_path: &str,
        type_name: &str,
        phase: &str,
    ) -> Ws {
        self.counter += 1;
        let lc = format!("lc{}", self.counter);
        let parent_lc = self.lcs[parent_path].clone();
        let ws = Ws {
            name: name.into(),
            cluster: lc.clone(),
            type_path: type_path.into(),
            type_name: type_name.into(),
            phase: phase.into(),
        };
        self.children.entry(parent_lc).or_default().push(ws.clone());
        self.add_lc(&format!("{parent_path}:{name}"), &lc);
        ws
    }
}

fn ws_json(base: &str, w: &Ws) -> Value {
    json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": w.name},
        "spec": {
            "type": {"name": w.type_name, "path": w.type_path},
            "cluster": w.cluster,
            "URL": format!("{base}/clusters/{}", w.cluster),
        },
        "status": {"phase": w.phase},
    })
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason, "code": code.as_u16()});
    respond(code, body)
}

fn respond(code: StatusCode, body: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

impl Fake {
    /// A tree `root` → `org` → `team` (+ `other` in root), and a home LC with one child `proj`.
    pub async fn start() -> Fake {
        Self::start_with(false).await
    }

    /// Like [`Fake::start`], but asking for client certificates signed by a CA of its own; a verified
    /// certificate authenticates a request as the token does.
    pub async fn start_mtls() -> Fake {
        Self::start_with(true).await
    }

    async fn start_with(mtls: bool) -> Fake {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
        let ca_pem = ck.cert.pem();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
        let builder = rustls::ServerConfig::builder();
        let (builder, client_cert) = if mtls {
            let ca_key = rcgen::KeyPair::generate().unwrap();
            let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let ca_cert = ca.self_signed(&ca_key).unwrap();
            let issuer = rcgen::Issuer::new(ca, ca_key);
            let client_key = rcgen::KeyPair::generate().unwrap();
            let mut client = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            client
                .distinguished_name
                .push(rcgen::DnType::CommonName, "alice");
            client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            let client_cert = client.signed_by(&client_key, &issuer).unwrap();
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca_cert.der().clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
                .build()
                .unwrap();
            (
                builder.with_client_cert_verifier(verifier),
                Some((client_cert.pem(), client_key.serialize_pem())),
            )
        } else {
            (builder.with_no_client_auth(), None)
        };
        let mut config = builder
            .with_single_cert(vec![ck.cert.der().clone()], key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );

        let mut st = State {
            home_429s: 1,
            ..State::default()
        };
        st.add_lc("root", "root");
        st.add_ws("root", "org", "root", "organization", "Ready");
        st.add_ws("root", "other", "root", "universal", "Ready");
        st.add_ws("root:org", "team", "root", "universal", "Ready");
        st.add_lc(&format!("user:{HOME_LC}"), HOME_LC);
        st.add_ws(HOME_LC, "proj", "root", "universal", "Ready");
        let state = Arc::new(Mutex::new(st));

        let (s, b) = (state.clone(), base.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, s, b) = (acceptor.clone(), s.clone(), b.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    // The verifier only lets verified chains through.
                    let has_cert = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .is_some_and(|c| !c.is_empty());
                    let svc = hyper::service::service_fn(move |req| {
                        let (s, b) = (s.clone(), b.clone());
                        async move {
                            Ok::<_, std::convert::Infallible>(handle(&s, &b, has_cert, req).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        Fake {
            base,
            ca_pem,
            client_cert,
            state,
        }
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Adds an APIBinding to the workspace at `path`.
    pub fn add_binding(&self, path: &str, binding: Value) {
        let mut st = self.state.lock().unwrap();
        let lc = st.lcs[path].clone();
        st.bindings.entry(lc).or_default().push(binding);
    }

    /// Adds a workspace `name` in `parent` that stays `Initializing` until the next GET of it.
    pub fn add_not_ready(&self, parent: &str, name: &str) {
        self.state
            .lock()
            .unwrap()
            .add_ws(parent, name, "root", "universal", "Initializing");
    }
}

async fn handle(
    state: &Mutex<State>,
    base: &str,
    has_cert: bool,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let authorized = has_cert
        || req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            == Some(&format!("Bearer {TOKEN}"));
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut st = state.lock().unwrap();
    st.requests.push(format!("{method} {path}"));
    if !authorized {
        return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
    }
    let Some(rest) = path.strip_prefix("/clusters/") else {
        return status(StatusCode::NOT_FOUND, "NotFound", "not found");
    };
    let (cluster, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let Some(lc) = st.lcs.get(cluster).cloned() else {
        // kcp refuses access to workspaces that do not exist rather than revealing them.
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &format!("access to workspace {cluster:?} is not allowed"),
        );
    };
    const WS: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";
    match (method.as_str(), rest) {
        ("GET", "api") => respond(
            StatusCode::OK,
            json!({"kind": "APIVersions", "versions": ["v1"]}),
        ),
        ("GET", "apis") => respond(
            StatusCode::OK,
            json!({"kind": "APIGroupList", "groups": [{"name": "tenancy.kcp.io"}]}),
        ),
        ("GET", "apis/apis.kcp.io/v1alpha2/apibindings") if st.bindings.contains_key(&lc) => {
            respond(
                StatusCode::OK,
                json!({"kind": "APIBindingList", "apiVersion": "apis.kcp.io/v1alpha2", "items": st.bindings[&lc]}),
            )
        }
        ("GET", WS) => {
            let items: Vec<Value> = st.children[&lc].iter().map(|w| ws_json(base, w)).collect();
            respond(
                StatusCode::OK,
                json!({"kind": "WorkspaceList", "apiVersion": "tenancy.kcp.io/v1alpha1", "items": items}),
            )
        }
        ("POST", WS) => {
            let obj: Value = serde_json::from_slice(&body).unwrap_or_default();
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if st.children[&lc].iter().any(|w| w.name == name) {
                return status(
                    StatusCode::CONFLICT,
                    "AlreadyExists",
                    &format!("workspaces.tenancy.kcp.io {name:?} already exists"),
                );
            }
            let type_name = obj["spec"]["type"]["name"]
                .as_str()
                .unwrap_or("universal")
                .to_owned();
            let type_path = obj["spec"]["type"]["path"]
                .as_str()
                .unwrap_or("root")
                .to_owned();
            let parent_path = cluster.to_owned();
            let w = st.add_ws(&parent_path, &name, &type_path, &type_name, "Scheduling");
            respond(StatusCode::CREATED, ws_json(base, &w))
        }
        ("GET", r) if r.starts_with(WS) && lc == "root" && r == format!("{WS}/~") => {
            if st.home_429s > 0 {
                st.home_429s -= 1;
                let mut res = status(
                    StatusCode::TOO_MANY_REQUESTS,
                    "TooManyRequests",
                    "Creating the home workspace",
                );
                res.headers_mut()
                    .insert("retry-after", "1".parse().unwrap());
                return res;
            }
            let home = Ws {
                name: "~".into(),
                cluster: HOME_LC.into(),
                type_path: "root".into(),
                type_name: "home".into(),
                phase: "Ready".into(),
            };
            respond(StatusCode::OK, ws_json(base, &home))
        }
        ("GET", r) if r.starts_with(&format!("{WS}/")) => {
            let name = &r[WS.len() + 1..];
            let children = st.children.get_mut(&lc).unwrap();
            match children.iter_mut().find(|w| w.name == name) {
                Some(w) => {
                    let out = ws_json(base, w);
                    // Ready from the next GET on, so that waiting is exercised once.
                    w.phase = "Ready".into();
                    respond(StatusCode::OK, out)
                }
                None => status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    &format!("workspaces.tenancy.kcp.io {name:?} not found"),
                ),
            }
        }
        _ => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        ),
    }
}
