//! Kubernetes' admission plugins for CertificateSigningRequests, which kcp runs too:
//!
//! - CertificateApproval: an update through `/approval` needs `approve` on the request's signer
//!   (`certificates.k8s.io` resource `signers`, named by the signer, or by `<domain>/*`);
//! - CertificateSigning: an update through `/status` that changes `status.certificate` needs
//!   `sign` on the signer, the same way;
//! - CertificateSubjectRestriction: a request to the `kubernetes.io/kube-apiserver-client`
//!   signer may not ask for the group `system:masters`.
//!
//! Refusals are Kubernetes' 403s, word for word.

use async_trait::async_trait;
use base64::Engine;
use kcp_api_types::builtin::certificates::{GROUP, RESOURCE};
use kcp_apimachinery::status::ApiError;
use kcp_auth::authz::{Attributes as AuthzAttributes, Authorizer, AuthorizerChain, Decision};
use serde_json::Value;
use x509_parser::prelude::FromDer;

use super::{Admission, Attributes, Operation};
use crate::registry::metadata::str_at;

const API_SERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

pub struct CertificateAdmission {
    authorizer: AuthorizerChain,
}

impl CertificateAdmission {
    pub fn new(authorizer: AuthorizerChain) -> Self {
        CertificateAdmission { authorizer }
    }

    /// Whether the requester may `verb` the signer `signer`: by its name, or by its domain's
    /// wildcard (`example.com/*`).
    fn authorized_for_signer(&self, attrs: &Attributes<'_>, verb: &str, signer: &str) -> bool {
        let domain_wildcard = format!("{}/*", signer.split('/').next().unwrap_or_default());
        [signer, domain_wildcard.as_str()].into_iter().any(|name| {
            self.authorizer.authorize(&AuthzAttributes {
                user: Some(attrs.user),
                cluster: attrs.cluster,
                verb,
                resource_request: true,
                api_group: GROUP,
                api_version: "*",
                resource: "signers",
                name,
                ..AuthzAttributes::default()
            }) == Decision::Allow
        })
    }

    fn require(&self, attrs: &Attributes<'_>, verb: &str, csr: &Value) -> Result<(), ApiError> {
        let signer = str_at(csr, "/spec/signerName");
        if self.authorized_for_signer(attrs, verb, signer) {
            return Ok(());
        }
        Err(ApiError::forbidden(
            GROUP,
            RESOURCE,
            attrs.name,
            &format!("user not permitted to {verb} requests with signerName {signer:?}"),
        ))
    }
}

/// Whether a CSR's PEM request (base64, as JSON carries it) asks for the organization `group`.
fn requests_group(request: &str, group: &str) -> bool {
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(request) else {
        return false;
    };
    let Ok((_, block)) = x509_parser::pem::parse_x509_pem(&pem) else {
        return false;
    };
    let Ok((_, csr)) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
    else {
        return false;
    };
    csr.certification_request_info
        .subject
        .iter_organization()
        .any(|o| o.as_str() == Ok(group))
}

#[async_trait]
impl Admission for CertificateAdmission {
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(csr) = object else {
            return Ok(());
        };
        if !attrs.def.is(GROUP, RESOURCE) {
            return Ok(());
        }
        match (attrs.operation, attrs.subresource) {
            // The new object's signer is asked about, as Kubernetes does.
            (Operation::Update, Some("approval")) => self.require(attrs, "approve", csr),
            (Operation::Update, Some("status")) => {
                let certificate = |o: &Value| str_at(o, "/status/certificate").to_string();
                if attrs.old_object.map(certificate) == Some(certificate(csr)) {
                    return Ok(());
                }
                self.require(attrs, "sign", csr)
            }
            (Operation::Create, None)
                if str_at(csr, "/spec/signerName") == API_SERVER_CLIENT_SIGNER
                    && requests_group(str_at(csr, "/spec/request"), "system:masters") =>
            {
                Err(ApiError::forbidden(
                    GROUP,
                    RESOURCE,
                    attrs.name,
                    "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
                ))
            }
            _ => Ok(()),
        }
    }
}
