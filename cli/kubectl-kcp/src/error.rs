//! The library's error type; the binary prints it as kcp's plugin does (`error: <message>`, exit 1).
//! Texts are kcp's where kcp has one.

use kcp_api_types::apis::snapshot::SnapshotError;
use kubectl_ws::client::ClientError;

use crate::export_ref::ExportRefError;
use crate::permission_claims::ClaimError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Kubeconfig, connection flags, `--workspace`: what the workspace plugins report.
    #[error(transparent)]
    Workspace(#[from] kubectl_ws::Error),
    #[error(transparent)]
    ExportRef(#[from] ExportRefError),
    #[error(transparent)]
    Claims(#[from] ClaimError),
    #[error("failed to get APIExport {name:?}: {source}")]
    GetExport { name: String, source: ClientError },
    #[error("failed to create APIBinding: {0}")]
    CreateBinding(#[source] ClientError),
    /// The binding did not reach `Bound`: the timeout (Go's context text) or a failed read.
    #[error("could not bind {name}: {reason}")]
    Bind { name: String, reason: String },
    #[error("error finding APIBinding: {0}")]
    FindBinding(#[source] ClientError),
    #[error("error listing APIBindings in {path:?} workspace: {source}")]
    ListBindings { path: String, source: ClientError },
    #[error("error APIBinding name is missing")]
    BindingNameMissing,
    #[error("unexpected arguments {0:?}; the form is `[apibinding] <apibinding_name>`")]
    ExtraArguments(Vec<String>),
    #[error("error updating permission claim for APIBinding {name:?}: {source}")]
    UpdateClaim { name: String, source: ClientError },
    /// `crd snapshot`'s flag checks, aggregated as Go aggregates errors.
    #[error("{0}")]
    SnapshotFlags(String),
    #[error("error opening {file}: {source}")]
    Open {
        file: String,
        source: std::io::Error,
    },
    #[error("reading standard input: {0}")]
    Stdin(#[source] std::io::Error),
    #[error("error decoding {file}: {message}")]
    Decode { file: String, message: String },
    #[error("error converting CRD: {0}")]
    Convert(#[from] SnapshotError),
    #[error("error converting CRD to an APIResourceSchema: {0}")]
    Encode(String),
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
