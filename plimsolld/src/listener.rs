//! The accept loop, kept clear of the file-descriptor limit and of idle
//! connections.
//!
//! Every accepted connection costs a descriptor, and so does what a run needs
//! around it (docker's socket, the run's pidfds, a broker socket). So each
//! listener keeps at most its own cap of connections open ([`Guarded::cap`]):
//! the RPC and guard listeners share the process's `RLIMIT_NOFILE` soft limit
//! less a reserve for runs ([`caps_for`]), and the metrics listener has
//! [`METRICS_CAP`]. At its cap, a listener makes room by closing the
//! connection that has waited longest without a request in flight (idle, or
//! still sending its headers), so connections held open for nothing cannot
//! lock a real caller out. Only when every connection has a request in flight
//! is a new one answered with a typed capacity refusal (HTTP 503, Connect
//! `resource_exhausted`, `Plimsoll-Not-Dispatched: capacity`) instead of
//! letting `accept` fail. If `accept` fails anyway (`EMFILE`, `ENFILE`: the
//! descriptors went elsewhere), the loop backs off [`BACKOFF`] before trying
//! again, never spinning, and warns at most once per [`WARN_EVERY`]. A flood
//! of refused connections beyond [`MAX_REFUSING`] within one
//! [`REFUSAL_BUDGET`] is dropped without an answer (the client sees a reset).
//! The timeouts themselves are [`crate::serve`]'s.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use plimsoll_core::error::Refusal;
use plimsoll_core::wire::connect::{ConnectCode, ConnectError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The pause after an `accept` that failed for want of descriptors.
pub const BACKOFF: Duration = Duration::from_millis(100);
/// The least time between two warnings of a failing `accept`.
pub const WARN_EVERY: Duration = Duration::from_secs(10);
/// The most a refused connection is kept open (read, answer, drain).
pub const REFUSAL_BUDGET: Duration = Duration::from_millis(500);
/// Refusals being written at once; more connections past the cap are closed.
pub const MAX_REFUSING: usize = 64;
/// The metrics listener's connection cap.
pub const METRICS_CAP: usize = 64;

/// One open connection, as the accept loop and the serve loop see it.
#[derive(Debug)]
pub struct Conn {
    busy: AtomicUsize,
    served: std::sync::atomic::AtomicBool,
    idle_since: Mutex<Instant>,
    close: CancellationToken,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            busy: AtomicUsize::new(0),
            served: std::sync::atomic::AtomicBool::new(false),
            idle_since: Mutex::new(Instant::now()),
            close: CancellationToken::new(),
        }
    }

    /// Marks a request in flight until the returned guard is dropped.
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.served.store(true, Ordering::SeqCst);
        self.busy.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    /// How long the connection has been without a request in flight
    /// (`None` while one is).
    pub fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(
            self.idle_since
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .elapsed(),
        )
    }

    /// Whether a request has ever started on it.
    pub fn served(&self) -> bool {
        self.served.load(Ordering::SeqCst)
    }

    /// Resolves when the accept loop closed this connection to make room.
    pub async fn evicted(&self) {
        self.close.cancelled().await;
    }
}

/// A request in flight on a [`Conn`].
#[derive(Debug)]
pub struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut since = self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner());
        if self.0.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            *since = Instant::now();
        }
    }
}

type Registry = Arc<Mutex<HashMap<u64, Arc<Conn>>>>;

/// A listener that counts its open connections and makes room, or refuses,
/// past its cap.
pub struct Guarded {
    inner: TcpListener,
    open: Arc<AtomicUsize>,
    conns: Registry,
    next: u64,
    refusing: Arc<AtomicUsize>,
    cap: usize,
    warned: Option<Instant>,
}

/// The connection caps of the RPC and the guard listener for a descriptor
/// limit `nofile`: the limit less a reserve of a quarter of it (at least 32,
/// at most 256) for runs, three quarters of that for RPC and the rest for the
/// guard, so a flood on one never takes the other's connections.
pub fn caps_for(nofile: u64) -> (usize, usize) {
    let reserve = (nofile / 4).clamp(32, 256);
    let total = nofile.saturating_sub(reserve).max(2) as usize;
    let guard = (total / 4).max(1);
    (total - guard, guard)
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
    /// Wraps `inner`, keeping at most `cap` connections open.
    pub fn new(inner: TcpListener, cap: usize) -> Guarded {
        Guarded {
            inner,
            open: Arc::default(),
            conns: Arc::default(),
            next: 0,
            refusing: Arc::default(),
            cap: cap.max(1),
            warned: None,
        }
    }

    /// The most connections kept open at once.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Closes the connection longest without a request in flight; false
    /// when every connection has one.
    fn evict_idlest(&self) -> bool {
        let conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        let idlest = conns
            .values()
            .filter(|c| !c.close.is_cancelled())
            .filter_map(|c| c.idle_for().map(|d| (d, c)))
            .max_by_key(|(d, _)| *d);
        match idlest {
            Some((_, c)) => {
                c.close.cancel();
                true
            }
            None => false,
        }
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

    /// The next connection to serve.
    pub async fn accept(&mut self) -> (Counted, SocketAddr) {
        loop {
            match self.inner.accept().await {
                Ok((s, addr)) => {
                    if self.open.load(Ordering::SeqCst) >= self.cap && !self.evict_idlest() {
                        self.refuse(s);
                        continue;
                    }
                    self.open.fetch_add(1, Ordering::SeqCst);
                    self.next += 1;
                    let conn = Arc::new(Conn::new());
                    self.conns
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(self.next, conn.clone());
                    let counted = Counted {
                        s,
                        id: self.next,
                        conn,
                        open: self.open.clone(),
                        conns: self.conns.clone(),
                    };
                    return (counted, addr);
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

/// An accepted connection, counted until it is dropped.
pub struct Counted {
    s: TcpStream,
    id: u64,
    conn: Arc<Conn>,
    open: Arc<AtomicUsize>,
    conns: Registry,
}

impl Counted {
    /// Its state, shared with the accept loop.
    pub fn conn(&self) -> Arc<Conn> {
        self.conn.clone()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
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
    fn the_caps_leave_a_reserve_and_split_rpc_from_the_guard() {
        assert_eq!(caps_for(256), (144, 48));
        assert_eq!(caps_for(64), (24, 8));
        assert_eq!(caps_for(1024), (576, 192));
        let (rpc, guard) = caps_for(1 << 20);
        assert_eq!(rpc + guard, (1 << 20) - 256);
        assert_eq!(caps_for(10), (1, 1));
    }

    async fn answer_of(mut s: TcpStream) -> Vec<u8> {
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
        answer
    }

    #[tokio::test]
    async fn at_the_cap_the_idlest_connection_makes_room() {
        let mut l = Guarded::new(TcpListener::bind("127.0.0.1:0").await.unwrap(), 2);
        let addr = l.inner.local_addr().unwrap();
        let _c1 = TcpStream::connect(addr).await.unwrap();
        let (first, _) = l.accept().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let _c2 = TcpStream::connect(addr).await.unwrap();
        let (second, _) = l.accept().await;
        let busy = second.conn().begin();
        let _c3 = TcpStream::connect(addr).await.unwrap();
        let (third, _) = l.accept().await;
        // The first had no request in flight: it was told to close.
        assert!(first.conn().close.is_cancelled());
        assert!(!second.conn().close.is_cancelled());
        drop(first);
        // Now the third is idle and the second busy: the third goes next.
        let _c4 = TcpStream::connect(addr).await.unwrap();
        let (_fourth, _) = l.accept().await;
        assert!(third.conn().close.is_cancelled());
        assert!(!second.conn().close.is_cancelled());
        drop(busy);
        assert!(second.conn().idle_for().is_some());
    }

    #[tokio::test]
    async fn when_every_connection_is_busy_a_new_one_is_refused() {
        let mut l = Guarded::new(TcpListener::bind("127.0.0.1:0").await.unwrap(), 1);
        let addr = l.inner.local_addr().unwrap();
        let _c1 = TcpStream::connect(addr).await.unwrap();
        let (held, _) = l.accept().await;
        let _busy = held.conn().begin();
        let second = TcpStream::connect(addr).await.unwrap();
        let accepting = tokio::spawn(async move { l.accept().await.1 });
        let answer = answer_of(second).await;
        assert!(
            answer.starts_with(b"HTTP/1.1 503 "),
            "{:?}",
            String::from_utf8_lossy(&answer)
        );
        assert!(!held.conn().close.is_cancelled());
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
