//! Run records: the record (the digests of what was asked and what came back,
//! the evidence, the times, and — in a session — the chain), its own digest
//! and seal. The request and result digests it carries are [`crate::digest`]'s.
//!
//! Every digest is lowercase hex SHA-256 over a length-prefixed stream: the
//! 8-byte big-endian length of the domain, the domain, then for each field its
//! name and content the same way (`spec/wire.md` §7). plimsoll computes and
//! checks records; signing them is the caller's harness's job.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::json;

/// The record version this build writes and accepts on live answers.
pub const RECORD_VERSION: u32 = 4;

/// What a record's `policy` ends with when the run's sandbox was a warm pool
/// member (`SANDBOX_SNIPPET_POOL`): made before the run, behind the same
/// walls, and used by that run alone.
pub const WARM_POOL_POLICY: &str = ";sandbox=warm-pool";

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
    /// The id of the caller's software rule ([`crate::digest::rule_id`]).
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
pub(crate) struct Preimage(Sha256);

impl Preimage {
    pub(crate) fn new(domain: &str) -> Preimage {
        let mut p = Preimage(Sha256::new());
        p.value(domain.as_bytes());
        p
    }
    pub(crate) fn value(&mut self, b: &[u8]) {
        self.0.update((b.len() as u64).to_be_bytes());
        self.0.update(b);
    }
    pub(crate) fn bytes(&mut self, name: &str, content: &[u8]) {
        self.value(name.as_bytes());
        self.value(content);
    }
    pub(crate) fn str(&mut self, name: &str, content: &str) {
        self.bytes(name, content.as_bytes());
    }
    pub(crate) fn int(&mut self, name: &str, v: impl Into<i128>) {
        self.str(name, &v.into().to_string());
    }
    pub(crate) fn bool(&mut self, name: &str, v: bool) {
        self.str(name, if v { "true" } else { "false" });
    }
    pub(crate) fn doubles(&mut self, name: &str, vs: &[f64]) {
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
    pub(crate) fn count(&mut self, name: &str, n: usize) {
        self.int(name, n as u64);
    }
    pub(crate) fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// Lowercase hex SHA-256 of `b`.
pub fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
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
