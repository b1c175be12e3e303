use serde_json::{Value, json};

use super::*;
use crate::validate::CauseReason;

fn cron_tab() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                      "shortNames": ["ct"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string"},
                            "image": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
                        }},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                    }
                }},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}
                ]
            }]
        }
    })
}

fn causes(list: &[FieldCause]) -> Vec<(String, String)> {
    list.iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

fn schema_of(crd: &mut Value) -> &mut Value {
    crd.pointer_mut("/spec/versions/0/schema/openAPIV3Schema")
        .expect("schema")
}

#[test]
fn a_valid_crd_passes() {
    assert_eq!(causes(&validate_crd(&cron_tab())), vec![]);
}
