//! The caller side, once for every language: Rust, Python, Node and the C ABI
//! (and through it Go) all call through [`Runner`] and [`Session`], over an
//! embedded engine or a remote plimsolld alike.
//!
//! Every rule a caller applies lives here and only here, and holds whichever
//! [link](link) carries the call: a request is checked locally before it is
//! sent; a fresh run's answer is bound to its request and its record verified;
//! a session call carries the session's floor (the higher of the two) and the
//! intersection of the session's software rule with its own; every session
//! answer must continue the chain, and after one that does not, the session
//! sends nothing but a close; the close summary is checked against the chain
//! seen; an answer that does not parse is a transport error. This is what the
//! published client checks, so an embedded answer is held to what a remote one
//! is.
//!
//! A [`Runner`] owns what it needs (`'static`, cheap to clone), so a binding
//! can hand it to any runtime task. It does not own a runtime, spawn tasks, or
//! turn a dropped future into a cancelled run: the binding passes a
//! [`CancellationToken`] and cancels it when its caller gives up.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigError, Env, variables};
use crate::engine::{Engine, StartError};
use crate::error::{Error, ErrorCode, Refusal, Result, SessionEnd};
use crate::request::{PROTOCOL, Payload, Request, SoftwareRule};
use crate::secret::Secret;
use crate::tier::{Floor, Isolation};
use crate::verify::{Chain, check_single};
use crate::wire::{
    CloseSessionResponse, DescribeResponse, Evidence, OpenSessionRequest, RunResponse,
};

mod link;
mod transport;

use link::Link;
pub(crate) use link::cancelled;
pub use transport::MAX_RESPONSE_BYTES;
use transport::Transport;

/// The default bound on one whole exchange with a daemon.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(360);

/// An embedded engine or a remote daemon, behind one set of calls.
#[derive(Clone)]
pub struct Runner {
    link: Link,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.link {
            Link::Embedded(e) => f.debug_tuple("Runner::Embedded").field(e).finish(),
            Link::Remote(t) => f.debug_tuple("Runner::Remote").field(&t.base).finish(),
        }
    }
}

/// Options for opening a session (the wire's `OpenSessionRequest` a caller
/// may set; the protocol is always this build's).
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The floor every call must meet.
    pub minimum_isolation: String,
    /// The software rule every call carries.
    pub software_rule: Option<SoftwareRule>,
    /// A shorter lifetime, ms (0 = the daemon's).
    pub lifetime_ms: u32,
    /// A shorter idle timeout, ms (0 = the daemon's).
    pub idle_timeout_ms: u32,
    /// Language hints (`javascript`, `python`).
    pub languages: Vec<String>,
    /// A correlation id for the open.
    pub trace_id: String,
}

/// Checks that every `SANDBOX_*` or `PLIMSOLL_*` name given to an embedded
/// engine is one the core reads, so a typo is an error rather than a silent
/// default. Other names pass (a grant profile may read its secret from any).
pub fn check_variable_names<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> std::result::Result<(), ConfigError> {
    let all = variables();
    for name in names {
        let ours = name.starts_with("SANDBOX_") || name.starts_with("PLIMSOLL_");
        if ours && !all.iter().any(|v| v.name == name) {
            let known = all
                .iter()
                .find(|v| v.name.eq_ignore_ascii_case(name))
                .map_or("plimsoll-core reads no such variable".to_owned(), |v| {
                    format!("did you mean {}?", v.name)
                });
            return Err(ConfigError::new(
                "environment",
                format!(
                    "{name:?}: {known} (the daemon's own variables do not apply to an embedded engine)"
                ),
            ));
        }
    }
    Ok(())
}

/// The checks a caller makes before anything is sent (as the published client).
fn check_locally(request: &mut Request) -> Result<()> {
    request.envelope.check_protocol()?;
    request.envelope.validate()?;
    request.payload.validate()
}

fn floor_of(text: &str) -> Result<Floor> {
    Floor::parse(text).map_err(|e| Error::invalid(e.to_string()))
}

impl Runner {
    /// Starts an embedded engine configured like the daemon from daemon-style
    /// variables (`SANDBOX_PROVIDER=wasm`, …), with the same startup proof.
    /// Must be called inside a tokio runtime (sessions keep a housekeeping task).
    pub async fn embedded(
        vars: &HashMap<String, String>,
    ) -> std::result::Result<Runner, StartError> {
        check_variable_names(vars.keys().map(String::as_str)).map_err(StartError::Config)?;
        let get = |k: &str| vars.get(k).cloned();
        let config = Config::from_env(&Env::new(&get)).map_err(StartError::Config)?;
        Ok(Runner::from_engine(Engine::start(&config).await?))
    }

    /// A runner over an engine already started (for embedders with their own
    /// provider, and tests).
    pub fn from_engine(engine: Engine) -> Runner {
        Runner {
            link: Link::Embedded(engine),
        }
    }

    /// A client for the plimsolld at `base_url`. Cleartext http is refused off
    /// loopback unless `insecure_http`; the token, if any, must be visible
    /// ASCII. `timeout` bounds each whole exchange (default
    /// [`DEFAULT_REQUEST_TIMEOUT`]). Nothing is sent until the first call.
    /// Must be called inside a tokio runtime.
    pub fn remote(
        base_url: &str,
        token: Option<String>,
        insecure_http: bool,
        timeout: Option<Duration>,
    ) -> Result<Runner> {
        let base = transport::base_url(base_url, insecure_http)?;
        if let Some(t) = &token
            && (t.is_empty() || !t.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        {
            return Err(Error::invalid("the token must be visible ASCII"));
        }
        Ok(Runner {
            link: Link::Remote(Arc::new(Transport {
                base,
                token: token.map(Secret::new),
                timeout: timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT),
                client: crate::grant::upstream_client(),
            })),
        })
    }

    /// The engine behind an embedded runner.
    pub fn engine(&self) -> Option<&Engine> {
        match &self.link {
            Link::Embedded(e) => Some(e),
            Link::Remote(_) => None,
        }
    }

    /// What the engine or daemon serves. Refuses another protocol number.
    pub async fn describe(&self) -> Result<DescribeResponse> {
        let d = self.link.describe().await?;
        if d.protocol != PROTOCOL {
            return Err(Error::new(
                ErrorCode::ProtocolMismatch,
                format!(
                    "the daemon serves protocol {}, this client speaks {PROTOCOL}",
                    d.protocol
                ),
            ));
        }
        Ok(d)
    }

    /// Runs one request in a fresh sandbox. The answer is bound to the request
    /// and its record verified before it is returned. Cancelling `cancel`
    /// cancels the run: the embedded engine stops it; a remote call is
    /// abandoned (the daemon sees the connection close). Either way the answer
    /// is [`ErrorCode::Cancelled`].
    pub async fn run(
        &self,
        mut request: Request,
        cancel: CancellationToken,
    ) -> Result<RunResponse> {
        if cancel.is_cancelled() {
            return Err(cancelled(false));
        }
        check_locally(&mut request)?;
        if matches!(request.payload, Payload::Cell(_)) {
            return Err(Error::invalid("a cell runs only in a session"));
        }
        let response = self.link.run(&request, cancel).await?;
        check_single(&request, &response)?;
        Ok(response)
    }

    /// Opens a session: one sandbox for many calls. The answer must name the
    /// session by its id's fingerprint, meet the floor and run software the
    /// rule allows; otherwise the session is closed again and the open fails.
    pub async fn open_session(&self, opts: SessionOptions) -> Result<Session> {
        let floor = floor_of(&opts.minimum_isolation)?;
        if let Some(r) = &opts.software_rule {
            r.validate()?;
        }
        let req = OpenSessionRequest {
            protocol: PROTOCOL,
            minimum_isolation: opts.minimum_isolation,
            trace_id: opts.trace_id,
            lifetime_ms: opts.lifetime_ms,
            idle_timeout_ms: opts.idle_timeout_ms,
            software_rule: opts.software_rule,
            languages: opts.languages,
            ..OpenSessionRequest::default()
        };
        let open = self.link.open(&req).await?;
        let state = State {
            link: self.link.clone(),
            chain: Chain::new(&open.session_id),
            id: Secret::new(open.session_id),
            floor,
            rule: req.software_rule,
            opened: Evidence {
                sandbox: open.sandbox,
                isolation: open.isolation,
                software_identity: open.software_identity,
                ..Evidence::default()
            },
            ended: None,
            closed: false,
            broken: false,
        };
        let problem = if open.session != state.chain.fingerprint() {
            Some(Error::new(
                ErrorCode::RecordMismatch,
                "the session fingerprint does not match its id",
            ))
        } else if !state
            .opened
            .isolation
            .parse::<Isolation>()
            .is_ok_and(|t| t.meets(floor))
        {
            Some(Error::new(
                ErrorCode::IsolationEvidenceMismatch,
                "the session's tier does not meet the floor",
            ))
        } else if state
            .rule
            .as_ref()
            .is_some_and(|r| !r.allows(&state.opened.software_identity))
        {
            Some(Error::new(
                ErrorCode::RecordMismatch,
                "the session's software is outside the rule",
            ))
        } else {
            None
        };
        if let Some(e) = problem {
            let _ = state.link.close(state.id.expose()).await;
            return Err(e);
        }
        Ok(Session {
            fingerprint: state.chain.fingerprint().to_owned(),
            isolation: state.opened.isolation.clone(),
            state: Arc::new(Mutex::new(state)),
        })
    }

    /// Ends an embedded engine's sessions and waits for their sandboxes; a
    /// no-op for a remote runner.
    pub async fn shutdown(&self) {
        if let Link::Embedded(e) = &self.link {
            e.shutdown().await;
        }
    }
}

/// An open session. Calls run one at a time (a second call waits for the
/// first). Cheap to clone; clones share the session. The session id is a
/// capability: it never leaves this value; [`Session::fingerprint`] names it.
#[derive(Clone)]
pub struct Session {
    fingerprint: String,
    isolation: String,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

/// A session as this handle has seen it.
struct State {
    link: Link,
    id: Secret,
    chain: Chain,
    floor: Floor,
    rule: Option<SoftwareRule>,
    opened: Evidence,
    ended: Option<SessionEnd>,
    /// This handle closed it.
    closed: bool,
    /// An answer failed verification: only a close is sent.
    broken: bool,
}

/// A session call's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionAnswer {
    /// The request as sent (the session's floor and rule applied), whose
    /// digest the call's record carries.
    pub request: Request,
    /// The answer, its record continuing the chain.
    pub response: RunResponse,
    /// Set when the session ended during or after the call.
    pub ended: Option<SessionEnd>,
}

fn closed() -> Error {
    Error::session_ended(SessionEnd::Closed, "this handle closed the session")
}

impl State {
    /// A call as the session sends it: no module, the floor raised to the
    /// session's, the rule intersected with the session's, then checked.
    fn prepare(&self, mut request: Request) -> Result<Request> {
        if matches!(request.payload, Payload::Module(_)) {
            return Err(Error::invalid("a session runs no module"));
        }
        let floor = floor_of(&request.envelope.minimum_isolation)?.max(self.floor);
        request.envelope.minimum_isolation = floor.as_str().to_owned();
        request.envelope.software_rule =
            SoftwareRule::intersect(self.rule.as_ref(), request.envelope.software_rule.as_ref())?;
        check_locally(&mut request)?;
        Ok(request)
    }

    async fn call(&mut self, request: &Request, cancel: CancellationToken) -> Result<RunResponse> {
        match self
            .link
            .session_run(self.id.expose(), request, cancel)
            .await
        {
            Ok(answer) => {
                let checked = answer
                    .run
                    .ok_or_else(|| {
                        Error::new(
                            ErrorCode::RecordMismatch,
                            "the session answer carries no run",
                        )
                    })
                    .and_then(|run| self.chain.check_call(request, &run).map(|()| run));
                if checked.is_err() {
                    self.broken = true;
                }
                if answer.ended != SessionEnd::Open {
                    self.ended = Some(answer.ended);
                }
                checked
            }
            Err(e) => {
                if let Some(rec) = e.unanswered() {
                    if self
                        .chain
                        .check_unanswered(request, rec, &self.opened)
                        .is_err()
                    {
                        self.broken = true;
                    }
                } else if e.not_dispatched().is_none() {
                    self.broken = true;
                }
                if let Some(end) = e.session_end() {
                    self.ended = Some(end.reason);
                }
                Err(e)
            }
        }
    }
}

impl Session {
    /// The session fingerprint (the SHA-256 of its id, which records carry).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The tier measured at open.
    pub fn isolation(&self) -> &str {
        &self.isolation
    }

    /// Runs a snippet, project or cell in the session, as [`State::prepare`]
    /// sends it. Waiting for the session's turn ends when `cancel` fires
    /// (refused: the call never ran).
    pub async fn run(&self, request: Request, cancel: CancellationToken) -> Result<SessionAnswer> {
        if cancel.is_cancelled() {
            return Err(cancelled(false));
        }
        let mut state = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return Err(Error::new(ErrorCode::Cancelled, "cancelled while waiting for the session")
                    .with_refusal(Refusal::Capacity));
            }
            s = self.state.lock() => s,
        };
        if state.closed {
            return Err(closed());
        }
        if state.broken {
            return Err(Error::new(
                ErrorCode::RecordMismatch,
                "this session stopped after an unverifiable answer; close it",
            )
            .marked(Some(Refusal::Request)));
        }
        let request = state.prepare(request)?;
        if cancel.is_cancelled() {
            return Err(cancelled(false));
        }
        let response = state.call(&request, cancel).await?;
        Ok(SessionAnswer {
            request,
            response,
            ended: state.ended,
        })
    }

    /// Why the session ended, once a call or this handle's close has said so.
    pub async fn ended(&self) -> Option<SessionEnd> {
        self.state.lock().await.ended
    }

    /// Whether this handle closed the session.
    pub async fn is_closed(&self) -> bool {
        self.state.lock().await.closed
    }

    /// Closes the session and checks its summary (call count, last record
    /// digest) against the chain seen. A second close is
    /// [`ErrorCode::SessionEnded`].
    pub async fn close(&self) -> Result<CloseSessionResponse> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(closed());
        }
        state.closed = true;
        let summary = state.link.close(state.id.expose()).await;
        let end = match &summary {
            Ok(s) if s.ended != SessionEnd::Open => s.ended,
            _ => SessionEnd::Closed,
        };
        state.ended.get_or_insert(end);
        let summary = summary?;
        state
            .chain
            .check_close(&summary.session, summary.calls, &summary.last_record_sha256)?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests;
