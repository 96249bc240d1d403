//! The egress guard listener (`PLIMSOLL_GUARD_ADDR`): the one HTTPS path (TLS
//! ends at the operator's endpoint in front of it) through which a granted
//! VM that runs elsewhere reaches its run's broker. It serves
//! [`Guard::handle`] and nothing else: no RPC, no metrics, no health. Every
//! request outside the guard path is the guard's own 404, and every one
//! without an admitted run's credential its 401.
//!
//! It shares the RPC listener's connection cap ([`crate::listener::Guarded::sibling`])
//! and drains after it: on SIGTERM the RPC listener stops taking calls and
//! waits for the runs in flight, which may still call their brokers; the
//! provider shuts down; only then does the guard listener stop taking
//! connections and finish those it has.

use std::sync::Arc;

use plimsoll_core::grant::guard::Guard;

/// The guard listener's routes: everything goes to the guard.
pub fn router(guard: Arc<Guard>) -> axum::Router {
    axum::Router::new().fallback(move |req: axum::extract::Request| {
        let guard = guard.clone();
        async move { guard.handle(req).await.map(axum::body::Body::new) }
    })
}
