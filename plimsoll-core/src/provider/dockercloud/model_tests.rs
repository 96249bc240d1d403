use super::*;

const IMAGE: &str =
    "r.example.com/p@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("plimsoll-instance".to_owned(), "plimsoll:ab".to_owned()),
        ("plimsoll-lease".to_owned(), "l1".to_owned()),
    ])
}

fn answer() -> Value {
    json!({
        "name": "sandboxes/abc123", "uid": "abc123", "displayName": "plimsoll-0011-x7",
        "core": {
            "status": "running", "createdAt": "2026-12-04T10:00:00Z", "etag": "\"e1\"",
            "imageRef": IMAGE, "resources": {"cpus": 1, "memoryMib": "2048"},
            "labels": {"plimsoll-instance": "plimsoll:ab", "plimsoll-lease": "l1"},
            "endpoint": {"uri": "https://abc123.sbx.example.com/", "capabilities": ["exec", "upload", "download", "stat"]}
        }
    })
}

#[test]
fn a_sandbox_reads_back_and_its_64_bit_integers_may_be_strings() {
    let s = Sandbox::parse(&answer(), Some("\"h1\"".into())).unwrap();
    assert_eq!((s.uid.as_str(), s.etag.as_str()), ("abc123", "\"h1\""));
    assert_eq!((s.cpus, s.memory_mib), (Some(1), Some(2048)));
    assert_eq!(Sandbox::parse(&answer(), None).unwrap().etag, "\"e1\"");
    assert!(Sandbox::parse(&json!({"uid": "../x"}), None).is_err());
}

#[test]
fn the_read_back_verdict_names_every_difference() {
    let labels = labels();
    let spec = Spec {
        prefix: "plimsoll-0011-",
        image: IMAGE,
        cpus: 1,
        memory_mib: 2048,
        labels: &labels,
        lifetime: Duration::from_secs(90),
    };
    let good = Sandbox::parse(&answer(), None).unwrap();
    assert!(spec.wrong(&good).is_empty(), "{:?}", spec.wrong(&good));
    let mut bad = good.clone();
    bad.status = "starting".into();
    bad.image_ref = "other@sha256:00".into();
    bad.memory_mib = Some(4096);
    bad.labels.insert("plimsoll-lease".into(), "l2".into());
    bad.endpoint = "http://sbx.example.com".into();
    bad.capabilities.retain(|c| c != "download");
    assert_eq!(spec.wrong(&bad).len(), 6, "{:?}", spec.wrong(&bad));
    let mut local = good;
    local.endpoint = "http://127.0.0.1:4000/ep".into();
    assert!(spec.wrong(&local).is_empty());
    let body = spec.body();
    assert!(body.get("networkPolicies").is_none());
    assert_eq!(
        body["features"]["timeouts"],
        json!({"timeout": "90s", "onTimeout": "delete"})
    );
    assert_eq!(
        body["startupExecution"]["rawImage"]["start"]["argv"],
        json!(["sleep", "infinity"])
    );
    assert_eq!(
        body["platform"],
        json!({"os": "linux", "architecture": "amd64"})
    );
}

#[test]
fn only_deny_all_with_nothing_allowed_is_closed() {
    let p = |v: Value| Policy::parse(&v).closed();
    assert_eq!(
        p(json!({"effective": {"mode": "denyAll", "allowNetworks": []}})),
        None
    );
    assert_eq!(p(json!({"effective": {"mode": "denyAll"}})), None);
    assert!(
        p(json!({"effective": {"mode": "allowAll"}}))
            .unwrap()
            .contains("allowAll")
    );
    assert!(
        p(json!({"effective": {"mode": "denyAll", "allowNetworks": [{"network": "example.com:443", "layer": "l4"}]}}))
            .unwrap()
            .contains("example.com:443")
    );
    assert!(p(json!({})).is_some());
}

#[test]
fn timestamps_read_as_rfc_3339() {
    let at = |s: u64| Some(UNIX_EPOCH + Duration::from_secs(s));
    assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), at(0));
    assert_eq!(parse_rfc3339("2026-11-30T00:53:20Z"), at(1_796_000_000));
    assert_eq!(
        parse_rfc3339("2026-11-30T01:53:20.123456+01:00"),
        at(1_796_000_000)
    );
    assert_eq!(parse_rfc3339("2000-02-29T00:00:00Z"), at(951_782_400));
    for bad in [
        "",
        "2026-11-30",
        "2026-13-01T00:00:00Z",
        "2026-11-30T00:00:00",
        "x026-11-30T00:00:00Z",
    ] {
        assert_eq!(parse_rfc3339(bad), None, "{bad}");
    }
}
