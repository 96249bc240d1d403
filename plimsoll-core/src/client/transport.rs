//! One Connect unary call with the JSON codec over HTTP/1.1: no proxies, no
//! redirects, a bound on the whole exchange, a 32 MiB answer cap, and the
//! answer bound to the request by `Plimsoll-Request-Id`.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;

use crate::error::{Error, ErrorCode, Refusal, Result};
use crate::secret::Secret;
use crate::wire::connect::ConnectError;

/// The largest answer read, bytes.
pub const MAX_RESPONSE_BYTES: usize = 32 << 20;

/// Where and how to reach one plimsolld.
pub(crate) struct Transport {
    pub base: String,
    pub token: Option<Secret>,
    pub timeout: Duration,
    pub client: crate::grant::Upstream,
}

fn transport_error(message: &str) -> Error {
    Error::new(ErrorCode::Transport, message.to_owned())
}

/// Checks a base URL the way the published client does: http or https, no
/// userinfo, query or fragment, ASCII; cleartext only to loopback (decided by
/// [`crate::loopback`], on the parsed host) unless allowed. Returns the
/// normalised URL every call is sent to, so the host decided on is the host
/// connected to (`http://0x7f.1` becomes `http://127.0.0.1`).
pub(crate) fn base_url(raw: &str, insecure_http: bool) -> Result<String> {
    let bad = |m: &str| Err(Error::invalid(format!("base URL: {m}")));
    if !raw.is_ascii() {
        return bad("must be ASCII");
    }
    if !(raw.starts_with("http://") || raw.starts_with("https://")) {
        return bad("must start with http:// or https://");
    }
    if raw.contains(['?', '#', '@']) {
        return bad("must not carry userinfo, a query or a fragment");
    }
    let url = match crate::loopback::parse(raw) {
        Ok(u) => u,
        Err(e) => return bad(&e),
    };
    if url.host().is_none() {
        return bad("has no host");
    }
    if url.scheme() == "http" && !crate::loopback::is_loopback_url(&url) && !insecure_http {
        return bad(
            "cleartext http is allowed only to a loopback host (pass insecure_http for development)",
        );
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

impl Transport {
    /// Sends one call; returns the 200 body, or the typed error the answer describes.
    pub async fn call(&self, method: &str, body: Vec<u8>) -> Result<Bytes> {
        let id = hex::encode(rand::random::<[u8; 16]>());
        let mut req =
            hyper::Request::post(format!("{}/plimsoll.v1.SandboxService/{method}", self.base))
                .header("content-type", "application/json")
                .header("connect-protocol-version", "1")
                .header("accept-encoding", "identity")
                .header(
                    "user-agent",
                    concat!("plimsoll-rust/", env!("CARGO_PKG_VERSION")),
                )
                .header("plimsoll-request-id", &id);
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {}", t.expose()));
        }
        let req = req.body(Full::new(Bytes::from(body))).map_err(|_| {
            Error::invalid("the request could not be built").marked(Some(Refusal::Request))
        })?;
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|_| transport_error("the daemon could not be reached"))?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let body = Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|_| transport_error("the answer was unreadable or exceeds 32 MiB"))?
                .to_bytes();
            Ok::<_, Error>((status, headers, body))
        };
        let (status, headers, body) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| {
                transport_error("the daemon did not answer within the request timeout")
            })??;
        let ids: Vec<&[u8]> = headers
            .get_all("plimsoll-request-id")
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        let bound = ids == [id.as_bytes()];
        if status == 200 {
            if !bound {
                return Err(Error::new(
                    ErrorCode::Transport,
                    "the answer was not bound to this request: the call may have run",
                ));
            }
            let media = headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if !media
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
            {
                return Err(transport_error("the answer is not application/json"));
            }
            return Ok(body);
        }
        let mark = headers
            .get("plimsoll-not-dispatched")
            .and_then(|v| v.to_str().ok());
        Err(ConnectError::from_answer(status, &body, bound, mark).into_error())
    }
}

#[cfg(test)]
mod tests {
    use super::base_url;

    #[test]
    fn base_urls() {
        assert_eq!(
            base_url("http://127.0.0.1:8746/", false).unwrap(),
            "http://127.0.0.1:8746"
        );
        assert_eq!(
            base_url("http://localhost:1/base/", false).unwrap(),
            "http://localhost:1/base"
        );
        assert!(base_url("http://example.com", false).is_err());
        assert!(base_url("http://example.com", true).is_ok());
        assert!(base_url("https://example.com", false).is_ok());
        assert!(base_url("https://u:p@example.com", false).is_err());
        assert!(base_url("https://example.com/?q", false).is_err());
        assert!(base_url("ftp://example.com", false).is_err());
    }

    #[test]
    fn cleartext_only_to_a_real_loopback_host() {
        for (raw, normalised) in [
            ("http://LOCALHOST:9", "http://localhost:9"),
            ("http://[::1]:9/", "http://[::1]:9"),
            ("http://[::ffff:127.0.0.1]:9", "http://[::ffff:7f00:1]:9"),
            ("http://0x7f.1:9", "http://127.0.0.1:9"),
            ("http://127.1:9", "http://127.0.0.1:9"),
        ] {
            assert_eq!(base_url(raw, false).unwrap(), normalised, "{raw}");
        }
        for raw in [
            "http://127.attacker.example",
            "http://127.x.example:8746",
            "http://127.0.0.1.nip.io",
            "http://localhost.",
            "http://foo.localhost",
            "http://0.0.0.0:8746",
            "http://[::ffff:10.0.0.1]",
        ] {
            let e = base_url(raw, false).unwrap_err();
            assert!(e.message().contains("loopback"), "{raw}: {e}");
            // The same host is fine over TLS, or when cleartext is allowed.
            assert!(
                base_url(&raw.replacen("http", "https", 1), false).is_ok(),
                "{raw}"
            );
            assert!(base_url(raw, true).is_ok(), "{raw}");
        }
        assert!(base_url("http://", false).is_err());
        assert!(base_url("http://127.0.0.1:99999", false).is_err());
    }
}
