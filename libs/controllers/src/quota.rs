//! Placeholder: filled in by the quota work.

use std::sync::Arc;

use kcp_apiserver::ApiServer;

pub fn spawn(_server: Arc<ApiServer>) {}
