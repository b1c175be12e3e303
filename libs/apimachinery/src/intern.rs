//! Equal values stored once: a shard keeps the same label sets, bound-resource lists and claim
//! sets in thousands of objects and index entries (every binding of one export carries the same
//! ones), so those are handed out as shared `Arc`s from an [`Interner`].
//!
//! The interner holds a strong reference to each value; a value nobody else holds any more is
//! dropped by a sweep, which runs when the table has doubled since the last one, so its cost is
//! spread over the insertions and the table holds at most twice what was in use at the last one.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

/// The table size below which no sweep runs.
const SWEEP_FROM: usize = 1024;

pub struct Interner<T: ?Sized> {
    values: HashSet<Arc<T>>,
    sweep_at: usize,
}

impl<T: ?Sized> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            values: HashSet::new(),
            sweep_at: SWEEP_FROM,
        }
    }
}

impl<T: ?Sized + Hash + Eq> Interner<T> {
    /// The value already held equal to `value`, else `value` from now on.
    pub fn intern(&mut self, value: Arc<T>) -> Arc<T> {
        if let Some(held) = self.values.get(&value) {
            return held.clone();
        }
        if self.values.len() >= self.sweep_at {
            self.values.retain(|v| Arc::strong_count(v) > 1);
            self.values.shrink_to_fit();
            self.sweep_at = (self.values.len() * 2).max(SWEEP_FROM);
        }
        self.values.insert(value.clone());
        value
    }

    /// How many values the table holds (some perhaps no longer used).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_are_one_value() {
        let mut interner: Interner<str> = Interner::default();
        let a = interner.intern(Arc::from("x"));
        let b = interner.intern(Arc::from("x"));
        assert!(Arc::ptr_eq(&a, &b));
        let c = interner.intern(Arc::from("y"));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(interner.len(), 2);
    }

    #[test]
    fn values_nobody_holds_are_dropped_by_the_sweeps() {
        let mut interner: Interner<str> = Interner::default();
        let kept = interner.intern(Arc::from("kept"));
        for i in 0..10 * SWEEP_FROM {
            drop(interner.intern(Arc::from(i.to_string())));
        }
        assert!(
            interner.len() <= SWEEP_FROM,
            "{} values held",
            interner.len()
        );
        // What is still used survives every sweep, and is still the one handed out.
        assert!(Arc::ptr_eq(&kept, &interner.intern(Arc::from("kept"))));
    }

    #[test]
    fn a_table_of_values_in_use_grows_without_sweeping_each_time() {
        let mut interner: Interner<str> = Interner::default();
        let held: Vec<Arc<str>> = (0..3 * SWEEP_FROM)
            .map(|i| interner.intern(Arc::from(i.to_string())))
            .collect();
        assert_eq!(interner.len(), held.len());
        assert!(interner.sweep_at >= held.len());
    }
}
