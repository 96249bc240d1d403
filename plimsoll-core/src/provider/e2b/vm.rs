//! One E2B VM's life: stamped and tracked before it is created, killed on
//! every way out, and reaped by [`Inner::reconcile`] when a kill or a create
//! answer was lost.
//!
//! Every create carries this daemon's instance and a fresh lease key in its
//! metadata. The lease is tracked from before the create is sent until the
//! kill has been answered; a VM stamped with this instance whose lease is not
//! tracked (a create whose answer never came, a kill that failed) is an
//! orphan, and the reconcile kills it at any age.
//!
//! A granted run's VM holds its run's [`GuardPass`]; every way out (a kill,
//! a drop) ends the pass first, so the guard refuses the run's credential
//! before the VM is gone, never after.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::Inner;
use super::api::Detail;
use super::api::GuardRule;
use super::envd::Envd;
use crate::error::{Error, Result, SessionEnd, SessionEnded};
use crate::grant::guard::GuardPass;

/// The metadata key naming the daemon instance that made a VM.
pub const INSTANCE_KEY: &str = "plimsoll-instance";
/// The metadata key holding a VM's lease.
pub const LEASE_KEY: &str = "plimsoll-lease";

/// The leases of VMs this daemon is responsible for.
#[derive(Debug, Default)]
pub(crate) struct Leases(Mutex<HashSet<String>>);

impl Leases {
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn track(&self, lease: &str) {
        self.lock().insert(lease.to_owned());
    }

    fn release(&self, lease: &str) {
        self.lock().remove(lease);
    }

    fn tracked(&self, lease: &str) -> bool {
        self.lock().contains(lease)
    }
}

/// A live VM. Dropped without [`Vm::kill`], it is killed in the background.
pub(crate) struct Vm {
    pub id: String,
    pub envd: Envd,
    pub envd_version: String,
    lease: String,
    inner: Arc<Inner>,
    done: bool,
    /// The run's admission to the guard, when it carries a grant.
    pass: Option<GuardPass>,
}

impl Vm {
    /// Creates a VM that lives `ttl` at most; with `pass`, its one way out is
    /// the guard's host, the pass's credential added there by E2B.
    pub(crate) async fn create(
        inner: &Arc<Inner>,
        ttl: Duration,
        pass: Option<GuardPass>,
    ) -> Result<Vm> {
        let lease = hex::encode(rand::random::<[u8; 16]>());
        let metadata = BTreeMap::from([
            (INSTANCE_KEY.to_owned(), inner.instance.clone()),
            (LEASE_KEY.to_owned(), lease.clone()),
        ]);
        inner.leases.track(&lease);
        let rule = match (&pass, &inner.egress) {
            (Some(p), Some(e)) => Some(GuardRule {
                host: &e.url.host,
                credential: p.credential(),
            }),
            (Some(_), None) => {
                inner.leases.release(&lease);
                return Err(Error::unsupported(
                    "the e2b provider carries grants only with E2B_GUARD_URL set",
                ));
            }
            (None, _) => None,
        };
        let created = match inner
            .api
            .create(&inner.settings.template, ttl, &metadata, rule)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                // A VM may exist that the answer did not name: untracked, the
                // reconcile kills it.
                inner.leases.release(&lease);
                return Err(e);
            }
        };
        let domain = created
            .domain
            .as_deref()
            .and_then(|d| super::settings::domain(d).ok());
        let envd = Envd::new(
            inner.http.clone(),
            &inner.settings.envd,
            &created.id,
            domain.as_deref(),
            Arc::new(created.envd_token),
        );
        Ok(Vm {
            id: created.id,
            envd,
            envd_version: created.envd_version,
            lease,
            inner: inner.clone(),
            done: false,
            pass,
        })
    }

    /// Reads the VM back and holds it to what a run may have: running, with
    /// no more than the configured resources, its way out closed, and this
    /// run's stamp.
    pub(crate) async fn check(&self) -> Result<Detail> {
        let d = self.inner.api.detail(&self.id).await?;
        let wrong = self.wrong(&d);
        if wrong.is_empty() {
            Ok(d)
        } else {
            Err(Error::infrastructure(format!(
                "E2B sandbox {} is not what was asked for: {}; it is killed",
                self.id,
                wrong.join(", ")
            )))
        }
    }

    /// A session's read-back before a call: gone, unreadable or not running
    /// ends it as its main process ended; any other difference, as changed.
    pub(crate) async fn still(&self) -> std::result::Result<(), SessionEnded> {
        let d = self
            .inner
            .api
            .detail(&self.id)
            .await
            .map_err(|e| SessionEnded {
                reason: SessionEnd::MainProcessEnded,
                detail: format!("the session's VM could not be read back: {}", e.message()),
            })?;
        if d.state != "running" {
            return Err(SessionEnded {
                reason: SessionEnd::MainProcessEnded,
                detail: format!("the session's VM is {}", d.state),
            });
        }
        let wrong = self.wrong(&d);
        if wrong.is_empty() {
            return Ok(());
        }
        Err(SessionEnded {
            reason: SessionEnd::SandboxChanged,
            detail: format!(
                "the session's VM no longer reads back as asked: {}",
                wrong.join(", ")
            ),
        })
    }

    /// What in `d` a run may not have.
    fn wrong(&self, d: &Detail) -> Vec<String> {
        let s = &self.inner.settings;
        let over = |what: &str, got: u32, max: Option<u32>| match max {
            Some(m) if got > m => Some(format!("{what} {got} (the most allowed is {m})")),
            _ => None,
        };
        let mut wrong: Vec<String> = [
            over("cpuCount", d.cpu_count, s.max_cpus),
            over("memoryMB", d.memory_mb, s.max_memory_mb),
            over("diskSizeMB", d.disk_size_mb, s.max_disk_mb),
        ]
        .into_iter()
        .flatten()
        .collect();
        if d.state != "running" {
            wrong.push(format!("state {:?}", d.state));
        }
        match (&self.pass, &self.inner.egress) {
            (Some(_), Some(e)) => {
                // Exactly the create's network: everything denied but the guard.
                let host = vec![e.url.host.clone()];
                let exact = d.internet != Some(true)
                    && d.deny_out == ["0.0.0.0/0"]
                    && d.allow_out == host
                    && d.rule_hosts.as_ref().is_none_or(|r| *r == host);
                if !exact {
                    wrong.push(format!(
                        "outbound traffic not denied but to the guard host {} (allowOut {:?}, \
                         denyOut {:?}, rules for {:?})",
                        e.url.host, d.allow_out, d.deny_out, d.rule_hosts
                    ));
                }
            }
            _ => {
                let closed = d.internet == Some(false)
                    || d.deny_out.iter().any(|c| c == "0.0.0.0/0") && d.allow_out.is_empty();
                if !closed || !d.allow_out.is_empty() {
                    wrong.push("outbound traffic not denied".into());
                }
            }
        }
        if d.metadata.get(LEASE_KEY) != Some(&self.lease) {
            wrong.push("its metadata lacks this run's lease".into());
        }
        wrong
    }

    /// Ends the run's guard credential, then kills the VM and waits for the answer.
    pub(crate) async fn kill(mut self) {
        self.done = true;
        drop(self.pass.take());
        kill(&self.inner, &self.id, &self.lease).await;
    }
}

async fn kill(inner: &Inner, id: &str, lease: &str) {
    if let Err(e) = inner.api.kill(id).await {
        tracing::warn!(sandbox = id, error = %e, "E2B sandbox not killed; the orphan reconcile will");
    }
    // Released either way: a VM still alive is now an orphan, which the
    // reconcile kills.
    inner.leases.release(lease);
}

impl Drop for Vm {
    fn drop(&mut self) {
        // The credential ends before the kill is even sent.
        drop(self.pass.take());
        if self.done {
            return;
        }
        let (inner, id, lease) = (self.inner.clone(), self.id.clone(), self.lease.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(async move { kill(&inner, &id, &lease).await });
            }
            Err(_) => inner.leases.release(&lease),
        }
    }
}

impl Inner {
    /// Kills every VM stamped with this instance whose lease is not tracked
    /// (`all`: every VM stamped with this instance); returns how many.
    pub(crate) async fn reconcile(&self, all: bool) -> Result<usize> {
        let listed = self.api.list(INSTANCE_KEY, &self.instance).await?;
        let mut killed = 0;
        for (id, metadata) in listed {
            // The list filters by metadata; hold the answer to it anyway.
            if metadata.get(INSTANCE_KEY) != Some(&self.instance) {
                continue;
            }
            let lease = metadata.get(LEASE_KEY).cloned().unwrap_or_default();
            if !all && self.leases.tracked(&lease) {
                continue;
            }
            match self.api.kill(&id).await {
                Ok(()) => {
                    tracing::info!(sandbox = %id, "killed an orphaned E2B sandbox");
                    killed += 1;
                }
                Err(e) => {
                    tracing::warn!(sandbox = %id, error = %e, "orphaned E2B sandbox not killed")
                }
            }
        }
        Ok(killed)
    }
}
