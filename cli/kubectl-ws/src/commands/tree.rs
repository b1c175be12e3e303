//! `kubectl ws tree [-f]`: the workspaces below the current one, drawn as kcp draws them (treeprint).

use std::future::Future;
use std::pin::Pin;

use super::{Env, Streams};
use crate::client::Client;
use crate::cluster_url::ClusterUrl;
use crate::error::{Error, Result};
use crate::path::WorkspacePath;

/// One line of the tree and what hangs below it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Node {
    pub label: String,
    pub children: Vec<Node>,
}

pub async fn run(env: &Env, full: bool, io: &mut Streams<'_>) -> Result<()> {
    let kc = env.load()?;
    let server = kc.current_server()?;
    let Some(url) = ClusterUrl::parse(&server) else {
        // Not an error in kcp either: the context may point at something that is not a workspace.
        writeln!(
            io.out,
            "current context URL {server:?} does not point directly to a kcp workspace"
        )?;
        return Ok(());
    };
    let client = env.client(&kc).await?;
    let name = if full {
        url.path.to_string()
    } else {
        url.path.base().to_owned()
    };
    let mut top = Node {
        label: name.clone(),
        children: Vec::new(),
    };
    populate(&client, &mut top, url.path.clone(), name, full).await?;
    let root = Node {
        label: ".".to_owned(),
        children: vec![top],
    };
    // kcp prints the tree with Println after treeprint's trailing newline: one empty line at the end.
    writeln!(io.out, "{}", render(&root))?;
    Ok(())
}

/// Lists the workspaces in `path` and recurses into each through the logical cluster its URL names.
fn populate<'a>(
    client: &'a Client,
    node: &'a mut Node,
    path: WorkspacePath,
    name: String,
    full: bool,
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
            let child_name = if full {
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
            } else {
                ClusterUrl::parse(&ws.spec.url)
                    .map(|u| u.path)
                    .ok_or_else(|| Error::ChildUrl(ws.spec.url.clone()))?
            };
            let mut child = Node {
                label: child_name.clone(),
                children: Vec::new(),
            };
            populate(client, &mut child, child_path, child_name, full).await?;
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
