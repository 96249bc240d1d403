//! Docker's REST resources as the provider reads them (`Sandbox`, the
//! network policy in force), the create it sends, and the verdicts a
//! read-back is held to before any code goes in.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::sandbox::{INSTANCE_LABEL, LEASE_LABEL, LIFETIME_LABEL};
use crate::loopback::is_loopback_url;

/// A sandbox as Docker answered it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Sandbox {
    /// `uid`.
    pub uid: String,
    /// `displayName`.
    pub display_name: String,
    /// `core.status`.
    pub status: String,
    /// The `ETag` header, else `core.etag`.
    pub etag: String,
    /// `core.createdAt` (`None`: missing or unreadable).
    pub created: Option<SystemTime>,
    /// `core.imageRef`.
    pub image_ref: String,
    /// `core.resources.cpus`.
    pub cpus: Option<u64>,
    /// `core.resources.memoryMib` (a number or a string).
    pub memory_mib: Option<u64>,
    /// `core.labels`.
    pub labels: BTreeMap<String, String>,
    /// `core.endpoint.uri`.
    pub endpoint: String,
    /// `core.endpoint.capabilities`.
    pub capabilities: Vec<String>,
    /// `failure.message`, while failed.
    pub failure: String,
    /// The lease it was created under (REST: its lease label; Connect: its
    /// name after the instance prefix).
    pub lease: String,
    /// The instance that made it, where the contract says (REST: its
    /// instance label, empty when missing; Connect: `None`, the name's
    /// prefix is all there is).
    pub instance: Option<String>,
    /// Its declared lifetime, seconds (REST: its lifetime label; Connect:
    /// its expiry less its creation).
    pub lifetime: Option<String>,
    /// The digest it booted (Connect's `cloud.imageDigest`; REST has none).
    pub image_digest: String,
}

/// A 64-bit integer, which Docker sends as a string (a number is accepted).
fn int(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

impl Sandbox {
    /// Reads a `Sandbox` (`etag`: the header, preferred to `core.etag`).
    pub(crate) fn parse(v: &Value, etag: Option<String>) -> Result<Sandbox, String> {
        let s = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let uid = s("/uid");
        if !super::api::id_ok(&uid) {
            return Err("the answer names no usable sandbox uid".into());
        }
        let labels: BTreeMap<String, String> = v
            .pointer("/core/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let capabilities = v
            .pointer("/core/endpoint/capabilities")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Sandbox {
            uid,
            display_name: s("/displayName"),
            status: s("/core/status"),
            etag: etag
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| s("/core/etag")),
            created: parse_rfc3339(&s("/core/createdAt")),
            image_ref: s("/core/imageRef"),
            cpus: int(v.pointer("/core/resources/cpus")),
            memory_mib: int(v.pointer("/core/resources/memoryMib")),
            endpoint: s("/core/endpoint/uri"),
            capabilities,
            failure: s("/failure/message"),
            lease: labels.get(LEASE_LABEL).cloned().unwrap_or_default(),
            instance: Some(labels.get(INSTANCE_LABEL).cloned().unwrap_or_default()),
            lifetime: labels.get(LIFETIME_LABEL).cloned(),
            image_digest: String::new(),
            labels,
        })
    }
}

/// The effective part of a network-policies answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Policy {
    /// `effective.mode`.
    pub mode: String,
    /// `effective.allowNetworks[].network`.
    pub allow: Vec<String>,
}

impl Policy {
    /// Reads `{"effective": {...}}`.
    pub(crate) fn parse(v: &Value) -> Policy {
        Policy {
            mode: v
                .pointer("/effective/mode")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            allow: v
                .pointer("/effective/allowNetworks")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|n| match n.get("network").and_then(Value::as_str) {
                            Some(s) => s.to_owned(),
                            None => n.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// `None` when it denies everything and allows nothing; else what is wrong.
    pub(crate) fn closed(&self) -> Option<String> {
        self.allows_only(None)
    }

    /// `None` when it denies everything but `rule` (nothing, when `None`);
    /// else what is wrong.
    pub(crate) fn allows_only(&self, rule: Option<&str>) -> Option<String> {
        if self.mode != "denyAll" {
            return Some(format!("its mode is {:?}, not denyAll", self.mode));
        }
        let want: Vec<&str> = rule.into_iter().collect();
        if self.allow != want {
            return Some(if self.allow.is_empty() {
                "it allows nothing, not the guard rule".to_owned()
            } else {
                format!("it allows {}", self.allow.join(", "))
            });
        }
        None
    }
}

/// What a create asks for.
#[derive(Debug, Clone)]
pub(crate) struct Spec<'a> {
    /// `displayNamePrefix`.
    pub prefix: &'a str,
    /// `imageRef`, pinned.
    pub image: &'a str,
    /// `resources`.
    pub cpus: u32,
    /// `resources.memoryMib`.
    pub memory_mib: u32,
    /// `labels`.
    pub labels: &'a BTreeMap<String, String>,
    /// `features.timeouts.timeout`: the cloud deletes it after this.
    pub lifetime: Duration,
}

impl Spec<'_> {
    /// The `CreateSandboxRequest`. It never carries `networkPolicies`:
    /// Docker refuses them while the account's policy governs, and that
    /// policy is read back instead.
    pub(crate) fn body(&self) -> Value {
        json!({
            "displayNamePrefix": self.prefix,
            "imageRef": self.image,
            "platform": {"os": "linux", "architecture": "amd64"},
            "resources": {"cpus": self.cpus, "memoryMib": self.memory_mib},
            "labels": self.labels,
            "startupExecution": {"rawImage": {"start": {"argv": ["sleep", "infinity"]}}},
            "features": {"timeouts": {
                "timeout": format!("{}s", self.lifetime.as_secs().max(1)),
                "onTimeout": "delete",
            }},
        })
    }

    /// What is wrong with `s` as this create's sandbox, ready for code;
    /// empty when nothing is.
    pub(crate) fn wrong(&self, s: &Sandbox) -> Vec<String> {
        let mut wrong = Vec::new();
        if s.status != "running" {
            wrong.push(format!("status {:?}", s.status));
        }
        if s.image_ref != self.image {
            wrong.push(format!("imageRef {:?}", s.image_ref));
        }
        if s.cpus != Some(u64::from(self.cpus)) || s.memory_mib != Some(u64::from(self.memory_mib))
        {
            wrong.push(format!(
                "resources {:?} CPU / {:?} MiB (asked {} / {})",
                s.cpus, s.memory_mib, self.cpus, self.memory_mib
            ));
        }
        for (k, v) in self.labels {
            if s.labels.get(k) != Some(v) {
                wrong.push(format!("label {k} is not this run's"));
            }
        }
        if !s.display_name.starts_with(self.prefix) {
            wrong.push(format!("displayName {:?}", s.display_name));
        }
        match url::Url::parse(&s.endpoint) {
            Ok(u) if u.scheme() == "https" || (u.scheme() == "http" && is_loopback_url(&u)) => {}
            _ => wrong.push(format!("endpoint {:?} is not https", s.endpoint)),
        }
        for cap in ["exec", "upload", "download"] {
            if !s.capabilities.iter().any(|c| c == cap) {
                wrong.push(format!("its endpoint lacks {cap}"));
            }
        }
        wrong
    }
}

/// An RFC 3339 timestamp (`2026-12-04T10:00:00.5Z`, `…+01:00`) as a time.
pub(crate) fn parse_rfc3339(t: &str) -> Option<SystemTime> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let n = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, s) = (n(11..13)?, n(14..16)?, n(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &t[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = rest.get(1..)?.split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    // Howard Hinnant's days_from_civil.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset;
    u64::try_from(secs)
        .ok()
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
