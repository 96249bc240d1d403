//! One handle over an embedded engine or a remote plimsolld, for language
//! surfaces (the Python and Node bindings, the C ABI).
//!
//! A [`Runner`] owns what it needs (`'static`, cheap to clone), so a binding
//! can hand it to any runtime task. It adds no rule: embedded runs go through
//! [`Engine`], remote runs through [`RemoteClient`] with every check the
//! published client makes. What it does *not* do: own a runtime, spawn tasks,
//! or turn a dropped future into a cancelled run — the binding passes a
//! [`CancellationToken`] and cancels it when its caller gives up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::client::{RemoteClient, RemoteSession, SessionOptions};
use crate::config::{Config, ConfigError, Env, VARIABLES};
use crate::engine::{Caller, Engine, StartError};
use crate::error::{Error, ErrorCode, Result, SessionEnd};
use crate::request::{PROTOCOL, Request, SoftwareRule};
use crate::secret::Secret;
use crate::wire::{CloseSessionResponse, DescribeResponse, OpenSessionRequest, RunResponse};

/// An embedded engine or a remote daemon, behind one set of calls.
#[derive(Clone)]
pub struct Runner {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Embedded(Engine),
    Remote(RemoteClient),
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Embedded(e) => f.debug_tuple("Runner::Embedded").field(e).finish(),
            Inner::Remote(c) => f.debug_tuple("Runner::Remote").field(c).finish(),
        }
    }
}

/// Checks that every `SANDBOX_*` or `PLIMSOLL_*` name given to an embedded
/// engine is one the core reads, so a typo is an error rather than a silent
/// default. Other names pass (a grant profile may read its secret from any).
pub fn check_variable_names<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> std::result::Result<(), ConfigError> {
    for name in names {
        let ours = name.starts_with("SANDBOX_") || name.starts_with("PLIMSOLL_");
        if ours && !VARIABLES.iter().any(|v| v.name == name) {
            let known = VARIABLES
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

impl Runner {
    /// Starts an embedded engine configured like the daemon from daemon-style
    /// variables (`SANDBOX_PROVIDER=wasm`, …), with the same startup proof.
    /// Must be called inside a tokio runtime (sessions keep a housekeeping task).
    pub async fn embedded(
        vars: &std::collections::HashMap<String, String>,
    ) -> std::result::Result<Runner, StartError> {
        check_variable_names(vars.keys().map(String::as_str)).map_err(StartError::Config)?;
        let get = |k: &str| vars.get(k).cloned();
        let config = Config::from_env(&Env::new(&get)).map_err(StartError::Config)?;
        let engine = Engine::start(&config).await?;
        Ok(Runner {
            inner: Inner::Embedded(engine),
        })
    }

    /// A runner over an engine already started (for embedders with their own
    /// provider, and tests).
    pub fn from_engine(engine: Engine) -> Runner {
        Runner {
            inner: Inner::Embedded(engine),
        }
    }

    /// A client for the plimsolld at `base_url` (see [`RemoteClient::new`]);
    /// `timeout` bounds each whole exchange.
    pub fn remote(
        base_url: &str,
        token: Option<String>,
        insecure_http: bool,
        timeout: Option<Duration>,
    ) -> Result<Runner> {
        let mut c = RemoteClient::new(base_url, token, insecure_http)?;
        if let Some(t) = timeout {
            c = c.with_timeout(t);
        }
        Ok(Runner {
            inner: Inner::Remote(c),
        })
    }

    /// What the engine or daemon serves.
    pub async fn describe(&self) -> Result<DescribeResponse> {
        match &self.inner {
            Inner::Embedded(e) => Ok(e.describe()),
            Inner::Remote(c) => c.describe().await,
        }
    }

    /// Runs one request. Cancelling `cancel` cancels the run: the embedded
    /// engine stops it; a remote call is abandoned (the daemon sees the
    /// connection close) and answers [`ErrorCode::Cancelled`].
    pub async fn run(&self, request: Request, cancel: CancellationToken) -> Result<RunResponse> {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        match &self.inner {
            Inner::Embedded(e) => e.run(&Caller::anonymous(), request, cancel).await,
            Inner::Remote(c) => tokio::select! {
                biased;
                () = cancel.cancelled() => Err(cancelled()),
                r = c.run(request) => r,
            },
        }
    }

    /// Opens a session.
    pub async fn open_session(&self, opts: SessionOptions) -> Result<Session> {
        let inner = match &self.inner {
            Inner::Embedded(engine) => {
                let req = OpenSessionRequest {
                    protocol: PROTOCOL,
                    minimum_isolation: opts.minimum_isolation,
                    lifetime_ms: opts.lifetime_ms,
                    idle_timeout_ms: opts.idle_timeout_ms,
                    software_rule: opts.software_rule.clone(),
                    languages: opts.languages,
                    ..OpenSessionRequest::default()
                };
                let open = engine.open_session(&Caller::anonymous(), &req).await?;
                SessionInner::Embedded {
                    engine: engine.clone(),
                    id: Secret::new(open.session_id),
                    fingerprint: open.session,
                    isolation: open.isolation,
                    rule: opts.software_rule,
                    ended: None,
                }
            }
            Inner::Remote(c) => SessionInner::Remote(c.open_session(opts).await?),
        };
        Ok(Session {
            fingerprint: inner.fingerprint().to_owned(),
            isolation: inner.isolation().to_owned(),
            inner: Arc::new(Mutex::new(Some(inner))),
        })
    }

    /// Ends an embedded engine's sessions and waits for their sandboxes; a no-op for a client.
    pub async fn shutdown(&self) {
        if let Inner::Embedded(e) = &self.inner {
            e.shutdown().await;
        }
    }
}

fn cancelled() -> Error {
    Error::new(ErrorCode::Cancelled, "the caller cancelled the run")
}

/// An open session on an embedded engine or a remote daemon. Calls run one at a
/// time (a second call waits for the first). Cheap to clone; clones share the session.
#[derive(Clone)]
pub struct Session {
    fingerprint: String,
    isolation: String,
    inner: Arc<Mutex<Option<SessionInner>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

enum SessionInner {
    Embedded {
        engine: Engine,
        id: Secret,
        fingerprint: String,
        isolation: String,
        rule: Option<SoftwareRule>,
        ended: Option<SessionEnd>,
    },
    Remote(RemoteSession),
}

impl SessionInner {
    fn fingerprint(&self) -> &str {
        match self {
            SessionInner::Embedded { fingerprint, .. } => fingerprint,
            SessionInner::Remote(s) => s.fingerprint(),
        }
    }
    fn isolation(&self) -> &str {
        match self {
            SessionInner::Embedded { isolation, .. } => isolation,
            SessionInner::Remote(s) => s.isolation(),
        }
    }
}

/// A session call's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionAnswer {
    /// The request as sent (the session's floor and rule applied).
    pub request: Request,
    /// The answer, its record chained.
    pub response: RunResponse,
    /// Set when the session ended during or after the call.
    pub ended: Option<SessionEnd>,
}

fn closed() -> Error {
    Error::session_ended(SessionEnd::Closed, "this handle closed the session")
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

    /// Runs a snippet, project or cell in the session.
    ///
    /// An embedded call carries the session's software rule intersected with
    /// the call's (the core's [`merge`](crate::session::merge)); a remote call
    /// is prepared and checked by [`RemoteSession`]. The answer holds the
    /// request as sent, whose digest the call's record carries.
    pub async fn run(
        &self,
        mut request: Request,
        cancel: CancellationToken,
    ) -> Result<SessionAnswer> {
        let mut guard = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(cancelled().marked(Some(crate::error::Refusal::Capacity))),
            g = self.inner.lock() => g,
        };
        match guard.as_mut().ok_or_else(closed)? {
            SessionInner::Embedded {
                engine,
                id,
                rule,
                ended,
                ..
            } => {
                request.envelope.software_rule =
                    crate::session::merge(rule.as_ref(), request.envelope.software_rule.as_ref());
                let answer = engine
                    .session_run(&Caller::anonymous(), id.expose(), request.clone(), cancel)
                    .await
                    .inspect_err(|e| {
                        if let Some(end) = e.session_end() {
                            *ended = Some(end.reason);
                        }
                    })?;
                let end = (answer.ended != SessionEnd::Open).then_some(answer.ended);
                if end.is_some() {
                    *ended = end;
                }
                let response = answer
                    .run
                    .ok_or_else(|| Error::infrastructure("the session answer carries no run"))?;
                Ok(SessionAnswer {
                    request,
                    response,
                    ended: end,
                })
            }
            SessionInner::Remote(s) => {
                let prepared = s.prepare(request)?;
                let response = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(cancelled()),
                    r = s.run_prepared(&prepared) => r?,
                };
                Ok(SessionAnswer {
                    request: prepared.request().clone(),
                    response,
                    ended: s.ended(),
                })
            }
        }
    }

    /// Why the session ended, once a call has said so.
    pub async fn ended(&self) -> Option<SessionEnd> {
        match self.inner.lock().await.as_ref() {
            None => Some(SessionEnd::Closed),
            Some(SessionInner::Embedded { ended, .. }) => *ended,
            Some(SessionInner::Remote(s)) => s.ended(),
        }
    }

    /// Closes the session and returns its chain's summary (checked against the
    /// chain seen, for a remote session). A second close is
    /// [`ErrorCode::SessionEnded`].
    pub async fn close(&self) -> Result<CloseSessionResponse> {
        let inner = self.inner.lock().await.take().ok_or_else(closed)?;
        match inner {
            SessionInner::Embedded { engine, id, .. } => {
                engine
                    .close_session(&Caller::anonymous(), PROTOCOL, id.expose())
                    .await
            }
            SessionInner::Remote(s) => s.close().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn variable_names_are_checked() {
        assert!(check_variable_names(["SANDBOX_PROVIDER", "MY_API_KEY"]).is_ok());
        let e = check_variable_names(["SANDBOX_PROVDER"]).unwrap_err();
        assert!(e.message.contains("SANDBOX_PROVDER"), "{e}");
        let e = check_variable_names(["SANDBOX_PROVIDER", "PLIMSOLL_ADDR"]).unwrap_err();
        assert!(e.message.contains("PLIMSOLL_ADDR"), "{e}");
    }

    #[tokio::test]
    async fn disabled_runner_refuses_and_sessions_are_off() {
        let r = Runner::embedded(&HashMap::new()).await.unwrap();
        assert_eq!(r.describe().await.unwrap().isolation, "none");
        let req = Request::new(crate::request::Payload::JavaScript(
            crate::request::JavaScriptRun {
                code: "1".into(),
                ..Default::default()
            },
        ));
        let e = r.run(req, CancellationToken::new()).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Disabled);
        let e = r.open_session(SessionOptions::default()).await.unwrap_err();
        assert!(e.not_dispatched().is_some());
        let mut vars = HashMap::new();
        vars.insert("SANDBOX_PROVIDER".to_owned(), "nope".to_owned());
        assert!(matches!(
            Runner::embedded(&vars).await,
            Err(StartError::Config(_))
        ));
    }

    #[tokio::test]
    async fn remote_runner_checks_the_url() {
        assert!(Runner::remote("http://example.com", None, false, None).is_err());
        let r = Runner::remote("http://127.0.0.1:9", None, false, None).unwrap();
        let e = r.describe().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Transport);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let req = Request::new(crate::request::Payload::JavaScript(
            crate::request::JavaScriptRun {
                code: "1".into(),
                ..Default::default()
            },
        ));
        let e = r.run(req, cancel).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Cancelled);
    }
}
