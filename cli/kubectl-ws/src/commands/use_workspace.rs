//! `kubectl ws [<arg>]` and `kubectl ws use <arg>`: switch the kubeconfig to another workspace.

use super::{Env, Streams, current};
use crate::claims;
use crate::client::Client;
use crate::cluster_url::ClusterUrl;
use crate::error::{Error, Result};
use crate::kubeconfig::Kubeconfig;
use crate::path::{ROOT, Target, WorkspacePath, parse_arg, resolve};

const LEGACY_ROOT_NOTE: &str = "Note: Using 'root:' to define an absolute path is no longer supported. Instead, use ':root' to specify an absolute path.";
const CD_NOTE: &str = "Note: 'kubectl ws' now matches 'cd' semantics: go to home workspace. 'kubectl ws -' to go back. 'kubectl ws .' to print current workspace.";

pub async fn run(env: &Env, arg: &str, short: bool, io: &mut Streams<'_>) -> Result<()> {
    let parsed = parse_arg(arg, env.home_dir.as_deref(), short);
    if parsed.legacy_root {
        writeln!(io.err, "{LEGACY_ROOT_NOTE}")?;
    }
    let mut kc = env.load()?;
    // As kcp, fail early when the current context is missing, whatever the target.
    kc.current_context()?;

    // Built at most once: it re-reads the kubeconfig and may run an exec credential plugin.
    let mut client = None;
    let (absolute, path) = match parsed.target {
        Target::Previous => {
            let client = env.client(&kc).await?;
            let server = kc.swap_previous()?;
            kc.save()?;
            report_claims(&client, &server, io).await?;
            return current::print(io.out, &server, short, None);
        }
        Target::Current => return current::print(io.out, &env.server(&kc)?, short, None),
        Target::TreeRoot => {
            let url = env.current_url(&kc)?;
            let server = url.with_path(&url.path.tree_root());
            let client = env.client(&kc).await?;
            return commit(&mut kc, &client, &server, short, None, io).await;
        }
        Target::Home { rest } => {
            let home = home_path(client.insert(env.client(&kc).await?)).await?;
            (true, format!("{home}{rest}"))
        }
        Target::Path { absolute, path } => (absolute, path),
    };

    let url = env.current_url(&kc)?;
    let target = resolve(&url.path, absolute, &path)?;
    let client = match client {
        Some(client) => client,
        None => env.client(&kc).await?,
    };
    let type_ref = check_exists(&client, &target).await?;
    commit(
        &mut kc,
        &client,
        &url.with_path(&target),
        short,
        type_ref.as_deref(),
        io,
    )
    .await?;
    if parsed.no_arg && !short {
        writeln!(io.err, "{CD_NOTE}")?;
    }
    Ok(())
}

/// Switches the kubeconfig to `server` and reports the new workspace.
async fn commit(
    kc: &mut Kubeconfig,
    client: &Client,
    server: &str,
    short: bool,
    type_ref: Option<&str>,
    io: &mut Streams<'_>,
) -> Result<()> {
    kc.enter(server)?;
    kc.save()?;
    report_claims(client, server, io).await?;
    current::print(io.out, server, short, type_ref)
}

/// kcp's check after a switch: warnings on stderr for permission claims the workspace's APIBindings
/// leave unanswered. A failure to look is reported, not fatal: the switch has happened.
async fn report_claims(client: &Client, server: &str, io: &mut Streams<'_>) -> Result<()> {
    let Some(url) = ClusterUrl::parse(server) else {
        return Ok(());
    };
    match client.list_api_bindings(&url.path).await {
        Ok(bindings) => {
            for w in claims::warnings(&bindings) {
                writeln!(io.err, "{w}")?;
            }
        }
        Err(e) => writeln!(io.err, "error checking APIBindings: {e}")?,
    }
    Ok(())
}

/// The path of the caller's home workspace, from the `spec.URL` of `root`'s `~` Workspace.
pub async fn home_path(client: &Client) -> Result<WorkspacePath> {
    let home = client.home_workspace().await?;
    ClusterUrl::parse(&home.spec.url)
        .map(|u| u.path)
        .ok_or(Error::HomeUrl(home.spec.url))
}

/// kcp's existence check: discovery in the target (403 or nothing served means denied), then the Workspace
/// object in the parent (404 means it does not exist; 403 there is no obstacle). Returns the type to print.
async fn check_exists(client: &Client, target: &WorkspacePath) -> Result<Option<String>> {
    let denied = client.discovery_groups(target).await? == 0;
    let mut not_found = false;
    let mut type_ref = None;
    if target.to_string() == ROOT {
        type_ref = Some(ROOT.to_owned());
    } else if let Some(parent) = target.parent() {
        match client.get_workspace(&parent, target.base()).await {
            Ok(ws) => type_ref = Some(ws.type_string()),
            Err(e) if e.is_not_found() => not_found = true,
            Err(_) => {}
        }
    }
    match (denied, not_found) {
        (true, true) => Err(Error::NotFound(target.to_string())),
        (true, false) => Err(Error::Denied(target.to_string())),
        _ => Ok(type_ref),
    }
}
