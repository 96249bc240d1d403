//! The system-call walls, proven by behaviour at startup: which kernel
//! answers the guest, and that the seccomp profile is in force there.
//!
//! The probes of [`seccomp::PROBES`] run inside the startup proof's own
//! container (the runs' lockdown, runtime and profile) and, for comparison,
//! inside a baseline container that differs only by `seccomp=unconfined`.
//! Each probe is a raw system call made by a forked child through python3's
//! ctypes, so nothing in between filters or retries it.
//!
//! - **The profile is in force**: the guest's status shows a filter
//!   (`Seccomp: 2`, which gVisor reports too), every probe the profile
//!   refuses fails, and at least one of them fails where the baseline's
//!   succeeded or failed differently: the filter changed an outcome. Under
//!   runsc this holds only when docker registers it with `--oci-seccomp`;
//!   without the flag gVisor ignores the profile and the proof fails.
//! - **The kernel tier is gVisor's**: under runsc the guest's `/proc/version`
//!   is not the host's, and the kernel log the baseline reads carries
//!   gVisor's boot banner (`Starting gVisor...`, the check gVisor's Docker
//!   quick start documents; the Sentry answers `syslog` itself). A runc
//!   registered under a runsc name and path shows the host's kernel and is
//!   refused. The baseline needs no filter for this read: it runs plimsoll's
//!   probe only, never guest code.
//!
//! What this does not cover: attestation. It is evidence under this
//! configuration, on this host, at startup; docker's built-in profile is
//! judged by its measured effect only (its rules are not exposed).

use std::time::Duration;

use bollard::Docker;

use crate::error::{Error, Result};
use crate::provider::docker::container::Live;
use crate::provider::docker::images::PinnedImage;
use crate::provider::docker::lockdown::{Lockdown, Role, container_name};
use crate::provider::docker::seccomp::{PROBES, Profile, Verdict};
use crate::provider::docker::snippet::unix_after;
use crate::provider::docker::{DockerRuntime, SeccompSetting};
use crate::provider::docker::{Inner, proof};

/// The probe: one line per probe (`probe <i> <rc> <errno>`, or `probe <i>
/// killed <signal>`), the status line, the kernel version, and with `dmesg`
/// as the first argument whether the kernel log carries gVisor's banner.
const PROBE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] == "dmesg":
    b = ctypes.create_string_buffer(1 << 16)
    n = libc.klogctl(3, b, 1 << 16)
    print("gvisor %d" % (b"Starting gVisor" in b.raw[:max(n, 0)]))
for i, a in enumerate(sys.argv[2:]):
    nr, x, y, z = (int(v) for v in a.split(","))
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        ctypes.set_errno(0)
        r = libc.syscall(ctypes.c_long(nr), ctypes.c_long(x), ctypes.c_long(y), ctypes.c_long(z), ctypes.c_long(0), ctypes.c_long(0))
        os.write(1, ("probe %d %d %d\n" % (i, r, ctypes.get_errno() if r < 0 else 0)).encode())
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        print("probe %d killed %d" % (i, os.WTERMSIG(st)))
for l in open("/proc/self/status"):
    if l.startswith("Seccomp:"):
        print("seccomp " + l.split()[1])
try:
    for l in open("/proc/1/status"):
        if l.startswith("Seccomp:"):
            print("init-seccomp " + l.split()[1])
except OSError as e:
    print("init-seccomp unreadable-%d" % e.errno)
print("version " + open("/proc/version").read().strip())
"#;

/// One probe's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The call returned this (≥ 0).
    Returned(i64),
    /// The call failed with this errno.
    Failed(i64),
    /// The child was killed by this signal.
    Killed(i64),
}

impl Outcome {
    fn refused(self) -> bool {
        !matches!(self, Outcome::Returned(_))
    }
}

/// What one container showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Observed {
    /// Each probe's outcome, in [`PROBES`] order.
    pub probes: Vec<Outcome>,
    /// The status file's `Seccomp:` mode.
    pub seccomp_mode: Option<String>,
    /// The `Seccomp:` mode of the container's first process (its keeper),
    /// which only the runtime's own loader filters.
    pub init_seccomp: Option<String>,
    /// `/proc/version` as the guest reads it.
    pub version: String,
    /// Whether the kernel log carried gVisor's banner (asked only of the baseline).
    pub gvisor_banner: Option<bool>,
}

/// Parses the probe's output.
pub(crate) fn parse(out: &str) -> std::result::Result<Observed, String> {
    let mut o = Observed::default();
    for line in out.lines() {
        let mut f = line.split_whitespace();
        match f.next() {
            Some("probe") => {
                let v: Vec<&str> = f.collect();
                let num = |s: &str| {
                    s.parse::<i64>()
                        .map_err(|_| format!("bad probe line {line:?}"))
                };
                let outcome = match v.as_slice() {
                    [_, "killed", sig] => Outcome::Killed(num(sig)?),
                    [_, rc, errno] if num(rc)? < 0 => Outcome::Failed(num(errno)?),
                    [_, rc, _] => Outcome::Returned(num(rc)?),
                    _ => return Err(format!("bad probe line {line:?}")),
                };
                o.probes.push(outcome);
            }
            Some("seccomp") => o.seccomp_mode = f.next().map(str::to_owned),
            Some("init-seccomp") => o.init_seccomp = f.next().map(str::to_owned),
            Some("gvisor") => o.gvisor_banner = Some(f.next() == Some("1")),
            Some("version") => o.version = line["version ".len()..].to_owned(),
            _ => {}
        }
    }
    if o.probes.len() != PROBES.len() || o.version.is_empty() {
        return Err(format!(
            "the probe answered {} of {} calls (output {out:?})",
            o.probes.len(),
            PROBES.len()
        ));
    }
    Ok(o)
}

/// The probe's command line.
fn command(dmesg: bool) -> Vec<String> {
    let mut cmd = vec![
        "python3".into(),
        "-c".into(),
        PROBE.into(),
        if dmesg { "dmesg" } else { "-" }.into(),
    ];
    cmd.extend(
        PROBES
            .iter()
            .map(|p| format!("{},{},{},{}", p.number(), p.args[0], p.args[1], p.args[2])),
    );
    cmd
}

/// Runs the probe in a running proof container.
pub(crate) async fn observe(docker: &Docker, live: &Live, l: &Lockdown) -> Result<Observed> {
    let out = proof::run(docker, live, l, command(false)).await?;
    parse(&out).map_err(Error::infrastructure)
}

/// Runs the probe, with the kernel-log read, in a baseline container: the
/// proof's lockdown on `image`, without a seccomp filter.
async fn baseline(p: &Inner, image: &PinnedImage) -> Result<Observed> {
    let docker = p.client().await?;
    let mut l = p.lockdown.clone();
    l.seccomp_opt = Some("seccomp=unconfined".into());
    l.exec_filter = None;
    let body = l.create_body(
        Role::Proof { work: false },
        &image.id,
        &image.env,
        60,
        unix_after(Duration::from_secs(60)),
        None,
    );
    let mut live = Live::create(docker, &p.live, container_name(), body).await?;
    live.start().await?;
    let out = proof::run(docker, &live, &l, command(true)).await;
    live.remove().await?;
    parse(&out?).map_err(Error::infrastructure)
}

/// What the walls were shown to be, for the startup log and the doctor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown {
    /// One line: the kernel and the profile in force, with what it refuses.
    pub summary: String,
}

/// The judgement, a pure function of what was seen: `inside` (the proof
/// container), `baseline` (unfiltered; `None` only when the setting is
/// unconfined under runc), the host's `/proc/version`, and the profile's
/// rules when readable.
pub(crate) fn judge(
    runtime: DockerRuntime,
    runtime_name: &str,
    setting: &SeccompSetting,
    profile: Option<&Profile>,
    inside: &Observed,
    baseline: Option<&Observed>,
    host_version: &str,
) -> std::result::Result<Shown, String> {
    let kernel = match runtime {
        DockerRuntime::Runc => "the host's kernel".to_owned(),
        DockerRuntime::Runsc => {
            if inside.version.trim() == host_version.trim() {
                return Err(format!(
                    "the runtime registered as {runtime_name} runs the guest on the host's kernel \
                     ({:?}): it is not gVisor, so the kernel tier is refused",
                    inside.version
                ));
            }
            if baseline.and_then(|b| b.gvisor_banner) != Some(true) {
                return Err(format!(
                    "the runtime registered as {runtime_name} shows no gVisor boot banner in the \
                     guest's kernel log: it is not gVisor, so the kernel tier is refused"
                ));
            }
            format!("gVisor ({})", inside.version)
        }
    };
    let hint = if runtime == DockerRuntime::Runsc {
        "; under runsc every guest process loads a profile whose rules plimsoll reads (plimsoll \
         or a file; not docker-default) itself, and gVisor applies it to a container's first \
         process only when docker registers runsc with --oci-seccomp"
    } else {
        ""
    };
    let name = setting.name();
    if *setting == SeccompSetting::Unconfined {
        return Ok(Shown {
            summary: format!("kernel {kernel}; seccomp unconfined (no filter, asked for by name)"),
        });
    }
    if inside.seccomp_mode.as_deref() != Some("2") {
        return Err(format!(
            "the guest runs without a seccomp filter (Seccomp: {:?}){hint}",
            inside.seccomp_mode
        ));
    }
    if inside.init_seccomp.as_deref() != Some("2") {
        return Err(format!(
            "the container's first process runs without a seccomp filter (Seccomp: {:?}){hint}",
            inside.init_seccomp
        ));
    }
    let baseline = baseline.ok_or("no baseline to compare the seccomp profile with")?;
    let mut refused = Vec::new();
    let mut allowed = Vec::new();
    let mut changed = false;
    for (i, probe) in PROBES.iter().enumerate() {
        let (got, base) = (inside.probes[i], baseline.probes[i]);
        let expected = profile.map(|p| p.verdict(probe.name, &probe.args));
        if expected.is_some_and(|v| v != Verdict::Allowed) && !got.refused() {
            return Err(format!(
                "the seccomp profile {name} refuses {} but the guest's call returned ({got:?}){hint}",
                probe.label
            ));
        }
        if got.refused() {
            refused.push(probe.label);
            changed |= got != base;
        } else {
            allowed.push(probe.label);
        }
    }
    if !changed {
        return Err(format!(
            "the seccomp profile {name} changes no call's outcome inside the sandbox: it is not \
             in force{hint}"
        ));
    }
    Ok(Shown {
        summary: format!(
            "kernel {kernel}; seccomp {name} in force: refuses {}; allows {}",
            refused.join(", "),
            if allowed.is_empty() {
                "none of the probed calls".to_owned()
            } else {
                allowed.join(", ")
            }
        ),
    })
}

/// Proves the walls from `inside` (observed in the proof container of
/// `image`), running the baseline where the judgement needs one.
pub(crate) async fn prove(p: &Inner, image: &PinnedImage, inside: &Observed) -> Result<Shown> {
    let s = &p.lockdown.settings;
    let need_baseline =
        s.runtime == DockerRuntime::Runsc || s.seccomp != SeccompSetting::Unconfined;
    let base = if need_baseline {
        Some(baseline(p, image).await?)
    } else {
        None
    };
    let host = std::fs::read_to_string("/proc/version")
        .map_err(|e| Error::infrastructure(format!("reading the host's /proc/version: {e}")))?;
    judge(
        s.runtime,
        &s.runtime_name,
        &s.seccomp,
        p.seccomp.as_ref(),
        inside,
        base.as_ref(),
        &host,
    )
    .map_err(|e| {
        Error::infrastructure(format!(
            "startup proof failed for image {} ({}): {e}",
            image.reference, image.id
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::docker::seccomp::SHIPPED;

    const HOST: &str = "Linux version 6.18.44 (builder@host) #1 SMP";
    const GVISOR: &str = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016";

    /// What this machine showed (runc and runsc, shipped profile and none).
    fn seen(probes: &[Outcome], mode: &str, version: &str, banner: Option<bool>) -> Observed {
        Observed {
            probes: probes.to_vec(),
            seccomp_mode: Some(mode.into()),
            init_seccomp: Some(mode.into()),
            version: version.into(),
            gvisor_banner: banner,
        }
    }

    use Outcome::{Failed as F, Returned as R};
    /// Probe order: vsock, netlink, inet, userns, io_uring, bpf, keyctl,
    /// ptrace, perf, userfaultfd, mount.
    const RUNC_OPEN: [Outcome; 11] = [
        R(3),
        R(4),
        R(5),
        F(1),
        F(14),
        F(1),
        R(9),
        R(0),
        F(1),
        F(1),
        F(1),
    ];
    const RUNSC_OPEN: [Outcome; 11] = [
        F(97),
        R(3),
        R(4),
        F(1),
        F(14),
        F(1),
        F(13),
        R(0),
        F(1),
        F(1),
        F(1),
    ];
    const FILTERED: [Outcome; 11] = [F(1); 11];

    fn shipped() -> Profile {
        Profile::parse(SHIPPED).unwrap()
    }

    #[test]
    fn runc_with_the_shipped_profile_passes() {
        let p = shipped();
        let s = judge(
            DockerRuntime::Runc,
            "runc",
            &SeccompSetting::Shipped,
            Some(&p),
            &seen(&FILTERED, "2", HOST, None),
            Some(&seen(&RUNC_OPEN, "0", HOST, Some(false))),
            HOST,
        )
        .unwrap();
        assert!(
            s.summary
                .contains("seccomp plimsoll in force: refuses AF_VSOCK socket"),
            "{}",
            s.summary
        );
        assert!(s.summary.contains("allows none"), "{}", s.summary);
    }

    #[test]
    fn gvisor_with_the_profile_in_force_passes() {
        let p = shipped();
        let s = judge(
            DockerRuntime::Runsc,
            "runsc",
            &SeccompSetting::Shipped,
            Some(&p),
            &seen(&FILTERED, "2", GVISOR, None),
            Some(&seen(&RUNSC_OPEN, "0", GVISOR, Some(true))),
            HOST,
        )
        .unwrap();
        assert!(s.summary.starts_with("kernel gVisor"), "{}", s.summary);
    }

    /// runsc without --oci-seccomp: the profile is ignored inside gVisor.
    #[test]
    fn gvisor_ignoring_the_profile_fails() {
        let p = shipped();
        let mut inside = seen(&RUNSC_OPEN, "2", GVISOR, None);
        let e = judge(
            DockerRuntime::Runsc,
            "runsc",
            &SeccompSetting::Shipped,
            Some(&p),
            &inside,
            Some(&seen(&RUNSC_OPEN, "0", GVISOR, Some(true))),
            HOST,
        )
        .unwrap_err();
        assert!(
            e.contains("refuses AF_NETLINK socket") && e.contains("--oci-seccomp"),
            "{e}"
        );
        // Every refused call failing the same way with or without the filter
        // is no evidence either.
        inside.probes = RUNSC_OPEN
            .iter()
            .map(|o| if o.refused() { *o } else { F(1) })
            .collect();
        let base = seen(&inside.probes.clone(), "0", GVISOR, Some(true));
        let e = judge(
            DockerRuntime::Runsc,
            "runsc",
            &SeccompSetting::DockerDefault,
            None,
            &inside,
            Some(&base),
            HOST,
        )
        .unwrap_err();
        assert!(e.contains("changes no call's outcome"), "{e}");
        inside.seccomp_mode = Some("0".into());
        let e = judge(
            DockerRuntime::Runsc,
            "runsc",
            &SeccompSetting::DockerDefault,
            None,
            &inside,
            Some(&base),
            HOST,
        )
        .unwrap_err();
        assert!(e.contains("without a seccomp filter"), "{e}");
        // Guest processes filtered, the first process not: no --oci-seccomp.
        let mut inside = seen(&FILTERED, "2", GVISOR, None);
        inside.init_seccomp = Some("0".into());
        let e = judge(
            DockerRuntime::Runsc,
            "runsc",
            &SeccompSetting::Shipped,
            Some(&p),
            &inside,
            Some(&base),
            HOST,
        )
        .unwrap_err();
        assert!(
            e.contains("first process") && e.contains("--oci-seccomp"),
            "{e}"
        );
    }

    /// runc registered under a runsc name: the host's kernel, or no banner.
    #[test]
    fn an_impostor_runsc_is_refused() {
        let p = shipped();
        let e = judge(
            DockerRuntime::Runsc,
            "runsc",
            &SeccompSetting::Shipped,
            Some(&p),
            &seen(&FILTERED, "2", HOST, None),
            Some(&seen(&RUNC_OPEN, "0", HOST, Some(false))),
            HOST,
        )
        .unwrap_err();
        assert!(
            e.contains("host's kernel") && e.contains("not gVisor"),
            "{e}"
        );
        let e = judge(
            DockerRuntime::Runsc,
            "runsc",
            &SeccompSetting::Shipped,
            Some(&p),
            &seen(&FILTERED, "2", GVISOR, None),
            Some(&seen(&RUNC_OPEN, "0", GVISOR, Some(false))),
            HOST,
        )
        .unwrap_err();
        assert!(e.contains("no gVisor boot banner"), "{e}");
    }

    #[test]
    fn docker_default_is_judged_by_its_effect() {
        // Docker's profile on runc: keyctl refused, vsock still allowed.
        let mut inside = RUNC_OPEN;
        inside[6] = F(1);
        let s = judge(
            DockerRuntime::Runc,
            "runc",
            &SeccompSetting::DockerDefault,
            None,
            &seen(&inside, "2", HOST, None),
            Some(&seen(&RUNC_OPEN, "0", HOST, Some(false))),
            HOST,
        )
        .unwrap();
        assert!(
            s.summary.contains("allows AF_VSOCK socket"),
            "{}",
            s.summary
        );
        let s = judge(
            DockerRuntime::Runc,
            "runc",
            &SeccompSetting::Unconfined,
            None,
            &seen(&RUNC_OPEN, "0", HOST, None),
            None,
            HOST,
        )
        .unwrap();
        assert!(s.summary.contains("unconfined"), "{}", s.summary);
    }

    #[test]
    fn probe_output_is_parsed() {
        let mut out = String::from("gvisor 1\n");
        for i in 0..PROBES.len() {
            out.push_str(&format!("probe {i} -1 1\n"));
        }
        out = out.replacen("probe 2 -1 1", "probe 2 5 0", 1).replacen(
            "probe 3 -1 1",
            "probe 3 killed 31",
            1,
        );
        out.push_str("seccomp 2\ninit-seccomp 2\nversion Linux version 4.4.0 #1\n");
        let o = parse(&out).unwrap();
        assert_eq!(o.probes[1], F(1));
        assert_eq!(o.probes[2], R(5));
        assert_eq!(o.probes[3], Outcome::Killed(31));
        assert_eq!(o.seccomp_mode.as_deref(), Some("2"));
        assert_eq!(o.init_seccomp.as_deref(), Some("2"));
        assert_eq!(o.gvisor_banner, Some(true));
        assert_eq!(o.version, "Linux version 4.4.0 #1");
        assert!(
            parse("probe 0 -1 1\nversion x\n").is_err(),
            "too few probes"
        );
        assert!(parse("probe 0 x y\n").is_err());
    }

    /// The probe's command carries one argument per probe.
    #[test]
    fn command_lists_every_probe() {
        let c = command(true);
        assert_eq!(c.len(), 4 + PROBES.len());
        assert_eq!(c[3], "dmesg");
        assert!(c[4].starts_with(&PROBES[0].number().to_string()));
    }
}
