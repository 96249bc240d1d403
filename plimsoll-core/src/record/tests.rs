//! The golden vectors and worked examples of `spec/wire.md` §7 and §8.6.

use super::*;
use crate::digest::{request_digest, result_digest, rule_id};
use crate::request::Request;
use crate::request::SoftwareRule;
use crate::result::Output;
use crate::result::{
    Artifact, CellResult, JavaScriptResult, ModuleResult, ModuleRowResult, ProjectOutcome,
    ProjectResult, StepResult,
};
use crate::wire::{RunRequest, RunResponse, json};

fn req(body: &str) -> Request {
    json::decode::<RunRequest>(body.as_bytes())
        .unwrap()
        .into_request()
        .unwrap()
}

fn req_digest(body: &str) -> String {
    let r = req(body);
    request_digest(&r.envelope, Some(&r.payload))
}

fn id(c: char) -> String {
    format!(
        "oci-manifest:linux/amd64@sha256:{}",
        c.to_string().repeat(64)
    )
}

#[test]
fn request_worked_examples() {
    assert_eq!(
        req_digest(
            r#"{"protocol":4,"minimumIsolation":"container","timeoutMs":10000,"javascript":{"code":"console.log(6*7)"}}"#
        ),
        "7ba886a1f766a59eaea6f66237e5726a0c33a3629e05526496c1cede49951b10"
    );
    assert_eq!(
        req_digest(r#"{"protocol":4,"javascript":{"code":"console.log(6*7)"}}"#),
        "f65090a97b59925602246c3a7ab3e5d05dfde6cae06c13365cbd0e6be4986dc3"
    );
    assert_eq!(
        req_digest(
            r#"{"protocol":4,"minimumIsolation":"container","project":{"steps":["node main.js"],"files":[{"path":"main.js","content":"console.log(require('./lib.js'))"},{"path":"lib.js","content":"module.exports = 42"}]}}"#
        ),
        "ac0af5cf5cb9f980c40dc121cb71f99be56942c27af19d3baae604a763f0c090"
    );
}

#[test]
fn request_golden_vectors() {
    let (a, b) = (id('a'), id('b'));
    assert_eq!(
        req_digest(
            r#"{"protocol":1,"minimumIsolation":"container","traceId":"t-1","timeoutMs":5000,"javascript":{"code":"console.log(1+1)"}}"#
        ),
        "585a1b46c55ebacc1dfdd4336e302328c32ed3e2e7e8a8b460d252d0454be8fc"
    );
    let rule = format!(r#""softwareRule":{{"mode":"approved","identities":["{a}","{b}"]}}"#);
    assert_eq!(
        req_digest(&format!(
            r#"{{"protocol":2,"minimumIsolation":"container","traceId":"t-1","timeoutMs":5000,{rule},"javascript":{{"code":"console.log(1+1)"}}}}"#
        )),
        "0b662d4687a062429ab0be85c2445e6c0c9d402922ca223b74e3a1095da7d320"
    );
    let project = r#""project":{"files":[{"path":"main.js","content":"console.log(require('./lib.js'))"},{"path":"lib.js","content":"module.exports = 42"}],"steps":["node main.js > out.txt","cat out.txt"],"artifacts":["out.txt"]}"#;
    assert_eq!(
        req_digest(&format!(
            r#"{{"protocol":2,"timeoutMs":30000,{rule},{project}}}"#
        )),
        "abf8235a62b43c4384dc9e7a0f704f1f5f0936ac01a98d7344e50195455d97e1"
    );
    let p1 = req_digest(&format!(r#"{{"protocol":1,"timeoutMs":30000,{project}}}"#));
    assert!(p1.starts_with("894bec2b") && p1.ends_with("81d0"), "{p1}");
    let module = r#""module":{"model":"VanDerPol","rows":[{"values":[1,2]},{"values":[0.5,-3]}],"endTime":1,"step":0.1}"#;
    assert_eq!(
        req_digest(&format!(r#"{{"protocol":2,{rule},{module}}}"#)),
        "f17657df096a7f2fe66fc012a8262bfe03a876e114264d95ce1ac79181c119a5"
    );
    let m1 = req_digest(&format!(r#"{{"protocol":1,{module}}}"#));
    assert!(m1.starts_with("3679bdba") && m1.ends_with("b6c1"), "{m1}");
    assert_eq!(
        req_digest(
            r#"{"protocol":2,"minimumIsolation":"container","timeoutMs":30000,"sessionId":"00112233445566778899aabbccddeeff","cell":{"language":"python","code":"import json\njson.loads(open('in.json').read())['n'] + 1","files":[{"path":"in.json","content":"{\"n\": 41}"}]}}"#
        ),
        "a2690050ce63bba09b3646effa24c89d8df7dbbc9efd5c0368d00996c76ba89f"
    );
}

fn project_result() -> ProjectResult {
    ProjectResult {
        steps: vec![
            StepResult {
                command: "node main.js > out.txt".into(),
                ..Default::default()
            },
            StepResult {
                command: "cat out.txt".into(),
                stdout: b"42\n".to_vec(),
                ..Default::default()
            },
        ],
        outcome: ProjectOutcome::Completed,
        artifacts: vec![Artifact {
            path: "out.txt".into(),
            content: b"42\n".to_vec(),
        }],
        ..Default::default()
    }
}

#[test]
fn result_golden_vectors() {
    let js = JavaScriptResult {
        stdout: b"42\n".to_vec(),
        ..Default::default()
    };
    assert_eq!(
        result_digest(Some(&Output::JavaScript(js))),
        "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5"
    );
    let js = JavaScriptResult {
        stdout: b"2\n".to_vec(),
        stderr: vec![0xff, 0x78],
        ..Default::default()
    };
    assert_eq!(
        result_digest(Some(&Output::JavaScript(js))),
        "3a57590f560a5de29d491595bfb264ff072e06d4d0fcccc5ab2d4b3de410d37d"
    );
    assert_eq!(
        result_digest(Some(&Output::Project(project_result()))),
        "bfb9756e0d38ac39c7ffd523278e5c32b63c5db76ec5162b7d1ffbe363d0ad6f"
    );
    let one_step = ProjectResult {
        steps: vec![StepResult {
            command: "node main.js".into(),
            stdout: b"42\n".to_vec(),
            duration_ms: 77,
            ..Default::default()
        }],
        outcome: ProjectOutcome::Completed,
        ..Default::default()
    };
    assert_eq!(
        result_digest(Some(&Output::Project(one_step))),
        "dd3a494f1cc37523699a0fd94868aa07049b4ac4183be06f4cb41a23a1fd329d"
    );
    let module = ModuleResult {
        runs: vec![
            ModuleRowResult {
                status: 2,
                outputs: vec![1.0, 1.5],
            },
            ModuleRowResult {
                status: -3,
                outputs: vec![],
            },
        ],
        width: 1,
        outcome: ProjectOutcome::Completed,
        stdout: b"rows=2\n".to_vec(),
        ..Default::default()
    };
    assert_eq!(
        result_digest(Some(&Output::Module(module))),
        "7bf330fc9945ab802a68a0da5a53ec0a40344c5212106e159ce77479e687c2ec"
    );
    let cell = CellResult {
        stdout: b"42\n".to_vec(),
        interpreter_started: true,
        ..Default::default()
    };
    assert_eq!(
        result_digest(Some(&Output::Cell(cell))),
        "0ac5e3bdf4e3bc7f4bd2b5b11b44a57c2ac22bf5869825c6d8dc6f56909d1b61"
    );
}

#[test]
fn record_golden_vectors() {
    let mut r = RunRecord {
        version: 4,
        request_sha256: "7ba886a1f766a59eaea6f66237e5726a0c33a3629e05526496c1cede49951b10".into(),
        result_sha256: "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5".into(),
        provider: "docker".into(),
        isolation: "container".into(),
        environment: format!("docker-image:sha256:{}", "e".repeat(64)),
        software_identity: id('f'),
        instance: "k8s-pod-uid:6f1c2a9e-0000-4000-8000-000000000001".into(),
        started_unix_ms: 1790000000000,
        ended_unix_ms: 1790000000812,
        ..RunRecord::default()
    };
    assert_eq!(
        record_digest(&r).unwrap(),
        "e822e9893dc768d29c4d59a84f1d95676a2174ad1e31699516135a04e2cc8d67"
    );
    r.version = 5;
    assert_eq!(record_digest(&r), None);

    let project = RunRecord {
        version: 4,
        request_sha256: "ac0af5cf5cb9f980c40dc121cb71f99be56942c27af19d3baae604a763f0c090".into(),
        result_sha256: "dd3a494f1cc37523699a0fd94868aa07049b4ac4183be06f4cb41a23a1fd329d".into(),
        provider: "docker".into(),
        isolation: "container".into(),
        started_unix_ms: 1790000000000,
        ended_unix_ms: 1790000001234,
        ..RunRecord::default()
    };
    assert_eq!(
        record_digest(&project).unwrap(),
        "7826868189ed29ff68d6b6d5eea317139fdfa7ba27b8aaf4767b5fe4cf52e0d1"
    );

    let project_v1 = req(
        r#"{"protocol":1,"timeoutMs":30000,"project":{"files":[{"path":"main.js","content":"console.log(require('./lib.js'))"},{"path":"lib.js","content":"module.exports = 42"}],"steps":["node main.js > out.txt","cat out.txt"],"artifacts":["out.txt"]}}"#,
    );
    let v2 = RunRecord {
        version: 2,
        request_sha256: request_digest(&project_v1.envelope, Some(&project_v1.payload)),
        result_sha256: result_digest(Some(&Output::Project(project_result()))),
        provider: "openshell".into(),
        isolation: "container".into(),
        environment: "openshell-image:sha256:ab".into(),
        policy: "openshell-policy:sha256:cd".into(),
        started_unix_ms: 1790000000000,
        ended_unix_ms: 1790000004210,
        session: session_fingerprint("00112233445566778899aabbccddeeff"),
        sequence: 2,
        previous_sha256: format!("{}01", "0".repeat(62)),
        ..RunRecord::default()
    };
    assert_eq!(
        record_digest(&v2).unwrap(),
        "a5107eb6b1f726e1b2d7183419502309bfa34d932a65f1494150228ae8349156"
    );
}

#[test]
fn rule_fingerprint_and_owner() {
    let (a, b) = (id('a'), id('b'));
    let rule = |ids: Vec<String>| SoftwareRule {
        mode: "approved".into(),
        identities: ids,
    };
    let want = "approved:sha256:def36ca56c26169c32c1690b9f8df85526c919015dc46db52662b58d98ad7a10";
    assert_eq!(rule_id(Some(&rule(vec![a.clone(), b.clone()]))), want);
    assert_eq!(rule_id(Some(&rule(vec![b, a.clone()]))), want);
    assert_eq!(rule_id(Some(&rule(vec![a.clone()]))), format!("exact:{a}"));
    assert_eq!(rule_id(None), "");
    assert_eq!(
        session_fingerprint("00112233445566778899aabbccddeeff"),
        "5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720"
    );
    assert_eq!(
        owner_digest("tok-123", "alice"),
        "99fdc2a70d98e77954a10ab29c73b2fa583751b98b06da3d9ea644645a170c81"
    );
    assert!(valid_instance("plimsolld:0123abcd"));
    assert!(valid_instance(""));
    assert!(!valid_instance("Plimsolld:x"));
    assert!(!valid_instance("plimsolld:"));
    assert!(!valid_instance("plimsolld:a b"));
}

#[test]
fn worked_response_body_parses_and_verifies() {
    let body = format!(
        r#"{{"sandbox":"docker","isolation":"container","durationMs":"812","softwareIdentity":"{f}","environment":"docker-image:sha256:{e}","instance":"k8s-pod-uid:6f1c2a9e-0000-4000-8000-000000000001","javascript":{{"stdout":"NDIK","exitCode":0}},"record":{{"version":4,"requestSha256":"7ba886a1f766a59eaea6f66237e5726a0c33a3629e05526496c1cede49951b10","resultSha256":"9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5","provider":"docker","isolation":"container","environment":"docker-image:sha256:{e}","softwareIdentity":"{f}","instance":"k8s-pod-uid:6f1c2a9e-0000-4000-8000-000000000001","startedUnixMs":"1790000000000","endedUnixMs":"1790000000812","recordSha256":"e822e9893dc768d29c4d59a84f1d95676a2174ad1e31699516135a04e2cc8d67"}}}}"#,
        f = id('f'),
        e = "e".repeat(64)
    );
    let resp: RunResponse = json::decode(body.as_bytes()).unwrap();
    let request = req(
        r#"{"protocol":4,"minimumIsolation":"container","timeoutMs":10000,"javascript":{"code":"console.log(6*7)"}}"#,
    );
    crate::verify::check_single(&request, &resp).unwrap();
    let mut tampered = resp.clone();
    if let Some(Output::JavaScript(j)) = &mut tampered.output {
        j.stdout = b"43\n".to_vec();
    }
    assert!(crate::verify::check_single(&request, &tampered).is_err());
}

#[test]
fn worked_session_chain() {
    let sid = "00112233445566778899aabbccddeeff";
    let fp = session_fingerprint(sid);
    let call1 = req(&format!(
        r#"{{"protocol":4,"minimumIsolation":"container","cell":{{"language":"python","code":"x = 20 + 1\nx * 2"}},"sessionId":"{sid}"}}"#
    ));
    assert_eq!(
        request_digest(&call1.envelope, Some(&call1.payload)),
        "d9d6d5af158612e132e61da083e4915168405b100e6aa58e3e23da99b8ac35ac"
    );
    let out1 = Output::Cell(CellResult {
        stdout: b"42\n".to_vec(),
        interpreter_started: true,
        ..Default::default()
    });
    let mut r1 = RunRecord {
        version: 4,
        request_sha256: request_digest(&call1.envelope, Some(&call1.payload)),
        result_sha256: result_digest(Some(&out1)),
        provider: "docker".into(),
        isolation: "container".into(),
        environment: format!("docker-image:sha256:{}", "e".repeat(64)),
        software_identity: id('f'),
        started_unix_ms: 1790000001000,
        ended_unix_ms: 1790000001095,
        session: fp.clone(),
        sequence: 1,
        ..RunRecord::default()
    };
    seal(&mut r1);
    assert_eq!(
        r1.record_sha256,
        "41fabb5bbded38e0e1e52a7f4e1e794563a56eee36405bd962219e817acbf855"
    );

    let call2 = req(&format!(
        r#"{{"protocol":4,"minimumIsolation":"container","javascript":{{"code":"console.log(1)"}},"sessionId":"{sid}"}}"#
    ));
    assert_eq!(
        request_digest(&call2.envelope, Some(&call2.payload)),
        "a27005add592f7f1c676d9b21a9e26a3524d1b1b8fecb32808f557d5b8acadc4"
    );
    let out2 = Output::JavaScript(JavaScriptResult {
        stdout: b"1\n".to_vec(),
        ..Default::default()
    });
    assert_eq!(
        result_digest(Some(&out2)),
        "5ccf500c9500979a77523eb971b2368ac2f457a8732f53155ebf1e8b79a6e9d0"
    );
    let mut r2 = RunRecord {
        request_sha256: request_digest(&call2.envelope, Some(&call2.payload)),
        result_sha256: result_digest(Some(&out2)),
        started_unix_ms: 1790000002000,
        ended_unix_ms: 1790000002040,
        sequence: 2,
        previous_sha256: r1.record_sha256.clone(),
        ..r1.clone()
    };
    seal(&mut r2);
    assert_eq!(
        r2.record_sha256,
        "d6f5d20327f6d569d92c1cb1ca33e0da179b6a11e3b4b6cfba5d8a0248ad700d"
    );

    // The same chain through the verifier, as a client would check it.
    let resp = |out: &Output, rec: &RunRecord| RunResponse {
        evidence: crate::wire::Evidence {
            sandbox: "docker".into(),
            isolation: "container".into(),
            environment: rec.environment.clone(),
            software_identity: rec.software_identity.clone(),
            instance: String::new(),
        },
        duration_ms: 1,
        record: Some(rec.clone()),
        output: Some(out.clone()),
        phases: None,
    };
    let mut chain = crate::verify::Chain::new(sid);
    chain.check_call(&call1, &resp(&out1, &r1)).unwrap();
    // A reordered call breaks the chain and does not advance it.
    assert!(chain.clone().check_call(&call1, &resp(&out1, &r1)).is_err());
    chain.check_call(&call2, &resp(&out2, &r2)).unwrap();
    chain.check_close(&fp, 2, &r2.record_sha256).unwrap();
    assert!(chain.check_close(&fp, 1, &r1.record_sha256).is_err());
}
