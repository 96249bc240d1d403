//! The host side of a sandbox's path to the broker: a Unix socket in a fresh
//! host directory, bind-mounted into a container. Plain HTTP/1.1 on the socket:
//! the request line's method and target, the body and its content type are
//! all the broker sees; every other header is dropped.
//!
//! The socket serves the broker set with [`HostSocket::serve`] (in a session,
//! the grant of the call in progress) and answers 503 when none is set.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::UnixListener;
use tokio::sync::Semaphore;

use crate::grant::broker::{Broker, GuestCall, MAX_REQUEST_BYTES};

/// The socket's file name inside its directory.
pub const SOCKET_NAME: &str = "host-api.sock";
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;

type Current = Arc<Mutex<Option<Arc<Broker>>>>;

/// A listening per-run (or per-session) broker socket. Dropping it stops the
/// server and removes its directory.
pub struct HostSocket {
    dir: PathBuf,
    current: Current,
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
    /// Creates a fresh directory under `parent` holding a listening socket
    /// that any uid may connect to (the guest runs as an unprivileged uid).
    pub fn start(parent: &Path) -> std::io::Result<HostSocket> {
        let dir = parent.join(format!(
            "plimsoll-broker-{}",
            hex::encode(rand::random::<[u8; 8]>())
        ));
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        let path = dir.join(SOCKET_NAME);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
        let current: Current = Arc::default();
        let task = tokio::spawn(accept(listener, current.clone()));
        Ok(HostSocket { dir, current, task })
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
}

impl Drop for HostSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn accept(listener: UnixListener, current: Current) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let current = current.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, current.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
}

fn answer(status: u16, content_type: &str, body: Vec<u8>) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::BAD_GATEWAY);
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

async fn handle(
    req: hyper::Request<Incoming>,
    current: Current,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let broker = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let Some(broker) = broker else {
        return Ok(answer(
            503,
            "application/json",
            br#"{"error":"no grant is active"}"#.to_vec(),
        ));
    };
    let method = req.method().as_str().to_owned();
    // The raw target, query included, so the broker's canonical check refuses a query.
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let content_type = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match Limited::new(req.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => {
            return Ok(answer(
                413,
                "application/json",
                br#"{"error":"the request body exceeds 1 MiB"}"#.to_vec(),
            ));
        }
    };
    let a = broker
        .call(GuestCall {
            method,
            target,
            body,
            content_type,
        })
        .await;
    Ok(answer(a.status, &a.content_type, a.body))
}
