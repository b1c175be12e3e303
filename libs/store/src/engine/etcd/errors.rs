//! How etcd's errors map onto [`StoreError`]. etcd reports MVCC conditions only as gRPC status
//! messages, so they are recognised by their text (stable since etcd 3.0).

use crate::StoreError;

/// The etcd conditions callers can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Condition {
    Compacted,
    FutureRevision,
    TooLarge,
    Other,
}

pub(super) fn condition(err: &etcd_client::Error) -> Condition {
    match err {
        etcd_client::Error::GRpcStatus(status) => message_condition(status.message()),
        _ => Condition::Other,
    }
}

pub(super) fn message_condition(message: &str) -> Condition {
    if message.contains("required revision has been compacted") {
        Condition::Compacted
    } else if message.contains("required revision is a future revision") {
        Condition::FutureRevision
    } else if message.contains("request is too large") {
        Condition::TooLarge
    } else {
        Condition::Other
    }
}

pub(super) fn backend(err: etcd_client::Error) -> StoreError {
    StoreError::Backend(format!("etcd: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_mvcc_messages() {
        assert_eq!(
            message_condition("etcdserver: mvcc: required revision has been compacted"),
            Condition::Compacted
        );
        assert_eq!(
            message_condition("etcdserver: mvcc: required revision is a future revision"),
            Condition::FutureRevision
        );
        assert_eq!(
            message_condition("etcdserver: request is too large"),
            Condition::TooLarge
        );
        assert_eq!(message_condition("connection refused"), Condition::Other);
    }
}
