use super::*;
use std::collections::HashMap;

#[cfg(feature = "docker")]
fn docker_of(c: &Config) -> &DockerSettings {
    c.provider.get().expect("docker settings")
}

fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let get = move |k: &str| {
        assert!(
            variables().iter().any(|v| v.name == k),
            "{k} is read but not listed in variables()"
        );
        map.get(k).cloned()
    };
    Config::from_env(&Env::new(&get))
}

#[test]
fn defaults_to_disabled() {
    let c = load(&[]).unwrap();
    assert_eq!(c.provider.name(), "disabled");
    assert!(valid_instance(&c.instance));
    assert_eq!(
        load(&[("SANDBOX_PROVIDER", " Disabled ")])
            .unwrap()
            .provider
            .name(),
        "disabled"
    );
}

#[test]
fn strict_errors_name_the_variable() {
    assert_eq!(
        load(&[("SANDBOX_PROVIDER", "magic")]).unwrap_err().variable,
        "SANDBOX_PROVIDER"
    );
    assert_eq!(
        load(&[("SANDBOX_MIN_ISOLATION", "none")])
            .unwrap_err()
            .variable,
        "SANDBOX_MIN_ISOLATION"
    );
    assert_eq!(
        load(&[("SANDBOX_PROVIDER", "wasm"), ("SANDBOX_MEMORY_MB", "-1")])
            .unwrap_err()
            .variable,
        "SANDBOX_MEMORY_MB"
    );
    assert_eq!(
        load(&[("SANDBOX_PROVIDER", "wasm"), ("SANDBOX_CPUS", "NaN")])
            .unwrap_err()
            .variable,
        "SANDBOX_CPUS"
    );
    assert_eq!(
        load(&[("SANDBOX_PIDS", "64")]).unwrap_err().variable,
        "SANDBOX_PIDS"
    );
    assert_eq!(
        load(&[("PLIMSOLL_INSTANCE", "Bad")]).unwrap_err().variable,
        "PLIMSOLL_INSTANCE"
    );
    let get = |k: &str| (k == "X").then(|| "yes".to_string());
    assert!(Env::new(&get).bool("X").is_err());
}

#[test]
fn docker_settings_are_strict() {
    let docker = |extra: &[(&str, &str)]| {
        let mut pairs = vec![("SANDBOX_PROVIDER", "docker")];
        pairs.extend_from_slice(extra);
        load(&pairs)
    };
    let c = docker(&[]).unwrap();
    assert_eq!(docker_of(&c), &DockerSettings::default());
    let e = DockerEnvelope::from_settings(&c.resources, docker_of(&c).runtime).unwrap();
    assert_eq!(
        (e.memory_mb, e.pids, e.work_mb, e.disk_mb()),
        (256, 256, 128, 160)
    );
    assert_eq!(e.cpus, 1.0);

    let c = docker(&[
        ("SANDBOX_DOCKER_RUNTIME", "runsc"),
        ("SANDBOX_DOCKER_IMAGE", "local/snippet@sha256:abc"),
        ("SANDBOX_GUEST_UID", "1000"),
        ("SANDBOX_DISK_MB", "100"),
    ])
    .unwrap();
    assert_eq!(docker_of(&c).runtime, DockerRuntime::Runsc);
    assert_eq!(docker_of(&c).runtime_name, "runsc");
    assert_eq!(docker_of(&c).image, "local/snippet@sha256:abc");
    assert_eq!(docker_of(&c).guest_uid, 1000);
    let e = DockerEnvelope::from_settings(&c.resources, docker_of(&c).runtime).unwrap();
    assert_eq!(e.work_mb, 68);

    // The snippet pool: off by default; its members' memory comes out of
    // the admission budget (and the sessions' pool's too).
    assert_eq!(docker_of(&c).snippet_pool, 0);
    let c = docker(&[
        ("SANDBOX_SNIPPET_POOL", "2"),
        ("SANDBOX_MEMORY_MB", "256"),
        ("SANDBOX_TOTAL_MEMORY_MB", "1024"),
    ])
    .unwrap();
    assert_eq!(docker_of(&c).snippet_pool, 2);
    assert_eq!(c.admission.memory, Some((512, 256)));
    assert_eq!(c.admission.capacity(), 2);
    let c = docker(&[
        ("SANDBOX_MAX_SESSIONS", "2"),
        ("SANDBOX_SESSION_POOL", "1"),
        ("SANDBOX_MEMORY_MB", "256"),
        ("SANDBOX_TOTAL_MEMORY_MB", "1024"),
    ])
    .unwrap();
    assert_eq!(c.admission.memory, Some((768, 256)));
    assert_eq!(
        docker(&[("SANDBOX_SNIPPET_POOL", "64")])
            .unwrap()
            .admission
            .memory,
        None
    );

    let c = docker(&[("SANDBOX_DOCKER_SECCOMP", "images/seccomp.json")]).unwrap();
    assert_eq!(
        docker_of(&c).seccomp,
        SeccompSetting::Profile("images/seccomp.json".into())
    );
    // The shipped profile is the default; weaker ones are asked for by name,
    // under either runtime.
    assert_eq!(docker_of(&c).seccomp.name(), "file");
    assert_eq!(DockerSettings::default().seccomp, SeccompSetting::Shipped);
    for (v, want) in [
        ("plimsoll", SeccompSetting::Shipped),
        ("docker-default", SeccompSetting::DockerDefault),
        ("unconfined", SeccompSetting::Unconfined),
    ] {
        for rt in ["runc", "runsc"] {
            let c = docker(&[
                ("SANDBOX_DOCKER_SECCOMP", v),
                ("SANDBOX_DOCKER_RUNTIME", rt),
            ])
            .unwrap();
            assert_eq!(docker_of(&c).seccomp, want);
            assert_eq!(docker_of(&c).seccomp.name(), v);
        }
    }

    for (pairs, var) in [
        (
            vec![("SANDBOX_DOCKER_RUNTIME", "kata")],
            "SANDBOX_DOCKER_RUNTIME",
        ),
        (
            vec![("SANDBOX_DOCKER_IMAGE", "bad image")],
            "SANDBOX_DOCKER_IMAGE",
        ),
        (
            vec![("SANDBOX_DOCKER_PROJECT_IMAGE", "-x")],
            "SANDBOX_DOCKER_PROJECT_IMAGE",
        ),
        (
            vec![("SANDBOX_DOCKER_SECCOMP", "strict")],
            "SANDBOX_DOCKER_SECCOMP",
        ),
        (vec![("SANDBOX_GUEST_UID", "0")], "SANDBOX_GUEST_UID"),
        (vec![("SANDBOX_GUEST_UID", "60001")], "SANDBOX_GUEST_UID"),
        (vec![("SANDBOX_GUEST_UID", "61183")], "SANDBOX_GUEST_UID"),
        (vec![("SANDBOX_GUEST_UID", "x")], "SANDBOX_GUEST_UID"),
        (vec![("SANDBOX_DISK_MB", "32")], "SANDBOX_DISK_MB"),
        (vec![("SANDBOX_MEMORY_MB", "4")], "SANDBOX_MEMORY_MB"),
        (vec![("SANDBOX_CPUS", "0")], "SANDBOX_CPUS"),
        (vec![("SANDBOX_PIDS", "8")], "SANDBOX_PIDS"),
        (
            vec![("SANDBOX_DOCKER_RUNTIME", "runsc"), ("SANDBOX_PIDS", "64")],
            "SANDBOX_PIDS",
        ),
        (vec![("SANDBOX_SNIPPET_POOL", "65")], "SANDBOX_SNIPPET_POOL"),
        (vec![("SANDBOX_SNIPPET_POOL", "-1")], "SANDBOX_SNIPPET_POOL"),
        // Waiting members hold one run's memory each: a budget they would
        // leave without room for a run is refused.
        (
            vec![
                ("SANDBOX_SNIPPET_POOL", "3"),
                ("SANDBOX_MEMORY_MB", "256"),
                ("SANDBOX_TOTAL_MEMORY_MB", "1000"),
            ],
            "SANDBOX_TOTAL_MEMORY_MB",
        ),
        (
            vec![
                ("SANDBOX_SNIPPET_POOL", "1"),
                ("SANDBOX_MAX_SESSIONS", "4"),
                ("SANDBOX_SESSION_POOL", "2"),
                ("SANDBOX_MEMORY_MB", "256"),
                ("SANDBOX_TOTAL_MEMORY_MB", "1000"),
            ],
            "SANDBOX_TOTAL_MEMORY_MB",
        ),
    ] {
        assert_eq!(docker(&pairs).unwrap_err().variable, var, "{pairs:?}");
    }
    // Docker variables for another provider are refused, not ignored.
    assert_eq!(
        load(&[("SANDBOX_DOCKER_RUNTIME", "runsc")])
            .unwrap_err()
            .variable,
        "SANDBOX_DOCKER_RUNTIME"
    );
    // DOCKER_HOST is an operator's ordinary setting; only docker reads it.
    assert!(load(&[("DOCKER_HOST", "tcp://x:2375")]).is_ok());
    assert_eq!(
        docker(&[("DOCKER_HOST", "tcp://x:2375")])
            .unwrap()
            .provider
            .get::<DockerSettings>()
            .unwrap()
            .docker_host
            .as_deref(),
        Some("tcp://x:2375")
    );
}
