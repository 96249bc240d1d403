//! The Python classes: `Engine` and `Client` (synchronous), `AsyncEngine` and
//! `AsyncClient` (asyncio), and their sessions. One macro writes each method
//! once for both flavours; the flavour only decides how the core future is
//! waited on ([`runtime::block`] or [`runtime::awaitable`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use plimsoll_core::Error;
use plimsoll_core::client::{Runner, Session as CoreSession, SessionAnswer};
use plimsoll_core::wire::json::encode;
use pyo3::prelude::*;

use crate::convert::{self, EnvelopeArgs};
use crate::errors;
use crate::results::{self, SessionSummary};
use crate::runtime::{awaitable, block, rt, spawn};

/// Starts an embedded engine with the GIL released.
fn start(py: Python<'_>, env: Option<HashMap<String, String>>) -> PyResult<Runner> {
    let vars = env.unwrap_or_default();
    py.detach(|| rt().block_on(Runner::embedded(&vars)))
        .map_err(|e| errors::start_to_py(py, &e))
}

/// A remote client; `timeout` in seconds bounds each exchange.
fn connect(
    py: Python<'_>,
    base_url: &str,
    token: Option<String>,
    insecure_http: bool,
    timeout: Option<f64>,
) -> PyResult<Runner> {
    let timeout = timeout
        .map(|t| {
            Duration::try_from_secs_f64(t)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| Error::invalid("timeout must be a positive number of seconds"))
        })
        .transpose()
        .map_err(|e| errors::to_py(py, &e))?;
    let _guard = rt().enter();
    Runner::remote(base_url, token, insecure_http, timeout).map_err(|e| errors::to_py(py, &e))
}

fn describe_to_py(
    py: Python<'_>,
    d: &plimsoll_core::wire::DescribeResponse,
) -> PyResult<Py<PyAny>> {
    let text = String::from_utf8_lossy(&encode(d)).into_owned();
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

/// The synchronous base of `Engine` and `Client`.
#[pyclass(module = "plimsoll", name = "_Runner", subclass, frozen)]
pub struct SyncRunner {
    runner: Runner,
}

/// The asyncio base of `AsyncEngine` and `AsyncClient`.
#[pyclass(module = "plimsoll", name = "_AsyncRunner", subclass, frozen)]
pub struct AsyncRunner {
    runner: Runner,
}

/// A session of an `Engine` or a `Client`: one sandbox for many calls, one at a time.
#[pyclass(module = "plimsoll", frozen)]
pub struct Session {
    s: CoreSession,
    closed: AtomicBool,
}

/// A session of an `AsyncEngine` or an `AsyncClient`.
#[pyclass(module = "plimsoll", frozen)]
pub struct AsyncSession {
    s: CoreSession,
    closed: AtomicBool,
}

fn answer_to_py(py: Python<'_>, a: SessionAnswer) -> PyResult<Py<PyAny>> {
    results::run_result(py, &a.request, a.response, a.ended)
}

macro_rules! runner_methods {
    ($ty:ident, $wait:ident, $session:ident) => {
        #[pymethods]
        impl $ty {
            /// What the engine or daemon serves, as the plimsoll.v1 `DescribeResponse` JSON object.
            fn describe(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                let r = self.runner.clone();
                let fut = spawn(move |_| async move { r.describe().await });
                $wait(py, fut, Box::new(|py, d| describe_to_py(py, &d)))
            }

            /// Runs a JavaScript snippet in a fresh sandbox.
            #[pyo3(signature = (code, *, grant_profile="", minimum_isolation="", timeout_ms=0, software_rule=None, trace_id=""))]
            #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
            fn run_javascript(
                &self,
                py: Python<'_>,
                code: String,
                grant_profile: &str,
                minimum_isolation: &str,
                timeout_ms: i32,
                software_rule: Option<Bound<'_, PyAny>>,
                trace_id: &str,
            ) -> PyResult<Py<PyAny>> {
                let env = EnvelopeArgs::new(minimum_isolation, timeout_ms, software_rule, trace_id);
                let req = convert::request(convert::javascript(code, grant_profile.to_owned()), env)?;
                self.run_request(py, req)
            }

            /// Runs a project: files written first, steps in order, artifacts collected.
            #[pyo3(signature = (files, steps, *, artifacts=Vec::new(), grant_profile="", minimum_isolation="", timeout_ms=0, software_rule=None, trace_id=""))]
            #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
            fn run_project(
                &self,
                py: Python<'_>,
                files: Option<Bound<'_, PyAny>>,
                steps: Vec<String>,
                artifacts: Vec<String>,
                grant_profile: &str,
                minimum_isolation: &str,
                timeout_ms: i32,
                software_rule: Option<Bound<'_, PyAny>>,
                trace_id: &str,
            ) -> PyResult<Py<PyAny>> {
                let env = EnvelopeArgs::new(minimum_isolation, timeout_ms, software_rule, trace_id);
                let payload = convert::project(files.as_ref(), steps, artifacts, grant_profile.to_owned())?;
                self.run_request(py, convert::request(payload, env)?)
            }

            /// Runs a request given in its plimsoll.v1 JSON form (`RunRequest`, str or bytes).
            fn run_json(&self, py: Python<'_>, request: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                let req = convert::request_from_json(py, &request)?;
                self.run_request(py, req)
            }

            /// Opens a session: one sandbox for many calls.
            #[pyo3(signature = (*, minimum_isolation="", software_rule=None, lifetime_ms=0, idle_timeout_ms=0, languages=Vec::new()))]
            fn open_session(
                &self,
                py: Python<'_>,
                minimum_isolation: &str,
                software_rule: Option<Bound<'_, PyAny>>,
                lifetime_ms: u32,
                idle_timeout_ms: u32,
                languages: Vec<String>,
            ) -> PyResult<Py<PyAny>> {
                let opts = convert::session_options(
                    minimum_isolation.to_owned(),
                    software_rule.as_ref(),
                    lifetime_ms,
                    idle_timeout_ms,
                    languages,
                )?;
                let r = self.runner.clone();
                let fut = spawn(move |_| async move { r.open_session(opts).await });
                $wait(
                    py,
                    fut,
                    Box::new(|py, s| {
                        Ok(Py::new(py, $session { s, closed: AtomicBool::new(false) })?.into_any())
                    }),
                )
            }

            /// Ends an embedded engine's sessions (a no-op for a client).
            fn close(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                let r = self.runner.clone();
                let fut = spawn(move |_| async move {
                    r.shutdown().await;
                    Ok::<_, Error>(())
                });
                $wait(py, fut, Box::new(|py, ()| Ok(py.None())))
            }
        }

        impl $ty {
            fn run_request(
                &self,
                py: Python<'_>,
                req: plimsoll_core::Request,
            ) -> PyResult<Py<PyAny>> {
                let r = self.runner.clone();
                let sent = req.clone();
                let fut = spawn(move |cancel| async move { r.run(req, cancel).await });
                $wait(
                    py,
                    fut,
                    Box::new(move |py, resp| results::run_result(py, &sent, resp, None)),
                )
            }
        }
    };
}

runner_methods!(SyncRunner, block, Session);
runner_methods!(AsyncRunner, awaitable, AsyncSession);

macro_rules! session_methods {
    ($ty:ident, $wait:ident, { $($extra:tt)* }) => {
        #[pymethods]
        impl $ty {
            $($extra)*

            /// The session fingerprint (the SHA-256 of its id, which every record carries).
            #[getter]
            fn fingerprint(&self) -> &str {
                self.s.fingerprint()
            }

            /// The tier measured at open.
            #[getter]
            fn isolation(&self) -> &str {
                self.s.isolation()
            }

            /// Runs a JavaScript snippet in the session.
            #[pyo3(signature = (code, *, grant_profile="", minimum_isolation="", timeout_ms=0, software_rule=None, trace_id=""))]
            #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
            fn run_javascript(
                &self,
                py: Python<'_>,
                code: String,
                grant_profile: &str,
                minimum_isolation: &str,
                timeout_ms: i32,
                software_rule: Option<Bound<'_, PyAny>>,
                trace_id: &str,
            ) -> PyResult<Py<PyAny>> {
                let env = EnvelopeArgs::new(minimum_isolation, timeout_ms, software_rule, trace_id);
                let req = convert::request(convert::javascript(code, grant_profile.to_owned()), env)?;
                self.call(py, req)
            }

            /// Runs a notebook cell (`javascript` or `python`) in the session's kept interpreter.
            #[pyo3(signature = (language, code, *, files=None, minimum_isolation="", timeout_ms=0, software_rule=None, trace_id=""))]
            #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
            fn run_cell(
                &self,
                py: Python<'_>,
                language: String,
                code: String,
                files: Option<Bound<'_, PyAny>>,
                minimum_isolation: &str,
                timeout_ms: i32,
                software_rule: Option<Bound<'_, PyAny>>,
                trace_id: &str,
            ) -> PyResult<Py<PyAny>> {
                let env = EnvelopeArgs::new(minimum_isolation, timeout_ms, software_rule, trace_id);
                let req = convert::request(convert::cell(language, code, files.as_ref())?, env)?;
                self.call(py, req)
            }

            /// Runs a project in the session's work directory.
            #[pyo3(signature = (files, steps, *, artifacts=Vec::new(), grant_profile="", minimum_isolation="", timeout_ms=0, software_rule=None, trace_id=""))]
            #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
            fn run_project(
                &self,
                py: Python<'_>,
                files: Option<Bound<'_, PyAny>>,
                steps: Vec<String>,
                artifacts: Vec<String>,
                grant_profile: &str,
                minimum_isolation: &str,
                timeout_ms: i32,
                software_rule: Option<Bound<'_, PyAny>>,
                trace_id: &str,
            ) -> PyResult<Py<PyAny>> {
                let env = EnvelopeArgs::new(minimum_isolation, timeout_ms, software_rule, trace_id);
                let payload = convert::project(files.as_ref(), steps, artifacts, grant_profile.to_owned())?;
                self.call(py, convert::request(payload, env)?)
            }

            /// Runs a call given in its plimsoll.v1 JSON form (the session id is added).
            fn run_json(&self, py: Python<'_>, request: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                let req = convert::request_from_json(py, &request)?;
                self.call(py, req)
            }

            /// Closes the session and returns its summary. A second close raises `SessionEndedError`.
            fn close(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                self.closed.store(true, Ordering::SeqCst);
                let s = self.s.clone();
                let fut = spawn(move |_| async move { s.close().await });
                $wait(
                    py,
                    fut,
                    Box::new(|py, c| Ok(Py::new(py, SessionSummary::from(c))?.into_any())),
                )
            }
        }

        impl $ty {
            fn call(&self, py: Python<'_>, req: plimsoll_core::Request) -> PyResult<Py<PyAny>> {
                let s = self.s.clone();
                let fut = spawn(move |cancel| async move { s.run(req, cancel).await });
                $wait(py, fut, Box::new(answer_to_py))
            }

            /// Closes unless `close` was already called (for context managers).
            fn close_once(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                if self.closed.swap(true, Ordering::SeqCst) {
                    let fut = async { Ok::<_, Error>(()) };
                    return $wait(py, fut, Box::new(|py, ()| Ok(py.None())));
                }
                let s = self.s.clone();
                let fut = spawn(move |_| async move { s.close().await.map(|_| ()) });
                $wait(py, fut, Box::new(|py, ()| Ok(py.None())))
            }
        }
    };
}

session_methods!(Session, block, {
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close_once(py)?;
        Ok(false)
    }
});
session_methods!(AsyncSession, awaitable, {
    fn __aenter__(slf: Py<Self>, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fut = async move { Ok::<_, Error>(slf) };
        awaitable(py, fut, Box::new(|py, s| Ok(s.into_any().clone_ref(py))))
    }

    fn __aexit__(
        &self,
        py: Python<'_>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.close_once(py)
    }
});

/// The embedded engine, configured like the daemon from a dict of its variables
/// (`{"SANDBOX_PROVIDER": "wasm"}`); with none, the disabled provider refuses every run.
/// Starting runs the provider's startup proof; calls block with the GIL released.
#[pyclass(module = "plimsoll", extends = SyncRunner, frozen)]
pub struct Engine;

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (env=None))]
    fn new(
        py: Python<'_>,
        env: Option<HashMap<String, String>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let runner = start(py, env)?;
        Ok(PyClassInitializer::from(SyncRunner { runner }).add_subclass(Engine))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        slf: &Bound<'_, Self>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        slf.as_super().get().close(slf.py())?;
        Ok(false)
    }
}

/// A client for plimsolld making every check the published client makes: answer
/// binding, record verification, the floor re-checked on the answer, session chains.
#[pyclass(module = "plimsoll", extends = SyncRunner, frozen)]
pub struct Client;

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (base_url, *, token=None, insecure_http=false, timeout=None))]
    fn new(
        py: Python<'_>,
        base_url: &str,
        token: Option<String>,
        insecure_http: bool,
        timeout: Option<f64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let runner = connect(py, base_url, token, insecure_http, timeout)?;
        Ok(PyClassInitializer::from(SyncRunner { runner }).add_subclass(Client))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> bool {
        false
    }
}

/// `Engine` for asyncio: every call returns an awaitable; cancelling it cancels the run.
#[pyclass(module = "plimsoll", extends = AsyncRunner, frozen)]
pub struct AsyncEngine;

#[pymethods]
impl AsyncEngine {
    #[new]
    #[pyo3(signature = (env=None))]
    fn new(
        py: Python<'_>,
        env: Option<HashMap<String, String>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let runner = start(py, env)?;
        Ok(PyClassInitializer::from(AsyncRunner { runner }).add_subclass(AsyncEngine))
    }

    /// Starts an engine without blocking the event loop (the constructor
    /// blocks while the provider's startup proof runs).
    #[staticmethod]
    #[pyo3(signature = (env=None))]
    fn start(py: Python<'_>, env: Option<HashMap<String, String>>) -> PyResult<Py<PyAny>> {
        let vars = env.unwrap_or_default();
        let aw = pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let started = Runner::embedded(&vars).await;
            Python::attach(|py| match started {
                Ok(runner) => Ok(Py::new(
                    py,
                    PyClassInitializer::from(AsyncRunner { runner }).add_subclass(AsyncEngine),
                )?
                .into_any()),
                Err(e) => Err(errors::start_to_py(py, &e)),
            })
        })?;
        Ok(aw.unbind())
    }

    fn __aenter__(slf: Py<Self>, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fut = async move { Ok::<_, Error>(slf) };
        awaitable(py, fut, Box::new(|py, s| Ok(s.into_any().clone_ref(py))))
    }

    fn __aexit__(
        slf: &Bound<'_, Self>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        slf.as_super().get().close(slf.py())
    }
}

/// `Client` for asyncio.
#[pyclass(module = "plimsoll", extends = AsyncRunner, frozen)]
pub struct AsyncClient;

#[pymethods]
impl AsyncClient {
    #[new]
    #[pyo3(signature = (base_url, *, token=None, insecure_http=false, timeout=None))]
    fn new(
        py: Python<'_>,
        base_url: &str,
        token: Option<String>,
        insecure_http: bool,
        timeout: Option<f64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let runner = connect(py, base_url, token, insecure_http, timeout)?;
        Ok(PyClassInitializer::from(AsyncRunner { runner }).add_subclass(AsyncClient))
    }

    fn __aenter__(slf: Py<Self>, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fut = async move { Ok::<_, Error>(slf) };
        awaitable(py, fut, Box::new(|py, s| Ok(s.into_any().clone_ref(py))))
    }

    fn __aexit__(
        slf: &Bound<'_, Self>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        slf.as_super().get().close(slf.py())
    }
}
