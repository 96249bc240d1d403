//! Running core futures from Python: one tokio runtime (pyo3-async-runtimes'),
//! the GIL released while a synchronous call blocks, and cancellation by drop.
//!
//! Every call is spawned as its own task holding a [`CancellationToken`]; the
//! future Python waits on holds the token's drop guard. When that future is
//! dropped — an asyncio task cancelled, Ctrl-C in a blocking call — the token
//! is cancelled and the core stops the run. The core decides what a cancelled
//! run answers.

use std::future::Future;
use std::time::Duration;

use plimsoll_core::Error;
use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::errors;

/// The runtime every call runs on.
pub fn rt() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Spawns `f(token)`; the returned future cancels `token` if dropped before the task ends.
pub fn spawn<T, F, Fut>(f: F) -> impl Future<Output = Result<T, Error>> + Send + 'static
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = Result<T, Error>> + Send + 'static,
    T: Send + 'static,
{
    let token = CancellationToken::new();
    let handle = rt().spawn(f(token.clone()));
    let guard = token.drop_guard();
    async move {
        let r = handle.await;
        guard.disarm();
        r.unwrap_or_else(|_| Err(Error::infrastructure("the call's task failed")))
    }
}

/// Converts a finished call's value to Python.
pub type Convert<T> = Box<dyn FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send>;

/// Blocks until `fut` resolves with the GIL released; a pending signal
/// (Ctrl-C) drops the call, which cancels its run, and is raised.
pub fn block<T, Fut>(py: Python<'_>, fut: Fut, convert: Convert<T>) -> PyResult<Py<PyAny>>
where
    Fut: Future<Output = Result<T, Error>> + Send,
    T: Send,
{
    let out = py.detach(|| {
        rt().block_on(async move {
            let mut fut = std::pin::pin!(fut);
            loop {
                tokio::select! {
                    r = &mut fut => return Ok::<_, PyErr>(r),
                    () = tokio::time::sleep(Duration::from_millis(50)) => {
                        Python::attach(|py| py.check_signals())?;
                    }
                }
            }
        })
    })?;
    match out {
        Ok(v) => convert(py, v),
        Err(e) => Err(errors::to_py(py, &e)),
    }
}

/// An asyncio awaitable for `fut`; cancelling it cancels the run.
pub fn awaitable<T, Fut>(py: Python<'_>, fut: Fut, convert: Convert<T>) -> PyResult<Py<PyAny>>
where
    Fut: Future<Output = Result<T, Error>> + Send + 'static,
    T: Send + 'static,
{
    let aw = pyo3_async_runtimes::tokio::future_into_py(py, async move {
        let r = fut.await;
        Python::attach(|py| match r {
            Ok(v) => convert(py, v),
            Err(e) => Err(errors::to_py(py, &e)),
        })
    })?;
    Ok(aw.unbind())
}
