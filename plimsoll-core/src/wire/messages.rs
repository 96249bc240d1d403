//! The plimsoll.v1 messages in their ProtoJSON form (camelCase names, 64-bit
//! integers as strings, zero values omitted).

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::error::{Error, Result, SessionEnd};
use crate::record::RunRecord;
use crate::request::{
    CellRun, Envelope, JavaScriptRun, ModuleRun, Payload, ProjectRun, Request, SoftwareRule,
};
use crate::result::{CellResult, JavaScriptResult, ModuleResult, Output, ProjectResult};
use crate::wire::json;

/// Describe's request: no fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DescribeRequest {}

/// What one payload kind runs on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PayloadEnvironment {
    /// A content-addressed identity of the outer image or interpreter, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub identity: String,
    /// The longest budget a run of this kind may ask for, in ms.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub max_timeout_ms: u32,
    /// The software identity a software rule is checked against.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub software_identity: String,
    /// Interpreter languages proven at startup (`javascript`, `python`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
    /// The interpreters behind `languages` with the exact versions they
    /// reported at startup (`node 24.22.3`, `python 3.13.5`). An addition to
    /// the wire: older clients ignore it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runtimes: Vec<String>,
}

/// The per-run resource envelope.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RunResources {
    /// Memory per run, MiB.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub memory_mb: u32,
    /// CPUs per run.
    #[serde(
        skip_serializing_if = "json::is_zero_f64",
        serialize_with = "json::ser_f64",
        deserialize_with = "json::de_f64"
    )]
    pub cpus: f64,
    /// Processes per run.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub pids: u32,
    /// Writable disk per run, MiB.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub disk_mb: u32,
}

/// What this daemon serves. Configuration plus startup proof, never attestation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeResponse {
    /// The provider id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sandbox: String,
    /// The proven tier.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub isolation: String,
    /// Projects are supported.
    #[serde(skip_serializing_if = "json::is_false")]
    pub supports_project: bool,
    /// Snippet grants are supported.
    #[serde(skip_serializing_if = "json::is_false")]
    pub supports_javascript_grants: bool,
    /// Project grants are supported.
    #[serde(skip_serializing_if = "json::is_false")]
    pub supports_project_grants: bool,
    /// Module runs are supported.
    #[serde(skip_serializing_if = "json::is_false")]
    pub supports_module: bool,
    /// The protocol number: 4.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub protocol: u32,
    /// The snippet environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub javascript_environment: Option<PayloadEnvironment>,
    /// The project environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_environment: Option<PayloadEnvironment>,
    /// The module environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module_environment: Option<PayloadEnvironment>,
    /// The per-run envelope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<RunResources>,
    /// The provider's policy digest, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub policy: String,
    /// Sessions are supported.
    #[serde(skip_serializing_if = "json::is_false")]
    pub supports_sessions: bool,
    /// Session lifetime, ms.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub session_lifetime_ms: u32,
    /// Session idle timeout, ms.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub session_idle_timeout_ms: u32,
    /// The session environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_environment: Option<PayloadEnvironment>,
    /// Sessions per caller, 0 = no cap.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub max_sessions_per_caller: u32,
    /// Sessions per owner, 0 = no cap.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub max_sessions_per_owner: u32,
    /// The parts that hold the wall up, with their versions, its identity's
    /// parts and the known escapes that match them (plimsoll's addition:
    /// clients that predate it ignore the field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall: Option<crate::wall::Wall>,
}

/// `RunRequest` and the envelope-and-payload part of `SessionRunRequest`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RunRequest {
    /// Protocol number (4).
    #[serde(deserialize_with = "json::de_u32")]
    pub protocol: u32,
    /// The floor, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub minimum_isolation: String,
    /// Correlation id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    /// Budget, ms; 0 = default.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_i32"
    )]
    pub timeout_ms: i32,
    /// Software rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub software_rule: Option<SoftwareRule>,
    /// The session id (SessionRun only; never digested).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub session_id: String,
    /// Snippet payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub javascript: Option<JavaScriptRun>,
    /// Project payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectRun>,
    /// Module payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<ModuleRun>,
    /// Cell payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<CellRun>,
}

/// `SessionRunRequest`: the same fields as [`RunRequest`] with `sessionId` set.
pub type SessionRunRequest = RunRequest;

impl RunRequest {
    /// Splits into the core request; exactly one payload must be present.
    pub fn into_request(self) -> Result<Request> {
        let envelope = Envelope {
            protocol: self.protocol,
            minimum_isolation: self.minimum_isolation,
            trace_id: self.trace_id,
            timeout_ms: self.timeout_ms,
            software_rule: self.software_rule,
        };
        let mut payloads = [
            self.javascript.map(Payload::JavaScript),
            self.project.map(Payload::Project),
            self.module.map(Payload::Module),
            self.cell.map(Payload::Cell),
        ]
        .into_iter()
        .flatten();
        let payload = payloads
            .next()
            .ok_or_else(|| Error::invalid("the request carries no payload"))?;
        if payloads.next().is_some() {
            return Err(Error::invalid("the request carries more than one payload"));
        }
        Ok(Request { envelope, payload })
    }

    /// The wire form of a core request (with no session id).
    pub fn from_request(r: &Request) -> RunRequest {
        let e = &r.envelope;
        let mut w = RunRequest {
            protocol: e.protocol,
            minimum_isolation: e.minimum_isolation.clone(),
            trace_id: e.trace_id.clone(),
            timeout_ms: e.timeout_ms,
            software_rule: e.software_rule.clone(),
            ..RunRequest::default()
        };
        match &r.payload {
            Payload::JavaScript(j) => w.javascript = Some(j.clone()),
            Payload::Project(p) => w.project = Some(p.clone()),
            Payload::Module(m) => w.module = Some(m.clone()),
            Payload::Cell(c) => w.cell = Some(c.clone()),
        }
        w
    }
}

/// The evidence of a run: where and behind what it ran.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Evidence {
    /// The provider id.
    pub sandbox: String,
    /// The tier that ran.
    pub isolation: String,
    /// The content-addressed environment, or empty.
    pub environment: String,
    /// The software identity, or empty.
    pub software_identity: String,
    /// The daemon instance reference, or empty.
    pub instance: String,
}

/// A run's answer: evidence, the result of the request's kind, and the record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunResponse {
    /// Where and behind what it ran.
    pub evidence: Evidence,
    /// Wall time, ms (not digested).
    pub duration_ms: i64,
    /// The run record; always present on a daemon's answer.
    pub record: Option<RunRecord>,
    /// The result; always present on a daemon's answer.
    pub output: Option<Output>,
    /// Where the run's time went ([`crate::phase`]; not digested, and
    /// ignored by clients that predate it).
    pub phases: Option<crate::phase::PhaseReport>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RunResponseWire<J, P, M, C> {
    #[serde(skip_serializing_if = "String::is_empty")]
    sandbox: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    isolation: String,
    #[serde(
        skip_serializing_if = "json::is_zero",
        serialize_with = "json::ser_i64",
        deserialize_with = "json::de_i64"
    )]
    duration_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<RunRecord>,
    #[serde(skip_serializing_if = "String::is_empty")]
    software_identity: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    environment: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    instance: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    javascript: Option<J>,
    #[serde(skip_serializing_if = "Option::is_none")]
    project: Option<P>,
    #[serde(skip_serializing_if = "Option::is_none")]
    module: Option<M>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cell: Option<C>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phases: Option<crate::phase::PhaseReport>,
}

impl Serialize for RunResponse {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let e = &self.evidence;
        let mut w: RunResponseWire<&JavaScriptResult, &ProjectResult, &ModuleResult, &CellResult> =
            RunResponseWire {
                sandbox: e.sandbox.clone(),
                isolation: e.isolation.clone(),
                duration_ms: self.duration_ms,
                record: self.record.clone(),
                software_identity: e.software_identity.clone(),
                environment: e.environment.clone(),
                instance: e.instance.clone(),
                javascript: None,
                project: None,
                module: None,
                cell: None,
                phases: self.phases.clone(),
            };
        match &self.output {
            Some(Output::JavaScript(r)) => w.javascript = Some(r),
            Some(Output::Project(r)) => w.project = Some(r),
            Some(Output::Module(r)) => w.module = Some(r),
            Some(Output::Cell(r)) => w.cell = Some(r),
            None => {}
        }
        w.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let w = RunResponseWire::<JavaScriptResult, ProjectResult, ModuleResult, CellResult>::deserialize(d)?;
        let mut outputs = [
            w.javascript.map(Output::JavaScript),
            w.project.map(Output::Project),
            w.module.map(Output::Module),
            w.cell.map(Output::Cell),
        ]
        .into_iter()
        .flatten();
        let output = outputs.next();
        if outputs.next().is_some() {
            return Err(de::Error::custom(
                "the response carries more than one result",
            ));
        }
        Ok(RunResponse {
            evidence: Evidence {
                sandbox: w.sandbox,
                isolation: w.isolation,
                environment: w.environment,
                software_identity: w.software_identity,
                instance: w.instance,
            },
            duration_ms: w.duration_ms,
            record: w.record,
            output,
            phases: w.phases,
        })
    }
}

fn ser_end<S: Serializer>(v: &SessionEnd, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(v.wire_name())
}

fn de_end<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<SessionEnd, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => {
            SessionEnd::from_wire_name(&s).ok_or_else(|| de::Error::custom("unknown session end"))
        }
        serde_json::Value::Number(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .and_then(SessionEnd::from_number)
            .ok_or_else(|| de::Error::custom("unknown session end")),
        _ => Err(de::Error::custom("expected a session end")),
    }
}

fn is_open(e: &SessionEnd) -> bool {
    *e == SessionEnd::Open
}

/// `SessionRunResponse`: the call's answer, and the session's end if it ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SessionRunResponse {
    /// The call's answer, with chained record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunResponse>,
    /// Set when the session ended during or after this call.
    #[serde(
        skip_serializing_if = "is_open",
        serialize_with = "ser_end",
        deserialize_with = "de_end"
    )]
    pub ended: SessionEnd,
    /// Human context for the end.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub end_detail: String,
}

/// `OpenSessionRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OpenSessionRequest {
    /// Protocol number (4).
    #[serde(deserialize_with = "json::de_u32")]
    pub protocol: u32,
    /// The floor.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub minimum_isolation: String,
    /// Correlation id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    /// Shorter lifetime, ms; 0 = the daemon's.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub lifetime_ms: u32,
    /// Shorter idle timeout, ms; 0 = the daemon's.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub idle_timeout_ms: u32,
    /// Software rule for every call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub software_rule: Option<SoftwareRule>,
    /// Language hints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
    /// Owner digest.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub owner: String,
}

/// `OpenSessionResponse`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OpenSessionResponse {
    /// The session id: a capability, never logged.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub session_id: String,
    /// Its fingerprint.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub session: String,
    /// The provider.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sandbox: String,
    /// The tier measured at open.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub isolation: String,
    /// When it expires (Unix ms).
    #[serde(
        skip_serializing_if = "json::is_zero",
        serialize_with = "json::ser_i64",
        deserialize_with = "json::de_i64"
    )]
    pub expires_unix_ms: i64,
    /// Idle timeout, ms.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub idle_timeout_ms: u32,
    /// The session's software identity.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub software_identity: String,
    /// Where the open's time went ([`crate::phase`]; plimsoll's addition,
    /// ignored by clients that predate it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<crate::phase::PhaseReport>,
}

/// `CloseSessionRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CloseSessionRequest {
    /// Protocol number (4).
    #[serde(deserialize_with = "json::de_u32")]
    pub protocol: u32,
    /// The session id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub session_id: String,
}

/// `CloseSessionResponse`: the chain's summary.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CloseSessionResponse {
    /// The fingerprint.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub session: String,
    /// Calls executed.
    #[serde(
        skip_serializing_if = "json::is_zero",
        serialize_with = "json::ser_u64",
        deserialize_with = "json::de_u64"
    )]
    pub calls: u64,
    /// The last record's digest, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub last_record_sha256: String,
    /// `SESSION_END_CLOSED`, or the earlier end.
    #[serde(
        skip_serializing_if = "is_open",
        serialize_with = "ser_end",
        deserialize_with = "de_end"
    )]
    pub ended: SessionEnd,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::json::{decode, encode};

    #[test]
    fn run_request_round_trip_and_payload_rules() {
        let body = br#"{"protocol":4,"minimumIsolation":"container","timeoutMs":10000,"javascript":{"code":"console.log(6*7)"}}"#;
        let w: RunRequest = decode(body).unwrap();
        assert_eq!(encode(&w), body.to_vec());
        let r = w.into_request().unwrap();
        assert_eq!(r.payload.kind(), "javascript");
        let none: RunRequest = decode(br#"{"protocol":4}"#).unwrap();
        assert!(none.into_request().is_err());
        let two: RunRequest =
            decode(br#"{"protocol":4,"javascript":{"code":"1"},"project":{"steps":["a"]}}"#)
                .unwrap();
        assert!(two.into_request().is_err());
    }

    #[test]
    fn response_shape() {
        let resp = RunResponse {
            evidence: Evidence {
                sandbox: "wasm".into(),
                isolation: "process".into(),
                ..Evidence::default()
            },
            duration_ms: 3,
            record: None,
            output: Some(Output::JavaScript(JavaScriptResult::default())),
            phases: None,
        };
        assert_eq!(
            encode(&resp),
            br#"{"sandbox":"wasm","isolation":"process","durationMs":"3","javascript":{}}"#
                .to_vec()
        );
        let back: RunResponse = decode(&encode(&resp)).unwrap();
        assert_eq!(back, resp);
        assert!(decode::<RunResponse>(br#"{"javascript":{},"cell":{}}"#).is_err());
        let close = CloseSessionResponse {
            session: "f".into(),
            calls: 2,
            last_record_sha256: "d".into(),
            ended: SessionEnd::Closed,
        };
        assert_eq!(
            encode(&close),
            br#"{"session":"f","calls":"2","lastRecordSha256":"d","ended":"SESSION_END_CLOSED"}"#
                .to_vec()
        );
    }
}
