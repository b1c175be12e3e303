//! The root CA publisher: every live namespace of every logical cluster has a ConfigMap
//! `kube-root-ca.crt` whose `ca.crt` is the PEM clients verify the shard with, as Kubernetes'
//! root-ca-cert-publisher keeps it: created when missing, its data and description annotation
//! restored when edited (other fields are left alone).

use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apiserver::ApiServer;
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
