use super::*;
use crate::digest::request_digest;
use crate::record::{record_digest, session_fingerprint};
use crate::request::{JavaScriptRun, Payload};
use crate::wire::RunRequest;

#[test]
fn not_dispatched_values() {
    let want = ["CAE=", "CAI=", "CAM=", "CAQ=", "CAU=", "CAY=", "CAc="];
    for (i, w) in want.iter().enumerate() {
        let r = Refusal::from_number(i as u32 + 1).unwrap();
        assert_eq!(json::base64_encode(&not_dispatched_bytes(r)), *w);
    }
    let s = SessionEnded {
        reason: SessionEnd::Closed,
        detail: "closed".into(),
    };
    assert_eq!(
        json::base64_encode(&session_ended_bytes(&s)),
        "CAESBmNsb3NlZA=="
    );
}

#[test]
fn unanswered_call_worked_detail() {
    let req: RunRequest = json::decode(
        br#"{"protocol":4,"javascript":{"code":"console.log(1)"},"sessionId":"00112233445566778899aabbccddeeff"}"#,
    )
    .unwrap();
    let r = req.into_request().unwrap();
    assert!(matches!(
        r.payload,
        Payload::JavaScript(JavaScriptRun { .. })
    ));
    let mut rec = RunRecord {
        version: 4,
        request_sha256: request_digest(&r.envelope, Some(&r.payload)),
        unanswered: "unknown".into(),
        provider: "docker".into(),
        isolation: "container".into(),
        started_unix_ms: 1790000003000,
        ended_unix_ms: 1790000003500,
        session: session_fingerprint("00112233445566778899aabbccddeeff"),
        sequence: 1,
        ..RunRecord::default()
    };
    rec.record_sha256 = record_digest(&rec).unwrap();
    assert_eq!(
        rec.record_sha256,
        "a4b7ac144c8639b80c2c72346b3d397e9226ca510c6a14982d5d0f87d93b2b88"
    );
    assert_eq!(
        json::base64_encode(&unanswered_bytes(&rec)),
        "CvUBCAQSQDc3MDI1MzQ5ZmY3MzQwZjQ3NDZhMDE4OGI2YTY3NGRlMjRhNmM4ZGFkOTBjZmEyZmQ4ZjYyYjhjMDYzOGFlNjEiBmRvY2tlcioJY29udGFpbmVyQLjvwaKMNEis88GijDRSQDU5NDdkN2MzM2Q3ODNmOTRiM2I0YzFhOTZlYmM4OTkxZWQyOGYxYjA2OWI3MWUwMzM3NmNiYThjYWE5OGE3MjBYAWpAYTRiN2FjMTQ0Yzg2MzliODBjMmM3MjM0NmIzZDM5N2U5MjI2Y2E1MTBjNmExNDk4MmQ1ZDBmODdkOTNiMmI4OIIBB3Vua25vd24="
    );
}

#[test]
fn every_error_code_maps() {
    for c in ErrorCode::ALL {
        let e = Error::new(c, "m");
        let ce = ConnectError::from(&e);
        assert_eq!(ce.refusal, c.refusal());
        let body: serde_json::Value = serde_json::from_slice(&ce.to_json()).unwrap();
        assert_eq!(body["code"], ce.code.as_str());
    }
    assert_eq!(ConnectCode::parse("data_loss"), Some(ConnectCode::DataLoss));
    assert_eq!(ConnectCode::Canceled.http_status(), 499);
}
