//! Results: what came back from code that ran. A non-zero exit is a normal
//! answer here, never an error.
//!
//! Output that was cut short is flagged (`*_truncated`); nothing is ever written
//! into the kept output to say so.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::json;

/// How a project (or module) run concluded: a stable classification, not a string to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProjectOutcome {
    /// Not set.
    #[default]
    Unspecified = 0,
    /// Every step ran (a failing step stops the run and still concludes `Completed`).
    Completed = 1,
    /// No step began.
    SetupFailed = 2,
    /// The run's deadline passed.
    TimedOut = 3,
    /// The runner's report was missing, unauthenticated or unreadable.
    ProtocolError = 4,
    /// The runner failed after a step began, so code ran.
    RunnerFailed = 5,
}

impl ProjectOutcome {
    const ALL: [(ProjectOutcome, &'static str, &'static str); 6] = [
        (
            ProjectOutcome::Unspecified,
            "PROJECT_OUTCOME_UNSPECIFIED",
            "unspecified",
        ),
        (
            ProjectOutcome::Completed,
            "PROJECT_OUTCOME_COMPLETED",
            "completed",
        ),
        (
            ProjectOutcome::SetupFailed,
            "PROJECT_OUTCOME_SETUP_FAILED",
            "setup_failed",
        ),
        (
            ProjectOutcome::TimedOut,
            "PROJECT_OUTCOME_TIMED_OUT",
            "timed_out",
        ),
        (
            ProjectOutcome::ProtocolError,
            "PROJECT_OUTCOME_PROTOCOL_ERROR",
            "protocol_error",
        ),
        (
            ProjectOutcome::RunnerFailed,
            "PROJECT_OUTCOME_RUNNER_FAILED",
            "runner_failed",
        ),
    ];

    /// The wire number (what the result digest covers).
    pub fn number(self) -> i32 {
        self as i32
    }

    /// The protobuf enum name.
    pub fn wire_name(self) -> &'static str {
        Self::ALL[self as usize].1
    }

    /// The short name (`completed`, `setup_failed`, …).
    pub fn as_str(self) -> &'static str {
        Self::ALL[self as usize].2
    }

    /// The outcome for a wire number.
    pub fn from_number(n: i64) -> Option<ProjectOutcome> {
        Self::ALL
            .iter()
            .find(|(o, _, _)| *o as i64 == n)
            .map(|(o, _, _)| *o)
    }

    fn from_wire_name(s: &str) -> Option<ProjectOutcome> {
        Self::ALL
            .iter()
            .find(|(_, w, _)| *w == s)
            .map(|(o, _, _)| *o)
    }
}

impl Serialize for ProjectOutcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.wire_name())
    }
}

impl<'de> Deserialize<'de> for ProjectOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => ProjectOutcome::from_wire_name(&s)
                .ok_or_else(|| de::Error::custom("unknown project outcome")),
            serde_json::Value::Number(n) => n
                .as_i64()
                .and_then(ProjectOutcome::from_number)
                .ok_or_else(|| de::Error::custom("unknown project outcome")),
            _ => Err(de::Error::custom("expected a project outcome")),
        }
    }
}

/// What a snippet did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct JavaScriptResult {
    /// Standard output as kept (at most the provider's cap).
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stdout: Vec<u8>,
    /// Standard error as kept.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stderr: Vec<u8>,
    /// The exit code; 124 when the deadline ended it.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_i32"
    )]
    pub exit_code: i32,
    /// The deadline ended it.
    #[serde(skip_serializing_if = "json::is_false")]
    pub timed_out: bool,
    /// Standard output was cut at the cap.
    #[serde(skip_serializing_if = "json::is_false")]
    pub stdout_truncated: bool,
    /// Standard error was cut at the cap.
    #[serde(skip_serializing_if = "json::is_false")]
    pub stderr_truncated: bool,
}

/// One project step that ran.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StepResult {
    /// The command as sent.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// Standard output as kept.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stdout: Vec<u8>,
    /// Standard error as kept.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stderr: Vec<u8>,
    /// The exit code; 124 on a deadline.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_i32"
    )]
    pub exit_code: i32,
    /// A deadline ended it.
    #[serde(skip_serializing_if = "json::is_false")]
    pub timed_out: bool,
    /// Wall time (not digested).
    #[serde(
        skip_serializing_if = "json::is_zero",
        serialize_with = "json::ser_i64",
        deserialize_with = "json::de_i64"
    )]
    pub duration_ms: i64,
    /// Standard output was cut at the cap.
    #[serde(skip_serializing_if = "json::is_false")]
    pub stdout_truncated: bool,
    /// Standard error was cut at the cap.
    #[serde(skip_serializing_if = "json::is_false")]
    pub stderr_truncated: bool,
}

/// A file collected after a project.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Artifact {
    /// The requested path.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Its bytes.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub content: Vec<u8>,
}

/// What a project did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProjectResult {
    /// One per step that ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepResult>,
    /// How the run concluded.
    #[serde(skip_serializing_if = "json::is_zero")]
    pub outcome: ProjectOutcome,
    /// Collected artifacts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Human context for the outcome.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub outcome_detail: String,
    /// Some artifacts were dropped at the cap.
    #[serde(skip_serializing_if = "json::is_false")]
    pub artifacts_truncated: bool,
}

/// One module row's result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ModuleRowResult {
    /// Status: non-negative on success.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_i32"
    )]
    pub status: i32,
    /// Outputs (NaN canonicalised when digested).
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_f64s",
        deserialize_with = "json::de_f64s"
    )]
    pub outputs: Vec<f64>,
}

/// What a module run did.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ModuleResult {
    /// One per row.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<ModuleRowResult>,
    /// Output width.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_i32"
    )]
    pub width: i32,
    /// How the run concluded.
    #[serde(skip_serializing_if = "json::is_zero")]
    pub outcome: ProjectOutcome,
    /// Human context.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub outcome_detail: String,
    /// Standard output.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stdout: Vec<u8>,
    /// Standard error.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stderr: Vec<u8>,
}

/// What a notebook cell did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CellResult {
    /// Standard output (the last expression's value is printed here).
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stdout: Vec<u8>,
    /// Standard error.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "json::ser_bytes",
        deserialize_with = "json::de_bytes"
    )]
    pub stderr: Vec<u8>,
    /// 0 ran, 1 raised, 124 deadline.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_i32"
    )]
    pub exit_code: i32,
    /// The deadline ended it (and its interpreter).
    #[serde(skip_serializing_if = "json::is_false")]
    pub timed_out: bool,
    /// Standard output was cut at the cap.
    #[serde(skip_serializing_if = "json::is_false")]
    pub stdout_truncated: bool,
    /// Standard error was cut at the cap.
    #[serde(skip_serializing_if = "json::is_false")]
    pub stderr_truncated: bool,
    /// The call began with a fresh interpreter: nothing defined earlier exists.
    #[serde(skip_serializing_if = "json::is_false")]
    pub interpreter_started: bool,
    /// The interpreter ended during or after this call.
    #[serde(skip_serializing_if = "json::is_false")]
    pub interpreter_ended: bool,
}

/// The result of whichever kind ran.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A snippet's result.
    JavaScript(JavaScriptResult),
    /// A project's result.
    Project(ProjectResult),
    /// A module run's result.
    Module(ModuleResult),
    /// A cell's result.
    Cell(CellResult),
}

impl Output {
    /// The kind's name: `javascript`, `project`, `module` or `cell`.
    pub fn kind(&self) -> &'static str {
        match self {
            Output::JavaScript(_) => "javascript",
            Output::Project(_) => "project",
            Output::Module(_) => "module",
            Output::Cell(_) => "cell",
        }
    }
}

/// Keeps at most `cap` bytes of a stream, saying whether anything was dropped.
#[derive(Debug, Clone, Default)]
pub struct CappedBuffer {
    buf: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl CappedBuffer {
    /// An empty buffer keeping at most `cap` bytes.
    pub fn new(cap: usize) -> CappedBuffer {
        CappedBuffer {
            buf: Vec::new(),
            cap,
            truncated: false,
        }
    }

    /// Appends what fits; the rest is dropped and flagged.
    pub fn push(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.buf.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Flags the stream truncated: output was lost that never arrived here
    /// (a run stopped for flooding past its transfer budget).
    pub fn mark_truncated(&mut self) {
        self.truncated = true;
    }

    /// Whether anything was dropped.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The kept bytes and the truncation flag.
    pub fn finish(self) -> (Vec<u8>, bool) {
        (self.buf, self.truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_result_is_empty_object() {
        assert_eq!(json::encode(&JavaScriptResult::default()), b"{}");
        let r = JavaScriptResult {
            stdout: b"42\n".to_vec(),
            exit_code: 2,
            ..Default::default()
        };
        assert_eq!(json::encode(&r), br#"{"stdout":"NDIK","exitCode":2}"#);
        let p = ProjectResult {
            outcome: ProjectOutcome::Completed,
            ..Default::default()
        };
        assert_eq!(
            json::encode(&p),
            br#"{"outcome":"PROJECT_OUTCOME_COMPLETED"}"#
        );
        let back: ProjectResult = json::decode(br#"{"outcome":5}"#).unwrap();
        assert_eq!(back.outcome, ProjectOutcome::RunnerFailed);
        assert!(json::decode::<ProjectResult>(br#"{"outcome":"PROJECT_OUTCOME_NEW"}"#).is_err());
    }

    #[test]
    fn capped_buffer_flags_without_marking() {
        let mut b = CappedBuffer::new(4);
        b.push(b"ab");
        assert!(!b.truncated());
        b.push(b"cdef");
        assert_eq!(b.finish(), (b"abcd".to_vec(), true));
    }
}
