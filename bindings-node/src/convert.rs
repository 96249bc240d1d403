//! JavaScript arguments to core requests. Shapes only: every limit, floor and
//! rule is checked by the core when the request runs.

use napi::bindgen_prelude::*;
use plimsoll_core::client::SessionOptions as CoreSessionOptions;
use plimsoll_core::request::{
    CellRun, Envelope, JavaScriptRun, Payload, ProjectFile, ProjectRun, Request,
    SoftwareRule as CoreRule,
};
use tokio_util::sync::CancellationToken;

/// `EventTarget.prototype.addEventListener(type, listener)`.
type AddEventListener<'a> = Function<'a, FnArgs<(&'a str, Function<'a, (), ()>)>, Unknown<'a>>;

/// An `AbortSignal`, wired to a cancellation token when the call is made: an
/// already aborted signal cancels at once, a later `abort` cancels the run.
pub struct Signal(pub CancellationToken);

impl TypeName for Signal {
    fn type_name() -> &'static str {
        "AbortSignal"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ValidateNapiValue for Signal {}

impl FromNapiValue for Signal {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        // SAFETY: napi hands us a live value of this env for the duration of the call.
        let obj = unsafe { Object::from_napi_value(env, value)? };
        let token = CancellationToken::new();
        if obj.get_named_property::<bool>("aborted")? {
            token.cancel();
            return Ok(Signal(token));
        }
        let env = Env::from_raw(env);
        let t = token.clone();
        let listener = env.create_function_from_closure::<(), (), _>("onabort", move |_| {
            t.cancel();
            Ok(())
        })?;
        let add: AddEventListener = obj.get_named_property("addEventListener")?;
        add.apply(obj, ("abort", listener).into())?;
        Ok(Signal(token))
    }
}

/// Files as an object of path to text, read in the object's key order (the
/// order the request digest covers).
pub struct Files(pub Vec<ProjectFile>);

impl TypeName for Files {
    fn type_name() -> &'static str {
        "Record<string, string>"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ValidateNapiValue for Files {}

impl FromNapiValue for Files {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        // SAFETY: as for `Signal`.
        let obj = unsafe { Object::from_napi_value(env, value)? };
        let keys = Object::keys(&obj)?;
        let mut files = Vec::with_capacity(keys.len());
        for path in keys {
            let content: String = obj.get_named_property(&path)?;
            files.push(ProjectFile { path, content });
        }
        Ok(Files(files))
    }
}

/// Which software a caller accepts.
#[napi(object)]
pub struct SoftwareRule {
    /// `exact` (one identity) or `approved` (1 to 32).
    #[napi(ts_type = "'exact' | 'approved'")]
    pub mode: String,
    /// The accepted software identities.
    pub identities: Vec<String>,
}

impl From<SoftwareRule> for CoreRule {
    fn from(r: SoftwareRule) -> CoreRule {
        CoreRule {
            mode: r.mode,
            identities: r.identities,
        }
    }
}

/// Options every run takes.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct RunOptions {
    /// A named grant profile configured on the engine or daemon.
    pub grant_profile: Option<String>,
    /// The weakest tier accepted: `process`, `container`, `kernel` or `vm`.
    pub minimum_isolation: Option<String>,
    /// The run's whole budget, ms (0 or absent: the provider's default).
    pub timeout_ms: Option<i32>,
    /// The software the caller accepts.
    pub software_rule: Option<SoftwareRule>,
    /// An opaque correlation id for the audit line.
    pub trace_id: Option<String>,
    /// Aborting it cancels the run; the promise rejects with an `AbortError`.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
}

/// A project: files written first, shell steps run in order, artifacts collected.
#[napi(object, object_to_js = false)]
pub struct ProjectInput {
    /// Path to text, written in key order.
    #[napi(ts_type = "Record<string, string>")]
    pub files: Option<Files>,
    /// Shell commands, run in order; the first failure stops the run.
    pub steps: Vec<String>,
    /// Paths to collect afterwards.
    pub artifacts: Option<Vec<String>>,
}

/// Options for a notebook cell.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct CellOptions {
    /// Files written into the work directory first.
    #[napi(ts_type = "Record<string, string>")]
    pub files: Option<Files>,
    /// The weakest tier accepted.
    pub minimum_isolation: Option<String>,
    /// The call's budget, ms.
    pub timeout_ms: Option<i32>,
    /// The software the caller accepts (intersected with the session's).
    pub software_rule: Option<SoftwareRule>,
    /// An opaque correlation id.
    pub trace_id: Option<String>,
    /// Aborting it cancels the call.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
}

/// Options for opening a session.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct SessionOptions {
    /// The floor every call must meet.
    pub minimum_isolation: Option<String>,
    /// The software rule every call carries.
    pub software_rule: Option<SoftwareRule>,
    /// A shorter lifetime, ms.
    pub lifetime_ms: Option<u32>,
    /// A shorter idle timeout, ms.
    pub idle_timeout_ms: Option<u32>,
    /// Language hints (`javascript`, `python`).
    pub languages: Option<Vec<String>>,
    /// Aborting it abandons the open.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
}

/// Options for a remote client.
#[napi(object, object_to_js = false)]
pub struct ClientOptions {
    /// The bearer token (visible ASCII).
    pub token: Option<String>,
    /// Allow cleartext http to a host that is not loopback (development only).
    pub insecure_http: Option<bool>,
    /// The bound on each whole exchange, ms.
    pub timeout_ms: Option<u32>,
}

/// Options for a request given as JSON.
#[napi(object, object_to_js = false)]
pub struct CallOptions {
    /// Aborting it cancels the run.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
}

fn envelope(
    minimum_isolation: Option<String>,
    timeout_ms: Option<i32>,
    rule: Option<SoftwareRule>,
    trace_id: Option<String>,
) -> Envelope {
    Envelope {
        minimum_isolation: minimum_isolation.unwrap_or_default(),
        timeout_ms: timeout_ms.unwrap_or(0),
        software_rule: rule.map(CoreRule::from),
        trace_id: trace_id.unwrap_or_default(),
        ..Envelope::new()
    }
}

/// The signal's token, or a fresh one.
pub fn token(signal: Option<Signal>) -> CancellationToken {
    signal.map(|s| s.0).unwrap_or_default()
}

/// A snippet request and its cancellation.
pub fn javascript(code: String, o: Option<RunOptions>) -> (Request, CancellationToken) {
    let o = o.unwrap_or_default();
    let payload = Payload::JavaScript(JavaScriptRun {
        code,
        grant_profile: o.grant_profile.unwrap_or_default(),
    });
    (
        Request {
            envelope: envelope(
                o.minimum_isolation,
                o.timeout_ms,
                o.software_rule,
                o.trace_id,
            ),
            payload,
        },
        token(o.signal),
    )
}

/// A project request and its cancellation.
pub fn project(p: ProjectInput, o: Option<RunOptions>) -> (Request, CancellationToken) {
    let o = o.unwrap_or_default();
    let payload = Payload::Project(ProjectRun {
        files: p.files.map(|f| f.0).unwrap_or_default(),
        steps: p.steps,
        artifacts: p.artifacts.unwrap_or_default(),
        grant_profile: o.grant_profile.unwrap_or_default(),
    });
    (
        Request {
            envelope: envelope(
                o.minimum_isolation,
                o.timeout_ms,
                o.software_rule,
                o.trace_id,
            ),
            payload,
        },
        token(o.signal),
    )
}

/// A cell request and its cancellation.
pub fn cell(
    language: String,
    code: String,
    o: Option<CellOptions>,
) -> (Request, CancellationToken) {
    let o = o.unwrap_or_default();
    let payload = Payload::Cell(CellRun {
        language,
        code,
        files: o.files.map(|f| f.0).unwrap_or_default(),
    });
    (
        Request {
            envelope: envelope(
                o.minimum_isolation,
                o.timeout_ms,
                o.software_rule,
                o.trace_id,
            ),
            payload,
        },
        token(o.signal),
    )
}

/// Session options for the core, and the open's cancellation.
pub fn session(o: Option<SessionOptions>) -> (CoreSessionOptions, CancellationToken) {
    let o = o.unwrap_or_default();
    (
        CoreSessionOptions {
            minimum_isolation: o.minimum_isolation.unwrap_or_default(),
            software_rule: o.software_rule.map(CoreRule::from),
            lifetime_ms: o.lifetime_ms.unwrap_or(0),
            idle_timeout_ms: o.idle_timeout_ms.unwrap_or(0),
            languages: o.languages.unwrap_or_default(),
            ..CoreSessionOptions::default()
        },
        token(o.signal),
    )
}
