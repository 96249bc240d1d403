//! What the daemon must confirm before anything runs: the runtime's
//! registration and both images.
//!
//! An image must be present locally, declare no VOLUME (docker would create an
//! unlimited writable host folder for it) and set no dynamic-loader variable in
//! its environment. Its content-addressed ID is pinned at the first check;
//! every run starts that exact ID, and a later check that finds the tag moved
//! fails. What this does not cover: what the image's programs do — the startup
//! proof runs them.

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::{ImageInspect, Runtime};

use crate::error::{Error, Result};
use crate::provider::docker::DockerRuntime;

/// An image as inspected: the reference asked for, its ID and environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PinnedImage {
    /// The configured reference (a tag or digest).
    pub reference: String,
    /// `sha256:<64 hex>`, the image's content ID.
    pub id: String,
    /// The image's own `ENV`, passed to guest processes explicitly.
    pub env: Vec<String>,
}

impl PinnedImage {
    /// `docker-image:sha256:<hex>`, the identity Describe and records carry.
    pub fn identity(&self) -> String {
        format!("docker-image:{}", self.id)
    }
}

/// Environment variables that steer the dynamic loader or libc's lookups.
fn loader_variable(name: &str) -> bool {
    name.starts_with("LD_")
        || matches!(
            name,
            "GLIBC_TUNABLES" | "LOCPATH" | "NLSPATH" | "GCONV_PATH"
        )
}

fn valid_id(id: &str) -> bool {
    id.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Judges an inspected image; the message says what is wrong.
pub(crate) fn judge_image(reference: &str, inspect: &ImageInspect) -> Result<PinnedImage, String> {
    let id = inspect.id.clone().unwrap_or_default();
    if !valid_id(&id) {
        return Err(format!(
            "image {reference}: docker reported no content ID ({id:?})"
        ));
    }
    if let Some(os) = &inspect.os
        && os != "linux"
    {
        return Err(format!("image {reference} is for {os}, not linux"));
    }
    let config = inspect.config.clone().unwrap_or_default();
    if let Some(volumes) = config.volumes.filter(|v| !v.is_empty()) {
        return Err(format!(
            "image {reference} declares VOLUME {}: docker would give every run an unlimited writable host folder; rebuild it without VOLUME",
            volumes.join(", ")
        ));
    }
    let env = config.env.unwrap_or_default();
    if let Some(bad) = env
        .iter()
        .map(|e| e.split_once('=').map_or(e.as_str(), |(k, _)| k))
        .find(|k| loader_variable(k))
    {
        return Err(format!(
            "image {reference} sets the loader variable {bad} in its environment; plimsoll refuses images that steer the dynamic loader"
        ));
    }
    Ok(PinnedImage {
        reference: reference.to_owned(),
        id,
        env,
    })
}

/// Inspects and judges one image. A missing image is a refusal to start
/// (nothing is pulled: there is no registry here).
pub(crate) async fn inspect(docker: &Docker, reference: &str) -> Result<PinnedImage> {
    match docker.inspect_image(reference).await {
        Ok(i) => judge_image(reference, &i).map_err(Error::infrastructure),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Err(Error::infrastructure(format!(
            "image {reference} is not present on the local docker daemon (build it with images/build.sh; nothing is pulled)"
        ))),
        Err(e) => Err(Error::infrastructure(format!(
            "inspecting image {reference}: {e}"
        ))),
    }
}

/// Judges docker's registration of the configured runtime.
///
/// runc must be registered; runsc must be registered under `name` with a
/// program whose file name is exactly `runsc`. Only this, plus the proofs,
/// lets the kernel tier be painted.
pub(crate) fn judge_runtime(
    runtimes: &HashMap<String, Runtime>,
    kind: DockerRuntime,
    name: &str,
) -> Result<(), String> {
    let reg = runtimes.get(name).ok_or_else(|| {
        let mut known: Vec<&str> = runtimes.keys().map(String::as_str).collect();
        known.sort();
        format!(
            "docker has no runtime registered as {name:?} (registered: {})",
            known.join(", ")
        )
    })?;
    if kind == DockerRuntime::Runsc {
        let path = reg.path.as_deref().unwrap_or("");
        let base = std::path::Path::new(path)
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("");
        if base != "runsc" {
            return Err(format!(
                "docker's runtime {name:?} runs {path:?}, not a program named runsc: the kernel tier is not painted on anything else"
            ));
        }
    }
    Ok(())
}

/// Reads docker's runtime registrations and judges the configured one.
pub(crate) async fn check_runtime(docker: &Docker, kind: DockerRuntime, name: &str) -> Result<()> {
    let info = docker
        .info()
        .await
        .map_err(|e| Error::infrastructure(format!("docker info: {e}")))?;
    judge_runtime(&info.runtimes.unwrap_or_default(), kind, name).map_err(Error::infrastructure)
}

/// The guest uid and keeper uid must not be host accounts: a host account's
/// files would be the guest's to write through any shared mount.
pub(crate) fn check_host_accounts(uid: u32) -> Result<()> {
    for file in ["/etc/passwd", "/etc/group"] {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in text.lines() {
            let id = line.split(':').nth(2).and_then(|f| f.parse::<u32>().ok());
            if let Some(id) = id
                && (id == uid || id == uid + 1)
            {
                return Err(Error::infrastructure(format!(
                    "SANDBOX_GUEST_UID: id {id} is an account in the host's {file}; pick a uid (and uid+1) unused on the host"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::ImageConfig;

    fn image(env: &[&str], volumes: &[&str]) -> ImageInspect {
        ImageInspect {
            id: Some(format!("sha256:{}", "a".repeat(64))),
            os: Some("linux".into()),
            config: Some(ImageConfig {
                env: Some(env.iter().map(|s| s.to_string()).collect()),
                volumes: Some(volumes.iter().map(|s| s.to_string()).collect()),
                ..ImageConfig::default()
            }),
            ..ImageInspect::default()
        }
    }

    #[test]
    fn images_are_judged() {
        let ok = judge_image("x", &image(&["PATH=/bin"], &[])).unwrap();
        assert_eq!(
            ok.identity(),
            format!("docker-image:sha256:{}", "a".repeat(64))
        );
        assert!(
            judge_image("x", &image(&[], &["/data"]))
                .unwrap_err()
                .contains("VOLUME")
        );
        for bad in [
            "LD_PRELOAD=/x.so",
            "LD_LIBRARY_PATH=/l",
            "GLIBC_TUNABLES=a",
            "GCONV_PATH=/g",
        ] {
            assert!(
                judge_image("x", &image(&[bad], &[]))
                    .unwrap_err()
                    .contains("loader")
            );
        }
        assert!(judge_image("x", &image(&["OLD_PRELOAD=1"], &[])).is_ok());
        let mut no_id = image(&[], &[]);
        no_id.id = Some("abc".into());
        assert!(judge_image("x", &no_id).is_err());
    }

    #[test]
    fn runtimes_are_judged() {
        let reg = |path: &str| Runtime {
            path: Some(path.into()),
            ..Runtime::default()
        };
        let m = HashMap::from([
            ("runc".to_string(), reg("runc")),
            ("runsc".to_string(), reg("/usr/bin/runsc")),
            ("fake".to_string(), reg("/usr/bin/runc")),
        ]);
        judge_runtime(&m, DockerRuntime::Runc, "runc").unwrap();
        judge_runtime(&m, DockerRuntime::Runsc, "runsc").unwrap();
        assert!(
            judge_runtime(&m, DockerRuntime::Runsc, "fake")
                .unwrap_err()
                .contains("not a program named runsc")
        );
        assert!(
            judge_runtime(&m, DockerRuntime::Runsc, "gone")
                .unwrap_err()
                .contains("no runtime")
        );
    }
}
