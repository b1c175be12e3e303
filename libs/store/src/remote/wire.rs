//! The store's types to and from their gRPC messages. Lossless both ways, so a remote store
//! answers exactly what the store behind it answered.

use kcp_proto::store::v1 as pb;

use crate::{Event, EventKind, KeyValue, StoreError, WatchResponse, Write};

pub(crate) fn kv_to(kv: KeyValue) -> pb::KeyValue {
    pb::KeyValue {
        key: kv.key,
        value: kv.value.into(),
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    }
}

pub(crate) fn kv_from(kv: pb::KeyValue) -> KeyValue {
    KeyValue {
        key: kv.key,
        value: kv.value.into(),
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    }
}

pub(crate) fn error_to(err: StoreError) -> pb::Error {
    use pb::error::Kind;
    let mut out = pb::Error::default();
    match err {
        StoreError::AlreadyExists { key } => {
            out.set_kind(Kind::AlreadyExists);
            out.key = key;
        }
        StoreError::NotFound { key } => {
            out.set_kind(Kind::NotFound);
            out.key = key;
        }
        StoreError::Conflict { key, current } => {
            out.set_kind(Kind::Conflict);
            out.key = key;
            out.current = current.map(kv_to);
        }
        StoreError::Compacted {
            requested,
            compacted,
        } => {
            out.set_kind(Kind::Compacted);
            out.requested = requested;
            out.revision = compacted;
        }
        StoreError::FutureRevision { requested, current } => {
            out.set_kind(Kind::FutureRevision);
            out.requested = requested;
            out.revision = current;
        }
        StoreError::WatchLagged => out.set_kind(Kind::WatchLagged),
        StoreError::TooLarge { size, limit } => {
            out.set_kind(Kind::TooLarge);
            out.size = size as u64;
            out.limit = limit as u64;
        }
        StoreError::Backend(message) => {
            out.set_kind(Kind::Backend);
            out.message = message;
        }
    }
    out
}

pub(crate) fn error_from(err: pb::Error) -> StoreError {
    use pb::error::Kind;
    // An unknown kind (a newer peer) reads as the backend error it would be to this caller.
    match Kind::try_from(err.kind).unwrap_or(Kind::Backend) {
        Kind::AlreadyExists => StoreError::AlreadyExists { key: err.key },
        Kind::NotFound => StoreError::NotFound { key: err.key },
        Kind::Conflict => StoreError::Conflict {
            key: err.key,
            current: err.current.map(kv_from),
        },
        Kind::Compacted => StoreError::Compacted {
            requested: err.requested,
            compacted: err.revision,
        },
        Kind::FutureRevision => StoreError::FutureRevision {
            requested: err.requested,
            current: err.revision,
        },
        Kind::WatchLagged => StoreError::WatchLagged,
        Kind::TooLarge => StoreError::TooLarge {
            size: usize::try_from(err.size).unwrap_or(usize::MAX),
            limit: usize::try_from(err.limit).unwrap_or(usize::MAX),
        },
        Kind::Backend => StoreError::Backend(err.message),
    }
}

/// A gRPC failure: the call did not reach the store (or its answer did not come back).
pub(crate) fn status_error(status: tonic::Status) -> StoreError {
    StoreError::Backend(format!(
        "remote store: {:?}: {}",
        status.code(),
        status.message()
    ))
}

/// An answer's error, if it carries one.
pub(crate) fn answered(error: Option<pb::Error>) -> Result<(), StoreError> {
    match error {
        Some(err) => Err(error_from(err)),
        None => Ok(()),
    }
}

pub(crate) fn write_to(write: &Write) -> pb::Write {
    use pb::write::Op;
    let op = match write {
        Write::Create { key, value } => Op::Create(pb::CreateRequest {
            key: key.clone(),
            value: value.clone().into(),
        }),
        Write::Update {
            key,
            value,
            expected,
        } => Op::Update(pb::UpdateRequest {
            key: key.clone(),
            value: value.clone().into(),
            expected: *expected,
        }),
        Write::Delete { key, expected } => Op::Delete(pb::DeleteVersionRequest {
            key: key.clone(),
            expected: *expected,
        }),
        Write::Exists { key } => Op::Exists(key.clone()),
    };
    pb::Write { op: Some(op) }
}

pub(crate) fn write_from(write: pb::Write) -> Result<Write, StoreError> {
    use pb::write::Op;
    Ok(match write.op {
        Some(Op::Create(c)) => Write::Create {
            key: c.key,
            value: c.value.into(),
        },
        Some(Op::Update(u)) => Write::Update {
            key: u.key,
            value: u.value.into(),
            expected: u.expected,
        },
        Some(Op::Delete(d)) => Write::Delete {
            key: d.key,
            expected: d.expected,
        },
        Some(Op::Exists(key)) => Write::Exists { key },
        None => {
            return Err(StoreError::Backend(
                "write_all: a write without an op".into(),
            ));
        }
    })
}

pub(crate) fn watch_to(resp: WatchResponse) -> pb::WatchAnswer {
    pb::WatchAnswer {
        revision: resp.revision,
        events: (resp.events.into_iter())
            .map(|e| pb::Event {
                delete: e.kind == EventKind::Delete,
                kv: Some(kv_to(e.kv)),
                prev: e.prev.map(kv_to),
            })
            .collect(),
        error: None,
    }
}

pub(crate) fn watch_from(answer: pb::WatchAnswer) -> Result<WatchResponse, StoreError> {
    answered(answer.error)?;
    let events = (answer.events.into_iter())
        .map(|e| {
            let kv = e.kv.map(kv_from).ok_or_else(|| {
                StoreError::Backend("remote store: an event without a key".into())
            })?;
            Ok(Event {
                kind: if e.delete {
                    EventKind::Delete
                } else {
                    EventKind::Put
                },
                kv,
                prev: e.prev.map(kv_from),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(WatchResponse {
        revision: answer.revision,
        events,
    })
}
