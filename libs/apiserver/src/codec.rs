//! Content negotiation and body decoding: what the client sent, and what it accepts back.

use bytes::Bytes;
use http_body_util::BodyExt;
use kcp_apimachinery::status::ApiError;
use serde_json::Value;

/// Request bodies larger than this are refused with 413 (kube-apiserver's limit for JSON/YAML bodies).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The response shapes a client can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// `as=Table`, with what `includeObject` asks for decided later.
    Table,
    /// `as=PartialObjectMetadata` / `as=PartialObjectMetadataList`.
    PartialMetadata,
    /// `as=APIGroupDiscoveryList` (aggregated discovery v2 or v2beta1).
    DiscoveryV2 {
        beta: bool,
    },
}

struct MediaRange<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

impl<'a> MediaRange<'a> {
    fn param(&self, key: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| *v)
    }
}

fn parse_accept(accept: &str) -> Vec<MediaRange<'_>> {
    accept
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';').map(str::trim);
            let essence = pieces.next().filter(|s| !s.is_empty())?;
            let params = pieces
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
                .collect();
            Some(MediaRange { essence, params })
        })
        .collect()
}

/// Which outputs an endpoint can produce.
#[derive(Clone, Copy)]
pub enum Produces {
    /// Objects and lists: JSON, YAML, Table, PartialObjectMetadata.
    Objects,
    /// Discovery documents: JSON or aggregated discovery.
    Discovery,
    /// Plain JSON documents (version, OpenAPI, Status).
    JsonOnly,
}

/// Picks the first acceptable output in the client's order; no Accept header means JSON.
pub fn negotiate(accept: Option<&str>, produces: Produces) -> Result<Output, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Output::Json);
    };
    for range in parse_accept(accept) {
        let as_ = range.param("as");
        let g = range.param("g");
        let essence = range.essence.to_ascii_lowercase();
        let json_like = matches!(
            essence.as_str(),
            "application/json" | "*/*" | "application/*"
        );
        match (produces, as_) {
            (Produces::Objects, Some("Table")) if json_like && g == Some("meta.k8s.io") => {
                return Ok(Output::Table);
            }
            (Produces::Objects, Some("PartialObjectMetadata" | "PartialObjectMetadataList"))
                if json_like && g == Some("meta.k8s.io") =>
            {
                return Ok(Output::PartialMetadata);
            }
            (Produces::Discovery, Some("APIGroupDiscoveryList"))
                if json_like && g == Some("apidiscovery.k8s.io") =>
            {
                match range.param("v") {
                    Some("v2") => return Ok(Output::DiscoveryV2 { beta: false }),
                    Some("v2beta1") => return Ok(Output::DiscoveryV2 { beta: true }),
                    _ => continue,
                }
            }
            (_, Some(_)) => continue,
            (_, None) => {}
        }
        if json_like {
            return Ok(Output::Json);
        }
        if matches!(produces, Produces::Objects)
            && matches!(essence.as_str(), "application/yaml" | "text/yaml")
        {
            return Ok(Output::Yaml);
        }
    }
    Err(ApiError::not_acceptable(accept))
}

/// Media types of the protobuf form of `/openapi/v2`: client-go asks for the first (the older
/// spelling), kube-apiserver answers with the second for either.
pub const OPENAPI_V2_PROTOBUF: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// Whether `/openapi/v2` is to be answered in protobuf (else JSON): the first media range of
/// the client's that either form satisfies decides, as kube-apiserver's OpenAPI handler does.
pub fn openapi_v2_protobuf(accept: Option<&str>) -> Result<bool, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(false);
    };
    for range in parse_accept(accept) {
        let essence = range.essence.to_ascii_lowercase();
        if matches!(
            essence.as_str(),
            "application/json" | "*/*" | "application/*"
        ) {
            return Ok(false);
        }
        if OPENAPI_V2_PROTOBUF.contains(&essence.as_str()) {
            return Ok(true);
        }
    }
    Err(ApiError::not_acceptable(accept))
}

/// Reads a whole request body, refusing more than [`MAX_BODY_BYTES`] with 413.
pub async fn read_body<B>(body: B) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let limited = http_body_util::Limited::new(body, MAX_BODY_BYTES);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err)
            if err
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large(MAX_BODY_BYTES))
        }
        Err(err) => Err(ApiError::bad_request(format!(
            "reading the request body: {err}"
        ))),
    }
}

/// The essence of a Content-Type header (`application/json`), lower-cased.
pub fn essence(content_type: Option<&str>) -> String {
    content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Decodes an object body (create/update) from JSON, YAML or Kubernetes protobuf.
pub fn decode_object(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let ct = essence(content_type);
    match ct.as_str() {
        "" | "application/json" | "*/*" => decode_json(body),
        "application/yaml" | "text/yaml" | "application/x-yaml" => decode_yaml(body),
        "application/vnd.kubernetes.protobuf" => kcp_apimachinery::protobuf::decode(body, None)
            .map_err(|e| match e {
                kcp_apimachinery::protobuf::ProtobufError::UnsupportedKind { .. } => {
                    ApiError::unsupported_media_type(&format!("{ct} ({e})"))
                }
                other => ApiError::bad_request(other.to_string()),
            }),
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

pub fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(ApiError::bad_request(
            "the request body must be a JSON object",
        )),
        Err(e) => Err(ApiError::bad_request(format!(
            "the body of the request could not be decoded as JSON: {e}"
        ))),
    }
}

pub fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the YAML body is not valid UTF-8"))?;
    match serde_saphyr::from_str::<Value>(text) {
        // YAMLToJSON re-encodes YAML numbers as Go prints float64s: `15.0` becomes `15`.
        Ok(mut v @ Value::Object(_)) => {
            kcp_apimachinery::numbers::integral_floats_to_integers(&mut v);
            Ok(v)
        }
        Ok(_) => Err(ApiError::bad_request(
            "the request body must be a YAML mapping",
        )),
        Err(e) => Err(ApiError::bad_request(format!(
            "the body of the request could not be decoded as YAML: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    const DISC: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    #[test]
    fn openapi_v2_is_protobuf_when_asked_first() {
        let old_spelling = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(openapi_v2_protobuf(None).ok(), Some(false));
        assert_eq!(openapi_v2_protobuf(Some(old_spelling)).ok(), Some(true));
        assert_eq!(
            openapi_v2_protobuf(Some(OPENAPI_V2_PROTOBUF[1])).ok(),
            Some(true)
        );
        let both = format!("{old_spelling}, application/json");
        assert_eq!(openapi_v2_protobuf(Some(&both)).ok(), Some(true));
        assert_eq!(
            openapi_v2_protobuf(Some("application/json, */*")).ok(),
            Some(false)
        );
        assert_eq!(
            openapi_v2_protobuf(Some("text/plain")).map_err(|e| e.code),
            Err(406)
        );
    }

    #[test]
    fn negotiates_like_kubectl_expects() {
        assert_eq!(negotiate(None, Produces::Objects).ok(), Some(Output::Json));
        assert_eq!(
            negotiate(Some(TABLE), Produces::Objects).ok(),
            Some(Output::Table)
        );
        assert_eq!(
            negotiate(Some(TABLE), Produces::JsonOnly).ok(),
            Some(Output::Json)
        );
        assert_eq!(
            negotiate(Some(DISC), Produces::Discovery).ok(),
            Some(Output::DiscoveryV2 { beta: false })
        );
        assert_eq!(
            negotiate(Some(DISC), Produces::Objects).ok(),
            Some(Output::Json)
        );
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf,application/json"),
                Produces::Objects
            )
            .ok(),
            Some(Output::Json)
        );
        assert_eq!(
            negotiate(Some("application/yaml"), Produces::Objects).ok(),
            Some(Output::Yaml)
        );
        assert_eq!(
            negotiate(Some("application/json, */*;q=0.8"), Produces::Objects).ok(),
            Some(Output::Json)
        );
        let err = negotiate(
            Some("application/vnd.kubernetes.protobuf"),
            Produces::Objects,
        )
        .err();
        assert_eq!(err.map(|e| e.code), Some(406));
        assert_eq!(
            negotiate(Some("text/html"), Produces::JsonOnly)
                .err()
                .map(|e| e.code),
            Some(406)
        );
    }

    #[test]
    fn decodes_bodies() {
        assert!(decode_object(Some("application/json"), br#"{"a":1}"#).is_ok());
        assert_eq!(
            decode_object(Some("application/json"), b"{nope")
                .err()
                .map(|e| e.code),
            Some(400)
        );
        assert_eq!(
            decode_object(Some("application/json"), b"[1]")
                .err()
                .map(|e| e.code),
            Some(400)
        );
        assert_eq!(
            decode_object(Some("application/yaml"), b"a: b\n").ok(),
            Some(serde_json::json!({"a": "b"}))
        );
        assert_eq!(
            decode_object(Some("text/plain"), b"x")
                .err()
                .map(|e| e.code),
            Some(415)
        );
    }
}
