//! The doctor's docker checks ([`crate::doctor`]): the daemon as the docker
//! provider would use it, judged by the provider's own rules.
//!
//! Reachability and API version (`DOCKER_HOST` resolved as the provider
//! does), the runc and runsc registrations ([`images::judge_runtime`]), runsc's
//! runtimeArgs and version (a 2022 build is flagged legacy), runc's version,
//! docker's seccomp and live-restore settings, both configured images
//! ([`images::judge_image`]), the wall of each registered runtime with its
//! identity and every known escape that matches it ([`wall_checks`]), and
//! finally the provider's startup proof for the
//! configured runtime (only when `SANDBOX_PROVIDER=docker`: it starts
//! containers). What this does not cover: the proof of the runtime not
//! configured, and any remote daemon (refused as the provider refuses it).

use crate::provider::Provider;
use crate::provider::Setup;
use crate::provider::docker::{DockerProvider, images, inventory, seccomp};
use crate::provider::docker::{DockerRuntime, DockerSettings, SeccompSetting};
use crate::readiness::{Check, Level};

const AREA: &str = "docker";
/// The oldest API the provider is built and tested against (Engine 20.10).
const MIN_API: (u32, u32) = (1, 41);

fn ok(name: &str, detail: impl Into<String>) -> Check {
    Check::new(AREA, name, Level::Ok, detail)
}

fn warn(name: &str, detail: impl Into<String>) -> Check {
    Check::new(AREA, name, Level::Warn, detail)
}

fn fail(name: &str, detail: impl Into<String>) -> Check {
    Check::new(AREA, name, Level::Fail, detail)
}

/// Every docker check for these settings (`chosen`: docker is the configured
/// provider, so the startup proof runs), and the host's `/dev/vsock` check,
/// which depends on the runtime and the seccomp profile.
pub(crate) async fn checks(setup: &Setup, settings: &DockerSettings, chosen: bool) -> Vec<Check> {
    let mut out = vec![vsock_check(std::path::Path::new("/"), settings)];
    let provider = match DockerProvider::new(setup, settings) {
        Ok(p) => p,
        Err(e) => {
            out.push(fail("settings", e.to_string()));
            return out;
        }
    };
    let inner = &provider.inner;
    let socket = inner.socket.display().to_string();
    let docker = match inner.client().await {
        Ok(d) => d,
        Err(e) => {
            out.push(fail("daemon", e.message().to_owned()));
            return out;
        }
    };
    let (version, info) = match tokio::try_join!(docker.version(), docker.info()) {
        Ok(v) => v,
        Err(e) => {
            out.push(fail(
                "daemon",
                format!("docker at {socket} did not answer: {e}"),
            ));
            return out;
        }
    };
    let api = version.api_version.clone().unwrap_or_default();
    out.push(match parse_api(&api) {
        Some(v) if v >= MIN_API => ok(
            "daemon",
            format!(
                "reachable at {socket}: Engine {}, API {api}",
                version.version.as_deref().unwrap_or("?")
            ),
        ),
        _ => fail(
            "daemon",
            format!(
                "Engine {} at {socket} speaks API {api:?}, older than {}.{}",
                version.version.as_deref().unwrap_or("?"),
                MIN_API.0,
                MIN_API.1
            ),
        ),
    });
    let runtimes = info.runtimes.clone().unwrap_or_default();
    let mut registered = Vec::new();
    for kind in [DockerRuntime::Runc, DockerRuntime::Runsc] {
        let configured = settings.runtime == kind;
        let name = if configured {
            settings.runtime_name.clone()
        } else {
            kind.as_str().to_owned()
        };
        let check = format!("runtime {name}");
        // The runtime not configured is information: a warn, not a fail.
        let missing = |d: String| {
            if configured {
                fail(&check, d)
            } else {
                warn(&check, d)
            }
        };
        if let Err(e) = images::judge_runtime(&runtimes, kind, &name) {
            out.push(missing(e));
            continue;
        }
        registered.push((name.clone(), configured));
        let reg = runtimes.get(&name).cloned().unwrap_or_default();
        let path = reg.path.clone().unwrap_or_else(|| name.clone());
        let args = reg.runtime_args.clone().unwrap_or_default();
        // Its first line, as the wall reads it (one `--version` reader).
        let version = inventory::runtime_report(&path)
            .await
            .ok()
            .and_then(|t| t.split("; ").next().map(str::to_owned));
        match kind {
            DockerRuntime::Runc => out.push(match &version {
                Some(v) => ok(&check, format!("registered ({path}), {v}")),
                None => warn(
                    &check,
                    format!("registered ({path}); its version is unreadable"),
                ),
            }),
            DockerRuntime::Runsc => {
                let args_s = args.join(" ");
                let filtered = settings.seccomp != SeccompSetting::Unconfined;
                out.push(if !args.iter().any(|a| a == "--network=none") {
                    missing(format!(
                        "registered ({path}) with runtimeArgs [{args_s}]: without --network=none, \
                         containers run with --network none fail to start under this runsc"
                    ))
                } else if filtered && !args.iter().any(|a| a == "--oci-seccomp") {
                    missing(format!(
                        "registered ({path}) with runtimeArgs [{args_s}]: without --oci-seccomp \
                         gVisor ignores the container's seccomp profile, so a guest reaches user \
                         namespaces and io_uring in the Sentry; the startup proof refuses the \
                         kernel tier"
                    ))
                } else {
                    ok(
                        &check,
                        format!(
                            "registered ({path}) with runtimeArgs [{args_s}] (--host-uds=open is \
                             what the grant broker's bind-mounted socket needs)"
                        ),
                    )
                });
                out.push(match &version {
                    Some(v) if runsc_legacy(v) => warn(
                        "runsc version",
                        format!(
                            "{v}: legacy build (2022 or older); prefer a current gVisor release"
                        ),
                    ),
                    Some(v) => ok("runsc version", v.clone()),
                    None => warn("runsc version", format!("{path} --version gave nothing")),
                });
            }
        }
    }
    out.push(profile_check(&settings.seccomp));
    let security = info.security_options.clone().unwrap_or_default();
    out.push(match security.iter().find(|s| s.contains("name=seccomp")) {
        Some(s) => ok("seccomp", s.clone()),
        None => fail(
            "seccomp",
            format!(
                "docker reports no seccomp support ({}): runc runs would have no syscall filter",
                security.join(", ")
            ),
        ),
    });
    out.push(match info.live_restore_enabled {
        Some(true) => ok(
            "live-restore",
            "true: containers outlive a docker restart; plimsoll's reconcile removes its leftovers",
        ),
        Some(false) => ok(
            "live-restore",
            "false: a docker stop or restart kills running containers; in-flight runs end with an infrastructure error",
        ),
        None => warn("live-restore", "not reported"),
    });
    let mut pinned = Vec::new();
    for (role, what, reference) in [
        ("snippet", "snippet image", &settings.image),
        ("project", "project image", &settings.project_image),
    ] {
        out.push(match images::inspect(docker, reference).await {
            Ok(p) => {
                let check = ok(what, format!("{reference} is {} (pinned by this ID)", p.id));
                pinned.push((role, reference.clone(), p.id));
                check
            }
            Err(e) => fail(what, e.message().to_owned()),
        });
    }
    let images: Vec<(&str, &str, &str)> = pinned
        .iter()
        .map(|(role, reference, id)| (*role, reference.as_str(), id.as_str()))
        .collect();
    for (name, configured) in &registered {
        out.extend(
            wall_checks(
                docker,
                name,
                *configured,
                settings,
                &images,
                &setup.accepted_advisories,
            )
            .await,
        );
    }
    if chosen && out.iter().all(|c| c.level != Level::Fail) {
        let started = std::time::Instant::now();
        let proof = match provider.preflight().await {
            Ok(()) => provider.prove().await,
            Err(e) => Err(e),
        };
        out.push(match proof {
            Ok(tier) => ok(
                "startup proof",
                format!(
                    "{} proven tier {} in {} ms; {}",
                    settings.runtime_name,
                    tier.as_str(),
                    started.elapsed().as_millis(),
                    provider.walls().unwrap_or_default()
                ),
            ),
            Err(e) => fail("startup proof", e.message().to_owned()),
        });
    }
    out
}

/// What the configured seccomp profile allows among the calls that matter
/// ([`seccomp::PROBES`]), read from the profile itself: a warning when it
/// allows any of them, or when its rules cannot be read (docker's built-in
/// profile, whose effect the startup proof measures) or there is none.
pub(crate) fn profile_check(setting: &SeccompSetting) -> Check {
    const NAME: &str = "seccomp profile";
    let choice = match seccomp::security_opt(setting) {
        Ok(c) => c,
        Err(e) => return fail(NAME, e.to_string()),
    };
    let Some(profile) = choice.profile else {
        return warn(
            NAME,
            match setting {
                SeccompSetting::Unconfined => {
                    "unconfined (asked for by name): no system-call filter; a runc guest reaches \
                     AF_VSOCK, AF_NETLINK, io_uring and the rest of the host kernel's surface"
                }
                _ => {
                    "docker-default (asked for by name): docker's built-in profile, whose rules the \
                     Engine API does not expose; on Engine 20.10 it allows AF_VSOCK, AF_NETLINK and \
                     AF_INET sockets and io_uring (the startup proof measures what it refuses)"
                }
            },
        );
    };
    let mut allowed = Vec::new();
    let mut refused = Vec::new();
    for (probe, verdict) in profile.verdicts() {
        match verdict {
            seccomp::Verdict::Allowed => allowed.push(probe.label),
            _ => refused.push(probe.label),
        }
    }
    let which = match setting {
        SeccompSetting::Profile(p) => p.display().to_string(),
        _ => "plimsoll (the shipped profile)".to_owned(),
    };
    if allowed.is_empty() {
        ok(NAME, format!("{which}: refuses {}", refused.join(", ")))
    } else {
        warn(
            NAME,
            format!(
                "{which}: allows {}; refuses {}",
                allowed.join(", "),
                if refused.is_empty() {
                    "none of them".to_owned()
                } else {
                    refused.join(", ")
                }
            ),
        )
    }
}

/// The `/dev/vsock` check, which depends on the docker settings: present, a
/// runc guest under docker's *default* seccomp profile can open `AF_VSOCK`
/// sockets reaching the hypervisor; the shipped profile (AF_UNIX only) and
/// runsc deny the family.
pub(crate) fn vsock_check(root: &std::path::Path, settings: &DockerSettings) -> Check {
    if !root.join("dev/vsock").exists() {
        return Check::new("host", "/dev/vsock", Level::Ok, "absent");
    }
    match (settings.runtime, refuses_vsock(&settings.seccomp)) {
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
                settings.seccomp.name()
            ),
        ),
        (DockerRuntime::Runc, false) => Check::new(
            "host",
            "/dev/vsock",
            Level::Warn,
            format!(
                "present, and runc runs apply the seccomp profile {}, which lets a guest open AF_VSOCK sockets to the hypervisor; unset SANDBOX_DOCKER_SECCOMP for the shipped profile",
                settings.seccomp.name()
            ),
        ),
    }
}

/// Whether `setting`'s profile refuses `AF_VSOCK` sockets (false when its
/// rules are unreadable: docker's own profile allows the family).
fn refuses_vsock(setting: &SeccompSetting) -> bool {
    seccomp::security_opt(setting)
        .ok()
        .and_then(|c| c.profile)
        .is_some_and(|p| {
            p.verdicts().iter().any(|(probe, v)| {
                probe.label == "AF_VSOCK socket" && *v != seccomp::Verdict::Allowed
            })
        })
}

/// `1.41` → (1, 41).
pub(crate) fn parse_api(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// A runsc version line from 2022 or before (`runsc version 0.0~20221219.0`,
/// `runsc version release-20221219.0`): the build date's year.
pub(crate) fn runsc_legacy(line: &str) -> bool {
    let digits: Vec<char> = line.chars().collect();
    for w in digits.windows(8) {
        if w.iter().all(char::is_ascii_digit) {
            let year: u32 = w[..4].iter().collect::<String>().parse().unwrap_or(0);
            if (2018..2100).contains(&year) {
                return year <= 2022;
            }
        }
    }
    false
}

/// The wall of docker runs under `name` ([`inventory::read`]) and its
/// known escapes ([`crate::advisory::assess`]): one check naming every part
/// and the wall's identity, then one per matching advisory. An exposed match
/// the operator has not accepted fails for the configured runtime (startup
/// would refuse it) and warns for the other; a match that does not reach a
/// guest as plimsoll runs the part warns.
async fn wall_checks(
    docker: &bollard::Docker,
    name: &str,
    configured: bool,
    settings: &DockerSettings,
    images: &[(&str, &str, &str)],
    accepted: &[String],
) -> Vec<Check> {
    let check = format!("wall {name}");
    let wall = match inventory::read(docker, name, &settings.seccomp, images).await {
        Ok(w) => crate::advisory::assess(w, accepted),
        Err(e) => {
            let d = e.message().to_owned();
            return vec![if configured {
                fail(&check, d)
            } else {
                warn(&check, d)
            }];
        }
    };
    let mut out = vec![
        ok(&check, format!("{}: {}", wall.identity(), wall.summary())).with_wall(wall.clone()),
    ];
    if wall.advisories.is_empty() {
        out.push(ok(
            &format!("advisories {name}"),
            format!(
                "none of the {} known advisories (data {}) matches",
                crate::advisory::all().len(),
                crate::advisory::data_version()
            ),
        ));
    }
    for f in &wall.advisories {
        let check = format!("advisory {} {name}", f.id);
        out.push(if f.exposed && !f.accepted && configured {
            fail(&check, f.line())
        } else {
            warn(&check, f.line())
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_reported_by_what_they_allow() {
        let c = profile_check(&SeccompSetting::Shipped);
        assert_eq!(c.level, Level::Ok, "{}", c.detail);
        assert!(
            c.detail
                .contains("refuses AF_VSOCK socket, AF_NETLINK socket"),
            "{}",
            c.detail
        );
        for weak in [SeccompSetting::DockerDefault, SeccompSetting::Unconfined] {
            let c = profile_check(&weak);
            assert_eq!(c.level, Level::Warn, "{}", c.detail);
            assert!(c.detail.contains("AF_VSOCK"), "{}", c.detail);
        }
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.json");
        std::fs::write(
            &f,
            r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["socket","io_uring_setup"],"action":"SCMP_ACT_ALLOW"}]}"#,
        )
        .unwrap();
        let c = profile_check(&SeccompSetting::Profile(f));
        assert_eq!(c.level, Level::Warn);
        assert!(
            c.detail
                .contains("allows AF_VSOCK socket, AF_NETLINK socket, AF_INET socket, io_uring;"),
            "{}",
            c.detail
        );
        let c = profile_check(&SeccompSetting::Profile("/nonexistent".into()));
        assert_eq!(c.level, Level::Fail);
    }

    #[test]
    fn versions_are_parsed() {
        assert_eq!(parse_api("1.41"), Some((1, 41)));
        assert_eq!(parse_api("x"), None);
        assert!(runsc_legacy("runsc version 0.0~20221219.0"));
        assert!(runsc_legacy("runsc version release-20211129.0"));
        assert!(!runsc_legacy("runsc version release-20250512.0"));
        assert!(!runsc_legacy("runsc version unknown"));
    }

    #[test]
    fn vsock_depends_on_runtime_and_profile() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("dev")).unwrap();
        std::fs::write(d.path().join("dev/vsock"), "").unwrap();
        let mut s = DockerSettings::default();
        // The default is the shipped profile, which refuses AF_VSOCK.
        assert_eq!(vsock_check(d.path(), &s).level, Level::Ok);
        s.seccomp = SeccompSetting::DockerDefault;
        assert_eq!(vsock_check(d.path(), &s).level, Level::Warn);
        s.seccomp = SeccompSetting::Unconfined;
        assert_eq!(vsock_check(d.path(), &s).level, Level::Warn);
        s.seccomp = SeccompSetting::Profile(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../images/seccomp.json").into(),
        );
        assert_eq!(vsock_check(d.path(), &s).level, Level::Ok);
        s.seccomp = SeccompSetting::DockerDefault;
        s.runtime = DockerRuntime::Runsc;
        assert_eq!(vsock_check(d.path(), &s).level, Level::Ok);
        let none = tempfile::tempdir().unwrap();
        assert_eq!(vsock_check(none.path(), &s).detail, "absent");
    }
}
