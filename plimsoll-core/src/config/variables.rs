//! Every variable the core reads, for `-h`, the docs and the embedded engine's name check.

use super::Var;

/// Every variable plimsoll-core reads.
pub const VARIABLES: &[Var] = &[
    Var {
        name: "SANDBOX_PROVIDER",
        default: "disabled",
        help: "one provider per daemon: disabled, wasm, docker, e2b, dockercloud or openshell (each this build includes; its variables are listed below)",
    },
    Var {
        name: "SANDBOX_MIN_ISOLATION",
        default: "no floor",
        help: "process | container | kernel | vm: refuse to start below this proven tier",
    },
    Var {
        name: "SANDBOX_ACCEPT_ADVISORIES",
        default: "none",
        help: "comma-separated advisory IDs (CVE-…) to serve despite: a known escape in the wall that applies to plimsoll's use refuses startup unless named here; Describe and every record then say so (plimsolld --check lists the matches)",
    },
    Var {
        name: "SANDBOX_MEMORY_MB",
        default: "provider default (256)",
        help: "memory per run, MiB",
    },
    Var {
        name: "SANDBOX_CPUS",
        default: "provider default",
        help: "CPUs per run (docker)",
    },
    Var {
        name: "SANDBOX_PIDS",
        default: "provider default",
        help: "processes per run (docker)",
    },
    Var {
        name: "SANDBOX_DISK_MB",
        default: "provider default",
        help: "writable disk per run, MiB (docker)",
    },
    Var {
        name: "SANDBOX_MAX_CONCURRENT",
        default: "8",
        help: "runs in progress at once (1..1024); more are shed, never queued",
    },
    Var {
        name: "SANDBOX_TOTAL_MEMORY_MB",
        default: "no budget",
        help: "memory budget for runs in progress; set with SANDBOX_MEMORY_MB (ignored by e2b and dockercloud)",
    },
    Var {
        name: "SANDBOX_PER_KEY_CONCURRENT",
        default: "half of SANDBOX_MAX_CONCURRENT",
        help: "runs in progress per caller (0 = no per-caller cap)",
    },
    Var {
        name: "SANDBOX_RATE_PER_MIN",
        default: "30",
        help: "per-caller token bucket refill per minute (0 = no rate limit)",
    },
    Var {
        name: "SANDBOX_RATE_BURST",
        default: "SANDBOX_RATE_PER_MIN",
        help: "per-caller token bucket capacity",
    },
    Var {
        name: "SANDBOX_PAID_SECONDS_PER_DAY",
        default: "no budget",
        help: "e2b and dockercloud: the daemon's paid sandbox seconds per UTC day; a run reserves its timeout plus 33 s and is charged its wall time, and one that would pass it is shed (paid_daemon); per caller: paid_seconds_per_day in the clients file (paid_caller)",
    },
    Var {
        name: "PLIMSOLL_GRANTS_FILE",
        default: "none",
        help: "JSON grant profiles: the routes of an API a run may call through the broker",
    },
    Var {
        name: "SANDBOX_MAX_SESSIONS",
        default: "0 (sessions off)",
        help: "sessions open at once; a provider without sessions refuses to start with it",
    },
    Var {
        name: "SANDBOX_MAX_SESSIONS_PER_CALLER",
        default: "0 (no cap)",
        help: "open sessions per principal, suspended included",
    },
    Var {
        name: "SANDBOX_SESSION_LIFETIME",
        default: "30m",
        help: "a session's lifetime, 1s..12h (a request may only shorten it)",
    },
    Var {
        name: "SANDBOX_SESSION_IDLE",
        default: "5m",
        help: "suspend a session idle this long, 1s..12h; 0 = never",
    },
    Var {
        name: "SANDBOX_SESSION_DISK_MB",
        default: "1024",
        help: "a session's work-directory budget; 0 = no check",
    },
    Var {
        name: "SANDBOX_SESSION_POOL",
        default: "0",
        help: "warm session sandboxes kept ready (docker), at most SANDBOX_MAX_SESSIONS",
    },
    Var {
        name: "PLIMSOLL_INSTANCE",
        default: "plimsoll:<random>",
        help: "instance reference stamped on records, [a-z][a-z0-9-]{0,31}:[A-Za-z0-9._:-]{1,127}",
    },
];
