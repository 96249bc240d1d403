//! Hardened mode's rules that need no sandbox, checked against the whole
//! configuration: [`early`]. The rules' types, and the isolation rule
//! checked after the proof, are in [`crate::hardened`].

use crate::config::Config;
use crate::env::Env;
use crate::hardened::{Auth, Daemon, Violation};

/// Every rule but isolation, all at once (empty: none broken).
pub fn early(config: &Config, env: &Env<'_>, daemon: &Daemon) -> Vec<Violation> {
    let mut v = Vec::new();
    match daemon.auth {
        Auth::ClientsFile => {}
        Auth::SharedToken => v.push(Violation::new(
            "PLIMSOLL_TOKEN",
            "hardened mode takes a clients file (PLIMSOLL_CLIENTS_FILE), one token per caller, not a shared token",
        )),
        Auth::Open => v.push(Violation::new(
            "PLIMSOLL_CLIENTS_FILE",
            "hardened mode takes a clients file, one token per caller",
        )),
    }
    if daemon.insecure {
        v.push(Violation::new(
            "PLIMSOLL_INSECURE",
            "must be unset in hardened mode",
        ));
    }
    for (variable, addr, tls) in &daemon.listeners {
        if !tls && !addr.ip().is_loopback() {
            v.push(Violation::new(
                variable,
                format!(
                    "listens off loopback ({addr}) without TLS: set PLIMSOLL_TLS_CERT and PLIMSOLL_TLS_KEY"
                ),
            ));
        }
    }
    v.extend(
        config
            .provider
            .settings()
            .hardened(env, &config.resources, &config.admission),
    );
    if config.provider.plugin().metered && !daemon.paid_for_every_caller {
        v.push(Violation::new(
            "PLIMSOLL_CLIENTS_FILE",
            format!(
                "the {} provider is billed by the second: in hardened mode every client names its paid_seconds_per_day",
                config.provider.plugin().name
            ),
        ));
    }
    let a = &config.admission;
    if a.rate_per_min == 0 {
        v.push(Violation::new(
            "SANDBOX_RATE_PER_MIN",
            "must be positive in hardened mode (0 turns the rate limit off)",
        ));
    } else if a.rate_burst > a.rate_per_min {
        v.push(Violation::new(
            "SANDBOX_RATE_BURST",
            format!(
                "must be at most one minute's rate ({}) in hardened mode",
                a.rate_per_min
            ),
        ));
    }
    if a.per_key_concurrent == 0 || a.per_key_concurrent >= a.max_concurrent {
        v.push(Violation::new(
            "SANDBOX_PER_KEY_CONCURRENT",
            format!(
                "must be positive and below SANDBOX_MAX_CONCURRENT ({}) in hardened mode, so no one caller takes every slot",
                a.max_concurrent
            ),
        ));
    }
    if config.sessions.max_sessions > 0 && config.sessions.max_per_caller == 0 {
        v.push(Violation::new(
            "SANDBOX_MAX_SESSIONS_PER_CALLER",
            "must be positive in hardened mode when sessions are on",
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Limits;
    use crate::provider::ResourceSettings;

    fn daemon(auth: Auth, insecure: bool, addr: &str, tls: bool) -> Daemon {
        Daemon {
            auth,
            insecure,
            listeners: vec![("PLIMSOLL_ADDR", addr.parse().unwrap(), tls)],
            paid_for_every_caller: false,
        }
    }

    #[test]
    fn every_daemon_rule_is_reported_at_once() {
        let get = |_: &str| None;
        let env = Env::new(&get);
        let mut config = Config::default();
        config.admission.rate_per_min = 0;
        config.admission.per_key_concurrent = config.admission.max_concurrent;
        config.sessions.max_sessions = 2;
        let v = early(
            &config,
            &env,
            &daemon(Auth::SharedToken, true, "0.0.0.0:8746", false),
        );
        let named: Vec<&str> = v.iter().map(|v| v.variable).collect();
        assert_eq!(
            named,
            [
                "PLIMSOLL_TOKEN",
                "PLIMSOLL_INSECURE",
                "PLIMSOLL_ADDR",
                "SANDBOX_RATE_PER_MIN",
                "SANDBOX_PER_KEY_CONCURRENT",
                "SANDBOX_MAX_SESSIONS_PER_CALLER"
            ]
        );
        config.admission.rate_per_min = 30;
        config.admission.rate_burst = 31;
        let v = early(
            &config,
            &env,
            &daemon(Auth::ClientsFile, false, "0.0.0.0:8746", true),
        );
        assert_eq!(v[0].variable, "SANDBOX_RATE_BURST");
        assert!(
            early(
                &config,
                &env,
                &daemon(Auth::Open, false, "127.0.0.1:1", false)
            )
            .iter()
            .any(|v| v.variable == "PLIMSOLL_CLIENTS_FILE")
        );
    }

    #[test]
    fn the_envelope_names_each_dimension_unset() {
        let resources = ResourceSettings {
            memory_mb: Some(256),
            cpus: Some(0.0),
            ..ResourceSettings::default()
        };
        let wanted = [
            "SANDBOX_MEMORY_MB",
            "SANDBOX_CPUS",
            "SANDBOX_DISK_MB",
            "SANDBOX_TOTAL_MEMORY_MB",
        ];
        let named: Vec<&str> = resources
            .hardened_envelope(&Limits::default(), &wanted)
            .iter()
            .map(|v| v.variable)
            .collect();
        assert_eq!(
            named,
            ["SANDBOX_CPUS", "SANDBOX_DISK_MB", "SANDBOX_TOTAL_MEMORY_MB"]
        );
    }
}
