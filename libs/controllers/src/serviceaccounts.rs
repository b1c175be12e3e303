//! The service-account controller: every live namespace of every logical cluster has a `default`
//! ServiceAccount, created when the namespace appears and again whenever it is deleted while the
//! namespace lives (Kubernetes' serviceaccounts controller). Terminating namespaces get none.

use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::per_namespace::{self, NamespaceObject};

/// The ServiceAccount every namespace has.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

struct DefaultServiceAccount {
    def: Arc<ResourceDef>,
}

impl NamespaceObject for DefaultServiceAccount {
    fn controller(&self) -> &'static str {
        "serviceaccounts"
    }

    fn def(&self) -> &Arc<ResourceDef> {
        &self.def
    }

    fn name(&self) -> &'static str {
        DEFAULT_SERVICE_ACCOUNT
    }

    fn desired(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT},
        })
    }

    /// Kubernetes only ensures the account exists; its content is the user's.
    fn corrected(&self, _current: &Value) -> Option<Value> {
        None
    }

    fn keeps_content(&self) -> bool {
        false
    }
}

/// Starts the controller; it stops when the server shuts down.
pub fn spawn(server: Arc<ApiServer>) {
    let Some(def) = per_namespace::builtin("", "serviceaccounts") else {
        return;
    };
    per_namespace::spawn(server, DefaultServiceAccount { def });
}
