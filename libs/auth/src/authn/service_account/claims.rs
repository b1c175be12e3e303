//! The claims of a bound ServiceAccount token.

use serde::{Deserialize, Deserializer, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    /// A JWT may carry one audience as a plain string; we always write a list.
    #[serde(deserialize_with = "one_or_many")]
    pub aud: Vec<String>,
    pub exp: i64,
    pub iat: i64,
    pub nbf: i64,
    #[serde(default)]
    pub jti: String,
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
}

/// The private `kubernetes.io` claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// kcp's addition: the logical cluster of the ServiceAccount.
    #[serde(
        rename = "clusterName",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub cluster_name: String,
    pub namespace: String,
    pub serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
}

fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}
