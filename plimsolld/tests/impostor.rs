//! The kernel tier is painted by behaviour, not by a file name: runc
//! registered with docker under the name `runsc`, at a path whose last
//! component is `runsc` (a script that drops runsc's own flags and runs
//! runc) with runsc's runtimeArgs, passes every check of the registration
//! and the daemon's configuration, and the
//! daemon still refuses to start on the kernel tier — its startup proof sees
//! the host's kernel and no gVisor in the guest — and `plimsolld --check`
//! reports why. Runs against a private containerd + dockerd
//! (`support/private_docker.rs`); the host's dockerd is only read from.
#![expect(
    clippy::unwrap_used,
    reason = "a test that cannot do its job should fail loudly"
)]

#[path = "support/private_docker.rs"]
#[allow(
    dead_code,
    reason = "this test uses a few of the fault suite's helpers"
)]
mod private_docker;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use private_docker::PrivateDocker;

const BIN: &str = env!("CARGO_BIN_EXE_plimsolld");

/// `plimsolld [args]` on the docker provider, runtime runsc, against
/// `docker`, with nothing else of the caller's environment; its exit
/// status and stderr, within `budget`.
fn plimsolld(docker: &str, args: &[&str], budget: Duration) -> (Option<i32>, String) {
    let mut c = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("SANDBOX_") || k.starts_with("PLIMSOLL_") || k == "DOCKER_HOST" {
            c.env_remove(k);
        }
    }
    let mut child = c
        .args(args)
        .env("SANDBOX_PROVIDER", "docker")
        .env("SANDBOX_DOCKER_RUNTIME", "runsc")
        .env("DOCKER_HOST", docker)
        .env("PLIMSOLL_ADDR", "127.0.0.1:0")
        .env("PLIMSOLL_METRICS_ADDR", "off")
        .env("PLIMSOLL_LOG_FORMAT", "json")
        .env("PLIMSOLL_INSECURE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return (status.code(), text);
        }
        if t.elapsed() > budget {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "plimsolld {args:?} still ran after {budget:?} (it must refuse, not serve): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn runc_registered_as_runsc_is_refused_the_kernel_tier() {
    let mut d = PrivateDocker::start(None);
    let runc = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v runc"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = d.dir.join("impostor");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("runsc");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n# runc, answering to runsc's name and flags\n\
             for a in \"$@\"; do shift; case \"$a\" in --host-uds=*|--network=*|--oci-seccomp) ;; \
             *) set -- \"$@\" \"$a\" ;; esac; done\nexec {} \"$@\"\n",
            runc.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    d.register_runtime(
        "runsc",
        &fake,
        &["--host-uds=open", "--network=none", "--oci-seccomp"],
    );
    // The registration looks right to a name check.
    let info = d
        .cli()
        .args(["info", "--format", "{{json .Runtimes.runsc}}"])
        .output()
        .unwrap();
    let reg = String::from_utf8_lossy(&info.stdout);
    assert!(reg.contains(&format!("{}\"", fake.display())), "{reg}");

    let t = Instant::now();
    let (code, log) = plimsolld(&d.host(), &[], Duration::from_secs(120));
    eprintln!("refused in {:?}", t.elapsed());
    assert_ne!(
        code,
        Some(0),
        "plimsolld served on an impostor runsc: {log}"
    );
    assert!(
        log.contains("runs the guest on the host's kernel") && log.contains("not gVisor"),
        "the refusal must say why: {log}"
    );
    assert!(!log.contains("\"listening\""), "{log}");
    assert!(
        d.plimsoll_containers().is_empty(),
        "the proof left containers"
    );

    let (code, report) = plimsolld(&d.host(), &["--check"], Duration::from_secs(120));
    assert_ne!(code, Some(0), "--check passed an impostor runsc: {report}");
    let proof = report
        .lines()
        .find(|l| l.contains("startup proof") && l.contains("docker"))
        .unwrap_or_else(|| panic!("--check ran no docker startup proof: {report}"));
    assert!(
        proof.starts_with("fail") && proof.contains("not gVisor"),
        "{proof}"
    );
    assert!(
        !report
            .lines()
            .any(|l| l.starts_with("fail") && !l.contains("startup proof")),
        "only the proof may fail: {report}"
    );
}
