//! The seccomp choice for docker runs, what a profile allows among the calls
//! that matter, and the probes that show it in force.
//!
//! A profile is sent inline with every create call (the Engine API reads no
//! files; the docker CLI reads them client-side). The default is the profile
//! this project ships, `images/seccomp.json`, embedded in the build: deny by
//! default, AF_UNIX sockets only, no namespaces, no tracing, no io_uring, no
//! BPF, no keyrings, no mounts, no memfd. Docker's own profile and none at all
//! are asked for by name. Under runc the host kernel applies the profile;
//! under runsc gVisor applies it to the guest inside the sandbox, only when
//! registered with `--oci-seccomp` — [`super::walls`] proves it by behaviour.
//!
//! [`Profile::verdict`] reads a profile the way libseccomp applies docker's
//! format (names, `args` conditions, `includes`/`excludes` by capability and
//! architecture, the strictest matching action winning). What it does not
//! cover: `minKernel` conditions (taken as met) and docker's built-in profile,
//! whose rules the Engine API does not expose: its effect is measured instead.

use crate::provider::docker::{ConfigError, SeccompSetting};

/// The shipped profile, `images/seccomp.json`.
pub(crate) const SHIPPED: &str = include_str!("../../../../images/seccomp.json");

/// The filter loader for processes docker execs into a runsc container.
///
/// This gVisor applies a container's OCI seccomp profile (`--oci-seccomp`)
/// to the container's first process only: a `docker exec`'d process runs
/// unfiltered (seen on release 20221219: `Seccomp: 0`, `unshare` and
/// `AF_NETLINK` open). Every guest exec under runsc therefore starts through
/// this loader: python3 (`-S -I`) builds the same profile with the image's
/// libseccomp (names, argument conditions — split per argument as docker
/// splits them —, capability rules skipped, the default action), loads it
/// (libseccomp sets no_new_privs first) and execs the command. A failure
/// exits 125 before the command runs. The startup proof probes through the
/// same path, so a loader that did not hold would fail it.
pub(crate) const EXEC_LOADER: &str = r#"import ctypes, json, os, sys
p = json.loads(sys.argv[1])
cmd = sys.argv[3:]
lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
class Cmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]
lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(Cmp)]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
OPS = {"SCMP_CMP_NE": 1, "SCMP_CMP_LT": 2, "SCMP_CMP_LE": 3, "SCMP_CMP_EQ": 4, "SCMP_CMP_GE": 5, "SCMP_CMP_GT": 6, "SCMP_CMP_MASKED_EQ": 7}
def action(name, errno):
    return {"SCMP_ACT_ALLOW": 0x7fff0000, "SCMP_ACT_LOG": 0x7ffc0000, "SCMP_ACT_ERRNO": 0x00050000 | (errno & 0xffff),
            "SCMP_ACT_TRAP": 0x00030000, "SCMP_ACT_KILL": 0, "SCMP_ACT_KILL_THREAD": 0, "SCMP_ACT_KILL_PROCESS": 0x80000000,
            "SCMP_ACT_TRACE": 0x7ff00000 | (errno & 0xffff)}[name]
def die(why):
    sys.stderr.write("plimsoll seccomp loader: %s\n" % why)
    os._exit(125)
errno_default = p.get("defaultErrnoRet", 1)
default = action(p["defaultAction"], errno_default)
ctx = lib.seccomp_init(default)
if not ctx:
    die("seccomp_init failed")
for r in p["syscalls"]:
    inc = r.get("includes") or {}
    if inc.get("caps"):
        continue
    act = action(r["action"], r.get("errnoRet", errno_default))
    if act == default:
        continue
    conds = [Cmp(c["index"], OPS[c["op"]], c.get("value", 0), c.get("valueTwo", 0)) for c in r.get("args") or []]
    groups = [conds] if len({c.arg for c in conds}) == len(conds) else [[c] for c in conds]
    for name in r["names"]:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            continue
        for g in groups:
            rc = lib.seccomp_rule_add_array(ctx, act, nr, len(g), (Cmp * len(g))(*g) if g else None)
            if rc < 0:
                die("adding a rule for %s: %d" % (name, rc))
rc = lib.seccomp_load(ctx)
if rc < 0:
    die("seccomp_load: %d" % rc)
os.execvp(cmd[0], cmd)
"#;

/// argv running `cmd` under `profile` (compact JSON) through [`EXEC_LOADER`].
pub(crate) fn filtered(profile: &str, cmd: Vec<String>) -> Vec<String> {
    let mut v = vec![
        "python3".to_owned(),
        "-S".into(),
        "-I".into(),
        "-c".into(),
        EXEC_LOADER.into(),
        profile.into(),
        "--".into(),
    ];
    v.extend(cmd);
    v
}

/// What a seccomp setting becomes: the security option, the text covered by
/// the policy digest, and the parsed profile when its rules are known.
pub(crate) struct Choice {
    /// `seccomp=<inline JSON>` or `seccomp=unconfined`; `None`: docker's default.
    pub opt: Option<String>,
    /// The profile text the policy digest covers (`""` for docker's default).
    pub digest_text: String,
    /// The profile's rules, when plimsoll can read them (not docker's default
    /// or unconfined).
    pub profile: Option<Profile>,
}

/// The security option for `setting`, with the digest text and the parsed
/// profile (see [`Choice`]).
pub(crate) fn security_opt(setting: &SeccompSetting) -> Result<Choice, ConfigError> {
    let (text, source) = match setting {
        SeccompSetting::DockerDefault => {
            return Ok(Choice {
                opt: None,
                digest_text: String::new(),
                profile: None,
            });
        }
        SeccompSetting::Unconfined => {
            return Ok(Choice {
                opt: Some("seccomp=unconfined".into()),
                digest_text: "unconfined".into(),
                profile: None,
            });
        }
        SeccompSetting::Shipped => (SHIPPED.to_owned(), "the shipped profile".to_owned()),
        SeccompSetting::Profile(path) => (
            std::fs::read_to_string(path).map_err(|e| {
                ConfigError::new(
                    "SANDBOX_DOCKER_SECCOMP",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?,
            path.display().to_string(),
        ),
    };
    let profile = Profile::parse(&text)
        .map_err(|e| ConfigError::new("SANDBOX_DOCKER_SECCOMP", format!("{source}: {e}")))?;
    let compact = profile.json.to_string();
    Ok(Choice {
        opt: Some(format!("seccomp={compact}")),
        digest_text: compact,
        profile: Some(profile),
    })
}

/// A parsed seccomp profile in docker's JSON format.
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    json: serde_json::Value,
}

/// What a profile does with one call made by a guest holding no capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The call reaches the kernel (or gVisor's Sentry).
    Allowed,
    /// The call fails with this errno before it reaches the kernel.
    Refused(i64),
    /// The process is killed or trapped.
    Killed,
}

/// One system call the walls are judged by: a label, its name, its number
/// on this architecture and the arguments the probe passes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    /// What the call stands for, as the doctor and the proof report it.
    pub label: &'static str,
    /// The system call's name, as profiles list it.
    pub name: &'static str,
    /// (x86_64, aarch64) numbers.
    pub numbers: (u32, u32),
    /// The arguments the probe passes (what the profile's conditions see).
    pub args: [i64; 3],
}

/// The calls that matter (issue 16): families and calls a container guest
/// must not reach. The arguments make an unfiltered call either succeed
/// or fail for a reason of the kernel's own, never of a filter's.
pub(crate) const PROBES: [Probe; 11] = [
    Probe {
        label: "AF_VSOCK socket",
        name: "socket",
        numbers: (41, 198),
        args: [40, 1, 0],
    },
    Probe {
        label: "AF_NETLINK socket",
        name: "socket",
        numbers: (41, 198),
        args: [16, 3, 0],
    },
    Probe {
        label: "AF_INET socket",
        name: "socket",
        numbers: (41, 198),
        args: [2, 1, 0],
    },
    Probe {
        label: "user namespace",
        name: "unshare",
        numbers: (272, 97),
        args: [0x1000_0000, 0, 0],
    },
    Probe {
        label: "io_uring",
        name: "io_uring_setup",
        numbers: (425, 425),
        args: [1, 0, 0],
    },
    Probe {
        label: "bpf",
        name: "bpf",
        numbers: (321, 280),
        args: [0, 0, 0],
    },
    Probe {
        label: "keyctl",
        name: "keyctl",
        numbers: (250, 219),
        args: [0, -3, 1],
    },
    Probe {
        label: "ptrace",
        name: "ptrace",
        numbers: (101, 117),
        args: [0, 0, 0],
    },
    Probe {
        label: "perf_event_open",
        name: "perf_event_open",
        numbers: (298, 241),
        args: [0, 0, -1],
    },
    Probe {
        label: "userfaultfd",
        name: "userfaultfd",
        numbers: (323, 282),
        args: [0, 0, 0],
    },
    Probe {
        label: "mount",
        name: "mount",
        numbers: (165, 40),
        args: [0, 0, 0],
    },
];

impl Probe {
    /// This call's number on the architecture plimsolld was built for.
    pub fn number(&self) -> u32 {
        if cfg!(target_arch = "aarch64") {
            self.numbers.1
        } else {
            self.numbers.0
        }
    }
}

/// The libseccomp architecture name of this build's target.
fn this_arch() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "SCMP_ARCH_AARCH64"
    } else {
        "SCMP_ARCH_X86_64"
    }
}

fn action_verdict(action: &str, errno: Option<i64>) -> Result<Verdict, String> {
    Ok(match action {
        "SCMP_ACT_ALLOW" | "SCMP_ACT_LOG" => Verdict::Allowed,
        "SCMP_ACT_ERRNO" => Verdict::Refused(errno.unwrap_or(1)),
        "SCMP_ACT_TRACE" => Verdict::Refused(38),
        "SCMP_ACT_KILL" | "SCMP_ACT_KILL_THREAD" | "SCMP_ACT_KILL_PROCESS" | "SCMP_ACT_TRAP" => {
            Verdict::Killed
        }
        other => return Err(format!("unknown action {other:?}")),
    })
}

/// How strict a verdict is: the strictest matching rule wins, as in libseccomp.
fn strictness(v: Verdict) -> u8 {
    match v {
        Verdict::Allowed => 0,
        Verdict::Refused(_) => 1,
        Verdict::Killed => 2,
    }
}

fn arg_matches(cond: &serde_json::Value, args: &[i64; 3]) -> bool {
    let index = cond["index"].as_u64().unwrap_or(u64::MAX) as usize;
    // Arguments past the probe's are zero.
    let arg = args.get(index).copied().unwrap_or(0) as u64;
    let value = cond["value"].as_u64().unwrap_or(0);
    let two = cond["valueTwo"].as_u64().unwrap_or(0);
    match cond["op"].as_str().unwrap_or("") {
        "SCMP_CMP_EQ" => arg == value,
        "SCMP_CMP_NE" => arg != value,
        "SCMP_CMP_LT" => arg < value,
        "SCMP_CMP_LE" => arg <= value,
        "SCMP_CMP_GT" => arg > value,
        "SCMP_CMP_GE" => arg >= value,
        "SCMP_CMP_MASKED_EQ" => arg & value == two,
        _ => false,
    }
}

/// Whether a rule's `includes`/`excludes` select it for a guest holding no
/// capability on this architecture.
fn rule_applies(rule: &serde_json::Value) -> bool {
    let list = |v: &serde_json::Value, k: &str| -> Vec<String> {
        v.get(k)
            .and_then(|x| x.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let arch = this_arch()
        .trim_start_matches("SCMP_ARCH_")
        .to_ascii_lowercase();
    let arch_is = |names: &[String]| {
        names.iter().any(|a| {
            a.trim_start_matches("SCMP_ARCH_")
                .eq_ignore_ascii_case(&arch)
                || (arch == "x86_64" && a == "amd64")
                || (arch == "aarch64" && a == "arm64")
        })
    };
    if let Some(inc) = rule.get("includes") {
        // A rule only for holders of a capability: the guest holds none.
        if !list(inc, "caps").is_empty() {
            return false;
        }
        let arches = list(inc, "arches");
        if !arches.is_empty() && !arch_is(&arches) {
            return false;
        }
    }
    if let Some(exc) = rule.get("excludes") {
        let arches = list(exc, "arches");
        if !arches.is_empty() && arch_is(&arches) {
            return false;
        }
    }
    true
}

impl Profile {
    /// Parses and checks a profile: JSON with a known `defaultAction`, a
    /// `syscalls` list whose rules have names and known actions.
    pub fn parse(text: &str) -> Result<Profile, String> {
        let json: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let default = json
            .get("defaultAction")
            .and_then(|a| a.as_str())
            .ok_or("not a seccomp profile (no defaultAction)")?;
        action_verdict(default, None)?;
        let rules = json
            .get("syscalls")
            .and_then(|s| s.as_array())
            .ok_or("not a seccomp profile (no syscalls list)")?;
        for r in rules {
            if r.get("names").and_then(|n| n.as_array()).is_none() {
                return Err("a syscalls rule has no names list".into());
            }
            action_verdict(r["action"].as_str().unwrap_or(""), None)?;
        }
        Ok(Profile { json })
    }

    fn errno_default(&self) -> Option<i64> {
        self.json.get("defaultErrnoRet").and_then(|v| v.as_i64())
    }

    /// What the profile does with `name(args…)` from a guest holding no
    /// capability, on this architecture.
    pub fn verdict(&self, name: &str, args: &[i64; 3]) -> Verdict {
        let default = || {
            action_verdict(
                self.json["defaultAction"].as_str().unwrap_or(""),
                self.errno_default(),
            )
            .unwrap_or(Verdict::Killed)
        };
        let mut best: Option<Verdict> = None;
        for rule in self.json["syscalls"].as_array().into_iter().flatten() {
            let named = rule["names"]
                .as_array()
                .is_some_and(|n| n.iter().any(|x| x.as_str() == Some(name)));
            if !named || !rule_applies(rule) {
                continue;
            }
            let conds = rule.get("args").and_then(|a| a.as_array());
            if !conds.is_none_or(|c| c.iter().all(|c| arg_matches(c, args))) {
                continue;
            }
            let errno = rule
                .get("errnoRet")
                .and_then(|v| v.as_i64())
                .or_else(|| self.errno_default());
            let Ok(v) = action_verdict(rule["action"].as_str().unwrap_or(""), errno) else {
                continue;
            };
            if best.is_none_or(|b| strictness(v) > strictness(b)) {
                best = Some(v);
            }
        }
        best.unwrap_or_else(default)
    }

    /// The profile as gVisor's OCI loader (`--oci-seccomp`) is given it for a
    /// container's first process: release 20221219 answers every refusal
    /// with EPERM whatever its `errnoRet`, so `clone3`, which glibc retries
    /// as `clone` only on ENOSYS, is left to gVisor — it does not implement
    /// `clone3` and answers ENOSYS itself. Every guest process also loads
    /// the profile unchanged through [`EXEC_LOADER`], whose filter refuses
    /// `clone3` first (the stricter of stacked filters wins).
    pub fn for_gvisor(&self) -> String {
        let mut json = self.json.clone();
        if let Some(rules) = json["syscalls"].as_array_mut() {
            for r in rules.iter_mut() {
                if r["action"] == "SCMP_ACT_ERRNO"
                    && let Some(names) = r["names"].as_array_mut()
                {
                    names.retain(|n| n != "clone3");
                }
            }
            rules.retain(|r| r["names"].as_array().is_none_or(|n| !n.is_empty()));
            rules.push(serde_json::json!({"names": ["clone3"], "action": "SCMP_ACT_ALLOW"}));
        }
        json.to_string()
    }

    /// The verdict on every probe, in [`PROBES`] order.
    pub fn verdicts(&self) -> Vec<(Probe, Verdict)> {
        PROBES
            .iter()
            .map(|p| (*p, self.verdict(p.name, &p.args)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
