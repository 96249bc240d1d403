//! Grants on OpenShell: a relay in the sandbox that plimsoll dials into, so
//! the sandbox keeps no network rule and the credential stays outside it.
//!
//! A granted run starts `relay.js` in its sandbox (a held-open gateway
//! command, killed when the run drops it) before any guest code: it listens
//! on [`HOST_API_SOCKET`] for the guest's host API client and on a random
//! loopback port for plimsoll. The provider keeps [`IDLE`] connections
//! dialled into that port through the gateway's `ForwardTcp` (tokens from
//! `CreateSshSession`, at most [`PER_TOKEN`] connections each, at most
//! [`MAX_OPEN`] open in all, under the gateway's 3 per token and 20 per
//! sandbox) and serves the run's broker on each, exactly as the docker
//! socket serves it; the relay pairs each guest connection with one of
//! them. A dial that fails, or a connection that ends unused, is retried
//! after a pause doubling from [`BACKOFF_MIN`] to [`BACKOFF_MAX`]. When the
//! run ends the connections close, the relay is killed and the tokens are
//! revoked.
//!
//! The relay and everything on its side run as the guest: a guest that
//! stops or replaces it only loses its own host API. What a call may do is
//! decided by the broker, outside the sandbox.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

use super::Inner;
use super::gateway::Interactive;
use crate::error::{Error, Result};
use crate::grant::Broker;
use crate::provider::hosted::http::excerpt;
use crate::secret::Secret;

/// The relay's directory in the sandbox (under the writable `/tmp`).
pub const RELAY_DIR: &str = "/tmp/.plimsoll-relay";
/// The socket the guest's host API client connects to (`HOST_API_SOCKET`).
pub const HOST_API_SOCKET: &str = "/tmp/.plimsoll-relay/host-api.sock";
/// Where the image keeps the Node host API client (images/clients/host.js).
pub const NODE_CLIENT: &str = "/usr/local/lib/plimsoll/host.js";
/// Connections kept dialled in and waiting for the guest.
pub const IDLE: usize = 2;
/// Connections open at once, at most.
pub const MAX_OPEN: usize = 18;
/// Connections opened on one token, at most.
pub const PER_TOKEN: usize = 3;
/// The first pause after a failed dial.
pub const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// The longest pause between dials while they keep failing.
pub const BACKOFF_MAX: Duration = Duration::from_millis(6400);
/// How long the relay may take to listen.
const START_BUDGET: Duration = Duration::from_secs(20);
/// The relay's source.
const SOURCE: &str = include_str!("relay.js");

/// A granted run's relay. Dropping it closes its connections, kills the
/// relay and revokes its tokens.
pub(crate) struct Relay {
    _command: Interactive,
    pool: JoinHandle<()>,
    tokens: Arc<Mutex<Vec<Arc<Secret>>>>,
    inner: Arc<Inner>,
}

impl Relay {
    /// Starts the relay in sandbox `name` and begins dialling in; returns
    /// once the relay listens.
    pub(crate) async fn start(
        inner: &Arc<Inner>,
        name: &str,
        broker: Arc<Broker>,
    ) -> Result<Relay> {
        let port: u16 = 20_000 + rand::random::<u16>() % 40_000;
        let cmd = [
            "node".to_owned(),
            "-e".to_owned(),
            SOURCE.to_owned(),
            port.to_string(),
            RELAY_DIR.to_owned(),
        ];
        let mut command = inner.gateway.interactive(name, &cmd, "/").await?;
        tokio::time::timeout(START_BUDGET, listening(&mut command))
            .await
            .map_err(|_| {
                Error::infrastructure(format!(
                    "the grant relay did not listen within {} s",
                    START_BUDGET.as_secs()
                ))
            })??;
        let tokens = Arc::default();
        let pool = tokio::spawn(keep(
            inner.clone(),
            name.to_owned(),
            port,
            broker,
            Arc::clone(&tokens),
        ));
        Ok(Relay {
            _command: command,
            pool,
            tokens,
            inner: inner.clone(),
        })
    }

    /// `cmd` run with the host API's address in its environment.
    pub(crate) fn wrap(cmd: Vec<String>) -> Vec<String> {
        let mut out = vec![
            "/usr/bin/env".to_owned(),
            format!("HOST_API_SOCKET={HOST_API_SOCKET}"),
        ];
        out.extend(cmd);
        out
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.pool.abort();
        let tokens = std::mem::take(&mut *self.tokens.lock().unwrap_or_else(|e| e.into_inner()));
        if tokens.is_empty() {
            return;
        }
        let inner = self.inner.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                for t in tokens {
                    if let Err(e) = inner.gateway.revoke(&t).await {
                        tracing::warn!(error = %e, "an OpenShell forward token was not revoked; it ends with its sandbox");
                    }
                }
            });
        }
    }
}

/// Waits for the relay's `ready` line; its exit first is an error with its stderr.
async fn listening(command: &mut Interactive) -> Result<()> {
    use plimsoll_openshell_proto::v1::exec_sandbox_event::Payload;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    loop {
        let event = command
            .events
            .message()
            .await
            .map_err(|s| Error::infrastructure(format!("the grant relay: {}", s.message())))?;
        match event.and_then(|e| e.payload) {
            Some(Payload::Stdout(d)) => {
                out.extend_from_slice(&d.data);
                if out.starts_with(b"ready\n") {
                    return Ok(());
                }
            }
            Some(Payload::Stderr(d)) if err.len() < 4096 => err.extend_from_slice(&d.data),
            Some(Payload::Exit(e)) => {
                return Err(Error::infrastructure(format!(
                    "the grant relay ended (exit {}) before it listened: {}",
                    e.exit_code,
                    excerpt(&err, &[])
                )));
            }
            Some(_) => {}
            None => {
                return Err(Error::infrastructure(
                    "the grant relay's stream ended before it listened",
                ));
            }
        }
    }
}

/// What a connection tells the pool.
enum Event {
    /// Its first bytes came: it is no longer idle.
    Used,
    /// It closed (opened on token `token`).
    Ended { token: usize, used: bool },
}

/// Keeps [`IDLE`] connections dialled in until aborted.
async fn keep(
    inner: Arc<Inner>,
    name: String,
    port: u16,
    broker: Arc<Broker>,
    tokens: Arc<Mutex<Vec<Arc<Secret>>>>,
) {
    let mut conns = JoinSet::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Connections open per token, by the token's index.
    let mut per_token: Vec<usize> = Vec::new();
    let (mut idle, mut open) = (0usize, 0usize);
    let mut backoff = BACKOFF_MIN;
    let mut failing = false;
    loop {
        while idle < IDLE && open < MAX_OPEN {
            if failing {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            let t = match per_token.iter().position(|n| *n < PER_TOKEN) {
                Some(t) => t,
                None => match inner.gateway.forward_token(&name).await {
                    Ok(token) => {
                        tokens
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(Arc::new(token));
                        per_token.push(0);
                        per_token.len() - 1
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "grant relay: no forward token");
                        failing = true;
                        continue;
                    }
                },
            };
            let token = tokens.lock().unwrap_or_else(|e| e.into_inner())[t].clone();
            match inner.gateway.forward(&name, &token, port).await {
                Ok(io) => {
                    failing = false;
                    per_token[t] += 1;
                    idle += 1;
                    open += 1;
                    conns.spawn(serve(io, broker.clone(), tx.clone(), t));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "grant relay: a forward failed");
                    failing = true;
                }
            }
        }
        let Some(event) = rx.recv().await else { return };
        match event {
            Event::Used => {
                idle -= 1;
                backoff = BACKOFF_MIN;
            }
            Event::Ended { token, used } => {
                open -= 1;
                per_token[token] -= 1;
                if !used {
                    idle -= 1;
                    failing = true;
                }
            }
        }
        while conns.try_join_next().is_some() {}
    }
}

/// Serves the broker on one dialled-in connection until it closes.
async fn serve(
    io: DuplexStream,
    broker: Arc<Broker>,
    tell: mpsc::UnboundedSender<Event>,
    token: usize,
) {
    let used = Arc::new(AtomicBool::new(false));
    let watched = Watched {
        io,
        used: used.clone(),
        tell: tell.clone(),
    };
    crate::grant::socket::serve_broker(watched, broker).await;
    let _ = tell.send(Event::Ended {
        token,
        used: used.load(Ordering::Relaxed),
    });
}

/// A connection that tells the pool when its first bytes arrive.
struct Watched {
    io: DuplexStream,
    used: Arc<AtomicBool>,
    tell: mpsc::UnboundedSender<Event>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before && !self.used.swap(true, Ordering::Relaxed) {
            let _ = self.tell.send(Event::Used);
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
