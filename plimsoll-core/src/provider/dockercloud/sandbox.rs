//! One Docker Cloud sandbox's life: named and leased before the create is
//! sent, polled to `running`, read back (itself and the network policy in
//! force) before any code goes in, and deleted on every way out (through
//! [`Live`]'s drop when a run is abandoned).
//!
//! Every create carries this daemon's display-name prefix and labels naming
//! the instance, a fresh lease key (also the `Idempotency-Key`) and the
//! declared lifetime. The lease is tracked from before the create until the
//! delete is confirmed; [`Inner::reconcile`] deletes this instance's
//! prefixed sandboxes no lease tracks, and another instance's once they are
//! older than their declared lifetime plus 5 minutes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::Inner;
use super::contract::SandboxEndpoint;
use super::model::{Sandbox, Spec};
use crate::error::{Error, Result};
use crate::provider::hosted::lease;

/// The label naming the daemon instance that made a sandbox.
pub const INSTANCE_LABEL: &str = "plimsoll-instance";
/// The label holding a sandbox's lease.
pub const LEASE_LABEL: &str = "plimsoll-lease";
/// The label holding a sandbox's declared lifetime, seconds.
pub const LIFETIME_LABEL: &str = "plimsoll-lifetime";
/// What every plimsoll sandbox's display name starts with.
pub const NAME_PREFIX: &str = "plimsoll-";
/// How long a create may take to reach `running`.
const START_BUDGET: Duration = Duration::from_secs(120);
/// How long a delete may take to be confirmed.
const DELETE_BUDGET: Duration = Duration::from_secs(30);
/// The endpoint credential's life (Docker's most).
pub const CREDENTIAL_TTL: Duration = Duration::from_secs(300);

/// A created sandbox, deleted when dropped (in the background) unless
/// [`Guard::delete`] did it first.
struct Guard {
    id: String,
    lease: String,
    inner: Arc<Inner>,
    done: bool,
}

impl Guard {
    async fn delete(mut self) {
        self.done = true;
        finish(&self.inner, &self.id, &self.lease).await;
    }
}

/// A live sandbox, read back and closed, with its endpoint. Dropped without
/// [`Live::delete`], it is deleted in the background.
pub(crate) struct Live {
    /// Its uid.
    pub id: String,
    /// Its endpoint, with a fresh credential.
    pub endpoint: Box<dyn SandboxEndpoint>,
    guard: Guard,
}

impl Live {
    /// Creates a sandbox the cloud deletes after `lifetime`, waits for it to
    /// run, sets `rule` (a granted run's guard, `host:443`) as its one
    /// allowed destination, and holds it to what was asked and to a network
    /// policy that denies everything but that rule.
    pub(crate) async fn create(
        inner: &Arc<Inner>,
        lifetime: Duration,
        rule: Option<&str>,
    ) -> Result<Live> {
        let lease = hex::encode(rand::random::<[u8; 16]>());
        let labels = BTreeMap::from([
            (INSTANCE_LABEL.to_owned(), inner.instance.clone()),
            (LEASE_LABEL.to_owned(), lease.clone()),
            (LIFETIME_LABEL.to_owned(), lifetime.as_secs().to_string()),
        ]);
        let s = &inner.settings;
        let spec = Spec {
            prefix: &inner.prefix,
            image: &s.image,
            cpus: s.cpus,
            memory_mib: s.memory_mib,
            labels: &labels,
            lifetime,
        };
        inner.leases.track(&lease);
        let created = match inner.api.create(&spec, &lease).await {
            Ok(c) => c,
            Err(e) => {
                // A sandbox may exist that the answer did not name: untracked,
                // the reconcile deletes it.
                inner.leases.release(&lease);
                return Err(e);
            }
        };
        let guard = Guard {
            id: created.uid.clone(),
            lease,
            inner: inner.clone(),
            done: false,
        };
        match guard.ready(&spec, created, rule).await {
            Ok(endpoint) => Ok(Live {
                id: guard.id.clone(),
                endpoint,
                guard,
            }),
            Err(e) => {
                guard.delete().await;
                Err(e)
            }
        }
    }

    /// Deletes the sandbox and waits until Docker says it is gone.
    pub(crate) async fn delete(self) {
        self.guard.delete().await;
    }
}

impl Guard {
    async fn ready(
        &self,
        spec: &Spec<'_>,
        mut s: Sandbox,
        rule: Option<&str>,
    ) -> Result<Box<dyn SandboxEndpoint>> {
        let api = &self.inner.api;
        let until = tokio::time::Instant::now() + START_BUDGET;
        while s.status == "creating" || s.status == "starting" {
            if tokio::time::Instant::now() >= until {
                return Err(Error::infrastructure(format!(
                    "Docker Cloud sandbox {} was not running within {} s",
                    self.id,
                    START_BUDGET.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            s = api.get(&self.id).await?.ok_or_else(|| {
                Error::infrastructure(format!(
                    "Docker Cloud sandbox {} vanished while starting",
                    self.id
                ))
            })?;
        }
        if s.status == "failed" {
            return Err(Error::infrastructure(format!(
                "Docker Cloud sandbox {} failed to start: {}",
                self.id,
                crate::provider::hosted::http::excerpt(s.failure.as_bytes(), &[])
            )));
        }
        // The create's answer is not the read-back: read it again.
        let s = api.get(&self.id).await?.ok_or_else(|| {
            Error::infrastructure(format!("Docker Cloud sandbox {} vanished", self.id))
        })?;
        let wrong = api.wrong(spec, &self.lease, &s);
        if !wrong.is_empty() {
            return Err(Error::infrastructure(format!(
                "Docker Cloud sandbox {} is not what was asked for: {}; it is deleted",
                self.id,
                wrong.join(", ")
            )));
        }
        if let Some(rule) = rule {
            api.allow(&self.id, rule).await?;
        }
        let policy = api.sandbox_policy(&self.id).await?;
        if let Some(why) = policy.allows_only(rule) {
            let allowed = match rule {
                Some(r) => format!("only the guard rule {r}"),
                None => "nothing".to_owned(),
            };
            return Err(Error::infrastructure(format!(
                "the network policy in force on Docker Cloud sandbox {} is not deny-all with \
                 {allowed} allowed ({why}); nothing runs in it and it is deleted (set the \
                 account default with `sbx --cloud policy init deny-all`)",
                self.id
            )));
        }
        api.endpoint(&s).await
    }
}

async fn finish(inner: &Inner, id: &str, lease: &str) {
    if let Err(e) = inner.delete(id).await {
        tracing::warn!(sandbox = id, error = %e, "Docker Cloud sandbox not deleted; the orphan reconcile will");
    }
    // Released either way: one still there is now an orphan, which the
    // reconcile deletes.
    inner.leases.release(lease);
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (inner, id, lease) = (self.inner.clone(), self.id.clone(), self.lease.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(async move { finish(&inner, &id, &lease).await });
            }
            Err(_) => inner.leases.release(&lease),
        }
    }
}

impl Inner {
    /// Deletes sandbox `id` (its current ETag in `If-Match`) and waits until
    /// a read says it is not found.
    pub(crate) async fn delete(&self, id: &str) -> Result<()> {
        let until = tokio::time::Instant::now() + DELETE_BUDGET;
        let mut asked = false;
        loop {
            let Some(s) = self.api.get(id).await? else {
                return Ok(());
            };
            if !asked || s.status != "deleting" {
                asked = self.api.delete(id, &s.etag).await?;
            }
            if tokio::time::Instant::now() >= until {
                return Err(Error::infrastructure(format!(
                    "Docker Cloud sandbox {id} was still there {} s after its delete",
                    DELETE_BUDGET.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(if asked { 300 } else { 50 })).await;
        }
    }

    /// Deletes this instance's prefixed sandboxes no run tracks (`all`:
    /// every one of them), and another instance's once older than their
    /// declared lifetime plus 5 minutes; returns how many.
    pub(crate) async fn reconcile(&self, all: bool) -> Result<usize> {
        let now = SystemTime::now();
        let mut deleted = 0;
        for s in self.api.list().await? {
            if !s.display_name.starts_with(NAME_PREFIX) {
                continue;
            }
            let ours = s.display_name.starts_with(&self.prefix)
                && s.instance.as_ref().is_none_or(|i| i == &self.instance);
            let go = if ours {
                all || !self.leases.tracked(&s.lease)
            } else {
                expired(&s, now)
            };
            if !go {
                continue;
            }
            match self.delete(&s.uid).await {
                Ok(()) => {
                    tracing::info!(sandbox = %s.uid, name = %s.display_name, "deleted an orphaned Docker Cloud sandbox");
                    deleted += 1;
                }
                Err(e) => {
                    tracing::warn!(sandbox = %s.uid, error = %e, "orphaned Docker Cloud sandbox not deleted")
                }
            }
        }
        Ok(deleted)
    }
}

/// Whether another instance's sandbox is older than its declared lifetime
/// plus five minutes ([`lease::expired`]).
pub(crate) fn expired(s: &Sandbox, now: SystemTime) -> bool {
    lease::expired(s.created, s.lifetime.as_deref(), now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_instances_sandbox_goes_only_past_its_lifetime_and_five_minutes() {
        let created = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let s = Sandbox {
            created: super::super::model::parse_rfc3339("2026-11-30T00:53:20Z"),
            lifetime: Some("150".to_owned()),
            ..Sandbox::default()
        };
        let at = |secs: u64| created + Duration::from_secs(secs);
        assert!(!expired(&s, at(10)));
        assert!(!expired(&s, at(150 + 300)));
        assert!(expired(&s, at(150 + 301)));
        let mut none = s.clone();
        none.lifetime = None;
        assert!(
            !expired(&none, at(100_000)),
            "no declared lifetime: left alone"
        );
        let mut bad = s;
        bad.created = None;
        assert!(!expired(&bad, at(100_000)), "no known age: left alone");
    }
}
