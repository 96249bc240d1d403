//! The dockercloud startup proof. REST has no capabilities service, so the
//! token's permissions are proven by use: the token exchange; the account's
//! network policy read (network-policies read) and found deny-all with
//! nothing allowed; one throwaway sandbox created (sandboxes create), read
//! back (sandboxes read), its own policy read back deny-all; a directory
//! (files two levels deep) and a file uploaded; a probe run through exactly
//! a project step's path (`sh` → a script → `node`, as the guest, in
//! `/work`) showing node there, the directory honoured, the files as
//! written, the guest not root, and TCP to 1.1.1.1 and example.com both
//! failing; then the sandbox deleted (sandboxes delete) and confirmed gone.
//! A 403 on any of these is a refusal naming the missing permission. It
//! costs a sandbox, so it runs at startup only, never on `/readyz`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::Inner;
use super::run::{PROJECT_DIR, fresh, guest};
use crate::error::{Error, Result};
use crate::provider::hosted::http::excerpt;
use crate::provider::hosted::probe::{PROBE, SCRIPT, verdict};

/// The whole proof's budget.
pub const BUDGET: Duration = Duration::from_secs(180);

fn fail(m: impl std::fmt::Display) -> Error {
    Error::infrastructure(format!("the dockercloud startup proof failed: {m}"))
}

/// Runs the proof.
pub(crate) async fn prove(p: &Arc<Inner>) -> Result<()> {
    match tokio::time::timeout(BUDGET, steps(p)).await {
        Ok(r) => r,
        Err(_) => Err(fail(format!(
            "it did not finish within {} s",
            BUDGET.as_secs()
        ))),
    }
}

async fn steps(p: &Arc<Inner>) -> Result<()> {
    p.auth.token().await.map_err(|e| fail(e.message()))?;
    p.api.permissions().await.map_err(|e| fail(e.message()))?;
    let account = p
        .api
        .account_policy()
        .await
        .map_err(|e| fail(e.message()))?;
    if let Some(why) = account.closed() {
        return Err(fail(format!(
            "the account's network policy is not deny-all with nothing allowed ({why}); \
             set it with `sbx --cloud policy init deny-all`"
        )));
    }
    let token = hex::encode(rand::random::<[u8; 8]>());
    let dir = format!("{PROJECT_DIR}/.plimsoll-proof");
    let files = [
        (format!("{dir}/probe.sh"), SCRIPT.as_bytes()),
        (format!("{dir}/probe.js"), PROBE.as_bytes()),
        (format!("{dir}/data/token.txt"), token.as_bytes()),
        (format!("{dir}/data/second.txt"), b"second file".as_slice()),
    ];
    let (live, written) = fresh(p, BUDGET, &files, None)
        .await
        .map_err(|e| fail(e.message()))?;
    let id = live.id.clone();
    let result = async {
        written.map_err(|why| fail(format!("uploading the probe's files: {why}")))?;
        let cmd = [
            "/bin/sh".to_owned(),
            "-c".to_owned(),
            "sh .plimsoll-proof/probe.sh".to_owned(),
        ];
        let ran = guest(&live, &cmd, Instant::now() + Duration::from_secs(30), None)
            .await
            .map_err(|e| fail(e.message()))?;
        if ran.exit_code != 0 {
            return Err(fail(format!(
                "the probe exited {}{}; stderr: {}",
                ran.exit_code,
                if ran.timed_out { " (timed out)" } else { "" },
                excerpt(&ran.out.stderr, &[])
            )));
        }
        let v: Value = serde_json::from_slice(&ran.out.stdout).map_err(|_| {
            fail(format!(
                "the probe printed {}",
                excerpt(&ran.out.stdout, &[])
            ))
        })?;
        let wrong = verdict(&v, &token, PROJECT_DIR);
        if !wrong.is_empty() {
            return Err(fail(wrong.join("; ")));
        }
        Ok(())
    }
    .await;
    live.delete().await;
    result?;
    // Deleted means a read says it is not found.
    match p.api.get(&id).await {
        Ok(None) => Ok(()),
        Ok(Some(s)) => Err(fail(format!(
            "the throwaway sandbox {id} is still there after its delete (status {:?})",
            s.status
        ))),
        Err(e) => Err(fail(e.message())),
    }
}
