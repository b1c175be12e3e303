//! Permission claims' labels, as kcp computes them: an object a binding's accepted claim covers
//! carries `claimed.internal.apis.kcp.io/<hash of the export>` = `<hash of the claim>`, so the
//! export's virtual workspace can select exactly the claimed objects of each consumer.

use serde_json::Value;
use sha2::{Digest, Sha224};

use super::export_label_value;

/// The prefix of every claim label's key.
pub const CLAIM_LABEL_PREFIX: &str = "claimed.internal.apis.kcp.io/";

/// The key of claim labels for the export `name` in logical cluster `cluster`.
pub fn claim_label_key(cluster: &str, name: &str) -> String {
    format!("{CLAIM_LABEL_PREFIX}{}", export_label_value(cluster, name))
}

/// A claim's label value: kcp hashes the Go JSON of the claim without its verbs (`null`) and
/// default selector, so neither changing verbs nor selectors relabels anything. Field order and
/// omissions follow Go's `encoding/json` of kcp's `PermissionClaim`.
pub fn claim_label_value(claim: &Value) -> String {
    let text = |k: &str| claim.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut json = String::from("{");
    if !text("group").is_empty() {
        json.push_str(&format!("\"group\":{},", Value::from(text("group"))));
    }
    json.push_str(&format!(
        "\"resource\":{},\"verbs\":null",
        Value::from(text("resource"))
    ));
    if !text("identityHash").is_empty() {
        json.push_str(&format!(
            ",\"identityHash\":{}",
            Value::from(text("identityHash"))
        ));
    }
    json.push('}');
    kcp_apimachinery::names::base62(&Sha224::digest(json.as_bytes()))
}

/// The value an APIBinding carries under its own export's claim key when it did not accept a
/// claim on APIBindings (kcp's fixed "reflexive" value), so the export's owner always sees it.
pub fn reflexive_label_value() -> String {
    let bytes: Vec<u8> = (0..28u8).map(|i| i % 10).collect();
    kcp_apimachinery::names::base62(&bytes)
}

/// kcp's key for matching claims of an export and of a binding: `resource/group/identityHash`.
pub fn claim_key(claim: &Value) -> String {
    let text = |k: &str| claim.get(k).and_then(Value::as_str).unwrap_or_default();
    format!(
        "{}/{}/{}",
        text("resource"),
        text("group"),
        text("identityHash")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // kcp's own vectors (sdk/apis/apis/v1alpha2/permissionclaims/labels_test.go).
    #[test]
    fn labels_are_kcps() {
        assert_eq!(
            claim_label_key("root", "tenancy.kcp.io"),
            "claimed.internal.apis.kcp.io/bmCdly9xXiUpEHe3ypvDwvXMTfoVZUE92mqAQf"
        );
        let configmaps = json!({"group": "", "resource": "configmaps", "verbs": ["get", "list"]});
        assert_eq!(
            claim_label_value(&configmaps),
            "3QVjs6pfBjMpLEVYYhysJnroYGsQGlWm05E4qe"
        );
        assert_eq!(
            claim_label_key("abcd1234", "my-export"),
            "claimed.internal.apis.kcp.io/phGj1BkmdNY3LKTrtFc1KGLYTBs8Nt50p8PIU"
        );
        let deployments = json!({
            "group": "apps", "resource": "deployments", "verbs": ["get"],
            "identityHash": "deadbeef",
            "defaultSelector": {"matchLabels": {"a": "b"}},
        });
        assert_eq!(
            claim_label_value(&deployments),
            "4CpOMiJ5JL9ZC4cG8ne7nGNQbSOEUiwZ89KHal"
        );
        assert_eq!(claim_key(&deployments), "deployments/apps/deadbeef");
        assert!(!reflexive_label_value().is_empty());
    }
}
