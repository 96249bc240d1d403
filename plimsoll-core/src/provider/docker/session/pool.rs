//! The sessions' warm pool: session containers made ahead of time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{DockerSession, open};
use crate::provider::SandboxSpec;
use crate::provider::docker::Inner;

/// The label value pool members carry (their session is not known yet).
const POOL_LABEL: &str = "pool";

/// The sessions' warm pool: members made like session containers, with both
/// kernels running, never used by anyone; each goes to exactly one session.
pub(crate) struct Pool {
    members: Mutex<Vec<DockerSession>>,
    filling: std::sync::atomic::AtomicUsize,
    closed: std::sync::atomic::AtomicBool,
    /// Members that could not be made, since start.
    failures: std::sync::atomic::AtomicU64,
    size: usize,
    lifetime: Duration,
}

impl Pool {
    /// An empty pool of `size` members living at most `lifetime`.
    pub(crate) fn new(size: usize, lifetime: Duration) -> Pool {
        Pool {
            members: Mutex::new(Vec::new()),
            filling: std::sync::atomic::AtomicUsize::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
            failures: std::sync::atomic::AtomicU64::new(0),
            size,
            lifetime,
        }
    }

    /// Stops refilling, drops every member (each removes its container) and
    /// waits, at most `budget`, for members still being made to be dropped too.
    pub(crate) async fn close(&self, budget: Duration) {
        use std::sync::atomic::Ordering;
        self.closed.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + budget;
        loop {
            drop(std::mem::take(&mut *self.members()));
            if self.filling.load(Ordering::SeqCst) == 0 || tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Vec<DockerSession>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Members waiting now.
    pub(crate) fn ready(&self) -> usize {
        self.members().len()
    }

    /// Its size, members ready and being made, and refill failures, now.
    pub(crate) fn stats(&self) -> crate::metrics::PoolStats {
        use std::sync::atomic::Ordering;
        crate::metrics::PoolStats {
            target: self.size as u64,
            ready: self.ready() as u64,
            filling: self.filling.load(Ordering::SeqCst) as u64,
            refill_failures: self.failures.load(Ordering::Relaxed),
        }
    }

    /// Takes a member for `spec` (one with every hinted interpreter running),
    /// or `None`.
    pub(crate) fn take(&self, spec: &SandboxSpec) -> Option<DockerSession> {
        let mut pool = self.members();
        let i = pool.iter().position(|m| {
            let have = m.languages.lock().unwrap_or_else(|p| p.into_inner());
            spec.languages.iter().all(|l| have.contains(l))
        })?;
        Some(pool.swap_remove(i))
    }
}

/// Starts background creation of members until the pool is full. The tasks
/// hold the pool only weakly: a provider that goes away takes its members along.
pub(crate) fn refill(inner: &Arc<Inner>, pool: &Arc<Pool>) {
    use std::sync::atomic::Ordering;
    loop {
        if pool.closed.load(Ordering::SeqCst)
            || pool.ready() + pool.filling.load(Ordering::SeqCst) >= pool.size
        {
            return;
        }
        pool.filling.fetch_add(1, Ordering::SeqCst);
        let inner = inner.clone();
        let weak = Arc::downgrade(pool);
        let lifetime = pool.lifetime;
        tokio::spawn(async move {
            let spec = SandboxSpec {
                fingerprint: POOL_LABEL.into(),
                lifetime_ms: lifetime.as_millis() as u64,
                languages: vec!["python".into(), "javascript".into()],
            };
            let made = open(&inner, &spec).await;
            let Some(pool) = weak.upgrade() else {
                return;
            };
            match made {
                // A member made after the pool closed is dropped: its container goes.
                Ok(m) if pool.closed.load(Ordering::SeqCst) => drop(m),
                Ok(m) => pool.members().push(m),
                Err(e) => {
                    pool.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "a warm session container could not be made")
                }
            }
            pool.filling.fetch_sub(1, Ordering::SeqCst);
        });
    }
}
