//! The docker provider's wall ([`crate::wall`]): the host kernel and the
//! engine as the daemon reports them (with the API version this client
//! negotiated), the OCI runtime's own `--version` output, the seccomp profile
//! in force with its SHA-256, and each image's content-addressed ID.
//!
//! The runtime is the binary dockerd runs for the configured runtime name:
//! its registration's `path` from `docker info` (resolved on `PATH` as dockerd
//! resolves it; the socket is local, so it is the same host), asked for its
//! version. A renamed or wrapped binary is judged by what it reports, never
//! by its file name. The wall is read at startup: replacing the runtime under
//! a running daemon needs a restart for the evidence to follow.

use std::time::Duration;

use bollard::Docker;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::provider::docker::{SeccompSetting, seccomp};
use crate::wall::Wall;

/// How long a runtime may take to print its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// `<program> --version`, its non-empty lines joined by `; `.
pub(crate) async fn runtime_report(path: &str) -> Result<String> {
    let run = tokio::process::Command::new(path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(VERSION_TIMEOUT, run).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            return Err(Error::infrastructure(format!(
                "the OCI runtime {path} could not be asked its version: {e}"
            )));
        }
        Err(_) => {
            return Err(Error::infrastructure(format!(
                "the OCI runtime {path} did not print its version within {} s",
                VERSION_TIMEOUT.as_secs()
            )));
        }
    };
    let text: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if !out.status.success() || text.is_empty() {
        return Err(Error::infrastructure(format!(
            "the OCI runtime {path} --version gave nothing ({})",
            out.status
        )));
    }
    Ok(text.join("; "))
}

/// `<name> sha256:<hex>` of the profile's text as sent to docker (docker's
/// default: its name only, since the Engine API does not expose its rules).
fn seccomp_part(setting: &SeccompSetting) -> Result<String> {
    let choice =
        seccomp::security_opt(setting).map_err(|e| Error::infrastructure(e.to_string()))?;
    Ok(if choice.digest_text.is_empty() {
        format!("{} (rules not exposed by the Engine API)", setting.name())
    } else {
        format!(
            "{} sha256:{}",
            setting.name(),
            hex::encode(Sha256::digest(choice.digest_text.as_bytes()))
        )
    })
}

/// The wall of docker runs under the runtime registered as `runtime_name`,
/// with `images` (`(role, reference, id)`) as pinned.
pub(crate) async fn read(
    docker: &Docker,
    runtime_name: &str,
    seccomp: &SeccompSetting,
    images: &[(&str, &str, &str)],
) -> Result<Wall> {
    let unreachable = |e: bollard::errors::Error| {
        Error::infrastructure(format!("docker did not say what it runs: {e}"))
    };
    let (version, info) = tokio::try_join!(docker.version(), docker.info()).map_err(unreachable)?;
    let negotiated = docker.client_version();
    let reg = info
        .runtimes
        .as_ref()
        .and_then(|r| r.get(runtime_name))
        .cloned()
        .ok_or_else(|| {
            Error::infrastructure(format!(
                "docker has no runtime named {runtime_name} registered"
            ))
        })?;
    let path = reg.path.clone().unwrap_or_else(|| runtime_name.to_owned());
    let report = runtime_report(&path).await?;
    let mut wall = Wall::default()
        .part(
            "host kernel",
            info.kernel_version
                .clone()
                .unwrap_or_else(|| "unreported".into()),
        )
        .part(
            "docker engine",
            format!(
                "{} (API {}, negotiated {}.{})",
                version.version.as_deref().unwrap_or("unreported"),
                version.api_version.as_deref().unwrap_or("?"),
                negotiated.major_version,
                negotiated.minor_version
            ),
        )
        .part(format!("oci runtime {runtime_name} ({path})"), report);
    let args = reg.runtime_args.clone().unwrap_or_default();
    if !args.is_empty() {
        wall = wall.part(
            format!("oci runtime {runtime_name} arguments"),
            args.join(" "),
        );
    }
    wall = wall.part("seccomp profile", seccomp_part(seccomp)?);
    for (role, reference, id) in images {
        wall = wall.part(format!("image {role} ({reference})"), *id);
    }
    Ok(wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_runtime_is_judged_by_what_it_reports() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("renamed-runtime");
        std::fs::write(
            &fake,
            "#!/bin/sh\nprintf 'runc version 1.1.11\\ncommit: v1.1.11-0-g4bccb38c\\n\\nspec: 1.0.2-dev\\n'\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let text = runtime_report(fake.to_str().unwrap()).await.unwrap();
        assert_eq!(
            text,
            "runc version 1.1.11; commit: v1.1.11-0-g4bccb38c; spec: 1.0.2-dev"
        );
        let silent = dir.path().join("silent");
        std::fs::write(&silent, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&silent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let e = runtime_report(silent.to_str().unwrap()).await.unwrap_err();
        assert!(e.message().contains("gave nothing"), "{}", e.message());
        assert!(runtime_report("/nonexistent/runc").await.is_err());
    }

    #[test]
    fn the_seccomp_part_names_the_profile_and_its_digest() {
        let shipped = seccomp_part(&SeccompSetting::Shipped).unwrap();
        assert!(shipped.starts_with("plimsoll sha256:"), "{shipped}");
        assert_eq!(shipped.len(), "plimsoll sha256:".len() + 64);
        assert!(
            seccomp_part(&SeccompSetting::DockerDefault)
                .unwrap()
                .contains("not exposed")
        );
    }
}
