//! How a container's init process ended, seen from the host.
//!
//! Docker reports one exit code for a container whether its init exited with
//! 137 (a guest that SIGKILLed its own process: docker's init passes the
//! child's signal on as `128 + n`) or was SIGKILLed itself from outside the
//! sandbox — runc's `containerd-shim-runc-v2` killed (containerd's cleanup
//! then kills the container), or gVisor's `runsc-sandbox` killed. A guest
//! cannot send its init a fatal signal (the kernel, and gVisor's Sentry,
//! drop a signal to a PID namespace's init from inside it), so an init that
//! *died of a signal* that was neither this run's own kill, docker's kill nor
//! the OOM killer means the runtime around the run broke: an infrastructure
//! error, not the run's exit.
//!
//! gVisor's `runsc-gofer` killed makes the sandbox end the container with an
//! ordinary exit 137 instead; the gofer is the init's sibling (both children
//! of the shim), and a sibling runtime process that died of a signal *while
//! the init still ran* is the same verdict. One that died after the init had
//! ended is the teardown's: when the sandbox has gone (a guest that took the
//! Sentry down, say by exhausting its threads with a fork bomb), the shim's
//! `runsc delete` SIGKILLs the gofer, and the run's own exit stands. The order
//! of the deaths is seen as it happens: each pidfd is watched from the start
//! (it polls readable when its process ends) and its end time taken then.
//!
//! The witness is a pidfd opened on the init (docker's `State.Pid`, the
//! provider shares the host's PID namespace) and on its siblings right after
//! the start; after the exit the kernel's `PIDFD_GET_INFO` ioctl
//! (`PIDFD_INFO_EXIT`, Linux 6.15+) gives each one's wait status. What this
//! does not cover: kernels
//! without that ioctl and hosts where docker's PIDs are not this process's
//! (both give no witness, and the run's exit stands as before); a kill of the
//! init by the OOM killer (docker's `OOMKilled` says so and is checked first).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

use bollard::Docker;

/// `PIDFD_GET_INFO`: `_IOWR(0xFF, 11, struct pidfd_info)`, the 64-byte VER0.
const PIDFD_GET_INFO: u64 = (3 << 30) | (64 << 16) | (0xFF << 8) | 11;
/// `PIDFD_INFO_EXIT`: ask for (and, in the answer's mask, have) the exit.
const PIDFD_INFO_EXIT: u64 = 1 << 3;
/// How long the exit may take to be reaped after docker reports it (a dead
/// shim's child is reaped by the host's init, not by the shim).
const REAP_BUDGET: Duration = Duration::from_secs(2);

/// `struct pidfd_info` up to `exit_code` (VER0 layout, 64 bytes).
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    ids: [u32; 11],
    exit_code: i32,
}

/// One watched host process.
#[derive(Debug)]
struct Watched {
    fd: OwnedFd,
    pid: u32,
    /// When it was seen to end, set by its watch task.
    ended_at: Arc<OnceLock<Instant>>,
    watch: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(w) = self.watch.take() {
            w.abort();
        }
    }
}

/// Pidfds on a container's init process and its sibling runtime processes.
#[derive(Debug)]
pub(crate) struct InitWitness {
    init: Watched,
    siblings: Vec<Watched>,
    /// The host's OOM-kill count (`/proc/vmstat` `oom_kill`) at the open.
    oom_kills: Option<u64>,
}

/// The host's count of OOM kills so far (`/proc/vmstat` `oom_kill`).
fn oom_kills() -> Option<u64> {
    std::fs::read_to_string("/proc/vmstat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
}

impl InitWitness {
    /// Opens the witness on `name`'s init, if docker names a running one and
    /// the kernel lets this process open it, and on the init's siblings. The
    /// pid is read again after the open, so a pid reused in between is never
    /// watched.
    pub(crate) async fn open(docker: &Docker, name: &str) -> Option<InitWitness> {
        let pid = running_pid(docker, name).await?;
        let init = Watched::open(pid)?;
        let siblings = parent_of(pid)
            .filter(|&shim| shim > 1)
            .map(|shim| children_of(shim, pid))
            .unwrap_or_default()
            .into_iter()
            .filter_map(Watched::open)
            .collect();
        (running_pid(docker, name).await? == pid).then_some(InitWitness {
            init,
            siblings,
            oom_kills: oom_kills(),
        })
    }

    /// Whether the kernel's OOM killer has killed anything on the host since
    /// the open (or the count cannot be read). Docker does not record an
    /// OOM kill of gVisor's sandbox process (`OOMKilled` stays false when
    /// the memory cgroup kills `runsc-sandbox`), so a signal death during
    /// an OOM kill is taken as the OOM killer's, not the runtime's failure.
    pub(crate) fn oom_since_open(&self) -> bool {
        match (self.oom_kills, oom_kills()) {
            (Some(then), Some(now)) => now > then,
            _ => true,
        }
    }

    /// Whether the init or one of its siblings has ended (a container that
    /// stopped, or whose runtime died).
    pub(crate) fn any_ended(&self) -> bool {
        self.init.ended() || self.siblings.iter().any(Watched::ended)
    }

    /// The host pid and the signal of the first of the init and its siblings
    /// that has ended killed by a signal; `None` when those that ended exited
    /// (with any code), the rest still run, or the kernel cannot say. Returns
    /// at once for processes still running; waits (at most [`REAP_BUDGET`])
    /// only for one that ended and is not yet reaped.
    pub(crate) async fn killed_by(&self) -> Option<(u32, i32)> {
        let deadline = Instant::now() + REAP_BUDGET;
        if let Some(signal) = self.init.killed_by(deadline).await {
            return Some((self.init.pid, signal));
        }
        let init_ended = self.init.end_time(deadline).await;
        for w in &self.siblings {
            if let Some(signal) = w.killed_by(deadline).await {
                let teardown = matches!(
                    (w.end_time(deadline).await, init_ended),
                    (Some(sibling), Some(init)) if sibling > init
                );
                if !teardown {
                    return Some((w.pid, signal));
                }
            }
        }
        None
    }
}

impl InitWitness {
    /// [`InitWitness::killed_by`] for an exec that came back while the
    /// runtime may still be dying: a runtime killed under a session's call
    /// breaks the exec's own channel (runsc's `WaitPID` meets EOF, exit 128)
    /// a moment before the kernel has ended the runtime's process. While none
    /// of the watched processes has ended, it asks again for up to `settle`.
    pub(crate) async fn killed_by_settling(&self, settle: Duration) -> Option<(u32, i32)> {
        let until = Instant::now() + settle;
        loop {
            if let Some(k) = self.killed_by().await {
                return Some(k);
            }
            if self.any_ended() || Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Watched {
    fn open(pid: u32) -> Option<Watched> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1;
        // no memory is passed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: the syscall returned a fresh fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let ended_at = Arc::new(OnceLock::new());
        // The end time is taken when the pidfd polls readable; without a
        // runtime or a second fd, there is none (and no order is claimed).
        let watch = fd
            .try_clone()
            .ok()
            .zip(tokio::runtime::Handle::try_current().ok())
            .map(|(dup, rt)| {
                let ended_at = ended_at.clone();
                rt.spawn(async move {
                    // SAFETY: `dup` is an owned pidfd that the AsyncFd owns
                    // from here on; nothing else closes or replaces it.
                    let afd = unsafe {
                        AsyncFd::register_with_interest(dup, tokio::io::Interest::READABLE)
                    };
                    if let Ok(afd) = afd
                        && afd.readable().await.is_ok()
                    {
                        let _ = ended_at.set(Instant::now());
                    }
                })
            });
        Some(Watched {
            fd,
            pid,
            ended_at,
            watch,
        })
    }

    /// When it was seen to end; `None` while it runs or when no watch task
    /// stamps it. A process that has ended is stamped by its watch task a
    /// moment later (the task runs when the runtime next polls it), so this
    /// waits for that stamp, at most until `deadline`: reading the stamp the
    /// moment a sibling died would otherwise find none yet, and a teardown's
    /// kill would count as the runtime's.
    async fn end_time(&self, deadline: Instant) -> Option<Instant> {
        if self.watch.is_none() || !self.ended() {
            return None;
        }
        loop {
            if let Some(t) = self.ended_at.get() {
                return Some(*t);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    async fn killed_by(&self, deadline: Instant) -> Option<i32> {
        if !self.ended() {
            return None;
        }
        loop {
            match self.exit_status() {
                Ok(Some(status)) => {
                    let signal = status & 0x7f;
                    return (signal != 0 && signal != 0x7f).then_some(signal);
                }
                Ok(None) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(None) | Err(()) => return None,
            }
        }
    }

    /// Whether the process has ended (a pidfd polls readable then).
    fn ended(&self) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, exclusively borrowed, and a zero timeout.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        r > 0 && p.revents & libc::POLLIN != 0
    }

    /// The wait status, `Ok(None)` while not yet reaped, `Err` when the
    /// kernel has no such ioctl.
    fn exit_status(&self) -> std::result::Result<Option<i32>, ()> {
        let mut info = PidfdInfo {
            mask: PIDFD_INFO_EXIT,
            ..PidfdInfo::default()
        };
        // SAFETY: the ioctl writes at most 64 bytes (the size encoded in the
        // request) into `info`, which is 64 bytes, `repr(C)` and exclusively
        // borrowed for the call.
        let r = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                PIDFD_GET_INFO as _,
                &mut info as *mut PidfdInfo,
            )
        };
        if r < 0 {
            return Err(());
        }
        Ok((info.mask & PIDFD_INFO_EXIT != 0).then_some(info.exit_code))
    }
}

/// The parent pid in `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The children of `parent` other than `except`.
fn children_of(parent: u32, except: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p != except && parent_of(p) == Some(parent))
        .collect()
}

/// `name`'s init pid while it runs.
async fn running_pid(docker: &Docker, name: &str) -> Option<u32> {
    let state = docker.inspect_container(name, None).await.ok()?.state?;
    let pid = state.pid.filter(|&p| p > 0)?;
    (state.running == Some(true)).then_some(pid as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_parent() {
        let me = std::process::id();
        assert!(parent_of(me).is_some_and(|p| p > 0));
        assert_eq!(parent_of(u32::MAX), None);
    }

    #[test]
    fn the_request_matches_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<PidfdInfo>(), 64);
        assert_eq!(std::mem::offset_of!(PidfdInfo, exit_code), 60);
        assert_eq!(PIDFD_GET_INFO, 0xC040_FF0B);
    }
}
