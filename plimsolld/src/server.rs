//! The HTTP edge: routing, answer binding, authentication, body caps, health.
//!
//! Order on every procedure call: `Host` (an IP address or `localhost` only
//! when no authentication is configured: no DNS rebinding) → route (unknown → 404, `unsupported`) →
//! method → bearer auth (before the body is read) → content type → a body
//! slot ([`crate::bodies`]; none → 503, `capacity`) → body cap and deadline →
//! the procedure. Every answer echoes a well-formed `Plimsoll-Request-Id`;
//! every error written before a procedure carries `Plimsoll-Not-Dispatched`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use plimsoll_core::error::Refusal;
use plimsoll_core::wire::connect::{ConnectCode, ConnectError};

use crate::rpc::{self, App, Procedure};

/// The raw request body cap (8 MiB).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// The longest a request body may take to arrive, from its headers on.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The least time between two log lines saying why `/readyz` answered 503.
pub const NOT_READY_LOG_EVERY: Duration = Duration::from_secs(30);
const REQUEST_ID: &str = "plimsoll-request-id";
const NOT_DISPATCHED: &str = "plimsoll-not-dispatched";

/// The router: one fallback handler owns every path, so ordering is explicit.
pub fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(app)
}

/// A 32-lowercase-hex request id, if the request carried exactly one.
fn request_id(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut values = headers.get_all(REQUEST_ID).iter();
    let v = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let b = v.as_bytes();
    (b.len() == 32 && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))).then(|| v.clone())
}

async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let id = request_id(req.headers());
    let mut resp = route(&app, req).await;
    if let Some(id) = id {
        resp.headers_mut().insert(REQUEST_ID, id);
    }
    resp
}

fn plain(status: StatusCode, body: &'static str) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A Connect error answer. `pre_handler` adds the `Plimsoll-Not-Dispatched` header.
pub fn error_response(
    err: &ConnectError,
    status: Option<StatusCode>,
    pre_handler: Option<Refusal>,
) -> Response {
    let mut r = Response::new(Body::from(err.to_json()));
    *r.status_mut() = status
        .or_else(|| StatusCode::from_u16(err.code.http_status()).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(reason) = pre_handler {
        r.headers_mut()
            .insert(NOT_DISPATCHED, HeaderValue::from_static(reason.as_str()));
    }
    r
}

/// A 200 JSON answer.
pub fn ok_json(body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn edge_refusal(code: ConnectCode, status: StatusCode, message: &str) -> Response {
    let err = ConnectError::new(code, message).refused(Refusal::Request);
    error_response(&err, Some(status), Some(Refusal::Request))
}

/// Whether `host` (a `Host` header or an HTTP/2 authority) is one a DNS
/// rebinding attack cannot send: an IP literal, `localhost` or a name under
/// `.localhost`, with or without a port. A page that rebinds its own name
/// to this daemon's address still sends its own name.
pub fn rebinding_safe_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((ip, port)) if port.is_empty() || port.starts_with(':') => {
                return ip.parse::<std::net::Ipv6Addr>().is_ok();
            }
            _ => return false,
        },
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<std::net::Ipv4Addr>().is_ok()
}

/// The request's host: its `Host` header, or its URI's authority (HTTP/2).
fn host_of(req: &Request) -> Option<&str> {
    match req.headers().get(header::HOST) {
        Some(h) => h.to_str().ok(),
        None => req.uri().authority().map(|a| a.as_str()),
    }
}

async fn route(app: &App, req: Request) -> Response {
    if app.open_hosts_checked && !host_of(&req).is_some_and(rebinding_safe_host) {
        return edge_refusal(
            ConnectCode::PermissionDenied,
            StatusCode::MISDIRECTED_REQUEST,
            "with no authentication configured, plimsolld answers only requests whose Host is an IP address or localhost",
        );
    }
    let path = req.uri().path().to_owned();
    if req.method() == Method::GET {
        match path.as_str() {
            "/healthz" => return plain(StatusCode::OK, "ok"),
            "/readyz" => {
                return match app.engine.ready().await {
                    Ok(()) => plain(StatusCode::OK, "ready"),
                    Err(e) => {
                        if due(&app.not_ready_logged, NOT_READY_LOG_EVERY) {
                            tracing::warn!(error = e.message(), "not ready");
                        }
                        plain(StatusCode::SERVICE_UNAVAILABLE, "not ready")
                    }
                };
            }
            _ => {}
        }
    }
    let Some(Some(procedure)) = Procedure::from_path(&path) else {
        let err = ConnectError::new(ConnectCode::Unimplemented, "no such procedure");
        return error_response(
            &err,
            Some(StatusCode::NOT_FOUND),
            Some(Refusal::Unsupported),
        );
    };
    if req.method() != Method::POST {
        return edge_refusal(
            ConnectCode::InvalidArgument,
            StatusCode::METHOD_NOT_ALLOWED,
            "procedures take POST",
        );
    }
    let principal = match app.verifier.authorize(
        req.headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes),
    ) {
        Ok(p) => p,
        Err(e) => return error_response(&ConnectError::from(&e), None, Some(Refusal::Request)),
    };
    if let Some((status, message)) = check_headers(req.headers()) {
        return edge_refusal(ConnectCode::InvalidArgument, status, message);
    }
    let declared = declared_length(req.headers());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return too_large();
    }
    let slot = match app.bodies.take(&principal.id, declared) {
        Ok(slot) => slot,
        Err(full) => {
            let err = ConnectError::new(ConnectCode::ResourceExhausted, full.message())
                .refused(Refusal::Capacity);
            let mut r = error_response(
                &err,
                Some(StatusCode::SERVICE_UNAVAILABLE),
                Some(Refusal::Capacity),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return r;
        }
    };
    let bytes = match read_body(req).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => return too_large(),
        Err(BodyError::Slow) => {
            return edge_refusal(
                ConnectCode::DeadlineExceeded,
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive within 30 s",
            );
        }
        Err(BodyError::Broken) => {
            return edge_refusal(
                ConnectCode::InvalidArgument,
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
    };
    let body = rpc::Body { bytes, slot };
    match rpc::dispatch(app, procedure, &principal, body).await {
        Ok(json) => ok_json(json),
        Err(e) => error_response(&e, None, None),
    }
}

/// Refuses what the edge cannot accept: another content type, another
/// Connect protocol version, a compressed body.
fn check_headers(h: &HeaderMap) -> Option<(StatusCode, &'static str)> {
    let ct = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = ct.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return Some((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the content type must be application/json",
        ));
    }
    if h.get("connect-protocol-version")
        .is_some_and(|v| v.as_bytes() != b"1")
    {
        return Some((
            StatusCode::BAD_REQUEST,
            "Connect-Protocol-Version must be 1",
        ));
    }
    if h.get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        return Some((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "compressed request bodies are not accepted",
        ));
    }
    None
}

/// Whether a throttled log line is due: at most one per `every`.
pub fn due(last: &std::sync::Mutex<Option<Instant>>, every: Duration) -> bool {
    let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
    if last.is_some_and(|t| t.elapsed() < every) {
        return false;
    }
    *last = Some(Instant::now());
    true
}

/// The body length a request declares, if it declares one.
fn declared_length(h: &HeaderMap) -> Option<u64> {
    h.get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Why a body was not read.
enum BodyError {
    /// Past [`MAX_BODY_BYTES`] as it arrived.
    TooLarge,
    /// Not all there within [`BODY_READ_TIMEOUT`].
    Slow,
    /// The stream broke.
    Broken,
}

fn too_large() -> Response {
    edge_refusal(
        ConnectCode::ResourceExhausted,
        StatusCode::PAYLOAD_TOO_LARGE,
        "the request body exceeds 8 MiB",
    )
}

/// Reads the body under the cap and the deadline.
async fn read_body(req: Request) -> Result<Bytes, BodyError> {
    let limited = http_body_util::Limited::new(req.into_body(), MAX_BODY_BYTES);
    match tokio::time::timeout(BODY_READ_TIMEOUT, http_body_util::BodyExt::collect(limited)).await {
        Err(_) => Err(BodyError::Slow),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Ok(Err(_)) => Err(BodyError::Broken),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_a_rebinding_page_cannot_send() {
        for h in [
            "localhost",
            "localhost:8746",
            "LOCALHOST:1",
            "api.localhost",
            "127.0.0.1",
            "127.0.0.1:8746",
            "10.0.0.1:8746",
            "0.0.0.0:8746",
            "[::1]",
            "[::1]:8746",
            "[fe80::1]:8746",
        ] {
            assert!(rebinding_safe_host(h), "{h}");
        }
        for h in [
            "",
            "evil.example",
            "evil.example:8746",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8746",
            "[evil]:8746",
            "[::1]x",
        ] {
            assert!(!rebinding_safe_host(h), "{h}");
        }
    }

    #[test]
    fn a_throttled_line_is_due_once_a_period() {
        let last = std::sync::Mutex::new(None);
        assert!(due(&last, Duration::from_secs(30)));
        assert!(!due(&last, Duration::from_secs(30)));
        assert!(due(&last, Duration::ZERO));
    }
}
