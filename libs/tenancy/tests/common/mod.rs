//! A server with kcp's tenancy plugged in, over the generic server's test harness.
#![allow(unused_imports)]

pub use kcp_apiserver::testing::{Engine, builtin};

/// A server with tenancy, and the tenancy plugged into it.
pub struct Harness {
    pub h: kcp_apiserver::testing::Harness,
    pub tenancy: kcp_tenancy::Tenancy,
}

pub async fn harness(engine: Engine) -> Harness {
    let tenancy = kcp_tenancy::Tenancy::new();
    let h = kcp_apiserver::testing::harness_with(engine, |b| tenancy.install(b)).await;
    Harness { h, tenancy }
}
