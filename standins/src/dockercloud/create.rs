//! `POST /v1/sandboxes`: `CreateSandboxRequest` read strictly (an unknown
//! field at any level is 400 `invalidArgument`), checked, answered 202 with
//! the sandbox `creating` while its container is made in the background.
//! An `Idempotency-Key` already used with the same payload answers the first
//! sandbox again (201 once it runs, as observed); with another payload, 409.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;

use super::api::respond;
use super::vm::{LABEL, Machine, MachineSpec};
use super::{
    DEFAULT_TIMEOUT, Life, RESOURCE_PAIRS, Sandbox, StandIn, Status, error, invalid, lock,
    new_etag, random_id,
};

/// `CreateSandboxRequest`, every documented field (the unsupported ones are
/// read so that they are refused as unsupported, not as unknown).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateSandboxRequest {
    agent: Option<String>,
    display_name: Option<String>,
    display_name_prefix: Option<String>,
    #[serde(default)]
    environment: BTreeMap<String, String>,
    resources: Option<Resources>,
    pull_policy: Option<String>,
    kits: Option<Vec<Value>>,
    mcp: Option<Value>,
    network_policies: Option<Vec<Value>>,
    policy_ids: Option<Vec<String>>,
    platform: Option<Platform>,
    startup_execution: Option<StartupExecution>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    features: Option<Features>,
    image: Option<String>,
    image_ref: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Resources {
    cpus: Option<u32>,
    memory_mib: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Platform {
    os: Option<String>,
    architecture: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartupExecution {
    raw_image: Option<RawImage>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImage {
    start: Option<Start>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Start {
    argv: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Features {
    timeouts: Option<Timeouts>,
    managed_volumes: Option<Value>,
    stored_secrets: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Timeouts {
    timeout: Option<String>,
    on_timeout: Option<String>,
    auto_resume: Option<bool>,
}

/// A protobuf JSON duration (`"30s"`, `"1.5s"`).
pub fn duration(s: &str) -> Option<Duration> {
    let n = s.strip_suffix('s')?;
    let (whole, frac) = n.split_once('.').unwrap_or((n, ""));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 9
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || (n.contains('.') && frac.is_empty())
    {
        return None;
    }
    let secs: u64 = whole.parse().ok()?;
    let nanos: u32 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().ok()?
    };
    Some(Duration::new(secs, nanos))
}

/// An int64 given as a number or a string.
fn int64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn unimplemented(what: &str) -> Response {
    error(
        StatusCode::NOT_IMPLEMENTED,
        "unimplemented",
        format!("{what} is not supported by this stand-in"),
        Vec::new(),
    )
}

/// A refusal from [`check`].
fn refuse<T>(r: Response) -> Result<T, Box<Response>> {
    Err(Box::new(r))
}

fn valid_name(n: &str) -> bool {
    n.len() <= 64
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What a valid create asks for (from either contract).
pub struct Checked {
    /// The sandbox's name.
    pub display_name: String,
    /// The image reference asked for.
    pub image_ref: String,
    /// The local image it maps to.
    pub image: String,
    /// CPUs.
    pub cpus: u32,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// Its lifetime.
    pub timeout: Duration,
    /// `delete` or `stop` at the end of its lifetime.
    pub on_timeout: String,
    /// The main process's argv (`None`: the image's).
    pub argv: Option<Vec<String>>,
}

fn check(s: &StandIn, r: &CreateSandboxRequest) -> Result<Checked, Box<Response>> {
    let unsupported = [
        (r.agent.as_deref().is_some_and(|a| !a.is_empty()), "agent"),
        (r.kits.as_ref().is_some_and(|k| !k.is_empty()), "kits"),
        (r.mcp.is_some(), "mcp"),
        (
            r.policy_ids.as_ref().is_some_and(|p| !p.is_empty()),
            "policyIds",
        ),
        (r.image.is_some(), "image (managed images)"),
    ];
    if let Some((_, what)) = unsupported.iter().find(|(on, _)| *on) {
        return refuse(unimplemented(what));
    }
    if let Some(f) = &r.features
        && (f.managed_volumes.is_some() || f.stored_secrets.is_some())
    {
        return refuse(unimplemented("managedVolumes and storedSecrets"));
    }
    if r.network_policies.as_ref().is_some_and(|p| !p.is_empty()) {
        return refuse(error(
            StatusCode::CONFLICT,
            "failedPrecondition",
            "network_policies cannot be enforced while a local account-default policy governs this sandbox",
            Vec::new(),
        ));
    }
    if let Some(p) = &r.pull_policy
        && !matches!(p.as_str(), "unspecified" | "always")
    {
        return refuse(invalid("pullPolicy", format!("unknown pullPolicy {p:?}")));
    }
    if let Some(p) = &r.platform
        && (p.os.as_deref().is_some_and(|o| o != "linux")
            || p.architecture.as_deref().is_some_and(|a| a != "amd64"))
    {
        return refuse(invalid("platform", "only linux/amd64 is available"));
    }
    if r.labels.len() > 64 {
        return refuse(invalid("labels", "at most 64 labels"));
    }
    let display_name = match (&r.display_name, &r.display_name_prefix) {
        (Some(_), Some(_)) => {
            return refuse(invalid(
                "displayName",
                "displayName and displayNamePrefix are mutually exclusive",
            ));
        }
        (Some(n), None) => n.clone(),
        (None, Some(p)) => format!("{p}{}", random_id(8)),
        (None, None) => format!("sandbox-{}", random_id(8)),
    };
    if !valid_name(&display_name) {
        return refuse(invalid(
            "displayName",
            "displayName must match ^[a-zA-Z0-9_-]*$ and be at most 64 characters",
        ));
    }
    let Some(image_ref) = r.image_ref.clone().filter(|i| !i.is_empty()) else {
        return refuse(invalid("imageRef", "one of image or imageRef is required"));
    };
    let Some(image) = s.settings.images.get(&image_ref).cloned() else {
        return refuse(error(
            StatusCode::NOT_FOUND,
            "notFound",
            format!("image reference {image_ref:?} could not be resolved"),
            vec![serde_json::json!({
                "@type": "type.googleapis.com/google.rpc.ResourceInfo",
                "resourceType": "image",
                "resourceName": image_ref,
            })],
        ));
    };
    let res = r.resources.as_ref();
    let cpus = res.and_then(|r| r.cpus);
    let memory = res.and_then(|r| r.memory_mib.as_ref());
    let (Some(cpus), Some(memory)) = (cpus, memory) else {
        return refuse(invalid(
            "resources",
            "'cpus' and 'memoryMib' are required when using 'imageRef'",
        ));
    };
    let Some(memory_mib) = int64(memory) else {
        return refuse(invalid(
            "resources.memoryMib",
            "memoryMib must be an integer",
        ));
    };
    let pair = (cpus, memory_mib);
    if !RESOURCE_PAIRS.contains(&pair) && !s.settings.extra_resources.contains(&pair) {
        return refuse(invalid(
            "resources",
            format!(
                "unsupported resources {cpus} cpus / {memory_mib} MiB: use a supported size (1/2048, 2/4096)"
            ),
        ));
    }
    let t = r.features.as_ref().and_then(|f| f.timeouts.as_ref());
    let timeout = match t.and_then(|t| t.timeout.as_deref()) {
        None => DEFAULT_TIMEOUT,
        Some(d) => match duration(d) {
            Some(d) if !d.is_zero() => d,
            _ => {
                return refuse(invalid(
                    "features.timeouts.timeout",
                    format!("invalid duration {d:?}"),
                ));
            }
        },
    };
    let on_timeout = t
        .and_then(|t| t.on_timeout.clone())
        .unwrap_or("delete".into());
    match on_timeout.as_str() {
        "delete" | "stop" => {}
        "restart" | "keep" => return refuse(unimplemented("onTimeout restart and keep")),
        other => {
            return refuse(invalid(
                "features.timeouts.onTimeout",
                format!("unknown onTimeout {other:?}"),
            ));
        }
    }
    if t.and_then(|t| t.auto_resume) == Some(true) {
        return refuse(unimplemented("autoResume"));
    }
    let argv = match r
        .startup_execution
        .as_ref()
        .and_then(|e| e.raw_image.as_ref())
    {
        Some(RawImage {
            start: Some(Start { argv }),
        }) if argv.is_empty() => {
            return refuse(invalid(
                "startupExecution.rawImage.start.argv",
                "argv must not be empty",
            ));
        }
        Some(RawImage {
            start: Some(Start { argv }),
        }) => Some(argv.clone()),
        _ => None,
    };
    Ok(Checked {
        display_name,
        image_ref,
        image,
        cpus,
        memory_mib,
        timeout,
        on_timeout,
        argv,
    })
}

/// `POST /v1/sandboxes`.
pub async fn create(Shared(s): Shared<Arc<StandIn>>, headers: HeaderMap, body: Bytes) -> Response {
    let payload: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return invalid("", format!("invalid JSON: {e}")),
    };
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(k) = &key {
        let seen = lock(&s.idempotency).get(k).cloned();
        if let Some((first, uid)) = seen {
            if first != payload {
                return error(
                    StatusCode::CONFLICT,
                    "failedPrecondition",
                    "The Idempotency-Key was already used with a different payload",
                    Vec::new(),
                );
            }
            return match s.get(&uid) {
                Some(b) => respond(&s, &b, true),
                None => super::sandbox_not_found(&uid),
            };
        }
    }
    let request: CreateSandboxRequest = match serde_json::from_value(payload.clone()) {
        Ok(r) => r,
        Err(e) => return invalid("", e.to_string()),
    };
    let c = match check(&s, &request) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let sandbox = launch(&s, c, request.labels, request.environment);
    if let Some(k) = key {
        lock(&s.idempotency).insert(k, (payload, sandbox.uid.clone()));
    }
    respond(&s, &sandbox, true)
}

/// Records a new sandbox (`creating`) and makes its container in the
/// background (`running`, or `failed`, once done).
pub fn launch(
    s: &Arc<StandIn>,
    c: Checked,
    labels: BTreeMap<String, String>,
    environment: BTreeMap<String, String>,
) -> Arc<Sandbox> {
    let uid = random_id(26);
    let seq = {
        let mut n = lock(&s.next_seq);
        *n += 1;
        *n
    };
    let now = SystemTime::now();
    let sandbox = Arc::new(Sandbox {
        uid: uid.clone(),
        seq,
        display_name: c.display_name,
        image_ref: c.image_ref,
        cpus: c.cpus,
        memory_mib: c.memory_mib,
        labels,
        environment,
        created_at: now,
        on_timeout: c.on_timeout,
        initial_timeout: c.timeout,
        life: Mutex::new(Life {
            status: Status::Creating,
            etag: new_etag(),
            expires_at: now + c.timeout,
            machine: None,
            failure: None,
        }),
        allow: Mutex::default(),
        egress_addr: Mutex::default(),
    });
    lock(&s.sandboxes).insert(uid.clone(), sandbox.clone());
    let spec = MachineSpec {
        image: c.image,
        argv: c.argv,
        env: sandbox
            .environment
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        runtime: s.settings.runtime.clone(),
        network: s.egress_open(),
        guarded: s.egress.get().map(|e| crate::e2b::vm::Guarded {
            network: e.network.clone(),
            extra_hosts: s
                .settings
                .upstreams
                .keys()
                .map(|h| format!("{h}:{}", e.gateway))
                .collect(),
            bundle: e.bundle.display().to_string(),
        }),
        memory_mib: c.memory_mib,
        cpus: c.cpus,
        labels: HashMap::from([
            (LABEL.to_owned(), s.run_id.clone()),
            (format!("{LABEL}.sandbox"), uid.clone()),
        ]),
    };
    tokio::spawn(boot(s.clone(), sandbox.clone(), spec));
    sandbox
}

/// Makes the sandbox's container; `running` or `failed` after.
async fn boot(s: Arc<StandIn>, b: Arc<Sandbox>, spec: MachineSpec) {
    let made = Machine::create(&s.docker, &format!("dockercloud-standin-{}", b.uid), &spec).await;
    match made {
        Ok(m) => {
            {
                let mut life = lock(&b.life);
                life.machine = Some(m);
                if life.status == Status::Creating {
                    life.set(Status::Running);
                }
            }
            // Deleted meanwhile (a delete that came first found no machine).
            if s.get(&b.uid).is_none() {
                let m = lock(&b.life).machine.take();
                if let Some(m) = m {
                    m.remove().await;
                }
            }
        }
        Err(e) => {
            tracing::error!(sandbox = %b.uid, error = %e, "creating a stand-in sandbox failed");
            let mut life = lock(&b.life);
            life.failure = Some(e);
            life.set(Status::Failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_the_protobuf_pattern() {
        assert_eq!(duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(duration("0.000000001s"), Some(Duration::from_nanos(1)));
        for bad in ["30", "s", "1.s", ".5s", "1.0000000001s", "-1s", "1e3s"] {
            assert_eq!(duration(bad), None, "{bad}");
        }
    }
}
