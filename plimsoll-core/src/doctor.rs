//! The plimsoll doctor: the host's readiness for each provider, checked
//! without serving (`plimsolld --check`).
//!
//! Every check ends `ok`, `warn` or `fail` with a reason. The host's kernel
//! features come from `/proc` and `/sys` (parsed by the pure functions here,
//! unit-tested on fixture text); each registered provider adds its own checks
//! ([`crate::provider::ProviderSettings::doctor`]): wasm builds its engine and
//! runs its startup proof; docker reads the daemon's version, runtimes,
//! security options and images with the provider's own judgements, then runs
//! its startup proof when it is the configured provider.
//! [`Report::ready`] says whether the configured provider would serve.
//!
//! What this does not cover: hosted providers (e2b, dockercloud, openshell),
//! anything needing a running plimsolld (admission, records, grants), and
//! proofs for a docker runtime other than the configured one (their
//! registrations are still read).

use std::path::Path;

use crate::config::Config;
use crate::provider::PLUGINS;

pub use crate::readiness::{Check, Level, Report};

/// Runs every check for `config` — the host's, then each registered
/// provider's (the configured one with its settings, the others with their
/// defaults) — and reports.
pub async fn check(config: &Config) -> Report {
    let setup = config.setup();
    let chosen = config.provider.plugin();
    let mut checks = host_checks(Path::new("/"));
    for plugin in PLUGINS {
        let settings = if plugin.name == chosen.name {
            config.provider.clone()
        } else {
            (plugin.defaults)()
        };
        checks.extend(
            settings
                .settings()
                .doctor(&setup, plugin.name == chosen.name)
                .await,
        );
    }
    Report {
        provider: chosen.name,
        areas: chosen.areas,
        checks,
    }
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
}
