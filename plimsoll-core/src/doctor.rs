//! The plimsoll doctor: the host's readiness for each provider, checked
//! without serving (`plimsolld --check`).
//!
//! Every check ends `ok`, `warn` or `fail` with a reason. The host's kernel
//! features come from `/proc` and `/sys` (parsed by the pure functions here,
//! unit-tested on fixture text); the wasm provider is built and its startup
//! proof run (the guest module instantiates and answers its probes); the
//! docker checks ([`crate::provider::docker::doctor`], behind the `docker`
//! feature) read the daemon's version, runtimes, security options and images
//! with the provider's own judgements, then run the provider's startup proof.
//! [`Report::ready`] says whether the configured provider would serve.
//!
//! What this does not cover: hosted providers (e2b, dockercloud, openshell),
//! anything needing a running plimsolld (admission, records, grants), and
//! proofs for a docker runtime other than the configured one (their
//! registrations are still read).

use std::path::Path;

use crate::config::{Config, ProviderKind};

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// As it should be.
    Ok,
    /// Works, but weaker or older than recommended.
    Warn,
    /// The area cannot serve as configured.
    Fail,
}

impl Level {
    /// `ok`, `warn` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One check's outcome. `area` is `host`, `wasm` or `docker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What it is about: `host`, `wasm` or `docker`.
    pub area: &'static str,
    /// A short name (`cgroup controllers`, `runtime runsc`, …).
    pub name: String,
    /// How it ended.
    pub level: Level,
    /// Why, in one line.
    pub detail: String,
}

impl Check {
    /// A check result.
    pub fn new(
        area: &'static str,
        name: impl Into<String>,
        level: Level,
        detail: impl Into<String>,
    ) -> Check {
        Check {
            area,
            name: name.into(),
            level,
            detail: detail.into(),
        }
    }
}

/// Every check, and which provider is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `SANDBOX_PROVIDER`.
    pub provider: ProviderKind,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether the configured provider would serve: no `fail` in its area
    /// (for docker, the host's kernel checks count too). `disabled` is always
    /// ready (nothing runs); a provider the doctor cannot check is not.
    pub fn ready(&self) -> bool {
        let areas: &[&str] = match self.provider {
            ProviderKind::Disabled => return true,
            ProviderKind::Wasm => &["wasm"],
            ProviderKind::Docker => &["docker", "host"],
            _ => return false,
        };
        let relevant: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| areas.contains(&c.area))
            .collect();
        !relevant.is_empty() && relevant.iter().all(|c| c.level != Level::Fail)
    }

    /// One line per check (`ok   area  name: detail`), then the verdict.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            out.push_str(&format!(
                "{:<4}  {:<6}  {}: {}\n",
                c.level.as_str(),
                c.area,
                c.name,
                c.detail
            ));
        }
        out.push_str(&format!(
            "{}: SANDBOX_PROVIDER={} {}\n",
            if self.ready() { "ready" } else { "not ready" },
            self.provider.as_str(),
            if self.ready() {
                "would serve"
            } else {
                "would not serve (see the fail lines)"
            }
        ));
        out
    }

    /// `{"provider","ready","checks":[{"area","check","level","detail"}]}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "provider": self.provider.as_str(),
            "ready": self.ready(),
            "checks": self.checks.iter().map(|c| serde_json::json!({
                "area": c.area,
                "check": c.name,
                "level": c.level.as_str(),
                "detail": c.detail,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Runs every check for `config` (host, wasm, docker) and reports.
pub async fn check(config: &Config) -> Report {
    let mut checks = host_checks(Path::new("/"));
    checks.push(vsock_check(Path::new("/"), config));
    checks.extend(wasm_checks(config).await);
    #[cfg(feature = "docker")]
    checks.extend(crate::provider::docker::doctor::checks(config).await);
    #[cfg(not(feature = "docker"))]
    checks.push(Check::new(
        "docker",
        "provider",
        Level::Fail,
        "this build has no docker provider (feature `docker`)",
    ));
    Report {
        provider: config.provider,
        checks,
    }
}

#[cfg(feature = "wasm")]
async fn wasm_checks(config: &Config) -> Vec<Check> {
    use crate::provider::Provider;
    let mut c = config.clone();
    c.provider = ProviderKind::Wasm;
    let started = std::time::Instant::now();
    let provider = match crate::provider::wasm::Wasm::from_config(&c) {
        Ok(p) => p,
        Err(e) => return vec![Check::new("wasm", "engine", Level::Fail, e.to_string())],
    };
    let mut out = vec![Check::new(
        "wasm",
        "engine",
        Level::Ok,
        "wasmtime engine and the embedded QuickJS guest built",
    )];
    let proof = match provider.preflight().await {
        Ok(()) => provider.prove().await,
        Err(e) => Err(e),
    };
    out.push(match proof {
        Ok(tier) => Check::new(
            "wasm",
            "startup proof",
            Level::Ok,
            format!(
                "the guest instantiated and answered its probes in {} ms (tier {})",
                started.elapsed().as_millis(),
                tier.as_str()
            ),
        ),
        Err(e) => Check::new("wasm", "startup proof", Level::Fail, e.message().to_owned()),
    });
    out
}

#[cfg(not(feature = "wasm"))]
async fn wasm_checks(_config: &Config) -> Vec<Check> {
    vec![Check::new(
        "wasm",
        "engine",
        Level::Fail,
        "this build has no wasm provider (feature `wasm`)",
    )]
}

fn read(root: &Path, p: &str) -> Option<String> {
    std::fs::read_to_string(root.join(p.trim_start_matches('/'))).ok()
}

/// The host's kernel and hardening checks, read under `root` (`/` on a host;
/// a fixture tree in tests).
pub fn host_checks(root: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    let v2 = read(root, "/sys/fs/cgroup/cgroup.controllers");
    let enabled = match (&v2, read(root, "/proc/cgroups")) {
        (Some(list), _) => list.split_whitespace().map(str::to_owned).collect(),
        (None, Some(table)) => enabled_v1_controllers(&table),
        (None, None) => Vec::new(),
    };
    let missing: Vec<&str> = ["memory", "pids", "cpu"]
        .into_iter()
        .filter(|c| !enabled.iter().any(|e| e == c))
        .collect();
    let version = if v2.is_some() { "v2" } else { "v1" };
    out.push(if missing.is_empty() {
        Check::new(
            "host",
            "cgroup controllers",
            Level::Ok,
            format!("memory, pids and cpu enabled (cgroup {version})"),
        )
    } else {
        Check::new(
            "host",
            "cgroup controllers",
            Level::Fail,
            format!(
                "{} not enabled (cgroup {version}): per-run limits would not hold",
                missing.join(", ")
            ),
        )
    });
    let swap_on = read(root, "/proc/swaps").is_some_and(|s| swap_active(&s));
    let accounted = if v2.is_some() {
        root.join("sys/fs/cgroup/system.slice/memory.swap.max")
            .exists()
            || root
                .join("sys/fs/cgroup/init.scope/memory.swap.max")
                .exists()
    } else {
        root.join("sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
            .exists()
    };
    out.push(match (swap_on, accounted) {
        (false, _) => Check::new("host", "swap", Level::Ok, "no swap active"),
        (true, true) => Check::new(
            "host",
            "swap",
            Level::Ok,
            "swap is on and accounted: --memory-swap caps it per run",
        ),
        (true, false) => Check::new(
            "host",
            "swap",
            Level::Warn,
            "swap is on and not accounted (no memsw/swap.max): a run can exceed its memory limit into swap",
        ),
    });
    for (key, why) in [
        (
            "fs/protected_symlinks",
            "symlink races in world-writable directories",
        ),
        (
            "fs/protected_hardlinks",
            "hard links to files the linker cannot write",
        ),
    ] {
        let name = format!("fs.{}", key.trim_start_matches("fs/"));
        out.push(
            match read(root, &format!("/proc/sys/{key}"))
                .as_deref()
                .map(str::trim)
            {
                Some("1") | Some("2") => Check::new("host", name, Level::Ok, "1"),
                Some(v) => Check::new(
                    "host",
                    name,
                    Level::Warn,
                    format!("{v}: the kernel does not stop {why} (set it to 1)"),
                ),
                None => Check::new("host", name, Level::Warn, "unreadable"),
            },
        );
    }
    out.push(match read(root, "/proc/sys/kernel/core_pattern") {
        Some(p) if core_pattern_is_pipe(&p) => Check::new(
            "host",
            "kernel.core_pattern",
            Level::Warn,
            format!(
                "{}: a pipe runs a host program, as root, for every guest crash",
                p.trim()
            ),
        ),
        Some(p) => Check::new(
            "host",
            "kernel.core_pattern",
            Level::Ok,
            format!("{} (not a pipe)", p.trim()),
        ),
        None => Check::new("host", "kernel.core_pattern", Level::Warn, "unreadable"),
    });
    out.push(if root.join("dev/kvm").exists() {
        Check::new(
            "host",
            "/dev/kvm",
            Level::Ok,
            "present (runsc keeps its default systrap platform; KVM under nested virtualisation is not recommended)",
        )
    } else {
        Check::new("host", "/dev/kvm", Level::Ok, "absent (runsc uses systrap)")
    });
    out
}

/// The `/dev/vsock` check, which depends on the docker settings: present, a
/// runc guest under docker's *default* seccomp profile can open `AF_VSOCK`
/// sockets reaching the hypervisor; the shipped profile (AF_UNIX only) and
/// runsc deny the family.
pub fn vsock_check(root: &Path, config: &Config) -> Check {
    use crate::config::DockerRuntime;
    if !root.join("dev/vsock").exists() {
        return Check::new("host", "/dev/vsock", Level::Ok, "absent");
    }
    #[cfg(feature = "docker")]
    let vsock = crate::provider::docker::doctor::refuses_vsock(&config.docker.seccomp);
    // Without the docker provider no profile is read: nothing is claimed.
    #[cfg(not(feature = "docker"))]
    let vsock = false;
    match (config.docker.runtime, vsock) {
        (DockerRuntime::Runsc, _) => Check::new(
            "host",
            "/dev/vsock",
            Level::Ok,
            "present; runsc refuses the AF_VSOCK family",
        ),
        (DockerRuntime::Runc, true) => Check::new(
            "host",
            "/dev/vsock",
            Level::Ok,
            format!(
                "present; runc runs apply the seccomp profile {}, which refuses AF_VSOCK sockets",
                config.docker.seccomp.name()
            ),
        ),
        (DockerRuntime::Runc, false) => Check::new(
            "host",
            "/dev/vsock",
            Level::Warn,
            format!(
                "present, and runc runs apply the seccomp profile {}, which lets a guest open AF_VSOCK sockets to the hypervisor; unset SANDBOX_DOCKER_SECCOMP for the shipped profile",
                config.docker.seccomp.name()
            ),
        ),
    }
}

/// The enabled controllers in a cgroup v1 `/proc/cgroups` table
/// (`#subsys_name hierarchy num_cgroups enabled`).
pub fn enabled_v1_controllers(table: &str) -> Vec<String> {
    table
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4 && f[3] == "1").then(|| f[0].to_owned())
        })
        .collect()
}

/// Whether `/proc/swaps` lists an active swap area (any line past the header).
pub fn swap_active(swaps: &str) -> bool {
    swaps.lines().skip(1).any(|l| !l.trim().is_empty())
}

/// Whether `kernel.core_pattern` pipes cores to a program.
pub fn core_pattern_is_pipe(pattern: &str) -> bool {
    pattern.trim_start().starts_with('|')
}

#[cfg(test)]
mod tests {
    use super::*;

    const CGROUPS_V1: &str = "#subsys_name\thierarchy\tnum_cgroups\tenabled
cpuset\t6\t3\t1
cpu\t4\t60\t1
cpuacct\t4\t60\t1
memory\t9\t98\t1
pids\t2\t70\t0
";

    #[test]
    fn v1_controllers_are_parsed() {
        let c = enabled_v1_controllers(CGROUPS_V1);
        assert!(c.contains(&"memory".to_owned()) && c.contains(&"cpu".to_owned()));
        assert!(!c.contains(&"pids".to_owned()), "disabled is not enabled");
    }

    #[test]
    fn swaps_and_core_pattern_are_parsed() {
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert!(!swap_active(header));
        assert!(swap_active(&format!(
            "{header}/swapfile                               file\t\t1048572\t\t0\t\t-2\n"
        )));
        assert!(core_pattern_is_pipe("|/usr/share/apport/apport -p%p\n"));
        assert!(!core_pattern_is_pipe("core\n"));
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        d
    }

    fn level(checks: &[Check], name: &str) -> Level {
        checks.iter().find(|c| c.name == name).unwrap().level
    }

    #[test]
    fn host_checks_read_a_fixture_tree() {
        let d = tree(&[
            ("proc/cgroups", CGROUPS_V1),
            (
                "proc/swaps",
                "Filename Type Size Used Priority\n/swap file 1 0 -2\n",
            ),
            ("proc/sys/fs/protected_symlinks", "0\n"),
            ("proc/sys/fs/protected_hardlinks", "1\n"),
            ("proc/sys/kernel/core_pattern", "|/bin/crash %p\n"),
        ]);
        let c = host_checks(d.path());
        assert_eq!(level(&c, "cgroup controllers"), Level::Fail, "{c:?}");
        assert!(c[0].detail.contains("pids"));
        assert_eq!(level(&c, "swap"), Level::Warn);
        assert_eq!(level(&c, "fs.protected_symlinks"), Level::Warn);
        assert_eq!(level(&c, "fs.protected_hardlinks"), Level::Ok);
        assert_eq!(level(&c, "kernel.core_pattern"), Level::Warn);

        let d = tree(&[
            (
                "sys/fs/cgroup/cgroup.controllers",
                "cpuset cpu io memory hugetlb pids rdma\n",
            ),
            ("proc/swaps", "Filename Type Size Used Priority\n"),
            ("proc/sys/fs/protected_symlinks", "1\n"),
            ("proc/sys/fs/protected_hardlinks", "1\n"),
            ("proc/sys/kernel/core_pattern", "core\n"),
        ]);
        let c = host_checks(d.path());
        assert!(c.iter().all(|c| c.level == Level::Ok), "{c:?}");
    }

    #[test]
    #[cfg(feature = "docker")]
    fn vsock_depends_on_runtime_and_profile() {
        use crate::config::{DockerRuntime, SeccompSetting};
        let d = tree(&[("dev/vsock", "")]);
        let mut config = Config::default();
        // The default is the shipped profile, which refuses AF_VSOCK.
        assert_eq!(vsock_check(d.path(), &config).level, Level::Ok);
        config.docker.seccomp = SeccompSetting::DockerDefault;
        assert_eq!(vsock_check(d.path(), &config).level, Level::Warn);
        config.docker.seccomp = SeccompSetting::Unconfined;
        assert_eq!(vsock_check(d.path(), &config).level, Level::Warn);
        config.docker.seccomp = SeccompSetting::Profile(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../images/seccomp.json").into(),
        );
        assert_eq!(vsock_check(d.path(), &config).level, Level::Ok);
        config.docker.seccomp = SeccompSetting::DockerDefault;
        config.docker.runtime = DockerRuntime::Runsc;
        assert_eq!(vsock_check(d.path(), &config).level, Level::Ok);
    }

    #[test]
    fn readiness_follows_the_configured_provider() {
        let mut r = Report {
            provider: ProviderKind::Wasm,
            checks: vec![
                Check::new("wasm", "startup proof", Level::Ok, ""),
                Check::new("docker", "daemon", Level::Fail, "down"),
            ],
        };
        assert!(r.ready());
        r.provider = ProviderKind::Docker;
        assert!(!r.ready());
        r.provider = ProviderKind::Disabled;
        assert!(r.ready());
        r.provider = ProviderKind::E2b;
        assert!(!r.ready());
        let j = r.to_json();
        assert_eq!(j["checks"][1]["level"], "fail");
    }
}
