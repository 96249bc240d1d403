//! The HTTP edge: routing, answer binding, authentication, body caps, health.
//!
//! Order on every procedure call: route (unknown → 404, `unsupported`) →
//! method → bearer auth (before the body is read) → content type → body cap →
//! the procedure. Every answer echoes a well-formed `Plimsoll-Request-Id`; every
//! error written before a procedure carries `Plimsoll-Not-Dispatched`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use plimsoll_core::error::Refusal;
use plimsoll_core::wire::connect::{ConnectCode, ConnectError};

use crate::rpc::{self, App, Procedure};

/// The raw request body cap (8 MiB).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
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

async fn route(app: &App, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    if req.method() == Method::GET {
        match path.as_str() {
            "/healthz" => return plain(StatusCode::OK, "ok"),
            "/readyz" => {
                return match app.engine.ready().await {
                    Ok(()) => plain(StatusCode::OK, "ready"),
                    Err(e) => {
                        tracing::warn!(error = e.message(), "not ready");
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
    let Some(body) = read_body(req).await else {
        return edge_refusal(
            ConnectCode::ResourceExhausted,
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body exceeds 8 MiB",
        );
    };
    match rpc::dispatch(app, procedure, &principal, &body).await {
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

/// Reads the body under the cap; `None` when it is too large.
async fn read_body(req: Request) -> Option<Bytes> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return None;
    }
    axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
        .await
        .ok()
}
