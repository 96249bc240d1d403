//! E2B's REST control plane (`spec/openapi.yml`, "E2B API" v0.1.0; notes in
//! `docs/research/hosted-providers.md` §1.1): create, read back, list by
//! metadata, and kill, with the API key in `X-API-Key` and nothing else.
//!
//! A create is always `secure` (envd then demands its access token), with
//! outbound traffic denied (`allow_internet_access: false` and `denyOut
//! 0.0.0.0/0`) and the VM's metadata stamped before it is sent, so a VM
//! whose answer is lost can still be found and killed. An answer without
//! the envd token is refused: knowing a VM's address is not permission.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};
use url::Url;

use crate::error::{Error, Result};
use crate::provider::hosted::http::{Answer, Http, excerpt};
use crate::secret::Secret;

/// How long one control-plane call may take (a create boots a VM).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The most an answer may carry.
const ANSWER_LIMIT: usize = 1 << 20;

/// A granted VM's one way out: its guard host, and the run's guard
/// credential E2B's egress proxy adds to every request to that host.
#[derive(Clone, Copy)]
pub(crate) struct GuardRule<'a> {
    /// The guard's DNS name (`allowOut` and the rule's key).
    pub host: &'a str,
    /// `crg_<64 hex>`; it goes to E2B in the create, and nowhere else.
    pub credential: &'a Secret,
}

/// The create's body: secure, outbound traffic denied (`allow_internet_access:
/// false` and `denyOut 0.0.0.0/0`), and for a granted run the guard's host
/// allowed (E2B: allowed entries take precedence over denied ones) with a
/// header rule that adds the run's guard credential.
pub(crate) fn create_body(
    template: &str,
    ttl: Duration,
    metadata: &BTreeMap<String, String>,
    guard: Option<GuardRule<'_>>,
) -> Value {
    let mut network = json!({"denyOut": ["0.0.0.0/0"]});
    if let Some(g) = guard {
        network["allowOut"] = json!([g.host]);
        network["rules"] = json!({
            g.host: [{"transform": {"headers": {
                "Authorization": format!("Bearer {}", g.credential.expose()),
            }}}],
        });
    }
    json!({
        "templateID": template,
        "timeout": ttl.as_secs().clamp(1, i32::MAX as u64),
        "autoPause": false,
        "secure": true,
        "allow_internet_access": false,
        "network": network,
        "metadata": metadata,
    })
}

/// A created VM, as the create answered.
#[derive(Debug)]
pub(crate) struct Created {
    /// `sandboxID`, checked to be `[A-Za-z0-9-]`.
    pub id: String,
    /// `envdVersion`.
    pub envd_version: String,
    /// `envdAccessToken`.
    pub envd_token: Secret,
    /// `domain`, when it names one.
    pub domain: Option<String>,
}

/// A VM as read back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Detail {
    /// `state`: `running` or `paused`.
    pub state: String,
    /// `cpuCount`.
    pub cpu_count: u32,
    /// `memoryMB`.
    pub memory_mb: u32,
    /// `diskSizeMB`.
    pub disk_size_mb: u32,
    /// `metadata`.
    pub metadata: BTreeMap<String, String>,
    /// `allowInternetAccess` (absent: `None`).
    pub internet: Option<bool>,
    /// `network.denyOut`.
    pub deny_out: Vec<String>,
    /// `network.allowOut`.
    pub allow_out: Vec<String>,
    /// The hosts `network.rules` names (never their headers), when it is there.
    pub rule_hosts: Option<Vec<String>>,
}

/// The control plane.
#[derive(Clone)]
pub(crate) struct Api {
    http: Http,
    base: Url,
    key: Arc<Secret>,
}

/// Whether `id` may name a VM in a host or a path.
pub(crate) fn id_ok(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
}

impl Api {
    pub(crate) fn new(http: Http, base: Url, key: Arc<Secret>) -> Api {
        Api { http, base, key }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.as_str().trim_end_matches('/'))
    }

    async fn send(
        &self,
        what: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer> {
        let mut req = Request::builder()
            .method(method)
            .uri(self.url(path))
            .header("x-api-key", self.key.expose())
            .header("accept", "application/json")
            .header(
                "user-agent",
                concat!("plimsoll/", env!("CARGO_PKG_VERSION")),
            );
        let body = match body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Bytes::from(v.to_string())
            }
            None => Bytes::new(),
        };
        let req = req
            .body(Full::new(body))
            .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
        self.http.call(what, req, CALL_TIMEOUT, ANSWER_LIMIT).await
    }

    /// E2B's refusal as an error: the key scrubbed, and every guard
    /// credential too (a create's error may echo its network rules).
    fn fail(&self, what: &str, a: &Answer) -> Error {
        Error::infrastructure(format!(
            "{what}: E2B answered {}: {}",
            a.status.as_u16(),
            excerpt(&a.body, &[self.key.expose()])
        ))
    }

    /// Creates a VM from `template` that lives `ttl` at most, stamped with
    /// `metadata`, secure, with no way out but `guard`'s host when given.
    pub(crate) async fn create(
        &self,
        template: &str,
        ttl: Duration,
        metadata: &BTreeMap<String, String>,
        guard: Option<GuardRule<'_>>,
    ) -> Result<Created> {
        let what = "creating an E2B sandbox";
        let body = create_body(template, ttl, metadata, guard);
        let a = self
            .send(what, Method::POST, "/sandboxes", Some(body))
            .await?;
        if a.status != StatusCode::CREATED {
            return Err(self.fail(what, &a));
        }
        let v: Value = serde_json::from_slice(&a.body)
            .map_err(|_| Error::infrastructure(format!("{what}: the answer is not JSON")))?;
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = text("sandboxID").unwrap_or_default();
        if !id_ok(&id) {
            return Err(Error::infrastructure(format!(
                "{what}: the answer names no usable sandbox id"
            )));
        }
        let Some(token) = text("envdAccessToken").filter(|t| !t.is_empty()) else {
            let killed = match self.kill(&id).await {
                Ok(()) => "killed".to_owned(),
                Err(e) => format!("not killed ({e}); the orphan reconcile will"),
            };
            return Err(Error::infrastructure(format!(
                "{what}: the answer for sandbox {id} carries no envd access token though the \
                 create asked for a secure sandbox; the provider never runs without it, so the \
                 sandbox is refused and {killed}"
            )));
        };
        Ok(Created {
            id,
            envd_version: text("envdVersion").unwrap_or_default(),
            envd_token: Secret::new(token),
            domain: text("domain").filter(|d| !d.is_empty()),
        })
    }

    /// Reads a VM back.
    pub(crate) async fn detail(&self, id: &str) -> Result<Detail> {
        let what = "reading an E2B sandbox back";
        let a = self
            .send(what, Method::GET, &format!("/sandboxes/{id}"), None)
            .await?;
        if a.status != StatusCode::OK {
            return Err(self.fail(what, &a));
        }
        let v: Value = serde_json::from_slice(&a.body)
            .map_err(|_| Error::infrastructure(format!("{what}: the answer is not JSON")))?;
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| Error::infrastructure(format!("{what}: no {k} in the answer")))
        };
        let list = |k: &str| -> Vec<String> {
            v.pointer(&format!("/network/{k}"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Detail {
            state: v
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            cpu_count: num("cpuCount")?,
            memory_mb: num("memoryMB")?,
            disk_size_mb: num("diskSizeMB")?,
            metadata: strings(v.get("metadata")),
            internet: v.get("allowInternetAccess").and_then(Value::as_bool),
            deny_out: list("denyOut"),
            allow_out: list("allowOut"),
            rule_hosts: v
                .pointer("/network/rules")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect()),
        })
    }

    /// The ids of the running and paused VMs whose metadata has `key=value`.
    pub(crate) async fn list(
        &self,
        key: &str,
        value: &str,
    ) -> Result<Vec<(String, BTreeMap<String, String>)>> {
        let what = "listing E2B sandboxes";
        let filter: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair(key, value)
            .finish();
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..100 {
            let query = {
                let mut q = url::form_urlencoded::Serializer::new(String::new());
                q.append_pair("metadata", &filter)
                    .append_pair("state", "running,paused")
                    .append_pair("limit", "100");
                if let Some(t) = &next {
                    q.append_pair("nextToken", t);
                }
                q.finish()
            };
            let path = format!("/v2/sandboxes?{query}");
            let a = self.send(what, Method::GET, &path, None).await?;
            if a.status != StatusCode::OK {
                return Err(self.fail(what, &a));
            }
            let v: Value = serde_json::from_slice(&a.body)
                .map_err(|_| Error::infrastructure(format!("{what}: the answer is not JSON")))?;
            for s in v.as_array().into_iter().flatten() {
                let id = s
                    .get("sandboxID")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if id_ok(id) {
                    out.push((id.to_owned(), strings(s.get("metadata"))));
                }
            }
            next = a
                .headers
                .get("x-next-token")
                .and_then(|t| t.to_str().ok())
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            if next.is_none() {
                break;
            }
        }
        Ok(out)
    }

    /// Whether E2B still knows VM `id` (running or paused).
    pub(crate) async fn exists(&self, id: &str) -> Result<bool> {
        let what = "reading an E2B sandbox back";
        let a = self
            .send(what, Method::GET, &format!("/sandboxes/{id}"), None)
            .await?;
        match a.status {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.fail(what, &a)),
        }
    }

    /// Pauses a VM (`POST /sandboxes/{id}/pause`): its disk is kept, its
    /// processes end for plimsoll's purposes. One already paused is paused.
    pub(crate) async fn pause(&self, id: &str) -> Result<()> {
        let what = "pausing an E2B sandbox";
        let a = self
            .send(what, Method::POST, &format!("/sandboxes/{id}/pause"), None)
            .await?;
        match a.status {
            StatusCode::NO_CONTENT | StatusCode::OK | StatusCode::CONFLICT => Ok(()),
            _ => Err(self.fail(what, &a)),
        }
    }

    /// Resumes a paused VM, or keeps a running one, for `ttl` more at most
    /// (`POST /sandboxes/{id}/connect`: 200 running, 201 resumed).
    pub(crate) async fn connect(&self, id: &str, ttl: Duration) -> Result<()> {
        let what = "resuming an E2B sandbox";
        let body = serde_json::json!({"timeout": ttl.as_secs().max(1)});
        let a = self
            .send(
                what,
                Method::POST,
                &format!("/sandboxes/{id}/connect"),
                Some(body),
            )
            .await?;
        match a.status {
            StatusCode::OK | StatusCode::CREATED => Ok(()),
            _ => Err(self.fail(what, &a)),
        }
    }

    /// Kills a VM; one already gone counts as killed.
    pub(crate) async fn kill(&self, id: &str) -> Result<()> {
        let what = "killing an E2B sandbox";
        let a = self
            .send(what, Method::DELETE, &format!("/sandboxes/{id}"), None)
            .await?;
        match a.status {
            StatusCode::NO_CONTENT | StatusCode::OK | StatusCode::NOT_FOUND => Ok(()),
            _ => Err(self.fail(what, &a)),
        }
    }
}

fn strings(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_granted_create_allows_only_the_guard_host_with_its_header_rule() {
        let credential = Secret::new(format!("crg_{}", "ab".repeat(32)));
        let metadata = BTreeMap::from([("plimsoll-lease".to_owned(), "l1".to_owned())]);
        let rule = GuardRule {
            host: "guard.example.com",
            credential: &credential,
        };
        let body = create_body("base", Duration::from_secs(90), &metadata, Some(rule));
        let expected = json!({
            "templateID": "base",
            "timeout": 90,
            "autoPause": false,
            "secure": true,
            "allow_internet_access": false,
            "network": {
                "denyOut": ["0.0.0.0/0"],
                "allowOut": ["guard.example.com"],
                "rules": {"guard.example.com": [{"transform": {"headers": {
                    "Authorization": format!("Bearer crg_{}", "ab".repeat(32)),
                }}}]},
            },
            "metadata": {"plimsoll-lease": "l1"},
        });
        assert_eq!(body, expected);
        let plain = create_body("base", Duration::from_secs(90), &metadata, None);
        assert_eq!(plain["network"], json!({"denyOut": ["0.0.0.0/0"]}));
        assert!(!plain.to_string().contains("crg_"));
    }
}
