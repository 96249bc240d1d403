//! The sessions' warm pool: session containers made ahead of time.

use std::sync::Arc;
use std::time::Duration;

use super::{DockerSession, open};
use crate::provider::SandboxSpec;
use crate::provider::docker::Inner;
use crate::provider::docker::warm::{self, Warm};

/// The label value pool members carry (their session is not known yet).
const POOL_LABEL: &str = "pool";

/// The sessions' warm pool: members made like session containers, with both
/// kernels running, never used by anyone; each goes to exactly one session.
pub(crate) struct Pool {
    warm: Arc<Warm<DockerSession>>,
    lifetime: Duration,
}

impl Pool {
    /// An empty pool of `size` members living at most `lifetime`.
    pub(crate) fn new(size: usize, lifetime: Duration) -> Pool {
        Pool {
            warm: Arc::new(Warm::new(size, "session container")),
            lifetime,
        }
    }

    /// Stops refilling and removes every member (see [`Warm::close`]).
    pub(crate) async fn close(&self, budget: Duration) {
        self.warm.close(budget).await;
    }

    /// Members waiting now.
    pub(crate) fn ready(&self) -> usize {
        self.warm.ready()
    }

    /// Its size, members ready and being made, and refill failures, now.
    pub(crate) fn stats(&self) -> crate::metrics::PoolStats {
        self.warm.stats()
    }

    /// Takes a member for `spec` (one with every hinted interpreter running),
    /// or `None`.
    pub(crate) fn take(&self, spec: &SandboxSpec) -> Option<DockerSession> {
        self.warm.take(
            |m| {
                let have = m.languages.lock().unwrap_or_else(|p| p.into_inner());
                spec.languages.iter().all(|l| have.contains(l))
            },
            |_| false,
        )
    }
}

/// Starts background creation of members until the pool is full.
pub(crate) fn refill(inner: &Arc<Inner>, pool: &Pool) {
    let lifetime = pool.lifetime;
    warm::refill(&pool.warm, || {
        let inner = inner.clone();
        async move {
            let spec = SandboxSpec {
                fingerprint: POOL_LABEL.into(),
                lifetime_ms: lifetime.as_millis() as u64,
                languages: vec!["python".into(), "javascript".into()],
            };
            open(&inner, &spec).await
        }
    });
}
