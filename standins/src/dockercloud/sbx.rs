//! Docker's Connect contract for the same sandboxes (`docker.sbx.v1`, the
//! messages of the `docker-sbx-api` 0.36.0 wheel, `plimsoll-dockercloud-proto`),
//! as the spec's `SANDBOX_DOCKERCLOUD_API=connect` speaks it: unary Connect
//! with the proto codec (what the wheel's `sbx_facade` client sends), notes
//! in `docs/research/hosted-providers.md` §2.4.
//!
//! * **Management**, on the api listener under `/sbx` (the base URL is
//!   `http://ADDR/sbx`, as Docker's example `…/sbx`), the bearer an
//!   unexpired minted access token:
//!   `CapabilityService/GetCapabilities` (cloud backend, the permissions
//!   read, create, delete and network-policy read, the supported sizes);
//!   `SandboxService/CreateSandbox` (`name`, `resources`, `cloud.imageRef`
//!   mapped in [`super::Settings::images`], `cloud.startCmd`,
//!   `cloud.timeout`, `cloud.onTimeout` delete or stop; `cpus` required with
//!   `imageRef`, a store `image` beside `imageRef` refused; inline
//!   `networkPolicies` answer `internal`, as observed) answering a pending
//!   `Operation`; `OperationService/GetOperation` and `WaitOperation`
//!   (done once the sandbox runs, the `Sandbox` in `response`, or with its
//!   failure in `error`); `SandboxService/GetSandbox` by id or name,
//!   `ListSandboxes` (paged), `DeleteSandbox` (a done `Operation`;
//!   `not_found` for an unknown sandbox);
//!   `NetworkPolicyService/GetEffectiveNetworkPolicy` for a sandbox or the
//!   owner scope (the account: deny-all, nothing allowed; the faults as
//!   for REST).
//! * **Sandbox endpoint**, on the endpoint listener: `core.endpoint.uri`
//!   is `http://ADDR/sbx/<id>` and under it `ProcessService/Exec` (unary:
//!   argv, env, working directory, user; exit code and both streams, at
//!   most [`super::endpoint::EXEC_OUTPUT_CAP`] together, the rest dropped),
//!   `FileService/Upload` (client stream: a `header{path, mode}` then its
//!   `data` chunks, per file; `filesWritten`) and `FileService/Download`
//!   (server stream: per path its `header` and `data`, or an `error`). The
//!   endpoint takes the management credential, as the wheel's facade says.
//!
//! Every other procedure is `unimplemented`; a request in another codec is
//! 415. Not covered: the undocumented policy write, idempotent `requestId`
//! replay, operations' `WatchOperation` and `CancelOperation`.

#![expect(
    clippy::result_large_err,
    reason = "each helper's refusal is the handler's answer, returned as it is"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State as Shared};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use plimsoll_dockercloud_proto::docker::sbx::common::v1 as common;
use plimsoll_dockercloud_proto::docker::sbx::extensions::cloud::v1 as cloud;
use plimsoll_dockercloud_proto::docker::sbx::files::v1 as files;
use plimsoll_dockercloud_proto::docker::sbx::meta::v1 as meta;
use plimsoll_dockercloud_proto::docker::sbx::process::v1 as process;
use plimsoll_dockercloud_proto::docker::sbx::v1 as sbx;
use plimsoll_dockercloud_proto::google::rpc::Status as RpcStatus;
use prost::Message;

use super::create::{Checked, launch};
use super::endpoint::{EXEC_OUTPUT_CAP, run};
use super::vm::Machine;
use super::{DEFAULT_TIMEOUT, RESOURCE_PAIRS, Sandbox, StandIn, Status, lock, random_id};
use crate::connect::{Error, stream_answer, stream_request, unary_answer, unary_request};

type App = Shared<Arc<StandIn>>;

/// The longest `WaitOperation` waits.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// The most sandboxes one list page holds.
pub const MAX_PAGE: usize = 100;
/// The bytes of a file one download `data` message carries.
const CHUNK: usize = 512 * 1024;

/// An operation the stand-in keeps.
#[derive(Debug, Clone)]
pub struct Operation {
    /// `OperationKind`.
    pub kind: sbx::OperationKind,
    /// The sandbox it is about.
    pub sandbox: String,
    /// When it began.
    pub created: SystemTime,
}

/// The management procedures (nested under `/sbx`).
pub fn management() -> Router<Arc<StandIn>> {
    Router::new()
        .route(
            "/docker.sbx.v1.CapabilityService/GetCapabilities",
            post(capabilities),
        )
        .route("/docker.sbx.v1.SandboxService/CreateSandbox", post(create))
        .route("/docker.sbx.v1.SandboxService/GetSandbox", post(get))
        .route("/docker.sbx.v1.SandboxService/ListSandboxes", post(list))
        .route("/docker.sbx.v1.SandboxService/DeleteSandbox", post(delete))
        .route(
            "/docker.sbx.v1.OperationService/GetOperation",
            post(get_operation),
        )
        .route(
            "/docker.sbx.v1.OperationService/WaitOperation",
            post(wait_operation),
        )
        .route(
            "/docker.sbx.v1.NetworkPolicyService/GetEffectiveNetworkPolicy",
            post(effective_policy),
        )
        .fallback(unserved)
}

/// The sandbox endpoint procedures, under `/sbx/{uid}` (merged into the
/// endpoint listener's routes).
pub fn endpoint() -> Router<Arc<StandIn>> {
    Router::new()
        .route(
            "/sbx/{uid}/docker.sbx.process.v1.ProcessService/Exec",
            post(exec),
        )
        .route(
            "/sbx/{uid}/docker.sbx.files.v1.FileService/Upload",
            post(upload),
        )
        .route(
            "/sbx/{uid}/docker.sbx.files.v1.FileService/Download",
            post(download),
        )
}

async fn unserved() -> Response {
    Error::new("unimplemented", "this procedure is not served").into_response()
}

/// An unexpired access token the stand-in minted, or `unauthenticated`.
fn authed(s: &StandIn, headers: &HeaderMap) -> Result<(), Response> {
    let ok = super::auth::bearer(headers).is_some_and(|t| {
        lock(&s.access_tokens)
            .get(t)
            .is_some_and(|exp| *exp > SystemTime::now())
    });
    if ok {
        Ok(())
    } else {
        Err(Error::new("unauthenticated", "invalid or expired access token").into_response())
    }
}

/// The request's message, once the caller is authenticated.
fn request<M: Message + Default>(
    s: &StandIn,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<M, Response> {
    authed(s, headers)?;
    unary_request(headers, body)
}

fn timestamp(t: SystemTime) -> prost_types::Timestamp {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    prost_types::Timestamp {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

fn linux_amd64() -> common::Platform {
    common::Platform {
        os: "linux".into(),
        architecture: "amd64".into(),
        variant: String::new(),
    }
}

/// A sandbox as `docker.sbx.v1.Sandbox`.
pub fn render(s: &StandIn, b: &Sandbox) -> sbx::Sandbox {
    let life = lock(&b.life);
    let status = match life.status {
        Status::Creating => common::SandboxStatus::Creating,
        Status::Running => common::SandboxStatus::Running,
        Status::Stopped => common::SandboxStatus::Stopped,
        Status::Failed => common::SandboxStatus::Failed,
        Status::Deleting => common::SandboxStatus::Stopping,
    };
    let on_timeout = if b.on_timeout == "stop" {
        cloud::OnTimeout::Stop
    } else {
        cloud::OnTimeout::Delete
    };
    sbx::Sandbox {
        core: Some(common::SandboxCore {
            id: b.uid.clone(),
            name: b.display_name.clone(),
            status: status as i32,
            resources: Some(common::Resources {
                cpus: Some(b.cpus),
                memory_mib: Some(b.memory_mib),
            }),
            platform: Some(linux_amd64()),
            environment: b.environment.clone().into_iter().collect(),
            created_at: Some(timestamp(b.created_at)),
            endpoint: Some(common::SandboxEndpoint {
                uri: s.endpoint_uri(&b.uid),
                protocol: common::SandboxEndpointProtocol::Connect as i32,
                credential_audience: String::new(),
                sandbox_id: b.uid.clone(),
            }),
            ..common::SandboxCore::default()
        }),
        local: None,
        cloud: Some(cloud::CloudSandbox {
            lifecycle: cloud::CloudLifecycleState::Running as i32,
            expires_at: Some(timestamp(life.expires_at)),
            platform: Some(linux_amd64()),
            on_timeout: on_timeout as i32,
            image_digest: b
                .image_ref
                .split_once('@')
                .map(|(_, d)| d.to_owned())
                .unwrap_or_default(),
            ..cloud::CloudSandbox::default()
        }),
    }
}

async fn capabilities(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = request::<sbx::GetCapabilitiesRequest>(&s, &headers, &body) {
        return r;
    }
    use common::Permission as P;
    let mut permissions = vec![P::SandboxesRead, P::SandboxesCreate, P::SandboxesDelete];
    if !s.settings.faults.deny_policy_read {
        permissions.push(P::NetworkPoliciesRead);
    }
    let (cpu_min, cpu_max, mem_min, mem_max) = RESOURCE_PAIRS
        .iter()
        .fold((u32::MAX, 0, u64::MAX, 0), |(a, b, c, d), (cpu, mem)| {
            (a.min(*cpu), b.max(*cpu), c.min(*mem), d.max(*mem))
        });
    unary_answer(&sbx::Capabilities {
        backend: meta::Backend::Cloud as i32,
        platforms: vec![linux_amd64()],
        resources: Some(sbx::ResourceRange {
            cpu_min,
            cpu_max,
            memory_mib_min: mem_min,
            memory_mib_max: mem_max,
        }),
        permissions: permissions.into_iter().map(|p| p as i32).collect(),
        can_attach_policies: true,
        ..sbx::Capabilities::default()
    })
}

fn invalid(message: impl Into<String>) -> Response {
    Error::invalid(message).into_response()
}

/// What a valid create asks for, or the refusal.
fn check(s: &StandIn, r: &sbx::CreateSandboxRequest) -> Result<Checked, Response> {
    let c = r.cloud.clone().unwrap_or_default();
    if !r.image.is_empty() && (!c.image_ref.is_empty() || r.resources.is_some()) {
        return Err(invalid(
            "'image' cannot be combined with 'cloud.image_ref', 'cloud.start_cmd' or 'resources'",
        ));
    }
    if !r.image.is_empty() {
        return Err(Error::new("unimplemented", "store images are not served").into_response());
    }
    if !r.network_policies.is_empty() {
        return Err(Error::new("internal", "internal error").into_response());
    }
    if !r.agent.is_empty() || !r.kits.is_empty() || r.mcp.is_some() || !r.policy_ids.is_empty() {
        return Err(Error::new(
            "unimplemented",
            "agents, kits, MCP and policy ids are not served",
        )
        .into_response());
    }
    if c.image_ref.is_empty() {
        return Err(invalid("one of 'image' or 'cloud.image_ref' is required"));
    }
    let Some(image) = s.settings.images.get(&c.image_ref).cloned() else {
        return Err(Error::new(
            "not_found",
            format!("image reference {:?} could not be resolved", c.image_ref),
        )
        .into_response());
    };
    let res = r.resources.unwrap_or_default();
    let Some(cpus) = res.cpus else {
        return Err(invalid("'cpus' is required when using 'imageRef'"));
    };
    let memory_mib = res.memory_mib.unwrap_or(2048);
    let pair = (cpus, memory_mib);
    if !RESOURCE_PAIRS.contains(&pair) && !s.settings.extra_resources.contains(&pair) {
        return Err(invalid(format!(
            "unsupported resources {cpus} cpus / {memory_mib} MiB: use a supported size (1/2048, 2/4096)"
        )));
    }
    if c.platform
        .as_ref()
        .is_some_and(|p| p.os != "linux" || p.architecture != "amd64")
    {
        return Err(invalid("only linux/amd64 is available"));
    }
    if c.auto_resume == Some(true) {
        return Err(Error::new("unimplemented", "auto_resume is not served").into_response());
    }
    let timeout = match &c.timeout {
        None => DEFAULT_TIMEOUT,
        Some(d) if d.seconds > 0 || d.nanos > 0 => {
            Duration::from_secs(u64::try_from(d.seconds).unwrap_or(0))
                + Duration::from_nanos(u64::try_from(d.nanos).unwrap_or(0))
        }
        Some(_) => return Err(invalid("'cloud.timeout' must be positive")),
    };
    let on_timeout = match c.on_timeout.map(cloud::OnTimeout::try_from) {
        None | Some(Ok(cloud::OnTimeout::Unspecified | cloud::OnTimeout::Delete)) => "delete",
        Some(Ok(cloud::OnTimeout::Stop)) => "stop",
        Some(Err(_)) => return Err(invalid("unknown 'cloud.on_timeout'")),
    };
    let name = if r.name.is_empty() {
        format!("sandbox-{}", random_id(8))
    } else {
        r.name.clone()
    };
    if name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(invalid(
            "'name' must match ^[a-zA-Z0-9_-]*$ and be at most 64 characters",
        ));
    }
    if lock(&s.sandboxes).values().any(|b| b.display_name == name) {
        return Err(
            Error::new("already_exists", format!("sandbox {name:?} already exists"))
                .into_response(),
        );
    }
    Ok(Checked {
        display_name: name,
        image_ref: c.image_ref,
        image,
        cpus,
        memory_mib,
        timeout,
        on_timeout: on_timeout.into(),
        argv: (!c.start_cmd.is_empty()).then_some(c.start_cmd),
    })
}

/// Keeps an operation and answers it, pending.
fn begin(s: &StandIn, kind: sbx::OperationKind, sandbox: &str) -> sbx::Operation {
    let id = format!("op-{}", random_id(20));
    let op = Operation {
        kind,
        sandbox: sandbox.to_owned(),
        created: SystemTime::now(),
    };
    lock(&s.operations).insert(id.clone(), op.clone());
    render_operation(s, &id, &op)
}

/// An operation as it stands now.
fn render_operation(s: &StandIn, id: &str, op: &Operation) -> sbx::Operation {
    let mut out = sbx::Operation {
        id: id.to_owned(),
        metadata: Some(sbx::OperationMetadata {
            kind: op.kind as i32,
            target: op.sandbox.clone(),
            created_at: Some(timestamp(op.created)),
            updated_at: Some(timestamp(SystemTime::now())),
            ..sbx::OperationMetadata::default()
        }),
        ..sbx::Operation::default()
    };
    match op.kind {
        sbx::OperationKind::CreateSandbox => {
            let Some(b) = s.get(&op.sandbox) else {
                out.done = true;
                out.result = Some(sbx::operation::Result::Error(RpcStatus {
                    code: 5,
                    message: "the sandbox was deleted".into(),
                    details: Vec::new(),
                }));
                return out;
            };
            let (status, failure) = {
                let life = lock(&b.life);
                (life.status, life.failure.clone())
            };
            match status {
                Status::Creating => {}
                Status::Failed => {
                    out.done = true;
                    out.result = Some(sbx::operation::Result::Error(RpcStatus {
                        code: 13,
                        message: failure.unwrap_or_else(|| "the sandbox failed".into()),
                        details: Vec::new(),
                    }));
                }
                _ => {
                    out.done = true;
                    out.result = Some(sbx::operation::Result::Response(prost_types::Any {
                        type_url: "type.googleapis.com/docker.sbx.v1.Sandbox".into(),
                        value: render(s, &b).encode_to_vec(),
                    }));
                }
            }
        }
        _ => out.done = s.get(&op.sandbox).is_none(),
    }
    out
}

async fn create(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    let r: sbx::CreateSandboxRequest = match request(&s, &headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let c = match check(&s, &r) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let environment: BTreeMap<String, String> = r.environment.into_iter().collect();
    let b = launch(&s, c, BTreeMap::new(), environment);
    unary_answer(&begin(&s, sbx::OperationKind::CreateSandbox, &b.uid))
}

/// The sandbox a reference names.
fn find(s: &StandIn, r: Option<&common::SandboxRef>) -> Result<Arc<Sandbox>, Response> {
    use common::sandbox_ref::Identifier;
    let found = match r.and_then(|r| r.identifier.as_ref()) {
        Some(Identifier::Id(id)) => s.get(id),
        Some(Identifier::Name(n)) => lock(&s.sandboxes)
            .values()
            .find(|b| &b.display_name == n)
            .cloned(),
        None => return Err(invalid("'sandbox' must name an id or a name")),
    };
    found.ok_or_else(|| Error::new("not_found", "sandbox not found").into_response())
}

async fn get(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    let r: sbx::GetSandboxRequest = match request(&s, &headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match find(&s, r.sandbox.as_ref()) {
        Ok(b) => unary_answer(&render(&s, &b)),
        Err(e) => e,
    }
}

async fn list(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    let r: sbx::ListSandboxesRequest = match request(&s, &headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let size = match usize::try_from(r.page_size) {
        Ok(0) | Err(_) => MAX_PAGE,
        Ok(n) => n.min(MAX_PAGE),
    };
    let after: u64 = if r.page_token.is_empty() {
        0
    } else {
        match r.page_token.parse() {
            Ok(n) => n,
            Err(_) => return invalid("invalid page_token"),
        }
    };
    let mut all: Vec<Arc<Sandbox>> = lock(&s.sandboxes)
        .values()
        .filter(|b| b.seq > after)
        .cloned()
        .collect();
    all.sort_by_key(|b| b.seq);
    let next = (all.len() > size).then(|| all[size - 1].seq.to_string());
    all.truncate(size);
    unary_answer(&sbx::ListSandboxesResponse {
        sandboxes: all.iter().map(|b| render(&s, b)).collect(),
        next_page_token: next.unwrap_or_default(),
    })
}

async fn delete(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    let r: sbx::DeleteSandboxRequest = match request(&s, &headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let b = match find(&s, r.sandbox.as_ref()) {
        Ok(b) => b,
        Err(e) => return e,
    };
    lock(&b.life).set(Status::Deleting);
    let op = begin(&s, sbx::OperationKind::DeleteSandbox, &b.uid);
    s.delete(&b.uid).await;
    let kept = lock(&s.operations).get(&op.id).cloned();
    match kept {
        Some(k) => unary_answer(&render_operation(&s, &op.id, &k)),
        None => unary_answer(&op),
    }
}

/// The operation `id`, or `not_found`.
fn operation(s: &StandIn, id: &str) -> Result<Operation, Response> {
    lock(&s.operations)
        .get(id)
        .cloned()
        .ok_or_else(|| Error::new("not_found", "operation not found").into_response())
}

async fn get_operation(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    let r: sbx::GetOperationRequest = match request(&s, &headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match operation(&s, &r.id) {
        Ok(op) => unary_answer(&render_operation(&s, &r.id, &op)),
        Err(e) => e,
    }
}

async fn wait_operation(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    let r: sbx::WaitOperationRequest = match request(&s, &headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let op = match operation(&s, &r.id) {
        Ok(op) => op,
        Err(e) => return e,
    };
    let wait = r
        .timeout
        .map(|d| Duration::from_secs(u64::try_from(d.seconds).unwrap_or(0)))
        .filter(|d| !d.is_zero())
        .unwrap_or(MAX_WAIT)
        .min(MAX_WAIT);
    let until = tokio::time::Instant::now() + wait;
    loop {
        let now = render_operation(&s, &r.id, &op);
        if now.done || tokio::time::Instant::now() >= until {
            return unary_answer(&now);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn effective_policy(Shared(s): App, headers: HeaderMap, body: Bytes) -> Response {
    let r: sbx::GetEffectiveNetworkPolicyRequest = match request(&s, &headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    if s.settings.faults.deny_policy_read {
        return Error::new(
            "permission_denied",
            "the token lacks PERMISSION_NETWORK_POLICIES_READ",
        )
        .into_response();
    }
    // A sandbox's policy, or the account's (the owner scope), as REST
    // reports them.
    let sandbox = match r.target.and_then(|t| t.target) {
        Some(sbx::policy_target::Target::Sandbox(target)) => match find(&s, Some(&target)) {
            Ok(b) => Some(b),
            Err(e) => return e,
        },
        Some(sbx::policy_target::Target::Owner(_)) => None,
        None => return invalid("'target' must name a sandbox or the owner"),
    };
    let f = s.settings.faults;
    let mode = if f.account_allow_all {
        sbx::NetworkPolicyMode::AllowAll
    } else {
        sbx::NetworkPolicyMode::DenyAll
    };
    let rule = |n: &str| sbx::AttributedRule {
        network: n.to_owned(),
        layer: 0,
    };
    let allow = match sandbox {
        Some(_) if f.policy_allows => vec![rule("0.0.0.0/0")],
        Some(b) => lock(&b.allow).iter().map(|n| rule(n)).collect(),
        None => Vec::new(),
    };
    unary_answer(&sbx::EffectiveNetworkPolicy {
        mode: mode as i32,
        allow_networks: allow,
        deny_networks: Vec::new(),
    })
}

/// The running sandbox `uid`'s machine, for an authenticated caller.
fn machine(s: &StandIn, headers: &HeaderMap, uid: &str) -> Result<Machine, Response> {
    authed(s, headers)?;
    let b = s
        .get(uid)
        .ok_or_else(|| Error::new("not_found", "sandbox not found").into_response())?;
    let life = lock(&b.life);
    match (&life.machine, life.status) {
        (Some(m), Status::Running) => Ok(m.clone()),
        _ => Err(Error::new("failed_precondition", "the sandbox is not running").into_response()),
    }
}

/// A streaming call's machine and request messages.
fn streamed<M: Message + Default>(
    s: &StandIn,
    headers: &HeaderMap,
    uid: &str,
    body: &[u8],
) -> Result<(Machine, Vec<M>), Response> {
    let m = machine(s, headers, uid)?;
    Ok((m, stream_request(headers, body)?))
}

fn internal(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "a Connect sandbox endpoint call failed");
    Error::new("internal", "internal error").into_response()
}

async fn exec(
    Shared(s): App,
    Path(uid): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let m = match machine(&s, &headers, &uid) {
        Ok(m) => m,
        Err(e) => return e,
    };
    let r: process::ExecRequest = match unary_request(&headers, &body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    if r.cmd.is_empty() {
        return invalid("'cmd' must hold at least one element");
    }
    let env = r.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let user = Some(r.user).filter(|u| !u.is_empty());
    let dir = Some(r.working_dir).filter(|d| !d.is_empty());
    match run(&m, r.cmd, env, user, dir, None, EXEC_OUTPUT_CAP).await {
        Ok(ran) => unary_answer(&process::ExecResponse {
            exit_code: i32::try_from(ran.code).unwrap_or(-1),
            stdout: ran.stdout,
            stderr: ran.stderr,
        }),
        Err(e) => internal(e),
    }
}

async fn upload(
    Shared(s): App,
    Path(uid): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (m, frames): (_, Vec<files::UploadRequest>) = match streamed(&s, &headers, &uid, &body) {
        Ok(x) => x,
        Err(e) => return e,
    };
    // Files in order: each header opens one, its data chunks follow.
    let mut pending: Vec<(files::FileHeader, Vec<u8>)> = Vec::new();
    for f in frames {
        use files::upload_request::Frame;
        match (f.frame, pending.last_mut()) {
            (Some(Frame::Header(h)), _) if h.path.is_empty() => {
                return stream_answer(
                    Vec::new(),
                    Some(&Error::invalid("a file header without a path")),
                );
            }
            (Some(Frame::Header(h)), _) => pending.push((h, Vec::new())),
            (Some(Frame::Data(d)), Some((_, data))) => data.extend_from_slice(&d),
            (Some(Frame::Data(_)), None) => {
                return stream_answer(
                    Vec::new(),
                    Some(&Error::invalid("data before any file header")),
                );
            }
            (None, _) => {}
        }
    }
    let mut written = 0u32;
    for (h, data) in pending {
        match super::files::write(&m, &h.path, h.mode, data).await {
            Ok(Ok(())) => written += 1,
            Ok(Err(why)) => {
                return stream_answer(
                    Vec::new(),
                    Some(&Error::new(
                        "failed_precondition",
                        format!("{}: {why}", h.path),
                    )),
                );
            }
            Err(e) => return stream_answer(Vec::new(), Some(&Error::new("internal", e))),
        }
    }
    let answer = files::UploadResponse {
        files_written: written,
    };
    stream_answer(vec![answer.encode_to_vec()], None)
}

async fn download(
    Shared(s): App,
    Path(uid): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (m, frames): (_, Vec<files::DownloadRequest>) = match streamed(&s, &headers, &uid, &body) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let [r] = <[files::DownloadRequest; 1]>::try_from(frames).unwrap_or_default();
    if r.paths.is_empty() || r.paths.iter().any(String::is_empty) {
        return stream_answer(
            Vec::new(),
            Some(&Error::invalid("at least one non-empty path is required")),
        );
    }
    use files::download_response::Frame;
    let mut out = Vec::new();
    for path in r.paths {
        match super::files::read_file(&m, &path).await {
            Ok(Ok((mode, bytes))) => {
                let header = files::DownloadResponse {
                    frame: Some(Frame::Header(files::FileHeader {
                        path: path.clone(),
                        mode,
                    })),
                };
                out.push(header.encode_to_vec());
                for chunk in bytes.chunks(CHUNK) {
                    let data = files::DownloadResponse {
                        frame: Some(Frame::Data(chunk.to_vec())),
                    };
                    out.push(data.encode_to_vec());
                }
            }
            Ok(Err(message)) => {
                let e = files::DownloadResponse {
                    frame: Some(Frame::Error(files::FileError { path, message })),
                };
                out.push(e.encode_to_vec());
            }
            Err(e) => return stream_answer(Vec::new(), Some(&Error::new("internal", e))),
        }
    }
    stream_answer(out, None)
}
