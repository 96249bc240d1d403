//! The sandbox endpoint: each sandbox's `core.endpoint.uri` is
//! `http://ADDR/sbx/<uid>`, and under it the documented REST routes
//! `POST /v1/processes/exec`, `POST /v1/files/upload`,
//! `GET /v1/files/download` and `GET /v1/files/content`.
//!
//! Every call needs an unexpired endpoint credential minted for that sandbox
//! with the route's permission. A call still running when its credential
//! expires is cut off with 401 `ENDPOINT_CREDENTIAL_EXPIRED` (the process it
//! started is left running, as Docker documents for a client that goes
//! away).
//!
//! File operations run in the sandbox (a `/bin/sh` script under the
//! image's user, as an in-VM agent would act), so ownership and permissions
//! are the sandbox's own. The jail is the sandbox's whole file tree, and
//! this stand-in refuses any path with a symlink on it (in its parents or as
//! itself) as leaving the jail: stricter than Docker, whose jail root the
//! documentation does not name. Parents of an uploaded file are created;
//! an upload replaces its target by renaming, never writing through it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State as Shared};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bollard::container::LogOutput;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;

use super::auth::{endpoint_credential, expired};
use super::files;
use super::vm::Machine;
use super::{Credential, StandIn, Status, error, invalid, lock, unserved};

/// The most combined output an exec answer carries (about 4 MiB, as
/// observed); past it the answer says `incomplete` and the rest is drained.
pub const EXEC_OUTPUT_CAP: usize = 4 << 20;
/// The largest file a download or a content read returns.
pub const MAX_FILE_BYTES: usize = 64 << 20;
/// The largest upload request.
pub const MAX_UPLOAD_BYTES: usize = 256 << 20;

type App = Shared<Arc<StandIn>>;

/// The endpoint routes for every sandbox.
pub fn router(standin: Arc<StandIn>) -> Router {
    Router::new()
        .route("/sbx/{uid}/v1/processes/exec", post(exec))
        .route("/sbx/{uid}/v1/files/upload", post(files::upload))
        .route("/sbx/{uid}/v1/files/download", get(files::download))
        .route("/sbx/{uid}/v1/files/content", get(files::content))
        .merge(super::sbx::endpoint())
        .fallback(unserved)
        .layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES))
        .with_state(standin)
}

/// The credential check, then the running sandbox's machine.
pub(super) fn admit(
    s: &StandIn,
    headers: &HeaderMap,
    uid: &str,
    permission: &str,
) -> Result<(Credential, Machine), Box<Response>> {
    let c = endpoint_credential(s, headers, uid, permission)?;
    let Some(b) = s.get(uid) else {
        return Err(Box::new(super::sandbox_not_found(uid)));
    };
    let life = lock(&b.life);
    match (&life.machine, life.status) {
        (Some(m), Status::Running) => Ok((c, m.clone())),
        (_, status) => Err(Box::new(error(
            StatusCode::CONFLICT,
            "failedPrecondition",
            format!("sandbox is {}", status.as_str()),
            Vec::new(),
        ))),
    }
}

/// Runs `fut` until the credential expires; then 401.
pub(super) async fn within<F: std::future::Future<Output = Response>>(
    c: &Credential,
    fut: F,
) -> Response {
    let left = c
        .expires
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    let deadline = tokio::time::Instant::from_std(Instant::now() + left);
    tokio::time::timeout_at(deadline, fut)
        .await
        .unwrap_or_else(|_| expired())
}

pub(super) fn internal(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "a sandbox endpoint call failed");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "internal error",
        Vec::new(),
    )
}

/// What a run collected: exit code, stdout, stderr, whether output was cut.
pub(super) struct Ran {
    pub(super) code: i64,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    pub(super) incomplete: bool,
}

/// Runs `argv` to its end, keeping at most `cap` bytes of combined output.
pub(super) async fn run(
    m: &Machine,
    argv: Vec<String>,
    env: Vec<String>,
    user: Option<String>,
    working_dir: Option<String>,
    stdin: Option<Vec<u8>>,
    cap: usize,
) -> Result<Ran, String> {
    let mut started = m.exec(argv, env, user, working_dir, stdin).await?;
    let mut ran = Ran {
        code: 0,
        stdout: Vec::new(),
        stderr: Vec::new(),
        incomplete: false,
    };
    while let Some(item) = started.output.next().await {
        let item = item.map_err(|e| format!("reading an exec's output: {e}"))?;
        // The cap is on both streams together.
        let room = cap.saturating_sub(ran.stdout.len() + ran.stderr.len());
        let (into, chunk) = match item {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                (&mut ran.stdout, message)
            }
            LogOutput::StdErr { message } => (&mut ran.stderr, message),
            LogOutput::StdIn { .. } => continue,
        };
        let used = chunk.len().min(room);
        into.extend_from_slice(&chunk[..used]);
        if used < chunk.len() {
            ran.incomplete = true;
        }
    }
    ran.code = m
        .exit_code(&started.exec_id)
        .await
        .ok_or("docker holds no exit code for the exec")?;
    Ok(ran)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExecRequest {
    cmd: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    working_dir: Option<String>,
    user: Option<String>,
}

async fn exec(
    Shared(s): App,
    Path(uid): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (c, m) = match admit(&s, &headers, &uid, "sandboxesExec") {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let r: ExecRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return invalid("", e.to_string()),
    };
    if r.cmd.is_empty() {
        return invalid("cmd", "cmd must hold at least one element");
    }
    let env = r.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let user = r.user.filter(|u| !u.is_empty());
    let dir = r.working_dir.filter(|d| !d.is_empty());
    within(&c, async move {
        match run(&m, r.cmd, env, user, dir, None, EXEC_OUTPUT_CAP).await {
            Ok(ran) => {
                use base64::Engine;
                let b64 = base64::engine::general_purpose::STANDARD;
                axum::Json(json!({
                    "exitCode": ran.code,
                    "stdout": b64.encode(&ran.stdout),
                    "stderr": b64.encode(&ran.stderr),
                    "incomplete": ran.incomplete,
                }))
                .into_response()
            }
            Err(e) => internal(e),
        }
    })
    .await
}
