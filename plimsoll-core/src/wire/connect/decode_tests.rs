use super::*;

#[test]
fn every_daemon_error_round_trips_through_its_answer() {
    for c in ErrorCode::ALL {
        if matches!(
            c,
            ErrorCode::RecordMismatch | ErrorCode::IsolationEvidenceMismatch | ErrorCode::Transport
        ) {
            continue; // client-side codes: a daemon never sends them
        }
        let mut e = Error::new(c, "m");
        if c == ErrorCode::SessionEnded {
            e = Error::session_ended(SessionEnd::Expired, "lifetime");
        }
        let ce = ConnectError::from(&e);
        let back = ConnectError::from_answer(ce.code.http_status(), &ce.to_json(), true, None)
            .into_error();
        assert_eq!(
            (back.code(), back.not_dispatched()),
            (c, e.not_dispatched()),
            "{c}"
        );
        assert_eq!(
            back.session_end().map(|s| s.reason),
            e.session_end().map(|s| s.reason)
        );
    }
    let unbound = ConnectError::from(&Error::invalid("x"));
    let back = ConnectError::from_answer(400, &unbound.to_json(), false, None).into_error();
    assert_eq!(
        back.not_dispatched(),
        None,
        "an unbound answer's mark is not believed"
    );
    let bare = ConnectError::from_answer(401, b"", true, Some("permission")).into_error();
    assert_eq!(
        (bare.code(), bare.not_dispatched()),
        (ErrorCode::Unauthenticated, Some(Refusal::Permission))
    );
}

#[test]
fn unanswered_records_decode() {
    let rec = RunRecord {
        version: 4,
        provider: "docker".into(),
        started_unix_ms: 5,
        sequence: 2,
        instance: "x:y".into(),
        unanswered: "internal".into(),
        ..RunRecord::default()
    };
    let ce = ConnectError {
        unanswered: Some(rec.clone()),
        ..ConnectError::new(ConnectCode::Internal, "boom")
    };
    let back = ConnectError::from_answer(500, &ce.to_json(), true, None).into_error();
    assert_eq!(back.unanswered(), Some(&rec));
    assert_eq!(back.not_dispatched(), None);
    assert_eq!(
        decode_record(&[0x08]),
        None,
        "a truncated record is ignored"
    );
}
