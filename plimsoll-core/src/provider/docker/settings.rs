//! The docker provider's settings and its registration: the runtime, the
//! images, the seccomp profile, the guest uid and the daemon endpoint, read
//! from its own variables, and the per-run envelope applied to the shared
//! resource settings.

use std::sync::Arc;

use crate::env::{ConfigError, Env, Var};
use crate::hardened::{Violation, pinned_image};
use crate::provider::{
    Checks, Chosen, Plugin, Provider, ProviderSettings, ResourceSettings, Setup,
};

/// The variables only the docker provider reads; set under another provider,
/// they are a configuration error.
const EXCLUSIVE: &[&str] = &[
    "SANDBOX_DOCKER_RUNTIME",
    "SANDBOX_DOCKER_IMAGE",
    "SANDBOX_DOCKER_PROJECT_IMAGE",
    "SANDBOX_DOCKER_SECCOMP",
    "SANDBOX_GUEST_UID",
    "SANDBOX_SNIPPET_POOL",
];

/// The docker provider's registration.
pub static PLUGIN: Plugin = Plugin {
    name: "docker",
    variables: VARIABLES,
    exclusive: EXCLUSIVE,
    areas: &["docker", "host"],
    remote: false,
    metered: false,
    from_env,
    defaults: || Chosen::new(DockerSettings::default()),
};

const VARIABLES: &[Var] = &[
    Var {
        name: "SANDBOX_DOCKER_RUNTIME",
        default: "runc",
        help: "docker: runc (container tier) or runsc (kernel tier, once its registration and proofs pass)",
    },
    Var {
        name: "SANDBOX_DOCKER_IMAGE",
        default: "plimsoll/snippet:latest",
        help: "docker: the snippet image (local, inspected at startup, run by image ID)",
    },
    Var {
        name: "SANDBOX_DOCKER_PROJECT_IMAGE",
        default: "plimsoll/project:latest",
        help: "docker: the project image (local, inspected at startup, run by image ID)",
    },
    Var {
        name: "SANDBOX_DOCKER_SECCOMP",
        default: "plimsoll",
        help: "docker: plimsoll (the shipped deny-by-default profile), docker-default (docker's own, weaker: AF_VSOCK, AF_NETLINK, io_uring), unconfined (no filter), or a profile path; applied under runc and, inside gVisor, under runsc (registered with --oci-seccomp)",
    },
    Var {
        name: "SANDBOX_GUEST_UID",
        default: "61000",
        help: "docker: uid=gid guest code runs as (1..65532; uid+1 runs the container's keeper)",
    },
    Var {
        name: "SANDBOX_SNIPPET_POOL",
        default: "0",
        help: "docker: snippet containers kept started and waiting for code, 0..=64; each serves one run and is removed after it, and holds one run's memory of SANDBOX_TOTAL_MEMORY_MB",
    },
    Var {
        name: "DOCKER_HOST",
        default: "unix:///var/run/docker.sock",
        help: "docker: the daemon socket; only a local unix:// socket is accepted",
    },
    Var {
        name: "DOCKER_CONTEXT",
        default: "the docker CLI's current context",
        help: "docker: a CLI context; only one whose endpoint is a local unix:// socket is accepted",
    },
    Var {
        name: "DOCKER_CONFIG",
        default: "~/.docker",
        help: "docker: where the CLI's config.json and contexts live (read to resolve the context)",
    },
];

fn from_env(env: &Env<'_>, resources: &ResourceSettings) -> Result<Chosen, ConfigError> {
    let s = DockerSettings::from_env(env)?;
    DockerEnvelope::from_settings(resources, s.runtime)?;
    Ok(Chosen::new(s))
}

impl ProviderSettings for DockerSettings {
    fn plugin(&self) -> &'static Plugin {
        &PLUGIN
    }

    fn build(&self, setup: &Setup) -> Result<Arc<dyn Provider>, ConfigError> {
        Ok(Arc::new(super::DockerProvider::new(setup, self)?))
    }

    fn warm_members(&self) -> u32 {
        self.snippet_pool
    }

    fn hardened(
        &self,
        _env: &Env<'_>,
        resources: &ResourceSettings,
        admission: &crate::admission::Limits,
    ) -> Vec<Violation> {
        let mut v = Vec::new();
        for (variable, image) in [
            ("SANDBOX_DOCKER_IMAGE", &self.image),
            ("SANDBOX_DOCKER_PROJECT_IMAGE", &self.project_image),
        ] {
            if !pinned_image(image) {
                v.push(Violation::new(
                    variable,
                    "must name its image by content in hardened mode: its ID (sha256:<64 hex>) or name@sha256:<64 hex>",
                ));
            }
        }
        if self.seccomp == SeccompSetting::Unconfined {
            v.push(Violation::new(
                "SANDBOX_DOCKER_SECCOMP",
                "must not be unconfined in hardened mode",
            ));
        }
        v.extend(resources.hardened_envelope(
            admission,
            &[
                "SANDBOX_MEMORY_MB",
                "SANDBOX_CPUS",
                "SANDBOX_DISK_MB",
                "SANDBOX_PIDS",
                "SANDBOX_TOTAL_MEMORY_MB",
            ],
        ));
        v
    }

    fn doctor<'a>(&'a self, setup: &'a Setup, chosen: bool) -> Checks<'a> {
        Box::pin(super::doctor::checks(setup, self, chosen))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The OCI runtime docker starts runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DockerRuntime {
    /// runc: a locked-down container sharing the host kernel (tier container).
    Runc,
    /// runsc (gVisor): a user-space kernel answers system calls (tier kernel, once proven).
    Runsc,
}

impl DockerRuntime {
    /// The runtime's name as docker registers it by default.
    pub fn as_str(self) -> &'static str {
        match self {
            DockerRuntime::Runc => "runc",
            DockerRuntime::Runsc => "runsc",
        }
    }
}

/// The seccomp profile every docker run applies (`SANDBOX_DOCKER_SECCOMP`),
/// under runc by the host kernel and under runsc inside gVisor (which needs
/// `--oci-seccomp` in its registration; the startup proof checks it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SeccompSetting {
    /// The profile this project ships (`images/seccomp.json`, embedded in the
    /// build): deny by default, AF_UNIX sockets only. The default.
    #[default]
    Shipped,
    /// Docker's built-in default profile, asked for by name (`docker-default`):
    /// weaker — it allows AF_VSOCK, AF_NETLINK, AF_INET sockets and io_uring.
    DockerDefault,
    /// No seccomp filter at all, asked for by name (`unconfined`).
    Unconfined,
    /// A profile file, read at startup and sent inline with every create.
    Profile(std::path::PathBuf),
}

impl SeccompSetting {
    /// The name evidence carries: `plimsoll`, `docker-default`, `unconfined`
    /// or `file` (a profile path; the policy digest covers its text).
    pub fn name(&self) -> &'static str {
        match self {
            SeccompSetting::Shipped => "plimsoll",
            SeccompSetting::DockerDefault => "docker-default",
            SeccompSetting::Unconfined => "unconfined",
            SeccompSetting::Profile(_) => "file",
        }
    }
}

/// The docker provider's settings (`SANDBOX_DOCKER_*`, `SANDBOX_GUEST_UID`
/// and the docker CLI's `DOCKER_HOST`, `DOCKER_CONTEXT`, `DOCKER_CONFIG`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerSettings {
    /// The runtime kind, which decides the tier claimed.
    pub runtime: DockerRuntime,
    /// The name docker knows the runtime by (`runc`/`runsc` from the
    /// environment; embedders and tests may name another registration, which
    /// must still exist and, for runsc, point at a program named `runsc`).
    pub runtime_name: String,
    /// `SANDBOX_DOCKER_IMAGE`: the snippet image reference.
    pub image: String,
    /// `SANDBOX_DOCKER_PROJECT_IMAGE`: the project image reference.
    pub project_image: String,
    /// `SANDBOX_DOCKER_SECCOMP`.
    pub seccomp: SeccompSetting,
    /// `SANDBOX_GUEST_UID`: guest code runs as uid=gid this; the container's
    /// keeper process runs as this + 1.
    pub guest_uid: u32,
    /// `SANDBOX_SNIPPET_POOL`: snippet containers kept started and waiting
    /// for code (0..=[`DockerSettings::MAX_SNIPPET_POOL`]), each for one run.
    pub snippet_pool: u32,
    /// `DOCKER_HOST` as set.
    pub docker_host: Option<String>,
    /// `DOCKER_CONTEXT` as set.
    pub docker_context: Option<String>,
    /// `DOCKER_CONFIG` as set.
    pub docker_config: Option<String>,
}

impl Default for DockerSettings {
    fn default() -> DockerSettings {
        DockerSettings {
            runtime: DockerRuntime::Runc,
            runtime_name: "runc".into(),
            image: "plimsoll/snippet:latest".into(),
            project_image: "plimsoll/project:latest".into(),
            seccomp: SeccompSetting::Shipped,
            guest_uid: 61000,
            snippet_pool: 0,
            docker_host: None,
            docker_context: None,
            docker_config: None,
        }
    }
}

/// systemd's reserved uid bands, which a guest uid (and uid+1) must avoid.
const SYSTEMD_UID_BANDS: [(u32, u32); 3] = [(60001, 60513), (60578, 60705), (61184, 65519)];

/// Whether `uid` (and `uid + 1`, the keeper) may be the guest uid.
pub fn valid_guest_uid(uid: u32) -> bool {
    (1..=65532).contains(&uid)
        && [uid, uid + 1].iter().all(|u| {
            !SYSTEMD_UID_BANDS
                .iter()
                .any(|(lo, hi)| (lo..=hi).contains(&u))
        })
}

/// A plausible local image reference: `name[:tag]`, `name@sha256:…` or `sha256:…`.
fn valid_image_ref(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/:@".contains(&b))
        && !s.starts_with(['-', '.', '/', ':', '@'])
}

impl DockerSettings {
    /// The largest snippet pool.
    pub const MAX_SNIPPET_POOL: u32 = 64;

    /// Reads the docker variables (the provider is docker).
    pub fn from_env(env: &Env<'_>) -> Result<DockerSettings, ConfigError> {
        let mut s = DockerSettings::default();
        s.runtime = match env.get("SANDBOX_DOCKER_RUNTIME").as_deref() {
            None | Some("runc") => DockerRuntime::Runc,
            Some("runsc") => DockerRuntime::Runsc,
            Some(v) => {
                return Err(ConfigError::new(
                    "SANDBOX_DOCKER_RUNTIME",
                    format!("{v:?} is not runc or runsc"),
                ));
            }
        };
        s.runtime_name = s.runtime.as_str().into();
        for (name, slot) in [
            ("SANDBOX_DOCKER_IMAGE", &mut s.image),
            ("SANDBOX_DOCKER_PROJECT_IMAGE", &mut s.project_image),
        ] {
            if let Some(v) = env.get(name) {
                if !valid_image_ref(&v) {
                    return Err(ConfigError::new(
                        name,
                        format!("{v:?} is not an image reference (name[:tag], name@sha256:…)"),
                    ));
                }
                *slot = v;
            }
        }
        s.seccomp = match env.get("SANDBOX_DOCKER_SECCOMP").as_deref() {
            None | Some("plimsoll") => SeccompSetting::Shipped,
            Some("docker-default") => SeccompSetting::DockerDefault,
            Some("unconfined") => SeccompSetting::Unconfined,
            Some(v) if v.starts_with('/') || v.starts_with('.') || v.contains('/') => {
                SeccompSetting::Profile(v.into())
            }
            Some(v) => {
                return Err(ConfigError::new(
                    "SANDBOX_DOCKER_SECCOMP",
                    format!("{v:?} is not plimsoll, docker-default, unconfined or a profile path"),
                ));
            }
        };
        if let Some(uid) = env.u32("SANDBOX_GUEST_UID")? {
            if !valid_guest_uid(uid) {
                return Err(ConfigError::new(
                    "SANDBOX_GUEST_UID",
                    format!(
                        "{uid} is outside 1..65532, or it or {} falls in a systemd uid band",
                        uid as u64 + 1
                    ),
                ));
            }
            s.guest_uid = uid;
        }
        if let Some(n) = env.u32("SANDBOX_SNIPPET_POOL")? {
            if n > DockerSettings::MAX_SNIPPET_POOL {
                return Err(ConfigError::new(
                    "SANDBOX_SNIPPET_POOL",
                    format!("must be at most {}", DockerSettings::MAX_SNIPPET_POOL),
                ));
            }
            s.snippet_pool = n;
        }
        s.docker_host = env.get("DOCKER_HOST");
        s.docker_context = env.get("DOCKER_CONTEXT");
        s.docker_config = env.get("DOCKER_CONFIG");
        Ok(s)
    }
}

/// The per-run envelope a docker run gets, defaults applied and checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DockerEnvelope {
    /// Memory (swap off), MiB.
    pub memory_mb: u32,
    /// CPUs (fractions allowed).
    pub cpus: f64,
    /// The process limit of the whole container.
    pub pids: u32,
    /// `/tmp` tmpfs, MiB.
    pub tmp_mb: u32,
    /// `/dev/shm` tmpfs, MiB.
    pub shm_mb: u32,
    /// `/work` tmpfs (projects), MiB: `SANDBOX_DISK_MB` minus the other two.
    pub work_mb: u32,
}

impl DockerEnvelope {
    /// `/tmp` and `/dev/shm` each get this many MiB.
    pub const SCRATCH_MB: u32 = 16;
    /// `/work` when `SANDBOX_DISK_MB` is unset.
    pub const DEFAULT_WORK_MB: u32 = 128;

    /// Applies the docker defaults (256 MiB, 1 CPU, 256 processes, 16+16+128 MiB
    /// of disk) and refuses what docker or the runtime cannot honour.
    pub fn from_settings(
        r: &ResourceSettings,
        runtime: DockerRuntime,
    ) -> Result<DockerEnvelope, ConfigError> {
        let memory_mb = r.memory_mb.unwrap_or(256);
        if !(16..=1 << 20).contains(&memory_mb) {
            return Err(ConfigError::new(
                "SANDBOX_MEMORY_MB",
                format!("{memory_mb} MiB is outside 16..1048576"),
            ));
        }
        let cpus = r.cpus.unwrap_or(1.0);
        if !(0.01..=1024.0).contains(&cpus) {
            return Err(ConfigError::new(
                "SANDBOX_CPUS",
                format!("{cpus} is outside 0.01..1024"),
            ));
        }
        let pids = r.pids.unwrap_or(256);
        // gVisor's own tasks (~30) count against the container's pids cgroup;
        // below this the sandbox itself fails to start threads.
        let min_pids = match runtime {
            DockerRuntime::Runc => 16,
            DockerRuntime::Runsc => 128,
        };
        if !(min_pids..=65536).contains(&pids) {
            return Err(ConfigError::new(
                "SANDBOX_PIDS",
                format!(
                    "{pids} is outside {min_pids}..65536 for {}",
                    runtime.as_str()
                ),
            ));
        }
        let scratch = 2 * Self::SCRATCH_MB;
        let work_mb = match r.disk_mb {
            None => Self::DEFAULT_WORK_MB,
            Some(d) if d > scratch && d <= 1 << 20 => d - scratch,
            Some(d) => {
                return Err(ConfigError::new(
                    "SANDBOX_DISK_MB",
                    format!(
                        "{d} MiB cannot hold /tmp and /dev/shm ({} MiB each) plus a /work of at least 1 MiB (max 1048576)",
                        Self::SCRATCH_MB
                    ),
                ));
            }
        };
        Ok(DockerEnvelope {
            memory_mb,
            cpus,
            pids,
            tmp_mb: Self::SCRATCH_MB,
            shm_mb: Self::SCRATCH_MB,
            work_mb,
        })
    }

    /// The aggregate writable disk, MiB.
    pub fn disk_mb(&self) -> u32 {
        self.tmp_mb + self.shm_mb + self.work_mb
    }
}
