//! The NVIDIA OpenShell stand-in: the gateway's gRPC API (service
//! `openshell.v1.OpenShell`, HTTP/2) over mutual TLS, generated from the
//! 0.1.5 protocol definitions ([`proto`]; vendored and pinned under
//! `openshell-proto/proto/`). Notes on the protocol:
//! `docs/research/hosted-providers.md` §3 (read at a HEAD older than 0.1.x:
//! 0.1.5 names sandboxes, not ids, in `ExecSandbox` and `GetSandboxConfig`,
//! scopes every call to a workspace, pages with tokens, answers deletes with
//! a `DeletionOutcome` and takes `execution_timeout` as a `Duration`); how
//! to run it: `docs/providers/openshell.md`.
//!
//! One TLS listener ([`tls`]): a client must present a certificate chained
//! to the configured client CA or the handshake fails. Covered ([`service`],
//! [`exec`]):
//!
//! * `Health` (`SERVICE_STATUS_HEALTHY`, version [`GATEWAY_VERSION`]);
//! * `GetGatewayInfo`: one compute driver, `docker`, whose `driver_version`
//!   is the local dockerd's;
//! * `CreateSandbox` (`spec` required, else `invalid_argument`; an existing
//!   name in the workspace is `already_exists`; an empty name is generated;
//!   `metadata.id` assigned; labels, annotations and spec kept; phase
//!   `PROVISIONING`, then `READY` once its container runs, `ERROR` if it
//!   cannot be made); `GetSandbox` by name; `ListSandboxes` (`label_selector`
//!   `k1=v1,k2=v2`, `page_size`, `page_token`, one workspace or all);
//!   `DeleteSandbox` by name (`COMPLETED` with the id; `allow_missing`
//!   answers `ALREADY_ABSENT`, else `not_found`); `StopSandbox` and
//!   `StartSandbox` (the container stopped and started again: `STOPPED`,
//!   then `READY`);
//! * `GetSandboxConfig` by name: the create's `spec.policy` (or
//!   [`policy::default_policy`]), `version` 1, `policy_hash` as the gateway
//!   computes it ([`policy::hash`]), `policy_source` `SANDBOX`;
//! * `ExecSandbox`, see [`exec`];
//! * `CreateSshSession`, `RevokeSshSession` and `ForwardTcp` (a sandbox's
//!   loopback port reached through the gateway), see [`forward`].
//!
//! A request without a `workspace_scope` is taken to mean the workspace
//! [`DEFAULT_WORKSPACE`] (the published client always sends one). Every
//! other RPC answers `unimplemented`, as do providers, workload templates
//! and service exposures asked for in a create (`failed_precondition`,
//! since there are none to find). No OIDC, bearer tokens, roles or scopes:
//! the client certificate is the whole identity, as on a local mTLS gateway.
//!
//! Each sandbox is a real local container ([`container`]) from the image
//! its `spec.template.image` maps to in [`Settings::images`].
//!
//! Faults a test can ask for ([`Faults`]) make it answer as a gateway on
//! another driver, or one that altered what it was given, would.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bollard::Docker;

pub mod container;
pub mod exec;
pub mod forward;
pub mod policy;
pub mod proto;
pub mod sandboxes;
pub mod service;
pub mod tls;

pub use crate::e2b::lock;
use proto::v1 as pb;

/// The gateway version the stand-in reports (the client's pin).
pub const GATEWAY_VERSION: &str = "0.1.5";
/// The workspace a request without a `workspace_scope` is taken to name.
pub const DEFAULT_WORKSPACE: &str = "default";
/// The image reference a create naming none gets.
pub const DEFAULT_IMAGE_REF: &str = "plimsoll/project:latest";
/// How long calls in flight may finish once the stand-in is told to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Misbehaviour a test asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// `GetGatewayInfo` reports a `kubernetes` compute driver, not `docker`.
    pub other_driver: bool,
    /// `GetSandbox` and `ListSandboxes` answer with a label value and the
    /// image changed from what the create asked for.
    pub readback_differs: bool,
    /// `GetSandboxConfig` reports a policy (and its hash) with a network
    /// rule the create did not ask for.
    pub policy_drift: bool,
    /// Sandboxes get docker's default bridge network (an interface besides
    /// loopback, and a way out), as a gateway whose egress wall is broken.
    pub egress_open: bool,
}

/// How the stand-in is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `spec.template.image` → local docker image. An image not listed is
    /// refused (`failed_precondition`); an empty one is [`DEFAULT_IMAGE_REF`].
    pub images: HashMap<String, String>,
    /// The docker runtime for sandboxes (`runsc`), or docker's default.
    pub runtime: Option<String>,
    /// Faults to inject.
    pub faults: Faults,
}

/// One sandbox.
#[derive(Debug)]
pub struct Sandbox {
    /// `metadata.id`.
    pub id: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.workspace`.
    pub workspace: String,
    /// `metadata.created_time`.
    pub created: SystemTime,
    /// `metadata.labels`.
    pub labels: HashMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: HashMap<String, String>,
    /// `spec` as created (`template.image` filled in when empty).
    pub spec: pb::SandboxSpec,
    /// Creation order (list order).
    pub seq: u64,
    /// Phase, resource version and container.
    pub life: Mutex<Life>,
}

/// What changes over a sandbox's life.
#[derive(Debug)]
pub struct Life {
    /// `status.phase`.
    pub phase: pb::SandboxPhase,
    /// `metadata.resource_version`, bumped at every change.
    pub resource_version: u64,
    /// The container, once made.
    pub machine: Option<container::Machine>,
    /// Why it failed (phase `ERROR`).
    pub failure: Option<String>,
}

impl Life {
    /// Moves to `phase`.
    pub fn set(&mut self, phase: pb::SandboxPhase) {
        self.phase = phase;
        self.resource_version += 1;
    }
}

/// The stand-in's state.
#[derive(Debug)]
pub struct StandIn {
    /// Its settings.
    pub settings: Settings,
    /// The local docker daemon.
    pub docker: Docker,
    /// This run's id (labels its containers).
    pub run_id: String,
    /// Sandboxes by (workspace, name).
    pub sandboxes: Mutex<BTreeMap<(String, String), Arc<Sandbox>>>,
    /// The next sandbox's `seq`.
    pub next_seq: Mutex<u64>,
    /// `CreateSshSession`'s tokens and the forwards open on them.
    pub tokens: Mutex<forward::Tokens>,
}

impl StandIn {
    /// A stand-in on the local docker daemon.
    pub fn new(settings: Settings) -> Result<Arc<StandIn>, String> {
        let docker = Docker::connect_with_local_defaults().map_err(|e| format!("docker: {e}"))?;
        Ok(Arc::new(StandIn {
            settings,
            docker,
            run_id: hex::encode(rand::random::<[u8; 6]>()),
            sandboxes: Mutex::default(),
            next_seq: Mutex::new(1),
            tokens: Mutex::default(),
        }))
    }

    /// The sandbox named `name` in `workspace`.
    pub fn get(&self, workspace: &str, name: &str) -> Option<Arc<Sandbox>> {
        lock(&self.sandboxes)
            .get(&(workspace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Forgets a sandbox and removes its container.
    pub async fn delete(&self, workspace: &str, name: &str) -> Option<Arc<Sandbox>> {
        let s = lock(&self.sandboxes).remove(&(workspace.to_owned(), name.to_owned()))?;
        let machine = {
            let mut life = lock(&s.life);
            life.set(pb::SandboxPhase::Deleting);
            life.machine.take()
        };
        if let Some(m) = machine {
            m.remove().await;
        }
        Some(s)
    }

    /// Removes every sandbox and every container labelled with this run:
    /// the stand-in is stopping.
    pub async fn shutdown(&self) {
        let keys: Vec<_> = lock(&self.sandboxes).keys().cloned().collect();
        for (w, n) in keys {
            self.delete(&w, &n).await;
        }
        remove_labelled(&self.docker, &self.run_id).await;
    }
}

/// Removes every container labelled with `run_id`, waiting (up to 30 s)
/// until docker lists none.
pub async fn remove_labelled(docker: &Docker, run_id: &str) {
    use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptionsBuilder};
    let filters = HashMap::from([("label", vec![format!("{}={run_id}", container::LABEL)])]);
    for _ in 0..150 {
        let opts = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let list = match docker.list_containers(Some(opts)).await {
            Ok(l) if l.is_empty() => return,
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "listing stand-in containers failed");
                return;
            }
        };
        for c in list {
            if let Some(id) = c.id {
                let opts = RemoveContainerOptionsBuilder::new().force(true).build();
                if let Err(e) = docker.remove_container(&id, Some(opts)).await {
                    tracing::debug!(container = %id, error = %e, "removing a leftover stand-in container failed");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tracing::warn!(run = %run_id, "stand-in containers still listed after 30 s");
}

/// Serves the gateway on `listener` with mutual TLS until `stop` resolves;
/// then removes every sandbox.
pub async fn serve(
    standin: Arc<StandIn>,
    listener: tokio::net::TcpListener,
    tls: tls::ServerTls,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let (tx, mut rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        stop.await;
        let _ = tx.send(true);
    });
    let mut grace_rx = rx.clone();
    let server = tonic::transport::Server::builder()
        .tls_config(tls.config())
        .map_err(|e| format!("TLS: {e}"))?
        .add_service(pb::open_shell_server::OpenShellServer::new(
            service::Gateway::new(standin.clone()),
        ))
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            async move {
                let _ = rx.wait_for(|s| *s).await;
            },
        );
    // Calls in flight get a grace period, not a veto: an exec a client
    // keeps waiting on must not keep the sandboxes alive.
    let grace = async move {
        let _ = grace_rx.wait_for(|s| *s).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    let served = tokio::select! {
        r = server => r.map_err(|e| format!("serving: {e}")),
        () = grace => Ok(()),
    };
    standin.shutdown().await;
    served
}
