//! The logic of plimsoll's fuzz targets, one `pub fn(&[u8])` per target.
//!
//! Each `fuzz_targets/<name>.rs` only calls the function of the same name, so
//! the same oracles run under libFuzzer (`cargo fuzz run <name>`) and, on
//! stable, in `tests/seeds.rs`, which replays every committed seed. A target
//! fails by panicking; returning means the input was either refused cleanly or
//! accepted and held every property checked.
//!
//! What this does not cover: providers, the engine, the daemon's HTTP layer and
//! the broker's upstream calls (only its route approval); see docs/fuzzing.md.

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::LazyLock;

use plimsoll_core::digest::{request_digest, result_digest, rule_id};
use plimsoll_core::grant::route::{self, Denial, Route};
use plimsoll_core::record::{RunRecord, seal};
use plimsoll_core::request::{self, MAX_PROJECT_PATH_BYTES, Payload, ProjectFile, ProjectRun};
use plimsoll_core::result::{
    Artifact, CellResult, ModuleResult, ModuleRowResult, Output, ProjectOutcome, ProjectResult,
    StepResult,
};
use plimsoll_core::verify::{Chain, check_single};
use plimsoll_core::wire::connect::{self, ConnectError};
use plimsoll_core::wire::json::{decode, encode};
use plimsoll_core::wire::{
    CloseSessionRequest, CloseSessionResponse, DescribeResponse, Evidence, OpenSessionRequest,
    OpenSessionResponse, RunRequest, RunResponse, SessionRunResponse,
};
use plimsoll_core::{Error, Request};
use serde::Deserialize;
use serde::de::DeserializeOwned;

// ------------------------------------------------------------------ wire_json

/// Decodes `msg` as `T` with the strict decoder; if accepted, the message must
/// survive encode → decode unchanged, and its encoding must be a fixed point.
/// Values compare by `Debug`, which tells NaN, −0.0 and +0.0 apart as the wire does.
fn round_trip<T>(data: &[u8])
where
    T: DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let Ok(first) = decode::<T>(data) else {
        return;
    };
    let bytes = encode(&first);
    let second: T = match decode(&bytes) {
        Ok(v) => v,
        Err(e) => panic!(
            "{}: our own encoding is refused: {e}\n{}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(&bytes)
        ),
    };
    assert_eq!(
        format!("{first:?}"),
        format!("{second:?}"),
        "{}: encode → decode changed the message",
        std::any::type_name::<T>()
    );
    assert_eq!(bytes, encode(&second), "the encoding is not a fixed point");
}

/// `wire_json`: arbitrary bytes through the strict ProtoJSON decoder as every
/// plimsoll.v1 message, and through the client's Connect error reader (JSON
/// body, base64 protobuf details) and the protobuf `RunRecord` decoder. Never
/// panics; accepted input is UTF-8, a JSON object serde_json itself accepts,
/// and every accepted message round-trips; a Connect error read back from its
/// own `to_json` is unchanged; a record read from either codec
/// survives the protobuf encode → decode unchanged.
pub fn wire_json(data: &[u8]) {
    for mark in [None, Some("request")] {
        let e = ConnectError::from_answer(400, data, true, mark);
        let again = ConnectError::from_answer(e.code.http_status(), &e.to_json(), true, None);
        assert_eq!(
            again, e,
            "a Connect error does not survive to_json → from_answer"
        );
        let _ = e.into_error();
    }
    if let Some(r) = connect::decode_record(data) {
        assert_eq!(connect::decode_record(&connect::record_bytes(&r)), Some(r));
    }
    if let Ok(r) = decode::<RunRecord>(data) {
        assert_eq!(connect::decode_record(&connect::record_bytes(&r)), Some(r));
    }
    let accepted = decode::<serde_json::Value>(data).is_ok();
    if accepted {
        assert!(std::str::from_utf8(data).is_ok(), "accepted non-UTF-8");
        let v: serde_json::Value = serde_json::from_slice(data).expect("strict ⊆ serde_json");
        assert!(v.is_object(), "accepted a non-object message");
    }
    round_trip::<RunRequest>(data);
    round_trip::<RunResponse>(data);
    round_trip::<RunRecord>(data);
    round_trip::<DescribeResponse>(data);
    round_trip::<OpenSessionRequest>(data);
    round_trip::<OpenSessionResponse>(data);
    round_trip::<SessionRunResponse>(data);
    round_trip::<CloseSessionRequest>(data);
    round_trip::<CloseSessionResponse>(data);
}

// -------------------------------------------------------------------- request

/// Validation as the engine and sessions do it: protocol, envelope, payload.
fn validate(r: &mut Request) -> Result<(), Error> {
    r.envelope.check_protocol()?;
    r.envelope.validate()?;
    r.payload.validate()
}

/// `request`: a RunRequest decoded from ProtoJSON bytes and validated. Never
/// panics; an accepted request keeps every documented limit, and re-encoding
/// it gives a request that decodes, validates and digests identically.
pub fn request(data: &[u8]) {
    let Ok(wire) = decode::<RunRequest>(data) else {
        return;
    };
    let Ok(mut req) = wire.into_request() else {
        return;
    };
    if validate(&mut req).is_err() {
        return;
    }
    assert_limits(&req);
    let bytes = encode(&RunRequest::from_request(&req));
    let mut again = decode::<RunRequest>(&bytes)
        .expect("a validated request re-decodes")
        .into_request()
        .expect("a validated request has one payload");
    let digest = request_digest(&again.envelope, Some(&again.payload));
    if let Err(e) = validate(&mut again) {
        panic!("a validated request, re-encoded, is refused: {e}");
    }
    assert_eq!(
        format!("{req:?}"),
        format!("{again:?}"),
        "re-decoding changed it"
    );
    assert_eq!(
        request_digest(&req.envelope, Some(&req.payload)),
        digest,
        "re-encoding changed the request digest"
    );
}

/// The documented limits an accepted request must keep, checked independently.
fn assert_limits(r: &Request) {
    let e = &r.envelope;
    assert_eq!(e.protocol, request::PROTOCOL);
    assert!(e.timeout_ms >= 0);
    assert!(e.trace_id.is_empty() || request::valid_trace_id(&e.trace_id));
    let code = |c: &str| assert!(!c.is_empty() && !c.contains('\0') && c.len() <= 256 * 1024);
    let files = |fs: &[ProjectFile]| {
        assert!(fs.len() <= 200);
        assert!(fs.iter().map(|f| f.content.len()).sum::<usize>() <= 4 << 20);
        for (i, f) in fs.iter().enumerate() {
            assert_clean_path(&f.path);
            assert!(fs[..i].iter().all(|g| g.path != f.path), "duplicate path");
        }
    };
    let profile = |p: &str| assert!(p.len() <= 128 && !p.chars().any(char::is_control));
    match &r.payload {
        Payload::JavaScript(j) => {
            code(&j.code);
            profile(&j.grant_profile);
        }
        Payload::Cell(c) => {
            assert!(c.language == "javascript" || c.language == "python");
            code(&c.code);
            files(&c.files);
        }
        Payload::Project(p) => {
            assert!((1..=20).contains(&p.steps.len()));
            assert!(
                p.steps
                    .iter()
                    .all(|s| !s.contains('\0') && s.len() <= 16 * 1024)
            );
            files(&p.files);
            assert!(p.artifacts.len() <= 100);
            p.artifacts.iter().for_each(|a| assert_clean_path(a));
            profile(&p.grant_profile);
        }
        Payload::Module(m) => {
            assert!(!m.rows.is_empty() && m.rows.len() <= 100_000);
            let w = m.rows[0].values.len();
            assert!((1..=64).contains(&w));
            assert!(m.rows.iter().all(|r| r.values.len() == w));
            assert!(m.rows.iter().flat_map(|r| &r.values).all(|v| v.is_finite()));
            assert!(m.end_time.is_finite() && m.end_time > 0.0);
            assert!(m.step.is_finite() && m.step > 0.0);
        }
    }
}

// --------------------------------------------------------------- project_path

/// Asserts the documented rules of a file or artifact path, checked
/// independently of `validate_path`: at most 1024 bytes; relative; every
/// component a normal name (no empty, `.` or `..` segment), so joining it to a
/// work directory stays inside it and `std::path` reads back the same string;
/// no backslash, C0, DEL or C1 character (which excludes NUL).
pub fn assert_clean_path(p: &str) {
    assert!(
        !p.is_empty() && p.len() <= MAX_PROJECT_PATH_BYTES,
        "{p:?}: length"
    );
    assert!(
        !p.starts_with('/') && !p.ends_with('/'),
        "{p:?}: slash at an end"
    );
    assert!(!p.contains('\\'), "{p:?}: backslash");
    // Unicode's control characters are exactly C0, DEL and C1 (which takes in NUL).
    assert!(!p.chars().any(char::is_control), "{p:?}: control character");
    let path = Path::new(p);
    assert!(path.is_relative() && !path.has_root(), "{p:?}: absolute");
    let names: Vec<&str> = path
        .components()
        .map(|c| match c {
            Component::Normal(n) => n.to_str().expect("from a str"),
            other => panic!("{p:?}: component {other:?}"),
        })
        .collect();
    assert_eq!(names.join("/"), p, "{p:?}: not already clean");
    let base = Path::new("/work/dir");
    let joined = base.join(path);
    assert!(joined.starts_with(base) && joined != base, "{p:?}: escapes");
}

/// `project_path`: `validate_path` on arbitrary strings. Never panics; an
/// accepted path keeps every rule of [`assert_clean_path`]; a project naming
/// the path as a file and as an artifact validates exactly when the path does.
pub fn project_path(data: &[u8]) {
    let Ok(p) = std::str::from_utf8(data) else {
        return;
    };
    let ok = request::validate_path("file", p).is_ok();
    assert_eq!(ok, request::validate_path("artifact", p).is_ok());
    if ok {
        assert_clean_path(p);
    }
    let project = Payload::Project(ProjectRun {
        files: vec![ProjectFile {
            path: p.to_owned(),
            content: "x".into(),
        }],
        steps: vec!["true".into()],
        artifacts: vec![p.to_owned()],
        grant_profile: String::new(),
    });
    assert_eq!(project.validate().is_ok(), ok, "{p:?}: project disagrees");
}

// ---------------------------------------------------------------------- route

/// Fixed grant route lists the `route` target approves against.
pub const PROFILES: [&[&str]; 3] = [
    &["GET /v1/items/*", "POST /v1/items", "GET /"],
    &[
        "GET /repos/*/*/contents/*",
        "PUT /repos/*/*/contents/*",
        "DELETE /a/b:c/*",
    ],
    &["PATCH /*", "GET /x/*/y/*/z"],
];

static ROUTES: LazyLock<Vec<Vec<Route>>> = LazyLock::new(|| {
    PROFILES
        .iter()
        .map(|l| {
            l.iter()
                .map(|r| Route::parse(r).expect("fixed route"))
                .collect()
        })
        .collect()
});

/// Whether `route` (in its `METHOD /a/*/b` text form) admits `method` and the
/// segments of `target`, under the module's semantics: same method, same number
/// of segments, each equal byte for byte or a `*` binding a segment without `:`.
fn admits(route: &str, method: &str, target: &str) -> bool {
    let (m, path) = route.split_once(' ').expect("METHOD /path");
    let pats: Vec<&str> = path[1..].split('/').filter(|s| !s.is_empty()).collect();
    let segs: Vec<&str> = target[1..].split('/').filter(|s| !s.is_empty()).collect();
    m == method
        && pats.len() == segs.len()
        && pats
            .iter()
            .zip(&segs)
            .all(|(p, s)| p == s || (*p == "*" && !s.contains(':')))
}

/// `route`: `METHOD target` (method defaults to GET without a space) against
/// each fixed profile, and the whole input as a route pattern. Never panics.
/// An approved target is canonical (a WHATWG URL parser and `http::Uri` both
/// keep it byte for byte under the profile's origin, with no query or
/// fragment, and it has no `%`, `;`, empty or all-dot segment); the route
/// returned is the first that admits it, and no route admits a refused one.
/// A pattern that parses prints back as itself.
pub fn route(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = Route::parse(s) {
        assert_eq!(r.to_string(), s, "a parsed route does not print as itself");
    }
    let (method, target) = s.split_once(' ').unwrap_or(("GET", s));
    for routes in ROUTES.iter() {
        let texts: Vec<String> = routes.iter().map(Route::to_string).collect();
        match route::approve(routes, method, target) {
            Ok(r) => {
                assert_canonical(target);
                let i = routes
                    .iter()
                    .position(|x| std::ptr::eq(x, r))
                    .expect("ours");
                assert!(
                    admits(&texts[i], method, target),
                    "{method} {target} by {r}"
                );
                assert!(
                    !texts[..i].iter().any(|t| admits(t, method, target)),
                    "{method} {target}: an earlier route admits it"
                );
            }
            Err(Denial::NotAllowed) => {
                assert_canonical(target);
                assert!(!texts.iter().any(|t| admits(t, method, target)));
            }
            Err(Denial::Malformed) => {}
        }
    }
}

/// Asserts that `target` is what is sent upstream, byte for byte.
pub fn assert_canonical(target: &str) {
    assert!(target.starts_with('/'), "{target:?}");
    let rest = &target[1..];
    if !rest.is_empty() {
        for seg in rest.split('/') {
            assert!(
                !seg.is_empty() && !seg.bytes().all(|b| b == b'.'),
                "{target:?}"
            );
        }
    }
    assert!(!target.contains(['%', ';', '?', '#', '\\']), "{target:?}");
    let origin = "https://api.example.com";
    let u = url::Url::parse(&format!("{origin}{target}")).expect("a canonical target parses");
    assert_eq!(u.host_str(), Some("api.example.com"), "{target:?}");
    assert_eq!(u.path(), target, "a URL parser rewrites {target:?}");
    assert!(u.query().is_none() && u.fragment().is_none(), "{target:?}");
    let h: http::Uri = format!("{origin}{target}").parse().expect("http::Uri");
    assert_eq!(h.host(), Some("api.example.com"));
    assert_eq!(h.path(), target);
    assert!(h.query().is_none());
}

// ------------------------------------------------------ record_verify / mutate

/// One request and its answer, as in `tests/vectors/verify.json`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Call {
    request: Option<RunRequest>,
    response: Option<RunResponse>,
}

/// What `record_verify` decodes: a single run, or a session's calls in order.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Doc {
    request: Option<RunRequest>,
    response: Option<RunResponse>,
    calls: Vec<Call>,
}

/// A call known to verify: its JSON document, its parts, and for a session
/// call the chain as it stood before it.
struct Golden {
    doc: Vec<u8>,
    request: Request,
    response: RunResponse,
    chain: Option<Chain>,
}

fn parts(call: Call) -> Option<(Request, RunResponse)> {
    Some((call.request?.into_request().ok()?, call.response?))
}

/// Everything a record binds, as text: the request but its trace id, the
/// result but step durations, the evidence and the record. The response's
/// own duration is not digested either.
fn bound(request: &Request, response: &RunResponse) -> String {
    let mut request = request.clone();
    request.envelope.trace_id.clear();
    let mut response = response.clone();
    response.duration_ms = 0;
    if let Some(Output::Project(p)) = &mut response.output {
        p.steps.iter_mut().for_each(|s| s.duration_ms = 0);
    }
    format!("{request:?}\n{response:?}")
}

/// The consistent single runs and every call of the chain in
/// `tests/vectors/verify.json`, and a sealed single run of each other kind,
/// each checked to verify.
static GOLDEN: LazyLock<Vec<Golden>> = LazyLock::new(|| {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("../../tests/vectors/verify.json")).expect("vectors");
    let mut out = Vec::new();
    let golden = |call: &serde_json::Value, chain: Option<Chain>| {
        let doc = serde_json::to_vec(&serde_json::json!({
            "request": call["request"], "response": call["response"]
        }))
        .expect("json");
        let (request, response) = parts(decode::<Call>(&doc).expect("call")).expect("parts");
        Golden {
            doc,
            request,
            response,
            chain,
        }
    };
    for s in v["single"].as_array().expect("single") {
        if s["expect"] == "ok" {
            let g = golden(s, None);
            check_single(&g.request, &g.response).expect("golden single verifies");
            out.push(g);
        }
    }
    for (request, output) in other_kinds() {
        let g = sealed(request, output);
        check_single(&g.request, &g.response).expect("sealed single verifies");
        out.push(g);
    }
    let mut chain = Chain::from_fingerprint(v["chain"]["fingerprint"].as_str().expect("fp").into());
    for c in v["chain"]["calls"].as_array().expect("calls") {
        let g = golden(c, Some(chain.clone()));
        chain
            .check_call(&g.request, &g.response)
            .expect("golden call verifies");
        out.push(g);
    }
    out
});

/// A project (with step durations, which are not digested), a module (with
/// NaN and −0.0 outputs) and a cell, each with its request.
fn other_kinds() -> [(&'static str, Output); 3] {
    let step = |command: &str, stdout: &[u8]| StepResult {
        command: command.into(),
        stdout: stdout.to_vec(),
        duration_ms: 5,
        ..StepResult::default()
    };
    [
        (
            r#"{"protocol":4,"minimumIsolation":"container","project":{"files":[{"path":"main.js","content":"console.log(42)"}],"steps":["node main.js > out.txt","cat out.txt"],"artifacts":["out.txt"]}}"#,
            Output::Project(ProjectResult {
                steps: vec![
                    step("node main.js > out.txt", b""),
                    step("cat out.txt", b"42\n"),
                ],
                outcome: ProjectOutcome::Completed,
                artifacts: vec![Artifact {
                    path: "out.txt".into(),
                    content: b"42\n".to_vec(),
                }],
                ..ProjectResult::default()
            }),
        ),
        (
            r#"{"protocol":4,"softwareRule":{"mode":"exact","identities":["sim:1"]},"module":{"model":"VanDerPol","rows":[{"values":[1,-0.0]}],"endTime":1,"step":0.5}}"#,
            Output::Module(ModuleResult {
                runs: vec![ModuleRowResult {
                    status: 0,
                    outputs: vec![1.5, -0.0, f64::NAN, 0.0],
                }],
                width: 2,
                outcome: ProjectOutcome::Completed,
                ..ModuleResult::default()
            }),
        ),
        (
            r#"{"protocol":4,"cell":{"language":"python","code":"print(1)","files":[{"path":"in.json","content":"{}"}]}}"#,
            Output::Cell(CellResult {
                stdout: b"1\n".to_vec(),
                interpreter_started: true,
                ..CellResult::default()
            }),
        ),
    ]
}

/// A single run of `request` answered with `output`, its record sealed.
fn sealed(request: &str, output: Output) -> Golden {
    let req = decode::<RunRequest>(request.as_bytes())
        .expect("request")
        .into_request()
        .expect("one payload");
    let software_identity = match &req.envelope.software_rule {
        Some(r) => r.identities[0].clone(),
        None => String::new(),
    };
    let evidence = Evidence {
        sandbox: "docker".into(),
        isolation: "kernel".into(),
        environment: format!("sha256:{}", "e".repeat(64)),
        software_identity: software_identity.clone(),
        instance: "plimsoll:fuzz".into(),
    };
    let mut record = RunRecord {
        version: 4,
        request_sha256: request_digest(&req.envelope, Some(&req.payload)),
        result_sha256: result_digest(Some(&output)),
        provider: evidence.sandbox.clone(),
        isolation: evidence.isolation.clone(),
        environment: evidence.environment.clone(),
        policy: "sha256:policy".into(),
        started_unix_ms: 1_700_000_000_000,
        ended_unix_ms: 1_700_000_000_009,
        software_identity,
        software_rule_id: rule_id(req.envelope.software_rule.as_ref()),
        instance: evidence.instance.clone(),
        ..RunRecord::default()
    };
    seal(&mut record);
    let response = RunResponse {
        evidence,
        duration_ms: 9,
        record: Some(record),
        output: Some(output),
        phases: None,
    };
    let response_json: serde_json::Value =
        serde_json::from_slice(&encode(&response)).expect("our own JSON");
    let request_json: serde_json::Value = serde_json::from_str(request).expect("JSON");
    let doc = serde_json::json!({"request": request_json, "response": response_json});
    Golden {
        doc: serde_json::to_vec(&doc).expect("json"),
        request: req,
        response,
        chain: None,
    }
}

/// Golden calls by record digest.
static BY_DIGEST: LazyLock<HashMap<String, usize>> = LazyLock::new(|| {
    GOLDEN
        .iter()
        .enumerate()
        .filter_map(|(i, g)| Some((g.response.record.as_ref()?.record_sha256.clone(), i)))
        .collect()
});

/// The oracle for an accepted call: if its record carries a golden record
/// digest, everything the record binds must equal that golden call's, or the
/// digests or their checks let a change through. A record with another digest
/// was sealed anew; records are not signed (the harness signs), so that alone
/// is not a failure.
fn assert_bound(request: &Request, response: &RunResponse) {
    let record = response
        .record
        .as_ref()
        .expect("an accepted call has a record");
    if let Some(&i) = BY_DIGEST.get(&record.record_sha256) {
        let g = &GOLDEN[i];
        assert_eq!(
            bound(request, response),
            bound(&g.request, &g.response),
            "a changed call verifies under a golden record"
        );
    }
}

/// [`assert_bound`] for a `{"request", "response"}` document that decodes,
/// whether or not it verifies (so tests can show the oracle failing).
pub fn assert_bound_doc(doc: &[u8]) {
    let call = decode::<Call>(doc).expect("a call document");
    let (req, resp) = parts(call).expect("a request and a response");
    assert_bound(&req, &resp);
}

/// `record_verify`: arbitrary bytes as a single run (`{"request", "response"}`
/// in ProtoJSON) checked by `check_single` and as the first call of the golden
/// chain, and as a session's `calls`, checked in order from the golden chain's
/// start. Never panics; every accepted call meets [`assert_bound`]'s oracle,
/// and a refused chain call leaves the chain where it was.
pub fn record_verify(data: &[u8]) {
    let Ok(doc) = decode::<Doc>(data) else {
        return;
    };
    let fresh = || {
        GOLDEN
            .iter()
            .find_map(|g| g.chain.clone())
            .expect("a chain")
    };
    let single = Call {
        request: doc.request,
        response: doc.response,
    };
    if let Some((req, resp)) = parts(single) {
        if check_single(&req, &resp).is_ok() {
            assert_bound(&req, &resp);
        }
        if fresh().check_call(&req, &resp).is_ok() {
            assert_bound(&req, &resp);
        }
    }
    let mut chain = fresh();
    for call in doc.calls {
        let Some((req, resp)) = parts(call) else {
            continue;
        };
        let before = chain.clone();
        if chain.check_call(&req, &resp).is_ok() {
            assert_bound(&req, &resp);
            assert_eq!(chain.calls(), before.calls() + 1);
        } else {
            assert_eq!(chain, before, "a refused call moved the chain");
        }
    }
}

/// Applies edits to `doc`: each 3-byte chunk `[a, b, c]` overwrites (or, by
/// `a`'s top bits, inserts before or deletes) the byte at offset
/// `((a & 0x3f) << 8 | b) % len` with `c`.
fn mutate(doc: &[u8], edits: &[u8]) -> Vec<u8> {
    let mut out = doc.to_vec();
    for e in edits.chunks_exact(3) {
        if out.is_empty() {
            break;
        }
        let at = ((usize::from(e[0] & 0x3f) << 8) | usize::from(e[1])) % out.len();
        match e[0] >> 6 {
            2 => out.insert(at, e[2]),
            3 => {
                out.remove(at);
            }
            _ => out[at] = e[2],
        }
    }
    out
}

/// `record_mutate`: the first byte picks a golden call, the rest are byte edits
/// ([`mutate`]) to its JSON document. The edited call is checked as the golden
/// one was (`check_single`, or `Chain::check_call` from the chain before it).
/// Never panics; if it verifies, everything its record binds is byte-identical
/// to the golden call's, or it carries a newly sealed record (see
/// [`assert_bound`]).
pub fn record_mutate(data: &[u8]) {
    let Some((&pick, edits)) = data.split_first() else {
        return;
    };
    let g = &GOLDEN[usize::from(pick) % GOLDEN.len()];
    let Ok(call) = decode::<Call>(&mutate(&g.doc, edits)) else {
        return;
    };
    let Some((req, resp)) = parts(call) else {
        return;
    };
    let ok = match &g.chain {
        None => check_single(&req, &resp).is_ok(),
        Some(c) => c.clone().check_call(&req, &resp).is_ok(),
    };
    assert!(ok || !edits.is_empty(), "a golden call does not verify");
    if ok {
        assert_bound(&req, &resp);
    }
}

/// The number of golden calls `record_mutate` picks from (for seeds and tests).
pub fn golden_calls() -> usize {
    GOLDEN.len()
}

// ------------------------------------------------------------- connect_stream

/// What reading a whole stream gave: each frame (messages read as envd
/// events), then how it ended.
fn read_stream(body: &[u8], split: usize) -> (Vec<String>, String) {
    use plimsoll_core::provider::e2b::process::{self, Events};
    use plimsoll_core::provider::e2b::stream::{Frame, StreamReader};
    let mut reader = StreamReader::new(64 * 1024);
    let mut events = Events::default();
    let mut seen = Vec::new();
    for chunk in body.chunks(split.max(1)) {
        if let Err(e) = reader.push(chunk) {
            return (seen, format!("push: {e}"));
        }
        loop {
            match reader.next_frame() {
                Ok(None) => break,
                Ok(Some(Frame::Message(m))) => {
                    let event = process::parse(&m);
                    let order = event.as_ref().map(|e| events.accept(e));
                    seen.push(format!("{event:?} {order:?}"));
                }
                Ok(Some(Frame::End(r))) => seen.push(format!("end {r:?}")),
                Err(e) => return (seen, format!("frame: {e}")),
            }
        }
    }
    (seen, format!("finish: {:?}", reader.finish()))
}

/// `connect_stream`: envd's Connect stream reader on arbitrary bytes (the
/// first byte picks the chunk size). Never panics; reads the same frames and
/// ends the same way however the body is split (but for a budget crossed
/// mid-frame, which only the split decides: then both end in an error); a
/// body accepted whole ended with exactly one end frame, which is its last
/// frame.
pub fn connect_stream(data: &[u8]) {
    let Some((&split, body)) = data.split_first() else {
        return;
    };
    let whole = read_stream(body, body.len());
    let parts = read_stream(body, usize::from(split % 17) + 1);
    if whole.1.starts_with("push") || parts.1.starts_with("push") {
        assert!(
            !whole.1.starts_with("finish: Ok") && !parts.1.starts_with("finish: Ok"),
            "an over-budget body was accepted: {whole:?} / {parts:?}"
        );
        return;
    }
    assert_eq!(whole, parts, "the split changed what was read");
    if whole.1 == "finish: Ok(())" {
        let ends = whole.0.iter().filter(|f| f.starts_with("end ")).count();
        assert_eq!(ends, 1, "{whole:?}");
        assert!(
            whole.0.last().is_some_and(|f| f.starts_with("end ")),
            "{whole:?}"
        );
    }
}

/// Fuzz target `dockercloud_exec`: what the dockercloud provider reads from a
/// sandbox's endpoint. The first byte picks: even, the rest is a
/// `multipart/mixed` download (boundary `b`): never panics, and what it
/// accepts re-encodes canonically to a body read the same; odd, the rest is
/// an exec's stdout and stderr (split where the first byte says) read by the
/// in-guest wrapper's parser (nonce `N`): never panics, and what it accepts
/// keeps at most 64 KiB per stream, flags a cut exactly when the stream was
/// longer, and carries a status a shell can have (0–255).
pub fn dockercloud_exec(data: &[u8]) {
    use plimsoll_core::provider::dockercloud::multipart::{self, Downloaded};
    use plimsoll_core::provider::dockercloud::wrapper::{self, OUTPUT_CAP};
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    if pick % 2 == 0 {
        let Ok(files) = multipart::download(body, "b") else {
            return;
        };
        let mut again = Vec::new();
        for (path, f) in &files {
            let part = |name: &str, content: &[u8], out: &mut Vec<u8>| {
                out.extend_from_slice(
                    format!("--b\r\nContent-Disposition: attachment; name={name}\r\n\r\n")
                        .as_bytes(),
                );
                out.extend_from_slice(content);
                out.extend_from_slice(b"\r\n");
            };
            match f {
                Downloaded::File(c) => {
                    let meta = serde_json::json!({"path": path}).to_string();
                    part("metadata", meta.as_bytes(), &mut again);
                    part("content", c, &mut again);
                }
                Downloaded::Error(m) => {
                    let e = serde_json::json!({"path": path, "message": m}).to_string();
                    part("error", e.as_bytes(), &mut again);
                }
            }
        }
        again.extend_from_slice(b"--b--\r\n");
        assert_eq!(
            multipart::download(&again, "b").as_ref(),
            Ok(&files),
            "the canonical re-encoding reads differently"
        );
    } else {
        let cut = (usize::from(pick / 2) * 97) % (body.len() + 1);
        let (out, err) = body.split_at(cut);
        let Ok(w) = wrapper::parse(out.to_vec(), err.to_vec(), "N") else {
            return;
        };
        assert!(
            w.stdout.len() <= OUTPUT_CAP && w.stderr.len() <= OUTPUT_CAP,
            "{w:?}"
        );
        assert_eq!(w.stderr_truncated, err.len() > OUTPUT_CAP);
        assert!((0..=255).contains(&w.status), "{w:?}");
    }
}
