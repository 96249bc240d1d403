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
mod tests {
    use super::*;
    use crate::record::{record_digest, request_digest, session_fingerprint};
    use crate::request::{JavaScriptRun, Payload};
    use crate::wire::RunRequest;

    #[test]
    fn not_dispatched_values() {
        let want = ["CAE=", "CAI=", "CAM=", "CAQ=", "CAU=", "CAY=", "CAc="];
        for (i, w) in want.iter().enumerate() {
            let r = Refusal::from_number(i as u32 + 1).unwrap();
            assert_eq!(json::base64_encode(&not_dispatched_bytes(r)), *w);
        }
        let s = SessionEnded {
            reason: SessionEnd::Closed,
            detail: "closed".into(),
        };
        assert_eq!(
            json::base64_encode(&session_ended_bytes(&s)),
            "CAESBmNsb3NlZA=="
        );
    }

    #[test]
    fn unanswered_call_worked_detail() {
        let req: RunRequest = json::decode(
            br#"{"protocol":4,"javascript":{"code":"console.log(1)"},"sessionId":"00112233445566778899aabbccddeeff"}"#,
        )
        .unwrap();
        let r = req.into_request().unwrap();
        assert!(matches!(
            r.payload,
            Payload::JavaScript(JavaScriptRun { .. })
        ));
        let mut rec = RunRecord {
            version: 4,
            request_sha256: request_digest(&r.envelope, Some(&r.payload)),
            unanswered: "unknown".into(),
            provider: "docker".into(),
            isolation: "container".into(),
            started_unix_ms: 1790000003000,
            ended_unix_ms: 1790000003500,
            session: session_fingerprint("00112233445566778899aabbccddeeff"),
            sequence: 1,
            ..RunRecord::default()
        };
        rec.record_sha256 = record_digest(&rec).unwrap();
        assert_eq!(
            rec.record_sha256,
            "a4b7ac144c8639b80c2c72346b3d397e9226ca510c6a14982d5d0f87d93b2b88"
        );
        assert_eq!(
            json::base64_encode(&unanswered_bytes(&rec)),
            "CvUBCAQSQDc3MDI1MzQ5ZmY3MzQwZjQ3NDZhMDE4OGI2YTY3NGRlMjRhNmM4ZGFkOTBjZmEyZmQ4ZjYyYjhjMDYzOGFlNjEiBmRvY2tlcioJY29udGFpbmVyQLjvwaKMNEis88GijDRSQDU5NDdkN2MzM2Q3ODNmOTRiM2I0YzFhOTZlYmM4OTkxZWQyOGYxYjA2OWI3MWUwMzM3NmNiYThjYWE5OGE3MjBYAWpAYTRiN2FjMTQ0Yzg2MzliODBjMmM3MjM0NmIzZDM5N2U5MjI2Y2E1MTBjNmExNDk4MmQ1ZDBmODdkOTNiMmI4OIIBB3Vua25vd24="
        );
    }

    #[test]
    fn every_error_code_maps() {
        for c in ErrorCode::ALL {
            let e = Error::new(c, "m");
            let ce = ConnectError::from(&e);
            assert_eq!(ce.refusal, c.refusal());
            let body: serde_json::Value = serde_json::from_slice(&ce.to_json()).unwrap();
            assert_eq!(body["code"], ce.code.as_str());
        }
        assert_eq!(ConnectCode::parse("data_loss"), Some(ConnectCode::DataLoss));
        assert_eq!(ConnectCode::Canceled.http_status(), 499);
    }
}
