//! Warnings raised during admission (webhook responses' `warnings`, policies' `Warn` action),
//! collected for the request being served and returned as `Warning` headers.
//!
//! Like kube-apiserver's request-context recorder, the sink travels with the request's task
//! rather than through every registry signature; outside [`collect`] warnings are dropped.

use std::cell::RefCell;
use std::future::Future;

tokio::task_local! {
    static WARNINGS: RefCell<Vec<String>>;
}

/// Runs `f`, returning its output and the warnings added while it ran.
pub async fn collect<F: Future>(f: F) -> (F::Output, Vec<String>) {
    WARNINGS
        .scope(RefCell::new(Vec::new()), async {
            let out = f.await;
            let warnings = WARNINGS.with(|w| w.take());
            (out, warnings)
        })
        .await
}

/// Adds a warning for the current request.
pub fn add(warning: String) {
    let _ = WARNINGS.try_with(|w| w.borrow_mut().push(warning));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn collected_inside_dropped_outside() {
        add("lost".into());
        let ((), warnings) = collect(async {
            add("one".into());
            tokio::task::yield_now().await;
            add("two".into());
        })
        .await;
        assert_eq!(warnings, vec!["one".to_string(), "two".to_string()]);
    }
}
