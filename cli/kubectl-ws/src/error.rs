//! The library's error type; the binaries print it as kcp's plugin does (`Error: <message>`).

use crate::client::ClientError;
use crate::kubeconfig::KubeconfigError;
use crate::path::PathError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("current URL {0:?} does not point to a workspace")]
    NotAWorkspace(String),
    #[error("workspace {0:?} not found")]
    NotFound(String),
    #[error("access to workspace {0:?} denied")]
    Denied(String),
    #[error("invalid home workspace URL {0:?}")]
    HomeUrl(String),
    #[error("current config context URL {0:?} does not point to workspace")]
    ChildUrl(String),
    #[error("context {0:?} already exists in kubeconfig, use --overwrite to update it")]
    ContextExists(String),
    /// `kubectl create workspace --create-context`: kcp prefixes the create-context failure.
    #[error("failed to create context: {0}")]
    CreateContext(Box<Error>),
    #[error("invalid location selector: {0}")]
    LocationSelector(String),
    #[error("cannot go above the root workspace")]
    AboveRoot,
    #[error("interactive mode does not accept arguments")]
    InteractiveArguments,
    /// kcp's `-i` is a full-screen terminal UI; this plugin does not have one.
    #[error(
        "interactive mode (-i) is not supported by this kubectl-ws; use 'kubectl ws tree' and 'kubectl ws <path>'"
    )]
    InteractiveUnsupported,
    #[error("--ignore-existing must not be used with non-absolute type path")]
    IgnoreExistingRelativeType,
    #[error(
        "workspace {name:?} cannot be created with type {wanted}, it already exists with different type {existing}"
    )]
    TypeMismatch {
        name: String,
        wanted: String,
        existing: String,
    },
    #[error("timed out waiting for {0} to be ready")]
    NotReady(String),
    #[error("unexpected argument {0:?} before the subcommand")]
    ExtraArgument(String),
    /// cobra's `ExactArgs`, which kcp's create commands use.
    #[error("accepts {expected} arg(s), received {received}")]
    ArgumentCount { expected: usize, received: usize },
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
