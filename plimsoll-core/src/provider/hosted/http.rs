//! HTTP to a hosted provider's services, bounded: every call has a timeout, every body read has a
//! byte limit, redirects are never followed (a 3xx is an error like any
//! other non-success), and what a vendor's error says reaches an error
//! message only cut to [`ERROR_EXCERPT`] bytes, one line, with every
//! credential of the run scrubbed out.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};

use crate::error::{Error, Result};
use crate::grant::broker::upstream_client;

/// The most of a vendor's error body an error message carries.
pub const ERROR_EXCERPT: usize = 512;

/// A shared client (no proxies, no redirects, TLS with the Mozilla roots).
#[derive(Clone)]
pub(crate) struct Http {
    client: crate::grant::Upstream,
}

/// A whole answer.
pub(crate) struct Answer {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: hyper::HeaderMap,
    /// Its body (at most the limit asked for).
    pub body: Vec<u8>,
}

impl Http {
    pub(crate) fn new() -> Http {
        Http {
            client: upstream_client(),
        }
    }

    /// Sends `req` and waits for its head within `timeout`.
    pub(crate) async fn open(
        &self,
        what: &str,
        req: Request<Full<Bytes>>,
        timeout: Duration,
    ) -> Result<Response<Incoming>> {
        match tokio::time::timeout(timeout, self.client.request(req)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Error::infrastructure(format!("{what}: {}", describe(&e)))),
            Err(_) => Err(Error::infrastructure(format!(
                "{what}: no answer within {} s",
                timeout.as_secs()
            ))),
        }
    }

    /// Sends `req` and reads the whole answer (at most `limit` bytes) within
    /// `timeout`.
    pub(crate) async fn call(
        &self,
        what: &str,
        req: Request<Full<Bytes>>,
        timeout: Duration,
        limit: usize,
    ) -> Result<Answer> {
        let read = async {
            let resp = self.open(what, req, timeout).await?;
            let (head, body) = resp.into_parts();
            let body = read_limited(what, body, limit).await?;
            Ok(Answer {
                status: head.status,
                headers: head.headers,
                body,
            })
        };
        tokio::time::timeout(timeout, read)
            .await
            .unwrap_or_else(|_| {
                Err(Error::infrastructure(format!(
                    "{what}: the answer did not arrive within {} s",
                    timeout.as_secs()
                )))
            })
    }
}

/// Reads a body of at most `limit` bytes; more is an infrastructure error.
pub(crate) async fn read_limited(what: &str, mut body: Incoming, limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| Error::infrastructure(format!("{what}: {}", describe(&e))))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(Error::infrastructure(format!(
                    "{what}: the answer exceeds its {limit}-byte limit"
                )));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// An error's text with its sources, one line.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// A vendor's non-success answer as an infrastructure error: `vendor`, its status and
/// the first [`ERROR_EXCERPT`] bytes of its body, on one line, with each of
/// `secrets` replaced by `[redacted]`.
pub(crate) fn vendor_error(vendor: &str, what: &str, answer: &Answer, secrets: &[&str]) -> Error {
    Error::infrastructure(format!(
        "{what}: {vendor} answered {}: {}",
        answer.status.as_u16(),
        excerpt(&answer.body, secrets)
    ))
}

/// The first [`ERROR_EXCERPT`] bytes of `body`, printable, one line, with
/// every guard credential and each secret scrubbed, as written and as JSON
/// writers escape it ([`written_forms`]), before the cut, so no prefix of one
/// survives it.
pub(crate) fn excerpt(body: &[u8], secrets: &[&str]) -> String {
    let body = crate::provider::hosted::guard_url::without_guard_credentials(body);
    let mut s = String::from_utf8_lossy(&body).into_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        for form in written_forms(secret) {
            s = s.replace(&form, "[redacted]");
        }
    }
    let mut s: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.len() > ERROR_EXCERPT {
        let mut end = ERROR_EXCERPT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s.trim().to_owned()
}

/// The ways a JSON writer may put `secret` in a string: as it is; escaped
/// as serde_json does (`"`, `\\` and control characters); as Go's
/// `encoding/json` does (and `<`, `>`, `&`, U+2028 and U+2029 as `\\u…`); and
/// each of those with `/` as `\\/`.
pub(crate) fn written_forms(secret: &str) -> Vec<String> {
    let quoted = serde_json::to_string(secret).unwrap_or_default();
    let serde = quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    let go = serde
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");
    let mut forms: Vec<String> = Vec::new();
    for f in [secret.to_owned(), serde, go] {
        for f in [f.replace('/', "\\/"), f] {
            if !f.is_empty() && !forms.contains(&f) {
                forms.push(f);
            }
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_scrubbed_as_json_writers_escape_it() {
        let token = r#"tok/en"with\slash<&>"#;
        for written in [
            token.to_owned(),
            serde_json::to_string(token).unwrap(),
            r#""tok\/en\"with\\slash\u003c\u0026\u003e""#.to_owned(),
        ] {
            let s = excerpt(format!("denied: {written}!").as_bytes(), &[token]);
            assert!(!s.contains("tok"), "{written} -> {s}");
            assert!(s.contains("[redacted]"), "{s}");
        }
        // A guard credential is scrubbed whatever the caller passes.
        let crg = format!("crg_{}", "a1".repeat(32));
        let s = excerpt(
            format!("exec failed: curl -H 'Bearer {crg}'").as_bytes(),
            &[],
        );
        assert!(!s.contains(&crg[4..]), "{s}");
    }

    #[test]
    fn an_excerpt_is_cut_one_line_and_scrubbed() {
        let key = "e2b_0123456789abcdef";
        let body = format!(
            "{{\"message\":\"bad key {key}\nagain {key}\"}}{}",
            "x".repeat(2000)
        );
        let s = excerpt(body.as_bytes(), &[key]);
        assert!(!s.contains(key) && !s.contains("e2b_0123"), "{s}");
        assert!(s.contains("bad key [redacted] again [redacted]"), "{s}");
        assert!(!s.contains('\n'));
        assert!(s.len() <= ERROR_EXCERPT + '…'.len_utf8(), "{}", s.len());
        assert_eq!(
            excerpt("é".repeat(400).as_bytes(), &[]).chars().count(),
            257
        );
    }
}
