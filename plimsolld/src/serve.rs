//! The connection loop every listener runs: HTTP/1.1 and HTTP/2 (by prior
//! knowledge, or by ALPN over TLS), each connection under three bounds.
//!
//! - **Headers**: a connection has [`Timeouts::header_read`] for its TLS
//!   handshake, and HTTP/1.1 has it again for each request's headers
//!   (hyper's timer, restarted while the connection waits between requests);
//!   headers are capped at [`MAX_HEADER_BYTES`].
//! - **Idle**: a connection with no request in flight for [`Timeouts::idle`]
//!   is closed, HTTP/2 included, whatever bytes trickle in; one that has
//!   not started a request yet gets [`Timeouts::header_read`] for it.
//! - **Body**: the handler's own deadline ([`crate::server::BODY_READ_TIMEOUT`]).
//!
//! A request in flight (a run may take minutes) is never cut by these; the
//! listener's cap ([`crate::listener`]) closes idle connections first. On
//! `stop`, the loop stops accepting, lets every connection finish the
//! requests it has, and returns when they are all closed.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use crate::listener::{Conn, Counted, Guarded};

/// The most header bytes (request line included) a request may send.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Concurrent HTTP/2 streams per connection.
pub const MAX_STREAMS: u32 = 64;
/// How often a connection checks its idle time.
const IDLE_CHECK: Duration = Duration::from_millis(500);

/// A listener's connection timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// For the TLS handshake and each request's headers.
    pub header_read: Duration,
    /// For a connection with no request in flight.
    pub idle: Duration,
}

/// The RPC and guard listeners' timeouts: headers in 10 s, idle 60 s.
pub const RPC: Timeouts = Timeouts {
    header_read: Duration::from_secs(10),
    idle: Duration::from_secs(60),
};

/// The metrics listener's timeouts: 10 s for each.
pub const METRICS: Timeouts = Timeouts {
    header_read: Duration::from_secs(10),
    idle: Duration::from_secs(10),
};

/// Serves `router` on `listener` until `stop`, then drains.
pub async fn serve(
    mut listener: Guarded,
    tls: Option<TlsAcceptor>,
    router: axum::Router,
    timeouts: Timeouts,
    stop: CancellationToken,
) {
    // Every connection's task holds a sender: when the last one is dropped,
    // the receiver sees the channel close, and every connection is done.
    let (open, mut all_closed) = tokio::sync::mpsc::channel::<Infallible>(1);
    loop {
        let io = tokio::select! {
            (io, _) = listener.accept() => io,
            () = stop.cancelled() => break,
        };
        let held = open.clone();
        let served = connection(io, tls.clone(), router.clone(), timeouts, stop.clone());
        tokio::spawn(async move {
            served.await;
            drop(held);
        });
    }
    drop((listener, open));
    let _ = all_closed.recv().await;
}

async fn connection(
    io: Counted,
    tls: Option<TlsAcceptor>,
    router: axum::Router,
    timeouts: Timeouts,
    stop: CancellationToken,
) {
    let conn = io.conn();
    match tls {
        None => drive(io, conn, router, timeouts, stop).await,
        Some(tls) => {
            let handshake = tokio::select! {
                done = tokio::time::timeout(timeouts.header_read, tls.accept(io)) => done,
                () = conn.evicted() => return,
            };
            if let Ok(Ok(io)) = handshake {
                drive(io, conn, router, timeouts, stop).await;
            }
        }
    }
}

async fn drive<I>(
    io: I,
    conn: Arc<Conn>,
    router: axum::Router,
    timeouts: Timeouts,
    stop: CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let on = conn.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let busy = on.begin();
        let mut router = router.clone();
        async move {
            // An axum Router is always ready.
            let answer = router.call(req.map(Body::new)).await;
            drop(busy);
            Ok::<_, Infallible>(answer.unwrap_or_else(|never| match never {}))
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header_read)
        .max_buf_size(MAX_HEADER_BYTES);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(MAX_HEADER_BYTES as u32)
        .max_concurrent_streams(MAX_STREAMS);
    let served = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(served);
    let mut tick = tokio::time::interval(IDLE_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = served.as_mut() => return,
            () = conn.evicted() => return,
            () = stop.cancelled(), if !draining => {
                draining = true;
                served.as_mut().graceful_shutdown();
            }
            _ = tick.tick() => {
                // Until its first request, a connection has the header
                // timeout (the protocol is not even known yet).
                let limit = if conn.served() { timeouts.idle } else { timeouts.header_read };
                if conn.idle_for().is_some_and(|d| d >= limit) {
                    return;
                }
            }
        }
    }
}
