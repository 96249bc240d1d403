//! The OpenShell stand-in driven over loopback gRPC with mutual TLS, by a
//! tonic client generated from the same vendored protos: the handshake
//! refused without a client certificate, gateway info, the sandbox
//! lifecycle, exec (output, exit codes, timeout, a dropped stream killing
//! the command), the policy read back with its hash, `ForwardTcp` to a
//! sandbox's loopback port (its own token only, the per-token cap, a port
//! nobody listens on, revoked tokens), faults, and no container left after
//! shutdown.
//!
//! These tests need the local docker daemon and the image
//! `plimsoll/project:latest` (`images/build.sh`); without them they fail.
//! `STANDIN_RUNTIME=runsc` runs the sandboxes under gVisor.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pb::open_shell_client::OpenShellClient;
use plimsoll_standins::openshell::proto::datamodel::v1::{
    WorkspaceSelector, workspace_selector::Selection,
};
use plimsoll_standins::openshell::proto::sandbox::v1 as sb;
use plimsoll_standins::openshell::proto::v1 as pb;
use plimsoll_standins::openshell::{self, Faults, Settings, StandIn, policy};
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

const IMAGE: &str = "registry.invalid/plimsoll/project:latest";

struct Harness {
    url: String,
    certs: tempfile::TempDir,
    standin: Arc<StandIn>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<Result<(), String>>>,
}

async fn start(faults: Faults) -> Harness {
    let settings = Settings {
        images: HashMap::from([(IMAGE.to_owned(), "plimsoll/project:latest".to_owned())]),
        runtime: std::env::var("STANDIN_RUNTIME").ok(),
        faults,
    };
    let standin = StandIn::new(settings).expect("docker is required");
    standin.docker.ping().await.expect("docker is required");
    let certs = tempfile::tempdir().unwrap();
    let tls = openshell::tls::generate(certs.path()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://localhost:{}",
        listener.local_addr().unwrap().port()
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(openshell::serve(standin.clone(), listener, tls, async {
        let _ = rx.await;
    }));
    Harness {
        url,
        certs,
        standin,
        stop: Some(tx),
        served: Some(served),
    }
}

impl Harness {
    async fn channel(&self, with_identity: bool) -> Result<Channel, tonic::transport::Error> {
        let read = |f: &str| std::fs::read(self.certs.path().join(f)).unwrap();
        let mut tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read("ca.crt")))
            .domain_name("localhost");
        if with_identity {
            tls = tls.identity(Identity::from_pem(read("tls.crt"), read("tls.key")));
        }
        Channel::from_shared(self.url.clone())
            .unwrap()
            .tls_config(tls)?
            .connect()
            .await
    }

    async fn client(&self) -> OpenShellClient<Channel> {
        OpenShellClient::new(self.channel(true).await.unwrap())
    }

    /// Stops the stand-in and checks it removed every container it made.
    async fn finish(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.served.take().unwrap().await.unwrap().unwrap();
        let filters = HashMap::from([(
            "label",
            vec![format!(
                "{}={}",
                openshell::container::LABEL,
                self.standin.run_id
            )],
        )]);
        let opts = bollard::query_parameters::ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let left = self
            .standin
            .docker
            .list_containers(Some(opts))
            .await
            .unwrap();
        assert!(left.is_empty(), "containers left: {left:?}");
    }
}

fn ws() -> Option<WorkspaceSelector> {
    Some(WorkspaceSelector {
        selection: Some(Selection::Workspace("default".into())),
    })
}

fn spec(policy: Option<sb::SandboxPolicy>) -> pb::SandboxSpec {
    let limits = prost_types::Struct {
        fields: [("cpu", "1"), ("memory", "256Mi")]
            .map(|(k, v)| {
                (
                    k.to_owned(),
                    prost_types::Value {
                        kind: Some(prost_types::value::Kind::StringValue(v.into())),
                    },
                )
            })
            .into(),
    };
    let resources = prost_types::Struct {
        fields: [(
            "limits".to_owned(),
            prost_types::Value {
                kind: Some(prost_types::value::Kind::StructValue(limits)),
            },
        )]
        .into(),
    };
    pb::SandboxSpec {
        template: Some(pb::SandboxTemplate {
            image: IMAGE.into(),
            resources: Some(resources),
            ..pb::SandboxTemplate::default()
        }),
        policy,
        ..pb::SandboxSpec::default()
    }
}

fn create_req(
    name: &str,
    labels: &[(&str, &str)],
    policy: Option<sb::SandboxPolicy>,
) -> pb::CreateSandboxRequest {
    pb::CreateSandboxRequest {
        workspace_scope: ws(),
        spec: Some(spec(policy)),
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..pb::CreateSandboxRequest::default()
    }
}

async fn get(c: &mut OpenShellClient<Channel>, name: &str) -> Result<pb::Sandbox, tonic::Status> {
    let r = c
        .get_sandbox(pb::GetSandboxRequest {
            workspace_scope: ws(),
            name: name.into(),
        })
        .await?;
    Ok(r.into_inner().sandbox.unwrap())
}

async fn wait_ready(c: &mut OpenShellClient<Channel>, name: &str) -> pb::Sandbox {
    let t0 = Instant::now();
    loop {
        let s = get(c, name).await.unwrap();
        let phase = s.status.as_ref().unwrap().phase();
        if phase == pb::SandboxPhase::Ready {
            return s;
        }
        assert!(phase == pb::SandboxPhase::Provisioning, "{s:?}");
        assert!(t0.elapsed() < Duration::from_secs(120), "not ready: {s:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `command`; returns (stdout, stderr, exit code, events after the exit).
async fn exec(
    c: &mut OpenShellClient<Channel>,
    name: &str,
    command: &[&str],
    timeout: Option<i64>,
) -> (String, String, i32) {
    let mut stream = c
        .exec_sandbox(pb::ExecSandboxRequest {
            workspace_scope: ws(),
            sandbox: name.into(),
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            execution_timeout: timeout.map(|s| prost_types::Duration {
                seconds: s,
                nanos: 0,
            }),
            ..pb::ExecSandboxRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let (mut out, mut err, mut exit) = (Vec::new(), Vec::new(), None);
    while let Some(ev) = stream.message().await.unwrap() {
        assert!(exit.is_none(), "an event after the exit: {ev:?}");
        match ev.payload.unwrap() {
            pb::exec_sandbox_event::Payload::Stdout(d) => out.extend(d.data),
            pb::exec_sandbox_event::Payload::Stderr(d) => err.extend(d.data),
            pb::exec_sandbox_event::Payload::Exit(e) => exit = Some(e.exit_code),
        }
    }
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
        exit.expect("exactly one exit event"),
    )
}

#[tokio::test]
async fn mtls_lifecycle_exec_and_config() {
    let h = start(Faults::default()).await;

    // No client certificate: the handshake (or the first call) fails.
    let refused = match h.channel(false).await {
        Err(_) => true,
        Ok(ch) => OpenShellClient::new(ch)
            .health(pb::HealthRequest {})
            .await
            .is_err(),
    };
    assert!(refused, "a client without a certificate was served");

    let mut c = h.client().await;
    let health = c.health(pb::HealthRequest {}).await.unwrap().into_inner();
    assert_eq!(health.status(), pb::ServiceStatus::Healthy);

    let info = c
        .get_gateway_info(pb::GetGatewayInfoRequest::default())
        .await
        .unwrap()
        .into_inner();
    let dockerd = h.standin.docker.version().await.unwrap().version.unwrap();
    assert_eq!(info.compute_drivers.len(), 1);
    let caps = info.compute_drivers[0].capabilities.clone().unwrap();
    assert_eq!(
        (
            info.compute_drivers[0].name.as_str(),
            caps.driver_name.as_str(),
            caps.driver_version.as_str()
        ),
        ("docker", "docker", dockerd.as_str())
    );

    // Create: spec required; then PROVISIONING, READY; a second create of the name refused.
    let mut no_spec = create_req("s1", &[], None);
    no_spec.spec = None;
    assert_eq!(
        c.create_sandbox(no_spec).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    let wanted = sb::SandboxPolicy {
        version: 3,
        filesystem: Some(sb::FilesystemPolicy {
            include_workdir: true,
            read_only: vec!["/usr".into()],
            read_write: vec!["/tmp".into()],
        }),
        ..sb::SandboxPolicy::default()
    };
    let made = c
        .create_sandbox(create_req(
            "s1",
            &[("run", "a"), ("kind", "check")],
            Some(wanted.clone()),
        ))
        .await
        .unwrap()
        .into_inner()
        .sandbox
        .unwrap();
    let meta = made.metadata.clone().unwrap();
    assert!(!meta.id.is_empty());
    assert_eq!(
        made.status.as_ref().unwrap().phase(),
        pb::SandboxPhase::Provisioning
    );
    let again = c
        .create_sandbox(create_req("s1", &[], None))
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    c.create_sandbox(create_req("s2", &[("run", "b"), ("kind", "check")], None))
        .await
        .unwrap();

    let ready = wait_ready(&mut c, "s1").await;
    let back = ready.metadata.clone().unwrap();
    assert_eq!(
        (back.id.as_str(), back.name.as_str()),
        (meta.id.as_str(), "s1")
    );
    assert_eq!(back.labels, meta.labels);
    assert_eq!(ready.spec, made.spec);
    assert_eq!(
        ready
            .spec
            .as_ref()
            .unwrap()
            .template
            .as_ref()
            .unwrap()
            .image,
        IMAGE
    );

    // List: by label, and in pages.
    let list = |selector: &str, size: i32, token: &str| pb::ListSandboxesRequest {
        workspace_scope: ws(),
        page_size: size,
        page_token: token.into(),
        label_selector: selector.into(),
    };
    let names = |r: &pb::ListSandboxesResponse| {
        r.sandboxes
            .iter()
            .map(|s| s.metadata.as_ref().unwrap().name.clone())
            .collect::<Vec<_>>()
    };
    let r = c
        .list_sandboxes(list("run=a,kind=check", 0, ""))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(names(&r), ["s1"]);
    let p1 = c
        .list_sandboxes(list("kind=check", 1, ""))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(names(&p1), ["s1"]);
    let p2 = c
        .list_sandboxes(list("kind=check", 1, &p1.next_page_token))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (names(&p2), p2.next_page_token.as_str()),
        (vec!["s2".to_owned()], "")
    );
    let bad = c.list_sandboxes(list("kind", 0, "")).await.unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);

    // Exec.
    assert_eq!(
        exec(&mut c, "s1", &["echo", "hello world"], None).await,
        ("hello world\n".into(), String::new(), 0)
    );
    assert_eq!(
        exec(
            &mut c,
            "s1",
            &["sh", "-c", "echo out; echo err >&2; exit 3"],
            None
        )
        .await,
        ("out\n".into(), "err\n".into(), 3)
    );
    let t0 = Instant::now();
    let (_, _, code) = exec(&mut c, "s1", &["sleep", "60"], Some(1)).await;
    assert_eq!(code, 124);
    assert!(t0.elapsed() < Duration::from_secs(20));
    let e = c
        .exec_sandbox(pb::ExecSandboxRequest {
            workspace_scope: ws(),
            sandbox: "s1".into(),
            command: vec!["true".into()],
            environment: [("1BAD".to_owned(), "v".to_owned())].into(),
            ..pb::ExecSandboxRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let missing = c
        .exec_sandbox(pb::ExecSandboxRequest {
            workspace_scope: ws(),
            sandbox: "nope".into(),
            command: vec!["true".into()],
            ..pb::ExecSandboxRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);

    // A dropped stream kills the command's process group.
    let mut stream = c
        .exec_sandbox(pb::ExecSandboxRequest {
            workspace_scope: ws(),
            sandbox: "s1".into(),
            command: vec![
                "sh".into(),
                "-c".into(),
                "sleep 313 & echo started; wait".into(),
            ],
            ..pb::ExecSandboxRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(matches!(
        first.payload,
        Some(pb::exec_sandbox_event::Payload::Stdout(_))
    ));
    drop(stream);
    let ps = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done";
    let t0 = Instant::now();
    loop {
        let (out, _, _) = exec(&mut c, "s1", &["sh", "-c", ps], None).await;
        if !out.contains("sleep 313") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "still running:\n{out}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // An interactive exec: stdin streamed as it comes (each line answered
    // before the next is sent), closed when the client half-closes; the
    // first message must be the start; commands run as the image's user.
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let input = |p| pb::ExecSandboxInput { payload: Some(p) };
    tx.send(input(pb::exec_sandbox_input::Payload::Start(
        pb::ExecSandboxRequest {
            workspace_scope: ws(),
            sandbox: "s1".into(),
            command: vec![
                "sh".into(),
                "-c".into(),
                "id -u; while read -r l; do echo \"got $l\"; done; echo eof".into(),
            ],
            ..pb::ExecSandboxRequest::default()
        },
    )))
    .await
    .unwrap();
    let mut events = c
        .exec_sandbox_interactive(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let mut out = String::new();
    let mut next_line = async |out: &mut String| loop {
        if let Some(i) = out.find('\n') {
            let line = out[..i].to_owned();
            out.drain(..=i);
            return line;
        }
        match events.message().await.unwrap().unwrap().payload {
            Some(pb::exec_sandbox_event::Payload::Stdout(d)) => {
                out.push_str(&String::from_utf8_lossy(&d.data))
            }
            other => panic!("{other:?}"),
        }
    };
    assert_ne!(
        next_line(&mut out).await,
        "0",
        "commands do not run as root"
    );
    for word in ["one", "two"] {
        tx.send(input(pb::exec_sandbox_input::Payload::Stdin(
            format!("{word}\n").into_bytes(),
        )))
        .await
        .unwrap();
        assert_eq!(next_line(&mut out).await, format!("got {word}"));
    }
    drop(tx);
    assert_eq!(next_line(&mut out).await, "eof");
    let exit = loop {
        match events.message().await.unwrap() {
            Some(pb::ExecSandboxEvent {
                payload: Some(pb::exec_sandbox_event::Payload::Exit(e)),
            }) => break e.exit_code,
            Some(_) => {}
            None => panic!("no exit"),
        }
    };
    assert_eq!(exit, 0);
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(input(pb::exec_sandbox_input::Payload::Stdin(b"x".to_vec())))
        .await
        .unwrap();
    drop(tx);
    let e = c
        .exec_sandbox_interactive(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);

    // The policy read back, with the gateway's hash; the default when none was asked for.
    let config = |name: &str| sb::GetSandboxConfigRequest {
        workspace_scope: ws(),
        name: name.into(),
    };
    let got = c
        .get_sandbox_config(config("s1"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.policy.as_ref(), Some(&wanted));
    assert_eq!(got.policy_hash, policy::hash(&wanted));
    assert_eq!(got.policy_hash.len(), 64);
    assert_eq!(
        (got.version, got.policy_source()),
        (3, sb::PolicySource::Sandbox)
    );
    let dflt = c
        .get_sandbox_config(config("s2"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(dflt.policy, Some(policy::default_policy()));
    assert_ne!(dflt.policy_hash, got.policy_hash);

    // Stop, then start again: exec refused while stopped, served after.
    let named = |name: &str| (ws(), name.to_owned());
    let (scope, name) = named("s1");
    let stopped = c
        .stop_sandbox(pb::StopSandboxRequest {
            workspace_scope: scope.clone(),
            name: name.clone(),
            ..pb::StopSandboxRequest::default()
        })
        .await
        .unwrap()
        .into_inner()
        .sandbox
        .unwrap();
    assert_eq!(stopped.status.unwrap().phase(), pb::SandboxPhase::Stopped);
    let refused = c
        .exec_sandbox(pb::ExecSandboxRequest {
            workspace_scope: ws(),
            sandbox: "s1".into(),
            command: vec!["true".into()],
            ..pb::ExecSandboxRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    let started = c
        .start_sandbox(pb::StartSandboxRequest {
            workspace_scope: scope,
            name,
            ..pb::StartSandboxRequest::default()
        })
        .await
        .unwrap()
        .into_inner()
        .sandbox
        .unwrap();
    assert_eq!(started.status.unwrap().phase(), pb::SandboxPhase::Ready);
    assert_eq!(
        exec(&mut c, "s1", &["echo", "back"], None).await.0,
        "back\n"
    );

    // Delete by name; then not found.
    let del = |name: &str, allow_missing: bool| pb::DeleteSandboxRequest {
        workspace_scope: ws(),
        name: name.into(),
        allow_missing,
        ..pb::DeleteSandboxRequest::default()
    };
    let d = c
        .delete_sandbox(del("s1", false))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (d.outcome(), d.sandbox_id.as_str()),
        (pb::DeletionOutcome::Completed, meta.id.as_str())
    );
    assert_eq!(get(&mut c, "s1").await.unwrap_err().code(), Code::NotFound);
    assert_eq!(
        c.delete_sandbox(del("s1", false)).await.unwrap_err().code(),
        Code::NotFound
    );
    let absent = c
        .delete_sandbox(del("s1", true))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(absent.outcome(), pb::DeletionOutcome::AlreadyAbsent);

    // Unserved RPCs are unimplemented. s2 is left for the shutdown to remove.
    let u = c
        .list_providers(pb::ListProvidersRequest::default())
        .await
        .unwrap_err();
    assert_eq!(u.code(), Code::Unimplemented);
    h.finish().await;
}

#[tokio::test]
async fn faults_are_visible() {
    let h = start(Faults {
        egress_open: false,
        other_driver: true,
        readback_differs: true,
        policy_drift: true,
    })
    .await;
    let mut c = h.client().await;
    let info = c
        .get_gateway_info(pb::GetGatewayInfoRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.compute_drivers[0].name, "kubernetes");

    let made = c
        .create_sandbox(create_req("f1", &[("run", "f")], None))
        .await
        .unwrap()
        .into_inner()
        .sandbox
        .unwrap();
    assert_eq!(made.metadata.as_ref().unwrap().labels["run"], "f");
    let back = get(&mut c, "f1").await.unwrap();
    assert_ne!(
        back.metadata.as_ref().unwrap().labels,
        made.metadata.as_ref().unwrap().labels
    );
    assert_ne!(
        back.spec.as_ref().unwrap().template.as_ref().unwrap().image,
        IMAGE
    );

    let got = c
        .get_sandbox_config(sb::GetSandboxConfigRequest {
            workspace_scope: ws(),
            name: "f1".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_ne!(got.policy, Some(policy::default_policy()));
    assert_ne!(got.policy_hash, policy::hash(&policy::default_policy()));
    assert!(!got.policy.as_ref().unwrap().network_policies.is_empty());
    wait_ready(&mut c, "f1").await;
    h.finish().await;
}

/// Opens a `ForwardTcp` to `127.0.0.1:port` (or `host`) in `sandbox` on
/// `token`: the frames' sender and the answer (its status when refused).
async fn forward(
    c: &mut OpenShellClient<Channel>,
    sandbox: &str,
    host: &str,
    port: u32,
    token: &str,
) -> (
    tokio::sync::mpsc::Sender<pb::TcpForwardFrame>,
    Result<tonic::Streaming<pb::TcpForwardFrame>, tonic::Status>,
) {
    use pb::tcp_forward_frame::Payload;
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tx.send(pb::TcpForwardFrame {
        payload: Some(Payload::Init(pb::TcpForwardInit {
            sandbox: sandbox.into(),
            workspace: "default".into(),
            target: Some(pb::tcp_forward_init::Target::Tcp(pb::TcpRelayTarget {
                host: host.into(),
                port,
            })),
            authorization_token: token.into(),
            ..pb::TcpForwardInit::default()
        })),
    })
    .await
    .unwrap();
    let r = c
        .forward_tcp(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .map(tonic::Response::into_inner);
    (tx, r)
}

async fn token(c: &mut OpenShellClient<Channel>, sandbox: &str) -> String {
    c.create_ssh_session(pb::CreateSshSessionRequest {
        workspace_scope: ws(),
        sandbox: sandbox.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .token
}

#[tokio::test]
async fn forward_tcp_reaches_a_sandbox_port_on_that_sandboxs_token_only() {
    use pb::tcp_forward_frame::Payload;
    let h = start(Faults::default()).await;
    let mut c = h.client().await;
    for name in ["fa", "fb"] {
        c.create_sandbox(create_req(name, &[], None)).await.unwrap();
        wait_ready(&mut c, name).await;
    }
    // An echo server on fa's loopback, held up by its command's stream.
    let mut echo = c
        .exec_sandbox(pb::ExecSandboxRequest {
            workspace_scope: ws(),
            sandbox: "fa".into(),
            command: vec![
                "node".into(),
                "-e".into(),
                "require('net').createServer(s => s.pipe(s)).listen(5555, '127.0.0.1', () => console.log('up'))".into(),
            ],
            ..pb::ExecSandboxRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let first = echo.message().await.unwrap().unwrap();
    assert!(
        matches!(&first.payload, Some(pb::exec_sandbox_event::Payload::Stdout(d)) if d.data == b"up\n"),
        "{first:?}"
    );
    let ta = token(&mut c, "fa").await;
    let tb = token(&mut c, "fb").await;
    assert_eq!(ta.len(), 64);

    // Bytes both ways on fa's own token.
    let (tx, r) = forward(&mut c, "fa", "127.0.0.1", 5555, &ta).await;
    let mut frames = r.unwrap();
    tx.send(pb::TcpForwardFrame {
        payload: Some(Payload::Data(b"ping".to_vec())),
    })
    .await
    .unwrap();
    let mut got = Vec::new();
    while got.len() < 4 {
        match frames.message().await.unwrap().unwrap().payload {
            Some(Payload::Data(d)) => got.extend(d),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(got, b"ping");

    // Refusals: no token, another sandbox's token, a host off loopback, an unknown sandbox.
    let code = |r: Result<_, tonic::Status>| r.map(drop).unwrap_err().code();
    assert_eq!(
        code(forward(&mut c, "fa", "127.0.0.1", 5555, "").await.1),
        Code::Unauthenticated
    );
    assert_eq!(
        code(forward(&mut c, "fa", "127.0.0.1", 5555, &tb).await.1),
        Code::Unauthenticated
    );
    assert_eq!(
        code(forward(&mut c, "fa", "10.0.0.1", 5555, &ta).await.1),
        Code::InvalidArgument
    );
    assert_eq!(
        code(forward(&mut c, "nope", "127.0.0.1", 5555, &ta).await.1),
        Code::Unauthenticated
    );

    // Three connections per token: the first is still open, two more fit, a fourth does not.
    let more = [
        forward(&mut c, "fa", "127.0.0.1", 5555, &ta).await,
        forward(&mut c, "fa", "127.0.0.1", 5555, &ta).await,
    ];
    assert!(more.iter().all(|(_, r)| r.is_ok()));
    let fourth = forward(&mut c, "fa", "127.0.0.1", 5555, &ta).await.1;
    let e = fourth.map(drop).unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            Code::ResourceExhausted,
            "SSH session connection limit reached"
        )
    );

    // Nothing listening: the stream ends unavailable, as a relay failure does.
    let (_tx, r) = forward(&mut c, "fb", "127.0.0.1", 5556, &tb).await;
    let mut refused = r.unwrap();
    let e = match refused.message().await {
        Ok(Some(f)) => panic!("{f:?}"),
        Ok(None) => panic!("ended without a status"),
        Err(e) => e,
    };
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");

    // Revoked: the token opens nothing more; revoking it again is absent.
    let revoke = |allow_missing| pb::RevokeSshSessionRequest {
        token: tb.clone(),
        allow_missing,
    };
    let r = c
        .revoke_ssh_session(revoke(false))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.outcome(), pb::DeletionOutcome::Completed);
    assert_eq!(
        code(forward(&mut c, "fb", "127.0.0.1", 5556, &tb).await.1),
        Code::Unauthenticated
    );
    assert_eq!(
        c.revoke_ssh_session(revoke(false))
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    let r = c
        .revoke_ssh_session(revoke(true))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.outcome(), pb::DeletionOutcome::AlreadyAbsent);
    drop((tx, frames, more, echo));
    h.finish().await;
}
