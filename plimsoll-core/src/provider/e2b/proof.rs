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

/// The whole proof's budget.
pub const BUDGET: Duration = Duration::from_secs(90);

/// The probe's files: a script, the program it starts, and data it reads.
const SCRIPT: &str = "#!/bin/sh\nset -e\nexec node .plimsoll-proof/probe.js \"$(cat .plimsoll-proof/data/token.txt)\"\n";
const PROBE: &str = r#"const net = require('net');
const fs = require('fs');
const tryConnect = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port, timeout: 3000 });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('timeout', () => { s.destroy(); resolve('timeout'); });
  s.on('error', (e) => resolve(e.code || String(e)));
});
(async () => {
  const out = {
    node: process.version,
    cwd: process.cwd(),
    token: process.argv[2],
    second: fs.readFileSync('.plimsoll-proof/data/second.txt', 'utf8'),
    uid: process.getuid(),
    ip: await tryConnect('1.1.1.1', 80),
    name: await tryConnect('example.com', 80),
  };
  console.log(JSON.stringify(out));
})();
"#;

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
    let vm = Vm::create(p, BUDGET + Duration::from_secs(30)).await?;
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
                super::http::excerpt(&stderr, &[])
            )));
        }
        let v: Value = serde_json::from_slice(&stdout).map_err(|_| {
            fail(format!(
                "the probe printed {}",
                super::http::excerpt(&stdout, &[])
            ))
        })?;
        let wrong = verdict(&v, &token);
        if !wrong.is_empty() {
            return Err(fail(wrong.join("; ")));
        }
        Ok(vm.envd_version.clone())
    }
    .await;
    vm.kill().await;
    result
}

/// What is wrong with the probe's report (`token`: what its first file
/// held); empty when it shows what the proof asks.
fn verdict(v: &Value, token: &str) -> Vec<String> {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut wrong = Vec::new();
    if !s("node").starts_with('v') {
        wrong.push("node is not in the template".to_owned());
    }
    if s("cwd") != PROJECT_DIR {
        wrong.push(format!("the step ran in {:?}, not {PROJECT_DIR}", s("cwd")));
    }
    if s("token") != token || s("second") != "second file" {
        wrong.push("the files written are not what the step read".into());
    }
    if v.get("uid").and_then(Value::as_u64).is_none_or(|u| u == 0) {
        wrong.push("the guest runs as root (or its uid is unknown)".into());
    }
    for (k, target) in [("ip", "1.1.1.1:80"), ("name", "example.com:80")] {
        match s(k).as_str() {
            "connected" => wrong.push(format!("the guest reached {target}: egress is open")),
            "" => wrong.push(format!("the probe did not say how {target} failed")),
            _ => {}
        }
    }
    wrong
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_verdict_fails_open_egress_root_and_a_wrong_directory() {
        let good = json!({"node":"v22.1.0","cwd":PROJECT_DIR,"token":"t","second":"second file",
                          "uid":1000,"ip":"ENETUNREACH","name":"EAI_AGAIN"});
        assert!(verdict(&good, "t").is_empty());
        let with = |k: &str, v: Value| {
            let mut b = good.clone();
            b[k] = v;
            verdict(&b, "t")
        };
        assert!(with("ip", json!("connected"))[0].contains("1.1.1.1:80: egress is open"));
        assert!(with("name", json!("connected"))[0].contains("example.com:80"));
        assert!(with("uid", json!(0))[0].contains("root"));
        assert!(with("cwd", json!("/tmp"))[0].contains("not /home/user/project"));
        assert!(with("node", json!(""))[0].contains("node"));
        assert!(!verdict(&good, "other").is_empty());
        assert_eq!(verdict(&json!({}), "t").len(), 6);
    }
}
