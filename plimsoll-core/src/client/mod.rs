//! The remote client: drives a plimsolld over the wire and makes every check
//! the published client makes — answer binding, record and chain
//! verification, the floor re-checked on the answer (a mismatch is an
//! isolation-evidence error, never a safe retry), and typed refusals that say
//! whether anything ran.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, ErrorCode, Refusal, Result, SessionEnd};
use crate::request::{PROTOCOL, Payload, Request, SoftwareRule};
use crate::secret::Secret;
use crate::tier::{Floor, Isolation};
use crate::verify::{Chain, check_single};
use crate::wire::json::{decode, encode};
use crate::wire::{
    CloseSessionRequest, CloseSessionResponse, DescribeRequest, DescribeResponse, Evidence,
    OpenSessionRequest, OpenSessionResponse, RunRequest, RunResponse, SessionRunResponse,
};

mod transport;

use transport::Transport;

/// The default bound on one whole exchange.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(360);

fn malformed(e: String) -> Error {
    Error::new(ErrorCode::Transport, format!("malformed answer: {e}"))
}

/// A client for one plimsolld. Cheap to clone and share across tasks: clones
/// share one connection pool and credential.
#[derive(Clone)]
pub struct RemoteClient {
    transport: Arc<Transport>,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClient")
            .field("base", &self.transport.base)
            .finish_non_exhaustive()
    }
}

/// Options for opening a session.
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
}

impl RemoteClient {
    /// A client for `base_url`. Cleartext http is refused off loopback unless
    /// `insecure_http`. The token, if any, must be visible ASCII.
    pub fn new(base_url: &str, token: Option<String>, insecure_http: bool) -> Result<RemoteClient> {
        let base = transport::base_url(base_url, insecure_http)?;
        if let Some(t) = &token
            && (t.is_empty() || !t.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        {
            return Err(Error::invalid("the token must be visible ASCII"));
        }
        Ok(RemoteClient {
            transport: Arc::new(Transport {
                base,
                token: token.map(Secret::new),
                timeout: DEFAULT_REQUEST_TIMEOUT,
                client: crate::grant::upstream_client(),
            }),
        })
    }

    /// Sets the bound on each whole exchange (for this client and its later clones).
    pub fn with_timeout(mut self, timeout: Duration) -> RemoteClient {
        match Arc::get_mut(&mut self.transport) {
            Some(t) => t.timeout = timeout,
            None => {
                let t = &self.transport;
                self.transport = Arc::new(Transport {
                    base: t.base.clone(),
                    token: t.token.as_ref().map(|s| Secret::new(s.expose().to_owned())),
                    timeout,
                    client: t.client.clone(),
                });
            }
        }
        self
    }

    /// What the daemon serves. Refuses another protocol number.
    pub async fn describe(&self) -> Result<DescribeResponse> {
        let body = self
            .transport
            .call("Describe", encode(&DescribeRequest {}))
            .await?;
        let d: DescribeResponse = decode(&body).map_err(malformed)?;
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

    /// Runs a request in a fresh sandbox; the answer's record is verified
    /// against the request sent before it is returned.
    pub async fn run(&self, mut request: Request) -> Result<RunResponse> {
        check_locally(&mut request)?;
        if matches!(request.payload, Payload::Cell(_)) {
            return Err(Error::invalid("a cell runs only in a session"));
        }
        let body = self
            .transport
            .call("Run", encode(&RunRequest::from_request(&request)))
            .await?;
        let resp: RunResponse = decode(&body).map_err(malformed)?;
        check_single(&request, &resp)?;
        Ok(resp)
    }

    /// Opens a session: one sandbox for many calls.
    pub async fn open_session(&self, opts: SessionOptions) -> Result<RemoteSession> {
        let floor =
            Floor::parse(&opts.minimum_isolation).map_err(|e| Error::invalid(e.to_string()))?;
        if let Some(r) = &opts.software_rule {
            r.validate()?;
        }
        let req = OpenSessionRequest {
            protocol: PROTOCOL,
            minimum_isolation: opts.minimum_isolation.clone(),
            lifetime_ms: opts.lifetime_ms,
            idle_timeout_ms: opts.idle_timeout_ms,
            software_rule: opts.software_rule.clone(),
            languages: opts.languages.clone(),
            ..OpenSessionRequest::default()
        };
        let body = self.transport.call("OpenSession", encode(&req)).await?;
        let open: OpenSessionResponse = decode(&body).map_err(malformed)?;
        let session = RemoteSession {
            client: self.clone(),
            id: Secret::new(open.session_id.clone()),
            chain: Chain::new(&open.session_id),
            floor,
            rule: opts.software_rule,
            opened: Evidence {
                sandbox: open.sandbox.clone(),
                isolation: open.isolation.clone(),
                software_identity: open.software_identity.clone(),
                ..Evidence::default()
            },
            ended: None,
            broken: false,
        };
        let problem = if open.session != session.chain.fingerprint() {
            Some(Error::new(
                ErrorCode::RecordMismatch,
                "the session fingerprint does not match its id",
            ))
        } else if !open
            .isolation
            .parse::<Isolation>()
            .is_ok_and(|t| t.meets(floor))
        {
            Some(Error::new(
                ErrorCode::IsolationEvidenceMismatch,
                "the session's tier does not meet the floor",
            ))
        } else if session
            .rule
            .as_ref()
            .is_some_and(|r| !r.allows(&open.software_identity))
        {
            Some(Error::new(
                ErrorCode::RecordMismatch,
                "the session's software is outside the rule",
            ))
        } else {
            None
        };
        if let Some(e) = problem {
            let _ = session.send_close().await;
            return Err(e);
        }
        Ok(session)
    }
}

fn check_locally(request: &mut Request) -> Result<()> {
    request.envelope.check_protocol()?;
    request.envelope.validate()?;
    request.payload.validate()
}

/// The intersection of the session's rule and a call's (the published client's `merge_rules`).
fn merge_rules(a: Option<&SoftwareRule>, b: Option<&SoftwareRule>) -> Result<Option<SoftwareRule>> {
    match (a, b) {
        (None, None) => Ok(None),
        (Some(r), None) | (None, Some(r)) => Ok(Some(r.clone())),
        (Some(a), Some(b)) => {
            let ids: Vec<String> = a
                .identities
                .iter()
                .filter(|i| b.identities.contains(i))
                .cloned()
                .collect();
            if ids.is_empty() {
                return Err(Error::invalid(
                    "the call's software rule and the session's share no identity",
                ));
            }
            let mode = if ids.len() == 1 { "exact" } else { "approved" };
            Ok(Some(SoftwareRule {
                mode: mode.into(),
                identities: ids,
            }))
        }
    }
}

/// A session call as it will be sent (see [`RemoteSession::prepare`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared(Request);

impl Prepared {
    /// The request as it will be sent.
    pub fn request(&self) -> &Request {
        &self.0
    }
}

/// An open session on a remote daemon. Calls run one at a time; every record
/// must continue the chain. After an unmarked error that does not advance the
/// chain, the session sends nothing more but a close. It holds a clone of its
/// client, so it may outlive the value it was opened from.
pub struct RemoteSession {
    client: RemoteClient,
    id: Secret,
    chain: Chain,
    floor: Floor,
    rule: Option<SoftwareRule>,
    opened: Evidence,
    ended: Option<SessionEnd>,
    broken: bool,
}

impl std::fmt::Debug for RemoteSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSession")
            .field("session", &self.chain.fingerprint())
            .finish_non_exhaustive()
    }
}

impl RemoteSession {
    /// The session fingerprint.
    pub fn fingerprint(&self) -> &str {
        self.chain.fingerprint()
    }

    /// The tier measured at open.
    pub fn isolation(&self) -> &str {
        &self.opened.isolation
    }

    /// Why the session ended, once it has.
    pub fn ended(&self) -> Option<SessionEnd> {
        self.ended
    }

    /// Runs a snippet, project or cell in the session.
    pub async fn run(&mut self, request: Request) -> Result<RunResponse> {
        let prepared = self.prepare(request)?;
        self.run_prepared(&prepared).await
    }

    /// Prepares a call as [`RemoteSession::run`] sends it: the floor raised to
    /// the session's, the software rule intersected with the session's, and the
    /// request checked locally. [`Prepared::request`] is the request whose
    /// digest the call's record must carry.
    pub fn prepare(&self, mut request: Request) -> Result<Prepared> {
        self.check_usable()?;
        if matches!(request.payload, Payload::Module(_)) {
            return Err(Error::invalid("a session runs no module"));
        }
        let floor = Floor::parse(&request.envelope.minimum_isolation)
            .map_err(|e| Error::invalid(e.to_string()))?
            .max(self.floor);
        request.envelope.minimum_isolation = floor.as_str().to_owned();
        request.envelope.software_rule =
            merge_rules(self.rule.as_ref(), request.envelope.software_rule.as_ref())?;
        check_locally(&mut request)?;
        Ok(Prepared(request))
    }

    fn check_usable(&self) -> Result<()> {
        if self.broken {
            return Err(Error::new(
                ErrorCode::RecordMismatch,
                "this session stopped after an unverifiable answer; close it",
            )
            .marked(Some(Refusal::Request)));
        }
        Ok(())
    }

    /// Sends a prepared call and checks its answer against the chain.
    pub async fn run_prepared(&mut self, prepared: &Prepared) -> Result<RunResponse> {
        self.check_usable()?;
        let request = &prepared.0;
        let mut wire = RunRequest::from_request(request);
        wire.session_id = self.id.expose().to_owned();
        match self
            .client
            .transport
            .call("SessionRun", encode(&wire))
            .await
        {
            Ok(body) => {
                let answer: SessionRunResponse = decode(&body).map_err(|e| {
                    self.broken = true;
                    malformed(e)
                })?;
                let run = answer.run.ok_or_else(|| {
                    Error::new(
                        ErrorCode::RecordMismatch,
                        "the session answer carries no run",
                    )
                })?;
                if let Err(e) = self.chain.check_call(request, &run) {
                    self.broken = true;
                    return Err(e);
                }
                if answer.ended != SessionEnd::Open {
                    self.ended = Some(answer.ended);
                }
                Ok(run)
            }
            Err(e) => {
                if let Some(rec) = e.unanswered().cloned() {
                    if self
                        .chain
                        .check_unanswered(request, &rec, &self.opened)
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

    async fn send_close(&self) -> Result<CloseSessionResponse> {
        let req = CloseSessionRequest {
            protocol: PROTOCOL,
            session_id: self.id.expose().to_owned(),
        };
        let body = self
            .client
            .transport
            .call("CloseSession", encode(&req))
            .await?;
        decode(&body).map_err(malformed)
    }

    /// Closes the session and checks the daemon's count and last digest
    /// against the chain seen.
    pub async fn close(self) -> Result<CloseSessionResponse> {
        let summary = self.send_close().await?;
        self.chain
            .check_close(&summary.session, summary.calls, &summary.last_record_sha256)?;
        Ok(summary)
    }
}
