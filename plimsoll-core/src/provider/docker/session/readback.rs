//! Reading a session's container back: the security-relevant settings docker
//! reports, taken at open and compared before every call.

use crate::error::{SessionEnd, SessionEnded};
use crate::provider::docker::Inner;

/// The security-relevant settings of a container, as docker reports them.
pub(super) async fn settings_of(
    inner: &Inner,
    name: &str,
) -> std::result::Result<serde_json::Value, SessionEnded> {
    let docker = inner.client().await.map_err(|e| SessionEnded {
        reason: SessionEnd::MainProcessEnded,
        detail: e.message().to_string(),
    })?;
    let i = match docker.inspect_container(name, None).await {
        Ok(i) => i,
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => {
            return Err(SessionEnded {
                reason: SessionEnd::MainProcessEnded,
                detail: "the session's container is gone".into(),
            });
        }
        Err(e) => {
            return Err(SessionEnded {
                reason: SessionEnd::BoundaryFailed,
                detail: format!("the session's container could not be read back: {e}"),
            });
        }
    };
    let st = i.state.clone().unwrap_or_default();
    if st.running != Some(true) {
        return Err(SessionEnded {
            reason: SessionEnd::MainProcessEnded,
            detail: format!(
                "the session's main process ended (exit code {})",
                st.exit_code.unwrap_or(-1)
            ),
        });
    }
    let h = i.host_config.unwrap_or_default();
    let c = i.config.unwrap_or_default();
    let mut mounts: Vec<serde_json::Value> = i
        .mounts
        .unwrap_or_default()
        .into_iter()
        .map(|m| serde_json::json!([m.destination, m.source, m.rw, m.mode, m.propagation]))
        .collect();
    mounts.sort_by_key(|v| v.to_string());
    Ok(serde_json::json!({
        "image": i.image,
        "read_only": h.readonly_rootfs,
        "tmpfs": h.tmpfs,
        "binds": h.binds,
        "mounts": mounts,
        "devices": h.devices.map(|d| d.len()),
        "cap_add": h.cap_add,
        "cap_drop": h.cap_drop,
        "network_mode": h.network_mode,
        "user": c.user,
        "memory": h.memory,
        "memory_swap": h.memory_swap,
        "pids_limit": h.pids_limit,
        "nano_cpus": h.nano_cpus,
        "cpu_quota": h.cpu_quota,
        "cpu_shares": h.cpu_shares,
        "cpuset_cpus": h.cpuset_cpus,
        "privileged": h.privileged,
        "security_opt": h.security_opt,
        "runtime": h.runtime,
        "ipc_mode": h.ipc_mode,
        "pid_mode": h.pid_mode,
        "userns_mode": h.userns_mode,
    }))
}

/// The first setting that differs between `a` and `b`.
pub(super) fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return (a != b).then(|| "settings".into());
    };
    a.iter()
        .find(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
}
