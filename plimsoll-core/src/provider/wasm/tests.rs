//! Unit tests of the wasm provider: real runs on the embedded guest, checking
//! the Node-like semantics. The hostile cases run through the engine in
//! `tests/wasm.rs`.

use super::*;
use crate::provider::ResourceSettings;
use tokio_util::sync::CancellationToken;

fn provider() -> Wasm {
    Wasm::new(DEFAULT_MEMORY_MB).expect("the wasm provider starts")
}

async fn js(code: &str) -> JavaScriptResult {
    provider()
        .execute(
            code.to_string(),
            Duration::from_secs(5),
            &CancellationToken::new(),
            None,
            crate::phase::Phases::start(),
        )
        .await
        .expect("the run is answered")
}

/// (stdout, stderr, exit code) as text.
async fn run(code: &str) -> (String, String, i32) {
    let r = js(code).await;
    (
        String::from_utf8(r.stdout).unwrap(),
        String::from_utf8(r.stderr).unwrap(),
        r.exit_code,
    )
}

#[tokio::test]
async fn prints_like_node() {
    // Each expectation is what `node -e` prints for the same line (v20; v24 where they differ: symbol keys).
    let cases = [
        ("console.log(6*7)", "42\n"),
        (
            "console.log('a', 1, -0, 1n, null, undefined, true)",
            "a 1 -0 1n null undefined true\n",
        ),
        (
            "console.log({ a: 1, b: [ 1, 2 ] })",
            "{ a: 1, b: [ 1, 2 ] }\n",
        ),
        (
            "console.log(['x'], 'top', { s: 'str', 'x-y': 1, [Symbol('k')]: 2 })",
            "[ 'x' ] top { s: 'str', 'x-y': 1, Symbol(k): 2 }\n",
        ),
        (
            "console.log([1,2,[3,[4,[5]]]], { a: { b: { c: { d: 1 } } } })",
            "[ 1, 2, [ 3, [ 4, [Array] ] ] ] { a: { b: { c: [Object] } } }\n",
        ),
        (
            "console.log([1,2,3,4,5,6,7,8,9,10])",
            "[\n  1, 2, 3, 4,  5,\n  6, 7, 8, 9, 10\n]\n",
        ),
        (
            "const o = {name: 'o'}; o.self = o; console.log(o)",
            "<ref *1> { name: 'o', self: [Circular *1] }\n",
        ),
        (
            "console.log(new Map([[1,'a']]), new Set([1,2]), new Uint8Array([1,2]))",
            "Map(1) { 1 => 'a' } Set(2) { 1, 2 } Uint8Array(2) [ 1, 2 ]\n",
        ),
        (
            "console.log(function foo(){}, class Bar{}, async () => 1, /x+/g, new Date(0))",
            "[Function: foo] [class Bar] [AsyncFunction (anonymous)] /x+/g 1970-01-01T00:00:00.000Z\n",
        ),
        (
            "class P { constructor(){ this.x = 1 } }; console.log(new P(), Object.create(null), [ , 1])",
            "P { x: 1 } [Object: null prototype] {} [ <1 empty item>, 1 ]\n",
        ),
        (
            "console.log(Promise.resolve(4), new Promise(() => {}))",
            "Promise { 4 } Promise { <pending> }\n",
        ),
        (
            "console.log('%s is %d, %i; %j %%', 'Bob', 42.5, 42.5, {a:1})",
            "Bob is 42.5, 42; {\"a\":1} %\n",
        ),
        ("console.log(\"it's\", ['it\\'s'])", "it's [ \"it's\" ]\n"),
        (
            "console.log({ aaaaaaaaaaaa: 'aaaaaaaaaaaaaaaa', bbbbbbbbbbbbbbbbbb: 'bbbbbbbbbbbbbbbbbbbbb', ccccccccccccccccc: 1234567 })",
            "{\n  aaaaaaaaaaaa: 'aaaaaaaaaaaaaaaa',\n  bbbbbbbbbbbbbbbbbb: 'bbbbbbbbbbbbbbbbbbbbb',\n  ccccccccccccccccc: 1234567\n}\n",
        ),
        (
            "process.stdout.write('no newline'); console.info('x'); console.debug('y')",
            "no newlinex\ny\n",
        ),
        (
            "console.log('a\\ud800b', 'h\u{e9}llo \u{2713}')",
            "a\u{fffd}b h\u{e9}llo \u{2713}\n",
        ),
        (
            "console.log({ get g() { return 1 }, set s(v) {} }, new Number(3), [NaN, -Infinity])",
            "{ g: [Getter], s: [Setter] } [Number: 3] [ NaN, -Infinity ]\n",
        ),
        (
            "console.table([{ a: 1, b: 'x' }, { a: 2, c: true }])",
            "┌─────────┬───┬─────┬──────┐\n│ (index) │ a │ b   │ c    │\n├─────────┼───┼─────┼──────┤\n\
             │ 0       │ 1 │ 'x' │      │\n│ 1       │ 2 │     │ true │\n└─────────┴───┴─────┴──────┘\n",
        ),
    ];
    for (code, want) in cases {
        assert_eq!(
            run(code).await,
            (want.to_string(), String::new(), 0),
            "{code}"
        );
    }
}

#[tokio::test]
async fn errors_print_with_their_stack() {
    let (out, _, code) = run("const e = new Error('x'); e.code = 'E1'; console.log(e)").await;
    assert_eq!(code, 0);
    assert!(out.starts_with("Error: x\n    at "), "{out}");
    assert!(out.ends_with(" {\n  code: 'E1'\n}\n"), "{out}");
    let (out, _, _) = run("console.log({ e: new Error('inner') })").await;
    assert!(
        out.starts_with("{\n  e: Error: inner\n      at "),
        "nested stacks are indented: {out}"
    );
    let (out, _, _) = run("console.log(new Error('outer', { cause: 'why' }))").await;
    assert!(
        out.starts_with("Error: outer\n    at ") && out.ends_with(" {\n  [cause]: 'why'\n}\n"),
        "{out}"
    );
    let (_, err, _) = run("console.trace('here')").await;
    assert_eq!(
        err, "Trace: here\n    at <eval> ([eval]:1:8)\n",
        "the prelude's own frames are left out"
    );
}

#[tokio::test]
async fn error_and_warn_go_to_stderr() {
    assert_eq!(
        run("console.log('o'); console.error('e', 1); console.warn({ w: 1 })").await,
        ("o\n".into(), "e 1\n{ w: 1 }\n".into(), 0)
    );
}

#[tokio::test]
async fn an_uncaught_exception_exits_1_with_its_stack() {
    let (out, err, code) =
        run("console.log('before'); function f() { throw new TypeError('bad') }\nf()").await;
    assert_eq!((out.as_str(), code), ("before\n", 1));
    assert!(
        err.starts_with("Uncaught TypeError: bad\n    at f ([eval]:1:"),
        "{err}"
    );
    assert!(err.contains("at <eval> ([eval]:2:"), "{err}");
    assert_eq!(
        run("throw 'a string'").await,
        (String::new(), "Uncaught 'a string'\n".into(), 1)
    );
    let (_, err, code) = run("syntax error here (").await;
    assert_eq!(code, 1);
    assert!(err.starts_with("Uncaught SyntaxError: "), "{err}");
}

#[tokio::test]
async fn unhandled_rejections_fail_the_run() {
    let (_, err, code) = run("Promise.reject(new Error('nobody'))").await;
    assert_eq!(code, 1);
    assert!(
        err.starts_with("Uncaught (in promise) Error: nobody\n    at "),
        "{err}"
    );
    let (_, err, code) =
        run("async function f() { throw new RangeError('late') } f(); console.log('ran')").await;
    assert_eq!(code, 1);
    assert!(err.contains("RangeError: late"), "{err}");
    // A rejection handled before the jobs run out is not reported.
    assert_eq!(run("const p = Promise.reject(1); Promise.resolve().then(() => p.catch(() => console.log('handled')))").await, ("handled\n".into(), String::new(), 0));
    // Top-level await of a rejection is an uncaught exception.
    let (_, err, code) = run("await Promise.reject(new Error('awaited'))").await;
    assert_eq!(code, 1);
    assert!(err.starts_with("Uncaught Error: awaited"), "{err}");
}

#[tokio::test]
async fn process_exit_stops_and_sets_the_code() {
    assert_eq!(
        run("console.log('a'); process.exit(7); console.log('never')").await,
        ("a\n".into(), String::new(), 7)
    );
    assert_eq!(
        run("process.exitCode = 3; console.log('x')").await,
        ("x\n".into(), String::new(), 3)
    );
    assert_eq!(
        run("Promise.resolve().then(() => process.exit(9)); console.log('sync')").await,
        ("sync\n".into(), String::new(), 9)
    );
    assert_eq!(
        run("process.exit(256 + 5)").await.2,
        5,
        "the low 8 bits, as a process"
    );
    assert_eq!(run("process.exit()").await.2, 0);
}

#[tokio::test]
async fn top_level_await_and_jobs_run_to_completion() {
    let code = "var v = await Promise.resolve(5); console.log(globalThis.v);\
                (async () => { for (let i = 0; i < 3; i++) await null; console.log('loop done') })();\
                queueMicrotask(() => console.log('microtask'))";
    assert_eq!(
        run(code).await,
        ("5\nmicrotask\nloop done\n".into(), String::new(), 0)
    );
}

#[tokio::test]
async fn modern_javascript_works() {
    let code = "console.log([3,1,2].toSorted(), [1,2,3].findLast(x => x < 3), [1,2].at(-1), Object.hasOwn({a:1}, 'a'),\
                'a-b'.replaceAll('-', '+'), 2n ** 64n, class C { static #p = 1; static has(o) { return #p in o } }.has(Object))";
    let (out, err, code) = run(code).await;
    assert_eq!((err.as_str(), code), ("", 0), "{out}");
    assert_eq!(
        out,
        "[ 1, 2, 3 ] 2 2 true a+b 18446744073709551616n false\n"
    );
}

#[tokio::test]
async fn math_random_is_reseeded_every_run() {
    let a = run("console.log(Math.random(), Math.random())").await.0;
    let b = run("console.log(Math.random(), Math.random())").await.0;
    assert_ne!(
        a, b,
        "two runs of one snapshot must not share a random sequence"
    );
    let (out, _, _) =
        run("const x = Math.random(); console.log(x >= 0 && x < 1, typeof Math.random)").await;
    assert_eq!(out, "true function\n");
}

#[tokio::test]
async fn environment_names_the_module_and_engine() {
    let env = provider().environment();
    let hex = env
        .identity
        .strip_prefix("wasm-module:sha256:")
        .expect("identity names the module digest");
    assert_eq!(hex.len(), 64);
    assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    let engine = env
        .software_identity
        .strip_suffix(&format!("+{}", env.identity))
        .expect("software identity ends with the module");
    assert!(engine.starts_with("quickjs-ng:0."), "{engine}");
    assert!(env.software_identity.len() <= 256);
    assert!(
        env.software_identity
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/@+-".contains(&b))
    );
    assert_eq!(
        (env.default_timeout_ms, env.max_timeout_ms),
        (5_000, 30_000)
    );
    let p = provider();
    let envs = p.environments();
    assert!(envs.project.is_none() && envs.module.is_none() && envs.session.is_none());
    assert_eq!(
        p.capabilities(),
        crate::provider::Capabilities {
            javascript_grants: true,
            ..crate::provider::Capabilities::default()
        }
    );
    assert_eq!(p.resources().memory_mb, DEFAULT_MEMORY_MB);
}

#[tokio::test]
async fn the_startup_proof_passes_and_the_host_call_says_no_grant() {
    let p = provider();
    let started = std::time::Instant::now();
    assert_eq!(p.prove().await.unwrap(), Isolation::Process);
    eprintln!("the wasm startup proof took {:?}", started.elapsed());
    let compiled = p.compiled.clone();
    assert_eq!(
        p.compiled
            .pool
            .run(move || run::probe_host(&compiled))
            .await
            .unwrap()
            .unwrap(),
        HOST_NO_GRANT
    );
}

#[test]
fn configuration_is_strict() {
    let with = |resources: ResourceSettings| Setup {
        resources,
        ..Setup::default()
    };
    for (resources, variable) in [
        (
            ResourceSettings {
                cpus: Some(1.0),
                ..Default::default()
            },
            "SANDBOX_CPUS",
        ),
        (
            ResourceSettings {
                pids: Some(64),
                ..Default::default()
            },
            "SANDBOX_PIDS",
        ),
        (
            ResourceSettings {
                disk_mb: Some(64),
                ..Default::default()
            },
            "SANDBOX_DISK_MB",
        ),
        (
            ResourceSettings {
                memory_mb: Some(1),
                ..Default::default()
            },
            "SANDBOX_MEMORY_MB",
        ),
        (
            ResourceSettings {
                memory_mb: Some(MAX_MEMORY_MB + 1),
                ..Default::default()
            },
            "SANDBOX_MEMORY_MB",
        ),
    ] {
        assert_eq!(
            Wasm::from_setup(&with(resources)).unwrap_err().variable,
            variable
        );
    }
    let w = Wasm::from_setup(&with(ResourceSettings {
        memory_mb: Some(32),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(w.memory_mb, 32);
}

#[tokio::test]
async fn a_dropped_run_is_stopped() {
    let p = provider();
    let flag = Arc::new(AtomicBool::new(false));
    drop(StopOnDrop {
        flag: flag.clone(),
        engine: p.compiled.engine.clone(),
        armed: false,
    });
    assert!(
        !flag.load(Ordering::Acquire),
        "a finished run is not signalled"
    );
    drop(StopOnDrop {
        flag: flag.clone(),
        engine: p.compiled.engine.clone(),
        armed: true,
    });
    assert!(
        flag.load(Ordering::Acquire),
        "an abandoned run is told to stop"
    );
    // And a run told to stop ends as cancelled, promptly.
    let stop = Arc::new(AtomicBool::new(false));
    let limits = run::Limits {
        memory_bytes: 64 << 20,
        timeout: Duration::from_secs(20),
        cancel: stop.clone(),
        grant: None,
        phases: None,
    };
    let compiled = p.compiled.clone();
    let started = std::time::Instant::now();
    let task = p
        .compiled
        .pool
        .run(move || run::execute(&compiled, "while (true) {}", &limits));
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(StopOnDrop {
        flag: stop,
        engine: p.compiled.engine.clone(),
        armed: true,
    });
    let err = task.await.unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled);
    assert!(
        started.elapsed() < Duration::from_millis(1_000),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_startup_proof_runs_the_limits_for_real() {
    let p = provider();
    let probes = proof::run_limit_probes(&p.compiled).await.unwrap();
    eprintln!(
        "memory bomb: {:?}, linear memory {} of {} bytes; loop: {:?} for a {:?} deadline",
        probes.bomb.took,
        probes.bomb.memory_bytes,
        probes.cap_bytes,
        probes.spin.took,
        probes.spin_budget
    );
    assert_eq!(proof::judge_limits(&probes), Ok(()));
    assert!(
        probes.bomb.stderr.contains("out of memory"),
        "{}",
        probes.bomb.stderr
    );
    // A real bomb the cap cannot stop in time (1 GiB of room, 20 ms) is judged
    // a failure: the verdict follows the run, not the constants.
    let unbounded = proof::LimitProbes {
        cap_bytes: probes.cap_bytes + (1 << 30),
        bomb: proof::probe(
            &p.compiled,
            proof::BOMB,
            probes.cap_bytes + (1 << 30),
            Duration::from_millis(20),
        )
        .await
        .unwrap(),
        ..probes
    };
    let why = proof::judge_limits(&unbounded).unwrap_err();
    assert!(why.contains("not stopped by"), "{why}");
}

#[test]
fn the_wall_names_the_wasmtime_release_in_the_lock_file() {
    let lock =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).unwrap();
    let locked = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"wasmtime\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
        .map(|v| v.trim_matches('"').to_owned());
    assert_eq!(locked.as_deref(), Some(super::WASMTIME_VERSION));
}
