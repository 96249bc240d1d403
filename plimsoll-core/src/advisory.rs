//! Known sandbox escapes in the parts of a wall, named and acted on.
//!
//! The list is data, not code: `data/advisories.json` (embedded at build
//! time, versioned by its `version` and `updated` fields). Each entry names
//! the part it affects (`runc`), the first fixed release of each release line,
//! the distribution builds that carry the fix as a patch, and whether it
//! reaches a guest the way plimsoll runs the part ([`Exposure`]: a fresh
//! container from a local trusted image, a session container the guest has
//! written, `docker exec` into it) with the reason.
//!
//! [`assess`] matches a [`Wall`]'s parts against the list; the engine refuses
//! to start when a match is exposed and the operator has not named it in
//! `SANDBOX_ACCEPT_ADVISORIES` ([`refusal`]); Describe, the records' `policy`
//! and `plimsolld --check` say which matched and which were accepted.

use std::sync::OnceLock;

use semver::Version;

use crate::env::ConfigError;
use crate::wall::{Finding, Wall};

/// The variable that accepts advisories by ID.
pub const ACCEPT_VAR: &str = "SANDBOX_ACCEPT_ADVISORIES";

/// Where an escape reaches a guest as plimsoll runs the part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Exposure {
    /// A fresh container from a local trusted image.
    pub fresh: bool,
    /// A session container whose filesystem the guest has written.
    pub session: bool,
    /// `docker exec` into such a container (project steps, session cells).
    pub exec: bool,
}

impl Exposure {
    /// Whether any of the three ways is exposed.
    pub fn any(self) -> bool {
        self.fresh || self.session || self.exec
    }

    /// The exposed ways, by name (`session`, `exec`).
    pub fn ways(self) -> Vec<&'static str> {
        [
            ("fresh", self.fresh),
            ("session", self.session),
            ("exec", self.exec),
        ]
        .into_iter()
        .filter_map(|(n, on)| on.then_some(n))
        .collect()
    }
}

/// One entry of the data file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Advisory {
    /// `CVE-…`: what `SANDBOX_ACCEPT_ADVISORIES` names.
    pub id: String,
    /// The vendor's advisory (`GHSA-…`), or the address of the vendor's
    /// record or fix where it published none.
    pub advisory: String,
    /// The part it affects, as the part names itself (`runc`, `runsc`).
    pub part: String,
    /// What it allows, in one sentence.
    pub summary: String,
    /// The first fixed release of each release line; empty when none is
    /// confirmed, and then every release is affected.
    pub fixed: Vec<String>,
    /// Distribution builds (as the part reports its build) that carry the fix.
    pub patched_builds: Vec<String>,
    /// Whether it reaches a guest the way plimsoll runs the part.
    pub exposed: Exposure,
    /// Why, in plimsoll's use.
    pub why: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[allow(dead_code)]
    about: String,
    version: u32,
    updated: String,
    advisories: Vec<Advisory>,
}

const DATA: &str = include_str!("../data/advisories.json");

fn file() -> &'static File {
    static FILE: OnceLock<File> = OnceLock::new();
    FILE.get_or_init(|| {
        serde_json::from_str(DATA).expect("data/advisories.json parses (checked by its unit test)")
    })
}

/// Every known advisory.
pub fn all() -> &'static [Advisory] {
    &file().advisories
}

/// `v<version> (<updated>)` of the data file, for the doctor and Describe.
pub fn data_version() -> String {
    format!("v{} ({})", file().version, file().updated)
}

/// A runtime's own report, split: `runc version 1.1.5+ds1` and
/// `commit: 1.1.5+ds1-1+deb12u1` give the product `runc`, the release
/// `1.1.5+ds1` and the build `1.1.5+ds1-1+deb12u1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The product, as the first word of its version line.
    pub product: String,
    /// The release it reports.
    pub release: String,
    /// The build (`commit:` line), or empty.
    pub build: String,
}

/// Reads `<product> version <release>` and an optional `commit: <build>`
/// from a version text (lines, or lines joined by `; `).
pub fn reported(text: &str) -> Option<Reported> {
    let mut lines = text.split(['\n', ';']).map(str::trim);
    let first = lines.next()?;
    let mut words = first.split_whitespace();
    let product = words.next()?.to_owned();
    if words.next()? != "version" {
        return None;
    }
    let release = words.next()?.to_owned();
    let build = lines
        .find_map(|l| l.strip_prefix("commit:"))
        .map(|b| b.trim().to_owned())
        .unwrap_or_default();
    Some(Reported {
        product,
        release,
        build,
    })
}

/// `1.1.5+ds1` → 1.1.5; `1.0.0-rc6` → 1.0.0-rc6; `v1.2.3` → 1.2.3. gVisor
/// names a release by its date: `release-20221219.0` (upstream) and
/// `0.0~20221219.0` (Debian) → 20221219.0.0, so releases order by date and
/// each date is a line of its own.
fn release(text: &str) -> Option<Version> {
    let t = text.trim();
    let dated = t
        .strip_prefix("release-")
        .or_else(|| t.strip_prefix("0.0~"))
        .or_else(|| (t.len() >= 10 && t.as_bytes()[8] == b'.').then_some(t));
    if let Some((date, n)) = dated.and_then(|d| d.split_once('.'))
        && date.len() == 8
        && date.bytes().all(|b| b.is_ascii_digit())
    {
        let n: String = n.chars().take_while(char::is_ascii_digit).collect();
        return Some(Version::new(date.parse().ok()?, n.parse().ok()?, 0));
    }
    Version::parse(t.trim_start_matches('v')).ok().map(|mut v| {
        v.build = semver::BuildMetadata::EMPTY;
        v
    })
}

/// Whether `release` is affected, given each line's first fixed release: it
/// is fixed when a fix on its own line (same major and minor) is at or below
/// it, or when it is at or above the newest fix of all. An unparsable release
/// is affected (the doctor says so rather than guess), and so is every
/// release when no fixed one is known.
pub fn affected(release_text: &str, fixed: &[String]) -> bool {
    let Some(v) = release(release_text) else {
        return true;
    };
    let fixes: Vec<Version> = fixed.iter().filter_map(|f| release(f)).collect();
    if fixes
        .iter()
        .any(|f| (f.major, f.minor) == (v.major, v.minor) && v >= *f)
    {
        return false;
    }
    fixes.iter().max().is_none_or(|newest| v < *newest)
}

/// Matches every part of `wall` against the list: a part whose version text
/// reports the advisory's product, at an affected release, from a build not
/// listed as patched. `accepted` marks those the operator named.
pub fn assess(mut wall: Wall, accepted: &[String]) -> Wall {
    let mut found = Vec::new();
    for part in &wall.parts {
        let Some(r) = reported(&part.version) else {
            continue;
        };
        for a in all().iter().filter(|a| a.part == r.product) {
            if !affected(&r.release, &a.fixed) || a.patched_builds.contains(&r.build) {
                continue;
            }
            found.push(Finding {
                id: a.id.clone(),
                advisory: a.advisory.clone(),
                part: part.name.clone(),
                version: if r.build.is_empty() {
                    r.release.clone()
                } else {
                    format!("{} (build {})", r.release, r.build)
                },
                fixed: a.fixed.clone(),
                exposed: a.exposed.any(),
                ways: a.exposed.ways().into_iter().map(str::to_owned).collect(),
                accepted: accepted.contains(&a.id),
                summary: a.summary.clone(),
                why: a.why.clone(),
            });
        }
    }
    wall.advisories = found;
    wall
}

/// Why the wall may not be painted: the exposed matches the operator has not
/// accepted, each named with its advisory; `None` when there are none.
pub fn refusal(wall: &Wall) -> Option<String> {
    let open: Vec<&Finding> = wall
        .advisories
        .iter()
        .filter(|f| f.exposed && !f.accepted)
        .collect();
    if open.is_empty() {
        return None;
    }
    let lines: Vec<String> = open.iter().map(|f| f.line()).collect();
    let ids: Vec<&str> = open.iter().map(|f| f.id.as_str()).collect();
    Some(format!(
        "the wall has a known escape that applies to the way plimsoll uses it: {}. Upgrade the part, or name {} in {ACCEPT_VAR} to serve anyway (Describe and every record then say so)",
        lines.join(" | "),
        ids.join(",")
    ))
}

/// Reads `SANDBOX_ACCEPT_ADVISORIES` (comma-separated IDs): each must be a
/// known advisory, so a typo is refused rather than silently accepting nothing.
pub fn parse_accepted(value: Option<String>) -> Result<Vec<String>, ConfigError> {
    let Some(v) = value else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for id in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !all().iter().any(|a| a.id == id) {
            return Err(ConfigError::new(
                ACCEPT_VAR,
                format!(
                    "{id:?} is not a known advisory (known: {})",
                    all()
                        .iter()
                        .map(|a| a.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        out.push(id.to_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_is_well_formed() {
        assert!(!all().is_empty());
        let mut ids = std::collections::BTreeSet::new();
        for a in all() {
            assert!(ids.insert(a.id.clone()), "{} twice", a.id);
            assert!(a.id.starts_with("CVE-"), "{}", a.id);
            assert!(
                a.advisory.starts_with("GHSA-") || a.advisory.starts_with("https://"),
                "{}",
                a.id
            );
            assert!(["runc", "runsc"].contains(&a.part.as_str()), "{}", a.id);
            for f in &a.fixed {
                assert!(release(f).is_some(), "{}: {f}", a.id);
            }
            assert!(a.why.len() > 40 && a.summary.len() > 40, "{}", a.id);
        }
        assert!(data_version().starts_with("v2 ("));
    }

    #[test]
    fn releases_are_judged_per_line() {
        let nov25: Vec<String> = ["1.2.8", "1.3.3", "1.4.0-rc.3"].map(String::from).to_vec();
        for (v, hit) in [
            ("1.1.5+ds1", true),
            ("1.1.15", true),
            ("1.2.7", true),
            ("1.2.8", false),
            ("1.3.0", true),
            ("1.3.3", false),
            ("1.4.0-rc.2", true),
            ("1.4.0-rc.3", false),
            ("1.4.0", false),
            ("1.5.3", false),
            ("2.0.0", false),
            ("garbage", true),
        ] {
            assert_eq!(affected(v, &nov25), hit, "{v}");
        }
        let one = vec!["1.1.12".to_owned()];
        assert!(affected("1.1.11", &one));
        assert!(!affected("1.1.12", &one));
        assert!(!affected("1.2.0", &one));
        assert!(affected("1.0.0-rc95", &one));
        // gVisor's dated releases, as upstream and Debian report them.
        let dated = vec!["20250319.0".to_owned()];
        assert!(affected("0.0~20221219.0", &dated));
        assert!(affected("release-20250312.0", &dated));
        assert!(!affected("release-20250319.0", &dated));
        assert!(!affected("release-20261116.1", &dated));
        assert!(!affected("0.0~20260907.0", &dated));
        // No fixed release known: every release is affected.
        assert!(affected("release-20261116.0", &[]));
    }

    #[test]
    fn a_runtime_report_is_split_into_release_and_build() {
        let r = reported(
            "runc version 1.1.5+ds1; commit: 1.1.5+ds1-1+deb12u1; spec: 1.0.2-dev; go: go1.19.8",
        )
        .unwrap();
        assert_eq!(r.product, "runc");
        assert_eq!(r.release, "1.1.5+ds1");
        assert_eq!(r.build, "1.1.5+ds1-1+deb12u1");
        let r = reported("runsc version 0.0~20221219.0\nspec: 1.0.2-dev").unwrap();
        assert_eq!((r.product.as_str(), r.build.as_str()), ("runsc", ""));
        assert!(reported("6.1.0-18-amd64").is_none());
    }

    fn runc(text: &str) -> Wall {
        Wall::default()
            .part("host kernel", "6.1.0")
            .part("oci runtime runc (runc)", text)
    }

    #[test]
    fn debians_bookworm_runc_matches_the_2025_escapes_none_of_which_is_exposed() {
        let w = assess(
            runc("runc version 1.1.5+ds1; commit: 1.1.5+ds1-1+deb12u1"),
            &[],
        );
        let ids: Vec<&str> = w.advisories.iter().map(|f| f.id.as_str()).collect();
        // The bookworm build carries the CVE-2024-21626 fix, not the later ones.
        assert_eq!(
            ids,
            [
                "CVE-2024-45310",
                "CVE-2025-31133",
                "CVE-2025-52565",
                "CVE-2025-52881",
                "CVE-2026-41579"
            ]
        );
        assert!(w.advisories.iter().all(|f| !f.exposed && f.ways.is_empty()));
        assert_eq!(refusal(&w), None);
        assert_eq!(w.policy_suffix(), format!(";wall={}", w.identity()));
    }

    #[test]
    fn an_exposed_escape_is_refused_until_accepted_by_name() {
        let w = assess(
            runc("runc version 1.1.11\ncommit: v1.1.11-0-g4bccb38c"),
            &[],
        );
        let leaky = w
            .advisories
            .iter()
            .find(|f| f.id == "CVE-2024-21626")
            .unwrap();
        assert!(leaky.exposed);
        assert_eq!(leaky.ways, ["session", "exec"]);
        let why = refusal(&w).unwrap();
        assert!(
            why.contains("CVE-2024-21626 (GHSA-xr7r-f8xq-vfvv)"),
            "{why}"
        );
        assert!(why.contains("SANDBOX_ACCEPT_ADVISORIES"), "{why}");
        let accepted = assess(
            runc("runc version 1.1.11\ncommit: v1.1.11-0-g4bccb38c"),
            &["CVE-2024-21626".to_owned()],
        );
        assert_eq!(refusal(&accepted), None);
        assert!(
            accepted
                .policy_suffix()
                .ends_with(";accepted=CVE-2024-21626"),
            "{}",
            accepted.policy_suffix()
        );
        // A fixed release matches nothing.
        let fixed = assess(runc("runc version 1.3.6\ncommit: v1.3.6-0-g1"), &[]);
        assert!(fixed.advisories.is_empty(), "{:?}", fixed.advisories);
    }

    fn runsc(text: &str) -> Wall {
        Wall::default()
            .part("host kernel", "6.1.0")
            .part("oci runtime runsc (/usr/bin/runsc)", text)
    }

    #[test]
    fn debians_bookworm_runsc_matches_two_gvisor_advisories_neither_exposed() {
        let w = assess(runsc("runsc version 0.0~20221219.0; spec: 1.0.2-dev"), &[]);
        let ids: Vec<&str> = w.advisories.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["CVE-2025-2713", "CVE-2026-96812"]);
        assert!(w.advisories.iter().all(|f| !f.exposed));
        assert_eq!(refusal(&w), None);
        // A build from before the Sentry filter's fix is refused.
        let old = assess(runsc("runsc version release-20180801.0"), &[]);
        let why = refusal(&old).unwrap();
        assert!(why.contains("CVE-2018-16359"), "{why}");
        assert!(why.contains("exposed (fresh, session, exec)"), "{why}");
        // runc's advisories never match runsc, nor runsc's runc.
        assert!(old.advisories.iter().all(|f| f.id != "CVE-2024-21626"));
        let r = assess(
            runc("runc version 1.1.5+ds1; commit: 1.1.5+ds1-1+deb12u1"),
            &[],
        );
        assert!(r.advisories.iter().all(|f| !f.id.starts_with("CVE-2018")));
    }

    #[test]
    fn accepted_ids_must_be_known() {
        assert_eq!(parse_accepted(None).unwrap(), Vec::<String>::new());
        assert_eq!(
            parse_accepted(Some(" CVE-2024-21626 , ".into())).unwrap(),
            ["CVE-2024-21626"]
        );
        let e = parse_accepted(Some("CVE-2024-2162".into())).unwrap_err();
        assert_eq!(e.variable, ACCEPT_VAR);
    }
}
