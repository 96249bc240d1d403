use super::*;
use std::collections::HashMap;

#[test]
fn settings_become_options() {
    let d = security_opt(&SeccompSetting::DockerDefault).unwrap();
    assert!(d.opt.is_none() && d.profile.is_none() && d.digest_text.is_empty());
    let u = security_opt(&SeccompSetting::Unconfined).unwrap();
    assert_eq!(u.opt.as_deref(), Some("seccomp=unconfined"));
    assert!(u.profile.is_none());
    let shipped = security_opt(&SeccompSetting::Shipped).unwrap();
    assert_eq!(
        shipped.opt.unwrap(),
        format!("seccomp={}", shipped.digest_text)
    );
    assert!(shipped.profile.is_some());
    // The same file by path gives the same profile text.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../images/seccomp.json");
    let file = security_opt(&SeccompSetting::Profile(path.into())).unwrap();
    assert_eq!(file.digest_text, shipped.digest_text);
    let e = security_opt(&SeccompSetting::Profile("/nonexistent.json".into()))
        .err()
        .unwrap();
    assert_eq!(e.variable, "SANDBOX_DOCKER_SECCOMP");
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "{\"x\":1}",
        "not json",
        r#"{"defaultAction":"SCMP_ACT_NOPE","syscalls":[]}"#,
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"action":"SCMP_ACT_ALLOW"}]}"#,
    ] {
        let f = dir.path().join("p.json");
        std::fs::write(&f, bad).unwrap();
        assert!(security_opt(&SeccompSetting::Profile(f)).is_err(), "{bad}");
    }
}

fn profile(json: serde_json::Value) -> Profile {
    Profile::parse(&json.to_string()).unwrap()
}

/// The shipped profile refuses every call that matters; the errno is
/// the profile's (EPERM, ENOSYS for the namespace calls).
#[test]
fn shipped_profile_refuses_every_probe() {
    let p = Profile::parse(SHIPPED).unwrap();
    for (probe, v) in p.verdicts() {
        let want = if probe.name == "unshare" { 38 } else { 1 };
        assert_eq!(v, Verdict::Refused(want), "{}", probe.label);
    }
    // What node and python need stays reachable.
    assert_eq!(p.verdict("socket", &[1, 1, 0]), Verdict::Allowed);
    assert_eq!(p.verdict("clone", &[0x11, 0, 0]), Verdict::Allowed);
    assert_eq!(
        p.verdict("clone", &[0x1000_0011, 0, 0]),
        Verdict::Refused(1),
        "clone with CLONE_NEWUSER"
    );
    assert_eq!(p.verdict("mknodat", &[0, 0, 0o010644]), Verdict::Allowed);
    assert_eq!(p.verdict("mknodat", &[0, 0, 0o020644]), Verdict::Refused(1));
    assert_eq!(p.verdict("read", &[0, 0, 0]), Verdict::Allowed);
}

/// The reader follows docker's format: conditions, capability and
/// architecture selectors, the strictest matching action.
#[test]
fn verdicts_follow_the_format() {
    let open = profile(serde_json::json!({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []}));
    assert!(open.verdicts().iter().all(|(_, v)| *v == Verdict::Allowed));
    let p = profile(serde_json::json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "syscalls": [
            {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["keyctl"], "action": "SCMP_ACT_ALLOW", "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["s390x"]}},
            {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64", "arm64"]}},
            {"names": ["socket"], "action": "SCMP_ACT_ALLOW"},
            {"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 97,
             "args": [{"index": 0, "value": 40, "op": "SCMP_CMP_EQ"}]},
            {"names": ["userfaultfd"], "action": "SCMP_ACT_KILL"},
            {"names": ["unshare"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 0x1000_0000u64, "op": "SCMP_CMP_MASKED_EQ", "valueTwo": 0}]}
        ]
    }));
    let v = |label: &str| {
        p.verdicts()
            .into_iter()
            .find(|(probe, _)| probe.label == label)
            .unwrap()
            .1
    };
    assert_eq!(
        v("bpf"),
        Verdict::Refused(1),
        "a rule for CAP_SYS_ADMIN holders"
    );
    assert_eq!(v("keyctl"), Verdict::Allowed, "a rule for non-holders");
    assert_eq!(v("mount"), Verdict::Refused(1), "a rule for another arch");
    assert_eq!(v("ptrace"), Verdict::Allowed, "a rule for this arch");
    assert_eq!(
        v("AF_VSOCK socket"),
        Verdict::Refused(97),
        "the strictest match wins"
    );
    assert_eq!(v("AF_INET socket"), Verdict::Allowed);
    assert_eq!(v("userfaultfd"), Verdict::Killed);
    assert_eq!(
        v("user namespace"),
        Verdict::Refused(1),
        "condition not met"
    );
    assert_eq!(p.verdict("unshare", &[0x20000, 0, 0]), Verdict::Allowed);
}

/// The shipped profile (`images/seccomp.json`) stays deny-by-default and
/// keeps every denial docs/docker.md promises.
#[test]
fn shipped_seccomp_profile_is_tight() {
    let p: serde_json::Value = serde_json::from_str(SHIPPED).unwrap();
    assert_eq!(p["defaultAction"], "SCMP_ACT_ERRNO");
    assert_eq!(p["defaultErrnoRet"], 1);
    // Exactly the 64-bit native tables, no sub-architectures: an i386 or
    // x32 system call (int 0x80, the x32 bit) matches no architecture of
    // the filter and is killed by libseccomp's bad-arch action, instead
    // of meeting a second, separately numbered allowlist.
    let mut arches: Vec<(String, usize)> = p["archMap"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["architecture"].as_str().unwrap().to_owned(),
                a["subArchitectures"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    arches.sort();
    assert_eq!(
        arches,
        [
            ("SCMP_ARCH_AARCH64".to_owned(), 0),
            ("SCMP_ARCH_X86_64".to_owned(), 0)
        ]
    );
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
