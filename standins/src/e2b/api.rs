//! The E2B control plane: `X-API-Key` on every call, JSON bodies, errors as
//! `{"code": <status>, "message": …}`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State as Shared};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::vm::{Guarded, LABEL, Machine, MachineSpec};
use super::{
    DEFAULT_TIMEOUT_S, ENVD_VERSION, Life, MAX_TIMEOUT_S, Sandbox, StandIn, State, lock, random_id,
};
use crate::time::rfc3339;

type App = Shared<Arc<StandIn>>;

/// The control plane's routes.
pub fn router(standin: Arc<StandIn>) -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::NO_CONTENT }))
        .route("/sandboxes", post(create_v1).get(list_v1))
        .route("/v2/sandboxes", post(create_v2).get(list_v2))
        .route("/sandboxes/{id}", get(detail).delete(kill))
        .route("/sandboxes/{id}/timeout", post(set_timeout))
        .route("/sandboxes/{id}/refreshes", post(refresh))
        .route("/sandboxes/{id}/pause", post(pause))
        .route("/sandboxes/{id}/connect", post(connect))
        .route("/v2/sandboxes/{id}/connect", post(connect))
        .route("/sandboxes/{id}/resume", post(resume))
        .layer(axum::middleware::from_fn_with_state(
            standin.clone(),
            authorize,
        ))
        .with_state(standin)
}

/// An error answer that is not yet a response (small enough to return).
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

/// An error answer, `{"code": <status>, "message": …}` (envd's shape too).
pub fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({"code": status.as_u16(), "message": message.into()})),
    )
        .into_response()
}

async fn authorize(
    Shared(s): App,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let key = req.headers().get("x-api-key").and_then(|v| v.to_str().ok());
    match key {
        None => error(StatusCode::UNAUTHORIZED, "Missing API key"),
        Some(k) if k == s.settings.api_key => next.run(req).await,
        Some(_) => error(StatusCode::UNAUTHORIZED, "Invalid API key"),
    }
}

fn not_found(id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!("Sandbox \"{id}\" doesn't exist or you don't have access to it"),
    )
}

/// `NewSandbox` (the fields the stand-in reads).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewSandbox {
    #[serde(rename = "templateID")]
    template_id: String,
    timeout: Option<i64>,
    #[serde(default)]
    auto_pause: bool,
    secure: Option<bool>,
    #[serde(rename = "allow_internet_access")]
    allow_internet_access: Option<bool>,
    network: Option<Value>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default)]
    env_vars: BTreeMap<String, String>,
}

async fn create_v1(s: App, body: Json<NewSandbox>) -> Response {
    let secure = body.secure.unwrap_or(false);
    create(s, body, secure).await
}

/// v2 sandboxes are always secured with an envd access token.
async fn create_v2(s: App, body: Json<NewSandbox>) -> Response {
    create(s, body, true).await
}

fn ttl(timeout: Option<i64>) -> Result<Duration, ApiError> {
    let t = timeout.unwrap_or(DEFAULT_TIMEOUT_S as i64);
    if t <= 0 {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "Timeout must be greater than 0".into(),
        ));
    }
    if t as u64 > MAX_TIMEOUT_S {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!(
                "Timeout cannot be greater than {} hours",
                MAX_TIMEOUT_S / 3600
            ),
        ));
    }
    Ok(Duration::from_secs(t as u64))
}

/// What a create asks of outbound traffic.
#[derive(Debug)]
enum Way {
    /// Everything (no `denyOut 0.0.0.0/0`, internet access not turned off).
    Open,
    /// Nothing.
    Closed,
    /// Only these hosts, through the egress proxy, with these headers.
    Guarded(super::egress::Rules),
}

/// The egress a create asks for. `Err`: a filter the stand-in cannot
/// enforce (a partial deny; an allowed entry that is not a hostname with an
/// upstream; allowed entries without a full deny).
fn egress(s: &StandIn, body: &NewSandbox) -> Result<Way, ApiError> {
    let list = |k: &str| -> Vec<String> {
        body.network
            .as_ref()
            .and_then(|n| n.get(k))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (allow, deny) = (list("allowOut"), list("denyOut"));
    let deny_all =
        body.allow_internet_access == Some(false) || deny.iter().any(|d| d == "0.0.0.0/0");
    let refuse = |m: &str| Err(ApiError(StatusCode::BAD_REQUEST, m.to_owned()));
    if !deny.is_empty() && !deny_all {
        return refuse("this stand-in enforces no partial denyOut: deny 0.0.0.0/0 or nothing");
    }
    if allow.is_empty() {
        return Ok(if deny_all { Way::Closed } else { Way::Open });
    }
    let Some(proxy) = s.egress.get() else {
        return refuse(
            "this stand-in allows out only hostnames it has an upstream for (--upstream), and it has none",
        );
    };
    if !deny_all {
        return refuse("allowOut beside no deny is not supported by this stand-in");
    }
    let mut rules = super::egress::Rules::new();
    for host in &allow {
        let host = host.to_ascii_lowercase();
        if !proxy.serves(&host) {
            return refuse(&format!(
                "this stand-in allows out only hostnames it has an upstream for (--upstream), not {host:?}"
            ));
        }
        rules.insert(host, Vec::new());
    }
    let given = body
        .network
        .as_ref()
        .and_then(|n| n.get("rules"))
        .and_then(Value::as_object);
    for (host, list) in given.into_iter().flatten() {
        let Some(headers) = rules.get_mut(&host.to_ascii_lowercase()) else {
            // A rule grants no access: one for a host not allowed out is inert.
            continue;
        };
        for rule in list.as_array().into_iter().flatten() {
            let set = rule
                .pointer("/transform/headers")
                .and_then(Value::as_object);
            for (k, v) in set.into_iter().flatten() {
                let Some(v) = v.as_str() else {
                    return refuse("rules: a header value must be a string");
                };
                headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
                headers.push((k.clone(), v.to_owned()));
            }
        }
    }
    Ok(Way::Guarded(rules))
}

async fn create(Shared(s): App, Json(body): Json<NewSandbox>, secure: bool) -> Response {
    let template_id = body
        .template_id
        .split(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    let Some(template) = s.settings.templates.get(&template_id).cloned() else {
        return error(
            StatusCode::NOT_FOUND,
            format!("template '{}' not found", body.template_id),
        );
    };
    let ttl = match ttl(body.timeout) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let way = match egress(&s, &body) {
        Ok(w) => w,
        Err(r) => return r.into_response(),
    };
    let network = matches!(way, Way::Open) || s.settings.faults.allow_egress;
    let (guarded, egress_rules) = match (way, s.egress.get()) {
        (Way::Guarded(rules), Some(proxy)) => (
            Some(Guarded {
                network: proxy.network.clone(),
                extra_hosts: rules
                    .keys()
                    .map(|h| format!("{h}:{}", proxy.gateway))
                    .collect(),
                bundle: proxy.bundle.to_string_lossy().into_owned(),
            }),
            Some(rules),
        ),
        _ => (None, None),
    };
    let id = format!("i{}", random_id(20));
    let labels = HashMap::from([
        (LABEL.to_owned(), s.run_id.clone()),
        (format!("{LABEL}.sandbox"), id.clone()),
    ]);
    let spec = MachineSpec {
        image: template.image.clone(),
        runtime: s.settings.runtime.clone(),
        network,
        guarded,
        memory_mb: template.memory_mb,
        cpus: template.cpu_count,
        labels,
    };
    let machine = match Machine::create(&s.docker, &format!("e2b-standin-{id}"), &spec).await {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(error = %e, "creating a stand-in VM failed");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"code": 500, "message": "Failed to create sandbox", "error_code": "sandbox_create_failed"})),
            )
                .into_response();
        }
    };
    let now = SystemTime::now();
    let sandbox = Arc::new(Sandbox {
        id: id.clone(),
        template_id,
        client_id: hex::encode(rand::random::<[u8; 4]>()),
        envd_token: secure.then(|| hex::encode(rand::random::<[u8; 16]>())),
        metadata: body.metadata,
        env_vars: body.env_vars,
        network: body.network.unwrap_or(Value::Null),
        allow_internet_access: body.allow_internet_access,
        auto_pause: body.auto_pause,
        template,
        started_at: now,
        machine,
        life: Mutex::new(Life {
            state: State::Running,
            end_at: now + ttl,
        }),
        processes: Mutex::default(),
        homes: Mutex::default(),
        egress: egress_rules,
        egress_addr: Mutex::default(),
    });
    if let Err(e) = s.join_egress(&sandbox).await {
        tracing::error!(error = %e, "admitting a stand-in VM to the egress proxy failed");
        sandbox.machine.remove().await;
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"code": 500, "message": "Failed to create sandbox", "error_code": "sandbox_create_failed"})),
        )
            .into_response();
    }
    lock(&s.sandboxes).insert(id, sandbox.clone());
    (StatusCode::CREATED, Json(created(&s, &sandbox))).into_response()
}

/// The `Sandbox` body of a create, connect or resume.
fn created(s: &StandIn, b: &Sandbox) -> Value {
    let mut v = json!({
        "templateID": b.template_id,
        "sandboxID": b.id,
        "clientID": b.client_id,
        "envdVersion": ENVD_VERSION,
        "trafficAccessToken": null,
        "domain": s.settings.domain,
    });
    if let Some(t) = &b.envd_token
        && !s.settings.faults.omit_envd_token
    {
        v["envdAccessToken"] = json!(t);
    }
    v
}

/// `ListedSandbox`; `SandboxDetail` adds the token, network, lifecycle and domain.
fn listed(b: &Sandbox) -> Value {
    let life = lock(&b.life);
    json!({
        "templateID": b.template_id,
        "sandboxID": b.id,
        "clientID": b.client_id,
        "startedAt": rfc3339(b.started_at),
        "endAt": rfc3339(life.end_at),
        "cpuCount": b.template.cpu_count,
        "memoryMB": b.template.memory_mb,
        "diskSizeMB": b.template.disk_size_mb,
        "state": life.state.as_str(),
        "envdVersion": ENVD_VERSION,
        "metadata": b.metadata,
    })
}

async fn detail(Shared(s): App, Path(id): Path<String>) -> Response {
    let Some(b) = s.get(&id) else {
        return not_found(&id);
    };
    let mut v = listed(&b);
    if let Some(t) = &b.envd_token
        && !s.settings.faults.omit_envd_token
    {
        v["envdAccessToken"] = json!(t);
    }
    v["domain"] = json!(s.settings.domain);
    if !b.network.is_null() {
        v["network"] = b.network.clone();
    }
    v["allowInternetAccess"] = json!(b.allow_internet_access);
    v["lifecycle"] = json!({
        "autoResume": false,
        "onTimeout": if b.auto_pause { "pause" } else { "kill" },
    });
    Json(v).into_response()
}

/// Undoes `%XX` and `+` (the second encoding layer of a `metadata` query).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len()
                && b[i + 1].is_ascii_hexdigit()
                && b[i + 2].is_ascii_hexdigit() =>
            {
                let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(b[i + 1]) << 4 | hex(b[i + 2]));
                i += 3;
                continue;
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `metadata` filter: `k1=v1&k2=v2`, each part URL-encoded.
fn metadata_filter(q: &HashMap<String, String>) -> Vec<(String, String)> {
    q.get("metadata")
        .map(|m| {
            m.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (percent_decode(k), percent_decode(v))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn matching(s: &StandIn, q: &HashMap<String, String>, states: &[State]) -> Vec<Value> {
    let filter = metadata_filter(q);
    lock(&s.sandboxes)
        .values()
        .filter(|b| states.contains(&lock(&b.life).state))
        .filter(|b| filter.iter().all(|(k, v)| b.metadata.get(k) == Some(v)))
        .map(|b| listed(b))
        .collect()
}

async fn list_v1(Shared(s): App, Query(q): Query<HashMap<String, String>>) -> Response {
    Json(matching(&s, &q, &[State::Running])).into_response()
}

async fn list_v2(Shared(s): App, Query(q): Query<HashMap<String, String>>) -> Response {
    let states: Vec<State> = match q.get("state") {
        None => vec![State::Running, State::Paused],
        Some(v) => {
            let mut out = Vec::new();
            for name in v.split(',') {
                match name {
                    "running" => out.push(State::Running),
                    "paused" => out.push(State::Paused),
                    other => {
                        return error(StatusCode::BAD_REQUEST, format!("invalid state '{other}'"));
                    }
                }
            }
            out
        }
    };
    let limit = match q.get("limit").map(|l| l.parse::<usize>()) {
        None => 100,
        Some(Ok(l)) if (1..=100).contains(&l) => l,
        Some(_) => return error(StatusCode::BAD_REQUEST, "limit must be between 1 and 100"),
    };
    let start = match q.get("nextToken").map(|t| t.parse::<usize>()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "invalid next token"),
    };
    let all = matching(&s, &q, &states);
    let running = all.iter().filter(|v| v["state"] == "running").count();
    let page: Vec<Value> = all.iter().skip(start).take(limit).cloned().collect();
    let mut headers = HeaderMap::new();
    if start + page.len() < all.len()
        && let Ok(v) = (start + page.len()).to_string().parse()
    {
        headers.insert("x-next-token", v);
    }
    if let Ok(v) = running.to_string().parse() {
        headers.insert("x-total-running", v);
    }
    (headers, Json(page)).into_response()
}

async fn kill(Shared(s): App, Path(id): Path<String>) -> Response {
    if s.kill(&id).await {
        StatusCode::NO_CONTENT.into_response()
    } else {
        not_found(&id)
    }
}

#[derive(Debug, Deserialize)]
struct Timeout {
    timeout: i64,
}

async fn set_timeout(Shared(s): App, Path(id): Path<String>, Json(t): Json<Timeout>) -> Response {
    let Some(b) = s.get(&id) else {
        return not_found(&id);
    };
    if t.timeout < 0 {
        return error(StatusCode::BAD_REQUEST, "Timeout must not be negative");
    }
    let d = Duration::from_secs((t.timeout as u64).min(MAX_TIMEOUT_S));
    lock(&b.life).end_at = SystemTime::now() + d;
    StatusCode::NO_CONTENT.into_response()
}

#[derive(Debug, Deserialize)]
struct Refresh {
    #[serde(default)]
    duration: u64,
}

async fn refresh(Shared(s): App, Path(id): Path<String>, body: Option<Json<Refresh>>) -> Response {
    let Some(b) = s.get(&id) else {
        return not_found(&id);
    };
    let d = body.map_or(0, |Json(r)| r.duration);
    if d > 3600 {
        return error(
            StatusCode::BAD_REQUEST,
            "duration must be between 0 and 3600",
        );
    }
    let mut life = lock(&b.life);
    life.end_at = life.end_at.max(SystemTime::now() + Duration::from_secs(d));
    StatusCode::NO_CONTENT.into_response()
}

async fn pause(Shared(s): App, Path(id): Path<String>) -> Response {
    let Some(b) = s.get(&id) else {
        return not_found(&id);
    };
    match s.pause(&b).await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => error(
            StatusCode::CONFLICT,
            format!("Sandbox '{id}' cannot be paused while in 'paused' state"),
        ),
        Err(e) => {
            tracing::error!(sandbox = %id, error = %e, "pausing failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, "Error pausing sandbox")
        }
    }
}

/// Connects: 200 when already running (its expiry extended, never
/// shortened), 201 when it had to be resumed.
async fn connect(Shared(s): App, Path(id): Path<String>, Json(t): Json<Timeout>) -> Response {
    let Some(b) = s.get(&id) else {
        return not_found(&id);
    };
    let ttl = match ttl(Some(t.timeout)) {
        Ok(d) => d,
        Err(r) => return r.into_response(),
    };
    let was = lock(&b.life).state;
    if was == State::Paused
        && let Err(e) = b.machine.start().await
    {
        tracing::error!(sandbox = %id, error = %e, "resuming failed");
        return error(StatusCode::INTERNAL_SERVER_ERROR, "Error resuming sandbox");
    }
    if was == State::Paused
        && let Err(e) = s.join_egress(&b).await
    {
        tracing::error!(sandbox = %id, error = %e, "rejoining the egress proxy failed");
        return error(StatusCode::INTERNAL_SERVER_ERROR, "Error resuming sandbox");
    }
    {
        let mut life = lock(&b.life);
        let until = SystemTime::now() + ttl;
        life.end_at = if was == State::Paused {
            until
        } else {
            life.end_at.max(until)
        };
        life.state = State::Running;
    }
    let status = if was == State::Paused {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (status, Json(created(&s, &b))).into_response()
}

/// The deprecated resume: 409 unless paused.
async fn resume(s: App, Path(id): Path<String>, t: Json<Timeout>) -> Response {
    match s.get(&id) {
        None => not_found(&id),
        Some(b) if lock(&b.life).state == State::Running => error(
            StatusCode::CONFLICT,
            format!("Sandbox {id} is already running"),
        ),
        Some(_) => connect(s, Path(id), t).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_queries_decode_both_layers() {
        let q = HashMap::from([("metadata".to_owned(), "a%3Db=c%26d&e=f+g".to_owned())]);
        assert_eq!(
            metadata_filter(&q),
            vec![("a=b".into(), "c&d".into()), ("e".into(), "f g".into())]
        );
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
