//! A work queue of object keys: each key is queued at most once, is never handled by two workers at
//! the same time (a key added while it is handled runs again afterwards), and failures come back after
//! an exponential backoff.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

const FIRST_RETRY: Duration = Duration::from_millis(20);
const LONGEST_RETRY: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Inner {
    queue: VecDeque<String>,
    queued: HashSet<String>,
    active: HashSet<String>,
    again: HashSet<String>,
    failures: HashMap<String, u32>,
}

#[derive(Default)]
pub struct WorkQueue {
    inner: Mutex<Inner>,
    ready: Notify,
}

impl WorkQueue {
    pub fn add(&self, key: String) {
        let mut inner = self.inner.lock();
        if inner.active.contains(&key) {
            inner.again.insert(key);
            return;
        }
        if inner.queued.insert(key.clone()) {
            inner.queue.push_back(key);
            drop(inner);
            self.ready.notify_one();
        }
    }

    /// The next key to handle; call [`WorkQueue::done`] when finished with it.
    pub async fn next(&self) -> String {
        loop {
            let ready = self.ready.notified();
            {
                let mut inner = self.inner.lock();
                if let Some(key) = inner.queue.pop_front() {
                    inner.queued.remove(&key);
                    inner.active.insert(key.clone());
                    if !inner.queue.is_empty() {
                        // Another worker may take the rest.
                        self.ready.notify_one();
                    }
                    return key;
                }
            }
            ready.await;
        }
    }

    /// Ends the handling of `key`: `ok` forgets its failures, otherwise it comes back after a backoff.
    pub fn done(self: &Arc<Self>, key: String, ok: bool) {
        let mut inner = self.inner.lock();
        inner.active.remove(&key);
        let again = inner.again.remove(&key);
        if ok {
            inner.failures.remove(&key);
            drop(inner);
            if again {
                self.add(key);
            }
            return;
        }
        let failures = inner.failures.entry(key.clone()).or_insert(0);
        *failures = failures.saturating_add(1);
        let delay = FIRST_RETRY
            .saturating_mul(1u32 << (*failures - 1).min(16))
            .min(LONGEST_RETRY);
        drop(inner);
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(queue) = queue.upgrade() {
                queue.add(key);
            }
        });
    }

    /// Forgets every queued key (the graph is being rebuilt and will queue what matters).
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.queue.clear();
        inner.queued.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_are_deduplicated_and_rerun_after_handling() {
        let q = Arc::new(WorkQueue::default());
        q.add("a".into());
        q.add("a".into());
        q.add("b".into());
        assert_eq!(q.next().await, "a");
        // Added while handled: queued again once handling ends.
        q.add("a".into());
        assert_eq!(q.next().await, "b");
        q.done("b".into(), true);
        q.done("a".into(), true);
        assert_eq!(q.next().await, "a");
        q.done("a".into(), true);
        assert!(q.inner.lock().queue.is_empty());
    }

    #[tokio::test]
    async fn failures_come_back() {
        let q = Arc::new(WorkQueue::default());
        q.add("a".into());
        let key = q.next().await;
        q.done(key, false);
        let again = tokio::time::timeout(Duration::from_secs(10), q.next()).await;
        assert_eq!(again.ok().as_deref(), Some("a"));
        assert_eq!(q.inner.lock().failures.get("a"), Some(&1));
    }
}
