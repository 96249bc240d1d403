//! The sessions' warm pool: session containers made ahead of time.
//!
//! A member warms the kernels of the languages the last [`RECENT`] opens
//! hinted (both, before any open), so a pool serving Python notebooks does
//! not hold a Node kernel in every member. An open takes a member with every
//! hinted kernel running, else any member, and starts what it lacks.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{DockerSession, open};
use crate::provider::SandboxSpec;
use crate::provider::docker::Inner;
use crate::provider::docker::warm::{self, Warm};

/// The label value pool members carry (their session is not known yet).
const POOL_LABEL: &str = "pool";

/// How many of the latest opens' hints decide what a new member warms.
const RECENT: usize = 8;

/// The languages a member can warm.
const LANGUAGES: [&str; 2] = ["python", "javascript"];

/// The sessions' warm pool: members made like session containers, with the
/// recently hinted kernels running, never used by anyone; each goes to
/// exactly one session.
pub(crate) struct Pool {
    warm: Arc<Warm<DockerSession>>,
    lifetime: Duration,
    /// The hints of the latest opens, newest last.
    recent: Mutex<VecDeque<Vec<String>>>,
}

impl Pool {
    /// An empty pool of `size` members living at most `lifetime`.
    pub(crate) fn new(size: usize, lifetime: Duration) -> Pool {
        Pool {
            warm: Arc::new(Warm::new(size, "session container")),
            lifetime,
            recent: Mutex::new(VecDeque::new()),
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

    /// Takes a member for `spec`: one with every hinted kernel running, else
    /// any (the caller starts what it lacks), or `None`. The hints count
    /// towards what later members warm.
    pub(crate) fn take(&self, spec: &SandboxSpec) -> Option<DockerSession> {
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            recent.push_back(spec.languages.clone());
            while recent.len() > RECENT {
                recent.pop_front();
            }
        }
        let covers = |m: &DockerSession| {
            let have = m.warmed();
            spec.languages.iter().all(|l| have.contains(l))
        };
        self.warm
            .take(covers, |_| false)
            .or_else(|| self.warm.take(|_| true, |_| false))
    }

    /// What a new member warms: every language the recent opens hinted, or
    /// all of them before the first open.
    fn languages(&self) -> Vec<String> {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        LANGUAGES
            .iter()
            .filter(|l| recent.is_empty() || recent.iter().any(|h| h.iter().any(|x| x == *l)))
            .map(|l| l.to_string())
            .collect()
    }
}

/// Starts background creation of members until the pool is full.
pub(crate) fn refill(inner: &Arc<Inner>, pool: &Pool) {
    let lifetime = pool.lifetime;
    let languages = pool.languages();
    warm::refill(&pool.warm, || {
        let inner = inner.clone();
        let languages = languages.clone();
        async move {
            let spec = SandboxSpec {
                fingerprint: POOL_LABEL.into(),
                lifetime_ms: lifetime.as_millis() as u64,
                languages,
            };
            open(&inner, &spec).await
        }
    });
}
