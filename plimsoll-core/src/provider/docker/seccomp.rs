//! The seccomp choice for runc runs, and the shipped profile's promises.
//!
//! A profile file is read once at startup and sent inline with every create
//! call (the Engine API reads no files; the docker CLI reads them client-side).
//! `images/seccomp.json` is the profile this project ships: deny by default,
//! AF_UNIX sockets only, no namespaces, no tracing, no io_uring, no BPF, no
//! keyrings, no mounts, no memfd. What this does not cover: runsc, where gVisor
//! answers system calls itself and no profile is applied.

use crate::config::{ConfigError, SeccompSetting};

/// The `seccomp=…` security option for `setting` (`None`: docker's default)
/// and the profile text that goes into the policy digest.
pub(crate) fn security_opt(
    setting: &SeccompSetting,
) -> Result<(Option<String>, String), ConfigError> {
    let path = match setting {
        SeccompSetting::DockerDefault => return Ok((None, String::new())),
        SeccompSetting::Unconfined => {
            return Ok((Some("seccomp=unconfined".into()), "unconfined".into()));
        }
        SeccompSetting::Profile(path) => path,
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new(
            "SANDBOX_DOCKER_SECCOMP",
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        ConfigError::new(
            "SANDBOX_DOCKER_SECCOMP",
            format!("{} is not JSON: {e}", path.display()),
        )
    })?;
    if json.get("defaultAction").is_none() || json.get("syscalls").is_none() {
        return Err(ConfigError::new(
            "SANDBOX_DOCKER_SECCOMP",
            format!(
                "{} is not a seccomp profile (no defaultAction or syscalls)",
                path.display()
            ),
        ));
    }
    let compact = json.to_string();
    Ok((Some(format!("seccomp={compact}")), compact))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../images/seccomp.json");

    #[test]
    fn settings_become_options() {
        assert_eq!(
            security_opt(&SeccompSetting::DockerDefault).unwrap().0,
            None
        );
        assert_eq!(
            security_opt(&SeccompSetting::Unconfined)
                .unwrap()
                .0
                .as_deref(),
            Some("seccomp=unconfined")
        );
        let (opt, text) = security_opt(&SeccompSetting::Profile(SHIPPED.into())).unwrap();
        assert_eq!(opt.unwrap(), format!("seccomp={text}"));
        let e = security_opt(&SeccompSetting::Profile("/nonexistent.json".into())).unwrap_err();
        assert_eq!(e.variable, "SANDBOX_DOCKER_SECCOMP");
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("p.json");
        std::fs::write(&bad, "{\"x\":1}").unwrap();
        assert!(security_opt(&SeccompSetting::Profile(bad)).is_err());
    }

    /// The shipped profile (`images/seccomp.json`) stays deny-by-default and
    /// keeps every denial docs/docker.md promises.
    #[test]
    fn shipped_seccomp_profile_is_tight() {
        let path = SHIPPED;
        let p: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(p["defaultAction"], "SCMP_ACT_ERRNO");
        assert_eq!(p["defaultErrnoRet"], 1);
        let rules = p["syscalls"].as_array().unwrap();
        let mut allowed: Vec<&str> = Vec::new();
        let mut conditional: HashMap<&str, Vec<&serde_json::Value>> = HashMap::new();
        for r in rules {
            let names = r["names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap());
            match (r["action"].as_str().unwrap(), r.get("args")) {
                ("SCMP_ACT_ALLOW", None) => allowed.extend(names),
                ("SCMP_ACT_ALLOW", Some(args)) => {
                    for n in names {
                        conditional.entry(n).or_default().push(args);
                    }
                }
                ("SCMP_ACT_ERRNO", None) => {
                    assert_eq!(r["errnoRet"], 38);
                    let mut n: Vec<&str> = names.collect();
                    n.sort();
                    assert_eq!(n, ["clone3", "setns", "unshare"]);
                }
                other => panic!("unexpected rule {other:?}"),
            }
        }
        let unique: std::collections::HashSet<&&str> = allowed.iter().collect();
        assert_eq!(unique.len(), allowed.len(), "a name is listed twice");
        for denied in [
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "userfaultfd",
            "perf_event_open",
            "bpf",
            "keyctl",
            "add_key",
            "request_key",
            "unshare",
            "setns",
            "clone3",
            "mount",
            "umount2",
            "pivot_root",
            "chroot",
            "name_to_handle_at",
            "open_by_handle_at",
            "modify_ldt",
            "kexec_load",
            "kexec_file_load",
            "init_module",
            "finit_module",
            "delete_module",
            "reboot",
            "swapon",
            "swapoff",
            "clock_settime",
            "settimeofday",
            "adjtimex",
            "clock_adjtime",
            "shmget",
            "shmat",
            "msgget",
            "semget",
            "mq_open",
            "memfd_create",
            "socketcall",
            "fanotify_init",
            "open_tree",
            "move_mount",
            "fsopen",
            "fsmount",
            "acct",
            "quotactl",
            "syslog",
            "vhangup",
            "kcmp",
            "pidfd_getfd",
            "seccomp",
            "socket",
            "socketpair",
            "clone",
            "personality",
            "mknod",
            "mknodat",
        ] {
            assert!(
                !allowed.contains(&denied),
                "{denied} is allowed unconditionally"
            );
        }
        // Sockets: AF_UNIX only (no AF_INET, AF_NETLINK, AF_ALG, AF_VSOCK).
        for n in ["socket", "socketpair"] {
            let args = &conditional[n];
            assert_eq!(args.len(), 1);
            assert_eq!(args[0][0]["index"], 0);
            assert_eq!(args[0][0]["op"], "SCMP_CMP_EQ");
            assert_eq!(args[0][0]["value"], 1);
        }
        // clone: never with a CLONE_NEW* flag.
        let clone = &conditional["clone"][0][0];
        assert_eq!(
            (
                clone["op"].as_str(),
                clone["value"].as_u64(),
                clone["valueTwo"].as_u64()
            ),
            (Some("SCMP_CMP_MASKED_EQ"), Some(0x7e02_0000), Some(0))
        );
        // personality: only the query and PER_LINUX.
        let mut pers: Vec<u64> = conditional["personality"]
            .iter()
            .map(|a| a[0]["value"].as_u64().unwrap())
            .collect();
        pers.sort();
        assert_eq!(pers, [0, 0xffff_ffff]);
        // mknod(at): FIFOs only.
        for (n, index) in [("mknod", 1), ("mknodat", 2)] {
            let a = &conditional[n][0][0];
            assert_eq!(a["index"], index);
            assert_eq!(
                (a["value"].as_u64(), a["valueTwo"].as_u64()),
                (Some(0o170000), Some(0o010000))
            );
        }
        // What node, python and the shell tools need stays.
        for needed in [
            "execve",
            "clone",
            "futex",
            "epoll_pwait",
            "mmap",
            "mprotect",
            "wait4",
            "statx",
            "getrandom",
        ] {
            assert!(
                allowed.contains(&needed) || conditional.contains_key(needed),
                "{needed}"
            );
        }
    }
}
