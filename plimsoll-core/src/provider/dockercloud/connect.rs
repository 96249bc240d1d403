//! Docker's Connect contract (`docker.sbx.v1`; the messages of the
//! `docker-sbx-api` 0.36.0 wheel, `plimsoll-dockercloud-proto`; notes:
//! `docs/research/hosted-providers.md` §2.4), spoken as that wheel's own
//! client speaks it: the Connect protocol with the proto codec, requests
//! uncompressed, the exchanged bearer on the management URL and on each
//! sandbox's endpoint alike.
//!
//! A create is a long-running operation, waited for (`WaitOperation`,
//! falling back to `GetOperation` where it is not served) until it holds
//! the `Sandbox`. The contract has no labels, so a sandbox is named
//! `<instance prefix><lease>` (the lease is its `requestId` too) and its
//! lifetime is its expiry less its creation. The startup permissions come
//! from `GetCapabilities`; the account's policy is the effective policy of
//! the owner scope.
//!
//! A 401 is retried once with a freshly exchanged bearer; a 403 names the
//! permission the call needs; Docker's error text reaches a message only cut
//! and with every credential scrubbed out.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use plimsoll_dockercloud_proto::docker::sbx::common::v1 as common;
use plimsoll_dockercloud_proto::docker::sbx::extensions::cloud::v1 as cloud;
use plimsoll_dockercloud_proto::docker::sbx::files::v1 as files;
use plimsoll_dockercloud_proto::docker::sbx::process::v1 as process;
use plimsoll_dockercloud_proto::docker::sbx::v1 as sbx;
use prost::Message;
use serde_json::Value;
use url::Url;

use super::api::{Permission, id_ok};
use super::auth::Auth;
use super::contract::{Contract, Exec, SandboxEndpoint, all_written};
use super::model::{Policy, Sandbox, Spec};
use super::multipart::Downloaded;
use super::sandbox::NAME_PREFIX;
use crate::error::{Error, Result};
use crate::loopback::is_loopback_url;
use crate::provider::hosted::http::{Answer, Http, excerpt, read_limited};

/// How long one management call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The most a management answer may carry.
const ANSWER_LIMIT: usize = 4 << 20;
/// How long a create's operation is waited for.
const OPERATION_BUDGET: Duration = Duration::from_secs(120);
/// What one `WaitOperation` asks the service to wait.
const WAIT: Duration = Duration::from_secs(10);
/// How long a file call may take.
const FILE_TIMEOUT: Duration = Duration::from_secs(60);
/// The most an exec answer may carry (two capped streams and framing).
const EXEC_LIMIT: usize = 1 << 20;
/// The bytes of a file one upload `data` message carries.
const CHUNK: usize = 512 * 1024;
/// The unary media type.
const UNARY: &str = "application/proto";
/// The streaming media type.
const STREAM: &str = "application/connect+proto";
/// The envelope flag of the end-of-stream message.
const END_STREAM: u8 = 0x02;

/// A call Docker answered with a Connect error.
struct Refused {
    /// The Connect code (`not_found`, `permission_denied`, …).
    code: String,
    answer: Answer,
}

/// The Connect contract's management side.
pub(crate) struct Connect {
    http: Http,
    base: Url,
    /// The undocumented policy API (`SANDBOX_DOCKERCLOUD_POLICY_URL`).
    policy: Url,
    auth: Arc<Auth>,
}

/// One envelope around `payload`.
fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(flags);
    out.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(payload);
    out
}

/// A streaming answer's messages and its end: `Err(code, message)` when
/// the end-of-stream message carries an error.
type Frames = (Vec<Vec<u8>>, std::result::Result<(), (String, String)>);

/// Splits a streaming answer into its messages and its end.
fn frames(body: &[u8]) -> std::result::Result<Frames, String> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() >= 5 {
        let flags = rest[0];
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let Some(payload) = rest.get(5..5 + len) else {
            return Err("an envelope runs past the answer".into());
        };
        if flags & 0x01 != 0 {
            return Err("a compressed envelope (none was accepted)".into());
        }
        if flags & END_STREAM != 0 {
            let v: Value = serde_json::from_slice(payload)
                .map_err(|_| "the end of the stream is not JSON".to_owned())?;
            let end = match v.get("error") {
                None | Some(Value::Null) => Ok(()),
                Some(e) => Err((
                    e.get("code")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                        .to_owned(),
                    e.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                )),
            };
            return Ok((out, end));
        }
        out.push(payload.to_vec());
        rest = &rest[5 + len..];
    }
    Err("the stream ended without its end message".into())
}

/// The Connect code of a unary error answer (HTTP status when the body
/// names none, as the protocol maps it).
fn code(a: &Answer) -> String {
    serde_json::from_slice::<Value>(&a.body)
        .ok()
        .and_then(|v| v.get("code").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| {
            match a.status.as_u16() {
                400 => "internal",
                401 => "unauthenticated",
                403 => "permission_denied",
                404 => "unimplemented",
                429 | 502..=504 => "unavailable",
                _ => "unknown",
            }
            .to_owned()
        })
}

fn timestamp(t: Option<&prost_types::Timestamp>) -> Option<SystemTime> {
    let t = t?;
    let secs = u64::try_from(t.seconds).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::new(secs, u32::try_from(t.nanos).unwrap_or(0)))
}

/// A `docker.sbx.v1.Sandbox` as the provider reads sandboxes.
fn model(s: &sbx::Sandbox) -> std::result::Result<Sandbox, String> {
    let core = s.core.clone().unwrap_or_default();
    if !id_ok(&core.id) {
        return Err("the answer names no usable sandbox id".into());
    }
    let status = match common::SandboxStatus::try_from(core.status) {
        Ok(common::SandboxStatus::Creating) => "creating",
        Ok(common::SandboxStatus::Starting) => "starting",
        Ok(common::SandboxStatus::Running) => "running",
        Ok(common::SandboxStatus::Stopping) => "stopping",
        Ok(common::SandboxStatus::Stopped) => "stopped",
        Ok(common::SandboxStatus::Failed) => "failed",
        _ => "unknown",
    };
    let endpoint = core.endpoint.clone().unwrap_or_default();
    let connect = endpoint.protocol == common::SandboxEndpointProtocol::Connect as i32;
    let cloud = s.cloud.clone().unwrap_or_default();
    let created = timestamp(core.created_at.as_ref());
    let lifetime = match (created, timestamp(cloud.expires_at.as_ref())) {
        (Some(c), Some(e)) => e.duration_since(c).ok().map(|d| d.as_secs().to_string()),
        _ => None,
    };
    let resources = core.resources.unwrap_or_default();
    Ok(Sandbox {
        uid: core.id,
        lease: core
            .name
            .strip_prefix(NAME_PREFIX)
            .and_then(|rest| rest.rsplit('-').next())
            .unwrap_or_default()
            .to_owned(),
        display_name: core.name,
        status: status.into(),
        created,
        image_ref: core.image,
        cpus: resources.cpus.map(u64::from),
        memory_mib: resources.memory_mib,
        endpoint: endpoint.uri,
        // A Connect endpoint serves the process and file services.
        capabilities: if connect {
            vec!["exec".into(), "upload".into(), "download".into()]
        } else {
            Vec::new()
        },
        instance: None,
        lifetime,
        image_digest: cloud.image_digest,
        ..Sandbox::default()
    })
}

fn mode(m: i32) -> &'static str {
    match sbx::NetworkPolicyMode::try_from(m) {
        Ok(sbx::NetworkPolicyMode::DenyAll) => "denyAll",
        Ok(sbx::NetworkPolicyMode::AllowAll) => "allowAll",
        _ => "unspecified",
    }
}

impl Connect {
    pub(crate) fn new(http: Http, base: Url, policy: Url, auth: Arc<Auth>) -> Connect {
        Connect {
            http,
            base,
            policy,
            auth,
        }
    }

    /// One unary call to `procedure` below `base` with the bearer; a 401
    /// is tried once more with a fresh exchange.
    async fn unary<Q: Message, A: Message + Default>(
        &self,
        what: &str,
        base: &str,
        procedure: &str,
        req: &Q,
        timeout: Duration,
        limit: usize,
    ) -> Result<std::result::Result<A, Refused>> {
        let mut refreshed = false;
        loop {
            let jwt = self.auth.token().await?;
            let r = Request::builder()
                .method(Method::POST)
                .uri(format!("{}/{procedure}", base.trim_end_matches('/')))
                .header("authorization", format!("Bearer {}", jwt.expose()))
                .header("content-type", UNARY)
                .header("connect-protocol-version", "1")
                .header("connect-timeout-ms", timeout.as_millis().to_string())
                .header(
                    "user-agent",
                    concat!("plimsoll/", env!("CARGO_PKG_VERSION")),
                )
                .body(Full::new(Bytes::from(req.encode_to_vec())))
                .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
            let a = self.http.call(what, r, timeout, limit).await?;
            if a.status == StatusCode::OK {
                return A::decode(a.body.as_slice()).map(Ok).map_err(|_| {
                    Error::infrastructure(format!("{what}: the answer is not the message expected"))
                });
            }
            let code = code(&a);
            if code == "unauthenticated" && !refreshed {
                self.auth.forget().await;
                refreshed = true;
                continue;
            }
            return Ok(Err(Refused { code, answer: a }));
        }
    }

    /// A management call.
    async fn call<Q: Message, A: Message + Default>(
        &self,
        what: &str,
        procedure: &str,
        req: &Q,
    ) -> Result<std::result::Result<A, Refused>> {
        self.unary(
            what,
            self.base.as_str(),
            procedure,
            req,
            CALL_TIMEOUT,
            ANSWER_LIMIT,
        )
        .await
    }

    /// A refusal as an error, naming `permission` when it is one.
    fn fail(&self, what: &str, r: &Refused, permission: Permission) -> Error {
        let body = excerpt(&r.answer.body, &[self.auth.pat()]);
        if r.code == "permission_denied" {
            return Error::infrastructure(format!(
                "Docker refused {what} ({}: {body}; the token lacks the {} permission)",
                r.code,
                permission.name()
            ));
        }
        Error::infrastructure(format!("Docker refused {what} ({}: {body})", r.code))
    }

    /// Waits for operation `op` until it is done; its sandbox.
    async fn finish(&self, mut op: sbx::Operation) -> Result<Sandbox> {
        let what = "waiting for a Docker Cloud sandbox's create";
        let until = tokio::time::Instant::now() + OPERATION_BUDGET;
        let mut wait_served = true;
        while !op.done {
            if tokio::time::Instant::now() >= until {
                return Err(Error::infrastructure(format!(
                    "{what}: not done within {} s",
                    OPERATION_BUDGET.as_secs()
                )));
            }
            let answered = if wait_served {
                let req = sbx::WaitOperationRequest {
                    id: op.id.clone(),
                    timeout: Some(prost_types::Duration {
                        seconds: WAIT.as_secs() as i64,
                        nanos: 0,
                    }),
                };
                self.unary(
                    what,
                    self.base.as_str(),
                    "docker.sbx.v1.OperationService/WaitOperation",
                    &req,
                    WAIT + CALL_TIMEOUT,
                    ANSWER_LIMIT,
                )
                .await?
            } else {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let req = sbx::GetOperationRequest { id: op.id.clone() };
                self.call(what, "docker.sbx.v1.OperationService/GetOperation", &req)
                    .await?
            };
            op = match answered {
                Ok(op) => op,
                Err(r) if r.code == "unimplemented" && wait_served => {
                    wait_served = false;
                    continue;
                }
                Err(r) => return Err(self.fail(what, &r, Permission::Read)),
            };
        }
        match op.result {
            Some(sbx::operation::Result::Response(any)) => {
                let s = sbx::Sandbox::decode(any.value.as_slice()).map_err(|_| {
                    Error::infrastructure(format!(
                        "{what}: the operation's response is not a Sandbox"
                    ))
                })?;
                model(&s).map_err(|m| Error::infrastructure(format!("{what}: {m}")))
            }
            Some(sbx::operation::Result::Error(e)) => Err(Error::infrastructure(format!(
                "Docker Cloud could not create the sandbox (code {}): {}",
                e.code,
                excerpt(e.message.as_bytes(), &[self.auth.pat()])
            ))),
            None => Err(Error::infrastructure(format!(
                "{what}: the operation is done with neither a response nor an error"
            ))),
        }
    }

    async fn policy(&self, what: &str, target: sbx::policy_target::Target) -> Result<Policy> {
        let req = sbx::GetEffectiveNetworkPolicyRequest {
            target: Some(sbx::PolicyTarget {
                target: Some(target),
            }),
        };
        let p: sbx::EffectiveNetworkPolicy = self
            .call(
                what,
                "docker.sbx.v1.NetworkPolicyService/GetEffectiveNetworkPolicy",
                &req,
            )
            .await?
            .map_err(|r| self.fail(what, &r, Permission::PolicyRead))?;
        Ok(Policy {
            mode: mode(p.mode).into(),
            allow: p.allow_networks.into_iter().map(|r| r.network).collect(),
        })
    }
}

fn by_id(id: &str) -> Option<common::SandboxRef> {
    Some(common::SandboxRef {
        identifier: Some(common::sandbox_ref::Identifier::Id(id.to_owned())),
        ..common::SandboxRef::default()
    })
}

#[async_trait]
impl Contract for Connect {
    async fn create(&self, spec: &Spec<'_>, lease: &str) -> Result<Sandbox> {
        let what = "creating a Docker Cloud sandbox";
        let req = sbx::CreateSandboxRequest {
            name: format!("{}{lease}", spec.prefix),
            request_id: lease.to_owned(),
            resources: Some(common::Resources {
                cpus: Some(spec.cpus),
                memory_mib: Some(u64::from(spec.memory_mib)),
            }),
            cloud: Some(cloud::CloudCreateOptions {
                image_ref: spec.image.to_owned(),
                start_cmd: vec!["sleep".into(), "infinity".into()],
                timeout: Some(prost_types::Duration {
                    seconds: spec.lifetime.as_secs().max(1) as i64,
                    nanos: 0,
                }),
                on_timeout: Some(cloud::OnTimeout::Delete as i32),
                platform: Some(common::Platform {
                    os: "linux".into(),
                    architecture: "amd64".into(),
                    variant: String::new(),
                }),
                auto_resume: Some(false),
                ..cloud::CloudCreateOptions::default()
            }),
            ..sbx::CreateSandboxRequest::default()
        };
        let op: sbx::Operation = self
            .call(what, "docker.sbx.v1.SandboxService/CreateSandbox", &req)
            .await?
            .map_err(|r| self.fail(what, &r, Permission::Create))?;
        self.finish(op).await
    }

    async fn get(&self, id: &str) -> Result<Option<Sandbox>> {
        let what = "reading a Docker Cloud sandbox back";
        let req = sbx::GetSandboxRequest { sandbox: by_id(id) };
        match self
            .call::<_, sbx::Sandbox>(what, "docker.sbx.v1.SandboxService/GetSandbox", &req)
            .await?
        {
            Ok(s) => model(&s)
                .map(Some)
                .map_err(|m| Error::infrastructure(format!("{what}: {m}"))),
            Err(r) if r.code == "not_found" => Ok(None),
            Err(r) => Err(self.fail(what, &r, Permission::Read)),
        }
    }

    async fn list(&self) -> Result<Vec<Sandbox>> {
        let what = "listing Docker Cloud sandboxes";
        let mut out = Vec::new();
        let mut page_token = String::new();
        for _ in 0..100 {
            let req = sbx::ListSandboxesRequest {
                page_size: 100,
                page_token: std::mem::take(&mut page_token),
                ..sbx::ListSandboxesRequest::default()
            };
            let page: sbx::ListSandboxesResponse = self
                .call(what, "docker.sbx.v1.SandboxService/ListSandboxes", &req)
                .await?
                .map_err(|r| self.fail(what, &r, Permission::Read))?;
            // One the provider cannot read is not one it may delete.
            out.extend(page.sandboxes.iter().filter_map(|s| model(s).ok()));
            if page.next_page_token.is_empty() {
                break;
            }
            page_token = page.next_page_token;
        }
        Ok(out)
    }

    async fn delete(&self, id: &str, _etag: &str) -> Result<bool> {
        let what = "deleting a Docker Cloud sandbox";
        let req = sbx::DeleteSandboxRequest {
            sandbox: by_id(id),
            force: true,
            request_id: hex::encode(rand::random::<[u8; 16]>()),
        };
        match self
            .call::<_, sbx::Operation>(what, "docker.sbx.v1.SandboxService/DeleteSandbox", &req)
            .await?
        {
            Ok(_) => Ok(true),
            Err(r) if r.code == "not_found" => Ok(true),
            Err(r) => Err(self.fail(what, &r, Permission::Delete)),
        }
    }

    async fn sandbox_policy(&self, id: &str) -> Result<Policy> {
        let target = by_id(id).map(sbx::policy_target::Target::Sandbox);
        self.policy(
            "reading a Docker Cloud sandbox's network policy",
            target.unwrap_or(sbx::policy_target::Target::Owner(sbx::OwnerScope {})),
        )
        .await
    }

    async fn account_policy(&self) -> Result<Policy> {
        self.policy(
            "reading the Docker Cloud account's network policy",
            sbx::policy_target::Target::Owner(sbx::OwnerScope {}),
        )
        .await
    }

    /// The token's permissions, from `GetCapabilities`: read, create,
    /// delete and network-policy read, or a refusal naming what is missing.
    async fn permissions(&self) -> Result<()> {
        let what = "reading the Docker Cloud token's capabilities";
        let caps: sbx::Capabilities = self
            .call(
                what,
                "docker.sbx.v1.CapabilityService/GetCapabilities",
                &sbx::GetCapabilitiesRequest {},
            )
            .await?
            .map_err(|r| self.fail(what, &r, Permission::Read))?;
        use common::Permission as P;
        let missing: Vec<&str> = [
            (P::SandboxesRead, Permission::Read),
            (P::SandboxesCreate, Permission::Create),
            (P::SandboxesDelete, Permission::Delete),
            (P::NetworkPoliciesRead, Permission::PolicyRead),
        ]
        .iter()
        .filter(|(p, _)| !caps.permissions.contains(&(*p as i32)))
        .map(|(_, name)| name.name())
        .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::infrastructure(format!(
                "the Docker Cloud token lacks the {} permission(s)",
                missing.join(", ")
            )))
        }
    }

    /// `PUT <policy URL>/sandboxes/<id>/network-policy` with the management
    /// bearer, as the `sbx` CLI sets a sandbox's policy (undocumented; the
    /// read-back through `GetEffectiveNetworkPolicy` is what is trusted).
    async fn allow(&self, id: &str, network: &str) -> Result<()> {
        let what = "setting a Docker Cloud sandbox's guard rule";
        let body = serde_json::json!({"mode": "deny-all", "allowNetworks": [network]});
        let mut refreshed = false;
        loop {
            let jwt = self.auth.token().await?;
            let r = Request::builder()
                .method(Method::PUT)
                .uri(format!(
                    "{}/sandboxes/{id}/network-policy",
                    self.policy.as_str().trim_end_matches('/')
                ))
                .header("authorization", format!("Bearer {}", jwt.expose()))
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .header(
                    "user-agent",
                    concat!("plimsoll/", env!("CARGO_PKG_VERSION")),
                )
                .body(Full::new(Bytes::from(body.to_string())))
                .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
            let a = self.http.call(what, r, CALL_TIMEOUT, 64 << 10).await?;
            if a.status == StatusCode::UNAUTHORIZED && !refreshed {
                self.auth.forget().await;
                refreshed = true;
                continue;
            }
            if a.status.is_success() {
                return Ok(());
            }
            return Err(crate::provider::hosted::http::vendor_error(
                "Docker's policy API",
                what,
                &a,
                &[self.auth.pat(), jwt.expose()],
            ));
        }
    }

    fn wrong(&self, spec: &Spec<'_>, lease: &str, s: &Sandbox) -> Vec<String> {
        let mut wrong = Vec::new();
        if s.status != "running" {
            wrong.push(format!("status {:?}", s.status));
        }
        let digest = spec.image.rsplit_once('@').map_or("", |(_, d)| d);
        if s.image_digest != digest {
            wrong.push(format!("booted digest {:?}", s.image_digest));
        }
        if s.cpus != Some(u64::from(spec.cpus)) || s.memory_mib != Some(u64::from(spec.memory_mib))
        {
            wrong.push(format!(
                "resources {:?} CPU / {:?} MiB (asked {} / {})",
                s.cpus, s.memory_mib, spec.cpus, spec.memory_mib
            ));
        }
        if s.display_name != format!("{}{lease}", spec.prefix) {
            wrong.push(format!("name {:?}", s.display_name));
        }
        match Url::parse(&s.endpoint) {
            Ok(u) if u.scheme() == "https" || (u.scheme() == "http" && is_loopback_url(&u)) => {}
            _ => wrong.push(format!("endpoint {:?} is not https", s.endpoint)),
        }
        if s.capabilities.is_empty() {
            wrong.push("its endpoint does not speak Connect".into());
        }
        wrong
    }

    /// The endpoint, with the management bearer (Connect's endpoint takes it).
    async fn endpoint(&self, s: &Sandbox) -> Result<Box<dyn SandboxEndpoint>> {
        Ok(Box::new(Endpoint {
            connect: Connect::new(
                self.http.clone(),
                self.base.clone(),
                self.policy.clone(),
                self.auth.clone(),
            ),
            uri: s.endpoint.trim_end_matches('/').to_owned(),
        }))
    }
}

/// A sandbox's Connect endpoint.
struct Endpoint {
    connect: Connect,
    uri: String,
}

impl Endpoint {
    /// One streaming call: `messages` enveloped in the body, the answer's
    /// messages and end. `None`: the answer is over `limit` bytes.
    async fn stream(
        &self,
        what: &str,
        procedure: &str,
        messages: &[Vec<u8>],
        limit: usize,
    ) -> Result<Option<Frames>> {
        let body: Vec<u8> = messages.iter().flat_map(|m| envelope(0, m)).collect();
        let mut refreshed = false;
        loop {
            let jwt = self.connect.auth.token().await?;
            let r = Request::builder()
                .method(Method::POST)
                .uri(format!("{}/{procedure}", self.uri))
                .header("authorization", format!("Bearer {}", jwt.expose()))
                .header("content-type", STREAM)
                .header("connect-protocol-version", "1")
                .header("connect-timeout-ms", FILE_TIMEOUT.as_millis().to_string())
                .header(
                    "user-agent",
                    concat!("plimsoll/", env!("CARGO_PKG_VERSION")),
                )
                .body(Full::new(Bytes::from(body.clone())))
                .map_err(|e| Error::infrastructure(format!("{what}: {e}")))?;
            let resp = self.connect.http.open(what, r, FILE_TIMEOUT).await?;
            let (head, incoming) = resp.into_parts();
            if head.status != StatusCode::OK {
                let a = Answer {
                    status: head.status,
                    headers: head.headers,
                    body: read_limited(what, incoming, 64 << 10)
                        .await
                        .unwrap_or_default(),
                };
                let code = code(&a);
                if code == "unauthenticated" && !refreshed {
                    self.connect.auth.forget().await;
                    refreshed = true;
                    continue;
                }
                return Err(self.connect.fail(
                    what,
                    &Refused { code, answer: a },
                    Permission::Create,
                ));
            }
            let read =
                tokio::time::timeout(FILE_TIMEOUT, read_limited(what, incoming, limit)).await;
            let bytes = match read {
                Ok(Ok(b)) => b,
                Ok(Err(_)) => return Ok(None),
                Err(_) => {
                    return Err(Error::infrastructure(format!(
                        "{what}: no whole answer within {} s",
                        FILE_TIMEOUT.as_secs()
                    )));
                }
            };
            return frames(&bytes)
                .map(Some)
                .map_err(|m| Error::infrastructure(format!("{what}: {m}")));
        }
    }
}

#[async_trait]
impl SandboxEndpoint for Endpoint {
    /// `ProcessService/Exec` (unary; the guest bounds its own output).
    async fn exec(&self, cmd: &[String], user: &str, dir: &str, timeout: Duration) -> Result<Exec> {
        let what = "running a command in the Docker Cloud sandbox";
        let req = process::ExecRequest {
            cmd: cmd.to_vec(),
            working_dir: dir.to_owned(),
            user: user.to_owned(),
            ..process::ExecRequest::default()
        };
        let e: process::ExecResponse = self
            .connect
            .unary(
                what,
                &self.uri,
                "docker.sbx.process.v1.ProcessService/Exec",
                &req,
                timeout,
                EXEC_LIMIT,
            )
            .await?
            .map_err(|r| self.connect.fail(what, &r, Permission::Create))?;
        Ok(Exec {
            exit_code: e.exit_code,
            stdout: e.stdout,
            stderr: e.stderr,
        })
    }

    /// `FileService/Upload`: per file its header, then its data in chunks.
    async fn upload(&self, files: &[(String, &[u8])]) -> Result<std::result::Result<(), String>> {
        use files::upload_request::Frame;
        let what = "uploading files into the Docker Cloud sandbox";
        let mut messages = Vec::new();
        for (path, content) in files {
            let header = files::UploadRequest {
                frame: Some(Frame::Header(files::FileHeader {
                    path: path.clone(),
                    mode: 0o644,
                })),
            };
            messages.push(header.encode_to_vec());
            for chunk in content.chunks(CHUNK) {
                let data = files::UploadRequest {
                    frame: Some(Frame::Data(chunk.to_vec())),
                };
                messages.push(data.encode_to_vec());
            }
        }
        let Some((answers, end)) = self
            .stream(
                what,
                "docker.sbx.files.v1.FileService/Upload",
                &messages,
                64 << 10,
            )
            .await?
        else {
            return Err(Error::infrastructure(format!(
                "{what}: the answer is too large"
            )));
        };
        if let Err((code, message)) = end {
            return match code.as_str() {
                "failed_precondition" | "invalid_argument" | "permission_denied" => {
                    Ok(Err(excerpt(message.as_bytes(), &[self.connect.auth.pat()])))
                }
                _ => Err(Error::infrastructure(format!(
                    "{what}: Docker refused it ({code}: {})",
                    excerpt(message.as_bytes(), &[self.connect.auth.pat()])
                ))),
            };
        }
        let written = answers
            .first()
            .and_then(|m| files::UploadResponse::decode(m.as_slice()).ok())
            .map(|r| r.files_written as usize);
        all_written(what, written, files.len()).map(Ok)
    }

    /// `FileService/Download`: per path its header and data, or an error.
    async fn download(
        &self,
        paths: &[String],
        limit: usize,
    ) -> Result<Option<Vec<(String, Downloaded)>>> {
        use files::download_response::Frame;
        let what = "downloading files from the Docker Cloud sandbox";
        let req = files::DownloadRequest {
            paths: paths.to_vec(),
        };
        let Some((answers, end)) = self
            .stream(
                what,
                "docker.sbx.files.v1.FileService/Download",
                &[req.encode_to_vec()],
                limit,
            )
            .await?
        else {
            return Ok(None);
        };
        if let Err((code, message)) = end {
            return Err(Error::infrastructure(format!(
                "{what}: Docker refused it ({code}: {})",
                excerpt(message.as_bytes(), &[self.connect.auth.pat()])
            )));
        }
        let mut out: Vec<(String, Downloaded)> = Vec::new();
        for m in answers {
            let frame = files::DownloadResponse::decode(m.as_slice())
                .map_err(|_| {
                    Error::infrastructure(format!("{what}: a message is not a DownloadResponse"))
                })?
                .frame;
            match (frame, out.last_mut()) {
                (Some(Frame::Header(h)), _) => out.push((h.path, Downloaded::File(Vec::new()))),
                (Some(Frame::Data(d)), Some((_, Downloaded::File(content)))) => {
                    content.extend_from_slice(&d);
                }
                (Some(Frame::Error(e)), _) => out.push((e.path, Downloaded::Error(e.message))),
                (Some(Frame::Data(_)), _) => {
                    return Err(Error::infrastructure(format!(
                        "{what}: data before any file's header"
                    )));
                }
                (None, _) => {}
            }
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_splits_into_its_messages_and_its_end() {
        let mut body = envelope(0, b"one");
        body.extend(envelope(0, b"two"));
        body.extend(envelope(
            END_STREAM,
            br#"{"error":{"code":"not_found","message":"gone"}}"#,
        ));
        let (m, end) = frames(&body).unwrap();
        assert_eq!(m, vec![b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(end, Err(("not_found".into(), "gone".into())));
        let ok = envelope(END_STREAM, b"{}");
        assert_eq!(frames(&ok).unwrap(), (Vec::new(), Ok(())));
        assert!(frames(&envelope(0, b"x")).is_err(), "no end message");
        let mut cut = envelope(0, b"abcdef");
        cut.truncate(7);
        assert!(frames(&cut).is_err(), "an envelope past the end");
    }

    #[test]
    fn a_sandbox_reads_as_the_provider_reads_sandboxes() {
        let created = prost_types::Timestamp {
            seconds: 1_800_000_000,
            nanos: 0,
        };
        let s = sbx::Sandbox {
            core: Some(common::SandboxCore {
                id: "sbx_1".into(),
                name: "plimsoll-0123456789ab-lease1".into(),
                status: common::SandboxStatus::Running as i32,
                resources: Some(common::Resources {
                    cpus: Some(1),
                    memory_mib: Some(2048),
                }),
                created_at: Some(created),
                endpoint: Some(common::SandboxEndpoint {
                    uri: "https://e.example.com/sbx".into(),
                    protocol: common::SandboxEndpointProtocol::Connect as i32,
                    ..common::SandboxEndpoint::default()
                }),
                ..common::SandboxCore::default()
            }),
            local: None,
            cloud: Some(cloud::CloudSandbox {
                expires_at: Some(prost_types::Timestamp {
                    seconds: 1_800_000_390,
                    nanos: 0,
                }),
                image_digest: "sha256:ab".into(),
                ..cloud::CloudSandbox::default()
            }),
        };
        let m = model(&s).unwrap();
        assert_eq!(
            (
                m.uid.as_str(),
                m.status.as_str(),
                m.lease.as_str(),
                m.lifetime.as_deref()
            ),
            ("sbx_1", "running", "lease1", Some("390"))
        );
        assert_eq!(
            (m.cpus, m.memory_mib, m.instance.as_deref()),
            (Some(1), Some(2048), None)
        );
        assert_eq!(m.capabilities.len(), 3);
        let mut bad = s;
        bad.core.as_mut().unwrap().id = "../x".into();
        assert!(model(&bad).is_err());
    }
}
