//! The OpenShell gateway as the provider speaks to it: one gRPC channel over
//! mutual TLS (made on first use, so building the provider talks to
//! nothing), every unary call bounded by [`CALL_BUDGET`], every error an
//! infrastructure error naming the call, and exec streamed with each output
//! stream kept to a cap while the rest is drained.
//!
//! Every request names the workspace [`WORKSPACE`]; sandboxes are addressed
//! by name, as 0.1.5 keys them.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use pb::open_shell_client::OpenShellClient;
use plimsoll_openshell_proto::datamodel::v1::{WorkspaceSelector, workspace_selector};
use plimsoll_openshell_proto::sandbox::v1 as sb;
use plimsoll_openshell_proto::v1 as pb;
use tokio::sync::OnceCell;
use tokio::time::Instant;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use url::Url;

use crate::env::ConfigError;
use crate::error::{Error, Result};
use crate::provider::hosted::http::excerpt;
use crate::secret::Secret;

/// The workspace every sandbox of this provider lives in.
pub const WORKSPACE: &str = "default";
/// How long one unary call may take.
pub const CALL_BUDGET: Duration = Duration::from_secs(30);
/// How long past a command's budget its exit is waited for before the
/// stream is dropped (which kills the command's process group).
const EXEC_MARGIN: Duration = Duration::from_secs(5);
/// The largest page a list asks for.
const PAGE: i32 = 500;
/// The bytes a forward buffers each way.
const FORWARD_BUFFER: usize = 64 * 1024;

/// The workspace selector every request carries.
pub fn scope() -> Option<WorkspaceSelector> {
    Some(WorkspaceSelector {
        selection: Some(workspace_selector::Selection::Workspace(WORKSPACE.into())),
    })
}

/// The gateway.
pub(crate) struct Gateway {
    url: String,
    tls: ClientTlsConfig,
    channel: OnceCell<Channel>,
}

/// One command's end as the gateway streamed it.
#[derive(Debug, Default)]
pub(crate) struct Exec {
    pub stdout: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr: Vec<u8>,
    pub stderr_truncated: bool,
    /// The exit code; `None`: the command was still running at its budget
    /// plus [`EXEC_MARGIN`] and its stream was dropped.
    pub exit_code: Option<i32>,
    pub elapsed: Duration,
}

fn keep(into: &mut Vec<u8>, truncated: &mut bool, data: &[u8], cap: usize) {
    let room = cap.saturating_sub(into.len());
    if data.len() > room {
        *truncated = true;
    }
    into.extend_from_slice(&data[..data.len().min(room)]);
}

fn failed(what: &str, s: &tonic::Status) -> Error {
    Error::infrastructure(format!(
        "the OpenShell gateway refused {what}: {:?} {}",
        s.code(),
        excerpt(s.message().as_bytes(), &[])
    ))
}

impl Gateway {
    /// A gateway at `url`, trusted through `ca`, presenting `cert` and `key`.
    pub(crate) fn new(
        url: &Url,
        ca: &[u8],
        cert: &[u8],
        key: &Secret,
    ) -> Result<Gateway, ConfigError> {
        let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(ca))
            .identity(Identity::from_pem(cert, key.expose().as_bytes()))
            .domain_name(host);
        let url = url.as_str().trim_end_matches('/').to_owned();
        Endpoint::from_shared(url.clone())
            .map_err(|e| ConfigError::new("SANDBOX_OPENSHELL_GATEWAY_URL", e.to_string()))?
            .tls_config(tls.clone())
            .map_err(|e| {
                ConfigError::new("SANDBOX_OPENSHELL_CERT_FILE", format!("the TLS files: {e}"))
            })?;
        Ok(Gateway {
            url,
            tls,
            channel: OnceCell::new(),
        })
    }

    async fn client(&self) -> Result<OpenShellClient<Channel>> {
        let channel = self
            .channel
            .get_or_try_init(|| async {
                let endpoint = Endpoint::from_shared(self.url.clone())
                    .and_then(|e| e.tls_config(self.tls.clone()))
                    .map_err(|e| {
                        Error::infrastructure(format!("the OpenShell gateway's address: {e}"))
                    })?
                    .connect_timeout(Duration::from_secs(10))
                    .tcp_nodelay(true)
                    .http2_keep_alive_interval(Duration::from_secs(30));
                Ok::<Channel, Error>(endpoint.connect_lazy())
            })
            .await?;
        Ok(OpenShellClient::new(channel.clone())
            .max_decoding_message_size(16 << 20)
            .max_encoding_message_size(16 << 20))
    }

    /// Runs one unary call within [`CALL_BUDGET`].
    async fn call<T, F>(
        &self,
        what: &str,
        f: impl FnOnce(OpenShellClient<Channel>) -> F,
    ) -> Result<T>
    where
        F: Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    {
        let client = self.client().await?;
        match tokio::time::timeout(CALL_BUDGET, f(client)).await {
            Ok(Ok(r)) => Ok(r.into_inner()),
            Ok(Err(s)) => Err(failed(what, &s)),
            Err(_) => Err(Error::infrastructure(format!(
                "the OpenShell gateway did not answer {what} within {} s",
                CALL_BUDGET.as_secs()
            ))),
        }
    }

    /// `Health`: whether the gateway says it serves.
    pub(crate) async fn health(&self) -> Result<pb::HealthResponse> {
        self.call("Health", |mut c| async move {
            c.health(pb::HealthRequest::default()).await
        })
        .await
    }

    /// `GetGatewayInfo`: its version and compute drivers.
    pub(crate) async fn info(&self) -> Result<pb::GetGatewayInfoResponse> {
        self.call("GetGatewayInfo", |mut c| async move {
            c.get_gateway_info(pb::GetGatewayInfoRequest::default())
                .await
        })
        .await
    }

    /// `CreateSandbox`.
    pub(crate) async fn create(&self, req: pb::CreateSandboxRequest) -> Result<pb::Sandbox> {
        let r = self
            .call("CreateSandbox", |mut c| async move {
                c.create_sandbox(req).await
            })
            .await?;
        r.sandbox.ok_or_else(|| {
            Error::infrastructure("the OpenShell gateway's create answer names no sandbox")
        })
    }

    /// `GetSandbox` by name (`None`: not found).
    pub(crate) async fn get(&self, name: &str) -> Result<Option<pb::Sandbox>> {
        let req = pb::GetSandboxRequest {
            workspace_scope: scope(),
            name: name.to_owned(),
        };
        let client = self.client().await?;
        let mut c = client;
        match tokio::time::timeout(CALL_BUDGET, c.get_sandbox(req)).await {
            Ok(Ok(r)) => Ok(r.into_inner().sandbox),
            Ok(Err(s)) if s.code() == tonic::Code::NotFound => Ok(None),
            Ok(Err(s)) => Err(failed("GetSandbox", &s)),
            Err(_) => Err(Error::infrastructure(
                "the OpenShell gateway did not answer GetSandbox in time",
            )),
        }
    }

    /// Every sandbox in [`WORKSPACE`] whose labels hold all of `selector`.
    pub(crate) async fn list(
        &self,
        selector: &HashMap<String, String>,
    ) -> Result<Vec<pb::Sandbox>> {
        let mut terms: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        terms.sort();
        let label_selector = terms.join(",");
        let mut out = Vec::new();
        let mut page_token = String::new();
        loop {
            let req = pb::ListSandboxesRequest {
                workspace_scope: scope(),
                page_size: PAGE,
                page_token: std::mem::take(&mut page_token),
                label_selector: label_selector.clone(),
            };
            let r = self
                .call("ListSandboxes", |mut c| async move {
                    c.list_sandboxes(req).await
                })
                .await?;
            out.extend(r.sandboxes);
            if r.next_page_token.is_empty() || out.len() > 100_000 {
                return Ok(out);
            }
            page_token = r.next_page_token;
        }
    }

    /// `DeleteSandbox` by name; one already gone is not an error.
    pub(crate) async fn delete(&self, name: &str) -> Result<()> {
        let req = pb::DeleteSandboxRequest {
            workspace_scope: scope(),
            name: name.to_owned(),
            allow_missing: true,
            request_id: String::new(),
        };
        self.call("DeleteSandbox", |mut c| async move {
            c.delete_sandbox(req).await
        })
        .await
        .map(drop)
    }

    /// `GetSandboxConfig` by name: the policy in force and its hash.
    pub(crate) async fn config(&self, name: &str) -> Result<sb::GetSandboxConfigResponse> {
        let req = sb::GetSandboxConfigRequest {
            workspace_scope: scope(),
            name: name.to_owned(),
        };
        self.call("GetSandboxConfig", |mut c| async move {
            c.get_sandbox_config(req).await
        })
        .await
    }

    /// Runs `command` in sandbox `name` from `workdir` with `stdin`, for at
    /// most `budget` (the gateway's `execution_timeout`), keeping `cap`
    /// bytes of each stream. Dropping the future drops the stream, which
    /// makes the gateway kill the command's process group.
    pub(crate) async fn exec(
        &self,
        name: &str,
        command: &[String],
        workdir: &str,
        stdin: Vec<u8>,
        budget: Duration,
        cap: usize,
    ) -> Result<Exec> {
        let timeout = prost_types::Duration {
            seconds: budget.as_secs() as i64,
            nanos: budget.subsec_nanos() as i32,
        };
        let req = pb::ExecSandboxRequest {
            workspace_scope: scope(),
            sandbox: name.to_owned(),
            command: command.to_vec(),
            workdir: workdir.to_owned(),
            execution_timeout: Some(timeout),
            stdin,
            no_login_shell: true,
            ..pb::ExecSandboxRequest::default()
        };
        let started = Instant::now();
        let until = started + budget + EXEC_MARGIN;
        let mut c = self.client().await?;
        let mut stream = match tokio::time::timeout_at(until, c.exec_sandbox(req)).await {
            Ok(Ok(r)) => r.into_inner(),
            Ok(Err(s)) => return Err(failed("ExecSandbox", &s)),
            Err(_) => {
                return Err(Error::infrastructure(
                    "the OpenShell gateway did not start the command in time",
                ));
            }
        };
        let mut out = Exec::default();
        loop {
            let event = match tokio::time::timeout_at(until, stream.message()).await {
                Err(_) => {
                    out.elapsed = started.elapsed();
                    return Ok(out);
                }
                Ok(Err(s)) => return Err(failed("ExecSandbox", &s)),
                Ok(Ok(None)) => {
                    return Err(Error::infrastructure(
                        "the OpenShell gateway ended a command's stream without its exit",
                    ));
                }
                Ok(Ok(Some(e))) => e,
            };
            use pb::exec_sandbox_event::Payload;
            match event.payload {
                Some(Payload::Stdout(d)) => {
                    keep(&mut out.stdout, &mut out.stdout_truncated, &d.data, cap)
                }
                Some(Payload::Stderr(d)) => {
                    keep(&mut out.stderr, &mut out.stderr_truncated, &d.data, cap)
                }
                Some(Payload::Exit(e)) => {
                    out.exit_code = Some(e.exit_code);
                    out.elapsed = started.elapsed();
                    return Ok(out);
                }
                None => {}
            }
        }
    }
}

/// A held-open command (`ExecSandboxInteractive`): its stdin as a channel,
/// its events as a stream. Dropping it ends the call, which makes the
/// gateway kill the command's process group.
pub(crate) struct Interactive {
    pub stdin: tokio::sync::mpsc::Sender<pb::ExecSandboxInput>,
    pub events: tonic::Streaming<pb::ExecSandboxEvent>,
}

impl Gateway {
    /// Starts `command` in sandbox `name` from `workdir` with no time limit,
    /// its stdin held open.
    pub(crate) async fn interactive(
        &self,
        name: &str,
        command: &[String],
        workdir: &str,
    ) -> Result<Interactive> {
        let start = pb::ExecSandboxRequest {
            workspace_scope: scope(),
            sandbox: name.to_owned(),
            command: command.to_vec(),
            workdir: workdir.to_owned(),
            no_login_shell: true,
            ..pb::ExecSandboxRequest::default()
        };
        let (stdin, rx) = tokio::sync::mpsc::channel(16);
        stdin
            .send(pb::ExecSandboxInput {
                payload: Some(pb::exec_sandbox_input::Payload::Start(start)),
            })
            .await
            .map_err(|_| Error::infrastructure("an interactive command's input closed early"))?;
        let events = self
            .call("ExecSandboxInteractive", |mut c| async move {
                c.exec_sandbox_interactive(tokio_stream::wrappers::ReceiverStream::new(rx))
                    .await
            })
            .await?;
        Ok(Interactive { stdin, events })
    }
}

impl Gateway {
    /// `CreateSshSession` for sandbox `name`: a token for [`Gateway::forward`].
    pub(crate) async fn forward_token(&self, name: &str) -> Result<Secret> {
        let req = pb::CreateSshSessionRequest {
            workspace_scope: scope(),
            sandbox: name.to_owned(),
        };
        let r = self
            .call("CreateSshSession", |mut c| async move {
                c.create_ssh_session(req).await
            })
            .await?;
        if r.token.is_empty() {
            return Err(Error::infrastructure(
                "the OpenShell gateway's CreateSshSession answer holds no token",
            ));
        }
        Ok(Secret::new(r.token))
    }

    /// `RevokeSshSession`: the token opens nothing more (one already gone is
    /// not an error).
    pub(crate) async fn revoke(&self, token: &Secret) -> Result<()> {
        let req = pb::RevokeSshSessionRequest {
            token: token.expose().to_owned(),
            allow_missing: true,
        };
        self.call("RevokeSshSession", |mut c| async move {
            c.revoke_ssh_session(req).await
        })
        .await
        .map(drop)
    }

    /// `ForwardTcp` to `127.0.0.1:port` in sandbox `name` on `token`: a
    /// byte stream to that port. Its end reading EOF means the connection
    /// ended; dropping it ends the call (the gateway closes the connection).
    pub(crate) async fn forward(
        &self,
        name: &str,
        token: &Secret,
        port: u16,
    ) -> Result<tokio::io::DuplexStream> {
        use pb::tcp_forward_frame::Payload;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let init = pb::TcpForwardInit {
            sandbox: name.to_owned(),
            workspace: WORKSPACE.to_owned(),
            target: Some(pb::tcp_forward_init::Target::Tcp(pb::TcpRelayTarget {
                host: "127.0.0.1".into(),
                port: u32::from(port),
            })),
            authorization_token: token.expose().to_owned(),
            ..pb::TcpForwardInit::default()
        };
        let (up, rx) = tokio::sync::mpsc::channel(16);
        up.send(pb::TcpForwardFrame {
            payload: Some(Payload::Init(init)),
        })
        .await
        .map_err(|_| Error::infrastructure("a forward's frames closed early"))?;
        let mut frames = self
            .call("ForwardTcp", |mut c| async move {
                c.forward_tcp(tokio_stream::wrappers::ReceiverStream::new(rx))
                    .await
            })
            .await?;
        let (ours, theirs) = tokio::io::duplex(FORWARD_BUFFER);
        let (mut read, mut write) = tokio::io::split(theirs);
        // Bytes written to our end go out as data frames; half-closing it
        // (EOF) ends the frames.
        tokio::spawn(async move {
            let mut buf = vec![0u8; FORWARD_BUFFER];
            while let Ok(n) = read.read(&mut buf).await {
                let frame = pb::TcpForwardFrame {
                    payload: Some(Payload::Data(buf[..n].to_vec())),
                };
                if n == 0 || up.send(frame).await.is_err() {
                    return;
                }
            }
        });
        // Data frames come out of our end; the stream's end (or failure)
        // is its EOF.
        tokio::spawn(async move {
            while let Ok(Some(f)) = frames.message().await {
                if let Some(Payload::Data(d)) = f.payload
                    && write.write_all(&d).await.is_err()
                {
                    return;
                }
            }
            let _ = write.shutdown().await;
        });
        Ok(ours)
    }
}

impl Gateway {
    /// Starts `command` in sandbox `name` and returns once it has written
    /// to stdout, dropping its stream (so the gateway kills its process
    /// group): how a run's cancel reaches a command.
    pub(crate) async fn start_then_drop(
        &self,
        name: &str,
        command: &[String],
        budget: Duration,
    ) -> Result<()> {
        let req = pb::ExecSandboxRequest {
            workspace_scope: scope(),
            sandbox: name.to_owned(),
            command: command.to_vec(),
            workdir: "/".to_owned(),
            no_login_shell: true,
            ..pb::ExecSandboxRequest::default()
        };
        let mut c = self.client().await?;
        let first = async {
            let mut stream = c
                .exec_sandbox(req)
                .await
                .map_err(|s| failed("ExecSandbox", &s))?
                .into_inner();
            loop {
                use pb::exec_sandbox_event::Payload;
                match stream
                    .message()
                    .await
                    .map_err(|s| failed("ExecSandbox", &s))?
                {
                    Some(pb::ExecSandboxEvent {
                        payload: Some(Payload::Stdout(_)),
                    }) => return Ok(()),
                    Some(pb::ExecSandboxEvent {
                        payload: Some(Payload::Exit(e)),
                    }) => {
                        return Err(Error::infrastructure(format!(
                            "the command ended (exit {}) before it started its children",
                            e.exit_code
                        )));
                    }
                    Some(_) => {}
                    None => return Err(Error::infrastructure("the command's stream ended early")),
                }
            }
        };
        tokio::time::timeout(budget, first)
            .await
            .map_err(|_| Error::infrastructure("the command did not start in time"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_keeps_its_cap_and_says_it_was_cut() {
        let (mut v, mut t) = (Vec::new(), false);
        keep(&mut v, &mut t, b"abc", 4);
        assert!(!t);
        keep(&mut v, &mut t, b"def", 4);
        assert_eq!((v.as_slice(), t), (b"abcd".as_slice(), true));
        keep(&mut v, &mut t, b"g", 4);
        assert_eq!(v.len(), 4);
    }
}
