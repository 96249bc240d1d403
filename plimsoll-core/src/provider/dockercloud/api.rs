//! Docker's REST management API (notes: `docs/research/hosted-providers.md`
//! §2.2): the base URL keeps its path (`…/sandboxes`) and routes are
//! `/v1/...` below it. Create (with an `Idempotency-Key`), read back, list
//! (paged), delete (with `If-Match` and the sandbox's ETag), the network
//! policies in force, and the scoped endpoint credential.
//!
//! REST has no capabilities service, so each call names the permission it
//! exercises: a 403 on it is an error naming that permission. GETs answered
//! 429 are retried (at most four tries, honouring `Retry-After` up to 5 s);
//! a 401 is retried once with a freshly exchanged bearer; nothing else is.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use serde_json::Value;
use url::Url;

use async_trait::async_trait;

use super::auth::Auth;
use super::contract::{Contract, SandboxEndpoint};
use super::endpoint::Endpoint;
use super::model::{Policy, Sandbox, Spec};
use super::sandbox::CREDENTIAL_TTL;
use crate::error::{Error, Result};
use crate::provider::hosted::http::{Answer, Http, vendor_error};
use crate::secret::Secret;

/// How long one management call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The most an answer may carry.
const ANSWER_LIMIT: usize = 1 << 20;
/// Tries of a GET answered 429.
const GET_TRIES: u32 = 4;

/// A permission a call needs (named when Docker refuses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Permission {
    /// Reading sandboxes.
    Read,
    /// Creating sandboxes (and their endpoint credentials).
    Create,
    /// Deleting sandboxes.
    Delete,
    /// Reading network policies.
    PolicyRead,
}

impl Permission {
    /// The permission's name in an error.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Permission::Read => "sandboxes read",
            Permission::Create => "sandboxes create",
            Permission::Delete => "sandboxes delete",
            Permission::PolicyRead => "network-policies read",
        }
    }
}

/// The management API.
pub(crate) struct Api {
    http: Http,
    base: Url,
    auth: Arc<Auth>,
}

/// Whether `id` may name a sandbox in a path.
pub(crate) fn id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

impl Api {
    pub(crate) fn new(http: Http, base: Url, auth: Arc<Auth>) -> Api {
        Api { http, base, auth }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.as_str().trim_end_matches('/'))
    }

    /// Sends one call with the bearer; `headers` besides. A 401 drops the
    /// cached bearer (the next call exchanges again).
    async fn send(
        &self,
        what: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Result<(Answer, Arc<Secret>)> {
        let mut tries = 0;
        let mut refreshed = false;
        loop {
            tries += 1;
            let jwt = self.auth.token().await?;
            let mut req = Request::builder()
                .method(method.clone())
                .uri(self.url(path))
                .header("authorization", format!("Bearer {}", jwt.expose()))
                .header("accept", "application/json")
                .header(
                    "user-agent",
                    concat!("plimsoll/", env!("CARGO_PKG_VERSION")),
                );
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            let bytes = match body {
                Some(v) => {
                    req = req.header("content-type", "application/json");
                    Bytes::from(v.to_string())
                }
                None => Bytes::new(),
            };
            let req = req
                .body(Full::new(bytes))
                .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
            let a = self
                .http
                .call(what, req, CALL_TIMEOUT, ANSWER_LIMIT)
                .await?;
            if a.status == StatusCode::UNAUTHORIZED {
                // The bearer expired or was revoked; a 401 ran nothing, so
                // one more try with a fresh exchange is safe for any method.
                self.auth.forget().await;
                if !refreshed {
                    refreshed = true;
                    continue;
                }
            }
            if a.status == StatusCode::TOO_MANY_REQUESTS
                && method == Method::GET
                && tries < GET_TRIES
            {
                let wait = a
                    .headers
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(1)
                    .min(5);
                tokio::time::sleep(Duration::from_secs(wait)).await;
                continue;
            }
            return Ok((a, jwt));
        }
    }

    /// A non-success answer as an error, naming `permission` on a 403.
    fn fail(&self, what: &str, a: &Answer, jwt: &Secret, permission: Permission) -> Error {
        let e = vendor_error("Docker", what, a, &[self.auth.pat(), jwt.expose()]);
        if a.status == StatusCode::FORBIDDEN {
            Error::infrastructure(format!(
                "{} (the token lacks the {} permission)",
                e.message(),
                permission.name()
            ))
        } else {
            e
        }
    }

    fn json(what: &str, a: &Answer) -> Result<Value> {
        serde_json::from_slice(&a.body)
            .map_err(|_| Error::infrastructure(format!("{what}: the answer is not JSON")))
    }

    /// Creates a sandbox: 201 (ready or failed) or 202 (still creating).
    async fn create_body(&self, body: &Value, idempotency_key: &str) -> Result<Sandbox> {
        let what = "creating a Docker Cloud sandbox";
        let headers = [("idempotency-key", idempotency_key)];
        let path = "/v1/sandboxes";
        // A create lost in transit is sent once more with the same key:
        // Docker answers a replay with the first create's sandbox.
        let (a, jwt) = match self
            .send(what, Method::POST, path, Some(body), &headers)
            .await
        {
            Ok(answered) => answered,
            Err(e) => {
                tracing::warn!(error = %e, "a Docker Cloud create got no answer; replaying it with its Idempotency-Key");
                self.send(what, Method::POST, path, Some(body), &headers)
                    .await?
            }
        };
        if a.status != StatusCode::CREATED && a.status != StatusCode::ACCEPTED {
            return Err(self.fail(what, &a, &jwt, Permission::Create));
        }
        Sandbox::parse(&Self::json(what, &a)?, etag(&a))
            .map_err(|m| Error::infrastructure(format!("{what}: {m}")))
    }
}

#[async_trait]
impl Contract for Api {
    async fn create(&self, spec: &Spec<'_>, lease: &str) -> Result<Sandbox> {
        self.create_body(&spec.body(), lease).await
    }

    /// Reads a sandbox back; `None` when Docker says it is not found.
    async fn get(&self, id: &str) -> Result<Option<Sandbox>> {
        let what = "reading a Docker Cloud sandbox back";
        let (a, jwt) = self
            .send(what, Method::GET, &format!("/v1/sandboxes/{id}"), None, &[])
            .await?;
        if a.status == StatusCode::NOT_FOUND && error_code(&a) == Some("notFound".into()) {
            return Ok(None);
        }
        if a.status != StatusCode::OK {
            return Err(self.fail(what, &a, &jwt, Permission::Read));
        }
        Sandbox::parse(&Self::json(what, &a)?, etag(&a))
            .map(Some)
            .map_err(|m| Error::infrastructure(format!("{what}: {m}")))
    }

    /// Every sandbox of the account, page by page.
    async fn list(&self) -> Result<Vec<Sandbox>> {
        let what = "listing Docker Cloud sandboxes";
        let mut out = Vec::new();
        let mut token = String::new();
        for _ in 0..100 {
            let query = {
                let mut q = url::form_urlencoded::Serializer::new(String::new());
                q.append_pair("pageSize", "100");
                if !token.is_empty() {
                    q.append_pair("pageToken", &token);
                }
                q.finish()
            };
            let path = format!("/v1/sandboxes?{query}");
            let (a, jwt) = self.send(what, Method::GET, &path, None, &[]).await?;
            if a.status != StatusCode::OK {
                return Err(self.fail(what, &a, &jwt, Permission::Read));
            }
            let v = Self::json(what, &a)?;
            for s in v
                .get("sandboxes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                // One the provider cannot read is not one it may delete.
                if let Ok(s) = Sandbox::parse(s, None) {
                    out.push(s);
                }
            }
            token = v
                .get("nextPageToken")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if token.is_empty() {
                return Ok(out);
            }
        }
        Ok(out)
    }

    /// Deletes a sandbox whose ETag is `etag`: `Ok(true)` once Docker took
    /// it (202 or 204) or says it is not found; `Ok(false)` when the ETag
    /// is stale (412: read it again).
    async fn delete(&self, id: &str, etag: &str) -> Result<bool> {
        let what = "deleting a Docker Cloud sandbox";
        let path = format!("/v1/sandboxes/{id}?force=true");
        let (a, jwt) = self
            .send(what, Method::DELETE, &path, None, &[("if-match", etag)])
            .await?;
        match a.status {
            StatusCode::ACCEPTED | StatusCode::NO_CONTENT | StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND if error_code(&a) == Some("notFound".into()) => Ok(true),
            StatusCode::PRECONDITION_FAILED => Ok(false),
            _ => Err(self.fail(what, &a, &jwt, Permission::Delete)),
        }
    }

    /// The network policy in force on a sandbox.
    async fn sandbox_policy(&self, id: &str) -> Result<Policy> {
        self.policy(
            "reading a Docker Cloud sandbox's network policy",
            &format!("/v1/sandboxes/{id}/network-policies"),
        )
        .await
    }

    /// The account's network policy.
    async fn account_policy(&self) -> Result<Policy> {
        self.policy(
            "reading the Docker Cloud account's network policy",
            "/v1/network-policies",
        )
        .await
    }

    async fn allow(&self, _id: &str, _network: &str) -> Result<()> {
        Err(Error::unsupported(
            "a guard rule is set only through the Connect contract's policy API",
        ))
    }

    fn wrong(&self, spec: &Spec<'_>, _lease: &str, s: &Sandbox) -> Vec<String> {
        spec.wrong(s)
    }

    /// The endpoint with a freshly minted endpoint credential (the endpoint
    /// refuses the management bearer).
    async fn endpoint(&self, s: &Sandbox) -> Result<Box<dyn SandboxEndpoint>> {
        let token = self.endpoint_credential(&s.uid, CREDENTIAL_TTL).await?;
        Ok(Box::new(Endpoint::new(
            self.http.clone(),
            &s.endpoint,
            token,
            self.auth.pat_secret(),
        )))
    }
}

impl Api {
    async fn policy(&self, what: &str, path: &str) -> Result<Policy> {
        let (a, jwt) = self.send(what, Method::GET, path, None, &[]).await?;
        if a.status != StatusCode::OK {
            return Err(self.fail(what, &a, &jwt, Permission::PolicyRead));
        }
        Ok(Policy::parse(&Self::json(what, &a)?))
    }

    /// A credential for the sandbox's endpoint (exec and files) that lives
    /// `ttl` (Docker clamps it to 5 minutes).
    async fn endpoint_credential(&self, id: &str, ttl: Duration) -> Result<Secret> {
        let what = "minting a Docker Cloud endpoint credential";
        let body = serde_json::json!({
            "permissions": ["sandboxesExec", "sandboxesFilesRead", "sandboxesFilesWrite"],
            "ttl": format!("{}s", ttl.as_secs().clamp(1, 300)),
        });
        let path = format!("/v1/sandboxes/{id}/endpoint-credentials");
        let (a, jwt) = self
            .send(what, Method::POST, &path, Some(&body), &[])
            .await?;
        if a.status != StatusCode::OK && a.status != StatusCode::CREATED {
            return Err(self.fail(what, &a, &jwt, Permission::Create));
        }
        let v = Self::json(what, &a)?;
        v.get("token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty() && t.bytes().all(|c| c.is_ascii_graphic()))
            .map(|t| Secret::new(t.to_owned()))
            .ok_or_else(|| Error::infrastructure(format!("{what}: the answer carries no token")))
    }
}

/// The answer's ETag header, if any.
fn etag(a: &Answer) -> Option<String> {
    a.headers
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The `code` of Docker's error body, if it has one.
fn error_code(a: &Answer) -> Option<String> {
    serde_json::from_slice::<Value>(&a.body)
        .ok()?
        .get("code")?
        .as_str()
        .map(str::to_owned)
}
