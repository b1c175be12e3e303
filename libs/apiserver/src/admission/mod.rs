//! Admission checks the registry runs on writes, beyond a kind's own strategy.

pub mod quantity;
pub mod quota;
