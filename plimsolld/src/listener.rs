//! The accept loop, kept clear of the file-descriptor limit.
//!
//! Every accepted connection costs a descriptor, and so does what a run needs
//! around it (docker's socket, the run's pidfds, a broker socket). So the
//! listener keeps at most [`Guarded::cap`] connections open — the process's
//! `RLIMIT_NOFILE` soft limit less a reserve for runs — and answers a
//! connection past that at once with a typed capacity refusal (HTTP 503,
//! Connect `resource_exhausted`, `Plimsoll-Not-Dispatched: capacity`) instead
//! of letting `accept` fail. If `accept` fails anyway (`EMFILE`, `ENFILE`: the
//! descriptors went elsewhere), the loop backs off [`BACKOFF`] before trying
//! again, never spinning, and warns at most once per [`WARN_EVERY`]. What
//! this does not cover: idle connections are not timed out here, and a
//! flood of refused connections beyond [`MAX_REFUSING`] within one
//! [`REFUSAL_BUDGET`] is dropped without an answer (the client sees a reset).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use plimsoll_core::error::Refusal;
use plimsoll_core::wire::connect::{ConnectCode, ConnectError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// The pause after an `accept` that failed for want of descriptors.
pub const BACKOFF: Duration = Duration::from_millis(100);
/// The least time between two warnings of a failing `accept`.
pub const WARN_EVERY: Duration = Duration::from_secs(10);
/// The most a refused connection is kept open (read, answer, drain).
pub const REFUSAL_BUDGET: Duration = Duration::from_millis(500);
/// Refusals being written at once; more connections past the cap are closed.
pub const MAX_REFUSING: usize = 64;

/// A listener that counts its open connections and refuses past a cap.
pub struct Guarded {
    inner: TcpListener,
    open: Arc<AtomicUsize>,
    refusing: Arc<AtomicUsize>,
    cap: usize,
    warned: Option<Instant>,
}

/// The connection cap for a descriptor limit `nofile`: the limit less a
/// reserve of a quarter of it, at least 32 and at most 256, for runs.
pub fn cap_for(nofile: u64) -> usize {
    let reserve = (nofile / 4).clamp(32, 256);
    nofile.saturating_sub(reserve).max(1) as usize
}

/// The soft `RLIMIT_NOFILE` of this process, from `/proc/self/limits`
/// (`None` when unreadable or unlimited).
pub fn nofile_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Guarded {
    /// Wraps `inner`, capping connections for this process's descriptor limit.
    pub fn new(inner: TcpListener) -> Guarded {
        let cap = nofile_limit().map_or(usize::MAX, cap_for);
        Guarded {
            inner,
            open: Arc::default(),
            refusing: Arc::default(),
            cap,
            warned: None,
        }
    }

    /// Another listener under the same cap: its connections and this one's
    /// count together (the guard listener beside the RPC one).
    pub fn sibling(&self, inner: TcpListener) -> Guarded {
        Guarded {
            inner,
            open: self.open.clone(),
            refusing: self.refusing.clone(),
            cap: self.cap,
            warned: None,
        }
    }

    /// The most connections kept open at once.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Answers `s` with the capacity refusal, off the accept loop.
    fn refuse(&self, s: TcpStream) {
        if self.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
            self.refusing.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let refusing = self.refusing.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REFUSAL_BUDGET, refuse(s)).await;
            refusing.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// The 503 answer for a connection past the cap.
fn refusal() -> Vec<u8> {
    let body = ConnectError::new(
        ConnectCode::ResourceExhausted,
        "plimsolld is at its connection limit (its file-descriptor limit less a reserve for runs); retry later",
    )
    .refused(Refusal::Capacity)
    .to_json();
    let mut out = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         plimsoll-not-dispatched: {}\r\nretry-after: 1\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n",
        Refusal::Capacity.as_str(),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

async fn refuse(mut s: TcpStream) {
    // Read what the client sent first, so closing does not reset the answer.
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(100), s.read(&mut buf)).await;
    if s.write_all(&refusal()).await.is_ok() {
        let _ = s.shutdown().await;
        while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

impl axum::serve::Listener for Guarded {
    type Io = Counted;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Counted, SocketAddr) {
        loop {
            match self.inner.accept().await {
                Ok((s, addr)) => {
                    if self.open.load(Ordering::SeqCst) >= self.cap {
                        self.refuse(s);
                        continue;
                    }
                    self.open.fetch_add(1, Ordering::SeqCst);
                    let open = self.open.clone();
                    return (Counted { s, open }, addr);
                }
                Err(e) if is_connection_error(&e) => {}
                Err(e) => {
                    if self.warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                        self.warned = Some(Instant::now());
                        tracing::warn!(
                            error = %e,
                            open = self.open.load(Ordering::SeqCst),
                            "accept failed; backing off"
                        );
                    }
                    tokio::time::sleep(BACKOFF).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// An accepted connection, counted until it is dropped.
pub struct Counted {
    s: TcpStream,
    open: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.s).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.s).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.s).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.s).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.s).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.s.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_a_reserve() {
        assert_eq!(cap_for(256), 192);
        assert_eq!(cap_for(64), 32);
        assert_eq!(cap_for(1024), 768);
        assert_eq!(cap_for(1 << 20), (1 << 20) - 256);
        assert_eq!(cap_for(10), 1);
    }

    #[tokio::test]
    async fn a_sibling_shares_the_cap() {
        use axum::serve::Listener;
        let mut rpc = Guarded::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
        rpc.cap = 1;
        let mut guard = rpc.sibling(TcpListener::bind("127.0.0.1:0").await.unwrap());
        let _first = TcpStream::connect(rpc.local_addr().unwrap()).await.unwrap();
        let (held, _) = rpc.accept().await;
        assert_eq!(guard.open.load(Ordering::SeqCst), 1);
        // The guard listener is at the shared cap: its connection is refused.
        let mut second = TcpStream::connect(guard.local_addr().unwrap())
            .await
            .unwrap();
        let accepting = tokio::spawn(async move { guard.accept().await.1 });
        second.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), second.read_to_end(&mut answer)).await;
        assert!(
            answer.starts_with(b"HTTP/1.1 503 "),
            "{:?}",
            String::from_utf8_lossy(&answer)
        );
        drop(held);
        accepting.abort();
    }

    #[test]
    fn reads_this_process_limit() {
        assert!(nofile_limit().is_some_and(|n| n > 0));
    }

    #[test]
    fn the_refusal_is_a_typed_capacity_answer() {
        let r = String::from_utf8(refusal()).unwrap();
        assert!(r.starts_with("HTTP/1.1 503 "));
        assert!(r.contains("plimsoll-not-dispatched: capacity\r\n"));
        assert!(r.contains("\"code\":\"resource_exhausted\""));
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
    }
}
