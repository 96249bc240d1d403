//! The broker: makes a run's API calls and holds its credential, outside the
//! sandbox. Only a canonical target matching an allowed route byte for byte
//! is sent; everything else is answered by the broker and never reaches the API.
//!
//! The guest sees HTTP answers only: a refusal or an upstream failure is an
//! HTTP error status to the guest, never a plimsoll infrastructure error.
//! Calls are recorded as metadata (method, route pattern, status), never
//! bodies or tokens.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::Semaphore;

use crate::grant::metrics::CallMetrics;
use crate::grant::profile::Profile;
use crate::grant::route::{Denial, approve};
use crate::secret::Secret;

/// Largest request body a guest may send, bytes.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// Largest response body passed back, bytes.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// Calls in flight at once per run.
pub const MAX_IN_FLIGHT: usize = 16;
/// The longest one upstream call may take.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);
/// The part of the run's remaining time a call leaves to the guest (up to
/// [`CALL_MARGIN_MAX`]): a call cut by its timeout answers the guest 504
/// while the guest still has time to handle it, rather than running the
/// guest into its own deadline.
pub const CALL_MARGIN_FRACTION: u32 = 4;
/// The most a call leaves to the guest: 1 s.
pub const CALL_MARGIN_MAX: Duration = Duration::from_secs(1);

/// One call's timeout when the run has `left`: what is left minus the
/// guest's margin (a quarter of it, at most 1 s), never above
/// [`UPSTREAM_TIMEOUT`].
pub fn call_timeout(left: Duration) -> Duration {
    let margin = (left / CALL_MARGIN_FRACTION).min(CALL_MARGIN_MAX);
    left.saturating_sub(margin).min(UPSTREAM_TIMEOUT)
}

use super::Upstream;

/// The shared upstream HTTP client: no proxies, no redirects, TLS with the
/// Mozilla roots.
pub(crate) fn upstream_client() -> Upstream {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(Duration::from_secs(10)));
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map(|b| {
        b.with_root_certificates(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })
        .with_no_client_auth()
    });
    let connector = match tls {
        Ok(cfg) => hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(cfg)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http),
        // The ring provider always supports the safe defaults; keep http working regardless.
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .wrap_connector(HttpConnector::new()),
    };
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector)
}

/// One call a guest asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestCall {
    /// `GET`, `PUT`, `POST`, `DELETE` or `PATCH`.
    pub method: String,
    /// The request target: a canonical absolute path.
    pub target: String,
    /// The body.
    pub body: Vec<u8>,
    /// The body's media type, if any.
    pub content_type: Option<String>,
}

/// What the guest gets back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// The body's media type.
    pub content_type: String,
}

impl GuestAnswer {
    /// A refusal: `status` and `{"error": message}` as JSON.
    pub(crate) fn refusal(status: u16, message: &str) -> GuestAnswer {
        GuestAnswer {
            status,
            body: format!("{{\"error\":{message:?}}}").into_bytes(),
            content_type: "application/json".into(),
        }
    }
}

/// What a run's calls came to, for its audit line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallSummary {
    /// Calls sent upstream.
    pub sent: u32,
    /// Calls refused by the broker.
    pub denied: u32,
    /// Calls whose upstream failed (no answer, timeout, oversized answer).
    pub failed: u32,
}

/// One run's broker: the frozen profile and the credential minted for it.
pub struct Broker {
    profile: Arc<Profile>,
    credential: Secret,
    client: Upstream,
    deadline: Instant,
    calls: AtomicU32,
    in_flight: Semaphore,
    summary: Mutex<CallSummary>,
    metrics: Arc<CallMetrics>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("profile", &self.profile.name)
            .finish_non_exhaustive()
    }
}

impl Broker {
    pub(crate) fn new(
        profile: Arc<Profile>,
        credential: Secret,
        client: Upstream,
        deadline: Instant,
        metrics: Arc<CallMetrics>,
    ) -> Broker {
        Broker {
            profile,
            credential,
            client,
            deadline,
            calls: AtomicU32::new(0),
            in_flight: Semaphore::new(MAX_IN_FLIGHT),
            summary: Mutex::default(),
            metrics,
        }
    }

    /// The profile's name.
    pub fn profile(&self) -> &str {
        &self.profile.name
    }

    /// The run's calls so far.
    pub fn summary(&self) -> CallSummary {
        *self.summary.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, f: impl FnOnce(&mut CallSummary)) {
        f(&mut self.summary.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Refuses a call its transport (the socket, the guard) could not take
    /// whole, e.g. a body over [`MAX_REQUEST_BYTES`]: counted and spent like
    /// any refusal the broker makes.
    pub fn refuse(&self, method: &str, status: u16, message: &str) -> GuestAnswer {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.note(|s| s.denied += 1);
        self.metrics
            .count(&self.profile.name, method, "(denied)", "denied");
        GuestAnswer::refusal(status, message)
    }

    /// Makes one call for the guest, or refuses it. Never fails: every outcome
    /// is an HTTP answer.
    ///
    /// Every call counts against the profile's `max_calls`, refused ones too,
    /// so a guest cannot loop on refusals for free.
    pub async fn call(&self, call: GuestCall) -> GuestAnswer {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.profile.max_calls {
            self.note(|s| s.denied += 1);
            self.metrics
                .count(&self.profile.name, &call.method, "(denied)", "denied");
            return GuestAnswer::refusal(429, "this run's call budget is spent");
        }
        let route = match approve(&self.profile.allow, &call.method, &call.target) {
            Ok(r) => r.to_string(),
            Err(why) => {
                self.note(|s| s.denied += 1);
                self.metrics
                    .count(&self.profile.name, &call.method, "(denied)", "denied");
                return match why {
                    Denial::Malformed => {
                        GuestAnswer::refusal(400, "the request target is not a canonical path")
                    }
                    Denial::NotAllowed => {
                        GuestAnswer::refusal(403, "no route of this grant allows that call")
                    }
                };
            }
        };
        if call.body.len() > MAX_REQUEST_BYTES {
            self.note(|s| s.denied += 1);
            self.metrics
                .count(&self.profile.name, &call.method, &route, "denied");
            return GuestAnswer::refusal(413, "the request body exceeds 1 MiB");
        }
        let Ok(_slot) = self.in_flight.try_acquire() else {
            self.note(|s| s.denied += 1);
            return GuestAnswer::refusal(429, "too many calls in flight");
        };
        let left = call_timeout(self.deadline.saturating_duration_since(Instant::now()));
        let answer = match tokio::time::timeout(left, self.send(&call)).await {
            Ok(Ok(a)) => {
                self.note(|s| s.sent += 1);
                a
            }
            Ok(Err(message)) => {
                self.note(|s| s.failed += 1);
                GuestAnswer::refusal(502, message)
            }
            Err(_) => {
                self.note(|s| s.failed += 1);
                GuestAnswer::refusal(504, "the API did not answer in time")
            }
        };
        let class = match answer.status / 100 {
            1 => "1xx",
            2 => "2xx",
            3 => "3xx",
            4 => "4xx",
            _ => "5xx",
        };
        self.metrics
            .count(&self.profile.name, &call.method, &route, class);
        answer
    }

    async fn send(&self, call: &GuestCall) -> Result<GuestAnswer, &'static str> {
        let uri = format!("{}{}", self.profile.base_url, call.target);
        let mut req = hyper::Request::builder()
            .method(call.method.as_str())
            .uri(uri)
            .header(
                hyper::header::AUTHORIZATION,
                format!("Bearer {}", self.credential.expose()),
            )
            .header(hyper::header::ACCEPT, "application/json, */*");
        if let Some(ct) = call
            .content_type
            .as_deref()
            .filter(|c| c.bytes().all(|b| (0x20..0x7f).contains(&b)))
        {
            req = req.header(hyper::header::CONTENT_TYPE, ct);
        }
        let req = req
            .body(Full::new(Bytes::from(call.body.clone())))
            .map_err(|_| "the call could not be built")?;
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|_| "the API could not be reached")?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream")
            .to_owned();
        let body = Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|_| "the API's answer was unreadable or exceeds 4 MiB")?
            .to_bytes();
        Ok(GuestAnswer {
            status,
            body: scrub(&body, self.credential.expose().as_bytes()),
            content_type,
        })
    }
}

/// Removes every copy of the credential from an answer, in case an API echoes it.
fn scrub(body: &[u8], secret: &[u8]) -> Vec<u8> {
    if secret.is_empty() || body.len() < secret.len() {
        return body.to_vec();
    }
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i..].starts_with(secret) {
            out.extend_from_slice(b"[redacted]");
            i += secret.len();
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{UPSTREAM_TIMEOUT, call_timeout, scrub};
    use std::time::Duration;

    #[test]
    fn a_call_leaves_the_guest_time() {
        let ms = Duration::from_millis;
        assert_eq!(call_timeout(ms(5000)), ms(4000));
        assert_eq!(call_timeout(ms(2000)), ms(1500));
        assert_eq!(call_timeout(ms(0)), ms(0));
        assert_eq!(call_timeout(Duration::from_secs(600)), UPSTREAM_TIMEOUT);
    }

    #[test]
    fn echoed_credentials_are_scrubbed() {
        assert_eq!(
            scrub(b"a tok b tok", b"tok"),
            b"a [redacted] b [redacted]".to_vec()
        );
        assert_eq!(scrub(b"short", b"longer-secret"), b"short".to_vec());
    }
}
