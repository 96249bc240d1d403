//! Every committed seed of every target, replayed through the targets' logic on
//! stable: the seeds are regression tests. A target panics on a broken
//! property, so a failing seed fails here with its file name.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on an unreadable seed"
)]

use std::path::Path;

/// A target's logic.
type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 8] = [
    ("wire_json", plimsoll_fuzz::wire_json),
    ("request", plimsoll_fuzz::request),
    ("project_path", plimsoll_fuzz::project_path),
    ("route", plimsoll_fuzz::route),
    ("record_verify", plimsoll_fuzz::record_verify),
    ("record_mutate", plimsoll_fuzz::record_mutate),
    ("connect_stream", plimsoll_fuzz::connect_stream),
    ("dockercloud_exec", plimsoll_fuzz::dockercloud_exec),
];

fn replay(name: &str, target: Target) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("seeds")
        .join(name);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let run = std::panic::catch_unwind(|| target(&data));
        assert!(run.is_ok(), "seed {} fails its target", path.display());
        n += 1;
    }
    n
}

#[test]
fn every_seed_of_every_target_passes() {
    for (name, target) in TARGETS {
        let n = replay(name, target);
        assert!(n >= 3, "{name}: only {n} seeds");
    }
    // Each golden call record_mutate picks from has its unedited seed, which
    // the target requires to verify.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/record_mutate");
    for i in 0..plimsoll_fuzz::golden_calls() {
        assert!(
            dir.join(format!("00-golden-{i}")).exists(),
            "no seed for golden {i}"
        );
    }
}

/// The oracles can fail: inputs that break each property must panic.
#[test]
fn the_oracles_catch_what_they_claim_to() {
    for bad in [
        "../x",
        "/etc/passwd",
        "a//b",
        "a/./b",
        "a\\b",
        "a\0b",
        "a\u{85}",
        "",
    ] {
        let caught = std::panic::catch_unwind(|| plimsoll_fuzz::assert_clean_path(bad));
        assert!(caught.is_err(), "{bad:?} passes the path oracle");
    }
    plimsoll_fuzz::assert_clean_path("src/main.rs");
    for bad in [
        "/a/%2e%2e",
        "/a/../b",
        "/a//b",
        "/a?b",
        "a",
        "/a/./b",
        "/a\\b",
    ] {
        let caught = std::panic::catch_unwind(|| plimsoll_fuzz::assert_canonical(bad));
        assert!(
            caught.is_err(),
            "{bad:?} passes the canonical-target oracle"
        );
    }
    plimsoll_fuzz::assert_canonical("/v1/items/a:b");
    // A golden call binds; the same record over a changed result does not.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/record_verify");
    let golden = std::fs::read(dir.join("single-consistent.json")).unwrap();
    plimsoll_fuzz::assert_bound_doc(&golden);
    let changed = std::fs::read(dir.join("single-stdout-changed.json")).unwrap();
    let caught = std::panic::catch_unwind(|| plimsoll_fuzz::assert_bound_doc(&changed));
    assert!(caught.is_err(), "a changed stdout passes the record oracle");
}
