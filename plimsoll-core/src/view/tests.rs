use super::*;
use crate::record::RunRecord;
use crate::result::{CellResult, JavaScriptResult, ModuleResult, ProjectOutcome, ProjectResult};
use crate::wire::{CloseSessionResponse, Evidence};

fn answers() -> Vec<Answer> {
    let record = RunRecord {
        sequence: 2,
        record_sha256: "ab".repeat(32),
        ..RunRecord::default()
    };
    let outputs = [
        Output::JavaScript(JavaScriptResult {
            stdout: b"hi\n".to_vec(),
            exit_code: 3,
            ..JavaScriptResult::default()
        }),
        Output::Cell(CellResult {
            interpreter_started: true,
            ..CellResult::default()
        }),
        Output::Project(ProjectResult {
            outcome: ProjectOutcome::SetupFailed,
            steps: vec![StepResult {
                command: "make".into(),
                stdout: b"built".to_vec(),
                ..StepResult::default()
            }],
            artifacts: vec![Artifact {
                path: "out.txt".into(),
                content: b"x".to_vec(),
            }],
            ..ProjectResult::default()
        }),
        Output::Module(ModuleResult {
            width: 2,
            runs: vec![ModuleRowResult {
                status: 0,
                outputs: vec![1.5, 2.0],
            }],
            ..ModuleResult::default()
        }),
    ];
    let mut out = Vec::new();
    for (i, o) in outputs.into_iter().enumerate() {
        let response = RunResponse {
            evidence: Evidence {
                sandbox: "wasm".into(),
                ..Evidence::default()
            },
            duration_ms: 7,
            record: (i % 2 == 0).then(|| record.clone()),
            output: Some(o),
            phases: None,
        };
        let end = (i == 1).then_some(SessionEnd::Expired);
        let sent = Request::new(crate::request::Payload::JavaScript(Default::default()));
        out.push(Answer::new(&sent, response, end));
    }
    out
}

fn check_class<T>(c: &Class<T>, v: &T) {
    let mut seen = std::collections::BTreeSet::new();
    for f in c.fields {
        assert!(seen.insert(f.name), "{}.{} twice", c.name, f.name);
        let value = (f.read)(v);
        assert!(
            value.is(f.ty),
            "{}.{} is {value:?}, declared {:?}",
            c.name,
            f.name,
            f.ty
        );
    }
}

#[test]
fn every_field_reads_as_its_declared_type() {
    for a in answers() {
        check_class(&RUN, &a);
        for (name, value) in a.values() {
            assert_eq!(a.get(name), Some(value), "{name}");
            match value {
                Value::Record(r) => check_class(&RECORD, r),
                Value::Steps(s) => s.iter().for_each(|s| check_class(&STEP, s)),
                Value::Artifacts(x) => x.iter().for_each(|x| check_class(&ARTIFACT, x)),
                Value::Rows(x) => x.iter().for_each(|x| check_class(&ROW, x)),
                _ => {}
            }
        }
        match &a.response.output {
            Some(Output::JavaScript(r)) => check_class(&JAVASCRIPT, r),
            Some(Output::Cell(r)) => check_class(&CELL, r),
            Some(Output::Project(r)) => check_class(&PROJECT, r),
            Some(Output::Module(r)) => check_class(&MODULE, r),
            None => {}
        }
    }
    check_class(&SUMMARY, &CloseSessionResponse::default());
    // A kind's field never hides a common one.
    for kind in [
        JAVASCRIPT.fields.iter().map(|f| f.name).collect::<Vec<_>>(),
        CELL.fields.iter().map(|f| f.name).collect(),
        PROJECT.fields.iter().map(|f| f.name).collect(),
        MODULE.fields.iter().map(|f| f.name).collect(),
    ] {
        for name in kind {
            assert!(
                RUN.get(&answers()[0], name).is_none(),
                "{name} shadows a common field"
            );
        }
    }
}

#[test]
fn paths_reach_nested_fields_and_nothing_else() {
    let a = answers();
    assert_eq!(a[0].resolve("sandbox"), Some(Value::Text("wasm")));
    assert_eq!(a[0].resolve("exit_code"), Some(Value::Int(3)));
    assert_eq!(a[0].resolve("record.sequence"), Some(Value::Int(2)));
    assert_eq!(a[1].resolve("record"), Some(Value::Nothing));
    assert_eq!(a[1].resolve("record.sequence"), None);
    assert_eq!(a[1].resolve("session_end"), Some(Value::Text("expired")));
    assert_eq!(a[0].resolve("session_end"), Some(Value::Nothing));
    assert_eq!(a[1].resolve("interpreter_started"), Some(Value::Bool(true)));
    assert_eq!(a[2].resolve("outcome"), Some(Value::Text("setup_failed")));
    assert_eq!(a[2].resolve("steps.0.stdout"), Some(Value::Bytes(b"built")));
    assert_eq!(
        a[2].resolve("artifacts.0.path"),
        Some(Value::Text("out.txt"))
    );
    assert_eq!(
        a[3].resolve("runs.0.outputs"),
        Some(Value::Floats(&[1.5, 2.0]))
    );
    for bad in [
        "",
        "nope",
        "steps.1.stdout",
        "steps.x.stdout",
        "steps.0",
        "exit_code.x",
        "stdout",
        "record.nope",
    ] {
        assert_eq!(a[2].resolve(bad), None, "{bad:?}");
    }
    assert_eq!(a[0].class_name(), "JavaScriptResult");
    assert_eq!(render::camel("record_sha256"), "recordSha256");
}

/// The committed declarations are the ones the tables render.
#[test]
fn binding_declarations_match_the_tables() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bless = std::env::var_os("PLIMSOLL_BLESS").is_some();
    let stub = root.join("bindings-python/python/plimsoll/_native.pyi");
    let (start, end) = (
        "# ---------------------------------------------------------------- results\n\n",
        "# ---------------------------------------------------------------- verification",
    );
    let text = std::fs::read_to_string(&stub).unwrap();
    let (head, rest) = text.split_once(start).expect("the stub's results marker");
    let (_, tail) = rest
        .split_once(end)
        .expect("the stub's verification marker");
    let want = format!("{head}{start}{}{end}{tail}", render::python_stub());
    let mut stale = Vec::new();
    for (path, want) in [
        (stub, want),
        (
            root.join("bindings-node/results.d.ts"),
            render::typescript(),
        ),
        (root.join("docs/fields.md"), render::reference()),
    ] {
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            if bless {
                std::fs::write(&path, want).unwrap();
            } else {
                stale.push(path.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale declarations (regenerate with PLIMSOLL_BLESS=1 cargo test -p plimsoll-core --lib view): {stale:?}"
    );
}
