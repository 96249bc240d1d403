//! `CreateSshSession`, `RevokeSshSession` and `ForwardTcp`: how a client
//! reaches a TCP port on a sandbox's loopback, as the gateway serves them
//! (`docs/research/hosted-providers.md` §3.2, HEAD
//! `crates/openshell-server/src/grpc/sandbox.rs`).
//!
//! * `CreateSshSession{sandbox}` mints a bearer token for that sandbox
//!   (`not_found` for an unknown one), valid for [`TOKEN_TTL`];
//!   `RevokeSshSession{token}` forgets it (`COMPLETED`; an unknown token is
//!   `ALREADY_ABSENT` with `allow_missing`, else `not_found`).
//! * `ForwardTcp` is a bidirectional stream of `TcpForwardFrame`s. The first
//!   must be `init{sandbox, tcp{host, port}, authorization_token}`: an empty
//!   token is `unauthenticated`, and so is an unknown, revoked or expired one
//!   or one minted for another sandbox; the host must be loopback
//!   (`127.0.0.1`, `::1`, `localhost`, else `invalid_argument`; the `ssh`
//!   target is not served here: `unimplemented`); at most [`PER_TOKEN`]
//!   connections are open per token and [`PER_SANDBOX`] per sandbox
//!   (`resource_exhausted`, the gateway's messages); the sandbox must be
//!   `READY` (`failed_precondition`). Then `data` frames carry the bytes
//!   both ways; the client half-closing its stream closes the connection's
//!   write side; the port refusing the connection ends the stream
//!   `unavailable`, as a relay failure does on the gateway.
//!
//! The gateway reaches the port through the sandbox's supervisor; the
//! stand-in does it with a small Node bridge run in the container as the
//! image's user (`docker exec`), so the connection is made from inside the
//! sandbox's own network namespace, under gVisor as under runc.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bollard::container::LogOutput;
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tonic::Status;

use super::container::Input;
use super::proto::v1::{
    self as pb, TcpForwardFrame, tcp_forward_frame::Payload, tcp_forward_init::Target,
};
use super::{Sandbox, StandIn, lock};

/// How long a minted token is valid.
pub const TOKEN_TTL: Duration = Duration::from_secs(3600);
/// Connections open at once on one token.
pub const PER_TOKEN: usize = 3;
/// Connections open at once to one sandbox.
pub const PER_SANDBOX: usize = 20;
/// The bridge's exit code when the port refused the connection.
const REFUSED_EXIT: i64 = 3;

/// Connects to `127.0.0.1:<argv[1]>`, then copies stdin to the socket and
/// the socket to stdout, each way ending as its source ends.
const BRIDGE: &str = r"
const s = require('net').connect(Number(process.argv[1]), '127.0.0.1');
let up = false;
s.on('connect', () => { up = true; process.stdin.pipe(s); s.pipe(process.stdout); });
s.on('error', () => { if (!up) process.exit(3); s.destroy(); });
";

/// The minted tokens and the connections open on them.
#[derive(Debug, Default)]
pub struct Tokens {
    tokens: HashMap<String, Token>,
    /// Open connections per sandbox id.
    per_sandbox: HashMap<String, usize>,
}

impl Tokens {
    /// How many tokens are minted and not revoked.
    pub fn minted(&self) -> usize {
        self.tokens.len()
    }
}

#[derive(Debug)]
struct Token {
    sandbox_id: String,
    expires: SystemTime,
    open: usize,
}

/// `CreateSshSession`.
pub fn create(
    standin: &StandIn,
    req: pb::CreateSshSessionRequest,
) -> Result<pb::CreateSshSessionResponse, Status> {
    let ws = super::sandboxes::workspace(req.workspace_scope.as_ref())?;
    let s = standin
        .get(&ws, &req.sandbox)
        .ok_or_else(super::sandboxes::not_found)?;
    let token = hex::encode(rand::random::<[u8; 32]>());
    let expires = SystemTime::now() + TOKEN_TTL;
    lock(&standin.tokens).tokens.insert(
        token.clone(),
        Token {
            sandbox_id: s.id.clone(),
            expires,
            open: 0,
        },
    );
    Ok(pb::CreateSshSessionResponse {
        sandbox_id: s.id.clone(),
        token,
        gateway_scheme: "https".into(),
        expiration_time: Some(super::sandboxes::timestamp(expires)),
        ..pb::CreateSshSessionResponse::default()
    })
}

/// `RevokeSshSession`.
pub fn revoke(
    standin: &StandIn,
    req: &pb::RevokeSshSessionRequest,
) -> Result<pb::RevokeSshSessionResponse, Status> {
    let outcome = match lock(&standin.tokens).tokens.remove(&req.token) {
        Some(_) => pb::DeletionOutcome::Completed,
        None if req.allow_missing => pb::DeletionOutcome::AlreadyAbsent,
        None => return Err(Status::not_found("ssh session not found")),
    };
    Ok(pb::RevokeSshSessionResponse {
        outcome: outcome as i32,
    })
}

/// One open connection's place in the counts, given back when it ends.
struct Held {
    standin: Arc<StandIn>,
    token: String,
    sandbox_id: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut t = lock(&self.standin.tokens);
        if let Some(tok) = t.tokens.get_mut(&self.token) {
            tok.open = tok.open.saturating_sub(1);
        }
        if let Some(n) = t.per_sandbox.get_mut(&self.sandbox_id) {
            *n = n.saturating_sub(1);
        }
    }
}

/// Admits a connection to `sandbox` on `token`, counting it.
fn admit(standin: &Arc<StandIn>, token: &str, sandbox: &Sandbox) -> Result<Held, Status> {
    if token.is_empty() {
        return Err(Status::unauthenticated("authorization token is required"));
    }
    let mut t = lock(&standin.tokens);
    let Tokens {
        tokens,
        per_sandbox,
    } = &mut *t;
    let tok = tokens
        .get_mut(token)
        .filter(|k| k.sandbox_id == sandbox.id && k.expires > SystemTime::now())
        .ok_or_else(|| Status::unauthenticated("invalid or expired authorization token"))?;
    if tok.open >= PER_TOKEN {
        return Err(Status::resource_exhausted(
            "SSH session connection limit reached",
        ));
    }
    let n = per_sandbox.entry(sandbox.id.clone()).or_default();
    if *n >= PER_SANDBOX {
        return Err(Status::resource_exhausted(
            "sandbox SSH connection limit reached",
        ));
    }
    tok.open += 1;
    *n += 1;
    Ok(Held {
        standin: standin.clone(),
        token: token.to_owned(),
        sandbox_id: sandbox.id.clone(),
    })
}

/// The frames `ForwardTcp` answers with.
pub type FrameStream = tokio_stream::wrappers::ReceiverStream<Result<TcpForwardFrame, Status>>;

/// `ForwardTcp`.
pub async fn forward(
    gateway: &super::service::Gateway,
    mut frames: tonic::Streaming<TcpForwardFrame>,
) -> Result<FrameStream, Status> {
    let first = frames
        .message()
        .await?
        .ok_or_else(|| Status::invalid_argument("the stream ended before its init frame"))?;
    let Some(Payload::Init(init)) = first.payload else {
        return Err(Status::invalid_argument("the first frame must be init"));
    };
    let port = match &init.target {
        Some(Target::Tcp(t)) => {
            if !matches!(t.host.as_str(), "127.0.0.1" | "::1" | "localhost") {
                return Err(Status::invalid_argument(
                    "tcp forward target must be loopback",
                ));
            }
            u16::try_from(t.port)
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| Status::invalid_argument("tcp forward port is out of range"))?
        }
        Some(Target::Ssh(_)) => {
            return Err(Status::unimplemented(
                "the stand-in forwards tcp targets only",
            ));
        }
        None => return Err(Status::invalid_argument("a forward target is required")),
    };
    let ws = if init.workspace.is_empty() {
        super::DEFAULT_WORKSPACE.to_owned()
    } else {
        init.workspace.clone()
    };
    let s = gateway
        .standin
        .get(&ws, &init.sandbox)
        .ok_or_else(|| Status::unauthenticated("invalid or expired authorization token"))?;
    let held = admit(&gateway.standin, &init.authorization_token, &s)?;
    let (_, machine) = gateway.ready_machine(&ws, &init.sandbox)?;
    let (to_port, stdin) = mpsc::channel::<Vec<u8>>(16);
    let argv = vec![
        "node".to_owned(),
        "-e".to_owned(),
        BRIDGE.to_owned(),
        port.to_string(),
    ];
    let mut started = machine
        .exec_with(argv, Input::Stream(stdin))
        .await
        .map_err(|e| Status::unavailable(format!("relay failed: {e}")))?;
    // The client's frames, into the connection.
    tokio::spawn(async move {
        while let Ok(Some(f)) = frames.message().await {
            let stop = match f.payload {
                Some(Payload::Data(b)) => !b.is_empty() && to_port.send(b).await.is_err(),
                Some(Payload::Init(_)) => true,
                None => false,
            };
            if stop {
                return;
            }
        }
    });
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let _held = held;
        loop {
            tokio::select! {
                chunk = started.output.next() => match chunk {
                    Some(Ok(LogOutput::StdOut { message })) => {
                        let f = TcpForwardFrame { payload: Some(Payload::Data(message.to_vec())) };
                        if tx.send(Ok(f)).await.is_err() {
                            return;
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                },
                () = tx.closed() => return,
            }
        }
        if machine.exit_code(&started.exec_id).await == Some(REFUSED_EXIT) {
            let _ = tx
                .send(Err(Status::unavailable(format!(
                    "relay failed: nothing accepts connections on port {port}"
                ))))
                .await;
        }
    });
    Ok(tokio_stream::wrappers::ReceiverStream::new(rx))
}
