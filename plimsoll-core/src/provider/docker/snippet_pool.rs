//! The snippets' warm pool (`SANDBOX_SNIPPET_POOL`): snippet containers made
//! ahead of time with every wall of a fresh run in place and `node -` already
//! waiting for its code. Each serves exactly one run, taken out of the pool
//! before its code is written, and is removed after it; the pool refills in
//! the background. A granted run never takes one (its broker socket is
//! mounted at creation), nor does a run while the pool is empty: both get a
//! fresh container, as without the pool.
//!
//! A member's container is the same as a fresh run's but for what an auditor
//! can see: it is labelled `io.plimsoll.pool=snippet`, its
//! `io.plimsoll.expires` label allows the member's longest wait plus the
//! longest run, and the run's record says where it ran (`RunContext::warm`,
//! shown in the record's policy as `;sandbox=warm-pool`).

use std::sync::Arc;
use std::time::Duration;

use super::Inner;
use super::snippet::{GRACE, Launched, unix_after};
use super::warm::{self, Warm};

/// A member waiting longer than this is replaced rather than used.
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// The snippets' warm pool.
pub(crate) struct SnippetPool {
    warm: Arc<Warm<Launched>>,
    /// The longest run a member may serve (its expiry label allows it).
    longest: Duration,
}

impl SnippetPool {
    /// An empty pool of `size` members, each for a run of at most `longest`.
    pub(crate) fn new(size: usize, longest: Duration) -> SnippetPool {
        SnippetPool {
            warm: Arc::new(Warm::new(size, "snippet container")),
            longest,
        }
    }

    /// Stops refilling and removes every member (see [`Warm::close`]).
    pub(crate) async fn close(&self, budget: Duration) {
        self.warm.close(budget).await;
    }

    /// Its size, members ready and being made, and refill failures, now.
    pub(crate) fn stats(&self) -> crate::metrics::PoolStats {
        self.warm.stats()
    }

    /// Takes a member still waiting for code, or `None`; members whose
    /// container ended or that waited past [`MAX_WAIT`] are removed.
    pub(crate) fn take(&self) -> Option<Launched> {
        self.warm
            .take(|_| true, |m| !m.waiting() || m.started.elapsed() > MAX_WAIT)
    }
}

/// Starts background creation of members until the pool is full.
pub(crate) fn refill(inner: &Arc<Inner>, pool: &SnippetPool) {
    let longest = pool.longest;
    warm::refill(&pool.warm, || {
        let inner = inner.clone();
        async move {
            Launched::new(
                &inner,
                unix_after(MAX_WAIT + longest + GRACE),
                None,
                true,
                None,
            )
            .await
        }
    });
}
