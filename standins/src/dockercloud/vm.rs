//! A stand-in "microVM": one local container per sandbox.
//!
//! Its root process is the create's `startupExecution.rawImage.start.argv`,
//! or the image's entrypoint and command, started by a `/bin/sh` (Docker
//! requires raw images to have one) that then sleeps: a VM keeps running
//! after its start command ends, so a container must too, or nothing could
//! be exec'd in it later. It runs as the image's user.
//!
//! Locked down as far as a VM's contract allows: every capability dropped
//! (an image whose user is root keeps the few root needs to act as root in
//! its own VM: own and write files, become another user, signal its
//! processes), no new privileges, a process cap, the memory and CPUs of the
//! create's `resources`, a writable root (the VM's disk), and no network at
//! all (a microVM under the account's deny-all policy) unless a fault or an
//! allowing policy says otherwise. Under `--runtime runsc` the wall is
//! gVisor's. Every container carries [`LABEL`] = the stand-in's run id.

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};

use crate::container::Exec;
pub use crate::container::Started;

/// The label every stand-in container carries (its value: the stand-in's run id).
pub const LABEL: &str = "io.plimsoll.standin.dockercloud";
/// The most processes one sandbox may hold.
pub const PIDS_LIMIT: i64 = 1024;

/// How to create one machine.
#[derive(Debug, Clone)]
pub struct MachineSpec {
    /// The local image.
    pub image: String,
    /// The start argv; `None`: the image's entrypoint and command.
    pub argv: Option<Vec<String>>,
    /// Extra environment (`environment`).
    pub env: Vec<String>,
    /// The docker runtime (`runsc`), or docker's default.
    pub runtime: Option<String>,
    /// Outbound network allowed (else the container has no network at all,
    /// or only `guarded`).
    pub network: bool,
    /// On the egress proxy's internal network (a policy rule admits it to
    /// the proxy; until then it reaches nothing), its allowed hostnames
    /// pointing at the proxy, the OS bundle holding the proxy's CA.
    pub guarded: Option<crate::e2b::vm::Guarded>,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// Whole CPUs.
    pub cpus: u32,
    /// Labels (the stand-in's run and the sandbox uid).
    pub labels: HashMap<String, String>,
}

/// One machine.
#[derive(Debug, Clone)]
pub struct Machine {
    docker: Docker,
    /// The container's name.
    pub container: String,
}

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Whether an image `User` is root (empty, `0`, `root`, with any group).
fn is_root(user: &str) -> bool {
    let name = user.split(':').next().unwrap_or_default();
    name.is_empty() || name == "0" || name == "root"
}

impl Machine {
    /// Creates and starts the machine named `name`.
    pub async fn create(
        docker: &Docker,
        name: &str,
        spec: &MachineSpec,
    ) -> Result<Machine, String> {
        let image = docker
            .inspect_image(&spec.image)
            .await
            .map_err(|e| fail("docker image inspect", e))?;
        let config = image.config.unwrap_or_default();
        let argv = match &spec.argv {
            Some(a) => a.clone(),
            None => {
                let mut a = config.entrypoint.clone().unwrap_or_default();
                a.extend(config.cmd.clone().unwrap_or_default());
                a
            }
        };
        let root = is_root(config.user.as_deref().unwrap_or_default());
        let cap_add = root.then(|| {
            [
                "CHOWN",
                "DAC_OVERRIDE",
                "FOWNER",
                "SETUID",
                "SETGID",
                "KILL",
            ]
            .map(String::from)
            .to_vec()
        });
        let network = match (&spec.guarded, spec.network) {
            (_, true) => crate::e2b::vm::NETWORK.to_owned(),
            (Some(g), false) => g.network.clone(),
            (None, false) => "none".to_owned(),
        };
        let guarded = spec.guarded.as_ref();
        let host = HostConfig {
            runtime: spec.runtime.clone(),
            network_mode: Some(network),
            extra_hosts: guarded.map(|g| g.extra_hosts.clone()),
            binds: guarded.map(|g| {
                vec![format!(
                    "{}:{}:ro",
                    g.bundle,
                    crate::e2b::egress::BUNDLE_IN_VM
                )]
            }),
            memory: Some(i64::try_from(spec.memory_mib << 20).unwrap_or(i64::MAX)),
            memory_swap: Some(i64::try_from(spec.memory_mib << 20).unwrap_or(i64::MAX)),
            nano_cpus: Some(i64::from(spec.cpus) * 1_000_000_000),
            pids_limit: Some(PIDS_LIMIT),
            cap_drop: Some(vec!["ALL".into()]),
            cap_add,
            security_opt: Some(vec!["no-new-privileges".into()]),
            init: Some(false),
            ..HostConfig::default()
        };
        // The start command runs, then the "VM" keeps running.
        let mut cmd = vec![
            "if [ $# -gt 0 ]; then \"$@\"; fi; exec sleep infinity".to_owned(),
            "sandbox-start".to_owned(),
        ];
        cmd.extend(argv);
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            entrypoint: Some(vec!["/bin/sh".into(), "-c".into()]),
            cmd: Some(cmd),
            env: Some(spec.env.clone()),
            labels: Some(spec.labels.clone()),
            network_disabled: Some(!spec.network && spec.guarded.is_none()),
            host_config: Some(host),
            ..ContainerCreateBody::default()
        };
        let opts = CreateContainerOptionsBuilder::new().name(name).build();
        docker
            .create_container(Some(opts), body)
            .await
            .map_err(|e| fail("docker create", e))?;
        let m = Machine {
            docker: docker.clone(),
            container: name.to_owned(),
        };
        if let Err(e) = docker.start_container(name, None).await {
            m.remove().await;
            return Err(fail("docker start", e));
        }
        Ok(m)
    }

    /// Stops the machine: every process ends, the disk stays.
    pub async fn stop(&self) -> Result<(), String> {
        let opts = StopContainerOptionsBuilder::new().t(0).build();
        self.docker
            .stop_container(&self.container, Some(opts))
            .await
            .map_err(|e| fail("docker stop", e))
    }

    /// Removes the machine and its disk.
    pub async fn remove(&self) {
        let opts = RemoveContainerOptionsBuilder::new().force(true).build();
        if let Err(e) = self
            .docker
            .remove_container(&self.container, Some(opts))
            .await
        {
            tracing::warn!(container = %self.container, error = %e, "removing a stand-in sandbox failed");
        }
    }

    /// Starts `argv` (as `user` when given, else the image's user, in
    /// `working_dir` when given) with `env`, writing `stdin` and closing it.
    pub async fn exec(
        &self,
        argv: Vec<String>,
        env: Vec<String>,
        user: Option<String>,
        working_dir: Option<String>,
        stdin: Option<Vec<u8>>,
    ) -> Result<Started, String> {
        let exec = Exec {
            argv,
            env,
            user,
            working_dir,
            stdin: stdin.into(),
        };
        crate::container::exec(&self.docker, &self.container, exec).await
    }

    /// The exit code docker recorded for an exec, once it has one.
    pub async fn exit_code(&self, exec_id: &str) -> Option<i64> {
        crate::container::exit_code(&self.docker, exec_id).await
    }
}

/// Removes every container labelled with `run_id` (and their disks), and
/// waits (up to 30 s) until docker lists none: a removal another task began
/// may still be in progress.
pub async fn remove_labelled(docker: &Docker, run_id: &str) {
    let filters = HashMap::from([("label", vec![format!("{LABEL}={run_id}")])]);
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
            let removing = c
                .state
                .as_ref()
                .is_some_and(|s| s.to_string() == "removing");
            if let (Some(id), false) = (c.id, removing) {
                let opts = RemoveContainerOptionsBuilder::new().force(true).build();
                if let Err(e) = docker.remove_container(&id, Some(opts)).await {
                    tracing::debug!(container = %id, error = %e, "removing a leftover stand-in container failed");
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    tracing::warn!(run = %run_id, "stand-in containers still listed after 30 s");
}
