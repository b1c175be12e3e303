//! A seeded random sequence of operations, checked step by step against a plain model, then the whole
//! history checked through a watch. Set `KCP_STORE_SEED` to replay another sequence.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use super::Watcher;
use crate::{Event, EventKind, KeyValue, RangeRequest, Revision, Store, StoreError};

const STEPS: usize = 300;
const KEYS: &[&str] = &[
    "/m/a", "/m/b", "/m/b/c", "/m/c", "/m/d", "/m/e", "/m/f", "/m/g",
];

/// SplitMix64: tiny, seedable, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[derive(Default)]
struct Model {
    current: BTreeMap<String, KeyValue>,
    /// The state after each write, by its revision.
    snapshots: Vec<(Revision, BTreeMap<String, KeyValue>)>,
    events: Vec<Event>,
    last: Revision,
}

impl Model {
    fn record(&mut self, rev: Revision, event: Event) {
        assert!(rev > self.last, "revision {rev} not after {}", self.last);
        self.last = rev;
        match event.kind {
            EventKind::Put => self.current.insert(event.kv.key.clone(), event.kv.clone()),
            EventKind::Delete => self.current.remove(&event.kv.key),
        };
        self.snapshots.push((rev, self.current.clone()));
        self.events.push(event);
    }
}

fn expected_range(state: &BTreeMap<String, KeyValue>, req: &RangeRequest) -> (Vec<KeyValue>, bool) {
    let mut matching = state
        .values()
        .filter(|kv| kv.key.starts_with(&req.prefix))
        .filter(|kv| req.start_after.as_ref().is_none_or(|after| kv.key > *after))
        .cloned();
    let kvs: Vec<KeyValue> = matching
        .by_ref()
        .take(if req.limit == 0 {
            usize::MAX
        } else {
            req.limit
        })
        .collect();
    (kvs, matching.next().is_some())
}

pub async fn randomized_against_model(store: Arc<dyn Store>) {
    run_model(store, false).await
}

/// The same, compacting every 20 steps at a random revision already written: reads at or after the
/// compacted revision and the watch from it must still see exactly the model's states and events.
pub async fn randomized_with_compaction(store: Arc<dyn Store>) {
    run_model(store, true).await
}

async fn run_model(store: Arc<dyn Store>, compacting: bool) {
    let seed = std::env::var("KCP_STORE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6b63_705f_7273);
    let mut rng = Rng(seed);
    let mut model = Model::default();
    let start = store.current_revision().await.expect("revision");
    model.last = start;

    let mut compacted = start;
    for step in 0..STEPS {
        if compacting && step % 20 == 19 && !model.snapshots.is_empty() {
            // A separate generator, so the operations are those of the uncompacted run.
            let pick = (step as u64).wrapping_mul(0x9e37_79b9) as usize % model.snapshots.len();
            let revision = model.snapshots[pick].0.max(compacted);
            store.compact(revision).await.expect("compact");
            compacted = revision;
            model.snapshots.retain(|(rev, _)| *rev >= revision);
        }
        let key = *rng.pick(KEYS);
        let value = Bytes::from(format!("{step}"));
        let existing = model.current.get(key).cloned();
        let context = format!("seed {seed} step {step}");
        match rng.below(100) {
            0..25 => {
                let got = store.create(key, value.clone()).await;
                match existing {
                    Some(_) => assert_eq!(
                        got,
                        Err(StoreError::AlreadyExists { key: key.into() }),
                        "{context}"
                    ),
                    None => {
                        let rev = got.expect(&context);
                        let kv = KeyValue {
                            key: key.into(),
                            value,
                            create_revision: rev,
                            mod_revision: rev,
                        };
                        model.record(
                            rev,
                            Event {
                                kind: EventKind::Put,
                                kv,
                                prev: None,
                            },
                        );
                    }
                }
            }
            25..50 => {
                let right = rng.below(4) != 0;
                let expected = existing.as_ref().map_or(1, |kv| {
                    if right {
                        kv.mod_revision
                    } else {
                        kv.mod_revision + 1000
                    }
                });
                let got = store.update(key, value.clone(), expected).await;
                match existing {
                    None => assert_eq!(
                        got,
                        Err(StoreError::NotFound { key: key.into() }),
                        "{context}"
                    ),
                    Some(cur) if !right => {
                        assert_eq!(
                            got,
                            Err(StoreError::Conflict {
                                key: key.into(),
                                current: Some(cur)
                            }),
                            "{context}"
                        )
                    }
                    Some(cur) => {
                        let rev = got.expect(&context);
                        let kv = KeyValue {
                            key: key.into(),
                            value,
                            create_revision: cur.create_revision,
                            mod_revision: rev,
                        };
                        model.record(
                            rev,
                            Event {
                                kind: EventKind::Put,
                                kv,
                                prev: Some(cur),
                            },
                        );
                    }
                }
            }
            50..65 => {
                let expected = match (rng.below(3), &existing) {
                    (0, _) => None,
                    (1, Some(kv)) => Some(kv.mod_revision + 1000),
                    (_, Some(kv)) => Some(kv.mod_revision),
                    (_, None) => Some(1),
                };
                let got = store.delete(key, expected).await;
                match existing {
                    None => assert_eq!(
                        got,
                        Err(StoreError::NotFound { key: key.into() }),
                        "{context}"
                    ),
                    Some(cur) if expected.is_some_and(|e| e != cur.mod_revision) => {
                        assert_eq!(
                            got,
                            Err(StoreError::Conflict {
                                key: key.into(),
                                current: Some(cur)
                            }),
                            "{context}"
                        )
                    }
                    Some(cur) => {
                        let (rev, deleted) = got.expect(&context);
                        assert_eq!(deleted, cur, "{context}");
                        let kv = KeyValue {
                            key: key.into(),
                            value: Bytes::new(),
                            create_revision: 0,
                            mod_revision: rev,
                        };
                        model.record(
                            rev,
                            Event {
                                kind: EventKind::Delete,
                                kv,
                                prev: Some(cur),
                            },
                        );
                    }
                }
            }
            65..75 => assert_eq!(store.get(key).await.expect(&context), existing, "{context}"),
            n => {
                let at_snapshot = n >= 90 && !model.snapshots.is_empty();
                let (revision, state) = if at_snapshot {
                    let (rev, state) = rng.pick(&model.snapshots);
                    (Some(*rev), state.clone())
                } else {
                    (None, model.current.clone())
                };
                let req = RangeRequest {
                    prefix: (*rng.pick(&["/m/", "/m/b", ""])).into(),
                    start_after: (rng.below(3) == 0).then(|| rng.pick(KEYS).to_string()),
                    limit: rng.below(4),
                    revision,
                };
                let got = store.range(req.clone()).await.expect(&context);
                let (kvs, more) = expected_range(&state, &req);
                assert_eq!((got.kvs, got.more), (kvs, more), "{context}: {req:?}");
                if let Some(rev) = revision {
                    assert_eq!(got.revision, rev, "{context}");
                } else {
                    assert!(got.revision >= model.last, "{context}");
                }
            }
        }
    }

    // The whole history (since the compaction), replayed by a watch from before the first step. It
    // starts after the compacted revision itself: etcd drops a delete made exactly at it.
    let after = start.max(compacted);
    let expected: Vec<Event> = model
        .events
        .into_iter()
        .filter(|e| e.kv.mod_revision > after)
        .collect();
    let mut watcher = Watcher::new(&*store, "/m/", after).await;
    let events = watcher.events(expected.len()).await;
    assert_eq!(
        events, expected,
        "seed {seed}: watch replay differs from the model"
    );
}
