//! The API-server tests' shared harness lives in `kcp_apiserver::testing` (feature `test-util`),
//! where the controllers' tests use it too.
#![allow(unused_imports)]

pub use kcp_apiserver::testing::{Engine, Harness, builtin, harness, server};
