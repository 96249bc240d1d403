//! `/metrics` on its own listener (`PLIMSOLL_METRICS_ADDR`, loopback by
//! default, no auth): Prometheus text, counters only — never a token, a body,
//! a caller id or a session id.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use plimsoll_core::engine::Engine;

/// Renders the engine's counters as Prometheus text.
pub fn render(engine: &Engine) -> String {
    let s = engine.stats();
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, rows: &[(String, u64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    metric(
        "plimsoll_runs_total",
        "counter",
        "Runs answered with a result.",
        &[(String::new(), s.runs)],
    );
    metric(
        "plimsoll_runs_failed_total",
        "counter",
        "Runs that ended in an infrastructure error after dispatch.",
        &[(String::new(), s.failed)],
    );
    metric(
        "plimsoll_inflight",
        "gauge",
        "Runs in progress.",
        &[(String::new(), u64::from(s.in_flight))],
    );
    let shed: Vec<(String, u64)> = s
        .shed
        .iter()
        .map(|(why, n)| (format!("{{reason=\"{}\"}}", why.as_str()), *n))
        .collect();
    metric(
        "plimsoll_shed_total",
        "counter",
        "Runs refused at admission, by reason.",
        &shed,
    );
    let calls: Vec<(String, u64)> = engine
        .grants()
        .metrics()
        .snapshot()
        .into_iter()
        .map(|((profile, method, route, outcome), n)| {
            (format!("{{profile=\"{profile}\",method=\"{method}\",route=\"{route}\",outcome=\"{outcome}\"}}"), n)
        })
        .collect();
    metric(
        "plimsoll_host_calls_total",
        "counter",
        "Brokered API calls, by profile, method, route pattern and outcome.",
        &calls,
    );
    metric(
        "plimsoll_build_info",
        "gauge",
        "The build (version, git commit, providers built in) and the provider serving.",
        &[(
            format!(
                "{{version=\"{}\",commit=\"{}\",providers=\"{}\",provider=\"{}\",isolation=\"{}\"}}",
                env!("CARGO_PKG_VERSION"),
                crate::COMMIT,
                crate::providers().join(","),
                engine.provider_name(),
                engine.isolation()
            ),
            1,
        )],
    );
    out
}

async fn handle(State(engine): State<Arc<Engine>>, req: axum::extract::Request) -> Response {
    if req.uri().path() != "/metrics" {
        let mut r = Response::new(Body::from("not found"));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    }
    let mut r = Response::new(Body::from(render(&engine)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

/// The metrics router.
pub fn router(engine: Arc<Engine>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(engine)
}
