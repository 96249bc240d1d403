//! Connect error answers: the 16 codes, their HTTP statuses, the JSON body and
//! the binary `NotDispatched`, `SessionEnded` and `UnansweredCall` details.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Refusal, SessionEnd, SessionEnded};
use crate::record::RunRecord;
use crate::wire::json;

/// A Connect status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectCode {
    /// `canceled`
    Canceled,
    /// `unknown`
    Unknown,
    /// `invalid_argument`
    InvalidArgument,
    /// `deadline_exceeded`
    DeadlineExceeded,
    /// `not_found`
    NotFound,
    /// `already_exists`
    AlreadyExists,
    /// `permission_denied`
    PermissionDenied,
    /// `resource_exhausted`
    ResourceExhausted,
    /// `failed_precondition`
    FailedPrecondition,
    /// `aborted`
    Aborted,
    /// `out_of_range`
    OutOfRange,
    /// `unimplemented`
    Unimplemented,
    /// `internal`
    Internal,
    /// `unavailable`
    Unavailable,
    /// `data_loss`
    DataLoss,
    /// `unauthenticated`
    Unauthenticated,
}

impl ConnectCode {
    const TABLE: [(ConnectCode, &'static str, u16); 16] = [
        (ConnectCode::Canceled, "canceled", 499),
        (ConnectCode::Unknown, "unknown", 500),
        (ConnectCode::InvalidArgument, "invalid_argument", 400),
        (ConnectCode::DeadlineExceeded, "deadline_exceeded", 504),
        (ConnectCode::NotFound, "not_found", 404),
        (ConnectCode::AlreadyExists, "already_exists", 409),
        (ConnectCode::PermissionDenied, "permission_denied", 403),
        (ConnectCode::ResourceExhausted, "resource_exhausted", 429),
        (ConnectCode::FailedPrecondition, "failed_precondition", 400),
        (ConnectCode::Aborted, "aborted", 409),
        (ConnectCode::OutOfRange, "out_of_range", 400),
        (ConnectCode::Unimplemented, "unimplemented", 501),
        (ConnectCode::Internal, "internal", 500),
        (ConnectCode::Unavailable, "unavailable", 503),
        (ConnectCode::DataLoss, "data_loss", 500),
        (ConnectCode::Unauthenticated, "unauthenticated", 401),
    ];

    fn row(self) -> (ConnectCode, &'static str, u16) {
        Self::TABLE[self as usize]
    }

    /// The code's name.
    pub fn as_str(self) -> &'static str {
        self.row().1
    }

    /// The HTTP status the Connect protocol gives it.
    pub fn http_status(self) -> u16 {
        self.row().2
    }

    /// The code for a name.
    pub fn parse(s: &str) -> Option<ConnectCode> {
        Self::TABLE.iter().find(|r| r.1 == s).map(|r| r.0)
    }

    /// The Connect code for a plimsoll error code: the daemon surface's one mapping.
    pub fn for_error(code: ErrorCode) -> ConnectCode {
        match code {
            ErrorCode::InvalidRequest | ErrorCode::ProtocolMissing => ConnectCode::InvalidArgument,
            ErrorCode::ProtocolMismatch | ErrorCode::Unsupported => ConnectCode::Unimplemented,
            ErrorCode::Unauthenticated => ConnectCode::Unauthenticated,
            ErrorCode::PermissionDenied => ConnectCode::PermissionDenied,
            ErrorCode::Disabled
            | ErrorCode::InsufficientIsolation
            | ErrorCode::SoftwareMismatch
            | ErrorCode::SessionEnded => ConnectCode::FailedPrecondition,
            ErrorCode::AtCapacity => ConnectCode::ResourceExhausted,
            ErrorCode::Infrastructure => ConnectCode::Internal,
            ErrorCode::Cancelled => ConnectCode::Canceled,
            ErrorCode::DeadlineExceeded => ConnectCode::DeadlineExceeded,
            ErrorCode::RecordMismatch | ErrorCode::IsolationEvidenceMismatch => {
                ConnectCode::DataLoss
            }
            ErrorCode::Transport => ConnectCode::Unavailable,
        }
    }
}

/// A Connect error answer, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectError {
    /// The Connect code.
    pub code: ConnectCode,
    /// The human message.
    pub message: String,
    /// The not-dispatched mark, if nothing ran.
    pub refusal: Option<Refusal>,
    /// The session's end, if the session has ended.
    pub session_ended: Option<SessionEnded>,
    /// The record of a session call that may have run.
    pub unanswered: Option<RunRecord>,
}

#[derive(Serialize, Deserialize)]
struct Body {
    code: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    details: Vec<Detail>,
}

#[derive(Serialize, Deserialize)]
struct Detail {
    #[serde(rename = "type")]
    type_: String,
    value: String,
}

impl From<&Error> for ConnectError {
    fn from(e: &Error) -> ConnectError {
        ConnectError {
            code: ConnectCode::for_error(e.code()),
            message: e.message().to_owned(),
            refusal: e.not_dispatched(),
            session_ended: e.session_end().cloned(),
            unanswered: e.unanswered().cloned(),
        }
    }
}

impl ConnectError {
    /// An error with no details.
    pub fn new(code: ConnectCode, message: impl Into<String>) -> ConnectError {
        ConnectError {
            code,
            message: message.into(),
            refusal: None,
            session_ended: None,
            unanswered: None,
        }
    }

    /// Marks it not dispatched.
    pub fn refused(mut self, reason: Refusal) -> ConnectError {
        self.refusal = Some(reason);
        self
    }

    /// The JSON body: code, message and binary details.
    pub fn to_json(&self) -> Vec<u8> {
        let mut details = Vec::new();
        if let Some(r) = self.refusal {
            details.push(detail(
                "plimsoll.v1.NotDispatched",
                &not_dispatched_bytes(r),
            ));
        }
        if let Some(s) = &self.session_ended {
            details.push(detail("plimsoll.v1.SessionEnded", &session_ended_bytes(s)));
        }
        if let Some(r) = &self.unanswered {
            details.push(detail("plimsoll.v1.UnansweredCall", &unanswered_bytes(r)));
        }
        json::encode(&Body {
            code: self.code.as_str().to_owned(),
            message: self.message.clone(),
            details,
        })
    }
}

fn detail(type_: &str, bytes: &[u8]) -> Detail {
    Detail {
        type_: type_.to_owned(),
        value: json::base64_encode(bytes),
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, field: u64, wire_type: u64) {
    varint(out, (field << 3) | wire_type);
}

fn put_varint(out: &mut Vec<u8>, field: u64, v: u64) {
    if v != 0 {
        tag(out, field, 0);
        varint(out, v);
    }
}

fn put_bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    if !b.is_empty() {
        tag(out, field, 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
}

/// `NotDispatched { reason = 1 }` in protobuf binary.
pub fn not_dispatched_bytes(r: Refusal) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, 1, r.number() as u64);
    out
}

/// `SessionEnded { reason = 1; detail = 2 }` in protobuf binary.
pub fn session_ended_bytes(s: &SessionEnded) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, 1, s.reason.number() as u64);
    put_bytes(&mut out, 2, s.detail.as_bytes());
    out
}

/// A `RunRecord` in protobuf binary, fields in number order.
pub fn record_bytes(r: &RunRecord) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, 1, r.version as u64);
    put_bytes(&mut out, 2, r.request_sha256.as_bytes());
    put_bytes(&mut out, 3, r.result_sha256.as_bytes());
    put_bytes(&mut out, 4, r.provider.as_bytes());
    put_bytes(&mut out, 5, r.isolation.as_bytes());
    put_bytes(&mut out, 6, r.environment.as_bytes());
    put_bytes(&mut out, 7, r.policy.as_bytes());
    put_varint(&mut out, 8, r.started_unix_ms as u64);
    put_varint(&mut out, 9, r.ended_unix_ms as u64);
    put_bytes(&mut out, 10, r.session.as_bytes());
    put_varint(&mut out, 11, r.sequence);
    put_bytes(&mut out, 12, r.previous_sha256.as_bytes());
    put_bytes(&mut out, 13, r.record_sha256.as_bytes());
    put_bytes(&mut out, 14, r.software_identity.as_bytes());
    put_bytes(&mut out, 15, r.software_rule_id.as_bytes());
    put_bytes(&mut out, 16, r.unanswered.as_bytes());
    put_bytes(&mut out, 17, r.instance.as_bytes());
    out
}

/// `UnansweredCall { record = 1 }` in protobuf binary.
pub fn unanswered_bytes(r: &RunRecord) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, &record_bytes(r));
    out
}

/// Reads a session end from the wire number, for clients.
pub fn session_end_from_number(n: u32) -> Option<SessionEnd> {
    SessionEnd::from_number(n)
}

#[cfg(test)]
mod tests;

/// Reads a protobuf varint.
fn read_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Walks proto3 fields: `(field, varint)` or `(field, bytes)`; `None` on a
/// truncated or unknown-wire-type field.
/// One decoded proto3 field: its number, and a varint (`Ok`) or bytes (`Err`).
type Field<'a> = (u64, Result<u64, &'a [u8]>);

fn fields(b: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < b.len() {
        let key = read_varint(b, &mut at)?;
        let (field, wt) = (key >> 3, key & 7);
        match wt {
            0 => out.push((field, Ok(read_varint(b, &mut at)?))),
            1 => at = at.checked_add(8).filter(|&e| e <= b.len())?,
            2 => {
                let len = usize::try_from(read_varint(b, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|&e| e <= b.len())?;
                out.push((field, Err(&b[at..end])));
                at = end;
            }
            5 => at = at.checked_add(4).filter(|&e| e <= b.len())?,
            _ => return None,
        }
    }
    Some(out)
}

fn decode_reason_and_text(b: &[u8]) -> Option<(u32, String)> {
    let mut n = 0u32;
    let mut text = String::new();
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Ok(x)) => n = x as u32,
            (2, Err(s)) => text = String::from_utf8(s.to_vec()).ok()?,
            (1 | 2, _) => return None,
            _ => {}
        }
    }
    Some((n, text))
}

/// Decodes a `RunRecord` from protobuf binary (the `UnansweredCall` detail).
pub fn decode_record(b: &[u8]) -> Option<RunRecord> {
    let mut r = RunRecord::default();
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Ok(x)) => r.version = x as u32,
            (8, Ok(x)) => r.started_unix_ms = x as i64,
            (9, Ok(x)) => r.ended_unix_ms = x as i64,
            (11, Ok(x)) => r.sequence = x,
            (f @ (2..=7 | 10 | 12..=17), Err(s)) => {
                let s = String::from_utf8(s.to_vec()).ok()?;
                let slot = match f {
                    2 => &mut r.request_sha256,
                    3 => &mut r.result_sha256,
                    4 => &mut r.provider,
                    5 => &mut r.isolation,
                    6 => &mut r.environment,
                    7 => &mut r.policy,
                    10 => &mut r.session,
                    12 => &mut r.previous_sha256,
                    13 => &mut r.record_sha256,
                    14 => &mut r.software_identity,
                    15 => &mut r.software_rule_id,
                    16 => &mut r.unanswered,
                    _ => &mut r.instance,
                };
                *slot = s;
            }
            (1..=17, _) => return None,
            _ => {}
        }
    }
    Some(r)
}

impl ConnectError {
    /// Reads a Connect error answer. `bound` says whether it carried this
    /// request's id back: an unbound answer keeps only its code and message.
    /// `mark` is the `Plimsoll-Not-Dispatched` header, used when no detail marks it.
    pub fn from_answer(status: u16, body: &[u8], bound: bool, mark: Option<&str>) -> ConnectError {
        let parsed: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let code = parsed["code"]
            .as_str()
            .and_then(ConnectCode::parse)
            .unwrap_or(match status {
                400 => ConnectCode::Internal,
                401 => ConnectCode::Unauthenticated,
                403 => ConnectCode::PermissionDenied,
                404 => ConnectCode::Unimplemented,
                429 | 502 | 503 | 504 => ConnectCode::Unavailable,
                _ => ConnectCode::Unknown,
            });
        let message = parsed["message"]
            .as_str()
            .filter(|m| !m.is_empty())
            .map_or_else(|| format!("HTTP {status}"), str::to_owned);
        let mut e = ConnectError::new(code, message);
        if !bound {
            e.message
                .push_str(" (the answer was not bound to this request)");
            return e;
        }
        for d in parsed["details"].as_array().into_iter().flatten() {
            let (Some(t), Some(v)) = (d["type"].as_str(), d["value"].as_str()) else {
                continue;
            };
            let Ok(raw) = json::base64_decode(v) else {
                continue;
            };
            match t.rsplit('/').next().unwrap_or(t) {
                "plimsoll.v1.NotDispatched" if e.refusal.is_none() => {
                    if let Some((n, _)) = decode_reason_and_text(&raw) {
                        // An unknown reason still says nothing ran; keep the nearest honest mark.
                        e.refusal = Some(Refusal::from_number(n).unwrap_or(Refusal::Request));
                    }
                }
                "plimsoll.v1.SessionEnded" if e.session_ended.is_none() => {
                    if let Some((n, detail)) = decode_reason_and_text(&raw) {
                        let reason = SessionEnd::from_number(n)
                            .filter(|r| *r != SessionEnd::Open)
                            .unwrap_or(SessionEnd::NotFound);
                        e.session_ended = Some(SessionEnded { reason, detail });
                    }
                }
                "plimsoll.v1.UnansweredCall" if e.unanswered.is_none() => {
                    e.unanswered = fields(&raw).and_then(|f| {
                        f.into_iter().find_map(|(n, v)| match (n, v) {
                            (1, Err(b)) => decode_record(b),
                            _ => None,
                        })
                    });
                }
                _ => {}
            }
        }
        if e.refusal.is_none() {
            e.refusal = mark.and_then(|m| {
                (1..=7)
                    .filter_map(Refusal::from_number)
                    .find(|r| r.as_str() == m)
            });
        }
        if e.refusal.is_some() {
            e.unanswered = None;
        }
        e
    }

    /// The plimsoll error this answer describes: the client surface's one mapping.
    pub fn into_error(self) -> Error {
        let r = self.refusal;
        let code = match (self.code, r, &self.session_ended) {
            (ConnectCode::FailedPrecondition, _, Some(_)) => ErrorCode::SessionEnded,
            (ConnectCode::FailedPrecondition, Some(Refusal::Isolation), _) => {
                ErrorCode::InsufficientIsolation
            }
            (ConnectCode::FailedPrecondition, Some(Refusal::Environment), _) => {
                ErrorCode::SoftwareMismatch
            }
            (ConnectCode::FailedPrecondition, _, _) => ErrorCode::Disabled,
            (ConnectCode::Unimplemented, Some(Refusal::Protocol), _) => ErrorCode::ProtocolMismatch,
            (ConnectCode::Unimplemented, _, _) => ErrorCode::Unsupported,
            (ConnectCode::ResourceExhausted, Some(Refusal::Capacity), _) => ErrorCode::AtCapacity,
            (ConnectCode::ResourceExhausted, Some(Refusal::Request), _) => {
                ErrorCode::InvalidRequest
            }
            (ConnectCode::InvalidArgument, Some(Refusal::Protocol), _) => {
                ErrorCode::ProtocolMissing
            }
            (ConnectCode::InvalidArgument, _, _) => ErrorCode::InvalidRequest,
            (ConnectCode::Unauthenticated, _, _) => ErrorCode::Unauthenticated,
            (ConnectCode::PermissionDenied, _, _) => ErrorCode::PermissionDenied,
            (ConnectCode::Canceled, _, _) => ErrorCode::Cancelled,
            (ConnectCode::DeadlineExceeded, _, _) => ErrorCode::DeadlineExceeded,
            (_, _, Some(_)) => ErrorCode::SessionEnded,
            (ConnectCode::DataLoss, _, _) => ErrorCode::RecordMismatch,
            (ConnectCode::Unavailable, _, _) => ErrorCode::Transport,
            _ => ErrorCode::Infrastructure,
        };
        let mut e = Error::new(code, format!("{}: {}", self.code.as_str(), self.message)).marked(r);
        if let Some(end) = self.session_ended {
            e = e.with_session_end(end);
        }
        if let Some(rec) = self.unanswered {
            e = e.with_unanswered(rec);
        }
        e
    }
}

#[cfg(test)]
mod decode_tests;
