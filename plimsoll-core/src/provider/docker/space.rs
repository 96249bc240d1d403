//! Free space on docker's data root, part of the readiness preflight.
//!
//! With docker's data root full every container create fails (`no space left
//! on device`), so a daemon that says it is ready would only fail runs: the
//! preflight reads docker's root directory (`docker info`'s `DockerRootDir`)
//! and asks the filesystem under it (`statvfs`, the provider only talks to a
//! docker on this host) how much an unprivileged writer may still use. Below
//! [`MIN_FREE_BYTES`] the preflight fails and `/readyz` answers 503; once space
//! is freed the next preflight passes again. What this does not cover: a
//! root directory this process may not look into (docker's is often `0710
//! root`; plimsolld running as a docker-group user gets no figure, and the
//! check then passes, as before), space used up between two checks (the run's
//! create then fails with docker's own error, see FT7), and inodes.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use bollard::Docker;

use crate::error::{Error, Result};

/// Below this much free space on docker's data root the provider is not
/// ready: a container create writes its layer directories, config and logs
/// there (a few MiB), and an image-sized margin keeps runs from failing mid-way.
pub(crate) const MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;

/// Fails when docker's data root has less than [`MIN_FREE_BYTES`] free.
pub(crate) async fn check(docker: &Docker) -> Result<()> {
    let info = docker
        .info()
        .await
        .map_err(|e| Error::infrastructure(format!("docker info: {e}")))?;
    let Some(root) = info.docker_root_dir else {
        return Ok(());
    };
    judge(&root, available(Path::new(&root)))
}

/// The verdict for `root` with `free` bytes available (`None`: unknown).
fn judge(root: &str, free: Option<u64>) -> Result<()> {
    match free {
        Some(free) if free < MIN_FREE_BYTES => Err(Error::infrastructure(format!(
            "docker's data root {root} has {} MiB free, below the {} MiB a run's container needs; \
             free space there (docker system prune, or grow the disk)",
            free / (1024 * 1024),
            MIN_FREE_BYTES / (1024 * 1024)
        ))),
        _ => Ok(()),
    }
}

/// Bytes an unprivileged writer may still use on the filesystem of `path`.
fn available(path: &Path) -> Option<u64> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid, exclusively
    // borrowed statvfs for the call to fill.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_the_threshold() {
        assert!(judge("/d", Some(MIN_FREE_BYTES - 1)).is_err());
        assert!(
            judge("/d", Some(0))
                .unwrap_err()
                .message()
                .contains("0 MiB free")
        );
        assert!(judge("/d", Some(MIN_FREE_BYTES)).is_ok());
        // No figure (a root this process cannot look into): not refused.
        assert!(judge("/d", None).is_ok());
    }

    #[test]
    fn reads_a_real_filesystem() {
        assert!(available(Path::new("/")).is_some());
        assert_eq!(available(Path::new("/no/such/dir/here")), None);
    }
}
