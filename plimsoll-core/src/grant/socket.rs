//! The host side of a sandbox's path to the broker: a Unix socket in a fresh
//! host directory, bind-mounted into a container. Plain HTTP/1.1 on the socket:
//! the request line's method and target, the body and its content type are
//! all the broker sees; every other header is dropped.
//!
//! The socket serves the broker set with [`HostSocket::serve`] (in a session,
//! the grant of the call in progress) and answers 503 when none is set.
//!
//! Only the run's guest reaches it, by two walls. The directory is created
//! `0700` and, with the socket (`0600`), handed to the guest uid, so no other
//! unprivileged host user can traverse to it. Every accepted connection's
//! peer credentials (`SO_PEERCRED`) are then checked against [`Access`]: under
//! runc the peer is the guest process itself (its host uid is the guest uid);
//! under runsc with `--host-uds=open` the connect is made by the sandbox's
//! gofer, a root process running the `runsc` binary, so a uid-0 peer is let
//! in only when [`Access::via_runsc`] is set and the peer's executable is
//! named `runsc`. Anyone else is disconnected without an answer.
//!
//! What this does not cover: host root. Root bypasses the directory's mode and
//! can forge a process named `runsc`; it can read the daemon's memory anyway.
//! Nor another sandbox running as the same guest uid: that one cannot see this
//! run's directory (it is mounted only into this run's container).

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;

use crate::grant::broker::{Broker, GuestAnswer, GuestCall, MAX_REQUEST_BYTES};

/// The socket's file name inside its directory.
pub const SOCKET_NAME: &str = "host-api.sock";
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;
/// The first pause after a failed accept (for example `EMFILE`); it doubles
/// on every further failure in a row, up to [`ACCEPT_BACKOFF_MAX`].
pub const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);
/// The longest pause between accepts while they keep failing.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_millis(100);
/// How much of an oversized body is read and thrown away before the 413 is
/// sent. Answering while the guest is still writing would close the
/// connection under it and the guest would see `EPIPE` instead of the 413;
/// reading (not keeping) the rest lets a sender that writes before it reads
/// get the answer. Past this bound the connection is closed.
pub const MAX_DISCARDED_BYTES: usize = 8 * MAX_REQUEST_BYTES;

type Current = Arc<Mutex<Option<Arc<Broker>>>>;

/// Who may connect to a broker socket.
///
/// What it does not cover: which *process* of the guest uid connects (any
/// process of the guest uid that can reach the path is the guest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The uid guest code runs as; it owns the socket and its directory, and
    /// a peer of this uid is accepted.
    pub guest_uid: u32,
    /// The sandbox runs under runsc with `--host-uds=open`: the connect comes
    /// from its gofer (uid 0, executable `runsc`), which is accepted too.
    pub via_runsc: bool,
}

/// What the accept loop has counted, for tests and diagnostics.
#[derive(Debug, Default)]
struct Counters {
    /// Accepts that failed (for example `EMFILE`).
    accept_errors: AtomicU64,
    /// Connections refused because their peer is not the guest.
    refused_peers: AtomicU64,
}

/// A listening per-run (or per-session) broker socket. Dropping it stops the
/// server and removes its directory.
pub struct HostSocket {
    dir: PathBuf,
    current: Current,
    counters: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for HostSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSocket")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl HostSocket {
    /// Creates a fresh directory under `parent` (mode `0700`) holding a
    /// listening socket (mode `0600`), both owned by `access.guest_uid`, and
    /// serves only peers [`Access`] admits. Fails when the directory cannot
    /// be handed to the guest uid (the daemon needs `CAP_CHOWN` unless the
    /// guest uid is its own); nothing is left behind then.
    pub fn start(parent: &Path, access: Access) -> std::io::Result<HostSocket> {
        let (dir, listener) = bind(parent, "plimsoll-broker", access)?;
        let current: Current = Arc::default();
        let counters = Arc::new(Counters::default());
        let task = tokio::spawn(accept(listener, current.clone(), access, counters.clone()));
        Ok(HostSocket {
            dir,
            current,
            counters,
            task,
        })
    }

    /// The directory to bind-mount (it holds only the socket).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The socket's host path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(SOCKET_NAME)
    }

    /// Sets (or clears) the broker the socket serves.
    pub fn serve(&self, broker: Option<Arc<Broker>>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = broker;
    }

    /// How many accepts have failed so far (each followed by a pause, so a
    /// persistent failure such as `EMFILE` does not spin).
    pub fn accept_errors(&self) -> u64 {
        self.counters.accept_errors.load(Ordering::Relaxed)
    }

    /// How many connections were refused because their peer is not the guest.
    pub fn refused_peers(&self) -> u64 {
        self.counters.refused_peers.load(Ordering::Relaxed)
    }
}

impl Drop for HostSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Creates `<parent>/<prefix>-<16 hex>` (mode `0700`) with a listening
/// [`SOCKET_NAME`] in it (mode `0600`), both handed to the guest uid; the
/// directory is never traversable by others, not even for a moment. Shared
/// with the docker startup proof, which mounts its probe socket this way.
pub(crate) fn bind(
    parent: &Path,
    prefix: &str,
    access: Access,
) -> std::io::Result<(PathBuf, UnixListener)> {
    let dir = parent.join(format!(
        "{prefix}-{}",
        hex::encode(rand::random::<[u8; 8]>())
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    let listen = || {
        let path = dir.join(SOCKET_NAME);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let owner = Some(access.guest_uid);
        std::os::unix::fs::chown(&path, owner, owner)?;
        std::os::unix::fs::chown(&dir, owner, owner)?;
        Ok(listener)
    };
    match listen() {
        Ok(listener) => Ok((dir, listener)),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}

/// Whether the peer of `stream` is one [`Access`] admits; the peer's uid when not.
pub(crate) fn admitted(stream: &UnixStream, access: Access) -> Result<(), Option<u32>> {
    let cred = stream.peer_cred().map_err(|_| None)?;
    let uid = cred.uid();
    if uid == access.guest_uid {
        return Ok(());
    }
    if access.via_runsc && uid == 0 {
        // The gofer: a root process whose executable is runsc.
        let runsc = cred
            .pid()
            .and_then(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok())
            .is_some_and(|exe| exe.file_name().is_some_and(|n| n == "runsc"));
        if runsc {
            return Ok(());
        }
    }
    Err(Some(uid))
}

async fn accept(listener: UnixListener, current: Current, access: Access, counters: Arc<Counters>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut backoff = ACCEPT_BACKOFF_MIN;
    let mut failing: u64 = 0;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                failing = 0;
                backoff = ACCEPT_BACKOFF_MIN;
                stream
            }
            Err(e) => {
                // A persistent error (EMFILE, ENFILE, ENOMEM) would be ready
                // again at once: pause, doubling, and log the 1st, 2nd, 4th,
                // 8th… failure of a streak rather than every one.
                counters.accept_errors.fetch_add(1, Ordering::Relaxed);
                failing += 1;
                if failing.is_power_of_two() {
                    tracing::warn!(error = %e, failures = failing, "broker socket: accept failed; backing off");
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        if let Err(uid) = admitted(&stream, access) {
            if counters.refused_peers.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    peer_uid = ?uid,
                    "broker socket: refused a connection that is not from the run's guest"
                );
            }
            drop(stream);
            continue;
        }
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let current = current.clone();
        tokio::spawn(async move {
            serve_connection(stream, current).await;
            drop(slot);
        });
    }
}

/// Serves the host API (plain HTTP/1.1, as on the socket) on one
/// connection from the guest, to `current`'s broker, until it closes.
async fn serve_connection<I>(io: I, current: Current)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| handle(req, current.clone()));
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// Serves the host API on one connection that reaches the guest some other
/// way than the socket (the OpenShell relay), to `broker`, until it closes.
#[cfg(feature = "openshell")]
pub(crate) async fn serve_broker<I>(io: I, broker: Arc<Broker>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    serve_connection(io, Arc::new(Mutex::new(Some(broker)))).await;
}

/// The HTTP response that carries a broker's answer (or refusal) to the guest.
pub(crate) fn respond(a: GuestAnswer) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from(a.body)));
    *r.status_mut() =
        hyper::StatusCode::from_u16(a.status).unwrap_or(hyper::StatusCode::BAD_GATEWAY);
    if let Ok(v) = hyper::header::HeaderValue::from_str(&a.content_type) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// A request body's media type, if it names one the broker can pass on.
pub(crate) fn content_type(headers: &hyper::HeaderMap) -> Option<String> {
    headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn handle(
    req: hyper::Request<Incoming>,
    current: Current,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let broker = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let Some(broker) = broker else {
        return Ok(respond(GuestAnswer::refusal(503, "no grant is active")));
    };
    let method = req.method().as_str().to_owned();
    // The raw target, query included, so the broker's canonical check refuses a query.
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let content_type = content_type(req.headers());
    let Some(body) = read_body(req.into_body()).await else {
        return Ok(respond(broker.refuse(
            &method,
            413,
            "the request body exceeds 1 MiB",
        )));
    };
    let a = broker
        .call(GuestCall {
            method,
            target,
            body,
            content_type,
        })
        .await;
    Ok(respond(a))
}

/// Reads a request body of at most [`MAX_REQUEST_BYTES`]; `None` when it is
/// larger (or broken). An oversized body is read on, and discarded, up to
/// [`MAX_DISCARDED_BYTES`], so the 413 reaches a sender still writing.
pub(crate) async fn read_body<B: hyper::body::Body<Data = Bytes>>(body: B) -> Option<Vec<u8>> {
    let mut body = std::pin::pin!(body);
    let mut kept = Vec::new();
    let mut seen: usize = 0;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { return None };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen <= MAX_REQUEST_BYTES {
            kept.extend_from_slice(&data);
        } else if seen > MAX_REQUEST_BYTES + MAX_DISCARDED_BYTES {
            return None;
        }
    }
    (seen <= MAX_REQUEST_BYTES).then_some(kept)
}
