//! Session settings (`SANDBOX_MAX_SESSIONS` and friends), parsed strictly.

use std::time::Duration;

use crate::env::{ConfigError, Env};

/// How sessions are configured. Off unless `max_sessions > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSettings {
    /// `SANDBOX_MAX_SESSIONS`: sessions open at once (0 = sessions off).
    pub max_sessions: u32,
    /// `SANDBOX_MAX_SESSIONS_PER_CALLER`: per principal, suspended included (0 = no cap).
    pub max_per_caller: u32,
    /// `SANDBOX_SESSION_LIFETIME`: 1 s to 12 h (default 30 m).
    pub lifetime: Duration,
    /// `SANDBOX_SESSION_IDLE`: suspend after this long idle (default 5 m; zero = never).
    pub idle: Duration,
    /// `SANDBOX_SESSION_DISK_MB`: the work directory's budget (default 1024; 0 = no check).
    pub disk_mb: u32,
    /// `SANDBOX_SESSION_POOL`: warm sandboxes kept ready (docker).
    pub pool: u32,
}

impl Default for SessionSettings {
    fn default() -> SessionSettings {
        SessionSettings {
            max_sessions: 0,
            max_per_caller: 0,
            lifetime: Duration::from_secs(30 * 60),
            idle: Duration::from_secs(5 * 60),
            disk_mb: 1024,
            pool: 0,
        }
    }
}

/// Parses a duration like `90s`, `30m`, `1h30m`, `250ms` (a bare `0` is zero).
pub fn parse_duration(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let d = match &rest[..unit] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n * 60),
            "h" => Duration::from_secs(n * 3600),
            _ => return None,
        };
        rest = &rest[unit..];
        total += d;
    }
    Some(total)
}

const TWELVE_HOURS: Duration = Duration::from_secs(12 * 3600);

fn duration(
    env: &Env<'_>,
    name: &'static str,
    default: Duration,
    zero_ok: bool,
) -> Result<Duration, ConfigError> {
    let Some(v) = env.get(name) else {
        return Ok(default);
    };
    let d = parse_duration(&v).ok_or_else(|| {
        ConfigError::new(name, format!("{v:?} is not a duration like 90s, 30m or 1h"))
    })?;
    if d.is_zero() && zero_ok {
        return Ok(d);
    }
    if d < Duration::from_secs(1) || d > TWELVE_HOURS {
        return Err(ConfigError::new(name, "must be from 1s to 12h"));
    }
    Ok(d)
}

impl SessionSettings {
    /// Reads the session variables. Settings other than the switch are refused
    /// while sessions are off, so a typo cannot leave them silently unused.
    pub fn from_env(env: &Env<'_>) -> Result<SessionSettings, ConfigError> {
        let d = SessionSettings::default();
        let s = SessionSettings {
            max_sessions: env.u32("SANDBOX_MAX_SESSIONS")?.unwrap_or(0),
            max_per_caller: env.u32("SANDBOX_MAX_SESSIONS_PER_CALLER")?.unwrap_or(0),
            lifetime: duration(env, "SANDBOX_SESSION_LIFETIME", d.lifetime, false)?,
            idle: duration(env, "SANDBOX_SESSION_IDLE", d.idle, true)?,
            disk_mb: env.u32("SANDBOX_SESSION_DISK_MB")?.unwrap_or(d.disk_mb),
            pool: env.u32("SANDBOX_SESSION_POOL")?.unwrap_or(0),
        };
        if s.disk_mb > 1_048_576 {
            return Err(ConfigError::new(
                "SANDBOX_SESSION_DISK_MB",
                "must be at most 1048576",
            ));
        }
        if s.max_sessions == 0 {
            for name in [
                "SANDBOX_MAX_SESSIONS_PER_CALLER",
                "SANDBOX_SESSION_LIFETIME",
                "SANDBOX_SESSION_IDLE",
                "SANDBOX_SESSION_DISK_MB",
                "SANDBOX_SESSION_POOL",
            ] {
                if env.get(name).is_some() {
                    return Err(ConfigError::new(
                        name,
                        "is set but sessions are off (SANDBOX_MAX_SESSIONS is 0 or unset)",
                    ));
                }
            }
        }
        if s.pool > s.max_sessions {
            return Err(ConfigError::new(
                "SANDBOX_SESSION_POOL",
                "must not exceed SANDBOX_MAX_SESSIONS",
            ));
        }
        if s.max_per_caller > s.max_sessions {
            return Err(ConfigError::new(
                "SANDBOX_MAX_SESSIONS_PER_CALLER",
                "must not exceed SANDBOX_MAX_SESSIONS",
            ));
        }
        Ok(s)
    }

    /// Whether sessions are on.
    pub fn enabled(&self) -> bool {
        self.max_sessions > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        for bad in ["", "10", "5x", "m", "1.5h", "-1s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn strict_settings() {
        let load = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let get = move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            SessionSettings::from_env(&Env::new(&get))
        };
        assert!(!load(&[]).unwrap().enabled());
        assert_eq!(
            load(&[("SANDBOX_SESSION_IDLE", "1m")])
                .unwrap_err()
                .variable,
            "SANDBOX_SESSION_IDLE"
        );
        let s = load(&[
            ("SANDBOX_MAX_SESSIONS", "4"),
            ("SANDBOX_SESSION_IDLE", "0"),
            ("SANDBOX_SESSION_LIFETIME", "10m"),
        ])
        .unwrap();
        assert_eq!(
            (s.idle, s.lifetime),
            (Duration::ZERO, Duration::from_secs(600))
        );
        assert_eq!(
            load(&[
                ("SANDBOX_MAX_SESSIONS", "4"),
                ("SANDBOX_SESSION_LIFETIME", "13h")
            ])
            .unwrap_err()
            .variable,
            "SANDBOX_SESSION_LIFETIME"
        );
        assert_eq!(
            load(&[("SANDBOX_MAX_SESSIONS", "4"), ("SANDBOX_SESSION_POOL", "5")])
                .unwrap_err()
                .variable,
            "SANDBOX_SESSION_POOL"
        );
        assert_eq!(
            load(&[("SANDBOX_MAX_SESSIONS", "x")]).unwrap_err().variable,
            "SANDBOX_MAX_SESSIONS"
        );
    }
}
