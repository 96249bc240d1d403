//! The wasm provider through the engine: started from configuration, proven,
//! and made to run ordinary and hostile snippets. Every answer's record is
//! verified as a client would.
//!
//! Time bounds leave about a second of slack: these tests share two cores with
//! each other (several of them spin until a deadline), so a few hundred
//! milliseconds of scheduling delay must not fail them; a deadline or
//! cancellation that did not work would still miss them by seconds.

#![cfg(feature = "wasm")]

use std::time::{Duration, Instant};

use plimsoll_core::config::{Config, Env, ResourceSettings, WasmSettings};
use plimsoll_core::engine::StartError;
use plimsoll_core::provider::Chosen;
use plimsoll_core::request::{JavaScriptRun, ProjectRun};
use plimsoll_core::result::JavaScriptResult;
use plimsoll_core::verify::check_single;
use plimsoll_core::{Caller, Engine, ErrorCode, Isolation, Output, Payload, Refusal, Request};
use tokio_util::sync::CancellationToken;

fn config(memory_mb: Option<u32>) -> Config {
    Config {
        provider: Chosen::new(WasmSettings),
        resources: ResourceSettings {
            memory_mb,
            ..ResourceSettings::default()
        },
        instance: "plimsoll:wasm-test".into(),
        ..Config::default()
    }
}

async fn engine(memory_mb: Option<u32>) -> Engine {
    Engine::start(&config(memory_mb))
        .await
        .expect("the wasm engine starts")
}

fn js(code: &str, timeout_ms: i32) -> Request {
    let mut r = Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        grant_profile: String::new(),
    }));
    r.envelope.timeout_ms = timeout_ms;
    r
}

/// Runs a snippet, verifies the answer's record, and returns the result.
async fn run(e: &Engine, code: &str, timeout_ms: i32) -> JavaScriptResult {
    let request = js(code, timeout_ms);
    let response = e
        .run(
            &Caller::anonymous(),
            request.clone(),
            CancellationToken::new(),
        )
        .await
        .expect("the run is answered");
    check_single(&request, &response).expect("the record verifies");
    assert_eq!(response.evidence.isolation, "process");
    match response.output {
        Some(Output::JavaScript(j)) => j,
        other => panic!("not a snippet result: {other:?}"),
    }
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("utf-8 output")
}

#[tokio::test]
async fn hello_runs_at_tier_process() {
    let e = engine(None).await;
    assert_eq!(e.isolation(), Isolation::Process);
    assert_eq!(e.provider_name(), "wasm");
    let request = js("console.log(6*7)", 0);
    let response = e
        .run(
            &Caller::anonymous(),
            request.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    check_single(&request, &response).unwrap();
    assert_eq!(response.evidence.sandbox, "wasm");
    assert_eq!(response.evidence.isolation, "process");
    assert!(
        response
            .evidence
            .environment
            .starts_with("wasm-module:sha256:")
    );
    assert!(
        response
            .evidence
            .software_identity
            .starts_with("quickjs-ng:")
    );
    // Describe names the engine and its version, as the identity does.
    let env = e
        .describe()
        .javascript_environment
        .expect("a snippet environment");
    let version = env.software_identity["quickjs-ng:".len()..]
        .split('+')
        .next()
        .unwrap_or_default();
    assert_eq!(env.runtimes, [format!("quickjs-ng {version}")]);
    let Some(Output::JavaScript(r)) = response.output else {
        panic!("no snippet result")
    };
    assert_eq!(
        r,
        JavaScriptResult {
            stdout: b"42\n".to_vec(),
            ..JavaScriptResult::default()
        }
    );

    let d = e.describe();
    assert_eq!(
        (d.sandbox.as_str(), d.isolation.as_str()),
        ("wasm", "process")
    );
    assert!(
        !d.supports_project
            && !d.supports_module
            && !d.supports_sessions
            && d.supports_javascript_grants
            && !d.supports_project_grants
    );
    let env = d.javascript_environment.expect("snippets are served");
    assert_eq!(
        (env.max_timeout_ms, env.identity),
        (30_000, response.evidence.environment)
    );
    assert_eq!(d.resources.unwrap().memory_mb, 256);
}

#[tokio::test]
async fn a_container_floor_is_refused_before_dispatch() {
    let e = engine(None).await;
    let mut request = js("console.log('must not run')", 0);
    request.envelope.minimum_isolation = "container".into();
    let err = e
        .run(&Caller::anonymous(), request, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InsufficientIsolation);
    assert_eq!(err.not_dispatched(), Some(Refusal::Isolation));
    // A project is unsupported here, also before dispatch.
    let project = Request::new(Payload::Project(ProjectRun {
        steps: vec!["node a.js".into()],
        ..ProjectRun::default()
    }));
    let err = e
        .run(&Caller::anonymous(), project, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.not_dispatched()),
        (ErrorCode::Unsupported, Some(Refusal::Unsupported))
    );
}

#[tokio::test]
async fn cpu_pids_and_disk_settings_are_startup_errors() {
    for variable in ["SANDBOX_CPUS", "SANDBOX_PIDS", "SANDBOX_DISK_MB"] {
        let get = |k: &str| match k {
            "SANDBOX_PROVIDER" => Some("wasm".to_string()),
            k if k == variable => Some("2".to_string()),
            _ => None,
        };
        let config = Config::from_env(&Env::new(&get)).expect("the variables parse");
        match Engine::start(&config).await {
            Err(StartError::Config(e)) => assert_eq!(e.variable, variable),
            other => panic!("{variable} with wasm must not start: {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_infinite_loop_ends_at_the_deadline() {
    let e = engine(None).await;
    for code in [
        "while (true) {}",
        "for (;;) { Math.sqrt(2) }",
        "(async () => { while (true) await null })()",
    ] {
        let started = Instant::now();
        let r = run(&e, code, 1_000).await;
        let took = started.elapsed();
        assert_eq!((r.exit_code, r.timed_out), (124, true), "{code}");
        assert!(
            took >= Duration::from_millis(1_000) && took < Duration::from_millis(2_000),
            "{code} took {took:?}"
        );
    }
    // The default budget is 5 s.
    let started = Instant::now();
    let r = run(&e, "while (true) {}", 0).await;
    assert!(
        r.timed_out
            && started.elapsed() >= Duration::from_secs(5)
            && started.elapsed() < Duration::from_millis(6_500)
    );
}

#[tokio::test]
async fn a_catastrophic_regex_ends_at_the_deadline() {
    let e = engine(None).await;
    let started = Instant::now();
    let r = run(
        &e,
        "/(a+)+$/.test('a'.repeat(40) + '!'); console.log('finished')",
        1_000,
    )
    .await;
    assert_eq!((r.exit_code, r.timed_out, text(&r.stdout)), (124, true, ""));
    assert!(started.elapsed() < Duration::from_millis(2_000));
}

#[tokio::test]
async fn a_memory_bomb_fails_and_the_next_run_is_fine() {
    let e = engine(None).await;
    let r = run(
        &e,
        "const a = []; while (true) a.push(new Array(1e6).fill(1))",
        10_000,
    )
    .await;
    assert_eq!(
        (r.exit_code, r.timed_out),
        (1, false),
        "{}",
        text(&r.stderr)
    );
    assert!(
        text(&r.stderr).contains("out of memory"),
        "{}",
        text(&r.stderr)
    );
    let r = run(&e, "new Array(1e9).fill(0)", 10_000).await;
    assert_ne!(r.exit_code, 0);
    assert_eq!(run(&e, "console.log(6*7)", 0).await.stdout, b"42\n");
}

#[tokio::test]
async fn the_memory_cap_is_what_refuses_the_allocation() {
    let bomb = "const b = new ArrayBuffer(100 * 1024 * 1024); new Uint8Array(b).fill(7); console.log(b.byteLength)";
    // With 256 MiB the 100 MB buffer fits ...
    let roomy = engine(None).await;
    assert_eq!(text(&run(&roomy, bomb, 10_000).await.stdout), "104857600\n");
    // ... with 32 MiB the same allocation fails inside the guest.
    let tight = engine(Some(32)).await;
    assert_eq!(tight.describe().resources.unwrap().memory_mb, 32);
    let r = run(&tight, bomb, 10_000).await;
    assert_eq!((text(&r.stdout), r.exit_code), ("", 1));
    assert!(
        text(&r.stderr).contains("out of memory"),
        "{}",
        text(&r.stderr)
    );
    // Small work still runs under the tight cap.
    assert_eq!(
        text(
            &run(&tight, "console.log([1,2,3].map(x => x * 2))", 0)
                .await
                .stdout
        ),
        "[ 2, 4, 6 ]\n"
    );
}

#[tokio::test]
async fn deep_recursion_traps_as_a_guest_fault() {
    let e = engine(None).await;
    // Node-like depth works ...
    let r = run(
        &e,
        "function h(n) { return n === 0 ? 0 : 1 + h(n - 1) } console.log(h(8000))",
        0,
    )
    .await;
    assert_eq!((text(&r.stdout), r.exit_code), ("8000\n", 0));
    // ... unbounded recursion exhausts the wasm stack: exit 134, the trap named.
    for code in [
        "function f() { return f() + 1 } f()",
        "let d = 0; function g() { d++; g() } try { g() } catch (e) { console.log('caught') }",
    ] {
        let r = run(&e, code, 0).await;
        assert_eq!((r.exit_code, r.timed_out), (134, false), "{code}");
        assert!(
            text(&r.stderr)
                .contains("plimsoll: the guest trapped: wasm trap: call stack exhausted"),
            "{}",
            text(&r.stderr)
        );
    }
    assert_eq!(run(&e, "console.log('fine')", 0).await.stdout, b"fine\n");
}

#[tokio::test]
async fn an_output_flood_is_cut_at_64_kib_and_flagged() {
    let e = engine(None).await;
    // Unbounded: the guest is told the stream is closed; the deadline ends the loop.
    let r = run(&e, "while (true) console.log('flood flood flood')", 1_000).await;
    assert!(r.stdout_truncated && !r.stderr_truncated && r.timed_out);
    assert_eq!(r.stdout.len(), 64 * 1024);
    assert!(r.stdout.starts_with(b"flood flood flood\nflood"));
    // Bounded: the program finishes normally, its output cut.
    let r = run(
        &e,
        "for (let i = 0; i < 100000; i++) console.error(i); console.log('done')",
        10_000,
    )
    .await;
    assert_eq!((r.exit_code, text(&r.stdout)), (0, "done\n"));
    assert!(r.stderr_truncated && !r.stdout_truncated);
    assert_eq!(r.stderr.len(), 64 * 1024);
    assert!(r.stderr.starts_with(b"0\n1\n2\n"));
    // Exactly at the cap is not truncation.
    let r = run(&e, "process.stdout.write('x'.repeat(65536))", 0).await;
    assert_eq!((r.stdout.len(), r.stdout_truncated), (65536, false));
    // One huge write: kept to the cap, flagged, nothing appended.
    let r = run(&e, "console.log('y'.repeat(1 << 20))", 0).await;
    assert_eq!(
        (r.stdout.len(), r.stdout_truncated, r.exit_code),
        (65536, true, 0)
    );
    assert!(r.stdout.iter().all(|&b| b == b'y'));
}

#[tokio::test]
async fn huge_string_building_fails_cleanly() {
    let e = engine(None).await;
    let started = Instant::now();
    let r = run(&e, "let s = 'x'; while (true) s += s", 10_000).await;
    assert_eq!((r.exit_code, r.timed_out), (1, false));
    assert!(
        text(&r.stderr).contains("InternalError"),
        "{}",
        text(&r.stderr)
    );
    let r = run(
        &e,
        "let parts = []; for (let i = 0; ; i++) parts.push('abcdefgh'.repeat(1000) + i)",
        10_000,
    )
    .await;
    assert_ne!(r.exit_code, 0);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn no_global_reaches_files_env_network_or_the_host() {
    let e = engine(None).await;
    let probe = r#"
        const seen = {};
        for (const name of ['require', 'module', 'std', 'os', 'fetch', 'XMLHttpRequest', 'WebSocket', 'WebAssembly',
                            'Deno', 'Bun', 'host', 'plimsoll', 'scriptArgs',
                            'print', 'load', 'read', 'readFile', 'importScripts', 'SharedArrayBuffer', 'Atomics'])
            seen[name] = typeof globalThis[name];
        console.log(JSON.stringify(seen));
        console.log(JSON.stringify(process.env), JSON.stringify(process.argv));
        console.log(Object.getOwnPropertyNames(globalThis).filter(n => /host|plimsoll|wasi|native|write|exit|file|net|env/i.test(n)).join() || 'none');
        for (const spec of ['/etc/passwd', 'os', 'std', 'node:fs', 'fs', 'https://example.com/x.js', 'data:text/javascript,export default 1'])
            import(spec).then(m => console.log('LOADED', spec), e => console.log('refused', spec));
        try { new Function('return this')().process.binding('fs'); console.log('BINDING') } catch { console.log('no binding') }
    "#;
    let r = run(&e, probe, 0).await;
    assert_eq!(r.exit_code, 0, "{}", text(&r.stderr));
    let out = text(&r.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let seen: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    for (name, kind) in seen.as_object().unwrap() {
        let allowed = kind == "undefined" || (name == "SharedArrayBuffer" || name == "Atomics");
        assert!(allowed, "{name} is reachable ({kind})");
    }
    assert_eq!(lines[1], "{} []");
    assert_eq!(lines[2], "none");
    assert!(!out.contains("LOADED") && !out.contains("BINDING"), "{out}");
    assert_eq!(out.matches("refused").count(), 7, "{out}");
}

/// What the parity corpus (tests/parity) cannot compare with Node: values
/// that must differ between runs, and the refusals that name what the tier lacks.
#[tokio::test]
async fn web_globals_draw_fresh_randomness_and_name_what_the_tier_lacks() {
    let e = engine(None).await;
    let draw = "console.log(crypto.randomUUID(), crypto.getRandomValues(new Uint8Array(16)).toHex(), performance.timeOrigin === performance.timeOrigin, performance.timeOrigin > 1.6e12)";
    let (first, second) = (run(&e, draw, 0).await, run(&e, draw, 0).await);
    let a: Vec<&str> = text(&first.stdout).split(' ').collect();
    let b: Vec<&str> = text(&second.stdout).split(' ').collect();
    assert_eq!(a.len(), 4, "{a:?}");
    assert_ne!(a[0], b[0], "randomUUID repeats between runs");
    assert_ne!(a[1], b[1], "getRandomValues repeats between runs");
    assert_eq!(
        &a[2..],
        ["true", "true\n"],
        "timeOrigin is the run's wall clock, fixed within the run"
    );

    // Intl: absent to feature tests, and a use of it says why.
    let r = run(
        &e,
        "console.log(typeof Intl); new Intl.NumberFormat('en-US').format(1)",
        0,
    )
    .await;
    assert_eq!(text(&r.stdout), "undefined\n");
    assert_eq!(r.exit_code, 1);
    let err = text(&r.stderr);
    assert!(
        err.starts_with("Uncaught ReferenceError: Intl is not defined: the process tier (QuickJS in WebAssembly) has no Intl;"),
        "{err}"
    );

    // Algorithms past digest and HMAC are WebCrypto's NotSupportedError.
    let r = run(
        &e,
        "for (const alg of [{ name: 'RSA-OAEP' }, { name: 'AES-GCM' }, 'MD5']) crypto.subtle.importKey('raw', new Uint8Array(16), alg, false, ['sign']).catch((e) => console.log(e.name, e instanceof DOMException))",
        0,
    )
    .await;
    assert_eq!(text(&r.stdout), "NotSupportedError true\n".repeat(3));
}

#[tokio::test]
async fn nothing_survives_from_one_run_to_the_next() {
    let e = engine(None).await;
    let first = run(&e, "globalThis.leak = 1; var leak2 = 2; Array.prototype.evil = 3; console.log(typeof leak, Math.random())", 0).await;
    assert!(text(&first.stdout).starts_with("number "));
    let second = run(
        &e,
        "console.log(typeof leak, typeof leak2, [].evil, Math.random())",
        0,
    )
    .await;
    let out = text(&second.stdout);
    assert!(out.starts_with("undefined undefined undefined "), "{out}");
    // Memory a run dirtied is reset before the next run gets it: fresh
    // allocations read as zeros, not as the last run's bytes.
    let dirty = run(
        &e,
        "const b = new Uint8Array(48 << 20); b.fill(0xa5); console.log(b[12345])",
        10_000,
    )
    .await;
    assert_eq!(text(&dirty.stdout), "165\n");
    let clean = run(
        &e,
        "const b = new Uint8Array(48 << 20); console.log(b.some(x => x !== 0))",
        10_000,
    )
    .await;
    assert_eq!(text(&clean.stdout), "false\n");
    // Math.random draws a fresh sequence each run.
    let r1 = text(&first.stdout)
        .split(' ')
        .nth(1)
        .unwrap()
        .trim()
        .to_string();
    let r2 = out.split(' ').nth(3).unwrap().trim().to_string();
    assert_ne!(r1, r2);
}

#[tokio::test]
async fn cancellation_stops_a_run_promptly() {
    let e = engine(None).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = e
        .run(&Caller::anonymous(), js("while (true) {}", 20_000), cancel)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.code(), ErrorCode::Cancelled);
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(1_000),
        "took {took:?}"
    );
    // A run whose caller went away (its future dropped) leaves the engine
    // serving; that it is stopped is unit-tested with the provider.
    let abandoned = tokio::time::timeout(
        Duration::from_millis(100),
        e.run(
            &Caller::anonymous(),
            js("while (true) {}", 20_000),
            CancellationToken::new(),
        ),
    )
    .await;
    assert!(abandoned.is_err());
    assert_eq!(run(&e, "console.log(1)", 0).await.stdout, b"1\n");
}

#[tokio::test]
async fn timers_run_in_node_order_until_no_referenced_one_is_left() {
    let e = engine(None).await;
    let code = r#"
        const order = [];
        setTimeout(() => order.push('t200'), 200);
        setTimeout(() => { order.push('t0'); Promise.resolve().then(() => order.push('micro after t0')); }, 0);
        setTimeout((a, b) => order.push(`t0 second ${a}${b}`), 0, 'x', 'y');
        const i = setInterval(() => { order.push('tick'); if (order.filter((x) => x === 'tick').length === 3) clearInterval(i); }, 1);
        clearTimeout(setTimeout(() => order.push('cleared'), 5));
        clearTimeout(+setTimeout(() => order.push('cleared by id'), 5));
        setTimeout(() => order.push('unref'), 60_000).unref();
        setImmediate(() => order.push('immediate'));
        Promise.resolve().then(() => order.push('micro'));
        setTimeout(() => console.log(order.join()), 300);
    "#;
    let started = Instant::now();
    let r = run(&e, code, 10_000).await;
    assert_eq!(
        (text(&r.stdout), text(&r.stderr), r.exit_code, r.timed_out),
        (
            "micro,immediate,t0,micro after t0,t0 second xy,tick,tick,tick,t200\n",
            "",
            0,
            false
        )
    );
    // The run waited for its last referenced timer, and not for the unref'd one.
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(5),
        "took {took:?}"
    );
    // What a timer's callback sets is the run's exit code.
    let r = run(&e, "setTimeout(() => { process.exitCode = 3 }, 1)", 0).await;
    assert_eq!(r.exit_code, 3);
    let r = run(&e, "setTimeout(42)", 0).await;
    assert_eq!(r.exit_code, 1);
    assert!(
        text(&r.stderr).contains(
            "The \"callback\" argument must be of type function. Received type number (42)"
        ),
        "{}",
        text(&r.stderr)
    );
}

#[tokio::test]
async fn an_error_or_rejection_in_a_timer_ends_the_run_there() {
    let e = engine(None).await;
    for (fault, printed) in [
        ("throw new RangeError('boom')", "Uncaught RangeError: boom"),
        (
            "Promise.reject(new Error('nope'))",
            "Uncaught (in promise) Error: nope",
        ),
    ] {
        let code = format!(
            "setTimeout(() => {{ {fault} }}, 1); setTimeout(() => console.log('never'), 50)"
        );
        let r = run(&e, &code, 0).await;
        assert_eq!(r.exit_code, 1, "{fault}");
        assert_eq!(text(&r.stdout), "", "{fault}");
        assert!(text(&r.stderr).starts_with(printed), "{}", text(&r.stderr));
    }
}

#[tokio::test]
async fn a_timer_past_the_deadline_is_a_timeout_and_cancel_ends_a_wait() {
    let e = engine(None).await;
    for code in [
        "setTimeout(() => console.log('late'), 60_000); console.log('armed')",
        "setInterval(() => {}, 0); console.log('armed')",
    ] {
        let started = Instant::now();
        let r = run(&e, code, 500).await;
        let took = started.elapsed();
        assert_eq!(
            (text(&r.stdout), r.exit_code, r.timed_out),
            ("armed\n", 124, true),
            "{code}"
        );
        assert!(took < Duration::from_millis(1_500), "{code}: took {took:?}");
    }
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = e
        .run(
            &Caller::anonymous(),
            js("setTimeout(() => {}, 60_000)", 20_000),
            cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled);
    assert!(started.elapsed() < Duration::from_millis(1_000));
}

#[tokio::test]
async fn concurrent_runs_do_not_share_state() {
    let e = engine(None).await;
    let runs = (0..8).map(|i| {
        let e = e.clone();
        tokio::spawn(async move {
            let code = format!(
                "globalThis.me = {i}; for (let k = 0; k < 1e5; k++); console.log(globalThis.me)"
            );
            run(&e, &code, 5_000).await
        })
    });
    for (i, r) in runs.enumerate() {
        assert_eq!(text(&r.await.unwrap().stdout), format!("{i}\n"));
    }
}
