//! The objects every phase writes: one ConfigMap shape, also used as the raw etcd value so both sides
//! move the same bytes.

use bytes::Bytes;

/// A ConfigMap named `name` with `payload_bytes` bytes of data.
pub fn configmap(name: &str, payload_bytes: usize, generation: u64) -> Bytes {
    let payload = payload(payload_bytes, generation);
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"app":"kcp-bench"}}}},"data":{{"payload":"{payload}"}}}}"#
    ))
}

/// The same ConfigMap with `metadata.resourceVersion`, for an update.
pub fn configmap_update(
    name: &str,
    resource_version: &str,
    payload_bytes: usize,
    generation: u64,
) -> Bytes {
    let payload = payload(payload_bytes, generation);
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","resourceVersion":"{resource_version}","labels":{{"app":"kcp-bench"}}}},"data":{{"payload":"{payload}"}}}}"#
    ))
}

pub fn namespace(name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
    ))
}

pub fn logical_cluster() -> Bytes {
    Bytes::from_static(
        br#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    )
}

/// The length of [`configmap`]`(name, payload_bytes, _)` for a name of `name_len` bytes.
pub fn configmap_len(name_len: usize, payload_bytes: usize) -> usize {
    configmap("", 0, 0).len() + name_len + payload_bytes
}

/// `n` printable bytes that differ with `generation` (so an update really changes the object).
pub fn payload(n: usize, generation: u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..n)
        .map(|i| {
            let k = (i as u64).wrapping_mul(31).wrapping_add(generation) % ALPHABET.len() as u64;
            char::from(ALPHABET[k as usize])
        })
        .collect()
}

/// A small, fast, deterministic generator for picking keys (quality is irrelevant here).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        if n == 0 { 0 } else { (r % n as u64) as usize }
    }
}
