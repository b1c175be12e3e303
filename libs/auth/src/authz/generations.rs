//! Change counters per logical cluster, so a cache of decisions can forget what one LC's change
//! affects and keep the rest. The counters are a fixed number of stripes chosen by a hash of the
//! LC name (no state per LC): two LCs sharing a stripe only forget each other's entries more often
//! than needed, never too rarely.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Enough stripes that a change in one LC rarely touches another's cached decisions.
const STRIPES: usize = 1024;

#[derive(Debug)]
pub struct Generations {
    stripes: Box<[AtomicU64]>,
    /// Bumped when everything changes at once (a full reload).
    all: AtomicU64,
}

impl Default for Generations {
    fn default() -> Self {
        Self::new()
    }
}

impl Generations {
    pub fn new() -> Self {
        Generations {
            stripes: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
            all: AtomicU64::new(0),
        }
    }

    fn stripe(&self, cluster: &str) -> &AtomicU64 {
        let mut hasher = DefaultHasher::new();
        cluster.hash(&mut hasher);
        // The modulo keeps the index below `STRIPES`, which fits in usize.
        let index = (hasher.finish() % STRIPES as u64) as usize;
        &self.stripes[index]
    }

    /// A value that differs from every earlier one once `cluster` (or everything) has changed.
    /// Both counters only grow, so their sum grows whenever either does.
    pub fn of(&self, cluster: &str) -> u64 {
        self.all
            .load(Ordering::Acquire)
            .wrapping_add(self.stripe(cluster).load(Ordering::Acquire))
    }

    /// `cluster` changed. Call after the change is visible to readers, so that a decision made
    /// from the old state is always tagged with an older value.
    pub fn bump(&self, cluster: &str) {
        self.stripe(cluster).fetch_add(1, Ordering::AcqRel);
    }

    /// Everything changed.
    pub fn bump_all(&self) {
        self.all.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cluster_changes_alone() {
        let g = Generations::new();
        let (a, b) = (g.of("a"), g.of("b"));
        g.bump("a");
        assert_ne!(g.of("a"), a);
        assert_eq!(g.of("b"), b, "a and b share a stripe; pick other names");
        let (a, b) = (g.of("a"), g.of("b"));
        g.bump_all();
        assert_ne!(g.of("a"), a);
        assert_ne!(g.of("b"), b);
    }
}
