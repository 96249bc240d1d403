//! One OpenShell sandbox's life: named, labelled and leased before the
//! create is sent, waited for until `READY`, read back in full before any
//! code goes in ([`Live::check`]), and deleted on every way out (through the
//! guard's drop when a run is abandoned).
//!
//! What is asked for, and held to on every read-back ([`Want`]): the labels
//! (this instance, the lease, the declared lifetime), the image, the memory
//! and CPU limits, no environment, no credential providers, no driver
//! config, and the policy: no network rules (the gateway's deny-all),
//! writes only under `/tmp`, Landlock required. The policy in force is read
//! from `GetSandboxConfig` and must equal it, with the hash the gateway
//! computes for it and the sandbox as its source.
//!
//! OpenShell sandboxes never expire on their own: each declares the seconds
//! until its run's deadline ([`LIFETIME_LABEL`]), and [`Inner::reconcile`]
//! deletes this instance's untracked sandboxes at once and another
//! instance's once that lifetime plus 5 minutes has passed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use plimsoll_openshell_proto::sandbox::v1 as sb;
use plimsoll_openshell_proto::v1 as pb;
use prost_types::value::Kind;

use super::Inner;
use super::gateway::scope;
use crate::error::{Error, Result, SessionEnd, SessionEnded};
use crate::provider::hosted::lease;

/// The label every plimsoll sandbox carries (`1`).
pub const RUN_LABEL: &str = "plimsoll.run";
/// The label naming the instance that made a sandbox (a digest of its name).
pub const INSTANCE_LABEL: &str = "plimsoll.instance";
/// The label holding a sandbox's lease.
pub const LEASE_LABEL: &str = "plimsoll.lease";
/// The label holding a sandbox's declared lifetime, seconds.
pub const LIFETIME_LABEL: &str = "plimsoll.lifetime";
/// What every plimsoll sandbox's name starts with.
pub const NAME_PREFIX: &str = "plimsoll-";
/// The only directory a sandbox may write.
pub const WRITABLE: &str = "/tmp";
/// How long a create may take to reach `READY`.
const START_BUDGET: Duration = Duration::from_secs(120);

/// What a sandbox must read back as.
#[derive(Debug, Clone)]
pub(crate) struct Want {
    pub name: String,
    pub labels: HashMap<String, String>,
    pub image: String,
    pub resources: prost_types::Struct,
    pub policy: sb::SandboxPolicy,
}

fn text(s: String) -> prost_types::Value {
    prost_types::Value {
        kind: Some(Kind::StringValue(s)),
    }
}

/// The policy every sandbox runs under: no network rules (deny-all), a
/// filesystem allowlist where only [`WRITABLE`] (and `/dev/null`) may be
/// written, Landlock a hard requirement, the image's own user.
pub fn policy() -> sb::SandboxPolicy {
    sb::SandboxPolicy {
        version: 1,
        filesystem: Some(sb::FilesystemPolicy {
            include_workdir: false,
            read_only: vec!["/".into()],
            read_write: vec![WRITABLE.into(), "/dev/null".into()],
        }),
        landlock: Some(sb::LandlockPolicy {
            compatibility: "hard_requirement".into(),
        }),
        process: Some(sb::ProcessPolicy::default()),
        network_policies: HashMap::new(),
        network_middlewares: HashMap::new(),
    }
}

/// `{"limits": {"cpu": "<millicores>m", "memory": "<MiB>Mi"}}`.
pub fn resources(memory_mib: u32, cpus: f64) -> prost_types::Struct {
    let limits = prost_types::Struct {
        fields: [
            (
                "cpu".to_owned(),
                text(format!("{}m", (cpus * 1000.0).round() as u64)),
            ),
            ("memory".to_owned(), text(format!("{memory_mib}Mi"))),
        ]
        .into(),
    };
    prost_types::Struct {
        fields: [(
            "limits".to_owned(),
            prost_types::Value {
                kind: Some(Kind::StructValue(limits)),
            },
        )]
        .into(),
    }
}

impl Want {
    /// The create request.
    fn request(&self, lease: &str) -> pb::CreateSandboxRequest {
        pb::CreateSandboxRequest {
            workspace_scope: scope(),
            spec: Some(pb::SandboxSpec {
                template: Some(pb::SandboxTemplate {
                    image: self.image.clone(),
                    resources: Some(self.resources.clone()),
                    ..pb::SandboxTemplate::default()
                }),
                policy: Some(self.policy.clone()),
                ..pb::SandboxSpec::default()
            }),
            name: self.name.clone(),
            labels: self.labels.clone(),
            request_id: lease.to_owned(),
            ..pb::CreateSandboxRequest::default()
        }
    }

    /// What differs between this and the sandbox and config read back
    /// (empty: nothing).
    pub(crate) fn wrong(
        &self,
        s: &pb::Sandbox,
        config: &sb::GetSandboxConfigResponse,
    ) -> Vec<String> {
        let mut wrong = Vec::new();
        let meta = s.metadata.clone().unwrap_or_default();
        let spec = s.spec.clone().unwrap_or_default();
        let template = spec.template.clone().unwrap_or_default();
        if meta.name != self.name {
            wrong.push(format!("its name is {:?}", meta.name));
        }
        if meta.labels != self.labels {
            wrong.push("its labels differ from those asked for".into());
        }
        if template.image != self.image {
            wrong.push(format!(
                "its image is {:?}, not {:?}",
                template.image, self.image
            ));
        }
        if template.resources.as_ref() != Some(&self.resources) {
            wrong.push("its resource limits differ from those asked for".into());
        }
        if !spec.providers.is_empty() {
            wrong.push(format!(
                "credential providers are attached ({})",
                spec.providers.join(", ")
            ));
        }
        if !spec.environment.is_empty() || !template.environment.is_empty() {
            wrong.push("it carries environment variables none asked for".into());
        }
        if template.driver_config.is_some() || !template.runtime_class_name.is_empty() {
            wrong.push("it carries a driver config or runtime class none asked for".into());
        }
        if spec.policy.as_ref().is_some_and(|p| *p != self.policy) {
            wrong.push("its spec's policy differs from the one asked for".into());
        }
        if config.policy.as_ref() != Some(&self.policy) {
            wrong.push("the policy in force differs from the one asked for".into());
        }
        if config.policy_hash != plimsoll_openshell_proto::policy::hash(&self.policy) {
            wrong.push("the policy hash in force is not the asked-for policy's".into());
        }
        if config.policy_source != sb::PolicySource::Sandbox as i32 {
            wrong.push("the policy in force is not the sandbox's own".into());
        }
        wrong
    }
}

/// A created sandbox, deleted when dropped (in the background) unless
/// [`Guard::delete`] did it first.
struct Guard {
    name: String,
    inner: Arc<Inner>,
    done: bool,
}

impl Guard {
    async fn delete(mut self) {
        self.done = true;
        finish(&self.inner, &self.name).await;
    }
}

async fn finish(inner: &Inner, name: &str) {
    if let Err(e) = inner.gateway.delete(name).await {
        tracing::warn!(sandbox = name, error = %e, "OpenShell sandbox not deleted; the orphan reconcile will");
    }
    // Released either way: one still there is now an orphan, which the
    // reconcile deletes.
    inner.leases.release(name);
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (inner, name) = (self.inner.clone(), self.name.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(async move { finish(&inner, &name).await });
            }
            Err(_) => inner.leases.release(&name),
        }
    }
}

/// A live sandbox, `READY` and read back. Dropped without [`Live::delete`],
/// it is deleted in the background.
pub(crate) struct Live {
    /// Its name (what every call names it by).
    pub name: String,
    want: Want,
    guard: Guard,
}

impl Live {
    /// Creates a sandbox declaring `lifetime`, waits until it is `READY`,
    /// and reads it back.
    pub(crate) async fn create(inner: &Arc<Inner>, lifetime: Duration) -> Result<Live> {
        let lease = hex::encode(rand::random::<[u8; 8]>());
        let name = format!("{}{lease}", inner.prefix);
        let want = Want {
            name: name.clone(),
            labels: HashMap::from([
                (RUN_LABEL.to_owned(), "1".to_owned()),
                (INSTANCE_LABEL.to_owned(), inner.instance_digest.clone()),
                (LEASE_LABEL.to_owned(), lease.clone()),
                (
                    LIFETIME_LABEL.to_owned(),
                    lifetime.as_secs().max(1).to_string(),
                ),
            ]),
            image: inner.settings.image.clone(),
            resources: resources(inner.settings.memory_mib, inner.settings.cpus),
            policy: policy(),
        };
        // The lease (the name) is recorded before the create is sent.
        inner.leases.track(&name);
        if let Err(e) = inner.gateway.create(want.request(&lease)).await {
            // A sandbox may exist that the answer did not confirm: untracked,
            // the reconcile deletes it.
            inner.leases.release(&name);
            return Err(e);
        }
        let live = Live {
            name: name.clone(),
            want,
            guard: Guard {
                name,
                inner: inner.clone(),
                done: false,
            },
        };
        match live.ready().await {
            Ok(()) => Ok(live),
            Err(e) => {
                live.delete().await;
                Err(e)
            }
        }
    }

    fn inner(&self) -> &Inner {
        &self.guard.inner
    }

    /// The gateway it lives on.
    pub(crate) fn gateway(&self) -> &super::gateway::Gateway {
        &self.inner().gateway
    }

    async fn ready(&self) -> Result<()> {
        let until = tokio::time::Instant::now() + START_BUDGET;
        let mut wait = Duration::from_millis(50);
        loop {
            let s = self.inner().gateway.get(&self.name).await?.ok_or_else(|| {
                Error::infrastructure(format!(
                    "OpenShell sandbox {} vanished while starting",
                    self.name
                ))
            })?;
            let status = s.status.clone().unwrap_or_default();
            match pb::SandboxPhase::try_from(status.phase).unwrap_or(pb::SandboxPhase::Unknown) {
                pb::SandboxPhase::Ready => return self.check_read(&s).await,
                pb::SandboxPhase::Provisioning | pb::SandboxPhase::Starting => {}
                phase => {
                    let why: Vec<String> = status
                        .conditions
                        .iter()
                        .filter(|c| !c.message.is_empty())
                        .map(|c| format!("{}: {}", c.r#type, c.message))
                        .collect();
                    return Err(Error::infrastructure(format!(
                        "OpenShell sandbox {} is {} while starting{}",
                        self.name,
                        phase.as_str_name(),
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", why.join("; "))
                        }
                    )));
                }
            }
            if tokio::time::Instant::now() >= until {
                return Err(Error::infrastructure(format!(
                    "OpenShell sandbox {} was not ready within {} s",
                    self.name,
                    START_BUDGET.as_secs()
                )));
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_millis(500));
        }
    }

    async fn check_read(&self, s: &pb::Sandbox) -> Result<()> {
        let config = self.inner().gateway.config(&self.name).await?;
        let wrong = self.want.wrong(s, &config);
        if wrong.is_empty() {
            return Ok(());
        }
        Err(Error::infrastructure(format!(
            "OpenShell sandbox {} does not read back as asked: {}; nothing runs in it and it is deleted",
            self.name,
            wrong.join("; ")
        )))
    }

    /// A session's read-back before a call: gone or no longer `READY` ends
    /// the session as its main process ended; any difference from what was
    /// asked, as changed; an unreadable sandbox, as not provably clean.
    pub(crate) async fn still(&self) -> std::result::Result<(), SessionEnded> {
        let end = |reason, detail: String| SessionEnded { reason, detail };
        let unread = |e: Error| {
            end(
                SessionEnd::BoundaryFailed,
                format!(
                    "the session's sandbox could not be read back: {}",
                    e.message()
                ),
            )
        };
        let Some(s) = self.gateway().get(&self.name).await.map_err(unread)? else {
            return Err(end(
                SessionEnd::MainProcessEnded,
                "the session's sandbox is gone".into(),
            ));
        };
        let phase = s.status.as_ref().map_or(0, |st| st.phase);
        if phase != pb::SandboxPhase::Ready as i32 {
            return Err(end(
                SessionEnd::MainProcessEnded,
                format!(
                    "the session's sandbox is {}",
                    pb::SandboxPhase::try_from(phase)
                        .unwrap_or(pb::SandboxPhase::Unknown)
                        .as_str_name()
                ),
            ));
        }
        let config = self.gateway().config(&self.name).await.map_err(unread)?;
        let wrong = self.want.wrong(&s, &config);
        if wrong.is_empty() {
            return Ok(());
        }
        Err(end(
            SessionEnd::SandboxChanged,
            format!(
                "the session's sandbox no longer reads back as asked: {}",
                wrong.join("; ")
            ),
        ))
    }

    /// Deletes the sandbox.
    pub(crate) async fn delete(self) {
        self.guard.delete().await;
    }
}

fn created(s: &pb::Sandbox) -> Option<SystemTime> {
    let t = s.metadata.as_ref()?.created_time.as_ref()?;
    let secs = u64::try_from(t.seconds).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

impl Inner {
    /// Deletes this instance's sandboxes no run tracks (`all`: every one of
    /// them), and another instance's once past their declared lifetime
    /// plus 5 minutes; returns how many.
    pub(crate) async fn reconcile(&self, all: bool) -> Result<usize> {
        let now = SystemTime::now();
        let ours = HashMap::from([(RUN_LABEL.to_owned(), "1".to_owned())]);
        let mut deleted = 0;
        for s in self.gateway.list(&ours).await? {
            let meta = s.metadata.clone().unwrap_or_default();
            if !meta.name.starts_with(NAME_PREFIX) {
                continue;
            }
            let mine = meta.name.starts_with(&self.prefix)
                && meta.labels.get(INSTANCE_LABEL) == Some(&self.instance_digest);
            let go = if mine {
                all || !self.leases.tracked(&meta.name)
            } else {
                lease::expired(
                    created(&s),
                    meta.labels.get(LIFETIME_LABEL).map(String::as_str),
                    now,
                )
            };
            if !go {
                continue;
            }
            match self.gateway.delete(&meta.name).await {
                Ok(()) => {
                    tracing::info!(sandbox = %meta.name, "deleted an orphaned OpenShell sandbox");
                    deleted += 1;
                }
                Err(e) => {
                    tracing::warn!(sandbox = %meta.name, error = %e, "orphaned OpenShell sandbox not deleted")
                }
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want() -> Want {
        Want {
            name: "plimsoll-abc-1".into(),
            labels: HashMap::from([(RUN_LABEL.to_owned(), "1".to_owned())]),
            image: "img".into(),
            resources: resources(256, 1.0),
            policy: policy(),
        }
    }

    fn read_back(w: &Want) -> (pb::Sandbox, sb::GetSandboxConfigResponse) {
        let req = w.request("lease");
        let s = pb::Sandbox {
            metadata: Some(plimsoll_openshell_proto::datamodel::v1::ObjectMeta {
                name: w.name.clone(),
                labels: w.labels.clone(),
                ..Default::default()
            }),
            spec: req.spec,
            ..pb::Sandbox::default()
        };
        let c = sb::GetSandboxConfigResponse {
            policy: Some(w.policy.clone()),
            policy_hash: plimsoll_openshell_proto::policy::hash(&w.policy),
            policy_source: sb::PolicySource::Sandbox as i32,
            ..Default::default()
        };
        (s, c)
    }

    #[test]
    fn a_faithful_read_back_passes_and_every_difference_is_named() {
        let w = want();
        let (s, c) = read_back(&w);
        assert!(w.wrong(&s, &c).is_empty(), "{:?}", w.wrong(&s, &c));
        fn template(s: &mut pb::Sandbox) -> &mut pb::SandboxTemplate {
            s.spec
                .as_mut()
                .and_then(|sp| sp.template.as_mut())
                .expect("template")
        }
        type Change = Box<dyn Fn(&mut pb::Sandbox, &mut sb::GetSandboxConfigResponse)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "labels",
                Box::new(|s, _| {
                    s.metadata
                        .as_mut()
                        .expect("meta")
                        .labels
                        .insert("x".into(), "y".into());
                }),
            ),
            ("image", Box::new(|s, _| template(s).image = "other".into())),
            (
                "resource limits",
                Box::new(|s, _| template(s).resources = Some(resources(512, 1.0))),
            ),
            (
                "credential providers",
                Box::new(|s, _| {
                    s.spec
                        .as_mut()
                        .expect("spec")
                        .providers
                        .push("github".into())
                }),
            ),
            (
                "environment",
                Box::new(|s, _| {
                    s.spec
                        .as_mut()
                        .expect("spec")
                        .environment
                        .insert("TOKEN".into(), "t".into());
                }),
            ),
            (
                "policy in force",
                Box::new(|_, c| {
                    let mut p = policy();
                    p.network_policies
                        .insert("all".into(), sb::NetworkPolicyRule::default());
                    c.policy = Some(p);
                }),
            ),
            (
                "policy hash",
                Box::new(|_, c| c.policy_hash = "0".repeat(64)),
            ),
            (
                "sandbox's own",
                Box::new(|_, c| c.policy_source = sb::PolicySource::Global as i32),
            ),
        ];
        for (what, change) in cases {
            let (mut s, mut c) = read_back(&w);
            change(&mut s, &mut c);
            let wrong = w.wrong(&s, &c).join("; ");
            assert!(wrong.contains(what), "{what}: {wrong}");
        }
    }

    #[test]
    fn limits_are_kubernetes_quantities() {
        let r = resources(300, 1.5);
        let limits = match &r.fields["limits"].kind {
            Some(Kind::StructValue(s)) => s.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            limits.fields["cpu"].kind,
            Some(Kind::StringValue("1500m".into()))
        );
        assert_eq!(
            limits.fields["memory"].kind,
            Some(Kind::StringValue("300Mi".into()))
        );
    }
}
