//! Docker sessions against the real local dockerd, under both runc and runsc.
//! Docker unreachable, or either runtime unregistered, fails these tests:
//! they never skip.
#![cfg(feature = "docker")]
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

mod support;

use std::sync::Arc;
use std::time::Instant;

use plimsoll_core::config::{Config, DockerRuntime, DockerSettings};
use plimsoll_core::engine::{Caller, Engine};
use plimsoll_core::error::SessionEnd;
use plimsoll_core::provider::Chosen;
use plimsoll_core::provider::docker::DockerProvider;
use plimsoll_core::request::PROTOCOL;
use plimsoll_core::request::{
    CellRun, Envelope, JavaScriptRun, Payload, ProjectFile, ProjectRun, Request,
};
use plimsoll_core::result::{CellResult, JavaScriptResult, Output, ProjectOutcome, ProjectResult};
use plimsoll_core::session::SessionSettings;
use plimsoll_core::verify::Chain;
use plimsoll_core::wire::{OpenSessionRequest, SessionRunResponse};
use plimsoll_core::{Error, ErrorCode};
use tokio_util::sync::CancellationToken;

const RUNTIMES: [DockerRuntime; 2] = [DockerRuntime::Runc, DockerRuntime::Runsc];

fn config(rt: DockerRuntime) -> Config {
    let docker = DockerSettings {
        runtime: rt,
        runtime_name: rt.as_str().into(),
        ..DockerSettings::default()
    };
    Config {
        provider: Chosen::new(docker),
        instance: format!(
            "plimsoll-test:sessions-{}-{}",
            rt.as_str(),
            hex::encode(rand::random::<[u8; 4]>())
        ),
        sessions: SessionSettings {
            max_sessions: 4,
            max_per_caller: 4,
            ..SessionSettings::default()
        },
        ..Config::default()
    }
}

async fn start(rt: DockerRuntime) -> Engine {
    start_with(config(rt)).await.0
}

async fn start_with(config: Config) -> (Engine, Arc<DockerProvider>) {
    let provider = Arc::new(support::docker_provider(&config).unwrap());
    let engine = Engine::with_provider(provider.clone(), &config)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "engine start under {}: {e}",
                support::docker_of(&config).runtime_name
            )
        });
    (engine, provider)
}

fn caller() -> Caller {
    Caller {
        principal: "alice".into(),
    }
}

fn envelope(timeout_ms: i32) -> Envelope {
    Envelope {
        minimum_isolation: "container".into(),
        timeout_ms,
        ..Envelope::new()
    }
}

fn req(payload: Payload, timeout_ms: i32) -> Request {
    let mut r = Request::new(payload);
    r.envelope = envelope(timeout_ms);
    r
}

fn js(code: &str) -> Request {
    req(
        Payload::JavaScript(JavaScriptRun {
            code: code.into(),
            grant_profile: String::new(),
        }),
        10_000,
    )
}

fn project(steps: &[&str], files: &[(&str, &str)]) -> Request {
    req(
        Payload::Project(ProjectRun {
            files: files
                .iter()
                .map(|(p, c)| ProjectFile {
                    path: (*p).into(),
                    content: (*c).into(),
                })
                .collect(),
            steps: steps.iter().map(|s| (*s).to_string()).collect(),
            ..ProjectRun::default()
        }),
        20_000,
    )
}

fn cell(language: &str, code: &str, files: &[(&str, &str)], timeout_ms: i32) -> Request {
    req(
        Payload::Cell(CellRun {
            language: language.into(),
            code: code.into(),
            files: files
                .iter()
                .map(|(p, c)| ProjectFile {
                    path: (*p).into(),
                    content: (*c).into(),
                })
                .collect(),
        }),
        timeout_ms,
    )
}

struct Session<'a> {
    engine: &'a Engine,
    id: String,
    chain: Chain,
}

impl Session<'_> {
    async fn open<'e>(engine: &'e Engine, languages: &[&str]) -> Session<'e> {
        let open = engine
            .open_session(
                &caller(),
                &OpenSessionRequest {
                    protocol: PROTOCOL,
                    minimum_isolation: "container".into(),
                    languages: languages.iter().map(|l| (*l).to_string()).collect(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        Session {
            engine,
            chain: Chain::new(&open.session_id),
            id: open.session_id,
        }
    }

    async fn call(&mut self, r: Request) -> Result<SessionRunResponse, Error> {
        let answer = self
            .engine
            .session_run(&caller(), &self.id, r.clone(), CancellationToken::new())
            .await?;
        if let Some(run) = &answer.run {
            self.chain.check_call(&r, run).unwrap();
        }
        Ok(answer)
    }

    async fn js(&mut self, code: &str) -> JavaScriptResult {
        match self.call(js(code)).await.unwrap().run.unwrap().output {
            Some(Output::JavaScript(j)) => j,
            o => panic!("{o:?}"),
        }
    }

    async fn project(&mut self, steps: &[&str], files: &[(&str, &str)]) -> ProjectResult {
        match self
            .call(project(steps, files))
            .await
            .unwrap()
            .run
            .unwrap()
            .output
        {
            Some(Output::Project(p)) => p,
            o => panic!("{o:?}"),
        }
    }

    async fn cell(&mut self, lang: &str, code: &str, files: &[(&str, &str)], t: i32) -> CellResult {
        match self
            .call(cell(lang, code, files, t))
            .await
            .unwrap()
            .run
            .unwrap()
            .output
        {
            Some(Output::Cell(c)) => c,
            o => panic!("{o:?}"),
        }
    }

    async fn close(self) {
        let close = self
            .engine
            .close_session(&caller(), PROTOCOL, &self.id)
            .await
            .unwrap();
        self.chain
            .check_close(&close.session, close.calls, &close.last_record_sha256)
            .unwrap();
        assert_eq!(close.ended, SessionEnd::Closed);
    }

    fn fingerprint(&self) -> String {
        self.chain.fingerprint().to_string()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Snippets as people write them today, none of which ran on the Node 18
/// images: Web Crypto, `structuredClone`, `Array.prototype.toSorted`,
/// `Object.groupBy`. The same text is a snippet and a cell (a cell awaits the
/// promise its last expression gives).
const TODAYS_JS: &str = r#"(async () => {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode('abc'));
  const copy = structuredClone({ when: new Date(0), big: [1n], map: new Map([[1, 'a']]) });
  console.log(JSON.stringify({
    uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
    random: crypto.getRandomValues(new Uint8Array(8)).length,
    sha256: Buffer.from(digest).toString('hex'),
    copy: [copy.when.toISOString(), typeof copy.big[0], copy.map.get(1)],
    sorted: [5, 1, 4].toSorted(),
    grouped: Object.groupBy([1, 2, 3], (x) => (x % 2 ? 'odd' : 'even')),
  }));
})()"#;
const TODAYS_JS_OUT: &str = concat!(
    r#"{"uuid":true,"random":8,"#,
    r#""sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad","#,
    r#""copy":["1970-01-01T00:00:00.000Z","bigint","a"],"sorted":[1,4,5],"#,
    r#""grouped":{"odd":[1,3],"even":[2]}}"#,
    "\n"
);

/// The version in a Describe runtime entry `INTERPRETER VERSION`, split
/// into numbers.
fn version_of(runtimes: &[String], interpreter: &str) -> (String, Vec<u32>) {
    let v = runtimes
        .iter()
        .find_map(|r| r.strip_prefix(interpreter)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {interpreter} in {runtimes:?}"))
        .to_owned();
    let parts = v.split('.').map(|n| n.parse().unwrap()).collect();
    (v, parts)
}

/// The images carry maintained interpreters (Node 22 or later, Python 3.12
/// or later) and Describe names their exact versions, which every path —
/// snippet, project step, session cell — then runs; today's JavaScript works
/// as a snippet and as a cell.
async fn check_current_runtimes(engine: &Engine, name: &str) {
    let d = engine.describe();
    let snippet = d.javascript_environment.unwrap().runtimes;
    let projects = d.project_environment.unwrap().runtimes;
    let session = d.session_environment.unwrap().runtimes;
    let (node, n) = version_of(&projects, "node");
    let (python, p) = version_of(&projects, "python");
    assert!(n[0] >= 22, "[{name}] node {node} is past its end of life");
    assert!(
        p[..2] >= [3, 12][..],
        "[{name}] python {python} is older than 3.12"
    );
    assert_eq!(snippet, [format!("node {node}")], "[{name}]");
    assert_eq!(
        projects,
        [format!("node {node}"), format!("python {python}")]
    );
    assert_eq!(session, projects, "[{name}] sessions run the project image");

    for code in [TODAYS_JS, "console.log(process.versions.node)"] {
        let r = match engine
            .run(&caller(), js(code), CancellationToken::new())
            .await
            .unwrap()
            .output
        {
            Some(Output::JavaScript(r)) => r,
            o => panic!("{o:?}"),
        };
        let want = if code == TODAYS_JS {
            TODAYS_JS_OUT.to_owned()
        } else {
            format!("{node}\n")
        };
        assert_eq!(
            (text(&r.stdout), text(&r.stderr), r.exit_code),
            (want, String::new(), 0),
            "[{name}] snippet {code}"
        );
    }
    let steps = match engine
        .run(
            &caller(),
            project(&["node --version", "python3 --version"], &[]),
            CancellationToken::new(),
        )
        .await
        .unwrap()
        .output
    {
        Some(Output::Project(p)) => p.steps,
        o => panic!("{o:?}"),
    };
    let said: Vec<String> = steps.iter().map(|s| text(&s.stdout)).collect();
    assert_eq!(
        said,
        [format!("v{node}\n"), format!("Python {python}\n")],
        "[{name}]"
    );

    let mut s = Session::open(engine, &["javascript", "python"]).await;
    let cells = [
        ("javascript", TODAYS_JS, TODAYS_JS_OUT.to_owned()),
        ("javascript", "process.versions.node", format!("'{node}'\n")),
        (
            "python",
            "import platform\nplatform.python_version()",
            format!("'{python}'\n"),
        ),
    ];
    for (lang, code, want) in cells {
        let c = s.cell(lang, code, &[], 20_000).await;
        assert_eq!(
            (text(&c.stdout), text(&c.stderr)),
            (want, String::new()),
            "[{name}] {lang} cell {code}"
        );
    }
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_their_promises_under_runc_and_runsc() {
    for rt in RUNTIMES {
        let t = Instant::now();
        let engine = start(rt).await;
        let name = rt.as_str();
        eprintln!("[{name}] started in {:?}", t.elapsed());
        check_current_runtimes(&engine, name).await;

        // Interpreters started at open for the language hints: the first
        // cell each runs says it started fresh, the next does not.
        let mut h = Session::open(&engine, &["javascript", "python"]).await;
        for lang in ["javascript", "python"] {
            let first = h.cell(lang, "1 + 1", &[], 20_000).await;
            let second = h.cell(lang, "2 + 2", &[], 20_000).await;
            assert_eq!(
                (
                    text(&first.stdout),
                    first.interpreter_started,
                    text(&second.stdout),
                    second.interpreter_started
                ),
                ("2\n".into(), true, "4\n".into(), false),
                "[{name}] {lang} with a hint"
            );
        }
        h.close().await;

        // A chain: snippet, project, cell with files, cell using earlier state.
        let mut s = Session::open(&engine, &[]).await;
        let fp = s.fingerprint();
        assert_eq!(
            support::session_containers(&fp).await.len(),
            1,
            "[{name}] one container"
        );
        let j = s.js("console.log(6 * 7)").await;
        assert_eq!(
            (j.exit_code, text(&j.stdout)),
            (0, "42\n".into()),
            "[{name}]"
        );
        let p = s
            .project(
                &["cat in.txt > kept.txt", "cat kept.txt"],
                &[("in.txt", "hello")],
            )
            .await;
        assert_eq!(p.outcome, ProjectOutcome::Completed, "[{name}] {p:?}");
        assert_eq!(text(&p.steps[1].stdout), "hello", "[{name}]");
        let c = s
            .cell(
                "python",
                "x = 41\nopen('data.txt').read() + open('kept.txt').read()",
                &[("data.txt", "from-cell-")],
                20_000,
            )
            .await;
        assert_eq!(
            (c.exit_code, text(&c.stdout), c.interpreter_started),
            (0, "'from-cell-hello'\n".into(), true),
            "[{name}] {}",
            text(&c.stderr)
        );
        let c = s.cell("python", "x + 1", &[], 20_000).await;
        assert_eq!(
            (c.exit_code, text(&c.stdout), c.interpreter_started),
            (0, "42\n".into(), false),
            "[{name}] {}",
            text(&c.stderr)
        );
        let c = s.cell("python", "1/0", &[], 20_000).await;
        assert_eq!(c.exit_code, 1, "[{name}]");
        assert!(text(&c.stderr).contains("ZeroDivisionError"), "[{name}]");
        let c = s.cell("javascript", "var y = 41; y + 1", &[], 20_000).await;
        assert_eq!(
            (c.exit_code, text(&c.stdout)),
            (0, "42\n".into()),
            "[{name}] {}",
            text(&c.stderr)
        );
        let c = s
            .cell("javascript", "console.log('y is', y); y * 2", &[], 20_000)
            .await;
        assert_eq!(text(&c.stdout), "y is 41\n82\n", "[{name}]");

        // Background processes do not survive to the next call; the kernels do.
        let p = s
            .project(
                &[
                    "nohup sleep 300 >/dev/null 2>&1 &",
                    "setsid sleep 301 >/dev/null 2>&1 < /dev/null &",
                    "sh -c '(sleep 302 &) &' >/dev/null 2>&1",
                    "sleep 0.3; ps -eo args 2>/dev/null | grep -c '^sleep 30' || ls /proc | grep -c '^[0-9]'",
                ],
                &[],
            )
            .await;
        assert_eq!(p.outcome, ProjectOutcome::Completed, "[{name}] {p:?}");
        let j = s
            .js(
                r#"const fs = require('fs');
let n = 0;
for (const d of fs.readdirSync('/proc')) {
  if (!/^\d+$/.test(d)) continue;
  try { const c = fs.readFileSync('/proc/' + d + '/cmdline', 'utf8'); if (/^sleep\x0030[012]/.test(c)) n++; } catch (e) {}
}
console.log(n);"#,
            )
            .await;
        assert_eq!(text(&j.stdout), "0\n", "[{name}] leftover sleeps");
        let c = s.cell("python", "x", &[], 20_000).await;
        assert_eq!(
            text(&c.stdout),
            "41\n",
            "[{name}] the kernel survived cleanup"
        );

        // A cell deadline ends its interpreter; the next cell starts fresh.
        let c = s
            .cell("python", "import time\ntime.sleep(60)", &[], 1_500)
            .await;
        assert_eq!(
            (c.exit_code, c.timed_out, c.interpreter_ended),
            (124, true, true),
            "[{name}]"
        );
        let c = s.cell("python", "'x' in globals()", &[], 20_000).await;
        assert_eq!(
            (text(&c.stdout), c.interpreter_started),
            ("False\n".into(), true),
            "[{name}]"
        );

        // Files survive a pause and unpause (once the last call's cleanup,
        // which runs after its answer, is surely done).
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let id = support::session_containers(&fp).await.pop().unwrap();
        support::docker().pause_container(&id).await.unwrap();
        support::docker().unpause_container(&id).await.unwrap();
        let p = s.project(&["cat kept.txt"], &[]).await;
        assert_eq!(text(&p.steps[0].stdout), "hello", "[{name}] after pause");

        s.close().await;
        assert!(
            support::session_containers(&fp).await.is_empty(),
            "[{name}] removed at close"
        );

        // Tampering from the host ends the session: sandbox_changed.
        let mut s = Session::open(&engine, &["python"]).await;
        let fp = s.fingerprint();
        let c = s.cell("python", "1", &[], 20_000).await;
        assert!(
            c.interpreter_started,
            "[{name}] started at open from the hint, and fresh to its first cell"
        );
        let id = support::session_containers(&fp).await.pop().unwrap();
        let tampered = support::docker()
            .update_container(
                &id,
                bollard::models::ContainerUpdateBody {
                    pids_limit: Some(500),
                    ..Default::default()
                },
            )
            .await;
        let expected = match (rt, tampered) {
            (DockerRuntime::Runc, r) => {
                r.unwrap();
                SessionEnd::SandboxChanged
            }
            // runsc cannot change a running sandbox's limits, so docker refuses
            // the update; the session is unchanged. Killing its main process
            // from the host ends it instead.
            (DockerRuntime::Runsc, r) => {
                assert!(r.is_err(), "[{name}] runsc took a live update");
                let c = s.cell("python", "2", &[], 20_000).await;
                assert_eq!(text(&c.stdout), "2\n", "[{name}] unchanged session goes on");
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                support::docker()
                    .kill_container(&id, None::<bollard::query_parameters::KillContainerOptions>)
                    .await
                    .unwrap();
                SessionEnd::MainProcessEnded
            }
        };
        let err = s.call(js("1")).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::SessionEnded, "[{name}] {err}");
        assert_eq!(
            err.session_end().unwrap().reason,
            expected,
            "[{name}] {err}"
        );
        // A call on the ended session is refused with its reason.
        let err = s.call(js("1")).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::SessionEnded, "[{name}]");
        assert_eq!(err.session_end().unwrap().reason, expected);
        for _ in 0..50 {
            if support::session_containers(&fp).await.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(
            support::session_containers(&fp).await.is_empty(),
            "[{name}] removed when ended"
        );
        eprintln!("[{name}] done in {:?}", t.elapsed());
    }
}

async fn wait_pool(p: &DockerProvider, n: usize) {
    for _ in 0..300 {
        if p.pool_ready() == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the pool never reached {n} (has {})", p.pool_ready());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_pool_hands_each_member_to_one_session_and_refills() {
    for rt in RUNTIMES {
        let name = rt.as_str();
        let mut config = config(rt);
        config.sessions.pool = 1;
        let (engine, provider) = start_with(config).await;
        wait_pool(&provider, 1).await;
        let pooled = support::session_containers("pool").await.len();
        let t = Instant::now();
        let mut s = Session::open(&engine, &["python"]).await;
        let c = s.cell("python", "x = 41\nx + 1", &[], 20_000).await;
        eprintln!("[{name}] pooled open + first cell {:?}", t.elapsed());
        // A warm interpreter, started before the session opened, is still
        // fresh to the first cell it runs; the next cell sees its state.
        assert_eq!(
            (text(&c.stdout), c.interpreter_started),
            ("42\n".into(), true),
            "[{name}] the first cell of a warm interpreter"
        );
        let c = s.cell("python", "x", &[], 20_000).await;
        assert_eq!(
            (text(&c.stdout), c.interpreter_started),
            ("41\n".into(), false),
            "[{name}] the second cell"
        );
        // The pool refills in the background with a fresh member, warmed
        // for the hints of the latest opens (Python only now); an open
        // hinting another language still takes it and starts its kernel.
        wait_pool(&provider, 1).await;
        let mut js = Session::open(&engine, &["javascript"]).await;
        let c = js.cell("javascript", "6 * 7", &[], 20_000).await;
        assert_eq!(
            (text(&c.stdout), c.interpreter_started),
            ("42\n".into(), true),
            "[{name}] a member warmed for Python, taken for JavaScript"
        );
        js.close().await;
        wait_pool(&provider, 1).await;
        s.close().await;
        // The member used by the session is gone; the new one waits.
        for _ in 0..50 {
            if support::session_containers("pool").await.len() == pooled {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(
            support::session_containers("pool").await.len(),
            pooled,
            "[{name}]"
        );
        // Shutdown takes the waiting member along: nothing is left behind.
        engine.shutdown().await;
        assert_eq!(
            support::session_containers("pool").await.len(),
            pooled - 1,
            "[{name}] the pool's member outlived shutdown"
        );
    }
}

/// A cell that prints the warden's pid (or `none`) and every process still
/// alive that a call marked `plimsoll-leftover`.
const WARDEN_AND_LEFTOVERS: &str = r#"import os
warden, left = [], []
for d in os.listdir("/proc"):
    try:
        cmd = open("/proc/%s/cmdline" % d, "rb").read() if d.isdigit() else b""
    except OSError:
        continue
    if b"PR_SET_DUMPABLE" in cmd:
        warden.append(d)
    if b"plimsoll-leftover" in cmd:
        left.append(d)
print(" ".join(warden) or "none", "left:", *left)"#;

const LEAVE_A_LEFTOVER: &str = r#"import subprocess
subprocess.Popen(["plimsoll-leftover", "300"], executable="/bin/sleep", start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"#;

/// The sweep between calls goes through one warden for the session's life;
/// guest code that kills it only loses that fast path: the host sweeps with
/// fresh execs from then on and no leftover survives either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_warden_sweeps_between_calls_until_guest_code_kills_it() {
    for rt in RUNTIMES {
        let engine = start(rt).await;
        let name = rt.as_str();
        let mut s = Session::open(&engine, &["python"]).await;
        let seen = |c: CellResult| {
            assert_eq!(c.exit_code, 0, "[{name}] {}", text(&c.stderr));
            text(&c.stdout).trim().to_string()
        };
        let first = seen(s.cell("python", WARDEN_AND_LEFTOVERS, &[], 20_000).await);
        let warden = first
            .strip_suffix(" left:")
            .unwrap_or_else(|| panic!("{first}"));
        assert!(
            warden.parse::<u32>().is_ok(),
            "[{name}] one warden: {first}"
        );
        for _ in 0..3 {
            seen(s.cell("python", LEAVE_A_LEFTOVER, &[], 20_000).await);
            let now = seen(s.cell("python", WARDEN_AND_LEFTOVERS, &[], 20_000).await);
            assert_eq!(
                now,
                format!("{warden} left:"),
                "[{name}] same warden, no leftover"
            );
            // Steps run through the warden too: its children, swept the same.
            let p = s
                .project(
                    &["python3 leave.py", "echo $PPID"],
                    &[("leave.py", LEAVE_A_LEFTOVER)],
                )
                .await;
            assert_eq!(p.outcome, ProjectOutcome::Completed, "[{name}] {p:?}");
            assert_eq!(
                text(&p.steps[1].stdout).trim(),
                warden,
                "[{name}] run by the warden"
            );
            let now = seen(s.cell("python", WARDEN_AND_LEFTOVERS, &[], 20_000).await);
            assert_eq!(
                now,
                format!("{warden} left:"),
                "[{name}] no leftover of a step"
            );
        }
        // A step that kills the warden running it: the call still ends, typed.
        let p = s.project(&["python3 leave.py", "kill -9 $PPID"], &[]).await;
        assert_eq!(p.outcome, ProjectOutcome::RunnerFailed, "[{name}] {p:?}");
        assert!(
            p.outcome_detail
                .contains("step 2 killed or stopped the session's warden"),
            "[{name}] {p:?}"
        );
        let after = seen(s.cell("python", WARDEN_AND_LEFTOVERS, &[], 20_000).await);
        assert_eq!(
            after, "none left:",
            "[{name}] swept by execs once its step killed the warden"
        );
        s.close().await;
        let mut s = Session::open(&engine, &["python"]).await;
        let first = seen(s.cell("python", WARDEN_AND_LEFTOVERS, &[], 20_000).await);
        let warden = first
            .strip_suffix(" left:")
            .unwrap_or_else(|| panic!("{first}"));
        let kill = format!("import os\nos.kill({warden}, 9)\n{LEAVE_A_LEFTOVER}");
        seen(s.cell("python", &kill, &[], 20_000).await);
        let after = seen(s.cell("python", WARDEN_AND_LEFTOVERS, &[], 20_000).await);
        assert_eq!(
            after, "none left:",
            "[{name}] swept by execs once the warden died"
        );
        seen(s.cell("python", LEAVE_A_LEFTOVER, &[], 20_000).await);
        let again = seen(s.cell("python", WARDEN_AND_LEFTOVERS, &[], 20_000).await);
        assert_eq!(again, "none left:", "[{name}] and on every call after");
        s.close().await;
        engine.shutdown().await;
    }
}
