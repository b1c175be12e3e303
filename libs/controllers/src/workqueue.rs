//! A work queue for controllers that reconcile many independent keys at once, with client-go's
//! workqueue guarantees: a key waits in the queue at most once, is handled by one worker at a time,
//! and a key added while it is being handled is handled again afterwards (nothing is lost, nothing
//! runs twice concurrently). Failed keys come back after a per-key backoff.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Room for this many keys is kept when the queue drains; more is given back.
const SHRINK_ABOVE: usize = 1024;

struct State<K> {
    queue: VecDeque<K>,
    /// Keys in `queue`.
    queued: HashSet<K>,
    /// Keys a worker is handling.
    active: HashSet<K>,
    /// Active keys added again meanwhile: queued when their worker is done.
    dirty: HashSet<K>,
    /// Consecutive failures per key, for the backoff.
    failures: HashMap<K, u32>,
}

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    /// First retry delay of a failing key; doubled on every further failure up to `max_backoff`.
    first_backoff: Duration,
    max_backoff: Duration,
}

/// What a reconcile of one key asks for next.
pub enum Outcome {
    /// Done until something changes.
    Done,
    /// Look again after this long (waiting on something no event announces).
    After(Duration),
    /// Failed: retried with backoff.
    Failed,
}

impl Outcome {
    /// `Done` for a reconcile that went through, else `Failed` once `report` has told of the error.
    pub fn of<E>(result: Result<(), E>, report: impl FnOnce(E)) -> Outcome {
        match result {
            Ok(()) => Outcome::Done,
            Err(err) => {
                report(err);
                Outcome::Failed
            }
        }
    }
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static> WorkQueue<K> {
    pub fn new(first_backoff: Duration, max_backoff: Duration) -> Arc<WorkQueue<K>> {
        Arc::new(WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued: HashSet::new(),
                active: HashSet::new(),
                dirty: HashSet::new(),
                failures: HashMap::new(),
            }),
            ready: Notify::new(),
            first_backoff,
            max_backoff,
        })
    }

    fn state(&self) -> parking_lot::MutexGuard<'_, State<K>> {
        self.state.lock()
    }

    /// Queues `key` unless it is queued already.
    pub fn add(&self, key: K) {
        let mut s = self.state();
        if s.active.contains(&key) {
            s.dirty.insert(key);
            return;
        }
        if s.queued.insert(key.clone()) {
            s.queue.push_back(key);
            drop(s);
            self.ready.notify_one();
        }
    }

    /// Queues `key` after `delay`.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(queue) = queue.upgrade() {
                queue.add(key);
            }
        });
    }

    /// Keys waiting or being handled.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let s = self.state();
        s.queue.len() + s.active.len()
    }

    /// The next key to handle, marked active; hand it back with [`WorkQueue::done`].
    pub async fn next(&self) -> K {
        loop {
            let notified = self.ready.notified();
            {
                let mut s = self.state();
                if let Some(key) = s.queue.pop_front() {
                    s.queued.remove(&key);
                    s.active.insert(key.clone());
                    // A resync queues every key of the shard; once drained, give the room back.
                    if s.queue.is_empty() && s.queued.capacity() > SHRINK_ABOVE {
                        s.queue.shrink_to_fit();
                        s.queued.shrink_to_fit();
                    }
                    // More work may be waiting for another worker.
                    if !s.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    /// Ends the handling of `key`; `outcome` says whether and when it comes back.
    pub fn done(self: &Arc<Self>, key: K, outcome: Outcome) {
        let retry = {
            let mut s = self.state();
            s.active.remove(&key);
            let retry = match outcome {
                Outcome::Done => {
                    s.failures.remove(&key);
                    None
                }
                Outcome::After(delay) => {
                    s.failures.remove(&key);
                    Some(delay)
                }
                Outcome::Failed => {
                    let n = s.failures.entry(key.clone()).or_insert(0);
                    *n = n.saturating_add(1);
                    Some(
                        self.first_backoff
                            .saturating_mul(1 << (*n - 1).min(16))
                            .min(self.max_backoff),
                    )
                }
            };
            if s.dirty.remove(&key) {
                drop(s);
                self.add(key);
                return;
            }
            retry
        };
        if let Some(delay) = retry {
            self.add_after(key, delay);
        }
    }

    /// Forgets every queued key (the caller is about to queue what matters again); keys being
    /// handled finish normally.
    pub fn clear(&self) {
        let mut s = self.state();
        s.queue.clear();
        s.queued.clear();
    }

    /// Runs `workers` tasks handling keys with `reconcile` until `stop` is cancelled.
    pub fn spawn_workers<F, Fut>(
        self: &Arc<Self>,
        workers: usize,
        stop: CancellationToken,
        reconcile: F,
    ) where
        F: Fn(K) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        let reconcile = Arc::new(reconcile);
        for _ in 0..workers.max(1) {
            let queue = self.clone();
            let reconcile = reconcile.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                loop {
                    let key = tokio::select! {
                        _ = stop.cancelled() => return,
                        key = queue.next() => key,
                    };
                    let outcome = tokio::select! {
                        _ = stop.cancelled() => return,
                        outcome = reconcile(key.clone()) => outcome,
                    };
                    queue.done(key, outcome);
                    // A reconcile that finds nothing to do never awaits, and a full queue never
                    // makes `next` wait: without this, workers resyncing 100k keys at start-up hold
                    // every runtime thread and starve the listener (a first TLS handshake took 7 s).
                    tokio::task::yield_now().await;
                }
            });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_drained_queue_gives_back_the_room_of_a_burst() {
        let queue: Arc<WorkQueue<u32>> =
            WorkQueue::new(Duration::from_millis(10), Duration::from_secs(1));
        for key in 0..20_000 {
            queue.add(key);
        }
        assert!(queue.state().queued.capacity() >= 20_000);
        for _ in 0..20_000 {
            let key = queue.next().await;
            queue.done(key, Outcome::Done);
        }
        let s = queue.state();
        assert!(s.queue.is_empty() && s.queued.is_empty());
        assert!(
            s.queued.capacity() <= SHRINK_ABOVE,
            "{}",
            s.queued.capacity()
        );
        assert!(s.queue.capacity() <= SHRINK_ABOVE, "{}", s.queue.capacity());
    }

    #[tokio::test]
    async fn a_key_is_never_handled_twice_at_once_and_never_lost() {
        let queue: Arc<WorkQueue<u32>> =
            WorkQueue::new(Duration::from_millis(10), Duration::from_secs(1));
        let running = Arc::new(StdMutex::new(HashSet::new()));
        let handled = Arc::new(AtomicUsize::new(0));
        let overlap = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        {
            let (running, handled, overlap) = (running.clone(), handled.clone(), overlap.clone());
            queue.spawn_workers(8, stop.clone(), move |key| {
                let (running, handled, overlap) =
                    (running.clone(), handled.clone(), overlap.clone());
                async move {
                    if !running.lock().unwrap().insert(key) {
                        overlap.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    running.lock().unwrap().remove(&key);
                    handled.fetch_add(1, Ordering::SeqCst);
                    Outcome::Done
                }
            });
        }
        for round in 0..20 {
            for key in 0..4 {
                queue.add(key);
            }
            if round % 5 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        while queue.len() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stop.cancel();
        assert_eq!(overlap.load(Ordering::SeqCst), 0);
        // Each key at least once, and far fewer times than it was added (duplicates collapse).
        let n = handled.load(Ordering::SeqCst);
        assert!((4..80).contains(&n), "handled {n} times");
    }

    #[tokio::test]
    async fn keys_are_deduplicated_and_rerun_after_handling() {
        let q: Arc<WorkQueue<&'static str>> =
            WorkQueue::new(Duration::from_millis(10), Duration::from_secs(1));
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.next().await, "a");
        // Added while handled: queued again once handling ends.
        q.add("a");
        assert_eq!(q.next().await, "b");
        q.done("b", Outcome::Done);
        q.done("a", Outcome::Done);
        assert_eq!(q.next().await, "a");
        q.done("a", Outcome::Done);
        assert_eq!(q.len(), 0);
    }

    #[tokio::test]
    async fn failures_come_back_with_growing_backoff() {
        let q: Arc<WorkQueue<&'static str>> =
            WorkQueue::new(Duration::from_millis(10), Duration::from_secs(1));
        q.add("a");
        let mut key = q.next().await;
        for n in 1..=3 {
            q.done(key, Outcome::Failed);
            assert_eq!(q.state().failures.get("a"), Some(&n));
            let again = tokio::time::timeout(Duration::from_secs(10), q.next()).await;
            key = again.expect("the failed key comes back");
        }
        q.done(key, Outcome::Done);
        assert!(q.state().failures.is_empty());
    }
}
