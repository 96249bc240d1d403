//! Run records: byte-exact digests of what was asked and what came back, the
//! evidence, the times, and — in a session — the chain.
//!
//! Every digest is lowercase hex SHA-256 over a length-prefixed stream: the
//! 8-byte big-endian length of the domain, the domain, then for each field its
//! name and content the same way (`spec/wire.md` §7). plimsoll computes and
//! checks records; signing them is the caller's harness's job.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::request::{Envelope, Payload, SoftwareRule};
use crate::result::Output;
use crate::wire::json;

/// The record version this build writes and accepts on live answers.
pub const RECORD_VERSION: u32 = 4;

/// A run record (version 4), as it travels in `RunResponse.record`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RunRecord {
    /// Record version: 4.
    #[serde(
        skip_serializing_if = "json::is_zero",
        deserialize_with = "json::de_u32"
    )]
    pub version: u32,
    /// Digest of the request as sent.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub request_sha256: String,
    /// Digest of the result as sent; empty on an unanswered record.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub result_sha256: String,
    /// The provider (equals the response's `sandbox`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// The tier that ran.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub isolation: String,
    /// The content-addressed environment, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub environment: String,
    /// The provider's policy digest, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub policy: String,
    /// When the daemon received the request (Unix ms).
    #[serde(
        skip_serializing_if = "json::is_zero",
        serialize_with = "json::ser_i64",
        deserialize_with = "json::de_i64"
    )]
    pub started_unix_ms: i64,
    /// The start plus monotonic elapsed time: never before the start.
    #[serde(
        skip_serializing_if = "json::is_zero",
        serialize_with = "json::ser_i64",
        deserialize_with = "json::de_i64"
    )]
    pub ended_unix_ms: i64,
    /// The session fingerprint, or empty for a single run.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub session: String,
    /// The call's place in the session (1-based), 0 for a single run.
    #[serde(
        skip_serializing_if = "json::is_zero",
        serialize_with = "json::ser_u64",
        deserialize_with = "json::de_u64"
    )]
    pub sequence: u64,
    /// The previous call's record digest, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub previous_sha256: String,
    /// This record's digest.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub record_sha256: String,
    /// The software that ran.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub software_identity: String,
    /// The id of the caller's software rule ([`rule_id`]).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub software_rule_id: String,
    /// On a call that may have run but failed: the error's Connect code.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unanswered: String,
    /// A typed reference to the daemon instance, or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub instance: String,
}

/// A length-prefixed digest preimage under construction.
struct Preimage(Sha256);

impl Preimage {
    fn new(domain: &str) -> Preimage {
        let mut p = Preimage(Sha256::new());
        p.value(domain.as_bytes());
        p
    }
    fn value(&mut self, b: &[u8]) {
        self.0.update((b.len() as u64).to_be_bytes());
        self.0.update(b);
    }
    fn bytes(&mut self, name: &str, content: &[u8]) {
        self.value(name.as_bytes());
        self.value(content);
    }
    fn str(&mut self, name: &str, content: &str) {
        self.bytes(name, content.as_bytes());
    }
    fn int(&mut self, name: &str, v: impl Into<i128>) {
        self.str(name, &v.into().to_string());
    }
    fn bool(&mut self, name: &str, v: bool) {
        self.str(name, if v { "true" } else { "false" });
    }
    fn doubles(&mut self, name: &str, vs: &[f64]) {
        let mut b = Vec::with_capacity(vs.len() * 8);
        for v in vs {
            let bits = if v.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                v.to_bits()
            };
            b.extend_from_slice(&bits.to_be_bytes());
        }
        self.bytes(name, &b);
    }
    fn count(&mut self, name: &str, n: usize) {
        self.int(name, n as u64);
    }
    fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// Lowercase hex SHA-256 of `b`.
pub fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The request digest (`requestSha256`) over the envelope and payload as sent.
/// Trace id, session id, languages and owner are not covered.
pub fn request_digest(env: &Envelope, payload: Option<&Payload>) -> String {
    let v2 = env.protocol >= 2;
    let mut p = Preimage::new(if v2 {
        "plimsoll.run-request.v2"
    } else {
        "plimsoll.run-request.v1"
    });
    p.int("protocol", env.protocol);
    p.str("minimum_isolation", &env.minimum_isolation);
    p.int("timeout_ms", env.timeout_ms);
    if v2 {
        let (mode, ids): (&str, &[String]) = match &env.software_rule {
            Some(r) => (&r.mode, &r.identities),
            None => ("", &[]),
        };
        p.str("software_mode", mode);
        p.count("software_identities", ids.len());
        for id in ids {
            p.str("software_identity", id);
        }
    }
    let files = |p: &mut Preimage, files: &[crate::request::ProjectFile]| {
        p.count("files", files.len());
        for f in files {
            p.str("file_path", &f.path);
            p.str("file_content", &f.content);
        }
    };
    match payload {
        None => p.str("kind", ""),
        Some(Payload::JavaScript(j)) => {
            p.str("kind", "javascript");
            p.str("code", &j.code);
            p.str("grant_profile", &j.grant_profile);
        }
        Some(Payload::Cell(c)) => {
            p.str("kind", "cell");
            p.str("language", &c.language);
            p.str("code", &c.code);
            files(&mut p, &c.files);
        }
        Some(Payload::Project(pr)) => {
            p.str("kind", "project");
            p.str("grant_profile", &pr.grant_profile);
            files(&mut p, &pr.files);
            p.count("steps", pr.steps.len());
            for s in &pr.steps {
                p.str("step_command", s);
            }
            p.count("artifacts", pr.artifacts.len());
            for a in &pr.artifacts {
                p.str("artifact_path", a);
            }
        }
        Some(Payload::Module(m)) => {
            p.str("kind", "module");
            p.str("model", &m.model);
            p.doubles("end_time", &[m.end_time]);
            p.doubles("step", &[m.step]);
            p.count("rows", m.rows.len());
            for r in &m.rows {
                p.doubles("row_values", &r.values);
            }
        }
    }
    p.finish()
}

/// The result digest (`resultSha256`). Durations, advice and evidence are not covered.
pub fn result_digest(output: Option<&Output>) -> String {
    let mut p = Preimage::new("plimsoll.run-result.v1");
    let streams = |p: &mut Preimage,
                   exit: i32,
                   timed_out: bool,
                   out: &[u8],
                   err: &[u8],
                   ot: bool,
                   et: bool| {
        p.int("exit_code", exit);
        p.bool("timed_out", timed_out);
        p.bytes("stdout", out);
        p.bytes("stderr", err);
        p.bool("stdout_truncated", ot);
        p.bool("stderr_truncated", et);
    };
    match output {
        None => p.str("kind", ""),
        Some(Output::JavaScript(r)) => {
            p.str("kind", "javascript");
            streams(
                &mut p,
                r.exit_code,
                r.timed_out,
                &r.stdout,
                &r.stderr,
                r.stdout_truncated,
                r.stderr_truncated,
            );
        }
        Some(Output::Cell(r)) => {
            p.str("kind", "cell");
            streams(
                &mut p,
                r.exit_code,
                r.timed_out,
                &r.stdout,
                &r.stderr,
                r.stdout_truncated,
                r.stderr_truncated,
            );
            p.bool("interpreter_started", r.interpreter_started);
            p.bool("interpreter_ended", r.interpreter_ended);
        }
        Some(Output::Project(r)) => {
            p.str("kind", "project");
            p.int("outcome", r.outcome.number());
            p.str("outcome_detail", &r.outcome_detail);
            p.bool("artifacts_truncated", r.artifacts_truncated);
            p.count("steps", r.steps.len());
            for s in &r.steps {
                p.str("step_command", &s.command);
                p.int("step_exit_code", s.exit_code);
                p.bool("step_timed_out", s.timed_out);
                p.bytes("step_stdout", &s.stdout);
                p.bytes("step_stderr", &s.stderr);
                p.bool("step_stdout_truncated", s.stdout_truncated);
                p.bool("step_stderr_truncated", s.stderr_truncated);
            }
            p.count("artifacts", r.artifacts.len());
            for a in &r.artifacts {
                p.str("artifact_path", &a.path);
                p.bytes("artifact_content", &a.content);
            }
        }
        Some(Output::Module(r)) => {
            p.str("kind", "module");
            p.int("outcome", r.outcome.number());
            p.str("outcome_detail", &r.outcome_detail);
            p.int("width", r.width);
            p.bytes("stdout", &r.stdout);
            p.bytes("stderr", &r.stderr);
            p.count("runs", r.runs.len());
            for run in &r.runs {
                p.int("run_status", run.status);
                p.doubles("run_outputs", &run.outputs);
            }
        }
    }
    p.finish()
}

/// The record digest (`recordSha256`) for versions 1 to 4; `None` for any other version.
pub fn record_digest(r: &RunRecord) -> Option<String> {
    if !(1..=4).contains(&r.version) {
        return None;
    }
    let mut p = Preimage::new(&format!("plimsoll.run-record.v{}", r.version));
    p.str("request_sha256", &r.request_sha256);
    p.str("result_sha256", &r.result_sha256);
    if r.version >= 3 {
        p.str("unanswered", &r.unanswered);
    }
    p.str("provider", &r.provider);
    p.str("isolation", &r.isolation);
    p.str("environment", &r.environment);
    p.str("policy", &r.policy);
    if r.version >= 2 {
        p.str("software_identity", &r.software_identity);
        p.str("software_rule_id", &r.software_rule_id);
    }
    if r.version >= 4 {
        p.str("instance", &r.instance);
    }
    p.int("started_unix_ms", r.started_unix_ms);
    p.int("ended_unix_ms", r.ended_unix_ms);
    p.str("session", &r.session);
    p.int("sequence", r.sequence);
    p.str("previous_sha256", &r.previous_sha256);
    Some(p.finish())
}

/// Seals a record: sets `record_sha256` to its digest. The version must be 1 to 4.
pub fn seal(r: &mut RunRecord) {
    r.record_sha256 = record_digest(r).unwrap_or_default();
}

/// The software rule id: `""` with no rule, `exact:<id>` for one identity, else
/// `approved:sha256:<hex>` over the identities sorted bytewise and joined by NUL.
pub fn rule_id(rule: Option<&SoftwareRule>) -> String {
    match rule {
        None => String::new(),
        Some(r) if r.identities.len() == 1 => format!("exact:{}", r.identities[0]),
        Some(r) => {
            let mut ids: Vec<&[u8]> = r.identities.iter().map(|s| s.as_bytes()).collect();
            ids.sort();
            format!("approved:sha256:{}", sha256_hex(&ids.join(&0u8)))
        }
    }
}

/// A session's fingerprint: hex SHA-256 of its id. The id is a capability; the
/// fingerprint is what records, logs and answers carry.
pub fn session_fingerprint(session_id: &str) -> String {
    sha256_hex(session_id.as_bytes())
}

/// The owner digest a client sends at OpenSession: an HMAC of the owner's name
/// keyed by the client's token, so the name itself never travels.
pub fn owner_digest(token: &str, owner: &str) -> String {
    let key = Sha256::digest(format!("plimsoll session owner key v2\n{token}").as_bytes());
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(format!("plimsoll session owner v2\n{owner}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Whether an instance reference is empty or `[a-z][a-z0-9-]{0,31}:[A-Za-z0-9._:-]{1,127}`.
pub fn valid_instance(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let Some((kind, rest)) = s.split_once(':') else {
        return false;
    };
    let kb = kind.as_bytes();
    !kb.is_empty()
        && kb.len() <= 32
        && kb[0].is_ascii_lowercase()
        && kb
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && (1..=127).contains(&rest.len())
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

#[cfg(test)]
mod tests;
