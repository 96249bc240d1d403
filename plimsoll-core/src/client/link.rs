//! Where a caller's calls go: an embedded engine in this process, or a
//! plimsolld over the wire. A link carries calls and answers and checks
//! nothing; the caller ([`super::Runner`], [`super::Session`]) checks every
//! answer the same way whichever link brought it.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::transport::Transport;
use crate::engine::{Caller, Engine};
use crate::error::{Error, ErrorCode, Refusal, Result};
use crate::request::{PROTOCOL, Request};
use crate::wire::json::{decode, encode};
use crate::wire::{
    CloseSessionRequest, CloseSessionResponse, DescribeRequest, DescribeResponse,
    OpenSessionRequest, OpenSessionResponse, RunRequest, RunResponse, SessionRunResponse,
};

/// An embedded engine (calls as the anonymous caller) or a daemon.
#[derive(Clone)]
pub(crate) enum Link {
    Embedded(Engine),
    Remote(Arc<Transport>),
}

/// An answer that does not parse: the published client's
/// `MalformedResponseError`, which is a transport error.
pub(crate) fn malformed(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Transport, format!("malformed answer: {e}"))
}

/// A call its caller cancelled: refused, not dispatched, when it was never
/// sent; unmarked (it may have run) once it was.
pub(crate) fn cancelled(sent: bool) -> Error {
    if sent {
        Error::new(ErrorCode::Cancelled, "the caller cancelled the call").marked(None)
    } else {
        Error::new(ErrorCode::Cancelled, "cancelled before the call was sent")
            .with_refusal(Refusal::Request)
    }
}

/// Sends `body` as `method` and decodes the 200 answer, unless `cancel`
/// fires first (the daemon sees the connection close).
async fn exchange<T: serde::de::DeserializeOwned>(
    t: &Transport,
    method: &str,
    body: Vec<u8>,
    cancel: &CancellationToken,
) -> Result<T> {
    let answer = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(cancelled(true)),
        a = t.call(method, body) => a?,
    };
    decode(&answer).map_err(malformed)
}

impl Link {
    pub(crate) async fn describe(&self) -> Result<DescribeResponse> {
        match self {
            Link::Embedded(e) => Ok(e.describe()),
            Link::Remote(t) => {
                let body = encode(&DescribeRequest {});
                exchange(t, "Describe", body, &CancellationToken::new()).await
            }
        }
    }

    pub(crate) async fn run(
        &self,
        request: &Request,
        cancel: CancellationToken,
    ) -> Result<RunResponse> {
        match self {
            Link::Embedded(e) => e.run(&Caller::anonymous(), request.clone(), cancel).await,
            Link::Remote(t) => {
                let body = encode(&RunRequest::from_request(request));
                exchange(t, "Run", body, &cancel).await
            }
        }
    }

    pub(crate) async fn open(&self, req: &OpenSessionRequest) -> Result<OpenSessionResponse> {
        match self {
            Link::Embedded(e) => e.open_session(&Caller::anonymous(), req).await,
            Link::Remote(t) => {
                exchange(t, "OpenSession", encode(req), &CancellationToken::new()).await
            }
        }
    }

    pub(crate) async fn session_run(
        &self,
        session_id: &str,
        request: &Request,
        cancel: CancellationToken,
    ) -> Result<SessionRunResponse> {
        match self {
            Link::Embedded(e) => {
                e.session_run(&Caller::anonymous(), session_id, request.clone(), cancel)
                    .await
            }
            Link::Remote(t) => {
                let mut wire = RunRequest::from_request(request);
                wire.session_id = session_id.to_owned();
                exchange(t, "SessionRun", encode(&wire), &cancel).await
            }
        }
    }

    pub(crate) async fn close(&self, session_id: &str) -> Result<CloseSessionResponse> {
        match self {
            Link::Embedded(e) => {
                e.close_session(&Caller::anonymous(), PROTOCOL, session_id)
                    .await
            }
            Link::Remote(t) => {
                let req = CloseSessionRequest {
                    protocol: PROTOCOL,
                    session_id: session_id.to_owned(),
                };
                exchange(t, "CloseSession", encode(&req), &CancellationToken::new()).await
            }
        }
    }
}
