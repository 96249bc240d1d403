//! A stand-in "VM": one local container per sandbox, its root process a
//! `sleep` as root (where E2B's envd would run), everything else started in
//! it with `docker exec` as the user envd would pick.
//!
//! It is locked down as far as a VM's contract allows: every capability
//! dropped except those root needs to act as envd does (become a user, own
//! and write its files, signal its processes), no new privileges, a process
//! cap, the template's memory and CPUs, and no network at all unless the
//! sandbox was created with internet access. Under `--runtime runsc` the wall
//! is gVisor's. Pausing stops the container (processes end, files stay), as
//! an E2B pause keeps the disk and, for plimsoll's purposes, ends the
//! interpreters.

use std::collections::HashMap;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder, StopContainerOptionsBuilder,
};
use futures_util::StreamExt;

pub use crate::container::Started;
use crate::container::{Exec, Input};

/// The label every stand-in container carries (its value: the stand-in's run id).
pub const LABEL: &str = "io.plimsoll.standin.e2b";
/// The docker network a VM with outbound access joins: the stand-in's own
/// bridge (interface [`BRIDGE`]), not docker's default one, so a VM's way out
/// does not depend on `docker0`, which another dockerd on the host (the
/// fault tests' private one, started with `--bridge=none`) may delete.
pub const NETWORK: &str = "plimsoll-standin";
/// The host interface of [`NETWORK`].
pub const BRIDGE: &str = "plstandin0";
/// The most output [`Machine::run`] keeps per stream.
pub const MAX_COLLECTED_BYTES: usize = 64 << 20;

/// How to create one machine.
#[derive(Debug, Clone)]
pub struct MachineSpec {
    /// The local image (the template's).
    pub image: String,
    /// The docker runtime (`runsc`), or docker's default.
    pub runtime: Option<String>,
    /// Outbound network allowed (else the container has no network at all,
    /// or only `guarded`).
    pub network: bool,
    /// Behind the egress proxy: its internal network, where each allowed
    /// hostname points, and the OS bundle holding the stand-in's CA.
    pub guarded: Option<Guarded>,
    /// Memory, MiB.
    pub memory_mb: u32,
    /// Whole CPUs.
    pub cpus: u32,
    /// Labels (the stand-in's run and the sandbox id).
    pub labels: HashMap<String, String>,
}

/// A machine's way to the egress proxy.
#[derive(Debug, Clone)]
pub struct Guarded {
    /// The internal docker network.
    pub network: String,
    /// `host:ip` entries for `/etc/hosts`.
    pub extra_hosts: Vec<String>,
    /// The host file bind-mounted read-only at the OS bundle's path.
    pub bundle: String,
}

/// One running (or stopped) machine.
#[derive(Debug, Clone)]
pub struct Machine {
    docker: Docker,
    /// The container's name.
    pub container: String,
}

/// What a collected run produced.
#[derive(Debug)]
pub struct Collected {
    /// Its exit code.
    pub code: i64,
    /// Standard output (at most [`MAX_COLLECTED_BYTES`]).
    pub stdout: Vec<u8>,
    /// Standard error (at most [`MAX_COLLECTED_BYTES`]).
    pub stderr: Vec<u8>,
}

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Creates [`NETWORK`] unless it exists.
pub async fn ensure_network(docker: &Docker) -> Result<(), String> {
    if docker.inspect_network(NETWORK, None).await.is_ok() {
        return Ok(());
    }
    let request = bollard::models::NetworkCreateRequest {
        name: NETWORK.into(),
        driver: Some("bridge".into()),
        options: Some(HashMap::from([(
            "com.docker.network.bridge.name".to_owned(),
            BRIDGE.to_owned(),
        )])),
        ..Default::default()
    };
    match docker.create_network(request).await {
        Ok(_) => Ok(()),
        // Another stand-in made it meanwhile.
        Err(_) if docker.inspect_network(NETWORK, None).await.is_ok() => Ok(()),
        Err(e) => Err(fail("docker network create", e)),
    }
}

impl Machine {
    /// Creates and starts the machine.
    pub async fn create(
        docker: &Docker,
        name: &str,
        spec: &MachineSpec,
    ) -> Result<Machine, String> {
        let network_mode = match (&spec.guarded, spec.network) {
            (_, true) => NETWORK.to_owned(),
            (Some(g), false) => g.network.clone(),
            (None, false) => "none".to_owned(),
        };
        let guarded = spec.guarded.as_ref();
        let host = HostConfig {
            runtime: spec.runtime.clone(),
            network_mode: Some(network_mode),
            extra_hosts: guarded.map(|g| g.extra_hosts.clone()),
            binds: guarded
                .map(|g| vec![format!("{}:{}:ro", g.bundle, super::egress::BUNDLE_IN_VM)]),
            memory: Some(i64::from(spec.memory_mb) << 20),
            memory_swap: Some(i64::from(spec.memory_mb) << 20),
            nano_cpus: Some(i64::from(spec.cpus) * 1_000_000_000),
            pids_limit: Some(1024),
            cap_drop: Some(vec!["ALL".into()]),
            cap_add: Some(
                [
                    "CHOWN",
                    "DAC_OVERRIDE",
                    "FOWNER",
                    "SETUID",
                    "SETGID",
                    "KILL",
                ]
                .map(String::from)
                .to_vec(),
            ),
            security_opt: Some(vec!["no-new-privileges".into()]),
            init: Some(false),
            ..HostConfig::default()
        };
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            user: Some("0:0".into()),
            entrypoint: Some(vec!["sleep".into()]),
            cmd: Some(vec!["infinity".into()]),
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
        if let Err(e) = m.start().await {
            m.remove().await;
            return Err(e);
        }
        Ok(m)
    }

    /// Starts a stopped machine.
    pub async fn start(&self) -> Result<(), String> {
        self.docker
            .start_container(&self.container, None)
            .await
            .map_err(|e| fail("docker start", e))
    }

    /// Stops the machine: every process ends, the files stay.
    pub async fn stop(&self) -> Result<(), String> {
        let opts = StopContainerOptionsBuilder::new().t(0).build();
        self.docker
            .stop_container(&self.container, Some(opts))
            .await
            .map_err(|e| fail("docker stop", e))
    }

    /// Removes the machine and its files.
    pub async fn remove(&self) {
        let opts = RemoveContainerOptionsBuilder::new().force(true).build();
        if let Err(e) = self
            .docker
            .remove_container(&self.container, Some(opts))
            .await
        {
            tracing::warn!(container = %self.container, error = %e, "removing a stand-in machine failed");
        }
    }

    /// Starts `argv` as `user` with `env` and `stdin`.
    pub async fn exec(
        &self,
        user: &str,
        argv: Vec<String>,
        env: Vec<String>,
        stdin: Input,
    ) -> Result<Started, String> {
        let exec = Exec {
            argv,
            env,
            user: Some(user.to_owned()),
            working_dir: None,
            stdin,
        };
        crate::container::exec(&self.docker, &self.container, exec).await
    }

    /// The exit code docker recorded for an exec, once it has one.
    pub async fn exit_code(&self, exec_id: &str) -> Option<i64> {
        crate::container::exit_code(&self.docker, exec_id).await
    }

    /// Runs `argv` as `user` to the end and collects its output.
    pub async fn run(
        &self,
        user: &str,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
    ) -> Result<Collected, String> {
        let mut started = self.exec(user, argv, Vec::new(), stdin.into()).await?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        while let Some(item) = started.output.next().await {
            match item.map_err(|e| fail("reading an exec's output", e))? {
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    keep(&mut stdout, &message)
                }
                LogOutput::StdErr { message } => keep(&mut stderr, &message),
                LogOutput::StdIn { .. } => {}
            }
        }
        let code = self
            .exit_code(&started.exec_id)
            .await
            .ok_or("docker holds no exit code for the exec")?;
        Ok(Collected {
            code,
            stdout,
            stderr,
        })
    }
}

fn keep(into: &mut Vec<u8>, chunk: &[u8]) {
    let room = MAX_COLLECTED_BYTES.saturating_sub(into.len());
    into.extend_from_slice(&chunk[..chunk.len().min(room)]);
}
