//! The command line of `kubectl kcp` and the dispatch from it to the commands.

use std::io::Read;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use kubectl_ws::cli::Global;
use kubectl_ws::commands::{Env, Streams};

use crate::bind::{self, BindArgs};
use crate::claims::{self, AnswerArgs};
use crate::crd_snapshot::{self, SnapshotArgs};
use crate::error::Result;
use crate::permission_claims::ClaimState;

/// kubectl plugin for kcp.
///
/// This command provides kcp-specific sub-commands for kubectl: binding APIExports into the
/// current workspace, answering their permission claims, and snapshotting CRDs as
/// APIResourceSchemas.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl kcp",
    version,
    after_help = "Examples:\n  kubectl kcp bind apiexport root:my-service:my-export --name my-binding\n  kubectl kcp bind apiexport root:my-service:my-export --accept-permission-claim secrets.core,configmaps.core\n  kubectl kcp claims get apibinding my-binding\n  kubectl kcp claims accept my-binding --resource secrets\n  kubectl kcp crd snapshot -f crd.yaml --prefix today > api-resource-schema.yaml\n"
)]
pub struct KcpCli {
    #[command(flatten)]
    pub global: Global,
    /// Workspace path to target. If not specified, the current workspace from the kubeconfig will
    /// be used. Use a leading ':' for absolute paths (e.g. ':root:my-ws'), or omit it for relative
    /// paths (e.g. 'my-ws'). '.' stays in the current workspace, '..' navigates to the parent
    /// workspace.
    #[arg(short = 'w', long, global = true)]
    pub workspace: Option<String>,
    #[command(subcommand)]
    pub command: KcpCommand,
}

#[derive(Debug, Subcommand)]
pub enum KcpCommand {
    /// Bind different types into current workspace.
    Bind {
        #[command(subcommand)]
        what: BindCommand,
    },
    /// Operations related to viewing or updating permission claims.
    Claims {
        #[command(subcommand)]
        action: ClaimsCommand,
    },
    /// CRD related operations.
    Crd {
        #[command(subcommand)]
        action: CrdCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum BindCommand {
    /// Bind to an APIExport.
    #[command(name = "apiexport", visible_alias = "apiexports")]
    ApiExport(BindArgs),
}

#[derive(Debug, Subcommand)]
pub enum ClaimsCommand {
    /// Operations related to fetching APIs with respect to permission claims.
    Get {
        #[command(subcommand)]
        what: ClaimsGetCommand,
    },
    /// Accept permission claims of an APIBinding.
    Accept(AnswerArgs),
    /// Reject permission claims of an APIBinding.
    Reject(AnswerArgs),
}

#[derive(Debug, Subcommand)]
pub enum ClaimsGetCommand {
    /// Get claims related to apibinding (all APIBindings of the workspace when no name is given).
    #[command(name = "apibinding", visible_alias = "apibindings")]
    ApiBinding {
        #[arg(value_name = "APIBINDING_NAME")]
        name: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum CrdCommand {
    /// Snapshot a CRD and convert it to an APIResourceSchema.
    #[command(override_usage = "kubectl kcp crd snapshot -f FILE --prefix PREFIX")]
    Snapshot(SnapshotArgs),
}

impl KcpCli {
    pub async fn run(self, io: &mut Streams<'_>, stdin: &mut dyn Read) -> Result<()> {
        // Only the commands that talk to a server need a kubeconfig.
        let env = || -> Result<Env> {
            Ok(Env {
                workspace: self.workspace.clone(),
                ..self.global.env()?
            })
        };
        match &self.command {
            KcpCommand::Crd {
                action: CrdCommand::Snapshot(args),
            } => crd_snapshot::run(args, stdin, &mut *io.out),
            KcpCommand::Bind {
                what: BindCommand::ApiExport(args),
            } => bind::run(&env()?, args, io).await,
            KcpCommand::Claims { action } => match action {
                ClaimsCommand::Get {
                    what: ClaimsGetCommand::ApiBinding { name },
                } => claims::get(&env()?, name.as_deref(), io).await,
                ClaimsCommand::Accept(args) => {
                    claims::answer(&env()?, args, ClaimState::Accepted, io).await
                }
                ClaimsCommand::Reject(args) => {
                    claims::answer(&env()?, args, ClaimState::Rejected, io).await
                }
            },
        }
    }
}

/// Runs against the process's standard streams; a failure ends as kcp's plugin ends:
/// `error: <message>` on stderr and exit code 1.
pub async fn execute(cli: KcpCli) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let mut stdin = std::io::stdin();
    let mut io = Streams {
        out: &mut out,
        err: &mut err,
    };
    match cli.run(&mut io, &mut stdin).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn parse(line: &[&str]) -> KcpCli {
        KcpCli::try_parse_from(std::iter::once("kubectl-kcp").chain(line.iter().copied()))
            .unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    #[test]
    fn the_command_line_is_consistent() {
        KcpCli::command().debug_assert();
    }

    #[test]
    fn subcommands_and_global_flags() {
        let cli = parse(&[
            "bind",
            "apiexport",
            "root:p:e",
            "--kubeconfig",
            "/tmp/kc",
            "--name",
            "b",
            "-w",
            ":root:consumer",
        ]);
        assert_eq!(cli.workspace.as_deref(), Some(":root:consumer"));
        assert_eq!(
            cli.global.kubeconfig.as_deref(),
            Some(std::path::Path::new("/tmp/kc"))
        );
        let KcpCommand::Bind {
            what: BindCommand::ApiExport(args),
        } = cli.command
        else {
            panic!("not bind");
        };
        assert_eq!(args.reference.as_deref(), Some("root:p:e"));
        assert_eq!(args.name.as_deref(), Some("b"));

        let cli = parse(&[
            "claims",
            "accept",
            "apibinding",
            "cowboys",
            "--resource",
            "secrets.core",
        ]);
        let KcpCommand::Claims {
            action: ClaimsCommand::Accept(args),
        } = cli.command
        else {
            panic!("not claims accept");
        };
        assert_eq!(args.args, ["apibinding", "cowboys"]);
        assert_eq!(args.resource.as_deref(), Some("secrets.core"));

        let cli = parse(&["claims", "get", "apibinding"]);
        assert!(matches!(
            cli.command,
            KcpCommand::Claims {
                action: ClaimsCommand::Get {
                    what: ClaimsGetCommand::ApiBinding { name: None }
                }
            }
        ));

        let cli = parse(&[
            "crd", "snapshot", "-f", "-", "--prefix", "today", "-o", "json",
        ]);
        let KcpCommand::Crd {
            action: CrdCommand::Snapshot(args),
        } = cli.command
        else {
            panic!("not crd snapshot");
        };
        assert_eq!(
            (args.filename.as_str(), args.prefix.as_str()),
            ("-", "today")
        );
        assert_eq!(args.output, "json");
    }

    #[test]
    fn snapshot_runs_without_a_kubeconfig() {
        let cli = parse(&[
            "crd",
            "snapshot",
            "-f",
            "-",
            "--prefix",
            "p",
            "--kubeconfig",
            "/nonexistent",
        ]);
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: example.io\n  names: {kind: Widget, plural: widgets}\n  scope: Cluster\n  versions: [{name: v1, served: true, storage: true}]\n";
        let (mut out, mut err) = (Vec::<u8>::new(), Vec::<u8>::new());
        let mut io = Streams {
            out: &mut out,
            err: &mut err,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime
            .block_on(cli.run(&mut io, &mut crd.as_bytes()))
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("name: p.widgets.example.io"), "{text}");
    }
}
