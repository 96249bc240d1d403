//! What every provider's session sandbox shares: the cell kernels and their
//! line protocol, the stopper run between calls, and the startup session
//! proof.
//!
//! A kernel ([`kernel.py`](KERNEL_PY) run as `python3 -I -c`,
//! [`kernel.js`](KERNEL_JS) as `node -e`) is one long-lived interpreter per
//! language, held open by the provider's own attached command (a docker
//! exec, an OpenShell interactive exec). It says `READY <pid>`, then reads
//! one JSON request per line and answers each cell with one line framed by
//! the host's fresh nonce; guest code sees neither channel.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result, SessionEnd, SessionEnded};
use crate::result::CellResult;

pub(crate) mod proof;
pub(crate) mod warden;

/// The Python kernel, run as `python3 -I -c`.
pub(crate) const KERNEL_PY: &str = include_str!("kernel.py");
/// The JavaScript kernel, run as `node -e`.
pub(crate) const KERNEL_JS: &str = include_str!("kernel.js");
/// Kills every process of the guest uid but itself, the kept pids and their
/// ancestors, until none is left, then measures the disk. Arguments:
/// `<uid> <measure> <kept pid>...`, where `<measure>` is `statfs:<dir>`
/// (prints `blocks free bsize`) or `du:<dir> [<dir>...]` (prints the KiB
/// used in all). Exits 3 if some survive five seconds.
pub(crate) const STOP_EXCEPT: &str = include_str!("stop_except.sh");
/// How long a kernel may take to say it is ready.
pub(crate) const KERNEL_START: Duration = Duration::from_secs(30);
/// The most a kernel's channel may buffer without a newline.
const LINE_LIMIT: usize = 4 * 1024 * 1024;

/// The cell languages a session keeps interpreters for.
pub(crate) fn kernel_argv(lang: &str) -> Result<Vec<String>> {
    match lang {
        "python" => Ok(vec![
            "python3".into(),
            "-I".into(),
            "-c".into(),
            KERNEL_PY.into(),
        ]),
        "javascript" => Ok(vec!["node".into(), "-e".into(), KERNEL_JS.into()]),
        other => Err(Error::invalid(format!(
            "no interpreter for language {other:?}"
        ))),
    }
}

/// The stopper's argv: `sh -c STOP_EXCEPT sh <uid> <measure> <kept>...`.
pub(crate) fn stop_argv(uid: u32, measure: &str, kept: &[u32]) -> Vec<String> {
    let mut cmd = vec![
        "sh".to_string(),
        "-c".into(),
        STOP_EXCEPT.into(),
        "sh".into(),
        uid.to_string(),
        measure.into(),
    ];
    cmd.extend(kept.iter().map(u32::to_string));
    cmd
}

/// A kernel's two byte channels, as the provider holds them open.
#[async_trait]
pub(crate) trait Channel: Send {
    /// Writes `bytes` to the kernel's stdin; false once it is gone.
    async fn send(&mut self, bytes: &[u8]) -> bool;
    /// The next chunk of the kernel's stdout (other streams skipped), or
    /// `None` once it is gone.
    async fn recv(&mut self) -> Option<Vec<u8>>;
}

/// The next line from `chan` (without its newline), `buf` holding what came
/// after it, or `None` once the channel is gone. A guest flooding the channel
/// without newlines only loses what it sent.
pub(crate) async fn read_line(chan: &mut dyn Channel, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = buf.drain(..=i).collect();
            line.pop();
            return Some(line);
        }
        let chunk = chan.recv().await?;
        if buf.len() + chunk.len() > LINE_LIMIT {
            buf.clear();
        }
        buf.extend_from_slice(&chunk);
    }
}

/// One kept interpreter.
pub(crate) struct Kernel {
    /// Its pid in the sandbox, as it said.
    pub pid: u32,
    chan: Box<dyn Channel>,
    buf: Vec<u8>,
    /// Whether a cell has been sent to it: the first cell it runs reports
    /// `interpreter_started`, whether it was started for that cell or
    /// before (at open for a language hint, or by a warm pool).
    used: bool,
}

/// What the kernel answers for one cell.
#[derive(serde::Deserialize)]
struct Answer {
    exit_code: i32,
    stdout: String,
    stderr: String,
    stdout_truncated: bool,
    stderr_truncated: bool,
}

/// How one cell ended.
pub(crate) enum Asked {
    /// The kernel answered.
    Answered(CellResult),
    /// The kernel went away (the cell ended it, or its channel broke) or
    /// the call's deadline came first: the cell's answer, and the kernel
    /// must be dropped and killed.
    Ended(CellResult),
    /// The run was cancelled.
    Cancelled,
    /// The sandbox itself ended.
    Stopped,
}

impl Kernel {
    /// Waits for `chan`'s kernel to say `READY <pid>`.
    pub(crate) async fn ready(chan: Box<dyn Channel>, lang: &str) -> Result<Kernel> {
        let mut k = Kernel {
            pid: 0,
            chan,
            buf: Vec::new(),
            used: false,
        };
        let line = match tokio::time::timeout(KERNEL_START, k.line()).await {
            Ok(Some(l)) => String::from_utf8_lossy(&l).to_string(),
            _ => {
                return Err(Error::infrastructure(format!(
                    "the {lang} interpreter did not start in the session"
                )));
            }
        };
        k.pid = line
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| Error::infrastructure(format!("the {lang} kernel said {line:?}")))?;
        Ok(k)
    }

    /// The next line on the kernel's stdout, or `None` once it is gone.
    async fn line(&mut self) -> Option<Vec<u8>> {
        read_line(&mut *self.chan, &mut self.buf).await
    }

    /// Sends `code` as one cell and waits for its answer until `deadline`,
    /// the run's cancel or `stopped` (the sandbox's own end). The answer says
    /// whether this was the kernel's first cell.
    pub(crate) async fn ask(
        &mut self,
        code: &str,
        deadline: tokio::time::Instant,
        cancel: &CancellationToken,
        stopped: impl Future<Output = ()>,
    ) -> Asked {
        let started = !std::mem::replace(&mut self.used, true);
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        let Ok(mut req) = serde_json::to_vec(&serde_json::json!({"nonce": nonce, "code": code}))
        else {
            return Asked::Ended(unanswered(false, started));
        };
        req.push(b'\n');
        let prefix = format!("{nonce} ");
        let talk = async {
            if !self.chan.send(&req).await {
                return None;
            }
            loop {
                let line = self.line().await?;
                if let Some(rest) = line.strip_prefix(prefix.as_bytes()) {
                    return serde_json::from_slice::<Answer>(rest).ok();
                }
            }
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        tokio::select! {
            a = talk => match a {
                Some(a) => Asked::Answered(CellResult {
                    exit_code: a.exit_code,
                    stdout: b64.decode(a.stdout).unwrap_or_default(),
                    stderr: b64.decode(a.stderr).unwrap_or_default(),
                    stdout_truncated: a.stdout_truncated,
                    stderr_truncated: a.stderr_truncated,
                    interpreter_started: started,
                    ..CellResult::default()
                }),
                None => Asked::Ended(unanswered(false, started)),
            },
            _ = tokio::time::sleep_until(deadline) => Asked::Ended(unanswered(true, started)),
            _ = cancel.cancelled() => Asked::Cancelled,
            _ = stopped => Asked::Stopped,
        }
    }
}

/// The answer of a cell whose kernel did not answer (and is now ended).
fn unanswered(timed_out: bool, interpreter_started: bool) -> CellResult {
    CellResult {
        exit_code: if timed_out { 124 } else { 1 },
        timed_out,
        interpreter_ended: true,
        interpreter_started,
        stderr: if timed_out {
            Vec::new()
        } else {
            b"the interpreter ended during the cell\n".to_vec()
        },
        ..CellResult::default()
    }
}

/// What a hosted session sandbox does its own way, for [`Kernels`] and
/// [`cleanup`].
#[async_trait]
pub(crate) trait Hosted: crate::provider::SessionSandbox {
    /// Starts the kernel for `lang` and waits until it is ready.
    async fn start_kernel(&self, lang: &str) -> Result<Kernel>;

    /// Runs the stopper once, keeping `kept`, by `until`: the KiB it measured.
    async fn stop_once(
        &self,
        kept: &[u32],
        until: tokio::time::Instant,
    ) -> std::result::Result<u64, NotStopped>;

    /// Writes a cell's files (paths relative to the session's work
    /// directory, `dir`) as the guest: `Ok(Err(why))` when the sandbox
    /// refused them.
    async fn write_files(&self, files: &[(&str, &[u8])])
    -> Result<std::result::Result<(), String>>;
}

/// The kept interpreters of a hosted session (one per language), whose
/// channels end their kernels when dropped (the gateway or envd kills the
/// command), so a kernel that did not answer is simply dropped: the stopper
/// after the call shows it gone.
#[derive(Default)]
pub(crate) struct Kernels(tokio::sync::Mutex<std::collections::HashMap<String, Kernel>>);

impl Kernels {
    /// The kernels' pids (the stopper keeps them).
    pub(crate) async fn pids(&self) -> Vec<u32> {
        self.0.lock().await.values().map(|k| k.pid).collect()
    }

    /// Ends every kernel.
    pub(crate) async fn clear(&self) {
        self.0.lock().await.clear();
    }

    /// Starts the kernel of each cell language in `hints` not running yet.
    pub(crate) async fn warm(&self, hints: &[String], host: &dyn Hosted) -> Result<()> {
        let mut kernels = self.0.lock().await;
        for lang in hints {
            if kernel_argv(lang).is_ok() && !kernels.contains_key(lang) {
                let k = host.start_kernel(lang).await?;
                kernels.insert(lang.clone(), k);
            }
        }
        Ok(())
    }

    /// Runs `code` in the kernel of `lang` (started first if need be) until
    /// `deadline` or `cancel`; a cancelled cell is `cancelled()`'s error.
    /// Runs a cell: its files written first (refused: the cell's result is
    /// exit 1 with why on stderr, nothing run), then its code asked of the
    /// kernel for its language within the call's budget.
    pub(crate) async fn run_cell(
        &self,
        host: &dyn Hosted,
        job: &crate::request::CellRun,
        ctx: &crate::provider::RunContext,
        dir: &str,
        cancelled: fn() -> Error,
    ) -> Result<CellResult> {
        let lang = job.language.as_str();
        kernel_argv(lang)?;
        let deadline = tokio::time::Instant::now() + ctx.timeout;
        let files: Vec<(&str, &[u8])> = job
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.content.as_bytes()))
            .collect();
        if !files.is_empty()
            && let Err(why) = host.write_files(&files).await?
        {
            return Ok(CellResult {
                exit_code: 1,
                stderr: format!("writing the files into {dir} failed: {why}").into_bytes(),
                ..CellResult::default()
            });
        }
        self.ask(host, lang, &job.code, deadline, &ctx.cancel, cancelled)
            .await
    }

    pub(crate) async fn ask(
        &self,
        host: &dyn Hosted,
        lang: &str,
        code: &str,
        deadline: tokio::time::Instant,
        cancel: &CancellationToken,
        cancelled: fn() -> Error,
    ) -> Result<CellResult> {
        kernel_argv(lang)?;
        let mut kernels = self.0.lock().await;
        if !kernels.contains_key(lang) {
            let k = host.start_kernel(lang).await?;
            kernels.insert(lang.to_owned(), k);
        }
        let Some(kernel) = kernels.get_mut(lang) else {
            return Err(Error::infrastructure("the interpreter vanished"));
        };
        // A kernel whose sandbox dies under it sees its command end.
        match kernel
            .ask(code, deadline, cancel, std::future::pending())
            .await
        {
            Asked::Answered(r) => Ok(r),
            Asked::Ended(r) => {
                kernels.remove(lang);
                Ok(r)
            }
            Asked::Cancelled | Asked::Stopped => {
                kernels.remove(lang);
                Err(cancelled())
            }
        }
    }

    /// A hosted session's cleanup between calls: the stopper (keeping these
    /// kernels) tried within 20 s until it runs, its measure held to
    /// `disk_mb` (0: unchecked) over `measured`; when it cannot run at all,
    /// the read-back says whether the sandbox is gone or changed first.
    pub(crate) async fn cleanup(
        &self,
        host: &dyn Hosted,
        disk_mb: u32,
        measured: &str,
    ) -> std::result::Result<(), SessionEnded> {
        let boundary = |detail: String| SessionEnded {
            reason: SessionEnd::BoundaryFailed,
            detail,
        };
        let kept = self.pids().await;
        // A process table at its limit can refuse the stopper once or twice;
        // every attempt shares one budget.
        let until = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut last = String::new();
        for _ in 0..5 {
            if tokio::time::Instant::now() >= until {
                break;
            }
            match host.stop_once(&kept, until).await {
                Ok(kib) if disk_mb > 0 && kib > u64::from(disk_mb) * 1024 => {
                    return Err(SessionEnded {
                        reason: SessionEnd::DiskExceeded,
                        detail: format!(
                            "{measured} holds {} MiB, over the session budget of {disk_mb} MiB",
                            kib / 1024
                        ),
                    });
                }
                Ok(_) => return Ok(()),
                Err(NotStopped { shown: true, why }) => {
                    return Err(boundary(format!("the cleanup between calls failed: {why}")));
                }
                Err(NotStopped { shown: false, why }) => last = why,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        host.check().await?;
        Err(boundary(format!(
            "the cleanup between calls could not run: {last}"
        )))
    }
}

/// Why one run of the stopper did not show the sandbox clean: `shown` when
/// it ran and failed to (the session must end), otherwise it could not run
/// (it may be tried again).
pub(crate) struct NotStopped {
    pub shown: bool,
    pub why: String,
}

/// What one run of the stopper ([`stop_argv`]) showed, from its exit
/// (`None`: it did not end in time), stdout and stderr: the KiB the
/// measured directories use (exit 0), or why not (exit 3: a process it
/// could not stop, shown; any other end: it could not run).
pub(crate) fn stop_outcome(
    exit: Option<i32>,
    stdout: &[u8],
    stderr: &[u8],
) -> std::result::Result<u64, NotStopped> {
    let stderr = String::from_utf8_lossy(stderr).trim().to_owned();
    match exit {
        Some(0) => String::from_utf8_lossy(stdout)
            .trim()
            .parse()
            .map_err(|_| NotStopped {
                shown: true,
                why: "could not measure the disk".to_owned(),
            }),
        Some(3) => Err(NotStopped {
            shown: true,
            why: stderr,
        }),
        Some(code) => Err(NotStopped {
            shown: false,
            why: format!("exit {code}: {stderr}"),
        }),
        None => Err(NotStopped {
            shown: false,
            why: "not done in time".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stoppers_end_reads_as_kib_a_shown_failure_or_one_to_try_again() {
        assert_eq!(stop_outcome(Some(0), b" 42\n", b"").ok(), Some(42));
        let shown = |r: std::result::Result<u64, NotStopped>| r.err().map(|e| (e.shown, e.why));
        assert_eq!(
            shown(stop_outcome(Some(0), b"many", b"")),
            Some((true, "could not measure the disk".into()))
        );
        assert_eq!(
            shown(stop_outcome(Some(3), b"", b"pid 7 left\n")),
            Some((true, "pid 7 left".into()))
        );
        assert_eq!(
            shown(stop_outcome(Some(1), b"", b"sh: no\n")),
            Some((false, "exit 1: sh: no".into()))
        );
        assert_eq!(
            shown(stop_outcome(None, b"", b"")),
            Some((false, "not done in time".into()))
        );
    }
}
