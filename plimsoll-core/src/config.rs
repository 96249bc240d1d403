//! Strict configuration from environment variables, parsed once at startup.
//!
//! An unknown value, a malformed number, a half-set pair or an impossible
//! budget is a [`ConfigError`] naming the variable — never a silent default.
//! [`VARIABLES`] lists every variable the core reads; the daemon's `-h` prints it.

use crate::admission::Limits;
use crate::record::valid_instance;
use crate::tier::Floor;

pub use crate::env::{ConfigError, Env, Var};
pub use variables::VARIABLES;

mod variables;

/// Which provider a daemon runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Nothing runs (the default).
    Disabled,
    /// QuickJS on wasmtime, in-process.
    Wasm,
    /// Local docker on runc or runsc.
    Docker,
    /// E2B microVMs.
    E2b,
    /// Docker Cloud Sandboxes.
    DockerCloud,
    /// An NVIDIA OpenShell gateway.
    OpenShell,
}

impl ProviderKind {
    /// The name as configured.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Disabled => "disabled",
            ProviderKind::Wasm => "wasm",
            ProviderKind::Docker => "docker",
            ProviderKind::E2b => "e2b",
            ProviderKind::DockerCloud => "dockercloud",
            ProviderKind::OpenShell => "openshell",
        }
    }

    fn parse(s: &str) -> Option<ProviderKind> {
        let s = s.trim().to_ascii_lowercase();
        [
            ProviderKind::Disabled,
            ProviderKind::Wasm,
            ProviderKind::Docker,
            ProviderKind::E2b,
            ProviderKind::DockerCloud,
            ProviderKind::OpenShell,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// Per-run resource settings as configured (`None`: the provider's default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ResourceSettings {
    /// `SANDBOX_MEMORY_MB`.
    pub memory_mb: Option<u32>,
    /// `SANDBOX_CPUS`.
    pub cpus: Option<f64>,
    /// `SANDBOX_PIDS`.
    pub pids: Option<u32>,
    /// `SANDBOX_DISK_MB`.
    pub disk_mb: Option<u32>,
}

impl ResourceSettings {
    /// Refuses every setting not in `allowed` (names of variables), naming the first.
    pub fn only(&self, provider: &str, allowed: &[&str]) -> Result<(), ConfigError> {
        let set = [
            ("SANDBOX_MEMORY_MB", self.memory_mb.is_some()),
            ("SANDBOX_CPUS", self.cpus.is_some()),
            ("SANDBOX_PIDS", self.pids.is_some()),
            ("SANDBOX_DISK_MB", self.disk_mb.is_some()),
        ];
        for (name, is_set) in set {
            if is_set && !allowed.contains(&name) {
                return Err(ConfigError::new(
                    name,
                    format!("does not apply to the {provider} provider; unset it"),
                ));
            }
        }
        Ok(())
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

/// The docker provider's settings. Parsed for every provider, so that a docker
/// variable set for another provider is an error, not silently ignored.
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
    fn from_env(env: &Env<'_>, provider: ProviderKind) -> Result<DockerSettings, ConfigError> {
        const OWN: [&str; 5] = [
            "SANDBOX_DOCKER_RUNTIME",
            "SANDBOX_DOCKER_IMAGE",
            "SANDBOX_DOCKER_PROJECT_IMAGE",
            "SANDBOX_DOCKER_SECCOMP",
            "SANDBOX_GUEST_UID",
        ];
        let mut s = DockerSettings::default();
        if provider != ProviderKind::Docker {
            if let Some(name) = OWN.into_iter().find(|n| env.get(n).is_some()) {
                return Err(ConfigError::new(
                    name,
                    format!(
                        "applies only to SANDBOX_PROVIDER=docker (this daemon runs {}); unset it",
                        provider.as_str()
                    ),
                ));
            }
            return Ok(s);
        }
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

/// The core's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The provider.
    pub provider: ProviderKind,
    /// Refuse to start below this proven tier.
    pub min_isolation: Floor,
    /// Per-run resources.
    pub resources: ResourceSettings,
    /// The instance reference stamped on records.
    pub instance: String,
    /// Admission limits.
    pub admission: Limits,
    /// Session settings.
    pub sessions: crate::session::SessionSettings,
    /// Grant profiles (`PLIMSOLL_GRANTS_FILE`); empty when unset.
    pub grants: std::sync::Arc<crate::grant::Grants>,
    /// The docker provider's settings (defaults unless `SANDBOX_PROVIDER=docker`).
    pub docker: DockerSettings,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            provider: ProviderKind::Disabled,
            min_isolation: Floor::NONE,
            resources: ResourceSettings::default(),
            instance: random_instance(),
            admission: Limits::default(),
            grants: std::sync::Arc::default(),
            sessions: crate::session::SessionSettings::default(),
            docker: DockerSettings::default(),
        }
    }
}

fn random_instance() -> String {
    format!("plimsoll:{}", hex::encode(rand::random::<[u8; 8]>()))
}

impl Config {
    /// Reads and checks every core variable.
    pub fn from_env(env: &Env<'_>) -> Result<Config, ConfigError> {
        let provider = match env.get("SANDBOX_PROVIDER") {
            None => ProviderKind::Disabled,
            Some(v) => ProviderKind::parse(&v).ok_or_else(|| {
                ConfigError::new(
                    "SANDBOX_PROVIDER",
                    format!("unknown provider {v:?} (want disabled, wasm, docker, e2b, dockercloud or openshell)"),
                )
            })?,
        };
        let min_isolation = match env.get("SANDBOX_MIN_ISOLATION") {
            None => Floor::NONE,
            Some(v) => Floor::parse(&v).map_err(|_| {
                ConfigError::new(
                    "SANDBOX_MIN_ISOLATION",
                    format!("{v:?} is not one of process, container, kernel, vm"),
                )
            })?,
        };
        let resources = ResourceSettings {
            memory_mb: env.u32("SANDBOX_MEMORY_MB")?,
            cpus: env.f64("SANDBOX_CPUS")?,
            pids: env.u32("SANDBOX_PIDS")?,
            disk_mb: env.u32("SANDBOX_DISK_MB")?,
        };
        let instance = match env.get("PLIMSOLL_INSTANCE") {
            None => random_instance(),
            Some(v) if valid_instance(&v) => v,
            Some(_) => {
                return Err(ConfigError::new(
                    "PLIMSOLL_INSTANCE",
                    "must match [a-z][a-z0-9-]{0,31}:[A-Za-z0-9._:-]{1,127}",
                ));
            }
        };
        if provider == ProviderKind::Disabled {
            resources.only("disabled", &[])?;
        }
        let mut admission = Limits::from_env(env, resources.memory_mb)?;
        if matches!(provider, ProviderKind::E2b | ProviderKind::DockerCloud) {
            // Their sandboxes run on other machines: the count applies, the memory budget does not.
            admission = admission.without_memory_budget();
        }
        let grants = match env.get("PLIMSOLL_GRANTS_FILE") {
            None => crate::grant::Grants::default(),
            Some(path) => crate::grant::Grants::load(&path, &|k| env.get_any(k))?,
        };
        let docker = DockerSettings::from_env(env, provider)?;
        if provider == ProviderKind::Docker {
            DockerEnvelope::from_settings(&resources, docker.runtime)?;
        }
        Ok(Config {
            provider,
            min_isolation,
            resources,
            instance,
            admission,
            grants: std::sync::Arc::new(grants),
            sessions: crate::session::SessionSettings::from_env(env)?,
            docker,
        })
    }
}

#[cfg(test)]
mod tests;
