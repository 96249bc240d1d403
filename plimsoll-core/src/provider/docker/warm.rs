//! A warm pool: sandboxes made ahead of time, in the background, each handed
//! to exactly one user and never returned. The sessions' pool
//! (`SANDBOX_SESSION_POOL`) and the snippets' (`SANDBOX_SNIPPET_POOL`) are
//! both one of these; what a member is, and how one is made, is theirs.
//!
//! A member dropped for any reason (taken and used, found stale, made after
//! the pool closed, or left at close) removes its own container through its
//! [`super::container::Live`] guard.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::error::Result;

/// Members waiting, members being made, and the target size.
pub(crate) struct Warm<M> {
    members: Mutex<Vec<M>>,
    filling: AtomicUsize,
    closed: AtomicBool,
    /// Members that could not be made, since start.
    failures: AtomicU64,
    size: usize,
    /// What the warnings call a member.
    what: &'static str,
}

impl<M: Send + 'static> Warm<M> {
    /// An empty pool of `size` members, each a `what` in the logs.
    pub(crate) fn new(size: usize, what: &'static str) -> Warm<M> {
        Warm {
            members: Mutex::new(Vec::new()),
            filling: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            failures: AtomicU64::new(0),
            size,
            what,
        }
    }

    fn members(&self) -> MutexGuard<'_, Vec<M>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Members waiting now.
    pub(crate) fn ready(&self) -> usize {
        self.members().len()
    }

    /// Its size, members ready and being made, and refill failures, now.
    pub(crate) fn stats(&self) -> crate::metrics::PoolStats {
        crate::metrics::PoolStats {
            target: self.size as u64,
            ready: self.ready() as u64,
            filling: self.filling.load(Ordering::SeqCst) as u64,
            refill_failures: self.failures.load(Ordering::Relaxed),
        }
    }

    /// Takes a member that `fits`, or `None`; members that are `stale` are
    /// dropped on the way (their containers go).
    pub(crate) fn take(&self, fits: impl Fn(&M) -> bool, stale: impl Fn(&M) -> bool) -> Option<M> {
        let mut gone = Vec::new();
        let taken = {
            let mut members = self.members();
            let mut i = 0;
            while i < members.len() {
                if stale(&members[i]) {
                    gone.push(members.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            let i = members.iter().position(fits);
            i.map(|i| members.swap_remove(i))
        };
        // Dropped outside the lock: each drop starts its container's removal.
        drop(gone);
        taken
    }

    /// Stops refilling, drops every member and waits, at most `budget`, for
    /// members still being made to be dropped too.
    pub(crate) async fn close(&self, budget: Duration) {
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
}

/// Starts background creation of members with `make` until `pool` is full.
/// The tasks hold the pool only weakly: a provider that goes away takes its
/// members along.
pub(crate) fn refill<M, F, Fut>(pool: &Arc<Warm<M>>, make: F)
where
    M: Send + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<M>> + Send + 'static,
{
    loop {
        if pool.closed.load(Ordering::SeqCst)
            || pool.ready() + pool.filling.load(Ordering::SeqCst) >= pool.size
        {
            return;
        }
        pool.filling.fetch_add(1, Ordering::SeqCst);
        let weak = Arc::downgrade(pool);
        let made = make();
        tokio::spawn(async move {
            let made = made.await;
            let Some(pool) = weak.upgrade() else {
                return;
            };
            match made {
                // A member made after the pool closed is dropped: its container goes.
                Ok(m) if pool.closed.load(Ordering::SeqCst) => drop(m),
                Ok(m) => pool.members().push(m),
                Err(e) => {
                    pool.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "a warm {} could not be made", pool.what)
                }
            }
            pool.filling.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fills_to_its_size_hands_each_member_out_once_and_drops_the_stale() {
        let pool = Arc::new(Warm::<u32>::new(3, "number"));
        let next = Arc::new(AtomicUsize::new(0));
        let make = || {
            let next = next.clone();
            async move { Ok(next.fetch_add(1, Ordering::SeqCst) as u32) }
        };
        refill(&pool, make);
        while pool.ready() < 3 {
            tokio::task::yield_now().await;
        }
        assert_eq!(pool.stats().target, 3);
        assert_eq!(pool.take(|&m| m == 1, |_| false), Some(1));
        assert_eq!(pool.take(|&m| m == 1, |_| false), None, "never twice");
        // The stale are dropped even when nothing fits.
        assert_eq!(pool.take(|_| false, |&m| m == 0), None);
        assert_eq!(pool.ready(), 1);
        refill(&pool, make);
        while pool.ready() < 3 {
            tokio::task::yield_now().await;
        }
        let mut seen: Vec<u32> = std::iter::from_fn(|| pool.take(|_| true, |_| false)).collect();
        seen.sort();
        assert_eq!(seen, vec![2, 3, 4]);
        pool.close(Duration::from_secs(1)).await;
        refill(&pool, make);
        assert_eq!(pool.ready() + pool.stats().filling as usize, 0, "closed");
    }

    #[tokio::test]
    async fn counts_members_that_could_not_be_made() {
        let pool = Arc::new(Warm::<u32>::new(2, "number"));
        refill(&pool, || async {
            Err(crate::error::Error::infrastructure("no docker"))
        });
        while pool.stats().refill_failures < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(pool.ready(), 0);
    }
}
