//! Command-line flags of both plugins, and the dispatch from flags to [`crate::commands`].

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands::create::{self, CreateArgs};
use crate::commands::create_context::{self, CreateContext};
use crate::commands::tree::TreeArgs;
use crate::commands::{Env, Streams, current, tree, use_workspace};
use crate::error::{Error, Result};
use crate::kubeconfig::Sources;
use crate::overrides::Overrides;

const WS_CREATE_DEPRECATION: &str = "Command \"create\" is deprecated, install the 'kubectl create workspace' plugin instead, compare https://docs.kcp.io/kcp/latest/setup/kubectl-plugin/.";

#[derive(Debug, Clone, clap::Args)]
pub struct Global {
    /// Path to the kubeconfig file (default: the files in $KUBECONFIG merged, else ~/.kube/config)
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub logging: Logging,
}

/// klog's flags, which kcp's plugins accept (kubectl passes `-v` on): taken, and ignored, since
/// these plugins log nothing beyond their errors.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Logging {
    /// Log level (accepted for compatibility; these plugins only print errors)
    #[arg(short = 'v', long = "v", global = true, value_name = "LEVEL")]
    pub verbosity: Option<u32>,
    #[arg(long, global = true, hide = true)]
    pub vmodule: Option<String>,
    #[arg(long = "log_dir", global = true, hide = true)]
    pub log_dir: Option<String>,
    #[arg(long = "log_file", global = true, hide = true)]
    pub log_file: Option<String>,
    #[arg(long = "log_file_max_size", global = true, hide = true)]
    pub log_file_max_size: Option<u64>,
    #[arg(long = "log_backtrace_at", global = true, hide = true)]
    pub log_backtrace_at: Option<String>,
    #[arg(long, global = true, hide = true)]
    pub stderrthreshold: Option<String>,
    #[arg(long = "add_dir_header", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub add_dir_header: Option<bool>,
    #[arg(long, global = true, hide = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true")]
    pub alsologtostderr: Option<bool>,
    #[arg(long, global = true, hide = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true")]
    pub logtostderr: Option<bool>,
    #[arg(long = "one_output", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub one_output: Option<bool>,
    #[arg(long = "skip_headers", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub skip_headers: Option<bool>,
    #[arg(long = "skip_log_headers", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub skip_log_headers: Option<bool>,
}

impl Global {
    pub fn env(&self) -> Result<Env> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let env_var = std::env::var("KUBECONFIG").ok();
        let sources = Sources::locate(
            self.kubeconfig.as_deref(),
            env_var.as_deref(),
            home.as_deref(),
        )?;
        Ok(Env {
            sources,
            overrides: self.overrides.clone(),
            home_dir: home.and_then(|h| h.to_str().map(str::to_owned)),
            workspace: None,
        })
    }
}

/// Manages kcp workspaces.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl ws",
    version,
    after_help = "Examples:\n  kubectl ws .                  print the current workspace\n  kubectl ws my-workspace       enter a child of the current workspace\n  kubectl ws :root:org:team     enter an absolute path\n  kubectl ws ..                 enter the parent ('..:..' the grand-parent, ':' the root)\n  kubectl ws -                  enter the previous workspace\n  kubectl ws                    go to your home workspace ('~:child' below it)\n  kubectl ws tree               print the tree below the current workspace\n  kubectl ws create-context     a kubeconfig context for the current workspace, named after it\n"
)]
pub struct WsCli {
    #[command(flatten)]
    pub global: Global,
    /// Print only the workspace path, e.g. for a shell prompt.
    #[arg(long)]
    pub short: bool,
    /// Interactive workspace tree browser (not supported by this plugin).
    #[arg(short, long)]
    pub interactive: bool,
    /// <workspace>|..|.|-|~|:root:absolute:workspace|relative:workspace
    #[arg(value_name = "WORKSPACE")]
    pub workspace: Vec<String>,
    #[command(subcommand)]
    pub command: Option<WsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum WsCommand {
    /// Uses the given workspace as the current workspace. `-` is the previous workspace, `..` the parent,
    /// `.` the current one, `~` home.
    #[command(visible_alias = "cd")]
    Use {
        #[arg(value_name = "WORKSPACE")]
        workspace: Vec<String>,
        /// Print only the workspace path.
        #[arg(long)]
        short: bool,
    },
    /// Print the current workspace. Same as 'kubectl ws .'.
    Current {
        /// Print only the workspace path.
        #[arg(long)]
        short: bool,
        #[arg(hide = true)]
        extra: Vec<String>,
    },
    /// Print the current workspace tree.
    Tree {
        /// Show full workspace names.
        #[arg(short, long)]
        full: bool,
        /// Show workspace and logical cluster status for each node.
        #[arg(long)]
        wide: bool,
        /// Interactive workspace tree browser (not supported by this plugin).
        #[arg(short, long)]
        interactive: bool,
        /// Workspace path to target instead of the current one: ':root:my-ws' absolute, 'my-ws' relative,
        /// '.' and '..' allowed.
        #[arg(short, long)]
        workspace: Option<String>,
        #[arg(hide = true)]
        extra: Vec<String>,
    },
    /// Create a kubeconfig context for the current workspace.
    CreateContext {
        /// Name of the new context (default: the workspace's path).
        #[arg(value_name = "NAME")]
        name: Vec<String>,
        /// Overwrite the context if it already exists.
        #[arg(long)]
        overwrite: bool,
    },
    /// Creates a new workspace (deprecated: use `kubectl create workspace`).
    Create(CreateArgs),
}

/// Creates a new workspace.
#[derive(Debug, Parser)]
#[command(name = "kubectl create workspace", version)]
pub struct CreateCli {
    #[command(flatten)]
    pub global: Global,
    #[command(flatten)]
    pub args: CreateArgs,
}

impl WsCli {
    pub async fn run(self, io: &mut Streams<'_>) -> Result<()> {
        if self.interactive {
            if !self.workspace.is_empty() {
                return Err(Error::InteractiveArguments);
            }
            return Err(Error::InteractiveUnsupported);
        }
        if let (Some(ws), Some(_)) = (self.workspace.first(), &self.command) {
            return Err(Error::ExtraArgument(ws.clone()));
        }
        // kcp's commands answer a wrong number of arguments with their help (before reading any
        // kubeconfig), and succeed.
        let wrong_count = match &self.command {
            None => self.workspace.len() > 1,
            Some(WsCommand::Current { extra, .. } | WsCommand::Tree { extra, .. }) => {
                !extra.is_empty()
            }
            Some(WsCommand::CreateContext { name, .. }) => name.len() > 1,
            Some(_) => false,
        };
        if wrong_count {
            return help(None, io);
        }
        if let Some(WsCommand::Use { workspace, .. }) = &self.command
            && workspace.len() != 1
        {
            return help(Some("use"), io);
        }
        let env = self.global.env()?;
        match self.command {
            Some(WsCommand::Use { workspace, short }) => {
                let target = workspace.first().map(String::as_str).unwrap_or_default();
                use_workspace::run(&env, target, short, io).await
            }
            Some(WsCommand::Current { short, .. }) => current::run(&env, short, io),
            Some(WsCommand::Tree {
                interactive: true, ..
            }) => Err(Error::InteractiveUnsupported),
            Some(WsCommand::Tree {
                full,
                wide,
                workspace,
                ..
            }) => {
                let env = Env { workspace, ..env };
                tree::run(&env, TreeArgs { full, wide }, io).await
            }
            Some(WsCommand::CreateContext { name, overwrite }) => {
                let args = CreateContext {
                    name: name.into_iter().next(),
                    overwrite,
                    ..CreateContext::default()
                };
                create_context::run(&env, &args, io)
            }
            Some(WsCommand::Create(args)) => {
                writeln!(io.err, "{WS_CREATE_DEPRECATION}")?;
                create::run(&env, &args, io).await
            }
            None => {
                use_workspace::run(
                    &env,
                    self.workspace
                        .first()
                        .map(String::as_str)
                        .unwrap_or_default(),
                    self.short,
                    io,
                )
                .await
            }
        }
    }
}

/// The help of `kubectl ws` (or of its subcommand `sub`), on standard output as cobra prints it.
fn help(sub: Option<&str>, io: &mut Streams<'_>) -> Result<()> {
    let mut command = WsCli::command();
    command.build();
    let text = match sub.and_then(|s| command.find_subcommand_mut(s)) {
        Some(sub) => sub.render_help(),
        None => command.render_help(),
    };
    write!(io.out, "{text}")?;
    Ok(())
}

impl CreateCli {
    pub async fn run(self, io: &mut Streams<'_>) -> Result<()> {
        create::run(&self.global.env()?, &self.args, io).await
    }
}

/// One of the plugins' command lines, run as a process.
pub enum Plugin {
    Ws(WsCli),
    Create(CreateCli),
}

impl Plugin {
    /// Runs against stdout and stderr; a failure ends as cobra's does in kcp's plugins:
    /// `Error: <message>` (messages already include their causes) and exit code 1.
    pub async fn main(self) -> std::process::ExitCode {
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        let mut io = Streams {
            out: &mut out,
            err: &mut err,
        };
        let result = match self {
            Plugin::Ws(cli) => cli.run(&mut io).await,
            Plugin::Create(cli) => cli.run(&mut io).await,
        };
        match result {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("Error: {e}");
                std::process::ExitCode::FAILURE
            }
        }
    }
}
