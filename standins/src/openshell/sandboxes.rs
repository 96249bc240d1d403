//! Sandboxes as the API shows them ([`Gateway::render`], with the
//! `readback-differs` fault), the workspace a request names, label
//! selectors, and provisioning: a create's container made in the
//! background, the sandbox then `READY` (or `ERROR`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use tonic::Status;

use super::proto::datamodel::v1::{ObjectMeta, WorkspaceSelector, workspace_selector::Selection};
use super::proto::v1 as pb;
use super::service::Gateway;
use super::{DEFAULT_WORKSPACE, Sandbox, StandIn, container, lock};

/// `not_found "sandbox not found"`.
pub fn not_found() -> Status {
    Status::not_found("sandbox not found")
}

/// The one workspace a request names (`all_workspaces` is refused here).
pub fn workspace(scope: Option<&WorkspaceSelector>) -> Result<String, Status> {
    match scope.and_then(|s| s.selection.as_ref()) {
        None => Ok(DEFAULT_WORKSPACE.to_owned()),
        Some(Selection::Workspace(w)) if !w.is_empty() => Ok(w.clone()),
        Some(Selection::Workspace(_)) => Err(Status::invalid_argument("workspace is required")),
        Some(Selection::AllWorkspaces(_)) => Err(Status::invalid_argument(
            "all_workspaces is only valid when listing",
        )),
    }
}

/// `t` as a protobuf `Timestamp`.
pub fn timestamp(t: SystemTime) -> prost_types::Timestamp {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    prost_types::Timestamp {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

/// A `label_selector` (`k1=v1,k2=v2`) as pairs; a term without `=` is refused.
pub fn selector(s: &str) -> Result<Vec<(String, String)>, Status> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => Err(Status::invalid_argument(format!(
                "invalid label selector term {t:?}: expected key=value"
            ))),
        })
        .collect()
}

impl Gateway {
    /// The sandbox as the API shows it (with the `readback-differs` fault
    /// applied when `readback`).
    pub fn render(&self, s: &Sandbox, readback: bool) -> pb::Sandbox {
        let life = lock(&s.life);
        let ready = life.phase == pb::SandboxPhase::Ready;
        let mut condition = pb::SandboxCondition {
            r#type: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            reason: format!("{:?}", life.phase),
            message: life.failure.clone().unwrap_or_default(),
            transition_time: None,
        };
        if life.phase == pb::SandboxPhase::Error {
            condition.reason = "ContainerFailed".into();
        }
        let mut labels = s.labels.clone();
        let mut spec = s.spec.clone();
        if readback && self.standin.settings.faults.readback_differs {
            labels.insert("openshell.standin/drift".into(), "true".into());
            for v in labels.values_mut() {
                v.push_str("-drift");
            }
            if let Some(t) = spec.template.as_mut() {
                t.image = format!("{}-drift", t.image);
            }
        }
        pb::Sandbox {
            metadata: Some(ObjectMeta {
                id: s.id.clone(),
                name: s.name.clone(),
                created_time: Some(timestamp(s.created)),
                labels,
                resource_version: life.resource_version,
                annotations: s.annotations.clone(),
                workspace: s.workspace.clone(),
                deletion_time: None,
            }),
            spec: Some(spec),
            status: Some(pb::SandboxStatus {
                conditions: vec![condition],
                phase: life.phase as i32,
                current_policy_version: 1,
                ..pb::SandboxStatus::default()
            }),
            host_key_fingerprint: String::new(),
            created_from_workload_template: None,
        }
    }

    /// The sandbox `name` in `workspace` and its container, if it is `READY`
    /// (`not_found`, else `failed_precondition "sandbox is not ready"`).
    pub fn ready_machine(
        &self,
        workspace: &str,
        name: &str,
    ) -> Result<(Arc<Sandbox>, container::Machine), Status> {
        let s = self.standin.get(workspace, name).ok_or_else(not_found)?;
        let machine = {
            let life = lock(&s.life);
            match (&life.machine, life.phase) {
                (Some(m), pb::SandboxPhase::Ready) => m.clone(),
                _ => return Err(Status::failed_precondition("sandbox is not ready")),
            }
        };
        Ok((s, machine))
    }

    /// Makes the sandbox's container, then marks it `READY` (or `ERROR`).
    pub async fn provision(standin: Arc<StandIn>, s: Arc<Sandbox>, image: String) {
        let st = &standin.settings;
        let template = s.spec.template.clone().unwrap_or_default();
        let made = match container::limits(template.resources.as_ref()) {
            Err(e) => Err(e),
            Ok(limits) => {
                let mut env: Vec<String> = template
                    .environment
                    .iter()
                    .chain(s.spec.environment.iter())
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                env.sort();
                let labels = HashMap::from([
                    (container::LABEL.to_owned(), standin.run_id.clone()),
                    (
                        "io.plimsoll.standin.openshell.sandbox".to_owned(),
                        s.id.clone(),
                    ),
                ]);
                let name = format!("plimsoll-openshell-{}-{}", standin.run_id, &s.id[..8]);
                container::Machine::create(&standin.docker, &name, &image, st, limits, env, labels)
                    .await
            }
        };
        let still_there = standin
            .get(&s.workspace, &s.name)
            .is_some_and(|c| c.id == s.id);
        match made {
            Ok(m) if still_there => {
                let mut life = lock(&s.life);
                life.machine = Some(m);
                life.set(pb::SandboxPhase::Ready);
            }
            Ok(m) => m.remove().await,
            Err(e) => {
                tracing::warn!(sandbox = %s.name, error = %e, "provisioning a sandbox failed");
                let mut life = lock(&s.life);
                life.failure = Some(e);
                life.set(pb::SandboxPhase::Error);
            }
        }
    }
}
