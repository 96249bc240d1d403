//! `plimsoll._native`: the Python surface of plimsoll-core.
//!
//! Thin by design: it converts Python arguments to core requests, calls the
//! core (the embedded [`Engine`](plimsoll_core::Engine) or the remote client,
//! through [`plimsoll_core::client`]), and maps core errors to one exception
//! per `ErrorCode`. No validation, hashing or policy lives here.

mod api;
mod convert;
mod errors;
mod results;
mod runtime;
mod verify;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PROTOCOL", plimsoll_core::request::PROTOCOL)?;
    errors::register(m)?;
    m.add_class::<api::SyncRunner>()?;
    m.add_class::<api::AsyncRunner>()?;
    m.add_class::<api::Engine>()?;
    m.add_class::<api::Client>()?;
    m.add_class::<api::AsyncEngine>()?;
    m.add_class::<api::AsyncClient>()?;
    m.add_class::<api::Session>()?;
    m.add_class::<api::AsyncSession>()?;
    m.add_class::<results::Record>()?;
    m.add_class::<results::RunResult>()?;
    m.add_class::<results::JavaScriptResult>()?;
    m.add_class::<results::CellResult>()?;
    m.add_class::<results::ProjectResult>()?;
    m.add_class::<results::ModuleResult>()?;
    m.add_class::<results::Step>()?;
    m.add_class::<results::SessionSummary>()?;
    m.add_class::<verify::Chain>()?;
    m.add_function(wrap_pyfunction!(verify::verify_run, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_for_code, m)?)?;
    Ok(())
}
