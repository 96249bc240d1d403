//! The `OpenShell` service: the RPCs the stand-in serves (see the module
//! above for what each does); every other RPC keeps its generated stub,
//! which answers `unimplemented`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use tonic::{Request, Response, Status};

use super::proto::datamodel::v1::workspace_selector::Selection;
use super::proto::sandbox::v1 as sb;
use super::proto::v1 as pb;
use super::sandboxes::{not_found, selector, workspace};
use super::{DEFAULT_IMAGE_REF, GATEWAY_VERSION, Life, Sandbox, StandIn, lock};
use super::{container, exec, forward, policy};

/// The largest page `ListSandboxes` answers with.
pub const MAX_PAGE_SIZE: usize = 1000;
/// The page size when the request names none.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// The gateway service over a [`StandIn`].
#[derive(Debug, Clone)]
pub struct Gateway {
    pub(super) standin: Arc<StandIn>,
}

impl Gateway {
    /// The service.
    pub fn new(standin: Arc<StandIn>) -> Gateway {
        Gateway { standin }
    }
}

#[tonic::async_trait]
impl pb::open_shell_server::OpenShell for Gateway {
    async fn health(
        &self,
        _: Request<pb::HealthRequest>,
    ) -> Result<Response<pb::HealthResponse>, Status> {
        Ok(Response::new(pb::HealthResponse {
            status: pb::ServiceStatus::Healthy as i32,
            version: GATEWAY_VERSION.into(),
        }))
    }

    async fn get_gateway_info(
        &self,
        _: Request<pb::GetGatewayInfoRequest>,
    ) -> Result<Response<pb::GetGatewayInfoResponse>, Status> {
        let (name, version) = if self.standin.settings.faults.other_driver {
            ("kubernetes".to_owned(), "v1.31.0".to_owned())
        } else {
            let v = self
                .standin
                .docker
                .version()
                .await
                .map_err(|e| Status::unavailable(format!("docker: {e}")))?;
            ("docker".to_owned(), v.version.unwrap_or_default())
        };
        Ok(Response::new(pb::GetGatewayInfoResponse {
            status: pb::ServiceStatus::Healthy as i32,
            gateway_version: GATEWAY_VERSION.into(),
            compute_drivers: vec![pb::ComputeDriverInfo {
                name: name.clone(),
                capabilities: Some(pb::ComputeDriverCapabilities {
                    driver_name: name,
                    driver_version: version,
                    resource_capabilities: None,
                }),
            }],
            extensions: Vec::new(),
        }))
    }

    async fn create_sandbox(
        &self,
        request: Request<pb::CreateSandboxRequest>,
    ) -> Result<Response<pb::SandboxResponse>, Status> {
        let req = request.into_inner();
        let ws = workspace(req.workspace_scope.as_ref())?;
        let mut spec = req
            .spec
            .ok_or_else(|| Status::invalid_argument("spec is required"))?;
        if !req.workload_template.is_empty() {
            return Err(Status::failed_precondition(
                "sandbox workload template not found",
            ));
        }
        if let Some(p) = spec.providers.first() {
            return Err(Status::failed_precondition(format!(
                "provider '{p}' not found"
            )));
        }
        if !req.service_exposures.is_empty() {
            return Err(Status::failed_precondition(
                "service exposure is not available on this gateway",
            ));
        }
        let template = spec
            .template
            .get_or_insert_with(pb::SandboxTemplate::default);
        if template.image.is_empty() {
            template.image = DEFAULT_IMAGE_REF.into();
        }
        let image = self
            .standin
            .settings
            .images
            .get(&template.image)
            .cloned()
            .ok_or_else(|| {
                Status::failed_precondition(format!("image {:?} is not available", template.image))
            })?;
        container::limits(template.resources.as_ref()).map_err(Status::invalid_argument)?;
        let id = {
            let b = rand::random::<[u8; 16]>();
            let h = hex::encode(b);
            format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            )
        };
        let name = if req.name.is_empty() {
            format!("sandbox-{}", crate::e2b::random_id(8))
        } else {
            req.name
        };
        let seq = {
            let mut n = lock(&self.standin.next_seq);
            *n += 1;
            *n
        };
        let s = Arc::new(Sandbox {
            id,
            name: name.clone(),
            workspace: ws.clone(),
            created: SystemTime::now(),
            labels: req.labels,
            annotations: req.annotations,
            spec,
            seq,
            life: std::sync::Mutex::new(Life {
                phase: pb::SandboxPhase::Provisioning,
                resource_version: 1,
                machine: None,
                failure: None,
            }),
        });
        {
            let mut all = lock(&self.standin.sandboxes);
            if all.contains_key(&(ws.clone(), name.clone())) {
                return Err(Status::already_exists("sandbox already exists"));
            }
            all.insert((ws, name), s.clone());
        }
        tokio::spawn(Gateway::provision(self.standin.clone(), s.clone(), image));
        Ok(Response::new(pb::SandboxResponse {
            sandbox: Some(self.render(&s, false)),
            service_urls: HashMap::new(),
        }))
    }

    async fn get_sandbox(
        &self,
        request: Request<pb::GetSandboxRequest>,
    ) -> Result<Response<pb::SandboxResponse>, Status> {
        let req = request.into_inner();
        let ws = workspace(req.workspace_scope.as_ref())?;
        let s = self.standin.get(&ws, &req.name).ok_or_else(not_found)?;
        // A ready sandbox whose container died is in error, as the gateway's
        // watch reports it.
        let machine = {
            let life = lock(&s.life);
            (life.phase == pb::SandboxPhase::Ready)
                .then(|| life.machine.clone())
                .flatten()
        };
        if let Some(m) = machine
            && !m.running().await
        {
            let mut life = lock(&s.life);
            if life.phase == pb::SandboxPhase::Ready {
                life.set(pb::SandboxPhase::Error);
            }
        }
        Ok(Response::new(pb::SandboxResponse {
            sandbox: Some(self.render(&s, true)),
            service_urls: HashMap::new(),
        }))
    }

    async fn list_sandboxes(
        &self,
        request: Request<pb::ListSandboxesRequest>,
    ) -> Result<Response<pb::ListSandboxesResponse>, Status> {
        let req = request.into_inner();
        let all = matches!(
            req.workspace_scope
                .as_ref()
                .and_then(|s| s.selection.as_ref()),
            Some(Selection::AllWorkspaces(_))
        );
        let ws = if all {
            String::new()
        } else {
            workspace(req.workspace_scope.as_ref())?
        };
        let want = selector(&req.label_selector)?;
        let size = match usize::try_from(req.page_size) {
            Ok(0) => DEFAULT_PAGE_SIZE,
            Ok(n) => n.min(MAX_PAGE_SIZE),
            Err(_) => return Err(Status::invalid_argument("page_size must not be negative")),
        };
        let offset: usize = if req.page_token.is_empty() {
            0
        } else {
            req.page_token
                .parse()
                .map_err(|_| Status::invalid_argument("invalid page_token"))?
        };
        let mut matching: Vec<Arc<Sandbox>> = lock(&self.standin.sandboxes)
            .values()
            .filter(|s| all || s.workspace == ws)
            .filter(|s| want.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
            .cloned()
            .collect();
        matching.sort_by_key(|s| s.seq);
        let page: Vec<pb::Sandbox> = matching
            .iter()
            .skip(offset)
            .take(size)
            .map(|s| self.render(s, true))
            .collect();
        let next = offset + page.len();
        Ok(Response::new(pb::ListSandboxesResponse {
            sandboxes: page,
            next_page_token: if next < matching.len() {
                next.to_string()
            } else {
                String::new()
            },
        }))
    }

    async fn delete_sandbox(
        &self,
        request: Request<pb::DeleteSandboxRequest>,
    ) -> Result<Response<pb::DeleteSandboxResponse>, Status> {
        let req = request.into_inner();
        let ws = workspace(req.workspace_scope.as_ref())?;
        match self.standin.delete(&ws, &req.name).await {
            Some(s) => Ok(Response::new(pb::DeleteSandboxResponse {
                outcome: pb::DeletionOutcome::Completed as i32,
                sandbox_id: s.id.clone(),
            })),
            None if req.allow_missing => Ok(Response::new(pb::DeleteSandboxResponse {
                outcome: pb::DeletionOutcome::AlreadyAbsent as i32,
                sandbox_id: String::new(),
            })),
            None => Err(not_found()),
        }
    }

    async fn stop_sandbox(
        &self,
        request: Request<pb::StopSandboxRequest>,
    ) -> Result<Response<pb::SandboxResponse>, Status> {
        let req = request.into_inner();
        let ws = workspace(req.workspace_scope.as_ref())?;
        let (s, machine) = self.ready_machine(&ws, &req.name)?;
        lock(&s.life).set(pb::SandboxPhase::Stopping);
        machine.stop().await.map_err(Status::unavailable)?;
        lock(&s.life).set(pb::SandboxPhase::Stopped);
        Ok(Response::new(pb::SandboxResponse {
            sandbox: Some(self.render(&s, false)),
            service_urls: HashMap::new(),
        }))
    }

    async fn start_sandbox(
        &self,
        request: Request<pb::StartSandboxRequest>,
    ) -> Result<Response<pb::SandboxResponse>, Status> {
        let req = request.into_inner();
        let ws = workspace(req.workspace_scope.as_ref())?;
        let s = self.standin.get(&ws, &req.name).ok_or_else(not_found)?;
        let machine = {
            let mut life = lock(&s.life);
            match (&life.machine, life.phase) {
                (Some(m), pb::SandboxPhase::Stopped) => {
                    let m = m.clone();
                    life.set(pb::SandboxPhase::Starting);
                    m
                }
                _ => return Err(Status::failed_precondition("sandbox is not stopped")),
            }
        };
        machine.start().await.map_err(Status::unavailable)?;
        lock(&s.life).set(pb::SandboxPhase::Ready);
        Ok(Response::new(pb::SandboxResponse {
            sandbox: Some(self.render(&s, false)),
            service_urls: HashMap::new(),
        }))
    }

    async fn get_sandbox_config(
        &self,
        request: Request<sb::GetSandboxConfigRequest>,
    ) -> Result<Response<sb::GetSandboxConfigResponse>, Status> {
        let req = request.into_inner();
        let ws = workspace(req.workspace_scope.as_ref())?;
        let s = self.standin.get(&ws, &req.name).ok_or_else(not_found)?;
        let mut p = s.spec.policy.clone().unwrap_or_else(policy::default_policy);
        if self.standin.settings.faults.policy_drift {
            p = policy::drifted(&p);
        }
        let version = p.version.max(1);
        Ok(Response::new(sb::GetSandboxConfigResponse {
            policy_hash: policy::hash(&p),
            policy: Some(p),
            version,
            config_revision: 1,
            policy_source: sb::PolicySource::Sandbox as i32,
            workspace: ws,
            configuration_admitted: true,
            ..sb::GetSandboxConfigResponse::default()
        }))
    }

    async fn exec_sandbox(
        &self,
        request: Request<pb::ExecSandboxRequest>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::ExecSandboxEvent>>, Status> {
        let req = request.into_inner();
        exec::command_string(&req)?;
        let ws = workspace(req.workspace_scope.as_ref())?;
        let (s, machine) = self.ready_machine(&ws, &req.sandbox)?;
        let events = exec::start(s, machine, req).await?;
        Ok(Response::new(Box::pin(events)))
    }

    async fn exec_sandbox_interactive(
        &self,
        request: Request<tonic::Streaming<pb::ExecSandboxInput>>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::ExecSandboxEvent>>, Status> {
        let events = exec::interactive(self, request.into_inner()).await?;
        Ok(Response::new(Box::pin(events)))
    }

    async fn create_ssh_session(
        &self,
        request: Request<pb::CreateSshSessionRequest>,
    ) -> Result<Response<pb::CreateSshSessionResponse>, Status> {
        forward::create(&self.standin, request.into_inner()).map(Response::new)
    }

    async fn revoke_ssh_session(
        &self,
        request: Request<pb::RevokeSshSessionRequest>,
    ) -> Result<Response<pb::RevokeSshSessionResponse>, Status> {
        forward::revoke(&self.standin, request.get_ref()).map(Response::new)
    }

    async fn forward_tcp(
        &self,
        request: Request<tonic::Streaming<pb::TcpForwardFrame>>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::TcpForwardFrame>>, Status> {
        let frames = forward::forward(self, request.into_inner()).await?;
        Ok(Response::new(Box::pin(frames)))
    }
}
