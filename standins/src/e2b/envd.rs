//! envd, the agent inside each E2B VM: the Connect `process.Process` service
//! and the `/files` HTTP API, reached through E2B's proxy.
//!
//! A request names its sandbox the way the proxy reads it: the
//! `E2b-Sandbox-Id` and `E2b-Sandbox-Port` headers, or a
//! `49983-<id>.<domain>` host. An unknown (or paused) sandbox gets the
//! proxy's 502. A secure sandbox's envd wants `X-Access-Token` on every call
//! but `GET /health` (401 otherwise, with envd's own body). The user is
//! `Authorization: Basic base64("<user>:")`, default `user`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Query, Request, State as Shared};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bollard::container::LogOutput;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ENVD_PORT, Process, Sandbox, StandIn, State, lock};
use crate::connect;

type App = Shared<Arc<StandIn>>;

/// The largest file upload accepted.
pub const MAX_UPLOAD_BYTES: usize = 100 << 20;
/// The largest data event, as envd sends them (32 KiB).
pub const CHUNK_BYTES: usize = 32 << 10;
/// Keepalive interval when the client names none (envd's default), s.
pub const DEFAULT_KEEPALIVE_S: u64 = 90;

/// envd's routes.
pub fn router(standin: Arc<StandIn>) -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::NO_CONTENT }))
        .route("/files", get(read_file).post(write_files))
        .route("/process.Process/Start", post(start))
        .route("/process.Process/SendSignal", post(send_signal))
        .route("/process.Process/List", post(list))
        .route("/process.Process/SendInput", post(send_input))
        .route("/process.Process/CloseStdin", post(close_stdin))
        .layer(axum::middleware::from_fn_with_state(standin.clone(), route))
        .layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES))
        .with_state(standin)
}

/// Whom a request is for, as the routing middleware found it.
#[derive(Clone)]
struct For(Arc<Sandbox>);

use super::api::{ApiError, error as plain_error};

/// The sandbox a request names, by header or by host.
fn named(headers: &HeaderMap) -> Option<String> {
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    if let Some(id) = h("e2b-sandbox-id") {
        return Some(id.to_owned());
    }
    let host = h("host")?;
    let rest = host.strip_prefix(&format!("{ENVD_PORT}-"))?;
    rest.split('.').next().map(str::to_owned)
}

async fn route(Shared(s): App, mut req: Request, next: axum::middleware::Next) -> Response {
    let id = named(req.headers()).unwrap_or_default();
    let headers = req.headers();
    if let Some(port) = headers
        .get("e2b-sandbox-port")
        .and_then(|v| v.to_str().ok())
        && port != ENVD_PORT.to_string()
    {
        return plain_error(
            StatusCode::BAD_GATEWAY,
            format!("port {port} is not open in the sandbox"),
        );
    }
    let sandbox = s.get(&id).filter(|b| lock(&b.life).state == State::Running);
    let Some(sandbox) = sandbox else {
        return (
            StatusCode::BAD_GATEWAY,
            axum::Json(
                json!({"sandboxId": id, "message": "The sandbox was not found", "code": 502}),
            ),
        )
            .into_response();
    };
    let health = req.uri().path() == "/health";
    if let Some(token) = &sandbox.envd_token
        && !health
    {
        let given = headers.get("x-access-token").map(|v| v.as_bytes());
        if given != Some(token.as_bytes()) {
            return plain_error(
                StatusCode::UNAUTHORIZED,
                "unauthorized access, please provide a valid access token or method signing if supported",
            );
        }
    }
    req.extensions_mut().insert(For(sandbox));
    next.run(req).await
}

fn sandbox_of(req: &Request) -> Option<Arc<Sandbox>> {
    req.extensions().get::<For>().map(|f| f.0.clone())
}

/// The user from `Authorization: Basic`, or the template's default `user`.
fn username(headers: &HeaderMap, query: Option<&str>) -> Result<String, connect::Error> {
    let from_header = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| B64.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .map(|s| s.split(':').next().unwrap_or_default().to_owned());
    let name = query
        .map(str::to_owned)
        .or(from_header)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "user".into());
    let ok = name.bytes().enumerate().all(|(i, c)| {
        c.is_ascii_lowercase() || c == b'_' || i > 0 && (c.is_ascii_digit() || c == b'-')
    });
    if ok {
        Ok(name)
    } else {
        Err(connect::Error::new(
            "unauthenticated",
            format!("invalid username: '{name}'"),
        ))
    }
}

/// The user's home in the VM (from its passwd entry), looked up once.
async fn home(b: &Sandbox, user: &str) -> Result<String, connect::Error> {
    if let Some(h) = lock(&b.homes).get(user) {
        return Ok(h.clone());
    }
    let out = b
        .machine
        .run(
            "0:0",
            vec!["getent".into(), "passwd".into(), user.into()],
            None,
        )
        .await
        .map_err(|e| connect::Error::new("internal", e))?;
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let home = line.trim_end().split(':').nth(5).filter(|_| out.code == 0);
    let Some(home) = home.map(str::to_owned) else {
        return Err(connect::Error::new(
            "unauthenticated",
            format!("invalid username: '{user}'"),
        ));
    };
    lock(&b.homes).insert(user.to_owned(), home.clone());
    Ok(home)
}

/// `path` resolved as envd does: `~` and relative paths from the user's home.
fn resolve(path: &str, home: &str) -> String {
    if let Some(rest) = path.strip_prefix('~') {
        return format!("{home}{rest}");
    }
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{path}", home.trim_end_matches('/'))
    }
}

#[derive(Debug, Deserialize)]
struct FileQuery {
    path: Option<String>,
    username: Option<String>,
}

async fn read_file(Query(q): Query<FileQuery>, req: Request) -> Response {
    let Some(b) = sandbox_of(&req) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let user = match username(req.headers(), q.username.as_deref()) {
        Ok(u) => u,
        Err(e) => return plain_error(StatusCode::UNAUTHORIZED, e.message),
    };
    let home = match home(&b, &user).await {
        Ok(h) => h,
        Err(e) => return plain_error(StatusCode::UNAUTHORIZED, e.message),
    };
    let Some(path) = q.path.map(|p| resolve(&p, &home)) else {
        return plain_error(StatusCode::BAD_REQUEST, "path is required");
    };
    let script = r#"[ -e "$1" ] || exit 3; [ -d "$1" ] && exit 4; exec cat -- "$1""#;
    let argv = ["/bin/sh", "-c", script, "sh", &path]
        .map(String::from)
        .to_vec();
    match b.machine.run(&user, argv, None).await {
        Ok(o) if o.code == 0 => {
            ([("content-type", "application/octet-stream")], o.stdout).into_response()
        }
        Ok(o) if o.code == 3 => plain_error(
            StatusCode::NOT_FOUND,
            format!("path '{path}' does not exist"),
        ),
        Ok(o) if o.code == 4 => plain_error(
            StatusCode::BAD_REQUEST,
            format!("path '{path}' is a directory"),
        ),
        Ok(o) => plain_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "error reading file: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        ),
        Err(e) => plain_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// Writes one file as `user`, making its parents; the `EntryInfo` answer.
async fn write_one(b: &Sandbox, user: &str, path: &str, bytes: Vec<u8>) -> Result<Value, ApiError> {
    let script = r#"mkdir -p -- "$(dirname -- "$1")" && cat > "$1""#;
    let argv = ["/bin/sh", "-c", script, "sh", path]
        .map(String::from)
        .to_vec();
    match b.machine.run(user, argv, Some(bytes)).await {
        Ok(o) if o.code == 0 => {
            let name = path.rsplit('/').next().unwrap_or_default();
            Ok(json!({"path": path, "name": name, "type": "file"}))
        }
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr).trim().to_owned();
            let status = if err.contains("No space") {
                StatusCode::INSUFFICIENT_STORAGE
            } else if err.contains("Is a directory") {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            Err(ApiError(
                status,
                format!("error writing file '{path}': {err}"),
            ))
        }
        Err(e) => Err(ApiError(StatusCode::INTERNAL_SERVER_ERROR, e)),
    }
}

async fn write_files(Query(q): Query<FileQuery>, req: Request) -> Response {
    let Some(b) = sandbox_of(&req) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let user = match username(req.headers(), q.username.as_deref()) {
        Ok(u) => u,
        Err(e) => return plain_error(StatusCode::UNAUTHORIZED, e.message),
    };
    let home = match home(&b, &user).await {
        Ok(h) => h,
        Err(e) => return plain_error(StatusCode::UNAUTHORIZED, e.message),
    };
    let path = q.path.as_deref().map(|p| resolve(p, &home));
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut written = Vec::new();
    if content_type.starts_with("multipart/form-data") {
        let mut form = match Multipart::from_request(req, &()).await {
            Ok(f) => f,
            Err(e) => return plain_error(StatusCode::BAD_REQUEST, e.body_text()),
        };
        let mut seen = std::collections::HashSet::new();
        loop {
            let field = match form.next_field().await {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => return plain_error(StatusCode::BAD_REQUEST, e.body_text()),
            };
            if field.name() != Some("file") {
                continue;
            }
            let dest = match (&path, field.file_name()) {
                (Some(p), _) => p.clone(),
                (None, Some(f)) => resolve(f, &home),
                (None, None) => {
                    return plain_error(StatusCode::BAD_REQUEST, "a file part names no path");
                }
            };
            if !seen.insert(dest.clone()) {
                return plain_error(
                    StatusCode::BAD_REQUEST,
                    format!("path '{dest}' is given twice"),
                );
            }
            let bytes = match field.bytes().await {
                Ok(b) => b.to_vec(),
                Err(e) => return plain_error(StatusCode::BAD_REQUEST, e.body_text()),
            };
            match write_one(&b, &user, &dest, bytes).await {
                Ok(v) => written.push(v),
                Err(r) => return r.into_response(),
            }
        }
    } else if content_type.starts_with("application/octet-stream") {
        let Some(dest) = path else {
            return plain_error(
                StatusCode::BAD_REQUEST,
                "path is required for an octet-stream upload",
            );
        };
        let bytes = match Bytes::from_request(req, &()).await {
            Ok(b) => b.to_vec(),
            Err(e) => return plain_error(StatusCode::BAD_REQUEST, e.body_text()),
        };
        match write_one(&b, &user, &dest, bytes).await {
            Ok(v) => written.push(v),
            Err(r) => return r.into_response(),
        }
    } else {
        return plain_error(
            StatusCode::BAD_REQUEST,
            format!("unsupported content type '{content_type}'"),
        );
    }
    axum::Json(Value::Array(written)).into_response()
}

/// `StartRequest.process`.
#[derive(Debug, Deserialize)]
struct ProcessConfig {
    cmd: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    envs: std::collections::BTreeMap<String, String>,
    cwd: Option<String>,
}

/// Runs `cd <cwd>`, prints the shell's pid (which `exec` hands to the
/// command), then becomes the command. `-` instead of a pid: no such cwd.
const LAUNCH: &str =
    r#"cd -- "$1" 2>/dev/null || { echo -; exit 1; }; shift; echo "$$"; exec "$@""#;

fn event(e: Value) -> Bytes {
    Bytes::from(connect::message(&json!({"event": e})))
}

async fn start(Shared(_s): App, req: Request) -> Response {
    let Some(b) = sandbox_of(&req) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let headers = req.headers().clone();
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if ct != "application/connect+json" {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            [("accept-post", "application/connect+json")],
        )
            .into_response();
    }
    let body = match Bytes::from_request(req, &()).await {
        Ok(b) => b,
        Err(e) => return plain_error(StatusCode::BAD_REQUEST, e.body_text()),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    let answer = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/connect+json")
        .body(Body::from_stream(futures_util::stream::unfold(
            rx,
            |mut rx| async move {
                rx.recv()
                    .await
                    .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
            },
        )));
    let deadline = headers
        .get("connect-timeout-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis);
    let keepalive = headers
        .get("keepalive-ping-interval")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_KEEPALIVE_S);
    // The process runs on its own task: a client that goes away does not end it.
    tokio::spawn(async move {
        let end = match run_process(
            &b,
            &headers,
            &body,
            deadline,
            Duration::from_secs(keepalive),
            &tx,
        )
        .await
        {
            Ok(()) => connect::end_stream(None),
            Err(e) => connect::end_stream(Some(&e)),
        };
        let _ = tx.send(Bytes::from(end)).await;
    });
    answer.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn run_process(
    b: &Arc<Sandbox>,
    headers: &HeaderMap,
    body: &[u8],
    deadline: Option<Duration>,
    keepalive: Duration,
    tx: &tokio::sync::mpsc::Sender<Bytes>,
) -> Result<(), connect::Error> {
    let request = connect::single_message(body)?;
    let config_json = request.get("process").cloned().unwrap_or(Value::Null);
    let config: ProcessConfig = serde_json::from_value(config_json.clone())
        .map_err(|e| connect::Error::invalid(format!("invalid process config: {e}")))?;
    let tag = request
        .get("tag")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let user = username(headers, None)?;
    let home = home(b, &user).await?;
    let cwd = config
        .cwd
        .as_deref()
        .map_or_else(|| home.clone(), |c| resolve(c, &home));
    let mut env = vec![
        format!("HOME={home}"),
        format!("USER={user}"),
        format!("LOGNAME={user}"),
    ];
    env.extend(b.env_vars.iter().map(|(k, v)| format!("{k}={v}")));
    env.extend(config.envs.iter().map(|(k, v)| format!("{k}={v}")));
    let mut argv = vec![
        "/bin/sh".to_owned(),
        "-c".into(),
        LAUNCH.into(),
        "sh".into(),
        cwd.clone(),
        config.cmd.clone(),
    ];
    argv.extend(config.args.iter().cloned());
    // stdin is held open only when asked for (`stdin: true`); envd's own
    // default for an unset field is open, the stand-in's closed.
    let (stdin, input) = if request.get("stdin").and_then(Value::as_bool) == Some(true) {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        (Some(tx), crate::container::Input::Stream(rx))
    } else {
        (None, crate::container::Input::None)
    };
    let mut started = b
        .machine
        .exec(&user, argv, env, input)
        .await
        .map_err(|e| connect::Error::new("internal", e))?;
    // The launcher's first line: the pid, or `-` for a missing cwd.
    let mut first = Vec::new();
    let mut early: Vec<LogOutput> = Vec::new();
    let pid = loop {
        match started.output.next().await {
            Some(Ok(LogOutput::StdOut { message })) => {
                first.extend_from_slice(&message);
                if let Some(nl) = first.iter().position(|c| *c == b'\n') {
                    let rest = first.split_off(nl + 1);
                    if !rest.is_empty() {
                        early.push(LogOutput::StdOut {
                            message: rest.into(),
                        });
                    }
                    break String::from_utf8_lossy(&first).trim().to_owned();
                }
            }
            Some(Ok(other)) => early.push(other),
            Some(Err(e)) => return Err(connect::Error::new("internal", e.to_string())),
            None => break String::new(),
        }
    };
    if pid == "-" {
        return Err(connect::Error::invalid(format!(
            "cwd '{cwd}' does not exist"
        )));
    }
    let pid: u32 = pid
        .parse()
        .map_err(|_| connect::Error::new("internal", "the process did not start"))?;
    let killed = Arc::new(AtomicBool::new(false));
    lock(&b.processes).insert(
        pid,
        Process {
            config: config_json,
            tag,
            killed: killed.clone(),
            stdin,
        },
    );
    let _ = tx.send(event(json!({"start": {"pid": pid}}))).await;
    let send = |m: LogOutput| -> Vec<Bytes> {
        let (kind, bytes) = match m {
            LogOutput::StdOut { message } | LogOutput::Console { message } => ("stdout", message),
            LogOutput::StdErr { message } => ("stderr", message),
            LogOutput::StdIn { .. } => return Vec::new(),
        };
        bytes
            .chunks(CHUNK_BYTES)
            .map(|c| event(json!({"data": {kind: B64.encode(c)}})))
            .collect()
    };
    for m in early {
        for e in send(m) {
            let _ = tx.send(e).await;
        }
    }
    let killer = deadline.map(|d| {
        let (b, killed) = (b.clone(), killed.clone());
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            killed.store(true, Ordering::SeqCst);
            signal(&b, pid, "KILL").await;
        })
    });
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + keepalive, keepalive);
    loop {
        tokio::select! {
            item = started.output.next() => match item {
                Some(Ok(m)) => {
                    for e in send(m) {
                        // A client that went away: keep draining, the process runs on.
                        let _ = tx.send(e).await;
                    }
                    ticks.reset();
                }
                Some(Err(e)) => tracing::warn!(error = %e, "reading a process's output"),
                None => break,
            },
            _ = ticks.tick() => { let _ = tx.send(event(json!({"keepalive": {}}))).await; }
        }
    }
    if let Some(k) = killer {
        k.abort();
    }
    let code = b.machine.exit_code(&started.exec_id).await;
    lock(&b.processes).remove(&pid);
    let end = match code {
        _ if killed.load(Ordering::SeqCst) => {
            json!({"exitCode": -1, "status": "signal: killed", "error": "signal: killed"})
        }
        Some(0) => json!({"exited": true, "status": "exit status 0"}),
        Some(c) => {
            let s = format!("exit status {c}");
            json!({"exitCode": c, "exited": true, "status": s, "error": s})
        }
        None => {
            return Err(connect::Error::new(
                "internal",
                "the process's exit status is unknown",
            ));
        }
    };
    let _ = tx.send(event(json!({"end": end}))).await;
    Ok(())
}

/// Sends `SIG<name>` to `pid` in the VM, as root (the shell's builtin
/// `kill`: a template need not ship procps).
async fn signal(b: &Sandbox, pid: u32, name: &str) {
    let argv = [
        "/bin/sh",
        "-c",
        r#"kill -s "$1" "$2""#,
        "sh",
        name,
        &pid.to_string(),
    ]
    .map(String::from)
    .to_vec();
    match b.machine.run("0:0", argv, None).await {
        Ok(o) if o.code == 0 => {}
        Ok(o) => {
            tracing::warn!(sandbox = %b.id, pid, stderr = %String::from_utf8_lossy(&o.stderr), "signalling a process failed")
        }
        Err(e) => tracing::warn!(sandbox = %b.id, error = %e, "signalling a process failed"),
    }
}

/// The unary request's JSON body.
async fn unary(req: Request) -> Result<(Arc<Sandbox>, Value), Response> {
    let b = sandbox_of(&req).ok_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response())?;
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if ct != "application/json" {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            [("accept-post", "application/json")],
        )
            .into_response());
    }
    let body = Bytes::from_request(req, &())
        .await
        .map_err(|e| connect::Error::invalid(e.body_text()).into_response())?;
    let v = serde_json::from_slice(&body)
        .map_err(|e| connect::Error::invalid(format!("unmarshal message: {e}")).into_response())?;
    Ok((b, v))
}

/// The pid a `ProcessSelector` (`{"pid"}` or `{"tag"}`) names.
fn selected(b: &Sandbox, selector: &Value) -> Result<u32, connect::Error> {
    let procs = lock(&b.processes);
    if let Some(pid) = selector.get("pid").and_then(Value::as_u64) {
        let pid = pid as u32;
        return procs.contains_key(&pid).then_some(pid).ok_or_else(|| {
            connect::Error::new("not_found", format!("process with pid {pid} not found"))
        });
    }
    if let Some(tag) = selector.get("tag").and_then(Value::as_str) {
        return procs
            .iter()
            .find(|(_, p)| p.tag.as_deref() == Some(tag))
            .map(|(pid, _)| *pid)
            .ok_or_else(|| {
                connect::Error::new("not_found", format!("process with tag {tag} not found"))
            });
    }
    Err(connect::Error::invalid("invalid process selector"))
}

async fn send_signal(req: Request) -> Response {
    let (b, v) = match unary(req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let name = match v.get("signal").and_then(Value::as_str) {
        Some("SIGNAL_SIGKILL") => "KILL",
        Some("SIGNAL_SIGTERM") => "TERM",
        _ => return connect::Error::new("unimplemented", "invalid signal").into_response(),
    };
    let pid = match selected(&b, v.get("process").unwrap_or(&Value::Null)) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Some(p) = lock(&b.processes).get(&pid) {
        p.killed.store(true, Ordering::SeqCst);
    }
    signal(&b, pid, name).await;
    axum::Json(json!({})).into_response()
}

/// `SendInput`: `{"process": <selector>, "input": {"stdin": <base64>}}`, to a
/// process started with `stdin: true`.
async fn send_input(req: Request) -> Response {
    let (b, v) = match unary(req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let pid = match selected(&b, v.get("process").unwrap_or(&Value::Null)) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let Some(bytes) = v
        .pointer("/input/stdin")
        .and_then(Value::as_str)
        .and_then(|t| B64.decode(t).ok())
    else {
        return connect::Error::invalid("invalid input: stdin bytes expected").into_response();
    };
    let tx = lock(&b.processes).get(&pid).and_then(|p| p.stdin.clone());
    let Some(tx) = tx else {
        return connect::Error::new(
            "failed_precondition",
            format!("stdin of process {pid} is not open"),
        )
        .into_response();
    };
    if tx.send(bytes).await.is_err() {
        return connect::Error::new(
            "internal",
            format!("error writing to stdin of process {pid}"),
        )
        .into_response();
    }
    axum::Json(json!({})).into_response()
}

/// `CloseStdin`: EOF to the selected process.
async fn close_stdin(req: Request) -> Response {
    let (b, v) = match unary(req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let pid = match selected(&b, v.get("process").unwrap_or(&Value::Null)) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Some(p) = lock(&b.processes).get_mut(&pid) {
        p.stdin = None;
    }
    axum::Json(json!({})).into_response()
}

async fn list(req: Request) -> Response {
    let (b, _) = match unary(req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let processes: Vec<Value> = lock(&b.processes)
        .iter()
        .map(|(pid, p)| {
            let mut v = json!({"config": p.config, "pid": pid});
            if let Some(t) = &p.tag {
                v["tag"] = json!(t);
            }
            v
        })
        .collect();
    axum::Json(json!({"processes": processes})).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_paths_and_sandbox_names() {
        let mut h = HeaderMap::new();
        assert_eq!(username(&h, None).unwrap(), "user");
        h.insert(
            "authorization",
            format!("Basic {}", B64.encode("root:")).parse().unwrap(),
        );
        assert_eq!(username(&h, None).unwrap(), "root");
        assert_eq!(username(&h, Some("u-1")).unwrap(), "u-1");
        assert_eq!(
            username(&h, Some("../x")).unwrap_err().code,
            "unauthenticated"
        );
        assert_eq!(resolve("a/b", "/home/user"), "/home/user/a/b");
        assert_eq!(resolve("~/x", "/home/user"), "/home/user/x");
        assert_eq!(resolve("/etc", "/home/user"), "/etc");
        let mut h = HeaderMap::new();
        h.insert("host", "49983-iabc.e2b.app".parse().unwrap());
        assert_eq!(named(&h).as_deref(), Some("iabc"));
        h.insert("e2b-sandbox-id", "iother".parse().unwrap());
        assert_eq!(named(&h).as_deref(), Some("iother"));
    }
}
