//! The custom resource the benchmark measures: one CRD (`widgets.bench.example.com`) with a realistic
//! structural schema (a dozen typed fields, a nested object, a list of objects, an enum, a pattern,
//! bounds and one CEL rule), and Widgets padded to the serialized size of the benchmark's ConfigMap.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde::Deserialize;

use crate::client::Conn;
use crate::objects;

pub const CRD_NAME: &str = "widgets.bench.example.com";
/// How long a CRD may take to become Established.
const ESTABLISH_DEADLINE: Duration = Duration::from_secs(30);
const ESTABLISH_POLL: Duration = Duration::from_millis(5);

/// The CustomResourceDefinition, as JSON.
pub fn crd() -> Bytes {
    Bytes::from_static(
        br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.bench.example.com"},"spec":{"group":"bench.example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["owner","tier","replicas"],"x-kubernetes-validations":[{"rule":"self.minReplicas <= self.replicas","message":"minReplicas must not exceed replicas"}],"properties":{"owner":{"type":"string","maxLength":63},"tier":{"type":"string","enum":["bronze","silver","gold"]},"replicas":{"type":"integer","minimum":0,"maximum":1000},"minReplicas":{"type":"integer","minimum":0},"enabled":{"type":"boolean"},"ratio":{"type":"number"},"image":{"type":"string","pattern":"^[a-z0-9./-]+:[a-z0-9.]+$"},"port":{"type":"integer","format":"int32","minimum":1,"maximum":65535},"region":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"limits":{"type":"object","properties":{"cpu":{"type":"string"},"memory":{"type":"string"}}},"endpoints":{"type":"array","items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}},"notes":{"type":"string","maxLength":4096}}}}}}}]}}"#,
    )
}

/// The Widgets collection of namespace `ns` in logical cluster `lc`.
pub fn collection(lc: &str, ns: &str) -> String {
    format!("/clusters/{lc}/apis/bench.example.com/v1/namespaces/{ns}/widgets")
}

/// A Widget named `name` with as many bytes of JSON as [`objects::configmap`]`(name, payload_bytes, _)`
/// (when its fixed fields fit): its `notes` field is padded, and differs with `generation`.
pub fn widget(name: &str, payload_bytes: usize, generation: u64) -> Bytes {
    let size = objects::configmap_len(name.len(), payload_bytes);
    let head = format!(
        r#"{{"apiVersion":"bench.example.com/v1","kind":"Widget","metadata":{{"name":"{name}","labels":{{"app":"kcp-bench"}}}},"spec":{{"owner":"team-a","tier":"gold","replicas":3,"minReplicas":1,"enabled":true,"ratio":0.5,"image":"reg/app:v1","port":8080,"region":"eu","tags":["a","b"],"limits":{{"cpu":"1","memory":"1Gi"}},"endpoints":[{{"name":"http","port":80}}],"notes":""#
    );
    let tail = r#""}}"#;
    let pad = size.saturating_sub(head.len() + tail.len()).max(1);
    Bytes::from(format!("{head}{}{tail}", objects::payload(pad, generation)))
}

#[derive(Deserialize)]
struct Crd {
    #[serde(default)]
    status: Option<CrdStatus>,
}

#[derive(Deserialize)]
struct CrdStatus {
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
}

fn established(body: &[u8]) -> bool {
    serde_json::from_slice::<Crd>(body)
        .ok()
        .and_then(|crd| crd.status)
        .is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.kind == "Established" && c.status == "True")
        })
}

/// Creates the CRD in logical cluster `lc` (an existing one is fine) and waits until it is Established.
pub async fn install(conn: &mut Conn, lc: &str) -> anyhow::Result<()> {
    let path = format!("/clusters/{lc}/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    let answer = conn
        .expect(Method::POST, &path, Some(crd()), |s| {
            s == StatusCode::CREATED || s == StatusCode::CONFLICT
        })
        .await
        .context("creating the CRD")?;
    if established(&answer) {
        return Ok(());
    }
    let path = format!("{path}/{CRD_NAME}");
    let start = Instant::now();
    loop {
        let answer = conn
            .expect(Method::GET, &path, None, |s| s == StatusCode::OK)
            .await?;
        if established(&answer) {
            return Ok(());
        }
        if start.elapsed() > ESTABLISH_DEADLINE {
            bail!("GET {path}: not Established after {ESTABLISH_DEADLINE:?}");
        }
        tokio::time::sleep(ESTABLISH_POLL).await;
    }
}
