//! The root CA publisher: every live namespace of every logical cluster has a ConfigMap
//! `kube-root-ca.crt` whose `ca.crt` is the PEM clients verify the shard with, as Kubernetes'
//! root-ca-cert-publisher keeps it: created when missing, its data and description annotation
//! restored when edited (other fields are left alone).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apiserver::ApiServer;
use kcp_apiserver::watch_cache::CachedObject;
use serde_json::{Value, json};

use crate::per_namespace::{self, NamespaceObject};

/// The ConfigMap every namespace has.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The key of the PEM in its data.
pub const CA_KEY: &str = "ca.crt";
/// The annotation describing what the ConfigMap is for.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Kubernetes' wording of that description.
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

struct RootCaConfigMap {
    def: Arc<ResourceDef>,
    ca_pem: String,
}

impl RootCaConfigMap {
    fn data(&self) -> Value {
        json!({ CA_KEY: self.ca_pem })
    }
}

impl NamespaceObject for RootCaConfigMap {
    fn controller(&self) -> &'static str {
        "root-ca-cert-publisher"
    }

    fn def(&self) -> &Arc<ResourceDef> {
        &self.def
    }

    fn name(&self) -> &'static str {
        ROOT_CA_CONFIG_MAP
    }

    fn desired(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ROOT_CA_CONFIG_MAP,
                "annotations": { DESCRIPTION_ANNOTATION: DESCRIPTION },
            },
            "data": self.data(),
        })
    }

    /// The same rule as [`NamespaceObject::corrected`]'s, read from the JSON: only `data` and
    /// the annotations are deserialized, borrowing what needs no unescaping.
    fn as_desired(&self, current: &CachedObject) -> bool {
        #[derive(serde::Deserialize, Default)]
        struct Meta<'a> {
            #[serde(borrow, default)]
            annotations: HashMap<&'a str, Cow<'a, str>>,
        }
        #[derive(serde::Deserialize)]
        struct Published<'a> {
            #[serde(borrow, default)]
            metadata: Meta<'a>,
            #[serde(borrow)]
            data: Option<HashMap<&'a str, Cow<'a, str>>>,
        }
        let bytes = current.json.to_bytes();
        let Ok(published) = serde_json::from_slice::<Published>(&bytes) else {
            return false;
        };
        let data_is_ca = published
            .data
            .is_some_and(|d| d.len() == 1 && d.get(CA_KEY).is_some_and(|pem| *pem == self.ca_pem));
        let described = (published.metadata.annotations)
            .get(DESCRIPTION_ANNOTATION)
            .is_some_and(|d| !d.is_empty());
        data_is_ca && described
    }

    /// As Kubernetes: the data must be exactly the CA, and some description must be there.
    fn corrected(&self, current: &Value) -> Option<Value> {
        let data = self.data();
        let described = current
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
            .and_then(Value::as_str)
            .is_some_and(|d| !d.is_empty());
        if current.get("data") == Some(&data) && described {
            return None;
        }
        let mut fixed = current.clone();
        let object = fixed.as_object_mut()?;
        object.insert("data".into(), data);
        let metadata = object
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()?;
        let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations
            .as_object_mut()?
            .insert(DESCRIPTION_ANNOTATION.into(), json!(DESCRIPTION));
        Some(fixed)
    }
}

/// Starts the publisher of `ca_pem`; it stops when the server shuts down.
pub fn spawn(server: Arc<ApiServer>, ca_pem: String) {
    let Some(def) = per_namespace::builtin("", "configmaps") else {
        return;
    };
    per_namespace::spawn(server, RootCaConfigMap { def, ca_pem });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publisher() -> RootCaConfigMap {
        RootCaConfigMap {
            def: per_namespace::builtin("", "configmaps").expect("configmaps are built in"),
            ca_pem: "PEM".into(),
        }
    }

    #[test]
    fn published_object_needs_no_correction() {
        let p = publisher();
        assert_eq!(p.corrected(&p.desired()), None);
    }

    fn cached(value: &Value) -> CachedObject {
        CachedObject {
            key: "k".into(),
            cluster: kcp_apimachinery::logical_cluster::LogicalClusterName::parse("c")
                .expect("a cluster name"),
            namespace: Some("default".into()),
            name: ROOT_CA_CONFIG_MAP.into(),
            revision: 1,
            labels: Default::default(),
            json: kcp_apiserver::object_json::ObjectJson::encode(value).expect("encodes"),
        }
    }

    /// The shortcut agrees with `corrected` on every case, with a PEM small enough to stay in the
    /// object's own bytes and one large enough to be shared apart.
    #[test]
    fn as_desired_agrees_with_corrected() {
        for pem in ["PEM".to_string(), "-----BEGIN\n".repeat(200)] {
            let p = RootCaConfigMap {
                ca_pem: pem.clone(),
                ..publisher()
            };
            let desired = p.desired();
            let mut cases = vec![desired.clone()];
            let mut edited = desired.clone();
            edited["data"] = json!({"ca.crt": "forged"});
            cases.push(edited);
            let mut extra = desired.clone();
            extra["data"]["extra"] = json!("x");
            cases.push(extra);
            let mut undescribed = desired.clone();
            undescribed["metadata"]["annotations"] = json!({"other": "a"});
            cases.push(undescribed);
            let mut empty = desired.clone();
            empty["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!("");
            cases.push(empty);
            let mut redescribed = desired.clone();
            redescribed["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!("mine");
            cases.push(redescribed);
            let mut no_data = desired.clone();
            no_data.as_object_mut().map(|o| o.remove("data"));
            cases.push(no_data);
            for case in &cases {
                assert_eq!(
                    p.as_desired(&cached(case)),
                    p.corrected(case).is_none(),
                    "{case}"
                );
            }
            assert!(p.as_desired(&cached(&desired)), "{pem}");
        }
    }

    #[test]
    fn edits_are_undone_and_other_fields_kept() {
        let p = publisher();
        let mut edited = p.desired();
        edited["data"] = json!({"ca.crt": "forged", "extra": "x"});
        edited["metadata"]["labels"] = json!({"keep": "me"});
        let fixed = p.corrected(&edited).expect("edited data is corrected");
        assert_eq!(fixed["data"], json!({"ca.crt": "PEM"}));
        assert_eq!(fixed["metadata"]["labels"], json!({"keep": "me"}));

        let mut undescribed = p.desired();
        undescribed["metadata"]["annotations"] = json!({"other": "a"});
        let fixed = p
            .corrected(&undescribed)
            .expect("a missing description is restored");
        assert_eq!(fixed["metadata"]["annotations"]["other"], "a");
        assert_eq!(
            fixed["metadata"]["annotations"][DESCRIPTION_ANNOTATION],
            DESCRIPTION
        );

        // Any description will do, as in Kubernetes.
        let mut redescribed = p.desired();
        redescribed["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!("mine");
        assert_eq!(p.corrected(&redescribed), None);
    }
}
