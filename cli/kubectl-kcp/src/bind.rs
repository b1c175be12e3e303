//! `kubectl kcp bind apiexport <path>:<export>`: creates an APIBinding (`apis.kcp.io/v1alpha2`) in
//! the current workspace and waits until it is bound (kcp's `cli/pkg/bind/plugin/bind.go`).
//!
//! Unlike kcp's plugin, answered permission claims are the export's own (see
//! [`crate::permission_claims`]), and only v1alpha2 is written (kcp-rs serves it; kcp's plugin picks
//! v1alpha1 from discovery on servers that have no v1alpha2).

use std::time::Duration;

use http::Method;
use serde_json::{Value, json};

use kubectl_ws::client::{Client, ClientError};
use kubectl_ws::commands::{Env, Streams};

use crate::error::{Error, Result};
use crate::export_ref::ExportRef;
use crate::go_duration;
use crate::permission_claims::{ClaimAnswers, ExportClaim};
use crate::{BINDINGS, EXPORTS};

/// How often the binding is read while waiting for it, as kcp polls.
pub const POLL: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, clap::Args)]
pub struct BindArgs {
    /// The APIExport to bind: <workspace_path:apiexport-name>
    #[arg(value_name = "WORKSPACE_PATH:APIEXPORT-NAME")]
    pub reference: Option<String>,
    /// Name of the APIBinding to create (default: the APIExport's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Duration to wait for APIBinding to be created successfully.
    #[arg(long, default_value = "30s", value_parser = go_duration::parse)]
    pub timeout: Duration,
    /// List of accepted permission claims for the APIBinding. Format: --accept-permission-claim resource.group
    #[arg(
        long = "accept-permission-claim",
        value_name = "RESOURCE.GROUP",
        value_delimiter = ','
    )]
    pub accept_permission_claim: Vec<String>,
    /// List of rejected permission claims for the APIBinding. Format: --reject-permission-claim resource.group
    #[arg(
        long = "reject-permission-claim",
        value_name = "RESOURCE.GROUP",
        value_delimiter = ','
    )]
    pub reject_permission_claim: Vec<String>,
    /// Accept all permission claims from the APIExport.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub accept_all_permission_claims: Option<bool>,
    /// Reject all permission claims from the APIExport.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub reject_all_permission_claims: Option<bool>,
}

/// The command line, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindRequest {
    pub export: ExportRef,
    /// The APIBinding's name.
    pub name: String,
    pub timeout: Duration,
    pub claims: ClaimAnswers,
}

impl BindRequest {
    pub fn new(args: &BindArgs) -> Result<Self> {
        let export = ExportRef::parse(args.reference.as_deref().unwrap_or_default())?;
        let claims = ClaimAnswers::from_flags(
            &args.accept_permission_claim,
            &args.reject_permission_claim,
            args.accept_all_permission_claims.unwrap_or(false),
            args.reject_all_permission_claims.unwrap_or(false),
        )?;
        let name = args
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| export.name.clone());
        Ok(Self {
            export,
            name,
            timeout: args.timeout,
            claims,
        })
    }

    /// The APIBinding to create, answering `claims`.
    pub fn binding(&self, claims: Vec<Value>) -> Value {
        let mut spec = json!({"reference": {"export": {
            "path": self.export.path.to_string(),
            "name": self.export.name,
        }}});
        if !claims.is_empty()
            && let Some(fields) = spec.as_object_mut()
        {
            fields.insert("permissionClaims".into(), Value::Array(claims));
        }
        json!({
            "apiVersion": "apis.kcp.io/v1alpha2",
            "kind": "APIBinding",
            "metadata": {"name": self.name},
            "spec": spec,
        })
    }
}

pub async fn run(env: &Env, args: &BindArgs, io: &mut Streams<'_>) -> Result<()> {
    let request = BindRequest::new(args)?;
    let kc = env.load()?;
    let current = env.current_url(&kc)?;
    let client = env.client(&kc).await?;

    // The export is read only to answer claims, so a plain bind needs no `get` on it.
    let claims = if request.claims.is_empty() {
        Vec::new()
    } else {
        let path = format!(
            "{}/{EXPORTS}/{}",
            request.export.path.request_path(),
            request.export.name
        );
        let export: Value = client
            .request(Method::GET, &path, None)
            .await
            .map_err(|source| Error::GetExport {
                name: request.export.name.clone(),
                source,
            })?;
        let exported = ExportClaim::list(&export, "/spec/permissionClaims");
        request
            .claims
            .resolve(&request.export.to_string(), &exported)?
    };

    let bindings = format!("{}/{BINDINGS}", current.path.request_path());
    let created: Value = client
        .request(Method::POST, &bindings, Some(&request.binding(claims)))
        .await
        .map_err(Error::CreateBinding)?;
    let name = created
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or(request.name.as_str())
        .to_owned();
    writeln!(
        io.out,
        "apibinding {name} created. Waiting to successfully bind ..."
    )?;

    if !is_bound(&created) {
        let path = format!("{bindings}/{name}");
        match tokio::time::timeout(request.timeout, wait_bound(&client, &path)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(Error::Bind {
                    name,
                    reason: e.to_string(),
                });
            }
            // Go's words for a poll that ran out of time.
            Err(_) => {
                return Err(Error::Bind {
                    name,
                    reason: "context deadline exceeded".to_owned(),
                });
            }
        }
    }
    writeln!(io.out, "{name} created and bound.")?;
    Ok(())
}

/// Reads the binding every [`POLL`] until its phase is `Bound`; a failed read ends the wait.
async fn wait_bound(client: &Client, path: &str) -> Result<(), ClientError> {
    loop {
        tokio::time::sleep(POLL).await;
        let binding: Value = client.request(Method::GET, path, None).await?;
        if is_bound(&binding) {
            return Ok(());
        }
    }
}

fn is_bound(binding: &Value) -> bool {
    binding.pointer("/status/phase").and_then(Value::as_str) == Some("Bound")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use clap::Parser;

    use super::*;
    use crate::permission_claims::ClaimState;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: BindArgs,
    }

    fn args(line: &[&str]) -> BindArgs {
        Cli::try_parse_from(std::iter::once("bind").chain(line.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn defaults() {
        let request =
            BindRequest::new(&args(&["root:wildwest:cowboys-service:wildwest.dev"])).unwrap();
        assert_eq!(request.name, "wildwest.dev");
        assert_eq!(request.timeout, Duration::from_secs(30));
        assert!(request.claims.is_empty());
        assert_eq!(
            request.binding(Vec::new()),
            json!({
                "apiVersion": "apis.kcp.io/v1alpha2",
                "kind": "APIBinding",
                "metadata": {"name": "wildwest.dev"},
                "spec": {"reference": {"export": {
                    "path": "root:wildwest:cowboys-service", "name": "wildwest.dev",
                }}},
            })
        );
    }

    #[test]
    fn flags() {
        let request = BindRequest::new(&args(&[
            "root:p:e",
            "--name",
            "mine",
            "--timeout",
            "1m30s",
            "--accept-permission-claim",
            "secrets.core,configmaps.core",
            "--accept-permission-claim=cowboys.wildwest.dev",
            "--reject-permission-claim",
            "horses.wildwest.dev",
        ]))
        .unwrap();
        assert_eq!(request.name, "mine");
        assert_eq!(request.timeout, Duration::from_secs(90));
        let ClaimAnswers::Listed(list) = &request.claims else {
            panic!("{:?}", request.claims);
        };
        let shown: Vec<String> = list.iter().map(|(gr, s)| format!("{gr} {s:?}")).collect();
        assert_eq!(
            shown,
            [
                "secrets Accepted",
                "configmaps Accepted",
                "cowboys.wildwest.dev Accepted",
                "horses.wildwest.dev Rejected",
            ]
        );
        let all = BindRequest::new(&args(&["root:p:e", "--accept-all-permission-claims"])).unwrap();
        assert_eq!(all.claims, ClaimAnswers::All(ClaimState::Accepted));
        let off =
            BindRequest::new(&args(&["root:p:e", "--accept-all-permission-claims=false"])).unwrap();
        assert!(off.claims.is_empty());
        let claims = vec![json!({"resource": "secrets"})];
        assert_eq!(
            request.binding(claims)["spec"]["permissionClaims"],
            json!([{"resource": "secrets"}])
        );
    }

    #[test]
    fn refusals() {
        let err = |line: &[&str]| BindRequest::new(&args(line)).unwrap_err().to_string();
        assert_eq!(
            err(&[]),
            "`root:ws:apiexport_object` reference to bind is required as an argument"
        );
        assert!(err(&["cowboys"]).starts_with("fully qualified reference"));
        assert!(err(&["root:"]).starts_with("the APIExport name is missing"));
        assert_eq!(
            err(&[
                "root:p:e",
                "--accept-all-permission-claims",
                "--reject-all-permission-claims"
            ]),
            "cannot use both --accept-all-permission-claims and --reject-all-permission-claims"
        );
        assert!(
            Cli::try_parse_from(["bind", "root:p:e", "--timeout", "soon"]).is_err(),
            "a timeout that is not a Go duration"
        );
    }

    #[test]
    fn bound_is_the_phase() {
        assert!(is_bound(&json!({"status": {"phase": "Bound"}})));
        assert!(!is_bound(&json!({"status": {"phase": "Binding"}})));
        assert!(!is_bound(&json!({})));
    }
}
