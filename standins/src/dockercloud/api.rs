//! The management API, under the path prefix `/sandboxes`: the `Sandbox`
//! resource (`name: "sandboxes/<uid>"`, camelCase fields, int64 as strings,
//! a strong quoted etag that changes with every status change), list paging
//! and filters, delete under `If-Match`, endpoint credentials, renewing the
//! timeout and reading the network policies.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State as Shared};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{PERMISSIONS, management, mint_credential};
use super::create::{create, duration};
use super::{
    MAX_CREDENTIAL_TTL, Sandbox, StandIn, Status, error, invalid, lock, sandbox_not_found, unserved,
};
use crate::time::rfc3339;

type App = Shared<Arc<StandIn>>;

/// The management routes, nested under `/sandboxes`.
pub fn router(standin: Arc<StandIn>) -> Router {
    let v1 = Router::new()
        .route("/v1/sandboxes", post(create).get(list))
        .route("/v1/sandboxes/{sandbox}", get(read).delete(delete))
        .route("/v1/sandboxes/{sandbox}/renew-timeout", post(renew))
        .route(
            "/v1/sandboxes/{sandbox}/endpoint-credentials",
            post(credentials),
        )
        .route(
            "/v1/sandboxes/{sandbox}/network-policies",
            get(sandbox_policy),
        )
        .route("/v1/network-policies", get(account_policy))
        .fallback(unserved)
        .layer(axum::middleware::from_fn_with_state(
            standin.clone(),
            throttle,
        ))
        .layer(axum::middleware::from_fn_with_state(
            standin.clone(),
            management,
        ));
    let policy = Router::new()
        .route(
            "/v1/sandboxes/{sandbox}/network-policy",
            axum::routing::put(super::policy::put),
        )
        .layer(axum::middleware::from_fn_with_state(
            standin.clone(),
            management,
        ));
    Router::new()
        .nest("/sandboxes", v1)
        .nest("/sbx", super::sbx::management())
        .merge(policy)
        .fallback(unserved)
        .with_state(standin)
}

/// [`super::Faults::throttle_reads`]: every second GET is 429.
async fn throttle(
    Shared(s): App,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let throttled = s.settings.faults.throttle_reads
        && req.method() == axum::http::Method::GET
        && s.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 0;
    if throttled {
        let mut r = error(
            StatusCode::TOO_MANY_REQUESTS,
            "resourceExhausted",
            "rate limit exceeded",
            vec![json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"})],
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
    next.run(req).await
}

/// A duration as protobuf JSON prints it (`"300s"`, `"1.5s"`).
pub fn print_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        let s = format!("{}.{:09}", d.as_secs(), d.subsec_nanos());
        format!("{}s", s.trim_end_matches('0'))
    }
}

/// The `Sandbox` resource.
pub fn render(s: &StandIn, b: &Sandbox) -> Value {
    let life = lock(&b.life);
    let mut core = json!({
        "status": life.status.as_str(),
        "createdAt": rfc3339(b.created_at),
        "etag": life.etag,
        "agent": "",
        "resources": {"cpus": b.cpus, "memoryMib": b.memory_mib.to_string()},
        "platform": {"os": "linux", "architecture": "amd64"},
        "environment": b.environment,
        "labels": b.labels,
        "imageRef": b.image_ref,
        "ports": [],
        "appliedKits": [],
    });
    if life.status == Status::Running {
        let uri = s.endpoint_uri(&b.uid);
        core["endpoint"] = json!({
            "uri": uri,
            "protocol": "http",
            "credentialAudience": uri,
            "sandbox": format!("sandboxes/{}", b.uid),
            "sandboxUid": b.uid,
            "apiVersion": "v1",
            "capabilities": ["exec", "upload", "download"],
            "authentication": {
                "scheme": "scopedBearer",
                "defaultTtl": "300s",
                "maxTtl": "300s",
                "credentialTransports": ["authorizationHeader"],
            },
        });
    }
    let mut v = json!({
        "name": format!("sandboxes/{}", b.uid),
        "uid": b.uid,
        "displayName": b.display_name,
        "core": core,
        "effectiveFeatures": {
            "lifecycle": {"stopMemoryOutcome": "discard", "canCaptureMemory": false},
            "timeouts": {
                "onTimeout": b.on_timeout,
                "autoResume": false,
                "initialTimeout": print_duration(b.initial_timeout),
                "expiresAt": rfc3339(life.expires_at),
            },
        },
    });
    if let Some(f) = &life.failure {
        v["failure"] = json!({"code": "internal", "message": f, "details": []});
    }
    v
}

/// One sandbox with its `ETag`: a create's answer (`create`: 202 while
/// creating, else 201) or a read's (200).
pub fn respond(s: &StandIn, b: &Sandbox, create: bool) -> Response {
    let body = render(s, b);
    let status = match (create, body["core"]["status"].as_str()) {
        (false, _) => StatusCode::OK,
        (true, Some("creating")) => StatusCode::ACCEPTED,
        (true, _) => StatusCode::CREATED,
    };
    let mut r = (status, axum::Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&lock(&b.life).etag) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

async fn read(Shared(s): App, Path(uid): Path<String>, headers: HeaderMap) -> Response {
    let Some(b) = s.get(&uid) else {
        return sandbox_not_found(&uid);
    };
    let etag = lock(&b.life).etag.clone();
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        let mut r = StatusCode::NOT_MODIFIED.into_response();
        if let Ok(v) = HeaderValue::from_str(&etag) {
            r.headers_mut().insert(header::ETAG, v);
        }
        return r;
    }
    respond(&s, &b, false)
}

fn matches(b: &Sandbox, field: &str, value: &str) -> bool {
    match field {
        "name" => value == format!("sandboxes/{}", b.uid),
        "display_name" => value == b.display_name,
        "uid" => value == b.uid,
        "status" => value == lock(&b.life).status.as_str(),
        "agent" => value.is_empty(),
        _ => false,
    }
}

async fn list(Shared(s): App, Query(q): Query<Vec<(String, String)>>) -> Response {
    let param = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let size = match param("pageSize").map(str::parse::<i64>) {
        None | Some(Ok(0)) => 25,
        Some(Ok(n)) if n > 0 => n.min(100) as usize,
        _ => return invalid("pageSize", "pageSize must be a non-negative integer"),
    };
    let mut filters = Vec::new();
    for term in param("filter").unwrap_or_default().split(',') {
        if term.trim().is_empty() {
            continue;
        }
        let Some((f, v)) = term.split_once('=') else {
            return invalid("filter", format!("filter term {term:?} is not field=value"));
        };
        let f = f.trim();
        if !["name", "display_name", "uid", "status", "agent"].contains(&f) {
            return invalid("filter", format!("cannot filter on {f:?}"));
        }
        filters.push((f.to_owned(), v.trim().to_owned()));
    }
    let by_name = match param("orderBy") {
        None | Some("") | Some("created_at") => false,
        Some("name") => true,
        Some(o) => return invalid("orderBy", format!("cannot order by {o:?}")),
    };
    let start = match param("pageToken").filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => match URL_SAFE_NO_PAD
            .decode(t)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| t.strip_prefix("offset:")?.parse::<usize>().ok())
        {
            Some(n) => n,
            None => return invalid("pageToken", "invalid pageToken"),
        },
    };
    let mut all: Vec<Arc<Sandbox>> = lock(&s.sandboxes)
        .values()
        .filter(|b| filters.iter().all(|(f, v)| matches(b, f, v)))
        .cloned()
        .collect();
    if by_name {
        all.sort_by(|a, b| a.uid.cmp(&b.uid));
    } else {
        all.sort_by_key(|b| b.seq);
    }
    let page: Vec<Value> = all
        .iter()
        .skip(start)
        .take(size)
        .map(|b| render(&s, b))
        .collect();
    let next = if start + page.len() < all.len() {
        URL_SAFE_NO_PAD.encode(format!("offset:{}", start + page.len()))
    } else {
        String::new()
    };
    axum::Json(json!({"sandboxes": page, "nextPageToken": next})).into_response()
}

async fn delete(Shared(s): App, Path(uid): Path<String>, headers: HeaderMap) -> Response {
    let Some(given) = headers.get(header::IF_MATCH) else {
        return error(
            StatusCode::PRECONDITION_REQUIRED,
            "failedPrecondition",
            "If-Match with the sandbox's current etag is required",
            vec![json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "etag_required",
                "domain": "sandboxes.docker.com",
            })],
        );
    };
    let Some(b) = s.get(&uid) else {
        return StatusCode::NO_CONTENT.into_response();
    };
    let current = lock(&b.life).etag.clone();
    if given.as_bytes() != current.as_bytes() {
        return error(
            StatusCode::PRECONDITION_FAILED,
            "failedPrecondition",
            "the etag does not match the sandbox's current etag",
            vec![json!({
                "@type": "type.googleapis.com/docker.sandboxes.v1.EtagMismatch",
                "currentEtag": current,
            })],
        );
    }
    lock(&b.life).set(Status::Deleting);
    let answer = respond(&s, &b, false);
    let (mut parts, body) = answer.into_parts();
    parts.status = StatusCode::ACCEPTED;
    let standin = s.clone();
    tokio::spawn(async move { standin.delete(&uid).await });
    Response::from_parts(parts, body)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Renew {
    timeout: String,
}

async fn renew(Shared(s): App, Path(uid): Path<String>, body: Bytes) -> Response {
    let Some(b) = s.get(&uid) else {
        return sandbox_not_found(&uid);
    };
    let r: Renew = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return invalid("timeout", e.to_string()),
    };
    let Some(d) = duration(&r.timeout).filter(|d| !d.is_zero()) else {
        return invalid("timeout", format!("invalid duration {:?}", r.timeout));
    };
    {
        let mut life = lock(&b.life);
        if life.status != Status::Running {
            return error(
                StatusCode::CONFLICT,
                "failedPrecondition",
                format!("sandbox is {}", life.status.as_str()),
                Vec::new(),
            );
        }
        life.expires_at = SystemTime::now() + d;
        life.etag = super::new_etag();
    }
    respond(&s, &b, false)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CredentialRequest {
    permissions: Option<Vec<String>>,
    ttl: Option<String>,
}

async fn credentials(Shared(s): App, Path(uid): Path<String>, body: Bytes) -> Response {
    let Some(b) = s.get(&uid) else {
        return sandbox_not_found(&uid);
    };
    let r: CredentialRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CredentialRequest::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(r) => r,
            Err(e) => return invalid("", e.to_string()),
        }
    };
    // Required, at least one, each known, none twice (the schema's rules).
    let Some(permissions) = r.permissions.filter(|p| !p.is_empty()) else {
        return invalid("permissions", "at least one permission is required");
    };
    if let Some(p) = permissions
        .iter()
        .find(|p| !PERMISSIONS.contains(&p.as_str()))
    {
        return invalid("permissions", format!("unknown permission {p:?}"));
    }
    if (1..permissions.len()).any(|i| permissions[..i].contains(&permissions[i])) {
        return invalid("permissions", "permissions must be unique");
    }
    let ttl = match r.ttl.as_deref().map(duration) {
        None => MAX_CREDENTIAL_TTL,
        Some(Some(d)) => d.clamp(Duration::from_secs(1), MAX_CREDENTIAL_TTL),
        Some(None) => return invalid("ttl", "invalid duration"),
    };
    let status = lock(&b.life).status;
    if matches!(status, Status::Failed | Status::Deleting) {
        return error(
            StatusCode::CONFLICT,
            "failedPrecondition",
            format!("sandbox is {}", status.as_str()),
            Vec::new(),
        );
    }
    let (token, c) = mint_credential(&s, &uid, ttl, permissions);
    let uri = s.endpoint_uri(&uid);
    let mut r = axum::Json(json!({
        "token": token,
        "expireTime": rfc3339(c.expires),
        "permissions": c.permissions,
        "sandbox": format!("sandboxes/{uid}"),
        "audience": uri,
    }))
    .into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The policy body the stand-in reports (and, faults aside, enforces);
/// `sandbox`: that sandbox's, else the account's.
fn policy(s: &StandIn, sandbox: Option<&Sandbox>) -> Value {
    let f = s.settings.faults;
    let mode = if f.account_allow_all {
        "allowAll"
    } else {
        "denyAll"
    };
    let allow: Vec<Value> = match sandbox {
        Some(_) if f.policy_allows => vec![json!({"network": "0.0.0.0/0", "layer": "l4"})],
        Some(b) => lock(&b.allow)
            .iter()
            .map(|n| json!({"network": n, "layer": "l4"}))
            .collect(),
        None => Vec::new(),
    };
    json!({
        "effective": {"mode": mode, "allowNetworks": allow, "denyNetworks": []},
        "exact": {"revision": "1", "selectorVersion": "destination.v1", "nodes": []},
    })
}

fn policy_denied(s: &StandIn) -> Option<Response> {
    s.settings.faults.deny_policy_read.then(|| {
        error(
            StatusCode::FORBIDDEN,
            "permissionDenied",
            "the token lacks the permission to read network policies",
            vec![json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "PERMISSION_DENIED",
                "domain": "sandboxes.docker.com",
                "metadata": {"permission": "networkPoliciesRead"},
            })],
        )
    })
}

async fn sandbox_policy(Shared(s): App, Path(uid): Path<String>) -> Response {
    if let Some(r) = policy_denied(&s) {
        return r;
    }
    let Some(b) = s.get(&uid) else {
        return sandbox_not_found(&uid);
    };
    axum::Json(policy(&s, Some(&b))).into_response()
}

async fn account_policy(Shared(s): App) -> Response {
    if let Some(r) = policy_denied(&s) {
        return r;
    }
    axum::Json(policy(&s, None)).into_response()
}
