//! The JavaScript classes: `Engine` (plimsoll-core in-process) and `Client`
//! (a plimsolld), with the same methods, and `Session`. Every call returns a
//! Promise; an `AbortSignal` in the options cancels the run.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use napi::bindgen_prelude::*;
use plimsoll_core::client::{Runner, Session as CoreSession};
use plimsoll_core::wire::json::encode;
use plimsoll_core::{Error as CoreError, Request};
use tokio_util::sync::CancellationToken;

use crate::convert::{
    self, CallOptions, CellOptions, ClientOptions, ProjectInput, RunOptions, SessionOptions,
};
use crate::errors;
use crate::results::{self, Js};

/// Runs `fut` on napi's tokio runtime; the promise resolves with `conv(value)`
/// or rejects with the core error as a JavaScript error.
pub fn promise<'env, T, V, Fut, C>(env: &'env Env, fut: Fut, conv: C) -> Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue,
    Fut: Future<Output = std::result::Result<T, CoreError>> + Send + 'static,
    C: FnOnce(&Env, T) -> Result<V> + 'static,
{
    env.spawn_future_with_callback(async move { Ok(fut.await) }, move |env, r| match r {
        Ok(v) => conv(env, v),
        Err(e) => Err(errors::to_js(env, &e)),
    })
}

fn describe_json(d: &plimsoll_core::wire::DescribeResponse) -> String {
    String::from_utf8_lossy(&encode(d)).into_owned()
}

fn request_from_json(json: &str) -> std::result::Result<Request, CoreError> {
    plimsoll_core::verify::request_from_json(json.as_bytes())
}

/// A promise that rejects with `e` (an async method never throws synchronously).
fn rejected<'env, V: ToNapiValue + 'static>(
    env: &'env Env,
    e: CoreError,
) -> Result<PromiseRaw<'env, V>> {
    promise(env, async move { Err::<(), _>(e) }, |_, ()| {
        Err(Error::new(
            Status::GenericFailure,
            "unreachable: a rejected call resolved",
        ))
    })
}

fn kind_mismatch() -> Error {
    Error::new(
        Status::GenericFailure,
        "the answer is not of the request's kind",
    )
}

/// The answer's object, when it is of the kind asked for (`None`: any kind).
fn pick(want: Option<&'static str>, (kind, v): (&'static str, Js)) -> Result<Js> {
    match want {
        Some(w) if w != kind => Err(kind_mismatch()),
        _ => Ok(v),
    }
}

fn run<'env>(
    env: &'env Env,
    runner: &Runner,
    (req, cancel): (Request, CancellationToken),
    want: Option<&'static str>,
) -> Result<PromiseRaw<'env, Js>> {
    let r = runner.clone();
    let sent = req.clone();
    promise(
        env,
        async move { r.run(req, cancel).await },
        move |_, resp| pick(want, results::run_result(&sent, resp, None)?),
    )
}

fn call<'env>(
    env: &'env Env,
    s: &CoreSession,
    (req, cancel): (Request, CancellationToken),
    want: Option<&'static str>,
) -> Result<PromiseRaw<'env, Js>> {
    let s = s.clone();
    promise(env, async move { s.run(req, cancel).await }, move |_, a| {
        pick(want, results::run_result(&a.request, a.response, a.ended)?)
    })
}

macro_rules! runner_methods {
    ($ty:ident) => {
        #[napi]
        impl $ty {
            /// What the engine or daemon serves: the plimsoll.v1 `DescribeResponse` as a JSON string.
            #[napi(ts_return_type = "Promise<string>")]
            pub fn describe<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, String>> {
                let r = self.runner.clone();
                promise(env, async move { r.describe().await }, |_, d| Ok(describe_json(&d)))
            }

            /// Runs a JavaScript snippet in a fresh sandbox.
            #[napi(ts_return_type = "Promise<JavaScriptResult>")]
            pub fn run_java_script<'env>(
                &self,
                env: &'env Env,
                code: String,
                options: Option<RunOptions>,
            ) -> Result<PromiseRaw<'env, Js>> {
                run(env, &self.runner, convert::javascript(code, options), Some("javascript"))
            }

            /// Runs a project: files written first, steps in order, artifacts collected.
            #[napi(ts_return_type = "Promise<ProjectResult>")]
            pub fn run_project<'env>(
                &self,
                env: &'env Env,
                project: ProjectInput,
                options: Option<RunOptions>,
            ) -> Result<PromiseRaw<'env, Js>> {
                run(env, &self.runner, convert::project(project, options), Some("project"))
            }

            /// Runs a request given in its plimsoll.v1 JSON form (`RunRequest`).
            #[napi(ts_return_type = "Promise<JavaScriptResult | ProjectResult | CellResult | ModuleResult>")]
            pub fn run_json<'env>(
                &self,
                env: &'env Env,
                request: String,
                options: Option<CallOptions>,
            ) -> Result<PromiseRaw<'env, Js>> {
                let cancel = convert::token(options.and_then(|o| o.signal));
                match request_from_json(&request) {
                    Ok(req) => run(env, &self.runner, (req, cancel), None),
                    Err(e) => rejected(env, e),
                }
            }

            /// Opens a session: one sandbox for many calls, one at a time.
            #[napi(ts_return_type = "Promise<Session>")]
            pub fn open_session<'env>(
                &self,
                env: &'env Env,
                options: Option<SessionOptions>,
            ) -> Result<PromiseRaw<'env, Session>> {
                let (opts, cancel) = convert::session(options);
                let r = self.runner.clone();
                let fut = async move {
                    tokio::select! {
                        s = r.open_session(opts) => s,
                        () = cancel.cancelled() => Err(CoreError::new(
                            plimsoll_core::ErrorCode::Cancelled,
                            "the caller cancelled the open",
                        )),
                    }
                };
                promise(env, fut, |_, s| Ok(Session { s }))
            }

            /// Ends an embedded engine's sessions (a no-op for a client).
            #[napi(ts_return_type = "Promise<void>")]
            pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
                let r = self.runner.clone();
                promise(
                    env,
                    async move {
                        r.shutdown().await;
                        Ok(())
                    },
                    |_, ()| Ok(()),
                )
            }
        }
    };
}

/// plimsoll-core in-process, configured like the daemon from its variables
/// (`{ SANDBOX_PROVIDER: 'wasm' }`); with none, the disabled provider refuses
/// every run. Create one with `Engine.start()`.
#[napi]
pub struct Engine {
    runner: Runner,
}

#[napi]
impl Engine {
    /// Starts an engine: builds the provider and runs its startup proof.
    #[napi(ts_return_type = "Promise<Engine>")]
    pub fn start<'env>(
        env: &'env Env,
        variables: Option<HashMap<String, String>>,
    ) -> Result<PromiseRaw<'env, Engine>> {
        let vars = variables.unwrap_or_default();
        env.spawn_future_with_callback(
            async move { Ok(Runner::embedded(&vars).await) },
            |env, r| match r {
                Ok(runner) => Ok(Engine { runner }),
                Err(e) => Err(errors::start_to_js(env, &e)),
            },
        )
    }
}

runner_methods!(Engine);

/// A client for plimsolld making every check the published client makes: answer
/// binding, record verification, the floor re-checked on the answer, session chains.
#[napi]
pub struct Client {
    runner: Runner,
}

#[napi]
impl Client {
    /// A client for the daemon at `baseUrl`. Cleartext http is refused off loopback
    /// unless `insecureHttp`.
    #[napi(constructor)]
    pub fn new(env: Env, base_url: String, options: Option<ClientOptions>) -> Result<Client> {
        let (token, insecure, timeout) = match options {
            Some(o) => (o.token, o.insecure_http.unwrap_or(false), o.timeout_ms),
            None => (None, false, None),
        };
        let timeout = timeout.map(|ms| Duration::from_millis(u64::from(ms.max(1))));
        let runner = Runner::remote(&base_url, token, insecure, timeout)
            .map_err(|e| errors::to_js(&env, &e))?;
        Ok(Client { runner })
    }
}

runner_methods!(Client);

/// An open session of an `Engine` or a `Client`. Calls run one at a time.
#[napi]
pub struct Session {
    s: CoreSession,
}

#[napi]
impl Session {
    /// The session fingerprint (the SHA-256 of its id, which every record carries).
    #[napi(getter)]
    pub fn fingerprint(&self) -> String {
        self.s.fingerprint().to_owned()
    }

    /// The tier measured at open.
    #[napi(getter)]
    pub fn isolation(&self) -> String {
        self.s.isolation().to_owned()
    }

    /// Runs a JavaScript snippet in the session.
    #[napi(ts_return_type = "Promise<JavaScriptResult>")]
    pub fn run_java_script<'env>(
        &self,
        env: &'env Env,
        code: String,
        options: Option<RunOptions>,
    ) -> Result<PromiseRaw<'env, Js>> {
        call(
            env,
            &self.s,
            convert::javascript(code, options),
            Some("javascript"),
        )
    }

    /// Runs a notebook cell (`javascript` or `python`) in the session's kept interpreter.
    #[napi(ts_return_type = "Promise<CellResult>")]
    pub fn run_cell<'env>(
        &self,
        env: &'env Env,
        language: String,
        code: String,
        options: Option<CellOptions>,
    ) -> Result<PromiseRaw<'env, Js>> {
        call(
            env,
            &self.s,
            convert::cell(language, code, options),
            Some("cell"),
        )
    }

    /// Runs a project in the session's work directory.
    #[napi(ts_return_type = "Promise<ProjectResult>")]
    pub fn run_project<'env>(
        &self,
        env: &'env Env,
        project: ProjectInput,
        options: Option<RunOptions>,
    ) -> Result<PromiseRaw<'env, Js>> {
        call(
            env,
            &self.s,
            convert::project(project, options),
            Some("project"),
        )
    }

    /// Runs a call given in its plimsoll.v1 JSON form (the session id is added).
    #[napi(
        ts_return_type = "Promise<JavaScriptResult | ProjectResult | CellResult | ModuleResult>"
    )]
    pub fn run_json<'env>(
        &self,
        env: &'env Env,
        request: String,
        options: Option<CallOptions>,
    ) -> Result<PromiseRaw<'env, Js>> {
        let cancel = convert::token(options.and_then(|o| o.signal));
        match request_from_json(&request) {
            Ok(req) => call(env, &self.s, (req, cancel), None),
            Err(e) => rejected(env, e),
        }
    }

    /// Closes the session and returns its summary; a second close rejects with `session_ended`.
    #[napi(ts_return_type = "Promise<SessionSummary>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Js>> {
        let s = self.s.clone();
        promise(env, async move { s.close().await }, |_, c| {
            Ok(results::summary(&c))
        })
    }
}
