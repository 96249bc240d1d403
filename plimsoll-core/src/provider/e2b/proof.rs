//! The e2b startup proof: one throwaway VM, created with both access
//! tokens, read back (running, within the configured resources, its way out
//! closed, this daemon's stamp), several files written into the project
//! directory, and a probe run through exactly a project step's path (`sh` →
//! `node`, as the guest, in the project directory) that shows node there,
//! the working directory honoured, the files as written, and no way out: a
//! TCP connection to 1.1.1.1 and to example.com must both fail. envd must
//! refuse a call without the VM's access token. The VM is killed however it
//! ends. It costs one VM, so it runs at startup only, never on `/readyz`.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Inner;
use super::envd::Finish;
use super::process::StartRequest;
use super::run::{GUEST_USER, OUTPUT_CAP, PROJECT_DIR};
use super::vm::Vm;
use crate::error::{Error, Result};
use crate::provider::hosted::probe::{PROBE, SCRIPT, verdict};

/// The whole proof's budget.
pub const BUDGET: Duration = Duration::from_secs(90);

/// Runs the proof; `Ok` with the template's envd version.
pub(crate) async fn prove(p: &Arc<Inner>) -> Result<String> {
    match tokio::time::timeout(BUDGET, steps(p)).await {
        Ok(r) => r,
        Err(_) => Err(Error::infrastructure(format!(
            "the e2b startup proof did not finish within {} s",
            BUDGET.as_secs()
        ))),
    }
}

async fn steps(p: &Arc<Inner>) -> Result<String> {
    let fail = |m: String| Error::infrastructure(format!("the e2b startup proof failed: {m}"));
    let vm = Vm::create(p, BUDGET + Duration::from_secs(30), None).await?;
    let result = async {
        vm.check().await?;
        // envd demands the access token.
        let status = unauthenticated_call(p, &vm).await?;
        if status != hyper::StatusCode::UNAUTHORIZED {
            return Err(fail(format!(
                "envd answered {status} to a call without the sandbox's access token (401 expected)"
            )));
        }
        let token = hex::encode(rand::random::<[u8; 8]>());
        let dir = format!("{PROJECT_DIR}/.plimsoll-proof");
        vm.envd
            .write(
                GUEST_USER,
                &[
                    (format!("{dir}/probe.sh"), SCRIPT.as_bytes()),
                    (format!("{dir}/probe.js"), PROBE.as_bytes()),
                    (format!("{dir}/data/token.txt"), token.as_bytes()),
                    (format!("{dir}/data/second.txt"), b"second file".as_slice()),
                ],
            )
            .await?
            .map_err(|why| fail(format!("writing the probe's files: {why}")))?;
        let start = StartRequest {
            cmd: "/bin/sh".into(),
            args: vec!["-c".into(), "sh .plimsoll-proof/probe.sh".into()],
            envs: Default::default(),
            cwd: Some(PROJECT_DIR.into()),
            stdin: false,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let ran = vm
            .envd
            .run(
                &start,
                GUEST_USER,
                deadline,
                OUTPUT_CAP,
                &CancellationToken::new(),
            )
            .await?;
        let (stdout, _) = ran.stdout.finish();
        let (stderr, _) = ran.stderr.finish();
        if ran.finish != Finish::Exit(0) {
            return Err(fail(format!(
                "the probe ended {:?}; stderr: {}",
                ran.finish,
                crate::provider::hosted::http::excerpt(&stderr, &[])
            )));
        }
        let v: Value = serde_json::from_slice(&stdout).map_err(|_| {
            fail(format!(
                "the probe printed {}",
                crate::provider::hosted::http::excerpt(&stdout, &[])
            ))
        })?;
        let wrong = verdict(&v, &token, PROJECT_DIR);
        if !wrong.is_empty() {
            return Err(fail(wrong.join("; ")));
        }
        Ok(vm.envd_version.clone())
    }
    .await;
    vm.kill().await;
    result
}

/// Starts a process without the access token; envd's answer's status.
async fn unauthenticated_call(p: &Inner, vm: &Vm) -> Result<hyper::StatusCode> {
    let req = vm
        .envd
        .without_token(hyper::Method::POST, "/process.Process/List")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(b"{}")))
        .map_err(|e| Error::infrastructure(format!("the e2b startup proof: {e}")))?;
    let a = p
        .http
        .call(
            "calling envd without its token",
            req,
            Duration::from_secs(10),
            64 << 10,
        )
        .await?;
    Ok(a.status)
}
