//! Docker's two credentials: the access token Docker Hub's token exchange
//! mints for a Docker ID and personal access token (`POST /v2/auth/token`,
//! sent as `Authorization: Bearer` to the management API), and the short
//! endpoint credential minted per sandbox (sent to `core.endpoint.uri`).
//!
//! An access token is JWT-shaped (header, payload with `exp`, signature;
//! base64url) so a client can read `exp` to schedule its refresh; the
//! stand-in accepts exactly the tokens it minted and has not seen expire,
//! never the PAT. Neither a PAT nor a token is ever logged.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::json;

use super::{Credential, StandIn, error, lock, random_id, unserved};

/// The permissions an endpoint credential may carry.
pub const PERMISSIONS: &[&str] = &["sandboxesExec", "sandboxesFilesRead", "sandboxesFilesWrite"];

/// The token exchange's routes.
pub fn router(standin: Arc<StandIn>) -> Router {
    Router::new()
        .route("/v2/auth/token", post(exchange))
        .fallback(unserved)
        .with_state(standin)
}

#[derive(Deserialize)]
struct Exchange {
    identifier: String,
    secret: String,
}

/// Hub's refusal shape for a bad login.
fn refused() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"detail": "Incorrect authentication credentials", "message": "Incorrect authentication credentials"})),
    )
        .into_response()
}

async fn exchange(Shared(s): Shared<Arc<StandIn>>, body: Bytes) -> Response {
    let Ok(e) = serde_json::from_slice::<Exchange>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"message": "identifier and secret are required"})),
        )
            .into_response();
    };
    if e.identifier != s.settings.username || e.secret != s.settings.token {
        return refused();
    }
    let token = mint_access_token(&s, &e.identifier);
    axum::Json(json!({"access_token": token})).into_response()
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Mints and records an access token for `subject`.
pub fn mint_access_token(s: &StandIn, subject: &str) -> String {
    let now = SystemTime::now();
    let exp = now + s.settings.access_token_ttl;
    let header = json!({"alg": "HS256", "typ": "JWT"});
    let claims = json!({
        "iss": "https://login.docker.com/",
        "sub": subject,
        "aud": "https://connect.docker.com/sandboxes",
        "iat": unix(now),
        "exp": unix(exp),
        "jti": random_id(16),
        "scope": "sandbox:use",
    });
    let part = |v: &serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let token = format!(
        "{}.{}.{}",
        part(&header),
        part(&claims),
        URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
    );
    lock(&s.access_tokens).insert(token.clone(), exp);
    token
}

/// The bearer token of a request, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

fn unauthenticated(message: &str, reason: &str) -> Response {
    error(
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        message,
        vec![json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "sandboxes.docker.com",
        })],
    )
}

/// Middleware for the management API: an unexpired minted access token.
pub async fn management(
    Shared(s): Shared<Arc<StandIn>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let ok = bearer(req.headers()).is_some_and(|t| {
        lock(&s.access_tokens)
            .get(t)
            .is_some_and(|exp| *exp > SystemTime::now())
    });
    if !ok {
        let reason = match bearer(req.headers()) {
            None => "TOKEN_MISSING",
            Some(_) => "TOKEN_INVALID",
        };
        return unauthenticated("invalid or expired access token", reason);
    }
    next.run(req).await
}

/// Mints an endpoint credential for sandbox `uid`.
pub fn mint_credential(
    s: &StandIn,
    uid: &str,
    ttl: Duration,
    permissions: Vec<String>,
) -> (String, Credential) {
    let token = format!(
        "sbxe_{}",
        URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
    );
    let c = Credential {
        sandbox: uid.to_owned(),
        expires: SystemTime::now() + ttl,
        permissions,
    };
    lock(&s.credentials).insert(token.clone(), c.clone());
    (token, c)
}

/// Checks the endpoint credential of a call to sandbox `uid` needing
/// `permission`; `Ok` gives the credential (its expiry bounds the call).
pub fn endpoint_credential(
    s: &StandIn,
    headers: &HeaderMap,
    uid: &str,
    permission: &str,
) -> Result<Credential, Box<Response>> {
    let found = bearer(headers).and_then(|t| lock(&s.credentials).get(t).cloned());
    let Some(c) = found.filter(|c| c.sandbox == uid) else {
        return Err(Box::new(unauthenticated(
            "invalid endpoint credential",
            "ENDPOINT_CREDENTIAL_INVALID",
        )));
    };
    if c.expires <= SystemTime::now() {
        return Err(Box::new(expired()));
    }
    if !c.permissions.iter().any(|p| p == permission) {
        return Err(Box::new(error(
            StatusCode::FORBIDDEN,
            "permissionDenied",
            format!("the endpoint credential lacks {permission}"),
            vec![json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "PERMISSION_MISSING",
                "domain": "sandboxes.docker.com",
                "metadata": {"permission": permission},
            })],
        )));
    }
    Ok(c)
}

/// 401 for a credential that expired (before or during a call).
pub fn expired() -> Response {
    unauthenticated("endpoint credential expired", "ENDPOINT_CREDENTIAL_EXPIRED")
}
