//! `kubectl ws tree [-f] [--wide]`: the workspaces below the current one, drawn as kcp draws them
//! (treeprint; with `--wide` aligned by tabwriter).

use std::future::Future;
use std::pin::Pin;

use super::{Env, Streams};
use crate::client::Client;
use crate::cluster_url::ClusterUrl;
use crate::error::{Error, Result};
use crate::path::{PathError, WorkspacePath};
use crate::tabwriter;

/// One line of the tree and what hangs below it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Node {
    pub label: String,
    pub children: Vec<Node>,
}

/// How the tree is labelled.
#[derive(Debug, Clone, Copy, Default)]
pub struct TreeArgs {
    /// Full paths instead of names.
    pub full: bool,
    /// Each node followed by its Workspace's and LogicalCluster's phase, in aligned columns.
    pub wide: bool,
}

pub async fn run(env: &Env, args: TreeArgs, io: &mut Streams<'_>) -> Result<()> {
    let kc = env.load()?;
    let server = env.server(&kc)?;
    let Some(url) = ClusterUrl::parse(&server) else {
        // Not an error in kcp either: the context may point at something that is not a workspace.
        writeln!(
            io.out,
            "current context URL {server:?} does not point directly to a kcp workspace"
        )?;
        return Ok(());
    };
    let client = env.client(&kc).await?;
    let name = if args.full {
        url.path.to_string()
    } else {
        url.path.base().to_owned()
    };
    // The starting workspace's own Workspace object is not read: its phase shows as `-`.
    let label = label(&client, args, &name, &url.path, "").await;
    let mut top = Node {
        label,
        children: Vec::new(),
    };
    populate(&client, &mut top, url.path.clone(), name, args).await?;
    let root = Node {
        label: ".".to_owned(),
        children: vec![top],
    };
    if args.wide {
        write!(io.out, "{}", tabwriter::align(&render(&root), 2))?;
    } else {
        // kcp prints the tree with Println after treeprint's trailing newline: one empty line at the end.
        writeln!(io.out, "{}", render(&root))?;
    }
    Ok(())
}

/// The node's name, and with `--wide` its phases: `ws=` from the parent's list (`-` when unknown), `lc=`
/// from the workspace's LogicalCluster (`Unknown` when it cannot be read).
async fn label(
    client: &Client,
    args: TreeArgs,
    name: &str,
    path: &WorkspacePath,
    ws_phase: &str,
) -> String {
    if !args.wide {
        return name.to_owned();
    }
    let lc_phase = match client.logical_cluster_phase(path).await {
        Ok(p) if !p.is_empty() => p,
        _ => "Unknown".to_owned(),
    };
    let ws_phase = if ws_phase.is_empty() { "-" } else { ws_phase };
    format!("{name}\tws={ws_phase}\tlc={lc_phase}")
}

/// Lists the workspaces in `path` and recurses into each through the logical cluster its URL names.
fn populate<'a>(
    client: &'a Client,
    node: &'a mut Node,
    path: WorkspacePath,
    name: String,
    args: TreeArgs,
) -> Pin<Box<dyn Future<Output = Result<()>> + 'a>> {
    Box::pin(async move {
        let list = match client.list_workspaces(&path).await {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for ws in list.items {
            // Deleting workspaces may already refuse access; kcp leaves them out.
            if ws.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let child_name = if args.full {
                format!("{name}:{}", ws.metadata.name)
            } else {
                ws.metadata.name.clone()
            };
            if ws.spec.mount.is_some() {
                node.children.push(Node {
                    label: format!("{child_name} [m]"),
                    children: Vec::new(),
                });
                continue;
            }
            // The URL names the child's logical cluster; before the server fills it in, use the path.
            let child_path = if ws.spec.url.is_empty() {
                path.join(&ws.metadata.name)
                    .ok_or_else(|| PathError::Invalid(ws.metadata.name.clone()))?
            } else {
                ClusterUrl::parse(&ws.spec.url)
                    .map(|u| u.path)
                    .ok_or_else(|| Error::ChildUrl(ws.spec.url.clone()))?
            };
            let mut child = Node {
                label: label(client, args, &child_name, &child_path, &ws.status.phase).await,
                children: Vec::new(),
            };
            populate(client, &mut child, child_path, child_name, args).await?;
            node.children.push(child);
        }
        Ok(())
    })
}

/// treeprint's layout: the root's label, then `├── `/`└── ` per child with `│   `/`    ` continuing.
pub fn render(root: &Node) -> String {
    fn walk(out: &mut String, node: &Node, prefix: &str) {
        for (i, child) in node.children.iter().enumerate() {
            let last = i + 1 == node.children.len();
            out.push_str(prefix);
            out.push_str(if last { "└── " } else { "├── " });
            out.push_str(&child.label);
            out.push('\n');
            walk(
                out,
                child,
                &format!("{prefix}{}", if last { "    " } else { "│   " }),
            );
        }
    }
    let mut out = format!("{}\n", root.label);
    walk(&mut out, root, "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(s: &str) -> Node {
        Node {
            label: s.into(),
            children: vec![],
        }
    }

    #[test]
    fn renders_like_treeprint() {
        let tree = Node {
            label: ".".into(),
            children: vec![Node {
                label: "root".into(),
                children: vec![
                    Node {
                        label: "a".into(),
                        children: vec![leaf("b")],
                    },
                    leaf("c"),
                ],
            }],
        };
        assert_eq!(
            render(&tree),
            ".\n└── root\n    ├── a\n    │   └── b\n    └── c\n"
        );
    }
}
