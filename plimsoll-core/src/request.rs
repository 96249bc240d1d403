//! Requests: the envelope, the payload kinds, and every limit of the wire's §10,
//! checked before any provider is touched.
//!
//! Validation refuses with [`ErrorCode::InvalidRequest`](crate::ErrorCode)
//! (not dispatched, reason `request`). It checks shape and size only; whether a
//! provider supports a kind, and the floor and software rule, are the engine's.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::json;
use crate::tier::Floor;

/// The one protocol number this build speaks.
pub const PROTOCOL: u32 = 4;
/// Largest snippet or cell code, in bytes.
pub const MAX_CODE_BYTES: usize = 256 * 1024;
/// Most steps in a project.
pub const MAX_PROJECT_STEPS: usize = 20;
/// Largest project step, in bytes.
pub const MAX_PROJECT_STEP_BYTES: usize = 16 * 1024;
/// Most files in a project or cell.
pub const MAX_PROJECT_FILES: usize = 200;
/// Largest total file content in a project or cell, in bytes.
pub const MAX_PROJECT_FILE_BYTES: usize = 4 * 1024 * 1024;
/// Most artifacts a project may request.
pub const MAX_PROJECT_ARTIFACTS: usize = 100;
/// Longest file or artifact path, in bytes.
pub const MAX_PROJECT_PATH_BYTES: usize = 1024;
/// Longest grant profile name, in bytes.
pub const MAX_GRANT_PROFILE_BYTES: usize = 128;
/// Most identities in a software rule.
pub const MAX_RULE_IDENTITIES: usize = 32;
/// Longest software identity, in bytes.
pub const MAX_IDENTITY_BYTES: usize = 256;
/// Most module rows.
pub const MAX_MODULE_ROWS: usize = 100_000;
/// Widest module row.
pub const MAX_MODULE_WIDTH: usize = 64;
/// Largest worst-case module result, in bytes.
pub const MAX_MODULE_RESULT_BYTES: f64 = 8.0 * 1024.0 * 1024.0;
/// The daemon's ceiling on any run's budget, in milliseconds (5 minutes).
pub const MAX_RUN_TIMEOUT_MS: u32 = 300_000;

/// Which software a caller accepts: `exact` (one identity) or `approved` (1 to 32).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SoftwareRule {
    /// `exact` or `approved`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
    /// Accepted software identities, in the order sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub identities: Vec<String>,
}

impl SoftwareRule {
    /// Checks mode, count, identity charset and length, and duplicates.
    pub fn validate(&self) -> Result<()> {
        let n = self.identities.len();
        match self.mode.as_str() {
            "exact" if n == 1 => {}
            "exact" => {
                return Err(Error::invalid(
                    "software rule: mode exact takes exactly one identity",
                ));
            }
            "approved" if (1..=MAX_RULE_IDENTITIES).contains(&n) => {}
            "approved" => {
                return Err(Error::invalid(format!(
                    "software rule: mode approved takes 1 to {MAX_RULE_IDENTITIES} identities"
                )));
            }
            _ => {
                return Err(Error::invalid(
                    "software rule: mode must be exact or approved",
                ));
            }
        }
        for (i, id) in self.identities.iter().enumerate() {
            let ok_char = |b: u8| b.is_ascii_alphanumeric() || b"._:/@+-".contains(&b);
            if id.is_empty() || id.len() > MAX_IDENTITY_BYTES || !id.bytes().all(ok_char) {
                return Err(Error::invalid(format!(
                    "software rule: identity {i} must be 1 to {MAX_IDENTITY_BYTES} bytes of [A-Za-z0-9._:/@+-]"
                )));
            }
            if self.identities[..i].contains(id) {
                return Err(Error::invalid(format!(
                    "software rule: identity {i} is a duplicate"
                )));
            }
        }
        Ok(())
    }

    /// Whether `identity` satisfies the rule. An empty identity never does.
    pub fn allows(&self, identity: &str) -> bool {
        !identity.is_empty() && self.identities.iter().any(|i| i == identity)
    }

    /// The rule a session call carries: the session's rule `a` intersected
    /// with the call's own `b` (the published client's `merge_rules`), in
    /// `a`'s order. Either alone is itself. Two rules that share no identity
    /// are refused: no software satisfies both. The one rule for every caller
    /// and for the engine's check of what a call carries.
    pub fn intersect(
        a: Option<&SoftwareRule>,
        b: Option<&SoftwareRule>,
    ) -> Result<Option<SoftwareRule>> {
        match (a, b) {
            (None, None) => Ok(None),
            (Some(r), None) | (None, Some(r)) => Ok(Some(r.clone())),
            (Some(a), Some(b)) => {
                let ids: Vec<String> = a
                    .identities
                    .iter()
                    .filter(|i| b.identities.contains(i))
                    .cloned()
                    .collect();
                if ids.is_empty() {
                    return Err(Error::invalid(
                        "the call's software rule and the session's share no identity",
                    ));
                }
                let mode = if ids.len() == 1 { "exact" } else { "approved" };
                Ok(Some(SoftwareRule {
                    mode: mode.into(),
                    identities: ids,
                }))
            }
        }
    }
}

/// What every request carries besides its payload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Envelope {
    /// The protocol number; must be [`PROTOCOL`].
    pub protocol: u32,
    /// The caller's floor, in wire form (`""` for none).
    pub minimum_isolation: String,
    /// An opaque correlation id for the audit line; dropped when malformed, never digested.
    pub trace_id: String,
    /// The run's whole budget in ms; 0 means the provider's default.
    pub timeout_ms: i32,
    /// The caller's software rule.
    pub software_rule: Option<SoftwareRule>,
}

impl Envelope {
    /// A protocol-4 envelope with no floor, timeout or rule.
    pub fn new() -> Envelope {
        Envelope {
            protocol: PROTOCOL,
            ..Envelope::default()
        }
    }

    /// Checks the protocol number: missing is [`ErrorCode::ProtocolMissing`](crate::ErrorCode),
    /// another number [`ErrorCode::ProtocolMismatch`](crate::ErrorCode).
    pub fn check_protocol(&self) -> Result<()> {
        check_protocol(self.protocol)
    }

    /// Checks the floor, timeout and rule, and drops a malformed trace id.
    /// Returns the parsed floor.
    pub fn validate(&mut self) -> Result<Floor> {
        let floor =
            Floor::parse(&self.minimum_isolation).map_err(|e| Error::invalid(e.to_string()))?;
        if self.timeout_ms < 0 {
            return Err(Error::invalid("timeout must not be negative"));
        }
        if let Some(rule) = &self.software_rule {
            rule.validate()?;
        }
        if !valid_trace_id(&self.trace_id) {
            self.trace_id.clear();
        }
        Ok(floor)
    }
}

/// Checks a protocol number as every RPC but Describe does.
pub fn check_protocol(protocol: u32) -> Result<()> {
    use crate::error::ErrorCode;
    match protocol {
        PROTOCOL => Ok(()),
        0 => Err(Error::new(
            ErrorCode::ProtocolMissing,
            "the request carries no protocol number",
        )),
        n => Err(Error::new(
            ErrorCode::ProtocolMismatch,
            format!("this daemon speaks protocol {PROTOCOL}, the request protocol {n}"),
        )),
    }
}

/// Whether a trace id is 1 to 64 characters of `[A-Za-z0-9._:-]`.
pub fn valid_trace_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

/// A JavaScript snippet.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct JavaScriptRun {
    /// The source.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// A named grant profile configured on the daemon, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub grant_profile: String,
}

/// A text file written into the work directory before anything runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProjectFile {
    /// A clean relative path.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The text.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub content: String,
}

/// A multi-step project: files, shell steps run in order, artifacts to collect.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProjectRun {
    /// Files written first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ProjectFile>,
    /// Shell commands, run in order; the first failure stops the run.
    pub steps: Vec<String>,
    /// Paths to collect afterwards.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// A named grant profile, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub grant_profile: String,
}

/// One row of module parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ModuleRow {
    /// The values.
    #[serde(deserialize_with = "json::de_f64s", serialize_with = "json::ser_f64s")]
    pub values: Vec<f64>,
}

/// A compiled simulator run once per parameter row.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ModuleRun {
    /// The model id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Parameter rows, all of one width.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<ModuleRow>,
    /// Simulated end time.
    #[serde(
        deserialize_with = "json::de_f64",
        serialize_with = "json::ser_f64",
        skip_serializing_if = "json::is_zero_f64"
    )]
    pub end_time: f64,
    /// Simulated step.
    #[serde(
        deserialize_with = "json::de_f64",
        serialize_with = "json::ser_f64",
        skip_serializing_if = "json::is_zero_f64"
    )]
    pub step: f64,
}

/// A notebook cell: code for a kept interpreter (sessions only).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CellRun {
    /// `javascript` or `python`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub language: String,
    /// The source.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// Files written into the work directory first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ProjectFile>,
}

/// The one thing a request asks to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// A JavaScript snippet.
    JavaScript(JavaScriptRun),
    /// A project.
    Project(ProjectRun),
    /// A module run.
    Module(ModuleRun),
    /// A notebook cell.
    Cell(CellRun),
}

impl Payload {
    /// The kind's name: `javascript`, `project`, `module` or `cell`.
    pub fn kind(&self) -> &'static str {
        match self {
            Payload::JavaScript(_) => "javascript",
            Payload::Project(_) => "project",
            Payload::Module(_) => "module",
            Payload::Cell(_) => "cell",
        }
    }

    /// The grant profile named, or `""`.
    pub fn grant_profile(&self) -> &str {
        match self {
            Payload::JavaScript(j) => &j.grant_profile,
            Payload::Project(p) => &p.grant_profile,
            Payload::Module(_) | Payload::Cell(_) => "",
        }
    }

    /// Checks every size and shape limit of the kind.
    pub fn validate(&self) -> Result<()> {
        match self {
            Payload::JavaScript(j) => {
                validate_code(&j.code)?;
                validate_profile(&j.grant_profile)
            }
            Payload::Project(p) => validate_project(p),
            Payload::Module(m) => validate_module(m),
            Payload::Cell(c) => {
                if c.language != "javascript" && c.language != "python" {
                    return Err(Error::invalid("cell language must be javascript or python"));
                }
                validate_code(&c.code)?;
                validate_files(&c.files)
            }
        }
    }
}

/// A whole request: envelope and payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The envelope.
    pub envelope: Envelope,
    /// The payload.
    pub payload: Payload,
}

impl Request {
    /// A protocol-4 request for `payload` with no floor, timeout or rule.
    pub fn new(payload: Payload) -> Request {
        Request {
            envelope: Envelope::new(),
            payload,
        }
    }
}

fn validate_code(code: &str) -> Result<()> {
    if code.is_empty() {
        return Err(Error::invalid("code is required"));
    }
    if code.contains('\0') {
        return Err(Error::invalid("code must be valid UTF-8 without NUL bytes"));
    }
    if code.len() > MAX_CODE_BYTES {
        return Err(Error::invalid(format!(
            "code exceeds {MAX_CODE_BYTES} bytes"
        )));
    }
    Ok(())
}

fn validate_profile(p: &str) -> Result<()> {
    if p.len() > MAX_GRANT_PROFILE_BYTES {
        return Err(Error::invalid(format!(
            "grant profile name exceeds {MAX_GRANT_PROFILE_BYTES} bytes"
        )));
    }
    if p.chars().any(char::is_control) {
        return Err(Error::invalid(
            "grant profile name must not contain control characters",
        ));
    }
    Ok(())
}

/// Checks a file or artifact path: relative, already clean, at most 1024 bytes,
/// no backslash, C0, DEL or C1 character.
pub fn validate_path(kind: &str, p: &str) -> Result<()> {
    if p.len() > MAX_PROJECT_PATH_BYTES {
        return Err(Error::invalid(format!(
            "{kind} path exceeds {MAX_PROJECT_PATH_BYTES} bytes"
        )));
    }
    let unsafe_path = p.is_empty()
        || p.split('/').any(|s| s.is_empty() || s == "." || s == "..")
        || p.contains('\\')
        || p.chars()
            .any(|c| (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)));
    if unsafe_path {
        return Err(Error::invalid(format!("unsafe {kind} path")));
    }
    Ok(())
}

fn validate_files(files: &[ProjectFile]) -> Result<()> {
    if files.len() > MAX_PROJECT_FILES {
        return Err(Error::invalid(format!(
            "too many files (max {MAX_PROJECT_FILES})"
        )));
    }
    let mut total = 0usize;
    for (i, f) in files.iter().enumerate() {
        validate_path("file", &f.path)?;
        if files[..i].iter().any(|g| g.path == f.path) {
            return Err(Error::invalid(format!("duplicate file path (file {i})")));
        }
        total += f.content.len();
    }
    if total > MAX_PROJECT_FILE_BYTES {
        return Err(Error::invalid(format!(
            "file content exceeds {MAX_PROJECT_FILE_BYTES} bytes in total"
        )));
    }
    Ok(())
}

fn validate_project(p: &ProjectRun) -> Result<()> {
    if p.steps.is_empty() {
        return Err(Error::invalid("at least one step is required"));
    }
    if p.steps.len() > MAX_PROJECT_STEPS {
        return Err(Error::invalid(format!(
            "too many steps (max {MAX_PROJECT_STEPS})"
        )));
    }
    for (i, s) in p.steps.iter().enumerate() {
        if s.contains('\0') {
            return Err(Error::invalid(format!(
                "step {i} must be valid UTF-8 without NUL bytes"
            )));
        }
        if s.len() > MAX_PROJECT_STEP_BYTES {
            return Err(Error::invalid(format!(
                "step {i} exceeds {MAX_PROJECT_STEP_BYTES} bytes"
            )));
        }
    }
    validate_files(&p.files)?;
    if p.artifacts.len() > MAX_PROJECT_ARTIFACTS {
        return Err(Error::invalid(format!(
            "too many artifacts (max {MAX_PROJECT_ARTIFACTS})"
        )));
    }
    for (i, a) in p.artifacts.iter().enumerate() {
        validate_path("artifact", a)?;
        if p.artifacts[..i].contains(a) {
            return Err(Error::invalid(format!(
                "duplicate artifact path (artifact {i})"
            )));
        }
    }
    validate_profile(&p.grant_profile)
}

fn validate_module(m: &ModuleRun) -> Result<()> {
    let model_ok = {
        let b = m.model.as_bytes();
        (1..=64).contains(&b.len())
            && b[0].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c))
    };
    if !model_ok {
        return Err(Error::invalid(
            "model must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}",
        ));
    }
    if m.rows.is_empty() || m.rows.len() > MAX_MODULE_ROWS {
        return Err(Error::invalid(format!(
            "a module run takes 1 to {MAX_MODULE_ROWS} rows"
        )));
    }
    let width = m.rows[0].values.len();
    if !(1..=MAX_MODULE_WIDTH).contains(&width) {
        return Err(Error::invalid(format!(
            "rows take 1 to {MAX_MODULE_WIDTH} values"
        )));
    }
    for r in &m.rows {
        if r.values.len() != width {
            return Err(Error::invalid("every row must have the same width"));
        }
        if r.values.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid("every value must be finite"));
        }
    }
    if !(m.end_time.is_finite() && m.end_time > 0.0 && m.step.is_finite() && m.step > 0.0) {
        return Err(Error::invalid(
            "endTime and step must be positive and finite",
        ));
    }
    let steps = m.end_time / m.step;
    if steps > 1_000_000.0 {
        return Err(Error::invalid("endTime/step must not exceed 1000000"));
    }
    let worst = 20.0 + m.rows.len() as f64 * (4.0 + 8.0 * (steps.floor() + 2.0));
    if worst > MAX_MODULE_RESULT_BYTES {
        return Err(Error::invalid("the worst-case module result exceeds 8 MiB"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
