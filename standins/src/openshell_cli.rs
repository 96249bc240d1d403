//! `plimsoll-standin openshell …`: the OpenShell gateway stand-in's command line.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use plimsoll_standins::openshell::{self, Faults, Settings, tls::ServerTls};

/// How to call it.
pub const USAGE: &str = "usage: plimsoll-standin openshell [--listen ADDR] \
(--certs-dir DIR | --cert FILE --key FILE --client-ca FILE [--ca FILE]) \
[--image REF=LOCALIMAGE]... [--runtime RUNTIME] \
[--fault other-driver|readback-differs|policy-drift|egress-open]...";

struct Args {
    settings: Settings,
    listen: String,
    tls: ServerTls,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut listen = "127.0.0.1:0".to_owned();
    let (mut certs_dir, mut cert, mut key, mut client_ca, mut ca) = (
        None::<PathBuf>,
        None::<PathBuf>,
        None::<PathBuf>,
        None::<PathBuf>,
        None::<PathBuf>,
    );
    let mut images = HashMap::new();
    let (mut runtime, mut faults) = (None, Faults::default());
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--listen" => listen = value()?,
            "--certs-dir" => certs_dir = Some(value()?.into()),
            "--cert" => cert = Some(value()?.into()),
            "--key" => key = Some(value()?.into()),
            "--client-ca" => client_ca = Some(value()?.into()),
            "--ca" => ca = Some(value()?.into()),
            "--image" => {
                let v = value()?;
                match v.split_once('=') {
                    Some((r, i)) if !r.is_empty() && !i.is_empty() => {
                        images.insert(r.to_owned(), i.to_owned());
                    }
                    _ => return Err(format!("--image {v:?}: expected REF=LOCALIMAGE")),
                }
            }
            "--runtime" => runtime = Some(value()?),
            "--fault" => match value()?.as_str() {
                "other-driver" => faults.other_driver = true,
                "readback-differs" => faults.readback_differs = true,
                "policy-drift" => faults.policy_drift = true,
                "egress-open" => faults.egress_open = true,
                other => return Err(format!("unknown fault {other:?}")),
            },
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let tls = match (certs_dir, cert, key, client_ca) {
        (Some(dir), None, None, None) if ca.is_none() => openshell::tls::generate(&dir)?,
        (None, Some(cert), Some(key), Some(client_ca)) => {
            let mut t = ServerTls::from_files(&cert, &key, &client_ca)?;
            if let Some(ca) = ca {
                let chain =
                    std::fs::read(&ca).map_err(|e| format!("reading {}: {e}", ca.display()))?;
                t.cert_pem.push(b'\n');
                t.cert_pem.extend(chain);
            }
            t
        }
        _ => return Err("give either --certs-dir, or --cert, --key and --client-ca".into()),
    };
    if images.is_empty() {
        images.insert(
            openshell::DEFAULT_IMAGE_REF.to_owned(),
            "plimsoll/project:latest".to_owned(),
        );
    }
    Ok(Args {
        settings: Settings {
            images,
            runtime,
            faults,
        },
        listen,
        tls,
    })
}

/// Runs the stand-in until `stopped` resolves.
pub async fn main(
    args: impl Iterator<Item = String>,
    stopped: impl std::future::Future<Output = ()> + Send + 'static,
) -> ExitCode {
    let args = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind(&args.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("plimsoll-standin: binding {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    let standin = match openshell::StandIn::new(args.settings) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| format!("https://{a}"))
        .unwrap_or_default();
    println!("{}", serde_json::json!({ "gateway": addr }));
    match openshell::serve(standin, listener, args.tls, stopped).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plimsoll-standin: {e}");
            ExitCode::FAILURE
        }
    }
}
