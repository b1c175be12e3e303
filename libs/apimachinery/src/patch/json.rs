//! RFC 6902 JSON patch and RFC 7396 merge patch, over the `json-patch` crate, with typed errors
//! the API edge maps to HTTP (see each variant).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPatchError {
    /// The JSON patch document is not a list of valid operations (HTTP 400).
    #[error("{0}")]
    InvalidPatch(String),
    /// An operation could not be applied: missing path, failed `test`, ... (HTTP 422).
    #[error("{0}")]
    ApplyFailed(String),
    /// A merge patch that is not a JSON object (HTTP 400, Kubernetes' wording).
    #[error("Invalid JSON Patch")]
    InvalidMergePatch,
}

/// Applies an RFC 6902 JSON patch (`application/json-patch+json`) to a copy of `doc`.
pub fn apply_json_patch(doc: &Value, patch: &Value) -> Result<Value, JsonPatchError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| JsonPatchError::InvalidPatch(e.to_string()))?;
    let mut out = doc.clone();
    for op in ops.0 {
        // Kubernetes' JSON patch treats a missing path as null in `test`: clients (kube-rs'
        // finalizer helper) guard "no finalizers yet" with `test /metadata/finalizers null`.
        if let json_patch::PatchOperation::Test(test) = &op
            && test.value.is_null()
            && out.pointer(test.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch(&mut out, std::slice::from_ref(&op))
            .map_err(|e| JsonPatchError::ApplyFailed(e.to_string()))?;
    }
    Ok(out)
}

/// Applies an RFC 7396 merge patch (`application/merge-patch+json`) to a copy of `doc`. The
/// patch must be an object, since the result has to stay an object.
pub fn apply_merge_patch(doc: &Value, patch: &Value) -> Result<Value, JsonPatchError> {
    if !patch.is_object() {
        return Err(JsonPatchError::InvalidMergePatch);
    }
    let mut out = doc.clone();
    json_patch::merge(&mut out, patch);
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patch_cases() {
        let doc = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        let cases = [
            (
                json!([{"op": "add", "path": "/data/n", "value": "m"}]),
                Ok(json!({"k": "v", "n": "m"})),
            ),
            (json!([{"op": "remove", "path": "/data/k"}]), Ok(json!({}))),
            (
                json!([{"op": "replace", "path": "/data/k", "value": "w"}]),
                Ok(json!({"k": "w"})),
            ),
            (
                json!([{"op": "test", "path": "/data/k", "value": "v"}]),
                Ok(json!({"k": "v"})),
            ),
            (
                json!([{"op": "test", "path": "/data/k", "value": "nope"}]),
                Err("apply"),
            ),
            (
                json!([{"op": "remove", "path": "/data/missing"}]),
                Err("apply"),
            ),
            // A missing path tests equal to null, as in Kubernetes.
            (
                json!([{"op": "test", "path": "/data/missing", "value": null}, {"op": "add", "path": "/data/n", "value": "m"}]),
                Ok(json!({"k": "v", "n": "m"})),
            ),
            (
                json!([{"op": "test", "path": "/data/k", "value": null}]),
                Err("apply"),
            ),
            (
                json!([{"op": "frobnicate", "path": "/data"}]),
                Err("invalid"),
            ),
            (json!({"op": "add"}), Err("invalid")),
        ];
        for (patch, want) in cases {
            let got = apply_json_patch(&doc, &patch);
            match (want, got) {
                (Ok(data), Ok(out)) => assert_eq!(out["data"], data, "{patch}"),
                (Err("apply"), Err(JsonPatchError::ApplyFailed(_))) => {}
                (Err("invalid"), Err(JsonPatchError::InvalidPatch(_))) => {}
                (want, got) => panic!("{patch}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn failed_json_patch_leaves_nothing_half_done() {
        let doc = json!({"a": 1});
        let patch =
            json!([{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/zz"}]);
        assert!(apply_json_patch(&doc, &patch).is_err());
        assert_eq!(doc, json!({"a": 1}));
    }

    #[test]
    fn merge_patch_cases() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "list": [1, 2]});
        let out = apply_merge_patch(
            &doc,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}}, "list": [3]}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "list": [3]})
        );
        assert_eq!(apply_merge_patch(&doc, &json!({})).unwrap(), doc);
        assert_eq!(
            apply_merge_patch(&doc, &json!([1])),
            Err(JsonPatchError::InvalidMergePatch)
        );
        assert_eq!(
            JsonPatchError::InvalidMergePatch.to_string(),
            "Invalid JSON Patch"
        );
    }
}
