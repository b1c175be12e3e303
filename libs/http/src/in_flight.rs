//! kube-apiserver's limits on requests in flight (`--max-requests-inflight`,
//! `--max-mutating-requests-inflight`): beyond them a request is refused with 429 and
//! `Retry-After`, which clients retry. A request holds its place until its response body is sent
//! or dropped, so answers a client does not read (a large list on a stalled stream) stay bounded
//! in number, and so in memory. Watches are long-running and not counted.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Method;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Body;

/// kube-apiserver's answer when too many requests are in flight: plain text, retried by clients.
pub fn too_many_requests() -> http::Response<Body> {
    let mut resp = crate::response::text(
        http::StatusCode::TOO_MANY_REQUESTS,
        "Too many requests, please try again later.\n",
    );
    resp.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    resp
}

/// kube-apiserver's defaults.
pub const MAX_READS: usize = 400;
pub const MAX_WRITES: usize = 200;

pub struct InFlight {
    reads: Arc<Semaphore>,
    writes: Arc<Semaphore>,
    /// The bounds, to tell the places taken.
    limits: (usize, usize),
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight::new(MAX_READS, MAX_WRITES)
    }
}

impl InFlight {
    pub fn new(reads: usize, writes: usize) -> InFlight {
        InFlight {
            reads: Arc::new(Semaphore::new(reads)),
            writes: Arc::new(Semaphore::new(writes)),
            limits: (reads, writes),
        }
    }

    /// A place for a request of `method`, or `None` when its kind is full.
    pub fn admit(&self, method: &Method) -> Option<OwnedSemaphorePermit> {
        let pool = match *method {
            Method::GET | Method::HEAD | Method::OPTIONS => &self.reads,
            _ => &self.writes,
        };
        pool.clone().try_acquire_owned().ok()
    }

    /// Read and write places taken now.
    pub fn in_use(&self) -> (usize, usize) {
        (
            self.limits.0.saturating_sub(self.reads.available_permits()),
            self.limits
                .1
                .saturating_sub(self.writes.available_permits()),
        )
    }
}

/// A response body that keeps something (its request's place, a metric's count) until it is sent
/// or dropped.
struct Holding<G> {
    inner: Body,
    _guard: G,
}

impl<G: Unpin> HttpBody for Holding<G> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// `body`, holding `guard` (a place, a metric's count) until it is done.
pub fn holding<G: Send + Unpin + 'static>(body: Body, guard: G) -> Body {
    Holding {
        inner: body,
        _guard: guard,
    }
    .boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_have_places_of_their_own() {
        let limits = InFlight::new(1, 1);
        let read = limits.admit(&Method::GET);
        assert!(read.is_some());
        assert!(limits.admit(&Method::GET).is_none(), "reads are full");
        let write = limits.admit(&Method::POST);
        assert!(write.is_some(), "writes count apart");
        assert!(limits.admit(&Method::DELETE).is_none());
        assert_eq!(limits.in_use(), (1, 1));
        // A body holding the place frees it when dropped.
        let body = holding(
            http_body_util::Empty::new().boxed_unsync(),
            read.expect("a place"),
        );
        drop(body);
        assert!(limits.admit(&Method::GET).is_some());
        drop(write);
    }
}
