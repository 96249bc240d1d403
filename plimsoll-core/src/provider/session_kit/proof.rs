//! The startup session proof: one real session keeps every promise.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result, SessionEnded};
use crate::provider::{RunContext, SessionSandbox};
use crate::request::{CellRun, ProjectRun};
use crate::result::ProjectOutcome;

/// What the startup proof's session is opened with.
pub(crate) fn spec() -> crate::provider::SandboxSpec {
    crate::provider::SandboxSpec {
        fingerprint: "startup-proof".into(),
        lifetime_ms: 120_000,
        languages: vec![],
    }
}

/// The startup session proof on `s`, a freshly opened session without
/// language hints: a process the first call leaves running (detached,
/// setsid, double-forked) is gone by the next call; a file survives calls
/// and a suspend; an interpreter keeps what an earlier call defined; closing
/// ends it. Returns the cell languages proven.
pub(crate) async fn prove(s: &dyn SessionSandbox) -> Result<Vec<String>> {
    let r = prove_on(s).await;
    s.close().await;
    let languages = r?;
    if s.check().await.is_ok() {
        return Err(fail("the session's sandbox outlived its close"));
    }
    Ok(languages)
}

fn fail(what: &str) -> Error {
    Error::infrastructure(format!("session startup proof failed: {what}"))
}

async fn prove_on(s: &dyn SessionSandbox) -> Result<Vec<String>> {
    let ctx = RunContext {
        timeout: Duration::from_secs(30),
        cancel: CancellationToken::new(),
        principal: "startup-proof".into(),
        grant: None,
        warm: Default::default(),
        phases: Default::default(),
    };
    let ended = |e: SessionEnded| fail(&format!("{:?}: {}", e.reason, e.detail));
    s.check().await.map_err(ended)?;
    let job = ProjectRun {
        steps: vec![
            "echo kept > kept.txt".into(),
            "nohup sleep 300 >/dev/null 2>&1 &".into(),
            "setsid sleep 301 >/dev/null 2>&1 </dev/null &".into(),
            "sh -c '(sleep 302 &) &' >/dev/null 2>&1".into(),
        ],
        ..ProjectRun::default()
    };
    let r = s.run_project(&job, &ctx).await?;
    if r.outcome != ProjectOutcome::Completed {
        return Err(fail(&format!(
            "the first call did not complete: {}",
            r.outcome_detail
        )));
    }
    s.cleanup().await.map_err(ended)?;
    s.suspend().await?;
    s.resume().await?;
    s.check().await.map_err(ended)?;
    let count = "n=0; for d in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null); case \"$c\" in 'sleep 30'[012]*) n=$((n+1));; esac; done; echo $n; cat kept.txt";
    let job = ProjectRun {
        steps: vec![count.into()],
        ..ProjectRun::default()
    };
    let r = s.run_project(&job, &ctx).await?;
    let out = r
        .steps
        .first()
        .map(|st| String::from_utf8_lossy(&st.stdout).to_string())
        .unwrap_or_default();
    if out != "0\nkept\n" {
        return Err(fail(&format!(
            "after a call and a suspend, expected no leftover process and the kept file, read {out:?}"
        )));
    }
    s.cleanup().await.map_err(ended)?;
    let mut languages = Vec::new();
    for (lang, define, use_, want) in [
        ("python", "x = 41", "x + 1", "42\n"),
        ("javascript", "var x = 41", "x + 1", "42\n"),
    ] {
        let cell = |code: &str| CellRun {
            language: lang.into(),
            code: code.into(),
            files: vec![],
        };
        let a = s.run_cell(&cell(define), &ctx).await?;
        s.cleanup().await.map_err(ended)?;
        let b = s.run_cell(&cell(use_), &ctx).await?;
        s.cleanup().await.map_err(ended)?;
        if !a.interpreter_started {
            return Err(fail(&format!(
                "the first {lang} cell did not say its interpreter started fresh"
            )));
        }
        if a.exit_code != 0
            || b.exit_code != 0
            || b.stdout != want.as_bytes()
            || b.interpreter_started
        {
            return Err(fail(&format!(
                "the {lang} interpreter did not keep what an earlier call defined (read {:?})",
                String::from_utf8_lossy(&b.stdout)
            )));
        }
        languages.push(lang.to_string());
    }
    Ok(languages)
}
