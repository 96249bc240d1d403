//! The error channel: typed refusals (nothing ran) and infrastructure errors.
//!
//! A guest's non-zero exit is never an `Err`: it is a normal result. An `Err`
//! means plimsoll refused the request before dispatch ([`Error::not_dispatched`]
//! is `Some`) or something around the run broke (it is `None`: the call may have
//! run, and retrying is not automatically safe).

use std::fmt;

use crate::record::RunRecord;

/// Why nothing ran: the `NotDispatchedReason` of the wire, numbered as there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Malformed or out of bounds.
    Request = 1,
    /// Token, scope or grant ACL.
    Permission = 2,
    /// Another protocol number.
    Protocol = 3,
    /// The provider cannot do it, or is disabled.
    Unsupported = 4,
    /// The provider's tier is below the caller's floor.
    Isolation = 5,
    /// Admission, rate limit or session busy.
    Capacity = 6,
    /// Software outside the caller's rule, or a sandbox not shown to be the one stated.
    Environment = 7,
}

impl Refusal {
    /// The short name used in the `Plimsoll-Not-Dispatched` header.
    pub const fn as_str(self) -> &'static str {
        match self {
            Refusal::Request => "request",
            Refusal::Permission => "permission",
            Refusal::Protocol => "protocol",
            Refusal::Unsupported => "unsupported",
            Refusal::Isolation => "isolation",
            Refusal::Capacity => "capacity",
            Refusal::Environment => "environment",
        }
    }

    /// The wire number (1..=7).
    pub const fn number(self) -> u32 {
        self as u32
    }

    /// The reason for a wire number, if it is one of the seven.
    pub fn from_number(n: u32) -> Option<Refusal> {
        Some(match n {
            1 => Refusal::Request,
            2 => Refusal::Permission,
            3 => Refusal::Protocol,
            4 => Refusal::Unsupported,
            5 => Refusal::Isolation,
            6 => Refusal::Capacity,
            7 => Refusal::Environment,
            _ => return None,
        })
    }
}

/// Why a session ended: the wire's `SessionEnd`, numbered as there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SessionEnd {
    /// Not ended.
    #[default]
    Open = 0,
    /// Its owner closed it.
    Closed = 1,
    /// Its lifetime ran out.
    Expired = 2,
    /// Its work directory outgrew the disk budget.
    DiskExceeded = 3,
    /// Code killed the sandbox's main process.
    MainProcessEnded = 4,
    /// The cleanup between calls could not prove the sandbox clean.
    BoundaryFailed = 5,
    /// The sandbox's security settings changed under it.
    SandboxChanged = 6,
    /// The daemon shut down.
    Shutdown = 7,
    /// Closed to make room for the same owner's newer session.
    Replaced = 8,
    /// No such session for this caller.
    NotFound = 9,
    /// No request named it before its first idle timeout.
    Unclaimed = 10,
}

impl SessionEnd {
    const NAMES: [(&'static str, &'static str); 11] = [
        ("open", "SESSION_END_UNSPECIFIED"),
        ("closed", "SESSION_END_CLOSED"),
        ("expired", "SESSION_END_EXPIRED"),
        ("disk_exceeded", "SESSION_END_DISK_EXCEEDED"),
        ("main_process_ended", "SESSION_END_MAIN_PROCESS_ENDED"),
        ("boundary_failed", "SESSION_END_BOUNDARY_FAILED"),
        ("sandbox_changed", "SESSION_END_SANDBOX_CHANGED"),
        ("shutdown", "SESSION_END_SHUTDOWN"),
        ("replaced", "SESSION_END_REPLACED"),
        ("not_found", "SESSION_END_NOT_FOUND"),
        ("unclaimed", "SESSION_END_UNCLAIMED"),
    ];
    const ALL: [SessionEnd; 11] = [
        SessionEnd::Open,
        SessionEnd::Closed,
        SessionEnd::Expired,
        SessionEnd::DiskExceeded,
        SessionEnd::MainProcessEnded,
        SessionEnd::BoundaryFailed,
        SessionEnd::SandboxChanged,
        SessionEnd::Shutdown,
        SessionEnd::Replaced,
        SessionEnd::NotFound,
        SessionEnd::Unclaimed,
    ];

    /// The client-side short name (`closed`, `expired`, …).
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize].0
    }

    /// The protobuf enum name (`SESSION_END_CLOSED`, …).
    pub fn wire_name(self) -> &'static str {
        Self::NAMES[self as usize].1
    }

    /// The wire number.
    pub fn number(self) -> u32 {
        self as u32
    }

    /// The end for a wire number.
    pub fn from_number(n: u32) -> Option<SessionEnd> {
        Self::ALL.get(n as usize).copied()
    }

    /// The end for a protobuf enum name.
    pub fn from_wire_name(s: &str) -> Option<SessionEnd> {
        Self::NAMES
            .iter()
            .position(|(_, w)| *w == s)
            .map(|i| Self::ALL[i])
    }
}

/// A stable error code: a number and a snake_case name that never change meaning.
///
/// Every surface (the daemon's Connect codes, Python exceptions, Node `err.code`,
/// C status values) maps these in one exhaustive `match`, so a new code fails to
/// compile until each surface handles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is malformed or out of bounds. Nothing ran.
    InvalidRequest = 1,
    /// The request carried no protocol number. Nothing ran.
    ProtocolMissing = 2,
    /// The request speaks another protocol. Nothing ran.
    ProtocolMismatch = 3,
    /// No valid credential. Nothing ran.
    Unauthenticated = 4,
    /// The credential lacks the scope, or may not use the grant. Nothing ran.
    PermissionDenied = 5,
    /// The provider is disabled: nothing runs on this daemon.
    Disabled = 6,
    /// The provider cannot run this kind of request. Nothing ran.
    Unsupported = 7,
    /// The provider's proven tier is below the caller's floor. Nothing ran.
    InsufficientIsolation = 8,
    /// The provider's software is outside the caller's rule. Nothing ran.
    SoftwareMismatch = 9,
    /// Every run slot is busy, or a rate limit was hit. Nothing ran; retry later.
    AtCapacity = 10,
    /// The session has ended. Nothing ran.
    SessionEnded = 11,
    /// Something around the run broke. The call may have run.
    Infrastructure = 12,
    /// The caller cancelled. The call may have run.
    Cancelled = 13,
    /// The request's overall deadline passed in plimsoll. The call may have run.
    DeadlineExceeded = 14,
    /// A record or chain failed verification. The call may have run.
    RecordMismatch = 15,
    /// The answer's tier does not meet the floor the caller sent. The call may have run.
    IsolationEvidenceMismatch = 16,
    /// The answer could not be read or was not bound to the request. The call may have run.
    Transport = 17,
}

impl ErrorCode {
    /// Every code, in number order.
    pub const ALL: [ErrorCode; 17] = [
        ErrorCode::InvalidRequest,
        ErrorCode::ProtocolMissing,
        ErrorCode::ProtocolMismatch,
        ErrorCode::Unauthenticated,
        ErrorCode::PermissionDenied,
        ErrorCode::Disabled,
        ErrorCode::Unsupported,
        ErrorCode::InsufficientIsolation,
        ErrorCode::SoftwareMismatch,
        ErrorCode::AtCapacity,
        ErrorCode::SessionEnded,
        ErrorCode::Infrastructure,
        ErrorCode::Cancelled,
        ErrorCode::DeadlineExceeded,
        ErrorCode::RecordMismatch,
        ErrorCode::IsolationEvidenceMismatch,
        ErrorCode::Transport,
    ];

    /// The stable number.
    pub const fn number(self) -> u32 {
        self as u32
    }

    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::ProtocolMissing => "protocol_missing",
            ErrorCode::ProtocolMismatch => "protocol_mismatch",
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::Disabled => "disabled",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::InsufficientIsolation => "insufficient_isolation",
            ErrorCode::SoftwareMismatch => "software_mismatch",
            ErrorCode::AtCapacity => "at_capacity",
            ErrorCode::SessionEnded => "session_ended",
            ErrorCode::Infrastructure => "infrastructure",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::DeadlineExceeded => "deadline_exceeded",
            ErrorCode::RecordMismatch => "record_mismatch",
            ErrorCode::IsolationEvidenceMismatch => "isolation_evidence_mismatch",
            ErrorCode::Transport => "transport",
        }
    }

    /// The code for a stable number.
    pub fn from_number(n: u32) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.number() == n)
    }

    /// The not-dispatched reason a refusal with this code carries; `None` means
    /// the call may have run.
    pub const fn refusal(self) -> Option<Refusal> {
        match self {
            ErrorCode::InvalidRequest | ErrorCode::SessionEnded => Some(Refusal::Request),
            ErrorCode::ProtocolMissing | ErrorCode::ProtocolMismatch => Some(Refusal::Protocol),
            ErrorCode::Unauthenticated | ErrorCode::PermissionDenied => Some(Refusal::Permission),
            ErrorCode::Disabled | ErrorCode::Unsupported => Some(Refusal::Unsupported),
            ErrorCode::InsufficientIsolation => Some(Refusal::Isolation),
            ErrorCode::SoftwareMismatch => Some(Refusal::Environment),
            ErrorCode::AtCapacity => Some(Refusal::Capacity),
            ErrorCode::Infrastructure
            | ErrorCode::Cancelled
            | ErrorCode::DeadlineExceeded
            | ErrorCode::RecordMismatch
            | ErrorCode::IsolationEvidenceMismatch
            | ErrorCode::Transport => None,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a session ended, with human detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEnded {
    /// The reason.
    pub reason: SessionEnd,
    /// Human context; never holds a session id, code or output.
    pub detail: String,
}

/// plimsoll's error: a typed refusal or an infrastructure error.
///
/// The message is for people; branch on [`Error::code`]. Messages never hold
/// tokens, request bodies, guest output or session ids.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("plimsoll: {code}: {message}")]
pub struct Error {
    code: ErrorCode,
    refusal: Option<Refusal>,
    message: String,
    session_ended: Option<SessionEnded>,
    unanswered: Option<Box<RunRecord>>,
}

impl Error {
    /// An error with `code` and a human message. A refusal code carries its
    /// not-dispatched reason.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            refusal: code.refusal(),
            message: message.into(),
            session_ended: None,
            unanswered: None,
        }
    }

    /// A malformed or out-of-bounds request.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::InvalidRequest, message)
    }

    /// An operation this provider cannot perform.
    pub fn unsupported(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::Unsupported, message)
    }

    /// Something around the run broke; the call may have run.
    pub fn infrastructure(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::Infrastructure, message)
    }

    /// A refusal because the session ended (or was never this caller's).
    pub fn session_ended(reason: SessionEnd, detail: impl Into<String>) -> Error {
        let detail = detail.into();
        let mut e = Error::new(
            ErrorCode::SessionEnded,
            format!("the session has ended ({})", reason.as_str()),
        );
        e.session_ended = Some(SessionEnded { reason, detail });
        e
    }

    /// Marks this error as not dispatched with `reason` (for errors whose code
    /// alone does not say, such as a busy session's cancelled wait).
    pub fn with_refusal(mut self, reason: Refusal) -> Error {
        self.refusal = Some(reason);
        self
    }

    /// Sets the not-dispatched mark exactly as an answer stated it (`None`: may have run).
    pub fn marked(mut self, reason: Option<Refusal>) -> Error {
        self.refusal = reason;
        self
    }

    /// Attaches why the session ended.
    pub fn with_session_end(mut self, end: SessionEnded) -> Error {
        self.session_ended = Some(end);
        self
    }

    /// Attaches the record of a session call that may have run but failed.
    pub fn with_unanswered(mut self, record: RunRecord) -> Error {
        self.unanswered = Some(Box::new(record));
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// `Some(reason)` when nothing ran; `None` when the call may have run.
    pub fn not_dispatched(&self) -> Option<Refusal> {
        self.refusal
    }

    /// The human message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Why the session ended, for [`ErrorCode::SessionEnded`].
    pub fn session_end(&self) -> Option<&SessionEnded> {
        self.session_ended.as_ref()
    }

    /// The record of a session call that may have run but failed.
    pub fn unanswered(&self) -> Option<&RunRecord> {
        self.unanswered.as_deref()
    }
}

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_unique() {
        for (i, c) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(c.number() as usize, i + 1);
            assert_eq!(ErrorCode::from_number(c.number()), Some(*c));
        }
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn refusals_are_marked_and_infra_is_not() {
        assert_eq!(Error::invalid("x").not_dispatched(), Some(Refusal::Request));
        assert_eq!(Error::infrastructure("x").not_dispatched(), None);
        let e = Error::session_ended(SessionEnd::NotFound, "no such session");
        assert_eq!(e.not_dispatched(), Some(Refusal::Request));
        assert_eq!(e.session_end().unwrap().reason, SessionEnd::NotFound);
        for n in 1..=7 {
            assert_eq!(Refusal::from_number(n).unwrap().number(), n);
        }
        assert_eq!(
            SessionEnd::from_wire_name("SESSION_END_CLOSED"),
            Some(SessionEnd::Closed)
        );
        assert_eq!(SessionEnd::from_number(10), Some(SessionEnd::Unclaimed));
        assert_eq!(SessionEnd::from_number(11), None);
    }
}
