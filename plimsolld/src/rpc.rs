//! The five procedures over the engine, and the audit line per run.
//!
//! The audit line never holds code, output, tokens, paths or session ids: only
//! sizes, the caller's principal id, the evidence and the outcome.

use std::time::Instant;

use plimsoll_core::engine::Engine;
use plimsoll_core::error::Error;
use plimsoll_core::request::{Payload, Request, check_protocol, valid_trace_id};
use plimsoll_core::result::Output;
use plimsoll_core::wire::connect::ConnectError;
use plimsoll_core::wire::json::{decode, encode};
use plimsoll_core::wire::{
    CloseSessionRequest, DescribeRequest, OpenSessionRequest, RunRequest, RunResponse,
    SessionRunResponse,
};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::auth::{Principal, Verifier};
use crate::bodies::{Bodies, Slot};
use plimsoll_core::grant::CallSummary;

const SERVICE: &str = "/plimsoll.v1.SandboxService/";

/// What every handler shares.
pub struct App {
    /// The started engine.
    pub engine: Engine,
    /// Authentication.
    pub verifier: Verifier,
    /// The slots for request bodies in flight.
    pub bodies: std::sync::Arc<Bodies>,
    /// Whether the RPC listener takes only `Host`s that are IP addresses or
    /// `localhost`: set when no authentication is configured, so a web page
    /// that rebinds a name it serves to this daemon's address cannot call it.
    pub open_hosts_checked: bool,
    /// When `/readyz` last logged why the daemon is not ready.
    pub not_ready_logged: std::sync::Mutex<Option<Instant>>,
}

/// The five procedures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Procedure {
    /// Describe.
    Describe,
    /// Run.
    Run,
    /// OpenSession.
    OpenSession,
    /// SessionRun.
    SessionRun,
    /// CloseSession.
    CloseSession,
}

impl Procedure {
    /// The procedure a path names: `None` off the service, `Some(None)` for
    /// an unknown name in it. The service is mounted at the root: a path that
    /// only contains it (`/x/plimsoll.v1.SandboxService/Run`) names nothing.
    pub fn from_path(path: &str) -> Option<Option<Procedure>> {
        let name = path.strip_prefix(SERVICE)?;
        Some(match name {
            "Describe" => Some(Procedure::Describe),
            "Run" => Some(Procedure::Run),
            "OpenSession" => Some(Procedure::OpenSession),
            "SessionRun" => Some(Procedure::SessionRun),
            "CloseSession" => Some(Procedure::CloseSession),
            _ => None,
        })
    }
}

/// Maps a principal to the core's caller.
pub fn caller(p: &Principal) -> plimsoll_core::engine::Caller {
    plimsoll_core::engine::Caller {
        principal: p.id.clone(),
    }
}

/// Turns a core error into its Connect answer.
pub fn connect(e: &Error) -> ConnectError {
    ConnectError::from(e)
}

fn bad_body(message: String) -> ConnectError {
    connect(&Error::invalid(message))
}

/// A request body read at the edge, with the slot it holds until it is parsed.
pub struct Body {
    /// The bytes.
    pub bytes: axum::body::Bytes,
    /// The slot ([`crate::bodies`]).
    pub slot: Slot,
}

impl Body {
    /// Parses the body, giving back its bytes and its slot whatever the
    /// outcome; the error is the parser's message.
    fn decode<T: DeserializeOwned>(self) -> Result<T, String> {
        let Body { bytes, slot } = self;
        let parsed = decode(&bytes);
        drop((bytes, slot));
        parsed
    }
}

/// Runs one procedure on a body read at the edge.
pub async fn dispatch(
    app: &App,
    procedure: Procedure,
    principal: &Principal,
    body: Body,
) -> Result<Vec<u8>, ConnectError> {
    match procedure {
        Procedure::Describe => {
            body.decode::<DescribeRequest>().map_err(bad_body)?;
            Ok(encode(&app.engine.describe()))
        }
        Procedure::Run => {
            let wire: RunRequest = body.decode().map_err(bad_body)?;
            check_protocol(wire.protocol).map_err(|e| connect(&e))?;
            let request = wire.into_request().map_err(|e| connect(&e))?;
            run(app, principal, request)
                .await
                .map(|r| encode(&r))
                .map_err(|e| connect(&e))
        }
        Procedure::OpenSession => {
            let wire: OpenSessionRequest = body.decode().map_err(bad_body)?;
            let open = app
                .engine
                .open_session(&caller(principal), &wire)
                .await
                .map_err(|e| connect(&e))?;
            tracing::info!(target: "plimsoll::audit", op = "session open", caller = %principal.id, session = %open.session, "session open");
            Ok(encode(&open))
        }
        Procedure::SessionRun => {
            let wire: RunRequest = body.decode().map_err(bad_body)?;
            check_protocol(wire.protocol).map_err(|e| connect(&e))?;
            let session_id = wire.session_id.clone();
            let request = wire.into_request().map_err(|e| connect(&e))?;
            session_run(app, principal, &session_id, request)
                .await
                .map(|r| encode(&r))
                .map_err(|e| connect(&e))
        }
        Procedure::CloseSession => {
            let wire: CloseSessionRequest = body.decode().map_err(bad_body)?;
            let closed = app
                .engine
                .close_session(&caller(principal), wire.protocol, &wire.session_id)
                .await
                .map_err(|e| connect(&e))?;
            tracing::info!(target: "plimsoll::audit", op = "session close", caller = %principal.id, session = %closed.session, calls = closed.calls, ended = closed.ended.as_str(), "session close");
            Ok(encode(&closed))
        }
    }
}

async fn session_run(
    app: &App,
    principal: &Principal,
    session_id: &str,
    request: Request,
) -> Result<SessionRunResponse, Error> {
    let cancel = CancellationToken::new();
    let _guard = cancel.clone().drop_guard();
    let clock = Instant::now();
    let audit = Audit::of(&request);
    let result = app
        .engine
        .session_run(&caller(principal), session_id, request, cancel)
        .await;
    let as_run = match &result {
        Ok(r) => r.run.clone().ok_or_else(|| Error::infrastructure("no run")),
        Err(e) => Err(e.clone()),
    };
    audit.log(
        principal,
        &as_run,
        CallSummary::default(),
        clock.elapsed().as_millis() as u64,
    );
    result
}

async fn run(app: &App, principal: &Principal, request: Request) -> Result<RunResponse, Error> {
    let cancel = CancellationToken::new();
    // If the client goes away, hyper drops this future and the guard cancels the run.
    let _guard = cancel.clone().drop_guard();
    let clock = Instant::now();
    let audit = Audit::of(&request);
    let (result, report) = app
        .engine
        .run_reported(&caller(principal), request, cancel)
        .await;
    let calls = report
        .grant
        .as_ref()
        .map(|b| b.summary())
        .unwrap_or_default();
    audit.log(
        principal,
        &result,
        calls,
        clock.elapsed().as_millis() as u64,
    );
    result
}

/// The sizes and names an audit line may hold.
struct Audit {
    op: &'static str,
    trace_id: String,
    code_bytes: usize,
    files: usize,
    steps: usize,
    total_bytes: usize,
    grant_profile: bool,
}

impl Audit {
    fn of(r: &Request) -> Audit {
        let (op, code_bytes, files, steps, total_bytes) = match &r.payload {
            Payload::JavaScript(j) => ("code run", j.code.len(), 0, 0, j.code.len()),
            Payload::Project(p) => {
                let total = p.files.iter().map(|f| f.content.len()).sum::<usize>()
                    + p.steps.iter().map(String::len).sum::<usize>();
                ("project run", 0, p.files.len(), p.steps.len(), total)
            }
            Payload::Module(m) => ("module run", 0, 0, 0, m.rows.len()),
            Payload::Cell(c) => ("cell run", c.code.len(), c.files.len(), 0, c.code.len()),
        };
        let trace_id = if valid_trace_id(&r.envelope.trace_id) {
            r.envelope.trace_id.clone()
        } else {
            String::new()
        };
        Audit {
            op,
            trace_id,
            code_bytes,
            files,
            steps,
            total_bytes,
            grant_profile: !r.payload.grant_profile().is_empty(),
        }
    }

    fn log(
        &self,
        principal: &Principal,
        result: &Result<RunResponse, Error>,
        calls: CallSummary,
        duration_ms: u64,
    ) {
        match result {
            Ok(resp) => {
                let (exit_code, timed_out, outcome) = match &resp.output {
                    Some(Output::JavaScript(j)) => (j.exit_code, j.timed_out, ""),
                    Some(Output::Cell(c)) => (c.exit_code, c.timed_out, ""),
                    Some(Output::Project(p)) => (
                        p.steps.last().map_or(0, |s| s.exit_code),
                        false,
                        p.outcome.as_str(),
                    ),
                    Some(Output::Module(m)) => (0, false, m.outcome.as_str()),
                    None => (0, false, ""),
                };
                tracing::info!(
                    target: "plimsoll::audit",
                    op = self.op, caller = %principal.id, trace_id = %self.trace_id,
                    code_bytes = self.code_bytes, files = self.files, steps = self.steps, total_bytes = self.total_bytes,
                    grant = self.grant_profile, host_calls = calls.sent, host_calls_denied = calls.denied,
                    host_calls_failed = calls.failed,
                    sandbox = %resp.evidence.sandbox, isolation = %resp.evidence.isolation,
                    wall = %resp.record.as_ref().map_or("", |r| plimsoll_core::wall::identity_in(&r.policy)),
                    phases = %resp.phases.as_ref().map(|p| p.line()).unwrap_or_default(),
                    exit_code, timed_out, outcome, duration_ms,
                    "{}", self.op
                );
            }
            Err(e) => {
                let refused = e.not_dispatched();
                tracing::info!(
                    target: "plimsoll::audit",
                    op = self.op, caller = %principal.id, trace_id = %self.trace_id,
                    code_bytes = self.code_bytes, files = self.files, steps = self.steps, total_bytes = self.total_bytes,
                    grant = self.grant_profile, error = e.code().as_str(),
                    not_dispatched = refused.map_or("", |r| r.as_str()), duration_ms,
                    "{} {}", self.op, if refused.is_some() { "refused" } else { "failed" }
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Procedure;

    #[test]
    fn the_service_is_mounted_at_the_root_only() {
        assert_eq!(
            Procedure::from_path("/plimsoll.v1.SandboxService/Run"),
            Some(Some(Procedure::Run))
        );
        assert_eq!(
            Procedure::from_path("/plimsoll.v1.SandboxService/Nope"),
            Some(None)
        );
        for off in [
            "/x/plimsoll.v1.SandboxService/Run",
            "//plimsoll.v1.SandboxService/Run",
            "/metrics/plimsoll.v1.SandboxService/Describe",
            "plimsoll.v1.SandboxService/Run",
        ] {
            assert_eq!(Procedure::from_path(off), None, "{off}");
        }
    }
}
