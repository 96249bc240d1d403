//! `plimsoll-standin`: runs one stand-in until SIGINT or SIGTERM, then
//! removes every sandbox it made. Prints one JSON line on stdout with the
//! addresses it listens on, so a caller can bind port 0.
//!
//! ```text
//! E2B_API_KEY=e2b_… plimsoll-standin e2b [--api ADDR] [--envd ADDR]
//!     [--template NAME=IMAGE[,cpu=N][,memory=MB][,disk=MB]]… [--runtime RUNTIME]
//!     [--domain DOMAIN] [--upstream HOST=IP:PORT]…
//!     [--fault omit-envd-token|allow-egress]…
//! DOCKER_SBX_USERNAME=… DOCKER_SBX_TOKEN=… plimsoll-standin dockercloud
//!     [--auth ADDR] [--api ADDR] [--endpoint ADDR] [--image REF=LOCALIMAGE]…
//!     [--resources CPUS/MIB]… [--token-ttl SECONDS] [--runtime RUNTIME]
//!     [--upstream HOST=IP:PORT]…
//!     [--fault account-allow-all|policy-allows|deny-policy-read|allow-egress
//!     |throttle-reads|policy-ignores-rule]…
//! plimsoll-standin openshell [--listen ADDR] (--certs-dir DIR
//!     | --cert FILE --key FILE --client-ca FILE [--ca FILE])
//!     [--image REF=LOCALIMAGE]… [--runtime RUNTIME]
//!     [--fault other-driver|readback-differs|policy-drift|egress-open]…
//! ```

use std::collections::HashMap;
use std::process::ExitCode;

mod openshell_cli;

use plimsoll_standins::dockercloud;
use plimsoll_standins::e2b::{self, Faults, Settings, Template};

const USAGE_DOCKERCLOUD: &str = "usage: DOCKER_SBX_USERNAME=<id> DOCKER_SBX_TOKEN=<pat> \
plimsoll-standin dockercloud [--auth ADDR] [--api ADDR] [--endpoint ADDR] [--image REF=LOCALIMAGE]... \
[--resources CPUS/MIB]... [--token-ttl SECONDS] [--runtime RUNTIME] [--upstream HOST=IP:PORT]... \
[--fault account-allow-all|policy-allows|deny-policy-read|allow-egress|throttle-reads|policy-ignores-rule]...";

const USAGE: &str = "usage: E2B_API_KEY=e2b_<hex> plimsoll-standin e2b [--api ADDR] [--envd ADDR] \
[--template NAME=IMAGE[,cpu=N][,memory=MB][,disk=MB]]... [--runtime RUNTIME] [--domain DOMAIN] \
[--upstream HOST=IP:PORT]... [--fault omit-envd-token|allow-egress]...";

fn template(spec: &str) -> Result<(String, Template), String> {
    let (name, rest) = spec
        .split_once('=')
        .ok_or_else(|| format!("--template {spec:?}: expected NAME=IMAGE"))?;
    let mut parts = rest.split(',');
    let image = parts.next().unwrap_or_default().to_owned();
    let mut t = Template {
        image,
        cpu_count: 1,
        memory_mb: 512,
        disk_size_mb: 1024,
    };
    for p in parts {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| format!("--template: {p:?} is not KEY=VALUE"))?;
        let n: u32 = v
            .parse()
            .map_err(|_| format!("--template: {k}={v:?} is not a number"))?;
        match k {
            "cpu" => t.cpu_count = n.max(1),
            "memory" => t.memory_mb = n.max(128),
            "disk" => t.disk_size_mb = n,
            _ => return Err(format!("--template: unknown key {k:?}")),
        }
    }
    if name.is_empty() || t.image.is_empty() {
        return Err(format!("--template {spec:?}: expected NAME=IMAGE"));
    }
    Ok((name.to_owned(), t))
}

struct Args {
    settings: Settings,
    api: String,
    envd: String,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let api_key = std::env::var("E2B_API_KEY").map_err(|_| "E2B_API_KEY is not set".to_owned())?;
    let (mut api, mut envd) = ("127.0.0.1:0".to_owned(), "127.0.0.1:0".to_owned());
    let mut templates = HashMap::new();
    let (mut runtime, mut domain, mut faults) =
        (None, "e2b.standin.invalid".to_owned(), Faults::default());
    let mut upstreams = HashMap::new();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--api" => api = value()?,
            "--envd" => envd = value()?,
            "--template" => {
                let (n, t) = template(&value()?)?;
                templates.insert(n, t);
            }
            "--runtime" => runtime = Some(value()?),
            "--domain" => domain = value()?,
            "--upstream" => {
                let (host, addr) = upstream(&value()?)?;
                upstreams.insert(host, addr);
            }
            "--fault" => match value()?.as_str() {
                "omit-envd-token" => faults.omit_envd_token = true,
                "allow-egress" => faults.allow_egress = true,
                other => return Err(format!("unknown fault {other:?}")),
            },
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if templates.is_empty() {
        templates.insert(
            "base".to_owned(),
            template("base=plimsoll/e2b:latest").map(|(_, t)| t)?,
        );
    }
    Ok(Args {
        settings: Settings {
            api_key,
            templates,
            runtime,
            domain,
            faults,
            upstreams,
        },
        api,
        envd,
    })
}

async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

struct DockerCloudArgs {
    settings: dockercloud::Settings,
    auth: String,
    api: String,
    endpoint: String,
}

fn parse_dockercloud(mut args: impl Iterator<Item = String>) -> Result<DockerCloudArgs, String> {
    let env = |k: &str| std::env::var(k).map_err(|_| format!("{k} is not set"));
    let (username, token) = (env("DOCKER_SBX_USERNAME")?, env("DOCKER_SBX_TOKEN")?);
    let mut addrs = [
        "127.0.0.1:0".to_owned(),
        "127.0.0.1:0".to_owned(),
        "127.0.0.1:0".to_owned(),
    ];
    let mut images = HashMap::new();
    let mut upstreams = HashMap::new();
    let mut extra_resources = Vec::new();
    let (mut runtime, mut ttl, mut faults) = (None, 900u64, dockercloud::Faults::default());
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--auth" => addrs[0] = value()?,
            "--api" => addrs[1] = value()?,
            "--endpoint" => addrs[2] = value()?,
            "--image" => {
                let v = value()?;
                match v.split_once('=') {
                    Some((r, i)) if !r.is_empty() && !i.is_empty() => {
                        images.insert(r.to_owned(), i.to_owned());
                    }
                    _ => return Err(format!("--image {v:?}: expected REF=LOCALIMAGE")),
                }
            }
            "--resources" => {
                let v = value()?;
                let pair = v
                    .split_once('/')
                    .and_then(|(c, m)| Some((c.parse().ok()?, m.parse().ok()?)));
                match pair {
                    Some(p) => extra_resources.push(p),
                    None => return Err(format!("--resources {v:?}: expected CPUS/MIB")),
                }
            }
            "--token-ttl" => {
                let v = value()?;
                ttl = v
                    .parse()
                    .ok()
                    .filter(|t| *t > 0)
                    .ok_or_else(|| format!("--token-ttl {v:?}: expected whole seconds"))?;
            }
            "--runtime" => runtime = Some(value()?),
            "--upstream" => {
                let (host, addr) = upstream(&value()?)?;
                upstreams.insert(host, addr);
            }
            "--fault" => match value()?.as_str() {
                "policy-ignores-rule" => faults.policy_ignores_rule = true,
                "account-allow-all" => faults.account_allow_all = true,
                "policy-allows" => faults.policy_allows = true,
                "deny-policy-read" => faults.deny_policy_read = true,
                "allow-egress" => faults.allow_egress = true,
                "throttle-reads" => faults.throttle_reads = true,
                other => return Err(format!("unknown fault {other:?}")),
            },
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if images.is_empty() {
        images.insert(
            "plimsoll/project:latest".to_owned(),
            "plimsoll/project:latest".to_owned(),
        );
    }
    let [auth, api, endpoint] = addrs;
    Ok(DockerCloudArgs {
        settings: dockercloud::Settings {
            username,
            token,
            images,
            extra_resources,
            runtime,
            access_token_ttl: std::time::Duration::from_secs(ttl),
            upstreams,
            faults,
        },
        auth,
        api,
        endpoint,
    })
}

/// `--upstream HOST=IP:PORT`: where the egress proxy sends what a sandbox
/// sends to HOST (plain HTTP, so a loopback address only).
fn upstream(v: &str) -> Result<(String, std::net::SocketAddr), String> {
    let (host, addr) = v
        .split_once('=')
        .ok_or_else(|| format!("--upstream {v:?}: expected HOST=IP:PORT"))?;
    let addr: std::net::SocketAddr = addr
        .parse()
        .map_err(|_| format!("--upstream {v:?}: {addr:?} is not IP:PORT"))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--upstream {v:?}: the upstream is spoken to in plain HTTP, so only a loopback address"
        ));
    }
    Ok((host.to_ascii_lowercase(), addr))
}

async fn bind(addr: String) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("binding {addr}: {e}"))
}

fn url(l: &tokio::net::TcpListener) -> String {
    l.local_addr()
        .map(|a| format!("http://{a}"))
        .unwrap_or_default()
}

async fn main_dockercloud(args: impl Iterator<Item = String>) -> ExitCode {
    let args = match parse_dockercloud(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}\n{USAGE_DOCKERCLOUD}");
            return ExitCode::from(2);
        }
    };
    let (auth, api, endpoint) = match (
        bind(args.auth).await,
        bind(args.api).await,
        bind(args.endpoint).await,
    ) {
        (Ok(a), Ok(m), Ok(e)) => (a, m, e),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            eprintln!("plimsoll-standin: {e}");
            return ExitCode::FAILURE;
        }
    };
    let standin = match dockercloud::StandIn::new(args.settings) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{}",
        serde_json::json!({
            "auth": url(&auth),
            "api": format!("{}/sandboxes", url(&api)),
            "connect": format!("{}/sbx", url(&api)),
            "policy": format!("{}/v1", url(&api)),
            "endpoint": url(&endpoint),
        })
    );
    match dockercloud::serve(standin, auth, api, endpoint, stopped()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let mut argv = std::env::args().skip(1);
    match argv.next().as_deref() {
        Some("e2b") => {}
        Some("dockercloud") => return main_dockercloud(argv).await,
        Some("openshell") => return openshell_cli::main(argv, stopped()).await,
        _ => {
            eprintln!(
                "plimsoll-standin: the first argument names the stand-in: e2b, dockercloud or openshell\n{USAGE}\n{USAGE_DOCKERCLOUD}\n{}",
                openshell_cli::USAGE
            );
            return ExitCode::from(2);
        }
    }
    let args = match parse(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let bind = |addr: String| async move {
        tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("binding {addr}: {e}"))
    };
    let (api, envd) = match (bind(args.api).await, bind(args.envd).await) {
        (Ok(a), Ok(e)) => (a, e),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("plimsoll-standin: {e}");
            return ExitCode::FAILURE;
        }
    };
    let standin = match e2b::StandIn::new(args.settings) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = |l: &tokio::net::TcpListener| {
        l.local_addr()
            .map(|a| format!("http://{a}"))
            .unwrap_or_default()
    };
    println!(
        "{}",
        serde_json::json!({"api": addr(&api), "envd": addr(&envd)})
    );
    match e2b::serve(standin, api, envd, stopped()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}");
            ExitCode::FAILURE
        }
    }
}
