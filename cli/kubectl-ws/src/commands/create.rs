//! `kubectl create workspace <name>` (and the deprecated `kubectl ws create`).

use std::time::{Duration, Instant};

use super::create_context::{self, CreateContext};
use super::{Env, Streams, use_workspace};
use crate::error::{Error, Result};
use crate::location;
use crate::path::TypeRef;
use crate::workspace::Workspace;

/// Flags of the create command, as kcp names them.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CreateArgs {
    /// Name of the workspace to create in the current workspace.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// A workspace type (`name` or `path:name`). The default type depends on where this child workspace is
    /// created.
    #[arg(long = "type")]
    pub type_ref: Option<String>,
    /// Immediately enter the created workspace.
    #[arg(long)]
    pub enter: bool,
    /// Ignore if the workspace already exists. Requires none or absolute type path. Overwrites the context
    /// if --create-context is set.
    #[arg(long)]
    pub ignore_existing: bool,
    /// A label selector to select the scheduling location of the created workspace.
    #[arg(long, default_value = "")]
    pub location_selector: String,
    /// Create a kubeconfig context for the new workspace with the given name.
    #[arg(long, default_value = "")]
    pub create_context: String,
    /// Workspace path to create in instead of the current one: ':root:my-ws' absolute, 'my-ws' relative,
    /// '.' and '..' allowed.
    #[arg(short, long)]
    pub workspace: Option<String>,
}

/// How long kcp waits for a new workspace to become Ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const READY_POLL: Duration = Duration::from_millis(500);
/// How long a just-created workspace may take to show up in GETs (kcp's list can lag behind the create).
const VISIBLE_TIMEOUT: Duration = Duration::from_secs(5);
const VISIBLE_POLL: Duration = Duration::from_millis(100);

pub async fn run(env: &Env, args: &CreateArgs, io: &mut Streams<'_>) -> Result<()> {
    // cobra checks the argument count before anything else.
    let name = match args.names.as_slice() {
        [name] => name.as_str(),
        other => {
            return Err(Error::ArgumentCount {
                expected: 1,
                received: other.len(),
            });
        }
    };
    // Checked before anything is read, as kcp validates its flags first.
    let location = match args.location_selector.as_str() {
        "" => None,
        s => Some(location::parse(s).map_err(Error::LocationSelector)?),
    };
    let kc = env.load()?;
    let target = Env {
        workspace: args.workspace.clone(),
        ..env.clone()
    };
    let parent = target.current_url(&kc)?.path;
    let type_arg = args.type_ref.as_deref().filter(|t| !t.is_empty());
    if args.ignore_existing && type_arg.is_some_and(|t| t != "root" && !t.starts_with("root:")) {
        return Err(Error::IgnoreExistingRelativeType);
    }
    let wanted = type_arg.map(TypeRef::parse);
    let client = env.client(&kc).await?;

    let mut pre_existing = false;
    let mut ws = match client
        .create_workspace(
            &parent,
            &Workspace::create_request(name, wanted.as_ref(), location.as_ref()),
        )
        .await
    {
        Ok(ws) => ws,
        Err(e) if e.is_already_exists() && args.ignore_existing => {
            pre_existing = true;
            client.get_workspace(&parent, name).await?
        }
        Err(e) => return Err(e.into()),
    };
    let reference = format!("Workspace {:?} (type {})", name, ws.type_string());

    if pre_existing {
        if let Some(w) = &wanted {
            let existing = ws.spec.type_ref.clone().unwrap_or_default();
            // kcp's test: a differing non-empty name, or any differing path.
            if (!existing.name.is_empty() && existing.name != w.name) || existing.path != w.path {
                return Err(Error::TypeMismatch {
                    name: name.to_string(),
                    wanted: w.to_string(),
                    existing: ws.type_string(),
                });
            }
        }
        if ws.is_ready() {
            writeln!(io.out, "{reference} already exists.")?;
        } else {
            writeln!(
                io.out,
                "{reference} already exists. Waiting for it to be ready..."
            )?;
        }
    } else if !ws.is_ready() {
        writeln!(io.out, "{reference} created. Waiting for it to be ready...")?;
    }

    // A new workspace: wait until a GET sees it (a pre-existing one was just fetched), then until it is Ready.
    if !pre_existing {
        let start = Instant::now();
        ws = loop {
            match client.get_workspace(&parent, name).await {
                Ok(fetched) => break fetched,
                Err(e) if e.is_not_found() && start.elapsed() < VISIBLE_TIMEOUT => {
                    tokio::time::sleep(VISIBLE_POLL).await
                }
                Err(e) => return Err(e.into()),
            }
        };
    }
    let start = Instant::now();
    while !ws.is_ready() {
        if start.elapsed() >= READY_TIMEOUT {
            return Err(Error::NotReady(reference));
        }
        tokio::time::sleep(READY_POLL).await;
        ws = client.get_workspace(&parent, name).await?;
    }
    writeln!(io.out, "{reference} is ready to use.")?;

    // A context of its own replaces entering: `--enter` only decides whether it becomes the current one.
    if !args.create_context.is_empty() {
        let context = CreateContext {
            name: Some(args.create_context.clone()),
            overwrite: args.ignore_existing,
            keep_current: !args.enter,
            server: Some(ws.spec.url.clone()),
        };
        return create_context::run(env, &context, io)
            .map_err(|e| Error::CreateContext(Box::new(e)));
    }
    if args.enter {
        let name = if ws.metadata.name.is_empty() {
            name.to_string()
        } else {
            ws.metadata.name.clone()
        };
        // Relative to where it was created, `--workspace` included, as kcp resolves it.
        return use_workspace::run(&target, &name, false, io).await;
    }
    Ok(())
}
