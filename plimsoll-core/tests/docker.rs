//! The docker provider against the real local dockerd, under both runc and
//! runsc. Docker unreachable, or either runtime unregistered, fails these
//! tests: they never skip.
#![cfg(feature = "docker")]
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plimsoll_core::config::{Config, DockerRuntime, DockerSettings};
use plimsoll_core::engine::{Caller, Engine};
use plimsoll_core::provider::Chosen;
use plimsoll_core::provider::Provider;
use plimsoll_core::provider::docker::DockerProvider;
use plimsoll_core::request::{JavaScriptRun, Payload, ProjectFile, ProjectRun, Request};
use plimsoll_core::result::{JavaScriptResult, Output, ProjectOutcome, ProjectResult};
use plimsoll_core::wire::RunResponse;
use plimsoll_core::{ErrorCode, Isolation, Refusal, verify};
use tokio_util::sync::CancellationToken;

const RUNTIMES: [DockerRuntime; 2] = [DockerRuntime::Runc, DockerRuntime::Runsc];

fn seccomp_profile() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../images/seccomp.json")
}

/// A docker config for `rt` with a fresh instance and the defaults (the
/// shipped seccomp profile under both runtimes).
fn config(rt: DockerRuntime, tag: &str) -> Config {
    let docker = DockerSettings {
        runtime: rt,
        runtime_name: rt.as_str().into(),
        ..DockerSettings::default()
    };
    Config {
        provider: Chosen::new(docker),
        instance: format!(
            "plimsoll-test:{tag}-{}-{}",
            rt.as_str(),
            hex::encode(rand::random::<[u8; 4]>())
        ),
        ..Config::default()
    }
}

async fn start(config: &Config) -> (Engine, Arc<DockerProvider>) {
    let provider = Arc::new(support::docker_provider(config).unwrap());
    let t = Instant::now();
    let engine = Engine::with_provider(provider.clone(), config)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "engine start under {}: {e}",
                support::docker_of(config).runtime_name
            )
        });
    eprintln!(
        "[{}] started and proven in {:?}",
        support::docker_of(config).runtime_name,
        t.elapsed()
    );
    (engine, provider)
}

fn tier(rt: DockerRuntime) -> Isolation {
    match rt {
        DockerRuntime::Runc => Isolation::Container,
        DockerRuntime::Runsc => Isolation::Kernel,
    }
}

fn js(code: &str) -> Request {
    Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        ..JavaScriptRun::default()
    }))
}

fn project(files: &[(&str, &str)], steps: &[&str], artifacts: &[&str]) -> Request {
    Request::new(Payload::Project(ProjectRun {
        files: files
            .iter()
            .map(|(p, c)| ProjectFile {
                path: (*p).into(),
                content: (*c).into(),
            })
            .collect(),
        steps: steps.iter().map(|s| (*s).into()).collect(),
        artifacts: artifacts.iter().map(|s| (*s).into()).collect(),
        ..ProjectRun::default()
    }))
}

async fn run(engine: &Engine, request: Request) -> RunResponse {
    let response = engine
        .run(
            &Caller::anonymous(),
            request.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    verify::check_single(&request, &response).unwrap();
    response
}

async fn run_js(engine: &Engine, code: &str) -> JavaScriptResult {
    match run(engine, js(code)).await.output {
        Some(Output::JavaScript(r)) => r,
        other => panic!("not a snippet result: {other:?}"),
    }
}

async fn run_project(engine: &Engine, request: Request) -> ProjectResult {
    match run(engine, request).await.output {
        Some(Output::Project(r)) => r,
        other => panic!("not a project result: {other:?}"),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snippets_run_in_the_image_with_nothing_of_the_host() {
    let mut walls = Vec::new();
    for rt in RUNTIMES {
        let config = config(rt, "snippet");
        let (engine, _) = start(&config).await;
        assert_eq!(engine.isolation(), tier(rt));
        let d = engine.describe();
        assert_eq!(d.isolation, tier(rt).as_str());
        assert!(d.supports_project);
        let jenv = d.javascript_environment.clone().unwrap();
        assert!(
            jenv.identity.starts_with("docker-image:sha256:"),
            "{jenv:?}"
        );
        assert_eq!(jenv.identity.len(), "docker-image:sha256:".len() + 64);
        assert_eq!(jenv.languages, vec!["javascript".to_string()]);
        assert_eq!(jenv.max_timeout_ms, 30_000);
        let penv = d.project_environment.clone().unwrap();
        assert_eq!(
            penv.languages,
            vec!["javascript".to_string(), "python".to_string()]
        );
        assert_eq!(penv.max_timeout_ms, 120_000);

        // Hello, exit codes, the deadline, caps and cancel are the
        // conformance suite's (tests/conformance.rs); here, what is docker's.
        let response = run(&engine, js("console.log(6*7)")).await;
        assert_eq!(response.evidence.environment, jenv.identity);

        // The wall: every part named with what it reports of itself, and its
        // identity in Describe's policy and in the verified record.
        let wall = d.wall.clone().unwrap();
        let runtime = wall
            .parts
            .iter()
            .find(|p| {
                p.name
                    .starts_with(&format!("oci runtime {} (", rt.as_str()))
            })
            .unwrap_or_else(|| panic!("no runtime part: {wall:?}"));
        assert!(
            runtime
                .version
                .starts_with(&format!("{} version ", rt.as_str())),
            "{runtime:?}"
        );
        for name in ["host kernel", "docker engine", "seccomp profile"] {
            assert!(
                !wall.version_of(name).unwrap_or("").is_empty(),
                "{name}: {wall:?}"
            );
        }
        assert!(
            wall.version_of("seccomp profile")
                .unwrap()
                .starts_with("plimsoll sha256:")
        );
        assert_eq!(
            wall.version_of("image snippet (plimsoll/snippet:latest)"),
            jenv.identity.strip_prefix("docker-image:")
        );
        assert!(
            !wall.advisories.iter().any(|f| f.exposed && !f.accepted),
            "{wall:?}"
        );
        let id = wall.identity();
        assert!(d.policy.ends_with(&format!(";wall={id}")), "{}", d.policy);
        let record = response.record.as_ref().unwrap();
        assert_eq!(record.policy, d.policy);
        assert_eq!(plimsoll_core::wall::identity_in(&record.policy), id);
        walls.push(id);

        // Where its time went: a fresh container, every phase marked.
        let phases = response.phases.clone().unwrap();
        assert_eq!(phases.source, "fresh");
        let names: Vec<&str> = phases.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(
            names,
            ["admitted", "acquired", "started", "running", "collected"],
            "{phases:?}"
        );
        let total: f64 = phases.phases.iter().map(|p| p.ms).sum();
        assert!(
            total > 0.0 && total <= response.duration_ms as f64 + 50.0,
            "{phases:?}"
        );

        // The guest sees only the image's environment plus HOME: nothing of the host's.
        let r = run_js(
            &engine,
            "console.log(Object.keys(process.env).sort().join(','), process.getuid(), process.cwd())",
        )
        .await;
        assert_eq!(
            text(&r.stdout),
            "HOME,HOSTNAME,LANG,NODE_DISABLE_COLORS,PATH 61000 /tmp\n"
        );

        support::assert_none_left(&config.instance).await;
    }
    assert_ne!(walls[0], walls[1], "runc and runsc walls have one identity");
}

/// A runtime registered by .ci/setup-host.sh: the machine's runc, reporting
/// `release` when asked its version.
fn reporting_runc(release: &str, tag: &str) -> Config {
    let mut c = config(DockerRuntime::Runc, tag);
    c.provider.edit(|d: &mut DockerSettings| {
        d.runtime_name = format!("plimsoll-runc-{release}");
    });
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_with_a_known_escape_is_refused_until_its_advisory_is_accepted() {
    // runc 1.1.11 predates the CVE-2024-21626 fix, which reaches exec into a
    // container the guest has written: startup refuses before any proof.
    let affected = reporting_runc("1.1.11", "advisory");
    let e = refused(&affected).await;
    assert!(e.contains("CVE-2024-21626 (GHSA-xr7r-f8xq-vfvv)"), "{e}");
    assert!(e.contains("exposed (session, exec)"), "{e}");
    assert!(e.contains("SANDBOX_ACCEPT_ADVISORIES"), "{e}");
    support::assert_none_left(&affected.instance).await;

    // Accepted by name: it serves, and Describe and every record say so.
    let mut accepted = affected.clone();
    accepted.accepted_advisories = vec!["CVE-2024-21626".into()];
    let (engine, _) = start(&accepted).await;
    let d = engine.describe();
    let wall = d.wall.clone().unwrap();
    let f = wall
        .advisories
        .iter()
        .find(|f| f.id == "CVE-2024-21626")
        .unwrap();
    assert!(f.exposed && f.accepted, "{f:?}");
    assert!(
        wall.version_of(
            "oci runtime plimsoll-runc-1.1.11 (/usr/local/libexec/plimsoll-test/runc-1.1.11)"
        )
        .unwrap()
        .starts_with("runc version 1.1.11; commit: v1.1.11-0-plimsoll-test"),
        "{wall:?}"
    );
    let r = run(&engine, js("console.log(1)")).await;
    let policy = &r.record.as_ref().unwrap().policy;
    assert!(
        policy.ends_with(&format!(
            ";wall={};accepted=CVE-2024-21626",
            wall.identity()
        )),
        "{policy}"
    );
    drop(engine);
    support::assert_none_left(&accepted.instance).await;

    // A fixed release matches nothing and serves; its wall differs.
    let fixed = reporting_runc("1.3.6", "advisory");
    let (engine, _) = start(&fixed).await;
    let w = engine.describe().wall.unwrap();
    assert!(w.advisories.is_empty(), "{:?}", w.advisories);
    assert_ne!(w.identity(), wall.identity());
    let r = run(&engine, js("console.log(2)")).await;
    assert_eq!(
        plimsoll_core::wall::identity_in(&r.record.as_ref().unwrap().policy),
        w.identity()
    );
    drop(engine);
    support::assert_none_left(&fixed.instance).await;
}

/// The kernel tier's side: .ci/setup-host.sh registers the machine's runsc,
/// reporting a gVisor build from before CVE-2018-16359's fix (a hole in the
/// Sentry's own seccomp filter, which every sandbox relies on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gvisor_build_with_a_known_escape_is_refused_until_its_advisory_is_accepted() {
    let mut affected = config(DockerRuntime::Runsc, "advisory");
    affected.provider.edit(|d: &mut DockerSettings| {
        d.runtime_name = "plimsoll-runsc-20180801.0".into();
    });
    let e = refused(&affected).await;
    assert!(e.contains("CVE-2018-16359"), "{e}");
    assert!(e.contains("exposed (fresh, session, exec)"), "{e}");
    assert!(e.contains("SANDBOX_ACCEPT_ADVISORIES"), "{e}");
    support::assert_none_left(&affected.instance).await;

    // Accepted by name: the tier is still proven by behaviour (it is gVisor),
    // and Describe and every record say what was accepted.
    let mut accepted = affected.clone();
    accepted.accepted_advisories = vec!["CVE-2018-16359".into()];
    let (engine, _) = start(&accepted).await;
    let d = engine.describe();
    assert_eq!(d.isolation, "kernel");
    let wall = d.wall.clone().unwrap();
    let f = wall
        .advisories
        .iter()
        .find(|f| f.id == "CVE-2018-16359")
        .unwrap();
    assert!(f.exposed && f.accepted, "{f:?}");
    let r = run(&engine, js("console.log(1)")).await;
    let policy = &r.record.as_ref().unwrap().policy;
    assert!(
        policy.ends_with(&format!(
            ";wall={};accepted=CVE-2018-16359",
            wall.identity()
        )),
        "{policy}"
    );
    drop(engine);
    support::assert_none_left(&accepted.instance).await;

    // The machine's own runsc carries that fix: it serves unaccepted, its
    // matches (none exposed as plimsoll uses it) flagged, its wall another.
    let fixed = config(DockerRuntime::Runsc, "advisory");
    let (engine, _) = start(&fixed).await;
    let w = engine.describe().wall.unwrap();
    assert!(
        w.advisories.iter().all(|f| !f.exposed && !f.accepted),
        "{:?}",
        w.advisories
    );
    assert!(w.advisories.iter().all(|f| f.id != "CVE-2018-16359"));
    assert_ne!(w.identity(), wall.identity());
    let r = run(&engine, js("console.log(2)")).await;
    assert_eq!(
        plimsoll_core::wall::identity_in(&r.record.as_ref().unwrap().policy),
        w.identity()
    );
    drop(engine);
    support::assert_none_left(&fixed.instance).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projects_run_node_and_python_steps_and_collect_artifacts() {
    for rt in RUNTIMES {
        let config = config(rt, "project");
        let (engine, _) = start(&config).await;
        let r = run_project(
            &engine,
            project(
                &[
                    ("app.js", "require('fs').writeFileSync('out/js.txt', String(6*7)); console.log('node ok')"),
                    ("lib/calc.py", "def area(r):\n    return round(3.14159 * r * r, 2)\n"),
                    ("main.py", "import sys\nsys.path.insert(0, 'lib')\nfrom calc import area\nopen('out/py.txt','w').write(str(area(2)))\nprint('python', sys.version_info[:2] >= (3, 11))\nprint('warn', file=sys.stderr)\n"),
                ],
                // Not `ls`: coreutils 9's statx calls fail under Debian's 2022 runsc.
                &["mkdir out && id -u && pwd", "node app.js", "python3 main.py", "find out -type f | sort"],
                &["out/js.txt", "out/py.txt", "missing.txt"],
            ),
        )
        .await;
        assert_eq!(r.outcome, ProjectOutcome::Completed, "{}", r.outcome_detail);
        assert_eq!(r.steps.len(), 4);
        assert_eq!(text(&r.steps[0].stdout), "61000\n/work\n");
        assert_eq!(text(&r.steps[1].stdout), "node ok\n");
        assert_eq!(text(&r.steps[2].stdout), "python True\n");
        assert_eq!(text(&r.steps[2].stderr), "warn\n");
        assert_eq!(text(&r.steps[3].stdout), "out/js.txt\nout/py.txt\n");
        assert!(r.steps.iter().all(|s| s.exit_code == 0 && !s.timed_out));
        let arts: Vec<(String, String)> = r
            .artifacts
            .iter()
            .map(|a| (a.path.clone(), text(&a.content)))
            .collect();
        assert_eq!(
            arts,
            vec![
                ("out/js.txt".to_string(), "42".to_string()),
                ("out/py.txt".to_string(), "12.57".to_string())
            ]
        );
        assert!(!r.artifacts_truncated);
        assert!(
            r.outcome_detail.contains("missing.txt (missing)"),
            "{}",
            r.outcome_detail
        );

        // The first failure stops the run; artifacts are still collected.
        let r = run_project(
            &engine,
            project(
                &[],
                &[
                    "echo partial > a.txt",
                    "python3 -c 'raise SystemExit(7)'",
                    "echo never",
                ],
                &["a.txt"],
            ),
        )
        .await;
        assert_eq!(r.outcome, ProjectOutcome::Completed);
        assert_eq!(r.steps.len(), 2);
        assert_eq!(r.steps[1].exit_code, 7);
        assert_eq!(r.outcome_detail, "step 2 exited with code 7");
        assert_eq!(r.artifacts[0].content, b"partial\n");

        // A step past the deadline: 124, timed out, later steps never run.
        let mut req = project(&[], &["echo start; sleep 30", "echo never"], &[]);
        req.envelope.timeout_ms = 2000;
        let t = Instant::now();
        let r = run_project(&engine, req).await;
        assert_eq!(r.outcome, ProjectOutcome::TimedOut);
        assert_eq!(r.steps.len(), 1);
        assert_eq!((r.steps[0].exit_code, r.steps[0].timed_out), (124, true));
        assert_eq!(r.steps[0].stdout, b"start\n");
        assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());

        // A step ends with its own process, even when a child it left in the
        // background holds its output open; the child lives on for later steps.
        let t = Instant::now();
        let r = run_project(
            &engine,
            project(
                &[],
                &[
                    "(sleep 20; echo late) & echo started",
                    "sleep 0.2; echo second",
                    "exit 4",
                ],
                &[],
            ),
        )
        .await;
        assert_eq!(r.steps.len(), 3);
        assert_eq!(text(&r.steps[0].stdout), "started\n");
        assert_eq!((r.steps[0].exit_code, r.steps[0].timed_out), (0, false));
        assert_eq!(text(&r.steps[1].stdout), "second\n");
        assert_eq!(r.steps[2].exit_code, 4);
        assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());

        // Artifacts over 8 MiB are dropped from the end and flagged.
        let r = run_project(
            &engine,
            project(
                &[],
                &["head -c 5000000 /dev/zero > a && head -c 5000000 /dev/zero > b && echo small > c"],
                &["a", "b", "c"],
            ),
        )
        .await;
        assert_eq!(r.artifacts.len(), 1);
        assert_eq!(r.artifacts[0].content.len(), 5_000_000);
        assert!(r.artifacts_truncated);
        support::assert_none_left(&config.instance).await;
    }
}

/// Waits until a container of `instance` is running; returns its name.
async fn wait_running(instance: &str) -> String {
    let t = Instant::now();
    loop {
        let filters = HashMap::from([
            ("label", vec![format!("io.plimsoll.instance={instance}")]),
            ("status", vec!["running".to_string()]),
        ]);
        let opts = bollard::query_parameters::ListContainersOptionsBuilder::new()
            .filters(&filters)
            .build();
        let list = support::docker().list_containers(Some(opts)).await.unwrap();
        if let Some(name) = list
            .into_iter()
            .filter(|c| {
                c.labels
                    .as_ref()
                    .and_then(|l| l.get("io.plimsoll.role"))
                    .map(String::as_str)
                    != Some("proof")
            })
            .find_map(|c| c.names.and_then(|n| n.into_iter().next()))
        {
            return name.trim_start_matches('/').to_owned();
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no running container for {instance}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_inspect_of_a_running_run_shows_every_lockdown_setting() {
    let profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(seccomp_profile()).unwrap()).unwrap();
    for rt in RUNTIMES {
        let config = config(rt, "inspect");
        let (engine, _) = start(&config).await;
        let d = engine.describe();
        for (role, req, user, work) in [
            (
                "snippet",
                js("setTimeout(() => console.log('done'), 4000)"),
                "61000:61000",
                false,
            ),
            (
                "project",
                project(&[], &["sleep 4; echo done"], &[]),
                "61001:61001",
                true,
            ),
        ] {
            let engine2 = engine.clone();
            let task = tokio::spawn(async move {
                engine2
                    .run(&Caller::anonymous(), req, CancellationToken::new())
                    .await
            });
            let name = wait_running(&config.instance).await;
            let i = support::docker()
                .inspect_container(&name, None)
                .await
                .unwrap();
            let c = i.config.clone().unwrap();
            let h = i.host_config.clone().unwrap();
            assert!(name.starts_with("plimsoll-") && name.len() == 25, "{name}");
            assert!(
                name["plimsoll-".len()..]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit())
            );
            assert_eq!(i.state.as_ref().unwrap().running, Some(true));
            // The exact image ID inspected at startup, not a tag.
            let env = if work {
                &d.project_environment
            } else {
                &d.javascript_environment
            };
            let id = env
                .as_ref()
                .unwrap()
                .identity
                .trim_start_matches("docker-image:")
                .to_owned();
            assert_eq!(c.image.as_deref(), Some(id.as_str()));
            assert_eq!(i.image.as_deref(), Some(id.as_str()));
            assert_eq!(h.runtime.as_deref(), Some(rt.as_str()));
            assert_eq!(h.readonly_rootfs, Some(true));
            let tmpfs = h.tmpfs.clone().unwrap();
            assert_eq!(tmpfs["/tmp"], "rw,noexec,nosuid,nodev,size=16m");
            assert_eq!(
                tmpfs["/dev/shm"],
                "rw,noexec,nosuid,nodev,size=16m,mode=1777"
            );
            assert_eq!(tmpfs["/dev/mqueue"], "ro,noexec,nosuid,nodev,size=4k");
            if work {
                assert_eq!(tmpfs["/work"], "rw,noexec,nosuid,nodev,size=128m,mode=1777");
            } else {
                assert!(!tmpfs.contains_key("/work"));
            }
            assert_eq!(h.network_mode.as_deref(), Some("none"));
            assert_eq!(c.network_disabled, Some(true));
            assert_eq!(h.cap_drop, Some(vec!["ALL".to_string()]));
            assert!(h.cap_add.unwrap_or_default().is_empty());
            assert_eq!(h.privileged, Some(false));
            let sec = h.security_opt.clone().unwrap();
            assert!(
                sec.contains(&"no-new-privileges:true".to_string()),
                "{sec:?}"
            );
            let seccomp: Vec<&String> = sec.iter().filter(|s| s.starts_with("seccomp=")).collect();
            // The shipped profile by default, under both runtimes. gVisor
            // (--oci-seccomp) gets it with clone3 left to the Sentry, which
            // answers ENOSYS itself (it ignores a rule's errnoRet); every
            // guest process there also loads the profile unchanged.
            assert_eq!(seccomp.len(), 1, "{sec:?}");
            let sent: serde_json::Value =
                serde_json::from_str(&seccomp[0]["seccomp=".len()..]).unwrap();
            let mut want = profile.clone();
            if rt == DockerRuntime::Runsc {
                let rules = want["syscalls"].as_array_mut().unwrap();
                for r in rules.iter_mut() {
                    if r["action"] == "SCMP_ACT_ERRNO" {
                        r["names"].as_array_mut().unwrap().retain(|n| n != "clone3");
                    }
                }
                rules.push(serde_json::json!({"names": ["clone3"], "action": "SCMP_ACT_ALLOW"}));
            }
            assert_eq!(sent, want, "the inline profile is the shipped one");
            assert!(!sec.iter().any(|s| s.contains("unconfined")));
            assert_eq!(c.user.as_deref(), Some(user));
            assert_eq!(h.memory, Some(256 << 20));
            assert_eq!(h.memory_swap, h.memory);
            assert_eq!(h.nano_cpus, Some(1_000_000_000));
            assert_eq!(h.pids_limit, Some(256));
            let ulimits: Vec<(String, i64, i64)> = h
                .ulimits
                .unwrap()
                .into_iter()
                .map(|u| (u.name.unwrap(), u.soft.unwrap(), u.hard.unwrap()))
                .collect();
            assert!(ulimits.contains(&("core".into(), 0, 0)));
            assert!(ulimits.contains(&("nofile".into(), 4096, 4096)));
            assert_eq!(h.ipc_mode.as_deref(), Some("private"));
            assert_eq!(h.log_config.unwrap().typ.as_deref(), Some("none"));
            assert_eq!(h.init, Some(true));
            assert_eq!(h.oom_score_adj, Some(1000));
            assert!(
                h.binds.unwrap_or_default().is_empty(),
                "no host mounts without a grant"
            );
            assert!(h.pid_mode.unwrap_or_default().is_empty());
            assert!(h.userns_mode.unwrap_or_default().is_empty());
            assert!(h.devices.unwrap_or_default().is_empty());
            assert_eq!(c.healthcheck.unwrap().test, Some(vec!["NONE".to_string()]));
            let labels = c.labels.unwrap();
            assert_eq!(labels["io.plimsoll.instance"], config.instance);
            assert_eq!(labels["io.plimsoll.role"], role);
            let expires: u64 = labels["io.plimsoll.expires"].parse().unwrap();
            assert!(
                expires > now_unix() && expires < now_unix() + 200,
                "{expires}"
            );
            // Under runc the container's first process is readable from the host:
            // no capabilities, no_new_privs, a seccomp filter.
            if rt == DockerRuntime::Runc {
                let pid = i.state.unwrap().pid.unwrap();
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
                for want in [
                    "CapEff:\t0000000000000000",
                    "CapPrm:\t0000000000000000",
                    "CapBnd:\t0000000000000000",
                    "NoNewPrivs:\t1",
                    "Seccomp:\t2",
                ] {
                    assert!(status.contains(want), "{want} missing from {status}");
                }
            }
            let response = task.await.unwrap().unwrap();
            match response.output.unwrap() {
                Output::JavaScript(r) => assert_eq!(r.stdout, b"done\n"),
                Output::Project(r) => assert_eq!(r.steps[0].stdout, b"done\n"),
                other => panic!("{other:?}"),
            }
        }
        support::assert_none_left(&config.instance).await;
    }
}

fn build_image(tag: &str, dockerfile: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("docker")
        .args(["build", "-q", "-t", tag, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dockerfile.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "docker build {tag}");
}

fn docker_cli(args: &[&str]) {
    let s = std::process::Command::new("docker")
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(s.success(), "docker {args:?}");
}

async fn refused(config: &Config) -> String {
    let provider = Arc::new(support::docker_provider(config).unwrap());
    match Engine::with_provider(provider, config).await {
        Ok(_) => panic!("the engine started"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_refuses_bad_images_runtimes_and_remote_daemons() {
    build_image(
        "plimsoll/test-volume:latest",
        "FROM plimsoll/snippet:latest\nVOLUME /data\n",
    );
    build_image(
        "plimsoll/test-ldpreload:latest",
        "FROM plimsoll/snippet:latest\nENV LD_PRELOAD=/tmp/evil.so\n",
    );
    for rt in RUNTIMES {
        let mut c = config(rt, "refuse");
        c.provider
            .edit(|d: &mut DockerSettings| d.image = "plimsoll/does-not-exist:latest".into());
        let e = refused(&c).await;
        assert!(
            e.contains("plimsoll/does-not-exist:latest is not present"),
            "{e}"
        );

        let mut c = config(rt, "refuse");
        c.provider
            .edit(|d: &mut DockerSettings| d.project_image = "plimsoll/test-volume:latest".into());
        let e = refused(&c).await;
        assert!(e.contains("declares VOLUME /data"), "{e}");

        let mut c = config(rt, "refuse");
        c.provider
            .edit(|d: &mut DockerSettings| d.image = "plimsoll/test-ldpreload:latest".into());
        let e = refused(&c).await;
        assert!(e.contains("loader variable LD_PRELOAD"), "{e}");

        // A remote daemon is refused before anything is contacted.
        for host in ["tcp://127.0.0.1:2375", "ssh://user@build-box"] {
            let mut c = config(rt, "refuse");
            c.provider
                .edit(|d: &mut DockerSettings| d.docker_host = Some(host.into()));
            let e = support::docker_provider(&c).unwrap_err();
            assert_eq!(e.variable, "DOCKER_HOST");
            assert!(e.message.contains("remote docker daemon"), "{e}");
        }
        assert!(
            support::containers_of(&config(rt, "refuse").instance)
                .await
                .is_empty()
        );
    }
    // runsc selected but not registered under that name: no kernel tier.
    let mut c = config(DockerRuntime::Runsc, "refuse");
    c.provider
        .edit(|d: &mut DockerSettings| d.runtime_name = "runsc-not-registered".into());
    let e = refused(&c).await;
    assert!(
        e.contains("no runtime registered as \"runsc-not-registered\""),
        "{e}"
    );
    // A registration that does not run a program named runsc paints no kernel tier.
    let mut c = config(DockerRuntime::Runsc, "refuse");
    c.provider
        .edit(|d: &mut DockerSettings| d.runtime_name = "runc".into());
    let e = refused(&c).await;
    assert!(e.contains("not a program named runsc"), "{e}");
    // The same refusals through the environment, as the daemon reads it.
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let get = env(&[
        ("SANDBOX_PROVIDER", "docker"),
        ("DOCKER_HOST", "tcp://10.1.2.3:2376"),
    ]);
    let c = Config::from_env(&plimsoll_core::config::Env::new(&get)).unwrap();
    match Engine::start(&c).await {
        Err(plimsoll_core::engine::StartError::Config(e)) => assert_eq!(e.variable, "DOCKER_HOST"),
        other => panic!("{other:?}"),
    }
    let get = env(&[
        ("SANDBOX_PROVIDER", "docker"),
        ("SANDBOX_DOCKER_RUNTIME", "kata"),
    ]);
    assert_eq!(
        Config::from_env(&plimsoll_core::config::Env::new(&get))
            .unwrap_err()
            .variable,
        "SANDBOX_DOCKER_RUNTIME"
    );
    docker_cli(&[
        "image",
        "rm",
        "plimsoll/test-volume:latest",
        "plimsoll/test-ldpreload:latest",
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repointed_tag_makes_the_daemon_unready_and_refuses_runs() {
    for rt in RUNTIMES {
        let tag = format!("plimsoll/test-repoint:{}", rt.as_str());
        docker_cli(&["tag", "plimsoll/snippet:latest", &tag]);
        let mut c = config(rt, "repoint");
        c.provider
            .edit(|d: &mut DockerSettings| d.image = tag.clone());
        let (engine, _) = start(&c).await;
        run(&engine, js("console.log(1)")).await;
        // Point the tag at another image (the project image also runs node).
        docker_cli(&["tag", "plimsoll/project:latest", &tag]);
        tokio::time::sleep(Duration::from_millis(5200)).await;
        let e = engine.ready().await.unwrap_err();
        assert!(e.message().contains("not the sha256:"), "{e}");
        let e = engine
            .run(
                &Caller::anonymous(),
                js("console.log(1)"),
                CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.not_dispatched(), Some(Refusal::Environment), "{e}");
        assert_eq!(e.code(), ErrorCode::Infrastructure);
        // Pointed back at the proven image, it serves again.
        docker_cli(&["tag", "plimsoll/snippet:latest", &tag]);
        tokio::time::sleep(Duration::from_millis(5200)).await;
        engine.ready().await.unwrap();
        run(&engine, js("console.log(1)")).await;
        docker_cli(&["image", "rm", &tag]);
        support::assert_none_left(&c.instance).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_image_is_an_infrastructure_error_not_a_result() {
    for rt in RUNTIMES {
        let tag = format!("plimsoll/test-vanish:{}", rt.as_str());
        build_image(
            &tag,
            &format!(
                "FROM plimsoll/snippet:latest\nLABEL io.plimsoll.test=\"vanish-{}\"\n",
                rt.as_str()
            ),
        );
        let mut c = config(rt, "vanish");
        c.provider
            .edit(|d: &mut DockerSettings| d.image = tag.clone());
        let (engine, _) = start(&c).await;
        run(&engine, js("console.log(1)")).await;
        docker_cli(&["image", "rm", "-f", &tag]);
        tokio::time::sleep(Duration::from_millis(5200)).await;
        assert!(engine.ready().await.is_err());
        let e = engine
            .run(
                &Caller::anonymous(),
                js("console.log(1)"),
                CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Infrastructure, "{e}");
        assert!(e.message().contains("not present"), "{e}");
        support::assert_none_left(&c.instance).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_code_is_contained_and_the_engine_keeps_serving() {
    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for rt in RUNTIMES {
        let config = config(rt, "hostile");
        let (engine, _) = start(&config).await;
        let with_timeout = |mut r: Request, ms: i32| {
            r.envelope.timeout_ms = ms;
            r
        };

        // Fork bomb: contained by the process limit and the deadline.
        let t = Instant::now();
        let r = run_project(
            &engine,
            with_timeout(
                project(&[], &["f() { f | f & }; f; sleep 30", "echo never"], &["x"]),
                8000,
            ),
        )
        .await;
        eprintln!(
            "[{}] fork bomb: {} ({}) in {:?}",
            rt.as_str(),
            r.outcome.as_str(),
            r.outcome_detail,
            t.elapsed()
        );
        // Depending on timing the shell fails to fork (exit 2), the deadline
        // ends it, or (runsc) the sandbox goes down with it: never exit 0.
        assert!(
            matches!(
                r.outcome,
                ProjectOutcome::TimedOut | ProjectOutcome::RunnerFailed | ProjectOutcome::Completed
            ),
            "{:?}: {}",
            r.outcome,
            r.outcome_detail
        );
        assert_eq!(r.steps.len(), 1);
        assert_ne!(r.steps[0].exit_code, 0);
        assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());

        // Memory bombs: killed at the memory limit (swap off), not timed out.
        let r = run_js(
            &engine,
            "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))",
        )
        .await;
        eprintln!("[{}] node memory bomb: exit {}", rt.as_str(), r.exit_code);
        assert!(r.exit_code != 0 && !r.timed_out, "{r:?}");
        let r = run_project(
            &engine,
            project(
                &[],
                &["python3 -c 'x = [b\"x\" * (1 << 20) for _ in range(1024)]'; echo \"rc=$?\""],
                &[],
            ),
        )
        .await;
        let out = text(&r.steps[0].stdout);
        eprintln!(
            "[{}] python memory bomb: {out:?} {}",
            rt.as_str(),
            r.outcome_detail
        );
        // Under runsc the memory limit can take the whole sandbox with it.
        assert!(
            (out.starts_with("rc=") && out != "rc=0\n")
                || (r.outcome == ProjectOutcome::RunnerFailed
                    && r.outcome_detail.contains("ended with the sandbox")),
            "{out:?} {r:?}"
        );
        assert!(!r.steps[0].timed_out);

        // Disk fill: each tmpfs stops at its size.
        let r = run_project(
            &engine,
            project(
                &[],
                &["for d in /tmp /dev/shm /work; do head -c 300000000 /dev/zero > $d/fill; echo \"$d rc=$? $(wc -c < $d/fill)\"; rm -f $d/fill; done"],
                &[],
            ),
        )
        .await;
        assert_eq!(
            text(&r.steps[0].stdout),
            "/tmp rc=1 16777216\n/dev/shm rc=1 16777216\n/work rc=1 134217728\n",
            "{}",
            text(&r.steps[0].stderr)
        );

        // Output floods: kept to the cap, flagged, nothing written into them.
        let r = run_js(
            &engine,
            "const s = 'x'.repeat(65536); for (let i = 0; i < 40; i++) { process.stdout.write(s); process.stderr.write(s) }",
        )
        .await;
        assert_eq!(
            (r.stdout.len(), r.stderr.len(), r.exit_code),
            (65536, 65536, 0)
        );
        assert!(r.stdout_truncated && r.stderr_truncated);
        assert!(r.stdout.iter().all(|b| *b == b'x'));
        let r = run_project(
            &engine,
            project(
                &[],
                &["head -c 3000000 /dev/zero | tr '\\0' y", "echo next"],
                &[],
            ),
        )
        .await;
        assert_eq!(r.steps[0].stdout.len(), 1 << 20);
        assert!(r.steps[0].stdout_truncated && !r.steps[0].stderr_truncated);
        assert_eq!(r.steps[1].stdout, b"next\n");

        // A snippet that closes its own output is still judged by docker's
        // record of its process: here, by the deadline.
        let resp = run(
            &engine,
            with_timeout(
                js("console.log('bye'); const fs = require('fs'); fs.closeSync(1); fs.closeSync(2); setInterval(() => {}, 1000)"),
                2000,
            ),
        )
        .await;
        let Some(Output::JavaScript(r)) = resp.output else {
            panic!()
        };
        assert_eq!(
            (r.exit_code, r.timed_out, r.stdout.as_slice()),
            (124, true, &b"bye\n"[..])
        );

        // Writes outside the tmpfs mounts, and programs run from them.
        let r = run_project(
            &engine,
            project(
                &[],
                &[
                    "for p in / /etc /usr /bin /home /var /root /run /opt /srv /mnt /sys /proc /dev; do (: > $p/.x) 2>/dev/null && echo \"WROTE $p\"; done; echo end",
                    "for d in /tmp /work /dev/shm; do cp /bin/true $d/t && chmod +x $d/t && $d/t 2>/dev/null && echo \"RAN $d\"; done; echo end",
                ],
                &[],
            ),
        )
        .await;
        assert_eq!(text(&r.steps[0].stdout), "end\n");
        assert_eq!(
            text(&r.steps[1].stdout),
            "end\n",
            "{}",
            text(&r.steps[1].stderr)
        );
        let r = run_js(&engine, "require('fs').writeFileSync('/etc/x', 'y')").await;
        assert_eq!(r.exit_code, 1);
        assert!(
            text(&r.stderr).contains("EROFS") || text(&r.stderr).contains("EACCES"),
            "{}",
            text(&r.stderr)
        );

        // Host information through /proc and /sys.
        let r = run_project(
            &engine,
            project(
                &[],
                &[concat!(
                    "cat /proc/1/environ >/dev/null 2>&1 && echo 'READ keeper environ'; ",
                    "python3 -c 'import ctypes; exit(ctypes.CDLL(None).ptrace(16, 1, 0, 0) != 0)' && echo 'TRACED keeper'; ",
                    "kill -9 1 2>/dev/null && echo 'KILLED keeper'; ",
                    "head -c 1 /proc/kcore >/dev/null 2>&1 && echo 'READ kcore'; ",
                    "(echo h > /proc/sysrq-trigger) 2>/dev/null && echo 'WROTE sysrq'; ",
                    "cat /sys/class/dmi/id/product_uuid >/dev/null 2>&1 && echo 'READ dmi'; ",
                    "cat /etc/shadow >/dev/null 2>&1 && echo 'READ shadow'; ",
                    "[ -e /var/run/docker.sock ] || [ -e /run/docker.sock ] && echo 'SEES docker.sock'; ",
                    "[ -n \"$(find /sys/firmware -mindepth 1 2>/dev/null | head -n 1)\" ] && echo 'SEES firmware'; ",
                    "grep -c docker.sock /proc/self/mountinfo; cat /proc/sys/kernel/hostname"
                )],
                &[],
            ),
        )
        .await;
        let out = text(&r.steps[0].stdout);
        let mut lines = out.lines().peekable();
        // Debian's 2022 gVisor lets any uid read another's /proc/<pid>/environ
        // (the keeper's holds only the image's environment); runc does not.
        if rt == DockerRuntime::Runsc && lines.peek() == Some(&"READ keeper environ") {
            lines.next();
        }
        assert_eq!(lines.next(), Some("0"), "{out}");
        let seen_host = lines.next().unwrap();
        assert_ne!(
            seen_host,
            host_name.trim(),
            "the guest sees the host's name"
        );
        assert_eq!(lines.next(), None, "{out}");

        // Network egress: no route out, and no AF_VSOCK (which reaches the
        // outer hypervisor under docker's default profile).
        let r = run_js(
            &engine,
            "const s = require('net').connect(53, '1.1.1.1'); s.on('connect', () => { console.log('CONNECTED'); process.exit(0) }); s.on('error', e => { console.log('refused'); process.exit(0) }); setTimeout(() => { console.log('silent'); process.exit(0) }, 3000)",
        )
        .await;
        assert_eq!(text(&r.stdout), "refused\n");
        let r = run_project(
            &engine,
            project(
                &[("net.py", concat!(
                    "import socket\n",
                    "for fam, addr in ((socket.AF_INET, ('1.1.1.1', 53)), (socket.AF_INET6, ('2606:4700::1111', 53)), (socket.AF_VSOCK, (2, 1234))):\n",
                    "    try:\n",
                    "        s = socket.socket(fam, socket.SOCK_STREAM)\n",
                    "    except OSError as e:\n",
                    "        print('nosocket', int(fam)); continue\n",
                    "    try:\n",
                    "        s.settimeout(2); s.connect(addr); print('CONNECTED', int(fam))\n",
                    "    except OSError as e:\n",
                    "        print('noconnect', int(fam))\n",
                ))],
                &["python3 net.py"],
                &[],
            ),
        )
        .await;
        let out = text(&r.steps[0].stdout);
        assert!(!out.contains("CONNECTED"), "{out}");
        assert!(
            out.contains("nosocket 40\n"),
            "AF_VSOCK must not even open: {out}"
        );
        assert_eq!(
            out, "nosocket 2\nnosocket 10\nnosocket 40\n",
            "the shipped profile allows AF_UNIX only, under runc and inside gVisor"
        );

        // Privilege escalation: no sudo, su fails, setuid(0) fails, no_new_privs.
        let r = run_project(
            &engine,
            project(
                &[],
                &[concat!(
                    "command -v sudo >/dev/null && echo 'HAS sudo'; ",
                    "su -c id root </dev/null >/dev/null 2>&1 && echo 'SU worked'; ",
                    "python3 -c 'import os; os.setuid(0)' 2>/dev/null && echo 'SETUID worked'; ",
                    "for f in $(find / -xdev -perm -4000 -type f 2>/dev/null); do $f --help </dev/null >/dev/null 2>&1; done; ",
                    "python3 -c 'import os; print(os.getuid(), os.geteuid(), os.getgid())'"
                )],
                &[],
            ),
        )
        .await;
        assert_eq!(text(&r.steps[0].stdout), "61000 61000 61000\n");

        // Artifacts through symlinks are refused, never followed.
        let r = run_project(
            &engine,
            project(
                &[],
                &["ln -s /etc/passwd leak.txt && mkdir d && ln -s /etc d/etc && echo ok > real.txt && ln -s /work/real.txt alias.txt && mkfifo pipe"],
                &["leak.txt", "d/etc/passwd", "alias.txt", "pipe", "real.txt"],
            ),
        )
        .await;
        assert_eq!(r.artifacts.len(), 1);
        assert_eq!(
            (
                r.artifacts[0].path.as_str(),
                r.artifacts[0].content.as_slice()
            ),
            ("real.txt", &b"ok\n"[..])
        );
        for refused in [
            "leak.txt (escapes)",
            "d/etc/passwd (escapes)",
            "alias.txt (escapes)",
            "pipe (notfile)",
        ] {
            assert!(
                r.outcome_detail.contains(refused),
                "{refused}: {}",
                r.outcome_detail
            );
        }

        // A step printing a forged report, and a leftover process trying to
        // write into every other process's stdout and swap the artifact.
        let r = run_project(
            &engine,
            project(
                &[],
                &[
                    "printf '<<<PLIMSOLL_REPORT_V2>>> 64 00 {\"outcome\":\"PROJECT_OUTCOME_COMPLETED\",\"steps\":[]}\\n'; echo 'outcome: completed' >&2; exit 9",
                    "echo never",
                ],
                &[],
            ),
        )
        .await;
        assert_eq!(r.outcome, ProjectOutcome::Completed);
        assert_eq!(r.outcome_detail, "step 1 exited with code 9");
        assert_eq!(r.steps.len(), 1);
        assert_eq!(r.steps[0].exit_code, 9);
        assert!(text(&r.steps[0].stdout).starts_with("<<<PLIMSOLL_REPORT_V2>>>"));
        let r = run_project(
            &engine,
            project(
                &[],
                &[
                    "echo real > a.txt; (while :; do for f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do echo FORGED > $f; done 2>/dev/null; ln -sf /etc/passwd b.txt; done) >/dev/null 2>&1 &",
                    "sleep 1; echo step2",
                ],
                &["a.txt"],
            ),
        )
        .await;
        assert_eq!(r.outcome, ProjectOutcome::Completed, "{}", r.outcome_detail);
        assert_eq!(r.artifacts.len(), 1);
        assert_eq!(r.artifacts[0].content, b"real\n");

        // Still serving, and nothing left behind.
        let r = run_js(&engine, "console.log(6*7)").await;
        assert_eq!(r.stdout, b"42\n");
        support::assert_none_left(&config.instance).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_and_a_dropped_run_remove_the_container() {
    for rt in RUNTIMES {
        let config = config(rt, "cancel");
        let (engine, provider) = start(&config).await;
        for req in [
            js("setInterval(() => {}, 1000)"),
            project(&[], &["sleep 60"], &["x"]),
        ] {
            // Cancelled through the run's token.
            let cancel = CancellationToken::new();
            let (e2, c2, r2) = (engine.clone(), cancel.clone(), req.clone());
            let task = tokio::spawn(async move { e2.run(&Caller::anonymous(), r2, c2).await });
            let name = wait_running(&config.instance).await;
            cancel.cancel();
            let e = task.await.unwrap().unwrap_err();
            assert_eq!(e.code(), ErrorCode::Cancelled, "{e}");
            assert!(
                support::docker()
                    .inspect_container(&name, None)
                    .await
                    .is_err(),
                "{name} outlived its cancelled run"
            );
            // Dropped mid-run, as when a client disconnects.
            let e2 = engine.clone();
            let task = tokio::spawn(async move {
                e2.run(&Caller::anonymous(), req, CancellationToken::new())
                    .await
            });
            let name = wait_running(&config.instance).await;
            task.abort();
            assert!(task.await.unwrap_err().is_cancelled());
            support::assert_none_left(&config.instance).await;
            assert!(
                support::docker()
                    .inspect_container(&name, None)
                    .await
                    .is_err()
            );
            // The run's guard forgets the container once docker's remove has
            // answered, which on a loaded machine can come after the listing
            // above stops showing it: the same 20 s as for the containers.
            let t = Instant::now();
            while provider.live_containers() != 0 && t.elapsed() < Duration::from_secs(20) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(provider.live_containers(), 0);
        }
    }
}

async fn plain_container(rt: DockerRuntime, instance: &str, expires: u64) -> String {
    use bollard::models::{ContainerCreateBody, HostConfig};
    let name = format!("plimsoll-test-{}", hex::encode(rand::random::<[u8; 6]>()));
    let body = ContainerCreateBody {
        image: Some("plimsoll/snippet:latest".into()),
        entrypoint: Some(vec!["sleep".into(), "120".into()]),
        labels: Some(HashMap::from([
            ("io.plimsoll.instance".to_string(), instance.to_string()),
            ("io.plimsoll.expires".to_string(), expires.to_string()),
        ])),
        host_config: Some(HostConfig {
            runtime: Some(rt.as_str().into()),
            network_mode: Some("none".into()),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    };
    let opts = bollard::query_parameters::CreateContainerOptionsBuilder::new()
        .name(&name)
        .build();
    support::docker()
        .create_container(Some(opts), body)
        .await
        .unwrap();
    support::docker()
        .start_container(&name, None)
        .await
        .unwrap();
    name
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_removes_own_leftovers_at_once_and_others_after_expiry() {
    for rt in RUNTIMES {
        let config = config(rt, "reconcile");
        let provider = support::docker_provider(&config).unwrap();
        let foreign = format!(
            "plimsoll-test:foreign-{}",
            hex::encode(rand::random::<[u8; 4]>())
        );
        let now = now_unix();
        let mine = plain_container(rt, &config.instance, now + 3600).await;
        let stale = plain_container(rt, &foreign, now - 301).await;
        let grace = plain_container(rt, &foreign, now - 200).await;
        let fresh = plain_container(rt, &foreign, now + 600).await;
        // At least this instance's own; the expired foreign one may already
        // be gone, to any other engine's startup reconcile on this dockerd.
        assert!(provider.reconcile_orphans().await.unwrap() >= 1);
        let exists =
            |n: String| async move { support::docker().inspect_container(&n, None).await.is_ok() };
        assert!(!exists(mine).await, "this instance's leftover stays");
        assert!(
            !exists(stale).await,
            "another instance's expired container stays"
        );
        assert!(
            exists(grace.clone()).await,
            "removed inside the 5-minute grace"
        );
        assert!(
            exists(fresh.clone()).await,
            "removed an unexpired foreign container"
        );
        for n in [grace, fresh] {
            support::docker()
                .remove_container(
                    &n,
                    Some(
                        bollard::query_parameters::RemoveContainerOptionsBuilder::new()
                            .force(true)
                            .build(),
                    ),
                )
                .await
                .unwrap();
        }
    }
}

/// A Unix-socket proxy to the real docker socket that can be cut, so a test
/// can make "the docker daemon" vanish mid-run without touching dockerd.
struct Proxy {
    dir: tempfile::TempDir,
    cut: CancellationToken,
}

impl Proxy {
    fn start() -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::UnixListener::bind(dir.path().join("docker.sock")).unwrap();
        let cut = CancellationToken::new();
        let stop = cut.clone();
        tokio::spawn(async move {
            loop {
                let (mut inbound, _) = tokio::select! {
                    a = listener.accept() => a.unwrap(),
                    _ = stop.cancelled() => return,
                };
                let stop = stop.clone();
                tokio::spawn(async move {
                    let mut outbound = tokio::net::UnixStream::connect("/var/run/docker.sock")
                        .await
                        .unwrap();
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = stop.cancelled() => {}
                    }
                });
            }
        });
        Proxy { dir, cut }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.dir.path().join("docker.sock").display())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_vanishing_mid_run_is_an_infrastructure_error() {
    for rt in RUNTIMES {
        for req in [
            js("setTimeout(() => console.log('late'), 5000)"),
            project(&[], &["sleep 5; echo late"], &["x"]),
        ] {
            let proxy = Proxy::start();
            let mut config = config(rt, "vanish-daemon");
            config
                .provider
                .edit(|d: &mut DockerSettings| d.docker_host = Some(proxy.host()));
            let (engine, _) = start(&config).await;
            let e2 = engine.clone();
            let task = tokio::spawn(async move {
                e2.run(&Caller::anonymous(), req, CancellationToken::new())
                    .await
            });
            wait_running(&config.instance).await;
            proxy.cut.cancel();
            let e = task.await.unwrap().unwrap_err();
            assert_eq!(e.code(), ErrorCode::Infrastructure, "{e}");
            assert_eq!(e.not_dispatched(), None);
            // The daemon is back (for a fresh provider of this instance): the
            // reconcile removes what the vanished run left.
            let mut again = config.clone();
            again
                .provider
                .edit(|d: &mut DockerSettings| d.docker_host = None);
            support::docker_provider(&again)
                .unwrap()
                .reconcile_orphans()
                .await
                .unwrap();
            support::assert_none_left(&config.instance).await;
        }
    }
}

/// Waits (up to 90 s) until the provider's snippet pool has `n` members waiting.
async fn wait_snippet_pool(p: &DockerProvider, n: u64) {
    let t = Instant::now();
    while p.snippet_pool().unwrap().ready < n {
        assert!(
            t.elapsed() < Duration::from_secs(90),
            "the snippet pool did not fill: {:?}",
            p.snippet_pool()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Checks a run of the pool test's snippet: its container saw nothing of an
/// earlier run, and its hostname (the container's id) was never seen before;
/// adds it to `hosts`.
fn served(resp: &RunResponse, hosts: &mut std::collections::BTreeSet<String>, label: &str) {
    let Some(Output::JavaScript(r)) = &resp.output else {
        panic!("{label}: not a snippet result");
    };
    let out = text(&r.stdout);
    let (host, seen) = out.trim().split_once(' ').unwrap();
    assert_eq!(seen, "fresh", "{label}: {out}");
    assert!(
        hosts.insert(host.to_owned()),
        "{label}: {host} served two runs"
    );
}

/// `SANDBOX_SNIPPET_POOL`: members wait behind every wall of a fresh run,
/// each serves exactly one run (its hostname, the container's id, is never
/// seen twice, and nothing a run left is seen by the next), is removed after
/// it, and the record says the run came from the pool; the pool refills.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snippet_pool_member_serves_exactly_one_run_behind_the_same_walls() {
    const LEAVE_AND_LOOK: &str = "const fs = require('fs');\
        const seen = fs.existsSync('/tmp/used') ? 'reused' : 'fresh';\
        fs.writeFileSync('/tmp/used', 'x');\
        console.log(require('os').hostname() + ' ' + seen);";
    for rt in RUNTIMES {
        let mut config = config(rt, "snippet-pool");
        config
            .provider
            .edit(|d: &mut DockerSettings| d.snippet_pool = 2);
        let (engine, provider) = start(&config).await;
        wait_snippet_pool(&provider, 2).await;
        // A waiting member: the fresh run's walls, labelled as a member.
        let members = support::labelled("io.plimsoll.pool", "snippet").await;
        let member = members
            .iter()
            .find(|c| c.labels.as_ref().unwrap()["io.plimsoll.instance"] == config.instance)
            .unwrap_or_else(|| panic!("no labelled member: {members:?}"));
        let i = support::docker()
            .inspect_container(member.id.as_deref().unwrap(), None)
            .await
            .unwrap();
        let (c, h) = (i.config.unwrap(), i.host_config.unwrap());
        assert_eq!(i.state.unwrap().running, Some(true));
        assert_eq!(h.runtime.as_deref(), Some(rt.as_str()));
        assert_eq!(h.readonly_rootfs, Some(true));
        assert_eq!(h.network_mode.as_deref(), Some("none"));
        assert_eq!(h.cap_drop, Some(vec!["ALL".to_string()]));
        assert_eq!(h.privileged, Some(false));
        let sec = h.security_opt.unwrap();
        assert!(
            sec.contains(&"no-new-privileges:true".to_string()),
            "{sec:?}"
        );
        assert!(sec.iter().any(|s| s.starts_with("seccomp={")), "{sec:?}");
        assert_eq!(h.memory, Some(256 << 20));
        assert_eq!(h.pids_limit, Some(256));
        assert_eq!(h.init, Some(true));
        assert_eq!(c.user.as_deref(), Some("61000:61000"));
        assert_eq!(c.open_stdin, Some(true));

        let mut hosts = std::collections::BTreeSet::new();
        for n in 0..6 {
            wait_snippet_pool(&provider, 1).await;
            let resp = run(&engine, js(LEAVE_AND_LOOK)).await;
            assert_eq!(resp.phases.as_ref().unwrap().source, "snippet_pool");
            let record = resp.record.as_ref().unwrap();
            assert!(
                record
                    .policy
                    .ends_with(plimsoll_core::record::WARM_POOL_POLICY),
                "[{rt:?}] run {n}: {}",
                record.policy
            );
            served(&resp, &mut hosts, &format!("[{rt:?}] run {n}"));
        }
        // Each served container goes; the pool is back to its size.
        for host in &hosts {
            let t = Instant::now();
            while support::docker()
                .inspect_container(host, None)
                .await
                .is_ok()
            {
                assert!(t.elapsed() < Duration::from_secs(20), "{host} not removed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        wait_snippet_pool(&provider, 2).await;
        // A run that finds the pool empty gets a fresh container, recorded as such.
        let a = engine.clone();
        let b = engine.clone();
        let (ra, rb, rc) = tokio::join!(
            run(&a, js(LEAVE_AND_LOOK)),
            run(&b, js(LEAVE_AND_LOOK)),
            run(&engine, js(LEAVE_AND_LOOK))
        );
        let pooled = [&ra, &rb, &rc]
            .iter()
            .filter(|r| {
                r.record
                    .as_ref()
                    .unwrap()
                    .policy
                    .ends_with(plimsoll_core::record::WARM_POOL_POLICY)
            })
            .count();
        assert!(pooled <= 2, "[{rt:?}] three runs from a pool of two");
        for r in [&ra, &rb, &rc] {
            served(r, &mut hosts, &format!("[{rt:?}] concurrent"));
        }
        engine.shutdown().await;
        support::assert_none_left(&config.instance).await;
    }
}
