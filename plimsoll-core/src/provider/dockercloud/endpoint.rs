//! One sandbox's endpoint (`core.endpoint.uri`; notes §2.3), with the
//! scoped endpoint credential as its bearer: `POST /v1/processes/exec`
//! (run to completion; base64 streams), multipart `/v1/files/upload` and
//! `multipart/mixed` `/v1/files/download`. The endpoint refuses the
//! management token, so the credential is the only one it sees.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};

use async_trait::async_trait;

use super::contract::{Exec, SandboxEndpoint, all_written};
use super::multipart::{self, Downloaded};
use crate::error::{Error, Result};
use crate::provider::hosted::http::{Answer, Http, read_limited, vendor_error};
use crate::secret::Secret;

/// How long a file call may take.
const FILE_TIMEOUT: Duration = Duration::from_secs(60);
/// The most an exec answer may carry (two capped streams, base64, and JSON).
const EXEC_LIMIT: usize = 1 << 20;

/// A sandbox's endpoint.
pub(crate) struct Endpoint {
    http: Http,
    base: String,
    token: Arc<Secret>,
    pat: Arc<Secret>,
}

impl Endpoint {
    /// The endpoint at `uri` with `token` (`pat`: scrubbed from errors too).
    pub(crate) fn new(http: Http, uri: &str, token: Secret, pat: Arc<Secret>) -> Endpoint {
        Endpoint {
            http,
            base: uri.trim_end_matches('/').to_owned(),
            token: Arc::new(token),
            pat,
        }
    }

    fn request(&self, method: Method, path: &str) -> hyper::http::request::Builder {
        Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {}", self.token.expose()))
            .header(
                "user-agent",
                concat!("plimsoll/", env!("CARGO_PKG_VERSION")),
            )
    }

    fn fail(&self, what: &str, a: &Answer) -> Error {
        vendor_error(
            "the Docker sandbox endpoint",
            what,
            a,
            &[self.token.expose(), self.pat.expose()],
        )
    }
}

#[async_trait]
impl SandboxEndpoint for Endpoint {
    /// `POST /v1/processes/exec`: base64 streams; `incomplete` is an error
    /// (the guest bounds its own output).
    async fn exec(&self, cmd: &[String], user: &str, dir: &str, timeout: Duration) -> Result<Exec> {
        let what = "running a command in the Docker Cloud sandbox";
        let body = json!({"cmd": cmd, "workingDir": dir, "user": user});
        let req = self
            .request(Method::POST, "/v1/processes/exec")
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        let a = self.http.call(what, req, timeout, EXEC_LIMIT).await?;
        if a.status != StatusCode::OK {
            return Err(self.fail(what, &a));
        }
        let v: Value = serde_json::from_slice(&a.body)
            .map_err(|_| Error::infrastructure(format!("{what}: the answer is not JSON")))?;
        if v.get("incomplete").and_then(Value::as_bool) == Some(true) {
            return Err(Error::infrastructure(format!(
                "{what}: Docker cut the output though the guest bounds it"
            )));
        }
        let stream = |k: &str| -> Result<Vec<u8>> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::String(s)) => B64
                    .decode(s)
                    .map_err(|_| Error::infrastructure(format!("{what}: {k} is not base64"))),
                Some(_) => Err(Error::infrastructure(format!("{what}: {k} is not base64"))),
            }
        };
        let exit_code = match v.get("exitCode") {
            None => 0,
            Some(c) => c
                .as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .ok_or_else(|| {
                    Error::infrastructure(format!("{what}: exitCode is not an int32"))
                })?,
        };
        Ok(Exec {
            exit_code,
            stdout: stream("stdout")?,
            stderr: stream("stderr")?,
        })
    }

    /// One multipart upload; `Ok(Err(why))` on 409 (a symlink escape, a
    /// non-regular target) or 400.
    async fn upload(&self, files: &[(String, &[u8])]) -> Result<Result<(), String>> {
        let what = "uploading files into the Docker Cloud sandbox";
        let boundary = format!("plimsoll-{}", hex::encode(rand::random::<[u8; 12]>()));
        let req = self
            .request(Method::POST, "/v1/files/upload")
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .header("accept", "application/json")
            .body(Full::new(Bytes::from(multipart::upload(files, &boundary))))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        let a = self.http.call(what, req, FILE_TIMEOUT, 64 << 10).await?;
        match a.status {
            StatusCode::OK | StatusCode::CREATED => {}
            StatusCode::CONFLICT | StatusCode::BAD_REQUEST => {
                return Ok(Err(self.fail(what, &a).message().to_owned()));
            }
            _ => return Err(self.fail(what, &a)),
        }
        let written = serde_json::from_slice::<Value>(&a.body).ok().and_then(|v| {
            match v.get("filesWritten") {
                Some(Value::String(s)) => s.parse::<usize>().ok(),
                Some(n) => n.as_u64().map(|n| n as usize),
                None => None,
            }
        });
        all_written(what, written, files.len()).map(Ok)
    }

    /// One `multipart/mixed` download.
    async fn download(
        &self,
        paths: &[String],
        limit: usize,
    ) -> Result<Option<Vec<(String, Downloaded)>>> {
        let what = "downloading files from the Docker Cloud sandbox";
        let query = {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            for p in paths {
                q.append_pair("paths", p);
            }
            q.finish()
        };
        let req = self
            .request(Method::GET, &format!("/v1/files/download?{query}"))
            .header("accept", "multipart/mixed")
            .body(Full::new(Bytes::new()))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        let resp = self.http.open(what, req, FILE_TIMEOUT).await?;
        let (head, body) = resp.into_parts();
        if head.status != StatusCode::OK {
            let body = read_limited(what, body, 64 << 10).await.unwrap_or_default();
            let a = Answer {
                status: head.status,
                headers: head.headers,
                body,
            };
            return Err(self.fail(what, &a));
        }
        let body = match tokio::time::timeout(FILE_TIMEOUT, read_limited(what, body, limit)).await {
            Ok(Ok(b)) => b,
            Ok(Err(_)) => return Ok(None),
            Err(_) => {
                return Err(Error::infrastructure(format!(
                    "{what}: no whole answer within {} s",
                    FILE_TIMEOUT.as_secs()
                )));
            }
        };
        let boundary = head
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .and_then(multipart::boundary)
            .ok_or_else(|| {
                Error::infrastructure(format!("{what}: the answer is not multipart/mixed"))
            })?;
        multipart::download(&body, &boundary)
            .map(Some)
            .map_err(|m| Error::infrastructure(format!("{what}: {m}")))
    }
}
