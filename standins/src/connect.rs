//! The server side of the Connect protocol (connectrpc.com `docs/protocol.md`)
//! as far as the stand-ins need it: the JSON codec (E2B's envd) and the
//! proto codec (Docker's `docker.sbx`), identity encoding.
//!
//! A streaming message is an envelope, `flags: u8 | length: u32 BE | payload`;
//! flag `0x02` marks the EndStreamResponse, which is last and carries `{}` or
//! `{"error":{"code","message"}}`. Streaming answers are always HTTP 200. A
//! unary error is a non-200 status with a JSON body `{"code","message"}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Flag of a compressed envelope (refused: only identity is spoken).
pub const FLAG_COMPRESSED: u8 = 0x01;
/// Flag of the EndStreamResponse envelope.
pub const FLAG_END_STREAM: u8 = 0x02;
/// The largest request message accepted.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// One envelope around `payload`.
pub fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(flags);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A message envelope holding `message` as JSON.
pub fn message(message: &Value) -> Vec<u8> {
    envelope(0, message.to_string().as_bytes())
}

/// The EndStreamResponse: success, or the error.
pub fn end_stream(error: Option<&Error>) -> Vec<u8> {
    let body = match error {
        None => json!({}),
        Some(e) => json!({"error": {"code": e.code, "message": e.message}}),
    };
    envelope(FLAG_END_STREAM, body.to_string().as_bytes())
}

/// The one message of a server-streaming request body: exactly one
/// uncompressed envelope, nothing after it.
pub fn single_message(body: &[u8]) -> Result<Value, Error> {
    if body.len() < 5 {
        return Err(Error::invalid("the request holds no enveloped message"));
    }
    if body[0] & FLAG_COMPRESSED != 0 {
        return Err(Error::new(
            "internal",
            "compressed messages are not accepted (identity only)",
        ));
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    if len > MAX_MESSAGE_BYTES || body.len() != 5 + len {
        return Err(Error::invalid(
            "the request's envelope length does not match its body",
        ));
    }
    serde_json::from_slice(&body[5..])
        .map_err(|e| Error::invalid(format!("unmarshal message: {e}")))
}

/// The media type of a unary message in the proto codec.
pub const UNARY_PROTO: &str = "application/proto";
/// The media type of a streaming body in the proto codec.
pub const STREAM_PROTO: &str = "application/connect+proto";

/// A unary request's message in the proto codec. Another codec is 415 (the
/// Connect protocol's answer to a media type the server does not speak);
/// a compressed body is refused (identity only).
#[expect(
    clippy::result_large_err,
    reason = "the refusal is the handler's answer"
)]
pub fn unary_request<M: prost::Message + Default>(
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Result<M, Response> {
    let ctype = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if ctype != UNARY_PROTO {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            [("accept-post", UNARY_PROTO)],
        )
            .into_response());
    }
    if headers
        .get("content-encoding")
        .is_some_and(|v| v.as_bytes() != b"identity")
    {
        return Err(
            Error::new("unimplemented", "only identity encoding is accepted").into_response(),
        );
    }
    if body.len() > MAX_MESSAGE_BYTES {
        return Err(Error::new("resource_exhausted", "the message is too large").into_response());
    }
    M::decode(body).map_err(|e| Error::invalid(format!("unmarshal message: {e}")).into_response())
}

/// A unary answer in the proto codec.
pub fn unary_answer<M: prost::Message>(m: &M) -> Response {
    (
        StatusCode::OK,
        [("content-type", UNARY_PROTO)],
        m.encode_to_vec(),
    )
        .into_response()
}

/// The messages of a client-streaming request body in the proto codec:
/// uncompressed envelopes back to back.
#[expect(
    clippy::result_large_err,
    reason = "the refusal is the handler's answer"
)]
pub fn stream_request<M: prost::Message + Default>(
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Result<Vec<M>, Response> {
    let ctype = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if ctype != STREAM_PROTO {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            [("accept-post", STREAM_PROTO)],
        )
            .into_response());
    }
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let fail = |e: Error| stream_answer(Vec::new(), Some(&e));
        if rest.len() < 5 {
            return Err(fail(Error::invalid("a truncated envelope")));
        }
        if rest[0] & FLAG_COMPRESSED != 0 {
            return Err(fail(Error::new(
                "internal",
                "compressed messages are not accepted (identity only)",
            )));
        }
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if len > MAX_MESSAGE_BYTES || rest.len() < 5 + len {
            return Err(fail(Error::invalid(
                "an envelope's length runs past the body",
            )));
        }
        let m = M::decode(&rest[5..5 + len])
            .map_err(|e| fail(Error::invalid(format!("unmarshal message: {e}"))))?;
        out.push(m);
        rest = &rest[5 + len..];
    }
    Ok(out)
}

/// A streaming answer in the proto codec: `messages`, then the
/// EndStreamResponse (with `error` when the call failed).
pub fn stream_answer(messages: Vec<Vec<u8>>, error: Option<&Error>) -> Response {
    let mut body = Vec::new();
    for m in messages {
        body.extend(envelope(0, &m));
    }
    body.extend(end_stream(error));
    (StatusCode::OK, [("content-type", STREAM_PROTO)], body).into_response()
}

/// A Connect error: its code (`not_found`, `invalid_argument`, …) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The Connect code.
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

impl Error {
    /// An error with this code.
    pub fn new(code: &'static str, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    /// `invalid_argument`.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new("invalid_argument", message)
    }

    /// The HTTP status of this code in a unary answer.
    pub fn status(&self) -> StatusCode {
        let s = match self.code {
            "canceled" => 499,
            "invalid_argument" | "failed_precondition" | "out_of_range" => 400,
            "deadline_exceeded" => 504,
            "not_found" => 404,
            "already_exists" | "aborted" => 409,
            "permission_denied" => 403,
            "resource_exhausted" => 429,
            "unimplemented" => 501,
            "unavailable" => 503,
            "unauthenticated" => 401,
            _ => 500,
        };
        StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Error {
    /// The unary error answer.
    fn into_response(self) -> Response {
        (
            self.status(),
            [("content-type", "application/json")],
            json!({"code": self.code, "message": self.message}).to_string(),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_round_trip_and_bad_frames_are_refused() {
        let m = message(&json!({"a": 1}));
        assert_eq!(&m[..5], &[0, 0, 0, 0, 7]);
        assert_eq!(single_message(&m).unwrap(), json!({"a": 1}));
        let mut trailing = m.clone();
        trailing.push(0);
        assert_eq!(
            single_message(&trailing).unwrap_err().code,
            "invalid_argument"
        );
        let mut compressed = m.clone();
        compressed[0] = FLAG_COMPRESSED;
        assert_eq!(single_message(&compressed).unwrap_err().code, "internal");
        assert!(single_message(&m[..4]).is_err());
        let end = end_stream(Some(&Error::new("not_found", "x")));
        assert_eq!(end[0], FLAG_END_STREAM);
        assert_eq!(
            serde_json::from_slice::<Value>(&end[5..]).unwrap(),
            json!({"error": {"code": "not_found", "message": "x"}})
        );
        assert_eq!(Error::new("unauthenticated", "").status(), 401);
    }
}
