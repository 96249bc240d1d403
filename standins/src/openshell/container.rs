//! A sandbox's container, as OpenShell's Docker compute driver runs one
//! ("Docker-backed sandboxes run as containers on the gateway host"), held
//! to what the gateway's supervisor would enforce with no policy rules:
//!
//! * its main process does nothing (`sleep infinity`): commands arrive by
//!   exec, as they arrive over the supervisor's SSH session;
//! * no network at all (`--network none`: the gateway's deny-all egress
//!   with no rules leaves loopback only);
//! * a read-only root with a writable `/tmp` tmpfs (writes land only under
//!   `/tmp`, as OpenShell's filesystem allowlist would allow);
//! * every capability dropped, no new privileges, a process cap;
//! * `spec.template.resources.limits` (Kubernetes quantities: `cpu` `"1"`,
//!   `"500m"`; `memory` `"256Mi"`, `"1G"`, bytes) applied as docker limits,
//!   [`DEFAULT_MEMORY`] when none is asked for;
//! * the stand-in's runtime (`runsc`) when it has one (then without docker's
//!   seccomp profile, which gVisor's `--oci-seccomp` would apply inside the
//!   sentry, where it stops node's threads: the sentry is the wall), and
//!   [`LABEL`] = its run id.

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder, StopContainerOptionsBuilder,
};

use crate::container::Exec;
pub use crate::container::Input;
pub use crate::container::Started;

/// The label every stand-in container carries (its value: the stand-in's run id).
pub const LABEL: &str = "io.plimsoll.standin.openshell";
/// The most processes one sandbox may hold.
pub const PIDS_LIMIT: i64 = 1024;
/// The memory cap when the create asks for none (bytes): 1 GiB.
pub const DEFAULT_MEMORY: i64 = 1 << 30;
/// The writable `/tmp`.
pub const TMPFS: &str = "rw,nosuid,nodev,size=256m,mode=1777";

/// Docker limits from `spec.template.resources`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU in billionths of a CPU (`NanoCpus`); `None`: unlimited.
    pub nano_cpus: Option<i64>,
    /// Memory, bytes.
    pub memory: i64,
}

/// A Kubernetes CPU quantity (`"2"`, `"0.5"`, `"500m"`) in nano CPUs.
pub fn cpu_quantity(q: &str) -> Option<i64> {
    let q = q.trim();
    let n = if let Some(m) = q.strip_suffix('m') {
        m.parse::<f64>().ok()? * 1e6
    } else {
        q.parse::<f64>().ok()? * 1e9
    };
    (n.is_finite() && n >= 1e6).then_some(n as i64)
}

/// A Kubernetes memory quantity (`"256Mi"`, `"1G"`, `"134217728"`) in bytes.
pub fn memory_quantity(q: &str) -> Option<i64> {
    let q = q.trim();
    const SUFFIXES: [(&str, f64); 12] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (num, mult) = SUFFIXES
        .iter()
        .find_map(|(s, m)| q.strip_suffix(s).map(|n| (n, *m)))
        .unwrap_or((q, 1.0));
    let n = num.parse::<f64>().ok()? * mult;
    (6.0 * 1_048_576.0..9.2e18).contains(&n).then_some(n as i64)
}

/// The limits `resources` (`{"limits": {"cpu": …, "memory": …}}`) asks for;
/// an unreadable quantity is an error naming it.
pub fn limits(resources: Option<&prost_types::Struct>) -> Result<Limits, String> {
    use prost_types::value::Kind;
    let mut out = Limits {
        nano_cpus: None,
        memory: DEFAULT_MEMORY,
    };
    let Some(Kind::StructValue(l)) = resources
        .and_then(|r| r.fields.get("limits"))
        .and_then(|v| v.kind.as_ref())
    else {
        return Ok(out);
    };
    let text = |k: &str| match l.fields.get(k).and_then(|v| v.kind.as_ref()) {
        Some(Kind::StringValue(s)) => Some(s.clone()),
        Some(Kind::NumberValue(n)) => Some(n.to_string()),
        _ => None,
    };
    if let Some(c) = text("cpu") {
        out.nano_cpus = Some(cpu_quantity(&c).ok_or(format!("invalid cpu limit {c:?}"))?);
    }
    if let Some(m) = text("memory") {
        out.memory = memory_quantity(&m).ok_or(format!("invalid memory limit {m:?}"))?;
    }
    Ok(out)
}

/// One sandbox's container.
#[derive(Debug, Clone)]
pub struct Machine {
    docker: Docker,
    /// The container's name.
    pub container: String,
    /// The user commands run as (the image's; `None`: root).
    user: Option<String>,
}

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

impl Machine {
    /// Creates and starts the container `name` from the local `image`.
    pub async fn create(
        docker: &Docker,
        name: &str,
        image: &str,
        settings: &super::Settings,
        limits: Limits,
        env: Vec<String>,
        labels: HashMap<String, String>,
    ) -> Result<Machine, String> {
        // Commands run as the image's user; the main process as root (with
        // no capabilities), as OpenShell's supervisor does.
        let user = docker
            .inspect_image(image)
            .await
            .map_err(|e| fail("docker image inspect", e))?
            .config
            .and_then(|c| c.user)
            .filter(|u| !u.is_empty());
        let (runtime, egress_open) = (settings.runtime.clone(), settings.faults.egress_open);
        // Under gVisor the sentry is the wall: docker's default seccomp
        // profile, applied inside it (`--oci-seccomp`), stops node's threads.
        let mut security_opt = vec!["no-new-privileges".to_owned()];
        if runtime.as_deref() == Some("runsc") {
            security_opt.push("seccomp=unconfined".into());
        }
        let network = if egress_open { "bridge" } else { "none" };
        let host = HostConfig {
            runtime,
            network_mode: Some(network.into()),
            memory: Some(limits.memory),
            memory_swap: Some(limits.memory),
            nano_cpus: limits.nano_cpus,
            pids_limit: Some(PIDS_LIMIT),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(security_opt),
            readonly_rootfs: Some(true),
            tmpfs: Some(HashMap::from([("/tmp".to_owned(), TMPFS.to_owned())])),
            init: Some(false),
            ..HostConfig::default()
        };
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            entrypoint: Some(vec!["sleep".into()]),
            cmd: Some(vec!["infinity".into()]),
            user: Some("0:0".into()),
            env: Some(env),
            labels: Some(labels),
            network_disabled: Some(!egress_open),
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
            user,
        };
        if let Err(e) = m.start().await {
            m.remove().await;
            return Err(e);
        }
        Ok(m)
    }

    /// Starts the (stopped) container.
    pub async fn start(&self) -> Result<(), String> {
        self.docker
            .start_container(&self.container, None)
            .await
            .map_err(|e| fail("docker start", e))
    }

    /// Stops the container: every process ends, `/tmp` (a tmpfs) empties.
    pub async fn stop(&self) -> Result<(), String> {
        let opts = StopContainerOptionsBuilder::new().t(0).build();
        self.docker
            .stop_container(&self.container, Some(opts))
            .await
            .map_err(|e| fail("docker stop", e))
    }

    /// Removes the container.
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

    /// Starts `argv` as the image's user, attached, stdin written then closed.
    pub async fn exec(&self, argv: Vec<String>, stdin: Vec<u8>) -> Result<Started, String> {
        self.exec_with(argv, Input::Bytes(stdin)).await
    }

    /// Starts `argv` as the image's user, attached, with `stdin`.
    pub async fn exec_with(&self, argv: Vec<String>, stdin: Input) -> Result<Started, String> {
        let exec = Exec {
            argv,
            stdin,
            user: Some(self.user.clone().unwrap_or_else(|| "0:0".into())),
            ..Exec::default()
        };
        crate::container::exec(&self.docker, &self.container, exec).await
    }

    /// Runs `argv` to its end and returns its exit code (output discarded).
    pub async fn run(&self, argv: Vec<String>) -> Result<i64, String> {
        use futures_util::StreamExt;
        let mut s = self.exec(argv, Vec::new()).await?;
        while s.output.next().await.is_some() {}
        self.exit_code(&s.exec_id)
            .await
            .ok_or_else(|| "no exit code".to_owned())
    }

    /// Whether the container is still running (`false` too when docker
    /// cannot say: it is gone).
    pub async fn running(&self) -> bool {
        self.docker
            .inspect_container(&self.container, None)
            .await
            .ok()
            .and_then(|c| c.state)
            .and_then(|s| s.running)
            .unwrap_or(false)
    }

    /// The exit code docker recorded for an exec, once it has one.
    pub async fn exit_code(&self, exec_id: &str) -> Option<i64> {
        crate::container::exit_code(&self.docker, exec_id).await
    }
}
