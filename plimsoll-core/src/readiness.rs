//! The doctor's report types: a check's outcome ([`Check`], [`Level`]) and
//! the whole report ([`Report`]). A leaf, so that each provider's own doctor
//! checks ([`crate::provider::Plugin`]) and the doctor that runs them
//! ([`crate::doctor`]) share them without depending on each other.

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// As it should be.
    Ok,
    /// Works, but weaker or older than recommended.
    Warn,
    /// The area cannot serve as configured.
    Fail,
}

impl Level {
    /// `ok`, `warn` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One check's outcome. `area` is `host`, `wasm` or `docker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What it is about: `host`, `wasm` or `docker`.
    pub area: &'static str,
    /// A short name (`cgroup controllers`, `runtime runsc`, …).
    pub name: String,
    /// How it ended.
    pub level: Level,
    /// Why, in one line.
    pub detail: String,
    /// The wall this check names, part by part (`wall …` checks), for
    /// `--json` readers.
    pub wall: Option<crate::wall::Wall>,
}

impl Check {
    /// A check result.
    pub fn new(
        area: &'static str,
        name: impl Into<String>,
        level: Level,
        detail: impl Into<String>,
    ) -> Check {
        Check {
            area,
            name: name.into(),
            level,
            detail: detail.into(),
            wall: None,
        }
    }

    /// The same check, carrying `wall` (listed with its identity in `--json`).
    pub fn with_wall(mut self, wall: crate::wall::Wall) -> Check {
        self.wall = Some(wall);
        self
    }
}

/// Every check, and which provider is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `SANDBOX_PROVIDER`.
    pub provider: &'static str,
    /// The areas whose checks decide whether that provider would serve
    /// (empty: it runs nothing, so it is always ready).
    pub areas: &'static [&'static str],
    /// The checks, in order.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether the configured provider would serve: at least one check in its
    /// areas and no `fail` among them (for docker, the host's kernel checks
    /// count too). A provider with no areas (`disabled`) is always ready.
    pub fn ready(&self) -> bool {
        if self.areas.is_empty() {
            return true;
        }
        let relevant: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| self.areas.contains(&c.area))
            .collect();
        !relevant.is_empty() && relevant.iter().all(|c| c.level != Level::Fail)
    }

    /// One line per check (`ok   area  name: detail`), then the verdict.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            out.push_str(&format!(
                "{:<4}  {:<6}  {}: {}\n",
                c.level.as_str(),
                c.area,
                c.name,
                c.detail
            ));
        }
        out.push_str(&format!(
            "{}: SANDBOX_PROVIDER={} {}\n",
            if self.ready() { "ready" } else { "not ready" },
            self.provider,
            if self.ready() {
                "would serve"
            } else {
                "would not serve (see the fail lines)"
            }
        ));
        out
    }

    /// `{"provider","ready","checks":[{"area","check","level","detail"}]}`;
    /// a check naming a wall also has `"wall": {"identity","parts":[{"name",
    /// "version"}],"advisories":[…]}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "provider": self.provider,
            "ready": self.ready(),
            "checks": self.checks.iter().map(|c| {
                let mut v = serde_json::json!({
                    "area": c.area,
                    "check": c.name,
                    "level": c.level.as_str(),
                    "detail": c.detail,
                });
                if let Some(w) = &c.wall {
                    let mut wall = serde_json::to_value(w).unwrap_or_default();
                    wall["identity"] = w.identity().into();
                    v["wall"] = wall;
                }
                v
            }).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_the_configured_provider() {
        let mut r = Report {
            provider: "wasm",
            areas: &["wasm"],
            checks: vec![
                Check::new("wasm", "startup proof", Level::Ok, ""),
                Check::new("docker", "daemon", Level::Fail, "down"),
            ],
        };
        assert!(r.ready());
        r.areas = &["docker", "host"];
        assert!(!r.ready());
        r.areas = &[];
        assert!(r.ready(), "a provider that runs nothing is ready");
        r.areas = &["e2b"];
        assert!(!r.ready(), "no check in its area: not ready");
        let j = r.to_json();
        assert_eq!(j["checks"][1]["level"], "fail");
        assert_eq!(j["ready"], false);
    }
}
