use super::*;
use crate::error::ErrorCode;

fn js(code: &str) -> Payload {
    Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        grant_profile: String::new(),
    })
}

fn project(paths: &[&str], steps: usize) -> Payload {
    Payload::Project(ProjectRun {
        files: paths
            .iter()
            .map(|p| ProjectFile {
                path: (*p).into(),
                content: "x".into(),
            })
            .collect(),
        steps: vec!["true".into(); steps],
        ..ProjectRun::default()
    })
}

#[test]
fn code_limits() {
    assert!(js("1").validate().is_ok());
    assert!(js("").validate().is_err());
    assert!(js("a\0b").validate().is_err());
    assert!(js(&"a".repeat(MAX_CODE_BYTES)).validate().is_ok());
    let e = js(&"a".repeat(MAX_CODE_BYTES + 1)).validate().unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRequest);
}

#[test]
fn paths() {
    for good in ["a", "a/b.js", ".plimsoll/code.py", "a..b", "é"] {
        assert!(validate_path("file", good).is_ok(), "{good}");
    }
    for bad in [
        "", "/a", "a//b", "a/", "./a", "a/../b", "..", "a\\b", "a\nb", "a\u{7f}", "a\u{85}",
    ] {
        assert!(validate_path("file", bad).is_err(), "{bad:?}");
    }
    assert!(validate_path("file", &"a".repeat(1025)).is_err());
    assert!(project(&["a", "a"], 1).validate().is_err());
    assert!(project(&["a"], 0).validate().is_err());
    assert!(project(&["a"], 21).validate().is_err());
    assert!(project(&["a"], 20).validate().is_ok());
}

#[test]
fn envelope_and_rules() {
    let mut e = Envelope {
        minimum_isolation: "none".into(),
        ..Envelope::new()
    };
    assert!(e.validate().is_err());
    let mut e = Envelope {
        trace_id: "bad id!".into(),
        ..Envelope::new()
    };
    e.validate().unwrap();
    assert_eq!(e.trace_id, "");
    assert_eq!(
        check_protocol(0).unwrap_err().code(),
        ErrorCode::ProtocolMissing
    );
    assert_eq!(
        check_protocol(5).unwrap_err().code(),
        ErrorCode::ProtocolMismatch
    );
    let rule = |mode: &str, ids: &[&str]| SoftwareRule {
        mode: mode.into(),
        identities: ids.iter().map(|s| s.to_string()).collect(),
    };
    assert!(rule("exact", &["a"]).validate().is_ok());
    assert!(rule("exact", &["a", "b"]).validate().is_err());
    assert!(rule("approved", &["a", "a"]).validate().is_err());
    assert!(rule("approved", &["a b"]).validate().is_err());
    assert!(rule("other", &["a"]).validate().is_err());
    assert!(!rule("exact", &["a"]).allows(""));
}

#[test]
fn modules() {
    let m = |rows: Vec<Vec<f64>>, end: f64, step: f64| {
        Payload::Module(ModuleRun {
            model: "VanDerPol".into(),
            rows: rows
                .into_iter()
                .map(|values| ModuleRow { values })
                .collect(),
            end_time: end,
            step,
        })
    };
    assert!(
        m(vec![vec![1.0, 2.0], vec![0.5, -3.0]], 1.0, 0.1)
            .validate()
            .is_ok()
    );
    assert!(
        m(vec![vec![1.0], vec![1.0, 2.0]], 1.0, 0.1)
            .validate()
            .is_err()
    );
    assert!(m(vec![vec![f64::NAN]], 1.0, 0.1).validate().is_err());
    assert!(m(vec![vec![1.0]], 1.0, 0.0).validate().is_err());
    assert!(m(vec![vec![1.0]; 1000], 1000.0, 0.001).validate().is_err());
}
