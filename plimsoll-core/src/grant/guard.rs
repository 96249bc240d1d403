//! The egress guard: how a guest in a VM that runs elsewhere (e2b, Docker
//! Cloud) reaches its run's broker. The VM's only allowed egress is one HTTPS
//! path on plimsolld's own guard listener; the broker behind it holds the
//! credential, which never enters the VM.
//!
//! A request names its run by the run's guard credential, a fresh
//! `crg_<64 hex>` minted when the run's grant opens
//! ([`Guard::admit`]) and forgotten when its [`GuardPass`] drops, which the
//! provider does before it kills the VM. The credential travels as
//! `Authorization: Bearer crg_…` (on e2b the vendor's egress proxy adds the
//! header outside the VM; on Docker Cloud the guest holds it). A guard call
//! with no credential, a malformed one, an ended run's or one never minted is
//! refused with 401 before its body is read; a run's credential reaches only
//! that run's broker, so one run cannot use another's grant.
//!
//! The request's path below the guard path is the API target the broker
//! checks against the grant's routes: `POST /v1/e2b/guard/v1/items` asks for
//! `POST /v1/items`. Anything outside the guard path is a 404.
//!
//! Admission per run, so one run cannot starve another: at most
//! [`MAX_HANDLING`] requests in the handler at once (429 past it), at most
//! [`DECODE_SLOTS`] of them reading a body at once, and a body must arrive
//! within [`BODY_WITHIN`] (408 otherwise). The broker's own limits (calls
//! per run, calls in flight, body size, deadline) apply after that.
//!
//! The guard is process-local: a credential lives only in the memory of the
//! daemon that opened the run, so the guard listener cannot sit behind a load
//! balancer that spreads one run's calls over several daemons.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::grant::broker::{Broker, GuestAnswer, GuestCall};
use crate::grant::socket::{content_type, read_body, respond};
use crate::secret::Secret;

/// The guard path plimsolld serves when the guard URL names none.
pub const DEFAULT_PATH: &str = "/v1/e2b/guard";
/// Requests of one run in the handler at once.
pub const MAX_HANDLING: usize = 16;
/// Requests of one run reading their body at once.
pub const DECODE_SLOTS: usize = 2;
/// The longest a request's body may take to arrive, a decode slot included.
pub const BODY_WITHIN: Duration = Duration::from_secs(10);
/// The credential's prefix; 64 lowercase hex digits follow.
pub const CREDENTIAL_PREFIX: &str = "crg_";

type Key = [u8; 32];

/// One admitted run.
struct Run {
    broker: Arc<Broker>,
    handling: Semaphore,
    decoding: Semaphore,
}

/// The guard: the path it serves and the runs it admits.
pub struct Guard {
    path: String,
    runs: Mutex<HashMap<Key, Arc<Run>>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("path", &self.path)
            .field("runs", &self.runs())
            .finish()
    }
}

/// A run's admission to the guard. Dropping it ends the run's guard
/// credential: calls already in the broker finish, new ones get a 401.
pub struct GuardPass {
    credential: Secret,
    key: Key,
    guard: Weak<Guard>,
}

impl std::fmt::Debug for GuardPass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GuardPass([redacted])")
    }
}

impl GuardPass {
    /// The run's guard credential, `crg_<64 hex>`: for the vendor's header
    /// rule or the guest's environment, never for a log or a record.
    pub fn credential(&self) -> &Secret {
        &self.credential
    }
}

impl Drop for GuardPass {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.upgrade() {
            guard.lock().remove(&self.key);
        }
    }
}

fn key_of(credential: &str) -> Key {
    Sha256::digest(credential.as_bytes()).into()
}

/// The credential in an `Authorization` value, if it has the credential's form.
fn presented(authorization: Option<&hyper::header::HeaderValue>) -> Option<&str> {
    let token = authorization?.to_str().ok()?.strip_prefix("Bearer ")?;
    let hex = token.strip_prefix(CREDENTIAL_PREFIX)?;
    (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then_some(token)
}

fn refusal(status: u16, message: &str) -> hyper::Response<Full<Bytes>> {
    respond(GuestAnswer::refusal(status, message))
}

impl Guard {
    /// A guard serving `path` (absolute, no trailing slash, e.g.
    /// [`DEFAULT_PATH`]; the settings that name it check its form).
    pub fn new(path: &str) -> Arc<Guard> {
        Arc::new(Guard {
            path: path.trim_end_matches('/').to_owned(),
            runs: Mutex::default(),
        })
    }

    /// The path it serves.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Runs admitted now.
    pub fn runs(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<Run>>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a run's broker under a fresh guard credential.
    pub fn admit(self: &Arc<Self>, broker: Arc<Broker>) -> GuardPass {
        let credential = format!(
            "{CREDENTIAL_PREFIX}{}",
            hex::encode(rand::random::<[u8; 32]>())
        );
        let key = key_of(&credential);
        let run = Arc::new(Run {
            broker,
            handling: Semaphore::new(MAX_HANDLING),
            decoding: Semaphore::new(DECODE_SLOTS),
        });
        self.lock().insert(key, run);
        GuardPass {
            credential: Secret::new(credential),
            key,
            guard: Arc::downgrade(self),
        }
    }

    /// The run a request's credential names, if it is admitted now.
    fn run_for(&self, req: &hyper::Request<impl hyper::body::Body>) -> Option<Arc<Run>> {
        let token = presented(req.headers().get(hyper::header::AUTHORIZATION))?;
        self.lock().get(&key_of(token)).cloned()
    }

    /// The API target a request's path names, query included; `None` when the
    /// path is not below the guard path.
    fn target<'a>(&self, uri: &'a hyper::Uri) -> Option<&'a str> {
        let pq = uri.path_and_query()?.as_str();
        let rest = pq.strip_prefix(self.path.as_str())?;
        rest.starts_with('/').then_some(rest)
    }

    /// Serves one guard request. Never fails: every outcome is an HTTP answer.
    pub async fn handle<B>(&self, req: hyper::Request<B>) -> hyper::Response<Full<Bytes>>
    where
        B: hyper::body::Body<Data = Bytes>,
    {
        let Some(target) = self.target(req.uri()).map(str::to_owned) else {
            return refusal(404, "not found");
        };
        let Some(run) = self.run_for(&req) else {
            return refusal(401, "no run holds this guard credential");
        };
        let Ok(_handling) = run.handling.try_acquire() else {
            return refusal(429, "too many guard requests of this run at once");
        };
        let method = req.method().as_str().to_owned();
        let content_type = content_type(req.headers());
        let body = tokio::time::timeout(BODY_WITHIN, async {
            let _decoding = run.decoding.acquire().await.ok()?;
            Some(read_body(req.into_body()).await)
        })
        .await;
        let body = match body {
            Err(_) => return refusal(408, "the request body did not arrive in time"),
            Ok(None) => return refusal(503, "the guard is closing"),
            Ok(Some(None)) => {
                return respond(
                    run.broker
                        .refuse(&method, 413, "the request body exceeds 1 MiB"),
                );
            }
            Ok(Some(Some(body))) => body,
        };
        let a = run
            .broker
            .call(GuestCall {
                method,
                target,
                body,
                content_type,
            })
            .await;
        respond(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_bearer_credential_is_presented() {
        let good = format!("crg_{}", "ab".repeat(32));
        let h = |s: &str| hyper::header::HeaderValue::from_str(s).ok();
        assert_eq!(
            presented(h(&format!("Bearer {good}")).as_ref()),
            Some(good.as_str())
        );
        for bad in [
            good.clone(),
            format!("Basic {good}"),
            format!("Bearer {}", good.to_uppercase()),
            format!("Bearer {good}0"),
            format!("Bearer crg_{}", "zz".repeat(32)),
            format!("Bearer {}", "ab".repeat(34)),
        ] {
            assert_eq!(presented(h(&bad).as_ref()), None, "{bad}");
        }
        assert_eq!(presented(None), None);
    }

    #[test]
    fn the_target_is_the_path_below_the_guard_path() {
        let g = Guard::new("/v1/e2b/guard/");
        let t = |s: &str| g.target(&s.parse().unwrap_or_default()).map(str::to_owned);
        assert_eq!(
            t("/v1/e2b/guard/v1/items?x=1").as_deref(),
            Some("/v1/items?x=1")
        );
        assert_eq!(t("/v1/e2b/guard/").as_deref(), Some("/"));
        for outside in ["/v1/e2b/guard", "/v1/e2b/guardx/v1", "/v1/other", "/"] {
            assert_eq!(t(outside), None, "{outside}");
        }
    }
}
