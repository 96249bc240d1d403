//! envd, the agent in each E2B VM (notes: `docs/research/hosted-providers.md`
//! §1.2): files in and out over its `/files` HTTP API, and a process run
//! over Connect's `process.Process/Start` server stream, with the VM's
//! access token on every call.
//!
//! A run is bounded three ways: `Connect-Timeout-Ms` makes envd kill the
//! process at the deadline (and this side stops waiting shortly after, and
//! kills it itself), each output stream keeps its first `cap` bytes, and the
//! whole stream may carry [`TRANSFER_BUDGET`] bytes: past that the process is
//! killed and the run ends as exit 153 with both streams flagged truncated.
//! A stream that breaks envd's protocol (see [`super::stream`] and
//! [`super::process`]) is an infrastructure error, never the guest's output.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::process::{self, Event, Events, StartRequest};
use super::settings::EnvdAddress;
use super::stream::{Frame, StreamError, StreamReader};
use crate::error::{Error, Result};
use crate::provider::hosted::http::{Answer, Http, excerpt, read_limited};
use crate::result::CappedBuffer;
use crate::secret::Secret;

/// envd's port.
pub const ENVD_PORT: u16 = 49983;
/// The most one process's stream may carry, framing and base64 included.
pub const TRANSFER_BUDGET: usize = 16 << 20;
/// The exit a run flooding past [`TRANSFER_BUDGET`] ends with (128 + SIGXFSZ).
pub const FLOODED_EXIT: i32 = 153;
/// How long past the deadline envd's own kill is waited for.
const DEADLINE_GRACE: Duration = Duration::from_secs(2);
/// How long a file call may take.
const FILE_TIMEOUT: Duration = Duration::from_secs(30);

/// How a process run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// It exited with this code (128 + n for a signal n).
    Exit(i32),
    /// The deadline passed first.
    Deadline,
    /// It sent more than [`TRANSFER_BUDGET`]; it was killed.
    Flooded,
    /// The run was cancelled; it was killed.
    Cancelled,
}

/// What a process run gave back.
#[derive(Debug)]
pub(crate) struct Ran {
    pub stdout: CappedBuffer,
    pub stderr: CappedBuffer,
    pub finish: Finish,
    pub elapsed: Duration,
}

/// One VM's envd.
#[derive(Clone)]
pub(crate) struct Envd {
    http: Http,
    base: String,
    /// `Some(id)`: address the VM by header at a shared base.
    by_header: Option<String>,
    token: Arc<Secret>,
}

impl Envd {
    /// envd of VM `id`, whose create named `domain` (or the configured one).
    pub(crate) fn new(
        http: Http,
        address: &EnvdAddress,
        id: &str,
        domain: Option<&str>,
        token: Arc<Secret>,
    ) -> Envd {
        let (base, by_header) = match address {
            EnvdAddress::Domain(d) => (
                format!("https://{ENVD_PORT}-{id}.{}", domain.unwrap_or(d)),
                None,
            ),
            EnvdAddress::Proxy(u) => (
                u.as_str().trim_end_matches('/').to_owned(),
                Some(id.to_owned()),
            ),
        };
        Envd {
            http,
            base,
            by_header,
            token,
        }
    }

    fn request(
        &self,
        method: Method,
        path_and_query: &str,
        user: &str,
    ) -> hyper::http::request::Builder {
        self.without_token(method, path_and_query)
            .header("x-access-token", self.token.expose())
            .header(
                "authorization",
                format!("Basic {}", B64.encode(format!("{user}:"))),
            )
    }

    /// A request to this VM's envd that carries no access token (the
    /// startup proof shows envd refuses it).
    pub(crate) fn without_token(
        &self,
        method: Method,
        path_and_query: &str,
    ) -> hyper::http::request::Builder {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{path_and_query}", self.base));
        if let Some(id) = &self.by_header {
            b = b
                .header("e2b-sandbox-id", id)
                .header("e2b-sandbox-port", ENVD_PORT.to_string());
        }
        b
    }

    fn fail(&self, what: &str, a: &Answer) -> Error {
        let hint = match a.status {
            StatusCode::UNAUTHORIZED => " (envd refused the access token)",
            StatusCode::BAD_GATEWAY => " (the sandbox is gone)",
            _ => "",
        };
        Error::infrastructure(format!(
            "{what}: envd answered {}{hint}: {}",
            a.status.as_u16(),
            excerpt(&a.body, &[self.token.expose()])
        ))
    }

    /// A non-success answer as an error, its body read (a little) for the
    /// message.
    async fn refused(&self, what: &str, resp: hyper::Response<hyper::body::Incoming>) -> Error {
        let (head, body) = resp.into_parts();
        let body = read_limited(what, body, 64 << 10).await.unwrap_or_default();
        self.fail(
            what,
            &Answer {
                status: head.status,
                headers: head.headers,
                body,
            },
        )
    }

    /// Writes files (absolute paths in the VM) as `user`, in one request;
    /// envd makes the parent directories. `Ok(Err(why))`: envd said they
    /// cannot go there (a path that is a directory, no disk left).
    pub(crate) async fn write(&self, user: &str, files: &[(String, &[u8])]) -> Result<Written> {
        let what = "writing files into the E2B sandbox";
        let (multipart, single): (Vec<_>, Vec<_>) =
            files.iter().partition(|(p, _)| !p.contains('"'));
        if !multipart.is_empty() {
            let boundary = format!("plimsoll-{}", hex::encode(rand::random::<[u8; 12]>()));
            let mut body = Vec::new();
            for (path, content) in &multipart {
                body.extend_from_slice(
                    format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
                         filename=\"{path}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(content);
                body.extend_from_slice(b"\r\n");
            }
            body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            let req = self
                .request(Method::POST, "/files", user)
                .header(
                    "content-type",
                    format!("multipart/form-data; boundary={boundary}"),
                )
                .body(Full::new(Bytes::from(body)))
                .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
            if let Err(why) = self.expect_ok(what, req).await? {
                return Ok(Err(why));
            }
        }
        // A path with a quote cannot be a multipart file name: one upload each.
        for (path, content) in single {
            let q = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("path", path)
                .finish();
            let req = self
                .request(Method::POST, &format!("/files?{q}"), user)
                .header("content-type", "application/octet-stream")
                .body(Full::new(Bytes::copy_from_slice(content)))
                .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
            if let Err(why) = self.expect_ok(what, req).await? {
                return Ok(Err(why));
            }
        }
        Ok(Ok(()))
    }

    async fn expect_ok(&self, what: &str, req: Request<Full<Bytes>>) -> Result<Written> {
        let a = self.http.call(what, req, FILE_TIMEOUT, 1 << 20).await?;
        match a.status {
            StatusCode::OK => Ok(Ok(())),
            StatusCode::BAD_REQUEST | StatusCode::INSUFFICIENT_STORAGE => Ok(Err(format!(
                "envd answered {}: {}",
                a.status.as_u16(),
                excerpt(&a.body, &[self.token.expose()])
            ))),
            _ => Err(self.fail(what, &a)),
        }
    }

    /// Reads a file (absolute path) as `user`, at most `limit` bytes.
    pub(crate) async fn read(&self, user: &str, path: &str, limit: usize) -> Result<ReadFile> {
        let what = "reading a file from the E2B sandbox";
        let q = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("path", path)
            .finish();
        let req = self
            .request(Method::GET, &format!("/files?{q}"), user)
            .body(Full::new(Bytes::new()))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        let resp = self.http.open(what, req, FILE_TIMEOUT).await?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST {
            return Ok(ReadFile::Missing);
        }
        if status != StatusCode::OK {
            return Err(self.refused(what, resp).await);
        }
        let read = read_limited(what, resp.into_body(), limit);
        match tokio::time::timeout(FILE_TIMEOUT, read).await {
            Ok(Ok(bytes)) => Ok(ReadFile::Bytes(bytes)),
            Ok(Err(_)) => Ok(ReadFile::TooLarge),
            Err(_) => Err(Error::infrastructure(format!(
                "{what}: no whole answer within {} s",
                FILE_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Sends SIGKILL to `pid` (best effort: the VM is killed after anyway).
    pub(crate) async fn kill(&self, pid: u32) {
        let body = json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}).to_string();
        let Ok(req) = self
            .request(Method::POST, "/process.Process/SendSignal", "root")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
        else {
            return;
        };
        if let Err(e) = self
            .http
            .call(
                "signalling a process",
                req,
                Duration::from_secs(5),
                64 << 10,
            )
            .await
        {
            tracing::debug!(error = %e, pid, "SIGKILL through envd not sent; the VM's kill ends it");
        }
    }

    /// Opens `process.Process/Start` for `start` as `user`: envd kills the
    /// process at `limit` when given; the answer's stream, once envd accepted.
    async fn start(
        &self,
        what: &str,
        start: &StartRequest,
        user: &str,
        limit: Option<Duration>,
    ) -> Result<hyper::body::Incoming> {
        let payload = start.to_json().to_string();
        let mut framed = Vec::with_capacity(5 + payload.len());
        framed.push(0);
        framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        framed.extend_from_slice(payload.as_bytes());
        let mut req = self
            .request(Method::POST, "/process.Process/Start", user)
            .header("content-type", "application/connect+json")
            .header("connect-protocol-version", "1")
            .header("keepalive-ping-interval", "30");
        if let Some(l) = limit {
            req = req.header("connect-timeout-ms", l.as_millis().to_string());
        }
        let req = req
            .body(Full::new(Bytes::from(framed)))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        // Opening waits for the answer's head; the stream itself is unbounded.
        let open_budget = limit.unwrap_or(FILE_TIMEOUT) + DEADLINE_GRACE;
        let resp = self.http.open(what, req, open_budget).await?;
        let status = resp.status();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if status != StatusCode::OK || content_type != "application/connect+json" {
            return Err(self.refused(what, resp).await);
        }
        Ok(resp.into_body())
    }

    /// Starts `start` (with `stdin: true`) as `user` with no time limit and
    /// returns once envd has said its pid: a held process, fed through
    /// [`Envd::send_input`], killed when dropped.
    pub(crate) async fn hold(&self, start: &StartRequest, user: &str) -> Result<Held> {
        let what = "starting a kept process in the E2B sandbox";
        let body = self.start(what, start, user, None).await?;
        let mut held = Held {
            envd: self.clone(),
            body,
            // A kept process answers many calls: no total budget (envd
            // frames its output in chunks of at most 32 KiB).
            reader: StreamReader::new(usize::MAX),
            events: Events::default(),
            pending: std::collections::VecDeque::new(),
        };
        let until = Instant::now() + FILE_TIMEOUT;
        while held.events.pid().is_none() {
            match tokio::time::timeout_at(until, held.next()).await {
                Ok(Some(e)) => held.pending.push_back(e),
                _ => {
                    return Err(Error::infrastructure(format!("{what}: envd said no pid")));
                }
            }
        }
        Ok(held)
    }

    /// Writes `bytes` to the stdin of the held process `pid`.
    pub(crate) async fn send_input(&self, pid: u32, bytes: &[u8]) -> Result<()> {
        let what = "writing to a kept process in the E2B sandbox";
        let body = json!({"process": {"pid": pid}, "input": {"stdin": B64.encode(bytes)}});
        let req = self
            .request(Method::POST, "/process.Process/SendInput", "root")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        let a = self.http.call(what, req, FILE_TIMEOUT, 64 << 10).await?;
        if a.status != StatusCode::OK {
            return Err(self.fail(what, &a));
        }
        Ok(())
    }

    /// Runs `start` as `user` until it ends, the deadline, a flood or a cancel.
    pub(crate) async fn run(
        &self,
        start: &StartRequest,
        user: &str,
        deadline: Instant,
        cap: usize,
        cancel: &CancellationToken,
    ) -> Result<Ran> {
        let what = "running a process in the E2B sandbox";
        let began = Instant::now();
        let left = deadline
            .saturating_duration_since(began)
            .max(Duration::from_millis(1));
        let mut body = tokio::select! {
            r = self.start(what, start, user, Some(left)) => r?,
            () = cancel.cancelled() => {
                return Ok(Ran {
                    stdout: CappedBuffer::new(cap),
                    stderr: CappedBuffer::new(cap),
                    finish: Finish::Cancelled,
                    elapsed: began.elapsed(),
                });
            }
        };
        let mut reader = StreamReader::new(TRANSFER_BUDGET);
        let mut events = Events::default();
        let mut stdout = CappedBuffer::new(cap);
        let mut stderr = CappedBuffer::new(cap);
        let broken =
            |m: String| Error::infrastructure(format!("{what}: envd broke its protocol: {m}"));
        let give_up = tokio::time::sleep_until(deadline + DEADLINE_GRACE);
        tokio::pin!(give_up);
        let finish = 'read: loop {
            let chunk = tokio::select! {
                c = body.frame() => c,
                () = &mut give_up => break 'read Finish::Deadline,
                () = cancel.cancelled() => break 'read Finish::Cancelled,
            };
            let data = match chunk {
                None => {
                    reader.finish().map_err(|e| broken(e.to_string()))?;
                    return Err(broken("the stream ended without an end event".into()));
                }
                Some(Err(e)) => {
                    return Err(Error::infrastructure(format!(
                        "{what}: the stream broke: {e}"
                    )));
                }
                Some(Ok(f)) => match f.into_data() {
                    Ok(d) => d,
                    Err(_) => continue,
                },
            };
            match reader.push(&data) {
                Ok(()) => {}
                Err(StreamError::OverBudget(_)) => break 'read Finish::Flooded,
                Err(e) => return Err(broken(e.to_string())),
            }
            while let Some(frame) = reader.next_frame().map_err(|e| broken(e.to_string()))? {
                let message = match frame {
                    Frame::Message(m) => m,
                    Frame::End(Ok(())) => {
                        return Err(broken("the stream ended without an end event".into()));
                    }
                    Frame::End(Err(e)) if e.code == "deadline_exceeded" => {
                        break 'read Finish::Deadline;
                    }
                    Frame::End(Err(e)) => {
                        return Err(Error::infrastructure(format!(
                            "{what}: envd failed the call ({}): {}",
                            e.code,
                            excerpt(e.message.as_bytes(), &[self.token.expose()])
                        )));
                    }
                };
                let event = process::parse(&message).map_err(broken)?;
                events.accept(&event).map_err(broken)?;
                match event {
                    Event::Stdout(b) => stdout.push(&b),
                    Event::Stderr(b) => stderr.push(&b),
                    Event::Start(_) | Event::Keepalive => {}
                    Event::End(end) => {
                        // The end frame must follow, and nothing after it.
                        drain_end(&mut body, &mut reader, deadline + DEADLINE_GRACE)
                            .await
                            .map_err(broken)?;
                        let finish = if end.exited {
                            Finish::Exit(end.exit_code)
                        } else if Instant::now() + Duration::from_millis(50) >= deadline {
                            // envd's own kill at the Connect deadline.
                            Finish::Deadline
                        } else {
                            Finish::Exit(signal_exit(&end.status, end.exit_code))
                        };
                        break 'read finish;
                    }
                }
            }
        };
        if !events.ended()
            && let Some(pid) = events.pid()
        {
            self.kill(pid).await;
        }
        if finish == Finish::Flooded {
            stdout.mark_truncated();
            stderr.mark_truncated();
        }
        Ok(Ran {
            stdout,
            stderr,
            finish,
            elapsed: began.elapsed(),
        })
    }
}

/// A process envd keeps running with its stdin open ([`Envd::hold`]).
pub(crate) struct Held {
    envd: Envd,
    body: hyper::body::Incoming,
    reader: StreamReader,
    events: Events,
    /// Events read before they were asked for.
    pending: std::collections::VecDeque<Event>,
}

impl Held {
    /// Its pid.
    pub(crate) fn pid(&self) -> u32 {
        self.events.pid().unwrap_or(0)
    }

    /// The next event (keepalives skipped), or `None` once the stream ended,
    /// broke or broke envd's protocol.
    pub(crate) async fn next(&mut self) -> Option<Event> {
        if let Some(e) = self.pending.pop_front() {
            return Some(e);
        }
        loop {
            while let Some(frame) = self.reader.next_frame().ok()? {
                let Frame::Message(m) = frame else {
                    return None;
                };
                let event = process::parse(&m).ok()?;
                self.events.accept(&event).ok()?;
                if event != Event::Keepalive {
                    return Some(event);
                }
            }
            let data = self.body.frame().await?.ok()?.into_data().ok()?;
            self.reader.push(&data).ok()?;
        }
    }

    /// Writes `bytes` to its stdin.
    pub(crate) async fn send(&self, bytes: &[u8]) -> Result<()> {
        self.envd.send_input(self.pid(), bytes).await
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.events.ended() || self.events.pid().is_none() {
            return;
        }
        let (envd, pid) = (self.envd.clone(), self.pid());
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            h.spawn(async move { envd.kill(pid).await });
        }
    }
}

/// A write's outcome when envd answered: `Err(why)` when it refused the
/// files themselves.
pub(crate) type Written = std::result::Result<(), String>;

/// What a file read found.
#[derive(Debug)]
pub(crate) enum ReadFile {
    /// Its bytes.
    Bytes(Vec<u8>),
    /// It is not there (or is a directory).
    Missing,
    /// It is larger than the limit asked for.
    TooLarge,
}

/// After the end event: reads the end frame, which must close the stream.
async fn drain_end(
    body: &mut hyper::body::Incoming,
    reader: &mut StreamReader,
    until: Instant,
) -> std::result::Result<(), String> {
    loop {
        match reader.next_frame().map_err(|e| e.to_string())? {
            Some(Frame::End(Ok(()))) => break,
            Some(Frame::End(Err(e))) => {
                return Err(format!("an error after the end event: {}", e.code));
            }
            Some(Frame::Message(_)) => return Err("an event after the end event".into()),
            None => {}
        }
        let chunk = tokio::time::timeout_at(until, body.frame())
            .await
            .map_err(|_| "no end frame after the end event".to_owned())?;
        match chunk {
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    reader.push(&d).map_err(|e| e.to_string())?;
                }
            }
            Some(Err(e)) => return Err(format!("the stream broke: {e}")),
            None => return Err(StreamError::Truncated.to_string()),
        }
    }
    // Nothing may follow the end frame.
    match tokio::time::timeout_at(until, body.frame()).await {
        Ok(None) => reader.finish().map_err(|e| e.to_string()),
        Ok(Some(Ok(f))) if f.data_ref().is_none_or(|d| d.is_empty()) => Ok(()),
        Ok(Some(_)) => Err("data after the end of the stream".into()),
        Err(_) => Ok(()),
    }
}

/// The exit code of a process a signal ended, from envd's status text
/// (Go's `ProcessState.String()`: `signal: killed`); 128 + the signal's
/// number, or the code envd gave when it is not a signal it names.
fn signal_exit(status: &str, code: i32) -> i32 {
    const NAMES: &[(&str, i32)] = &[
        ("hangup", 1),
        ("interrupt", 2),
        ("quit", 3),
        ("illegal instruction", 4),
        ("trace/breakpoint trap", 5),
        ("aborted", 6),
        ("bus error", 7),
        ("floating point exception", 8),
        ("killed", 9),
        ("user defined signal 1", 10),
        ("segmentation fault", 11),
        ("user defined signal 2", 12),
        ("broken pipe", 13),
        ("alarm clock", 14),
        ("terminated", 15),
        ("CPU time limit exceeded", 24),
        ("file size limit exceeded", 25),
    ];
    let name = status.strip_prefix("signal: ").unwrap_or_default();
    let name = name.strip_suffix(" (core dumped)").unwrap_or(name);
    match NAMES.iter().find(|(n, _)| *n == name) {
        Some((_, n)) => 128 + n,
        None if code >= 0 => code,
        None => 255,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_exit_is_128_plus_its_number() {
        assert_eq!(signal_exit("signal: killed", -1), 137);
        assert_eq!(signal_exit("signal: aborted (core dumped)", -1), 134);
        assert_eq!(signal_exit("signal: segmentation fault", -1), 139);
        assert_eq!(signal_exit("exit status 137", 137), 137);
        assert_eq!(signal_exit("signal: who knows", -1), 255);
    }

    #[test]
    fn envd_is_addressed_by_host_or_by_header() {
        let t = Arc::new(Secret::new("tok".into()));
        let e = Envd::new(
            Http::new(),
            &EnvdAddress::Domain("e2b.app".into()),
            "iabc",
            None,
            t.clone(),
        );
        assert_eq!(
            (e.base.as_str(), e.by_header.is_none()),
            ("https://49983-iabc.e2b.app", true)
        );
        let e = Envd::new(
            Http::new(),
            &EnvdAddress::Domain("e2b.app".into()),
            "iabc",
            Some("e2b.dev"),
            t.clone(),
        );
        assert_eq!(e.base, "https://49983-iabc.e2b.dev");
        let proxy = url::Url::parse("http://127.0.0.1:49983/").unwrap();
        let e = Envd::new(
            Http::new(),
            &EnvdAddress::Proxy(proxy),
            "iabc",
            Some("e2b.dev"),
            t,
        );
        assert_eq!(
            (e.base.as_str(), e.by_header.as_deref()),
            ("http://127.0.0.1:49983", Some("iabc"))
        );
    }
}
