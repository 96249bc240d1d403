//! The bearer for Docker's management API (notes: `docs/research/hosted-providers.md`
//! §2.1): the Docker ID and its personal access token exchanged at the auth
//! URL for a short-lived JWT, cached, and exchanged again 60 s before the
//! `exp` it declares. The JWT is read unverified, only to schedule that
//! refresh; the API itself is what checks it. Neither the PAT nor a JWT
//! reaches a log or an error: every error text is scrubbed of both.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use url::Url;

use crate::error::{Error, Result};
use crate::provider::hosted::http::{Http, excerpt};
use crate::secret::Secret;

/// How long before its `exp` a JWT is exchanged again.
const REFRESH_EARLY: Duration = Duration::from_secs(60);
/// A JWT's life when it declares none.
const ASSUMED_LIFE: Duration = Duration::from_secs(300);
/// How long the exchange may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Exchanges the PAT and keeps the JWT until it is nearly due.
pub(crate) struct Auth {
    http: Http,
    url: Url,
    username: String,
    pat: Arc<Secret>,
    cached: Mutex<Option<(Arc<Secret>, SystemTime)>>,
}

impl Auth {
    pub(crate) fn new(http: Http, url: Url, username: String, pat: Arc<Secret>) -> Auth {
        Auth {
            http,
            url,
            username,
            pat,
            cached: Mutex::new(None),
        }
    }

    /// The PAT, to scrub from any text.
    pub(crate) fn pat(&self) -> &str {
        self.pat.expose()
    }

    /// The PAT, shared (an endpoint scrubs it from its errors).
    pub(crate) fn pat_secret(&self) -> Arc<Secret> {
        self.pat.clone()
    }

    /// A bearer good for a while yet.
    pub(crate) async fn token(&self) -> Result<Arc<Secret>> {
        let mut cached = self.cached.lock().await;
        if let Some((jwt, refresh_at)) = &*cached
            && SystemTime::now() < *refresh_at
        {
            return Ok(jwt.clone());
        }
        let jwt = Arc::new(self.exchange().await?);
        let refresh_at = refresh_at(jwt.expose(), SystemTime::now());
        *cached = Some((jwt.clone(), refresh_at));
        Ok(jwt)
    }

    /// Forgets the cached bearer (the API refused it).
    pub(crate) async fn forget(&self) {
        *self.cached.lock().await = None;
    }

    async fn exchange(&self) -> Result<Secret> {
        let what = "exchanging the Docker access token";
        let body = json!({"identifier": self.username, "secret": self.pat.expose()});
        let req = Request::builder()
            .method(Method::POST)
            .uri(self.url.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header(
                "user-agent",
                concat!("plimsoll/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        let a = self.http.call(what, req, CALL_TIMEOUT, 64 << 10).await?;
        let secrets = [self.pat.expose()];
        if a.status != StatusCode::OK {
            let hint = match a.status {
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                    " (check DOCKER_SBX_USERNAME and DOCKER_SBX_TOKEN: the token must be a \
                     personal access token of that Docker ID with the sandbox:use scope)"
                }
                _ => "",
            };
            return Err(Error::infrastructure(format!(
                "{what}: Docker answered {}{hint}: {}",
                a.status.as_u16(),
                excerpt(&a.body, &secrets)
            )));
        }
        let v: Value = serde_json::from_slice(&a.body)
            .map_err(|_| Error::infrastructure(format!("{what}: the answer is not JSON")))?;
        let jwt = v
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty() && t.bytes().all(|c| c.is_ascii_graphic()))
            .ok_or_else(|| {
                Error::infrastructure(format!("{what}: the answer carries no access_token"))
            })?;
        Ok(Secret::new(jwt.to_owned()))
    }
}

/// When to exchange again: 60 s before the JWT's unverified `exp`, or after
/// [`ASSUMED_LIFE`] less that when it declares none.
pub(crate) fn refresh_at(jwt: &str, now: SystemTime) -> SystemTime {
    let exp = jwt
        .split('.')
        .nth(1)
        .and_then(|p| B64URL.decode(p.trim_end_matches('=')).ok())
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.get("exp").and_then(Value::as_u64))
        .map(|s| UNIX_EPOCH + Duration::from_secs(s));
    let exp = exp.unwrap_or(now + ASSUMED_LIFE);
    exp.checked_sub(REFRESH_EARLY).unwrap_or(UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(payload: &str) -> String {
        format!("eyJhbGciOiJIUzI1NiJ9.{}.c2ln", B64URL.encode(payload))
    }

    #[test]
    fn the_refresh_is_60_s_before_the_declared_exp() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(
            refresh_at(&jwt(r#"{"exp":1900,"sub":"x"}"#), now),
            UNIX_EPOCH + Duration::from_secs(1_840)
        );
        // None declared: the assumed life.
        assert_eq!(
            refresh_at(&jwt(r#"{"sub":"x"}"#), now),
            now + ASSUMED_LIFE - REFRESH_EARLY
        );
        assert_eq!(
            refresh_at("not a jwt", now),
            now + ASSUMED_LIFE - REFRESH_EARLY
        );
        // Already due.
        assert!(refresh_at(&jwt(r#"{"exp":10}"#), now) < now);
    }
}
