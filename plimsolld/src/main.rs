//! plimsolld: serves plimsoll-core on the plimsoll.v1 Connect wire.
//!
//! Configured only by environment variables (`plimsolld -h` lists them).
//! Startup: parse → build and prove the provider → refuse below
//! `SANDBOX_MIN_ISOLATION` → refuse a real provider without auth → bind →
//! log Describe and readiness → serve until SIGTERM/SIGINT, letting in-flight
//! runs finish. With an egress guard (e2b with `E2B_GUARD_URL`), a second
//! listener on `PLIMSOLL_GUARD_ADDR` serves only the guard, under its own
//! connection cap, and drains after the RPC listener. Every listener serves
//! TLS when `PLIMSOLL_TLS_CERT`/`PLIMSOLL_TLS_KEY` are set, and runs
//! [`serve`]'s connection loop with its timeouts.

mod auth;
mod bodies;
mod guard;
mod listener;
mod metrics;
mod rpc;
mod serve;
mod server;
mod settings;
mod tls;

use std::process::ExitCode;
use std::sync::Arc;

use plimsoll_core::config::Env;
use plimsoll_core::engine::Engine;
use plimsoll_core::tier::Isolation;

use crate::rpc::App;
use crate::settings::Settings;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => {}
        ["-h"] | ["--help"] | ["help"] => {
            print!("{}", settings::help());
            return ExitCode::SUCCESS;
        }
        ["-V"] | ["--version"] => {
            println!("{}", version());
            return ExitCode::SUCCESS;
        }
        ["--check"] => return check(false),
        ["--check", "--json"] | ["--json", "--check"] => return check(true),
        _ => {
            eprintln!(
                "plimsolld takes no arguments but -h, --version and --check [--json]; it is configured by environment variables (see plimsolld -h)"
            );
            return ExitCode::from(2);
        }
    }
    let get = |name: &str| std::env::var(name).ok();
    let env = Env::new(&get);
    let settings = match Settings::from_env(&env) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plimsolld: {e}");
            return ExitCode::FAILURE;
        }
    };
    init_logging(&settings);
    if settings.hardened {
        let broken = settings.hardened_violations(&env);
        if !broken.is_empty() {
            eprintln!("plimsolld: hardened mode: {} rules broken", broken.len());
            for v in &broken {
                eprintln!("plimsolld: hardened mode: {v}");
            }
            return ExitCode::FAILURE;
        }
    }
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(serve(settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!(error = %message, "plimsolld stopped");
            eprintln!("plimsolld: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The git commit this binary was built from (see `build.rs`).
pub(crate) const COMMIT: &str = env!("BUILD_GIT_COMMIT");

/// The providers this build carries, by name.
pub(crate) fn providers() -> Vec<&'static str> {
    plimsoll_core::provider::PLUGINS
        .iter()
        .map(|p| p.name)
        .collect()
}

/// `plimsolld --version`: the version, the commit and the providers built in.
fn version() -> String {
    format!(
        "plimsolld {} (commit {COMMIT}; providers: {})",
        env!("CARGO_PKG_VERSION"),
        providers().join(", ")
    )
}

/// The multi-threaded tokio runtime, or `None` after saying why on stderr.
fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .inspect_err(|e| eprintln!("plimsolld: cannot start the runtime: {e}"))
        .ok()
}

/// `plimsolld --check [--json]`: the doctor's report on this host for the
/// configured provider, without serving. Exit 0 when that provider would
/// serve, 1 otherwise (or when the configuration itself is refused).
fn check(json: bool) -> ExitCode {
    let get = |name: &str| std::env::var(name).ok();
    let env = Env::new(&get);
    // Hardened mode's rules that need no sandbox, when it is on.
    let broken = match Settings::from_env(&env) {
        Ok(s) if s.hardened => s.hardened_violations(&env),
        _ => Vec::new(),
    };
    let config = match plimsoll_core::config::Config::from_env(&env) {
        Ok(c) => c,
        Err(e) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"ready": false, "error": e.to_string(), "checks": []})
                );
            } else {
                println!("fail  config  {e}");
            }
            return ExitCode::FAILURE;
        }
    };
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
    };
    let mut report = runtime.block_on(plimsoll_core::doctor::check(&config));
    report.checks.extend(broken.iter().map(|v| {
        plimsoll_core::readiness::Check::new(
            "hardened",
            v.variable,
            plimsoll_core::readiness::Level::Fail,
            v.rule.clone(),
        )
    }));
    if json {
        let mut out = report.to_json();
        out["ready"] = (report.ready() && broken.is_empty()).into();
        println!("{out}");
    } else {
        print!("{}", report.to_text());
        if !broken.is_empty() {
            println!(
                "hardened mode: {} rules broken (see the fail hardened lines)",
                broken.len()
            );
        }
    }
    if report.ready() && broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn init_logging(s: &Settings) {
    let filter =
        tracing_subscriber::EnvFilter::try_new(&s.log_filter).unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if s.json_logs {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}

async fn serve(settings: Settings) -> Result<(), String> {
    let engine = Engine::start(&settings.core)
        .await
        .map_err(|e| e.to_string())?;
    if settings.hardened {
        // The isolation rule, now that the tier is proven.
        if let Some(v) = plimsoll_core::hardened::proven(engine.isolation()) {
            engine.shutdown().await;
            return Err(format!("hardened mode: {v}"));
        }
        tracing::info!("hardened mode: every rule holds");
    }
    if engine.isolation() > Isolation::None && settings.verifier.is_open() && !settings.insecure {
        return Err(format!(
            "PLIMSOLL_TOKEN: the {} provider runs code, and no authentication is configured \
             (set PLIMSOLL_CLIENTS_FILE or PLIMSOLL_TOKEN, or PLIMSOLL_INSECURE=1 for development)",
            engine.provider_name()
        ));
    }
    // A bad key pair refuses startup before anything is reconciled or bound.
    let tls = match &settings.tls {
        Some(files) => Some(files.acceptor()?),
        None => None,
    };
    // Reconcile what a previous instance left (it may have been killed)
    // before listening, so /readyz never answers 200 over leftovers.
    let reconciled = std::time::Instant::now();
    reconcile_once(&engine).await;
    tracing::info!(
        elapsed_ms = reconciled.elapsed().as_millis() as u64,
        "startup reconcile done"
    );
    let listener = tokio::net::TcpListener::bind(settings.addr)
        .await
        .map_err(|e| format!("PLIMSOLL_ADDR: cannot listen on {}: {e}", settings.addr))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("PLIMSOLL_ADDR: {e}"))?;
    let guard = match (settings.guard_addr, engine.guard()) {
        (None, None) => None,
        (Some(gaddr), Some(g)) => {
            let l = tokio::net::TcpListener::bind(gaddr)
                .await
                .map_err(|e| format!("PLIMSOLL_GUARD_ADDR: cannot listen on {gaddr}: {e}"))?;
            Some((l, g))
        }
        (Some(_), None) => {
            return Err(format!(
                "PLIMSOLL_GUARD_ADDR: the {} provider has no egress guard; unset it",
                engine.provider_name()
            ));
        }
        (None, Some(_)) => {
            return Err(format!(
                "PLIMSOLL_GUARD_ADDR: required, the {} provider's granted runs reach their broker through the egress guard",
                engine.provider_name()
            ));
        }
    };
    let describe = String::from_utf8(plimsoll_core::wire::json::encode(&engine.describe()))
        .unwrap_or_default();
    let ready = engine.ready().await;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        commit = COMMIT,
        providers = %providers().join(","),
        describe = %describe,
        ready = ready.is_ok(),
        auth = %settings.verifier.describe(),
        instance = %settings.core.instance,
        startup = %engine
            .startup_phases()
            .iter()
            .map(|(n, d)| format!("{n}={:.1}ms", d.as_secs_f64() * 1000.0))
            .collect::<Vec<_>>()
            .join(" "),
        "serving"
    );
    // The guard and metrics listeners close after the RPC one and the provider:
    // runs in flight may still call their brokers.
    let drained = tokio_util::sync::CancellationToken::new();
    let mut closing = Vec::new();
    if let Some(maddr) = settings.metrics_addr {
        let ml = tokio::net::TcpListener::bind(maddr)
            .await
            .map_err(|e| format!("PLIMSOLL_METRICS_ADDR: cannot listen on {maddr}: {e}"))?;
        let bound = ml
            .local_addr()
            .map_err(|e| format!("PLIMSOLL_METRICS_ADDR: {e}"))?;
        if !bound.ip().is_loopback() {
            tracing::warn!(addr = %bound, "the metrics listener is not on loopback and has no authentication");
        }
        warn_clear_text("PLIMSOLL_METRICS_ADDR", bound, tls.is_some());
        let ml = listener::Guarded::new(ml, listener::METRICS_CAP);
        tracing::info!(addr = %bound, max_connections = ml.cap(), tls = tls.is_some(), "metrics listening");
        let router = metrics::router(Arc::new(engine.clone()));
        closing.push(tokio::spawn(serve::serve(
            ml,
            tls.clone(),
            router,
            serve::METRICS,
            drained.clone(),
        )));
    }
    // Reconcile leaked sandboxes every minute after the startup one.
    let reaper = engine.clone();
    tokio::spawn(async move {
        let period = std::time::Duration::from_secs(60);
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            tick.tick().await;
            reconcile_once(&reaper).await;
        }
    });
    let (rpc_cap, guard_cap) =
        listener::nofile_limit().map_or((usize::MAX / 2, usize::MAX / 2), listener::caps_for);
    let listener = listener::Guarded::new(listener, rpc_cap);
    warn_clear_text("PLIMSOLL_ADDR", addr, tls.is_some());
    tracing::info!(addr = %addr, max_connections = listener.cap(), tls = tls.is_some(), "listening");
    if let Some((l, g)) = guard {
        let gaddr = l
            .local_addr()
            .map_err(|e| format!("PLIMSOLL_GUARD_ADDR: {e}"))?;
        warn_clear_text("PLIMSOLL_GUARD_ADDR", gaddr, tls.is_some());
        let l = listener::Guarded::new(l, guard_cap);
        tracing::info!(addr = %gaddr, path = g.path(), max_connections = l.cap(), tls = tls.is_some(), "egress guard listening");
        closing.push(tokio::spawn(serve::serve(
            l,
            tls.clone(),
            guard::router(g),
            serve::RPC,
            drained.clone(),
        )));
    }
    let bodies = bodies::Bodies::new(settings.core.admission.max_concurrent as usize);
    tracing::info!(
        body_slots = bodies.slots(),
        body_memory_mib = bodies::MEMORY_BUDGET >> 20,
        "request bodies read at once"
    );
    let app = Arc::new(App {
        engine: engine.clone(),
        bodies,
        open_hosts_checked: settings.verifier.is_open(),
        verifier: settings.verifier,
        not_ready_logged: std::sync::Mutex::new(None),
    });
    let stop = tokio_util::sync::CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stopping.cancel();
    });
    serve::serve(listener, tls, server::router(app), serve::RPC, stop).await;
    // The runs are drained, then the provider; only then the guard and
    // metrics listeners close.
    engine.shutdown().await;
    drained.cancel();
    for listener in closing {
        if let Err(e) = listener.await {
            tracing::error!(error = %e, "a listener panicked");
        }
    }
    tracing::info!("drained; sessions ended; exiting");
    Ok(())
}

/// Warns that a listener off loopback serves clear text: bearer tokens,
/// code and answers cross the network readable.
fn warn_clear_text(variable: &str, addr: std::net::SocketAddr, tls: bool) {
    if !tls && !addr.ip().is_loopback() {
        tracing::warn!(
            variable,
            addr = %addr,
            "listening off loopback without TLS: tokens, code and answers cross the network in clear text (set PLIMSOLL_TLS_CERT and PLIMSOLL_TLS_KEY)"
        );
    }
}

/// One bounded reconcile pass, logged.
async fn reconcile_once(engine: &Engine) {
    match tokio::time::timeout(
        std::time::Duration::from_secs(30),
        engine.reconcile_orphans(),
    )
    .await
    {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::info!(removed = n, "reconciled leaked sandboxes"),
        Ok(Err(e)) => tracing::warn!(error = e.message(), "reconcile failed"),
        Err(_) => tracing::warn!("reconcile timed out"),
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stopping only when killed");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!(signal = "SIGTERM", "draining in-flight runs"),
        _ = int.recv() => tracing::info!(signal = "SIGINT", "draining in-flight runs"),
    }
}
