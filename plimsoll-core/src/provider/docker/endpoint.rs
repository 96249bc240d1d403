//! Finding the one local docker daemon: its Unix socket, looked up once.
//!
//! `DOCKER_HOST` wins, then `DOCKER_CONTEXT`, then the CLI's `currentContext`
//! in `$DOCKER_CONFIG/config.json` (default `~/.docker`); `default` or nothing
//! means `/var/run/docker.sock`. Anything but a `unix://` socket is refused:
//! the broker's per-run socket and the cleanup after each run work only on the
//! same machine. What this does not cover: a Unix socket that is itself a
//! forward to another machine (an SSH-forwarded socket looks local).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::env::ConfigError;
use crate::provider::docker::DockerSettings;

/// The socket docker listens on when nothing else is configured.
pub(crate) const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

fn remote(variable: &'static str, what: &str) -> ConfigError {
    ConfigError::new(
        variable,
        format!(
            "{what} is not a local unix:// socket; plimsoll refuses a remote docker daemon \
             (the broker's per-run socket and the cleanup after each run only work on the same machine)"
        ),
    )
}

/// The socket path of a `unix://` host string.
fn unix_path(variable: &'static str, host: &str) -> Result<PathBuf, ConfigError> {
    match host.strip_prefix("unix://") {
        Some(p) if p.starts_with('/') => Ok(PathBuf::from(p)),
        Some(_) => Err(ConfigError::new(
            variable,
            format!("{host:?} does not name an absolute socket path"),
        )),
        None => Err(remote(variable, &format!("{host:?}"))),
    }
}

/// Resolves the daemon's socket path from the settings and the CLI's files.
pub(crate) fn resolve(s: &DockerSettings, home: Option<&Path>) -> Result<PathBuf, ConfigError> {
    if let Some(host) = &s.docker_host {
        return unix_path("DOCKER_HOST", host);
    }
    let config_dir = match (&s.docker_config, home) {
        (Some(dir), _) => Some(PathBuf::from(dir)),
        (None, Some(home)) => Some(home.join(".docker")),
        (None, None) => None,
    };
    let (variable, context) = match &s.docker_context {
        Some(c) => ("DOCKER_CONTEXT", Some(c.clone())),
        None => (
            "DOCKER_CONFIG",
            config_dir.as_deref().and_then(current_context),
        ),
    };
    let context = match context {
        None => return Ok(PathBuf::from(DEFAULT_SOCKET)),
        Some(c) if c == "default" => return Ok(PathBuf::from(DEFAULT_SOCKET)),
        Some(c) => c,
    };
    let dir = config_dir.ok_or_else(|| {
        ConfigError::new(
            variable,
            format!("context {context:?} is selected but no docker config directory is known"),
        )
    })?;
    let meta = dir
        .join("contexts/meta")
        .join(hex::encode(Sha256::digest(context.as_bytes())))
        .join("meta.json");
    let text = std::fs::read_to_string(&meta).map_err(|e| {
        ConfigError::new(
            variable,
            format!("context {context:?}: cannot read {}: {e}", meta.display()),
        )
    })?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        ConfigError::new(
            variable,
            format!("context {context:?}: {}: {e}", meta.display()),
        )
    })?;
    let host = doc["Endpoints"]["docker"]["Host"].as_str().ok_or_else(|| {
        ConfigError::new(
            variable,
            format!("context {context:?} names no docker endpoint"),
        )
    })?;
    unix_path(variable, host)
        .map_err(|_| remote(variable, &format!("context {context:?} ({host})")))
}

/// The CLI's `currentContext`, if its config says one.
fn current_context(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    doc["currentContext"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(
        host: Option<&str>,
        context: Option<&str>,
        config: Option<&Path>,
    ) -> DockerSettings {
        DockerSettings {
            docker_host: host.map(Into::into),
            docker_context: context.map(Into::into),
            docker_config: config.map(|p| p.to_string_lossy().into_owned()),
            ..DockerSettings::default()
        }
    }

    #[test]
    fn hosts() {
        assert_eq!(
            resolve(&settings(None, None, None), None).unwrap(),
            PathBuf::from(DEFAULT_SOCKET)
        );
        assert_eq!(
            resolve(&settings(Some("unix:///run/d.sock"), None, None), None).unwrap(),
            PathBuf::from("/run/d.sock")
        );
        for remote in [
            "tcp://10.0.0.1:2376",
            "ssh://me@box",
            "http://x",
            "npipe:////./pipe/d",
        ] {
            let e = resolve(&settings(Some(remote), None, None), None).unwrap_err();
            assert_eq!(e.variable, "DOCKER_HOST");
            assert!(e.message.contains("remote"), "{e}");
        }
        assert!(resolve(&settings(Some("unix://rel.sock"), None, None), None).is_err());
    }

    #[test]
    fn contexts() {
        let dir = tempfile::tempdir().unwrap();
        let write_ctx = |name: &str, host: &str| {
            let d = dir
                .path()
                .join("contexts/meta")
                .join(hex::encode(Sha256::digest(name.as_bytes())));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("meta.json"),
                format!(r#"{{"Name":"{name}","Endpoints":{{"docker":{{"Host":"{host}"}}}}}}"#),
            )
            .unwrap();
        };
        write_ctx("far", "ssh://me@far");
        write_ctx("near", "unix:///run/near.sock");
        let s = settings(None, Some("far"), Some(dir.path()));
        assert_eq!(resolve(&s, None).unwrap_err().variable, "DOCKER_CONTEXT");
        let s = settings(None, Some("near"), Some(dir.path()));
        assert_eq!(resolve(&s, None).unwrap(), PathBuf::from("/run/near.sock"));
        let s = settings(None, Some("missing"), Some(dir.path()));
        assert!(resolve(&s, None).is_err());
        // The CLI's current context counts too.
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"currentContext":"far"}"#,
        )
        .unwrap();
        let s = settings(None, None, Some(dir.path()));
        assert_eq!(resolve(&s, None).unwrap_err().variable, "DOCKER_CONFIG");
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"currentContext":"default"}"#,
        )
        .unwrap();
        assert_eq!(resolve(&s, None).unwrap(), PathBuf::from(DEFAULT_SOCKET));
    }
}
