//! The daemon's own settings, and the `-h` text listing every variable read.

use std::net::SocketAddr;

use plimsoll_core::config::{Config, ConfigError, Env, Var, variables};

use plimsoll_core::hardened::{self, Violation};

use crate::auth::Verifier;
use crate::tls::TlsFiles;

/// Every variable the daemon itself reads (the core's are in [`variables`]).
pub const DAEMON_VARIABLES: &[Var] = &[
    Var {
        name: "PLIMSOLL_ADDR",
        default: "127.0.0.1:8746",
        help: "RPC listener address (host:port; port 0 picks a free one)",
    },
    Var {
        name: "PLIMSOLL_METRICS_ADDR",
        default: "127.0.0.1:9464",
        help: "Prometheus /metrics listener (no auth; keep it on loopback), or `off`",
    },
    Var {
        name: "PLIMSOLL_GUARD_ADDR",
        default: "unset",
        help: "the egress guard listener (host:port): serves only the guard path to granted VMs that run elsewhere (e2b with E2B_GUARD_URL, dockercloud with SANDBOX_DOCKERCLOUD_GUARD_URL, which require it; refused otherwise); put the operator's public TLS endpoint for that URL in front of it",
    },
    Var {
        name: "PLIMSOLL_LOG_FORMAT",
        default: "json",
        help: "json | text",
    },
    Var {
        name: "PLIMSOLL_LOG",
        default: "info",
        help: "log filter (tracing EnvFilter syntax)",
    },
    Var {
        name: "PLIMSOLL_CLIENTS_FILE",
        default: "none",
        help: "JSON clients file: {\"clients\":[{\"id\",\"token_sha256\",\"scopes\"}]}",
    },
    Var {
        name: "PLIMSOLL_TOKEN",
        default: "none",
        help: "one shared bearer token (at least 32 characters), principal `static`",
    },
    Var {
        name: "PLIMSOLL_TLS_CERT",
        default: "none",
        help: "PEM certificate chain (leaf first): every listener (RPC, metrics, guard) serves TLS 1.2+ with ALPN h2 and http/1.1; set with PLIMSOLL_TLS_KEY, both or neither",
    },
    Var {
        name: "PLIMSOLL_TLS_KEY",
        default: "none",
        help: "PEM private key of PLIMSOLL_TLS_CERT's leaf (PKCS#8, PKCS#1 or SEC1)",
    },
    Var {
        name: "PLIMSOLL_HARDENED",
        default: "0",
        help: "1 enforces the production rules at startup (and in --check), all violations reported at once: a vm or verified kernel tier; a clients file, not a shared token, not insecure; TLS on every listener off loopback; pinned images, no unconfined seccomp, an explicit e2b template; an explicit per-run envelope; a rate limit with a burst of at most one minute; per-caller run and session caps",
    },
    Var {
        name: "PLIMSOLL_INSECURE",
        default: "0",
        help: "1 allows a real provider with no authentication (development only)",
    },
];

/// Parsed daemon settings.
#[derive(Debug)]
pub struct Settings {
    /// The core's configuration.
    pub core: Config,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Where to serve `/metrics`, or `None` for off.
    pub metrics_addr: Option<SocketAddr>,
    /// Where to serve the egress guard, when the provider uses one.
    pub guard_addr: Option<SocketAddr>,
    /// `json` or text logs.
    pub json_logs: bool,
    /// The log filter.
    pub log_filter: String,
    /// Authentication.
    pub verifier: Verifier,
    /// `PLIMSOLL_INSECURE=1`.
    pub insecure: bool,
    /// `PLIMSOLL_TLS_CERT` and `PLIMSOLL_TLS_KEY`, when set.
    pub tls: Option<TlsFiles>,
    /// `PLIMSOLL_HARDENED=1`.
    pub hardened: bool,
}

impl Settings {
    /// Reads and checks every variable. Nothing here starts anything.
    pub fn from_env(env: &Env<'_>) -> Result<Settings, ConfigError> {
        let core = Config::from_env(env)?;
        let addr_text = env
            .get("PLIMSOLL_ADDR")
            .unwrap_or_else(|| "127.0.0.1:8746".into());
        let addr = addr_text.parse::<SocketAddr>().map_err(|_| {
            ConfigError::new(
                "PLIMSOLL_ADDR",
                format!("{addr_text:?} is not host:port with a numeric host"),
            )
        })?;
        let metrics_addr = match env.get("PLIMSOLL_METRICS_ADDR").as_deref() {
            Some("off") => None,
            v => {
                let text = v.unwrap_or("127.0.0.1:9464");
                Some(text.parse::<SocketAddr>().map_err(|_| {
                    ConfigError::new(
                        "PLIMSOLL_METRICS_ADDR",
                        format!("{text:?} is not host:port with a numeric host, or off"),
                    )
                })?)
            }
        };
        let guard_addr = guard_addr(env, &core, addr, metrics_addr)?;
        let json_logs = match env.get("PLIMSOLL_LOG_FORMAT").as_deref() {
            None | Some("json") => true,
            Some("text") => false,
            Some(v) => {
                return Err(ConfigError::new(
                    "PLIMSOLL_LOG_FORMAT",
                    format!("{v:?} is not json or text"),
                ));
            }
        };
        let log_filter = env.get("PLIMSOLL_LOG").unwrap_or_else(|| "info".into());
        let verifier = Verifier::load(env)?;
        let mut core = core;
        core.paid.callers = verifier.paid_allowances();
        if !core.paid.callers.is_empty() && !core.provider.plugin().metered {
            return Err(ConfigError::new(
                "PLIMSOLL_CLIENTS_FILE",
                format!(
                    "paid_seconds_per_day applies to providers billed by the second (e2b, dockercloud), not {}; remove it",
                    core.provider.plugin().name
                ),
            ));
        }
        let insecure = env.bool("PLIMSOLL_INSECURE")?;
        let hardened = env.bool("PLIMSOLL_HARDENED")?;
        let tls = TlsFiles::from_pair(
            env.get("PLIMSOLL_TLS_CERT").as_deref(),
            env.get("PLIMSOLL_TLS_KEY").as_deref(),
        )
        .map_err(|e| match e.strip_prefix("PLIMSOLL_TLS_KEY: ") {
            Some(why) => ConfigError::new("PLIMSOLL_TLS_KEY", why),
            None => ConfigError::new(
                "PLIMSOLL_TLS_CERT",
                e.strip_prefix("PLIMSOLL_TLS_CERT: ").unwrap_or(&e),
            ),
        })?;
        Ok(Settings {
            core,
            addr,
            metrics_addr,
            guard_addr,
            json_logs,
            log_filter,
            verifier,
            insecure,
            tls,
            hardened,
        })
    }

    /// Hardened mode's rules that need no sandbox, as these settings and
    /// `env` meet them ([`plimsoll_core::hardened::early`]).
    pub fn hardened_violations(&self, env: &Env<'_>) -> Vec<Violation> {
        let tls = self.tls.is_some();
        let mut listeners = vec![("PLIMSOLL_ADDR", self.addr, tls)];
        listeners.extend(self.metrics_addr.map(|a| ("PLIMSOLL_METRICS_ADDR", a, tls)));
        listeners.extend(self.guard_addr.map(|a| ("PLIMSOLL_GUARD_ADDR", a, tls)));
        let daemon = hardened::Daemon {
            auth: self.verifier.auth(),
            insecure: self.insecure,
            listeners,
            paid_for_every_caller: self.verifier.every_caller_paid(),
        };
        plimsoll_core::config::hardened::early(&self.core, env, &daemon)
    }
}

/// `PLIMSOLL_GUARD_ADDR`: required when the provider's settings name a guard
/// path, refused otherwise, and never an address another listener has.
fn guard_addr(
    env: &Env<'_>,
    core: &Config,
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
) -> Result<Option<SocketAddr>, ConfigError> {
    const VAR: &str = "PLIMSOLL_GUARD_ADDR";
    let provider = core.provider.settings().plugin().name;
    let wanted = core.provider.settings().guard_path().is_some();
    let text = match (env.get(VAR), wanted) {
        (None, false) => return Ok(None),
        (None, true) => {
            return Err(ConfigError::new(
                VAR,
                format!(
                    "required: the {provider} provider's granted runs reach their broker \
                     through the egress guard, which plimsolld serves on this address"
                ),
            ));
        }
        (Some(_), false) => {
            return Err(ConfigError::new(
                VAR,
                format!(
                    "the {provider} provider as configured uses no egress guard (e2b with \
                     E2B_GUARD_URL and dockercloud with SANDBOX_DOCKERCLOUD_GUARD_URL do); unset it"
                ),
            ));
        }
        (Some(t), true) => t,
    };
    let guard = text.parse::<SocketAddr>().map_err(|_| {
        ConfigError::new(
            VAR,
            format!("{text:?} is not host:port with a numeric host"),
        )
    })?;
    let clash = |other: SocketAddr| {
        other.port() != 0 && other.port() == guard.port() && {
            let (a, b) = (other.ip(), guard.ip());
            a == b || a.is_unspecified() || b.is_unspecified()
        }
    };
    if clash(addr) {
        return Err(ConfigError::new(
            VAR,
            "must not be PLIMSOLL_ADDR's address: the guard listener serves only the guard",
        ));
    }
    if metrics_addr.is_some_and(clash) {
        return Err(ConfigError::new(
            VAR,
            "must not be PLIMSOLL_METRICS_ADDR's address",
        ));
    }
    Ok(Some(guard))
}

/// The `-h` text: usage and every variable read, with defaults.
pub fn help() -> String {
    let mut s = String::from(
        "plimsolld: serves plimsoll on the plimsoll.v1 Connect wire.\n\n\
         Usage: plimsolld            (configured only by environment variables)\n\
         \x20      plimsolld -h         (this text)\n\
         \x20      plimsolld --version  (the version, git commit and providers built in)\n\
         \x20      plimsolld --check [--json]\n\
         \x20                           (the doctor: checks this host for each provider without\n\
         \x20                           serving; one ok/warn/fail line per check; exit 0 when\n\
         \x20                           SANDBOX_PROVIDER would serve, 1 otherwise)\n\n\
         Endpoints: POST /plimsoll.v1.SandboxService/{Describe,Run,OpenSession,SessionRun,CloseSession},\n\
         GET /healthz, GET /readyz.\n\n\
         A tier is configuration plus startup proof, never attestation.\n\nVariables:\n",
    );
    for v in variables().iter().chain(DAEMON_VARIABLES) {
        s.push_str(&format!(
            "  {:<24} {} (default: {})\n",
            v.name, v.help, v.default
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `SANDBOX_*`/`PLIMSOLL_*` literal in the daemon's and the core's
    /// sources is a variable the `-h` text names.
    #[test]
    fn help_names_every_variable_read() {
        let text = help();
        let roots = [
            concat!(env!("CARGO_MANIFEST_DIR"), "/src"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../plimsoll-core/src"),
        ];
        let mut seen = 0;
        let mut stack: Vec<std::path::PathBuf> = roots.iter().map(Into::into).collect();
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") || p.to_string_lossy().contains("tests") {
                continue;
            }
            let full = std::fs::read_to_string(&p).unwrap();
            // Unit tests below `#[cfg(test)]` may name variables on purpose (typos included).
            let src = full.split("#[cfg(test)]").next().unwrap_or_default();
            for prefix in ["\"SANDBOX_", "\"PLIMSOLL_"] {
                for (i, _) in src.match_indices(prefix) {
                    let name: String = src[i + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                        .collect();
                    if name.ends_with('_') {
                        continue; // a prefix, not a variable
                    }
                    assert!(
                        text.contains(&format!(" {name} ")),
                        "{name} (in {}) is missing from -h",
                        p.display()
                    );
                    seen += 1;
                }
            }
        }
        assert!(seen > 10, "the scan found too few variables: {seen}");
    }

    #[test]
    fn the_guard_address_is_required_with_a_guard_url_and_refused_otherwise() {
        let load = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let get = move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            Settings::from_env(&Env::new(&get))
        };
        let e2b = [
            ("SANDBOX_PROVIDER", "e2b"),
            ("E2B_API_KEY", "e2b_00"),
            ("E2B_GUARD_URL", "https://guard.example.com"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v = e2b.to_vec();
            v.extend_from_slice(extra);
            load(&v)
        };
        let var = |r: Result<Settings, ConfigError>| r.unwrap_err().variable;
        assert_eq!(var(with(&[])), "PLIMSOLL_GUARD_ADDR");
        assert_eq!(
            var(with(&[("PLIMSOLL_GUARD_ADDR", "guard:1")])),
            "PLIMSOLL_GUARD_ADDR"
        );
        for clash in [
            [
                ("PLIMSOLL_ADDR", "127.0.0.1:9000"),
                ("PLIMSOLL_GUARD_ADDR", "127.0.0.1:9000"),
            ],
            [
                ("PLIMSOLL_ADDR", "0.0.0.0:9000"),
                ("PLIMSOLL_GUARD_ADDR", "127.0.0.1:9000"),
            ],
            [
                ("PLIMSOLL_METRICS_ADDR", "127.0.0.1:9001"),
                ("PLIMSOLL_GUARD_ADDR", "127.0.0.1:9001"),
            ],
        ] {
            assert_eq!(var(with(&clash)), "PLIMSOLL_GUARD_ADDR", "{clash:?}");
        }
        let s = with(&[("PLIMSOLL_GUARD_ADDR", "127.0.0.1:9443")]).unwrap();
        assert_eq!(s.guard_addr, Some("127.0.0.1:9443".parse().unwrap()));
        let s = with(&[
            ("PLIMSOLL_ADDR", "127.0.0.1:0"),
            ("PLIMSOLL_GUARD_ADDR", "127.0.0.1:0"),
        ]);
        assert!(s.is_ok(), "two free ports are two addresses");
        // No guard URL: the address is refused.
        let no_guard = [
            ("SANDBOX_PROVIDER", "e2b"),
            ("E2B_API_KEY", "e2b_00"),
            ("PLIMSOLL_GUARD_ADDR", "127.0.0.1:9443"),
        ];
        assert_eq!(var(load(&no_guard)), "PLIMSOLL_GUARD_ADDR");
        assert_eq!(
            var(load(&[("PLIMSOLL_GUARD_ADDR", "127.0.0.1:9443")])),
            "PLIMSOLL_GUARD_ADDR"
        );
    }

    #[test]
    fn daemon_settings_are_strict() {
        let load = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let get = move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            Settings::from_env(&Env::new(&get)).map(|_| ())
        };
        assert!(load(&[]).is_ok());
        assert_eq!(
            load(&[("PLIMSOLL_ADDR", "localhost")])
                .unwrap_err()
                .variable,
            "PLIMSOLL_ADDR"
        );
        assert_eq!(
            load(&[("PLIMSOLL_LOG_FORMAT", "xml")])
                .unwrap_err()
                .variable,
            "PLIMSOLL_LOG_FORMAT"
        );
        assert_eq!(
            load(&[("PLIMSOLL_TOKEN", "short")]).unwrap_err().variable,
            "PLIMSOLL_TOKEN"
        );
        assert_eq!(
            load(&[("PLIMSOLL_INSECURE", "yes")]).unwrap_err().variable,
            "PLIMSOLL_INSECURE"
        );
        assert_eq!(
            load(&[("PLIMSOLL_CLIENTS_FILE", "/nonexistent/x.json")])
                .unwrap_err()
                .variable,
            "PLIMSOLL_CLIENTS_FILE"
        );
    }
}
