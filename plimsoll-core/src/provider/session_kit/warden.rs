//! The warden: one held-open process per session sandbox
//! ([`warden.py`](WARDEN_PY), run as the guest) that sweeps the sandbox
//! between calls without a new exec per call.
//!
//! It is started when the sandbox opens, before any guest code has run, and
//! its first stdin line is a fresh 32-byte key. It makes itself non-dumpable
//! before reading it, so where the kernel enforces that (runc) no guest
//! process can trace it, read its memory or open its pipes. gVisor
//! (release 20221219) lets a same-uid process open a non-dumpable process's
//! `/proc/<pid>/fd/N` (its memory and ptrace stay closed), so every answer
//! also carries an HMAC-SHA256 under the key, over the host's fresh nonce and
//! the answer: a guest that reaches the pipes can steal or stall a request,
//! never forge an answer. The host verifies each line and ignores any that
//! does not verify; a warden that ends, stalls or answers wrongly is dropped,
//! and the sandbox is swept by fresh execs from then on (never trusted again:
//! a new warden's key could be read by guest code still running in a kernel).
//!
//! A sweep kills every process of the guest uid but the warden and the kept
//! kernels, until a whole pass over `/proc` finds none; a kernel is kept only
//! while its pid is still the process pinned when it started (its start
//! time), so a pid reused by a leftover is not kept.

use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use base64::Engine as _;
use tokio_util::sync::CancellationToken;

use super::{Channel, NotStopped, read_line};
use crate::error::{Error, Result};
use crate::result::CappedBuffer;

/// The warden, run as `python3 -I -S -c`.
pub(crate) const WARDEN_PY: &str = include_str!("warden.py");

/// The warden's argv.
pub(crate) fn argv() -> Vec<String> {
    ["python3", "-I", "-S", "-c", WARDEN_PY]
        .map(String::from)
        .to_vec()
}

/// How long a pin may take; a sweep has the caller's budget.
const PIN_BUDGET: Duration = Duration::from_secs(5);

/// A running warden, trusted while it answers correctly.
pub(crate) struct Warden {
    chan: Box<dyn Channel>,
    key: [u8; 32],
    buf: Vec<u8>,
}

/// What a sweep showed: the sandbox held no guest process but the warden
/// and the kept kernels.
#[derive(Debug)]
pub(crate) struct Swept {
    /// KiB used on the measured file system.
    pub kib: u64,
    /// Kept pids that were no longer the pinned kernels (gone or replaced).
    pub gone: Vec<u32>,
}

/// How a command the warden ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RanEnd {
    /// It exited (a signal's death is 128 + the signal).
    Exited,
    /// The deadline came first: its process group was killed.
    Deadline,
    /// The host cancelled it: its process group was killed.
    Cancelled,
}

/// What a command the warden ran produced.
#[derive(Debug)]
pub(crate) struct Ran {
    /// How it ended.
    pub ended: RanEnd,
    /// Its exit code.
    pub exit: i64,
    /// Standard output, capped.
    pub stdout: CappedBuffer,
    /// Standard error, capped.
    pub stderr: CappedBuffer,
}

#[derive(serde::Deserialize)]
struct RanWire {
    ended: RanEnd,
    exit: i64,
    stdout: String,
    stderr: String,
    stdout_truncated: bool,
    stderr_truncated: bool,
}

/// How long past a run's deadline the warden's answer may take (it kills
/// the process group, then reads what is left).
const RUN_GRACE: Duration = Duration::from_secs(5);

#[derive(serde::Deserialize)]
struct Sweep {
    left: u64,
    #[serde(default)]
    gone: Vec<u32>,
    #[serde(default)]
    kib: u64,
}

impl Warden {
    /// Sends the key to the warden on `chan` and waits for its signed
    /// `READY`.
    pub(crate) async fn start(mut chan: Box<dyn Channel>) -> Result<Warden> {
        let key: [u8; 32] = rand::random();
        let fail = |why: &str| Error::infrastructure(format!("the session's warden {why}"));
        if !chan
            .send(format!("{}\n", hex::encode(key)).as_bytes())
            .await
        {
            return Err(fail("did not start"));
        }
        let mut w = Warden {
            chan,
            key,
            buf: Vec::new(),
        };
        let until = tokio::time::Instant::now() + super::KERNEL_START;
        // Its pid is not kept: a sweep always spares the warden itself.
        let _: serde::de::IgnoredAny = w
            .answer("READY", until)
            .await
            .ok_or_else(|| fail("did not say it was ready"))?;
        Ok(w)
    }

    /// The next line under `nonce` whose MAC verifies, parsed, by `until`;
    /// `None` if the channel ended, the time ran out or it did not parse.
    async fn answer<T: serde::de::DeserializeOwned>(
        &mut self,
        nonce: &str,
        until: tokio::time::Instant,
    ) -> Option<T> {
        let prefix = format!("{nonce} ");
        let read = async {
            loop {
                let line = read_line(&mut *self.chan, &mut self.buf).await?;
                let Some(space) = line.iter().rposition(|&b| b == b' ') else {
                    continue;
                };
                let (text, mac) = (&line[..space], &line[space + 1..]);
                if !text.starts_with(prefix.as_bytes()) || !verify(&self.key, text, mac) {
                    continue;
                }
                return serde_json::from_slice(&text[prefix.len()..]).ok();
            }
        };
        tokio::time::timeout_at(until, read).await.ok().flatten()
    }

    async fn ask<T: serde::de::DeserializeOwned>(
        &mut self,
        req: serde_json::Value,
        until: tokio::time::Instant,
    ) -> Option<T> {
        let (nonce, line) = request(req)?;
        if !self.chan.send(&line).await {
            return None;
        }
        self.answer(&nonce, until).await
    }

    /// Records `pids` (kernels just started, before any of their cells) as
    /// the processes a sweep may keep; false if the warden did not answer.
    pub(crate) async fn pin(&mut self, pids: &[u32]) -> bool {
        let until = tokio::time::Instant::now() + PIN_BUDGET;
        let req = serde_json::json!({"op": "pin", "pids": pids});
        self.ask::<serde_json::Value>(req, until).await.is_some()
    }

    /// Runs `argv` as the guest in `cwd` with `stdin`'s bytes, each stream
    /// kept to `cap` bytes, until it exits, `deadline` passes (the warden
    /// kills its process group) or `cancel` fires (the same, told now).
    /// `None`: no answer came that verifies (the warden must not be trusted
    /// again, and the command may still be running: the sweep's).
    pub(crate) async fn run(
        &mut self,
        argv: &[String],
        cwd: &str,
        stdin: Option<&[u8]>,
        cap: usize,
        deadline: tokio::time::Instant,
        cancel: &CancellationToken,
    ) -> Option<Ran> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let now = tokio::time::Instant::now();
        let req = serde_json::json!({
            "op": "run",
            "argv": argv,
            "cwd": cwd,
            "stdin": stdin.map(|b| b64.encode(b)),
            "cap": cap,
            "timeout_ms": deadline.saturating_duration_since(now).as_millis().max(1) as u64,
        });
        let (nonce, line) = request(req)?;
        if !self.chan.send(&line).await {
            return None;
        }
        let until = deadline + RUN_GRACE;
        let wire: RanWire = tokio::select! {
            a = self.answer(&nonce, until) => a?,
            _ = cancel.cancelled() => {
                if !self.chan.send(b"cancel\n").await {
                    return None;
                }
                self.answer(&nonce, until).await?
            }
        };
        let buffer = |text: &str, truncated: bool| {
            let mut b = CappedBuffer::new(cap);
            b.push(&b64.decode(text).unwrap_or_default());
            if truncated {
                b.mark_truncated();
            }
            b
        };
        Some(Ran {
            ended: wire.ended,
            exit: wire.exit,
            stdout: buffer(&wire.stdout, wire.stdout_truncated),
            stderr: buffer(&wire.stderr, wire.stderr_truncated),
        })
    }

    /// Sweeps the sandbox, keeping `keep` (pinned kernels), then measures
    /// `dir` (statfs). `shown: false`: the warden did not answer by `until`
    /// (it must not be trusted again); `shown: true`: processes survived.
    pub(crate) async fn sweep(
        &mut self,
        keep: &[u32],
        dir: &str,
        until: tokio::time::Instant,
    ) -> std::result::Result<Swept, NotStopped> {
        let req = serde_json::json!({"op": "sweep", "keep": keep, "measure": dir});
        match self.ask::<Sweep>(req, until).await {
            None => Err(NotStopped {
                shown: false,
                why: "the warden did not answer".into(),
            }),
            Some(s) if s.left > 0 => Err(NotStopped {
                shown: true,
                why: format!("{} guest processes survive", s.left),
            }),
            Some(s) => Ok(Swept {
                kib: s.kib,
                gone: s.gone,
            }),
        }
    }
}

/// `req` under a fresh nonce, as one line.
fn request(mut req: serde_json::Value) -> Option<(String, Vec<u8>)> {
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    req["nonce"] = nonce.clone().into();
    let mut line = serde_json::to_vec(&req).ok()?;
    line.push(b'\n');
    Some((nonce, line))
}

fn verify(key: &[u8; 32], text: &[u8], mac: &[u8]) -> bool {
    let Ok(mac) = hex::decode(mac) else {
        return false;
    };
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(text);
    m.verify_slice(&mac).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;

    /// A channel fed from a script of lines.
    struct Script(std::collections::VecDeque<Vec<u8>>);

    #[async_trait]
    impl Channel for Script {
        async fn send(&mut self, _: &[u8]) -> bool {
            true
        }
        async fn recv(&mut self) -> Option<Vec<u8>> {
            self.0.pop_front()
        }
    }

    fn signed(key: &[u8; 32], text: &str) -> Vec<u8> {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
        m.update(text.as_bytes());
        format!("{text} {}\n", hex::encode(m.finalize().into_bytes())).into_bytes()
    }

    #[tokio::test]
    async fn only_lines_under_the_nonce_with_a_valid_mac_are_answers() {
        let key = [7u8; 32];
        let wrong = [8u8; 32];
        let mut w = Warden {
            chan: Box::new(Script(
                [
                    b"n1 {\"left\":0,\"kib\":1} deadbeef\n".to_vec(),
                    signed(&wrong, "n1 {\"left\":0,\"kib\":2}"),
                    signed(&key, "n0 {\"left\":0,\"kib\":3}"),
                    b"garbage without a space\n".to_vec(),
                    signed(&key, "n1 {\"left\":0,\"kib\":4}"),
                ]
                .into(),
            )),
            key,
            buf: Vec::new(),
        };
        let until = tokio::time::Instant::now() + Duration::from_secs(1);
        let s: Sweep = w.answer("n1", until).await.expect("the signed line");
        assert_eq!(s.kib, 4, "forged, wrongly keyed and other nonces skipped");
        let none: Option<Sweep> = w.answer("n1", until).await;
        assert!(none.is_none(), "an ended channel is no answer");
    }
}
