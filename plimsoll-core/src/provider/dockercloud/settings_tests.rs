use super::*;

const IMAGE: &str = "docker.io/plimsoll/project@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn read(
    vars: &[(&str, &str)],
    resources: ResourceSettings,
) -> Result<DockerCloudSettings, ConfigError> {
    let mut all: Vec<(String, String)> = vec![
        ("DOCKER_SBX_TOKEN".into(), "dckr_pat_s3cr3tvalue".into()),
        ("DOCKER_SBX_USERNAME".into(), "someone".into()),
        ("SANDBOX_DOCKERCLOUD_IMAGE".into(), IMAGE.into()),
    ];
    for (k, v) in vars {
        all.retain(|(n, _)| n != k);
        if !v.is_empty() {
            all.push(((*k).to_owned(), (*v).to_owned()));
        }
    }
    let get = move |k: &str| all.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    DockerCloudSettings::from_env(&Env::new(&get), &resources)
}

fn r() -> ResourceSettings {
    ResourceSettings::default()
}

#[test]
fn the_defaults_and_the_token_never_printed() {
    let s = read(&[], r()).unwrap();
    assert!(!format!("{s:?}").contains("s3cr3t"), "{s:?}");
    assert_eq!(s.auth_url.as_str(), DEFAULT_AUTH_URL);
    assert_eq!(s.api_url.as_str(), DEFAULT_API_URL);
    assert_eq!((s.cpus, s.memory_mib), (1, 2048));
    assert_eq!(s.username, "someone");
    for v in [
        "DOCKER_SBX_TOKEN",
        "DOCKER_SBX_USERNAME",
        "SANDBOX_DOCKERCLOUD_IMAGE",
    ] {
        assert_eq!(read(&[(v, "")], r()).unwrap_err().variable, v);
    }
}

#[test]
fn both_contracts_connect_with_its_url_and_the_grant_variables_refused() {
    assert_eq!(
        read(&[("SANDBOX_DOCKERCLOUD_API", "REST")], r())
            .unwrap()
            .api,
        Api::Rest
    );
    let e = read(&[("SANDBOX_DOCKERCLOUD_API", "connect")], r()).unwrap_err();
    assert_eq!(e.variable, "SANDBOX_DOCKERCLOUD_API_URL");
    let c = read(
        &[
            ("SANDBOX_DOCKERCLOUD_API", "connect"),
            (
                "SANDBOX_DOCKERCLOUD_API_URL",
                "https://sandboxes.connect.docker.com/sbx",
            ),
        ],
        r(),
    )
    .unwrap();
    assert_eq!(
        (c.api, c.api_url.as_str()),
        (Api::Connect, "https://sandboxes.connect.docker.com/sbx")
    );
    assert!(read(&[("SANDBOX_DOCKERCLOUD_API", "grpc")], r()).is_err());
    // Grants are Connect's: refused with REST, read with Connect.
    for v in [
        "SANDBOX_DOCKERCLOUD_GUARD_URL",
        "SANDBOX_DOCKERCLOUD_POLICY_URL",
        "SANDBOX_DOCKERCLOUD_STORE_IMAGE",
    ] {
        assert_eq!(
            read(&[(v, "https://x.example.com")], r())
                .unwrap_err()
                .variable,
            v
        );
    }
    let connect = [
        ("SANDBOX_DOCKERCLOUD_API", "connect"),
        (
            "SANDBOX_DOCKERCLOUD_API_URL",
            "https://sandboxes.connect.docker.com/sbx",
        ),
    ];
    let g = read(
        &[
            connect[0],
            connect[1],
            (
                "SANDBOX_DOCKERCLOUD_GUARD_URL",
                "https://guard.example.com/v1/g",
            ),
        ],
        r(),
    )
    .unwrap();
    assert_eq!(g.guard_path().as_deref(), Some("/v1/g"));
    assert_eq!(g.policy_url.as_str(), DEFAULT_POLICY_URL);
    let e = read(
        &[
            connect[0],
            connect[1],
            ("SANDBOX_DOCKERCLOUD_GUARD_URL", "https://127.0.0.1/g"),
        ],
        r(),
    )
    .unwrap_err();
    assert_eq!(e.variable, "SANDBOX_DOCKERCLOUD_GUARD_URL");
    assert_eq!(
        read(
            &[
                connect[0],
                connect[1],
                ("SANDBOX_DOCKERCLOUD_STORE_IMAGE", "x@sha256:00")
            ],
            r()
        )
        .unwrap_err()
        .variable,
        "SANDBOX_DOCKERCLOUD_STORE_IMAGE"
    );
}

#[test]
fn the_image_is_pinned_by_digest() {
    for bad in [
        "plimsoll/project:latest",
        "plimsoll/project@sha256:abc",
        "plimsoll/project@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
        "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ] {
        let e = read(&[("SANDBOX_DOCKERCLOUD_IMAGE", bad)], r()).unwrap_err();
        assert_eq!(e.variable, "SANDBOX_DOCKERCLOUD_IMAGE", "{bad}");
    }
    assert!(pinned(IMAGE));
}

#[test]
fn addresses_are_https_or_loopback_http() {
    for v in [
        "SANDBOX_DOCKERCLOUD_AUTH_URL",
        "SANDBOX_DOCKERCLOUD_API_URL",
    ] {
        for bad in [
            "http://connect.docker.com/sandboxes",
            "https://u:p@connect.docker.com",
            "https://connect.docker.com/sandboxes?x=1",
            "ftp://connect.docker.com",
        ] {
            assert_eq!(read(&[(v, bad)], r()).unwrap_err().variable, v, "{bad}");
        }
    }
    let s = read(
        &[(
            "SANDBOX_DOCKERCLOUD_API_URL",
            "http://127.0.0.1:9/sandboxes",
        )],
        r(),
    )
    .unwrap();
    assert_eq!(s.api_url.as_str(), "http://127.0.0.1:9/sandboxes");
}

#[test]
fn sizes_are_the_ones_docker_runs_and_pids_and_disk_are_refused() {
    let with = |f: fn(&mut ResourceSettings)| {
        let mut r = ResourceSettings::default();
        f(&mut r);
        read(&[], r)
    };
    let s = with(|r| r.cpus = Some(4.0)).unwrap();
    assert_eq!((s.cpus, s.memory_mib), (4, 8192));
    let s = with(|r| r.memory_mb = Some(32768)).unwrap();
    assert_eq!((s.cpus, s.memory_mib), (16, 32768));
    let s = with(|r| {
        r.cpus = Some(2.0);
        r.memory_mb = Some(4096);
    })
    .unwrap();
    assert_eq!((s.cpus, s.memory_mib), (2, 4096));
    let e = with(|r| {
        r.cpus = Some(2.0);
        r.memory_mb = Some(2048);
    })
    .unwrap_err();
    assert_eq!(e.variable, "SANDBOX_MEMORY_MB");
    assert_eq!(
        with(|r| r.cpus = Some(3.0)).unwrap_err().variable,
        "SANDBOX_CPUS"
    );
    assert_eq!(
        with(|r| r.cpus = Some(1.5)).unwrap_err().variable,
        "SANDBOX_CPUS"
    );
    assert_eq!(
        with(|r| r.pids = Some(64)).unwrap_err().variable,
        "SANDBOX_PIDS"
    );
    assert_eq!(
        with(|r| r.disk_mb = Some(64)).unwrap_err().variable,
        "SANDBOX_DISK_MB"
    );
}
