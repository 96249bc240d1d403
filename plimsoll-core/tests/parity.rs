//! The same JavaScript on every tier: each snippet of `tests/parity/corpus`
//! runs on the wasm tier, on docker under runc, and with the host `node` of
//! the snippet image's version (`images/node.sh`, the binary the image
//! carries), and its stdout, stderr and exit code are compared with Node's.
//!
//! `tests/parity/differences.txt` lists every disagreement the suite
//! tolerates, each `documented` (by design, with its reason, also in
//! docs/wasm.md) or `open` (work not done yet). A disagreement it does not
//! list fails the suite, and so does a listed one that no longer occurs, so
//! the list stays exact. The agreement rates are printed.
#![cfg(all(feature = "wasm", feature = "docker"))]
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures_util::StreamExt;
use plimsoll_core::config::{Config, DockerRuntime, DockerSettings, WasmSettings};
use plimsoll_core::engine::{Caller, Engine};
use plimsoll_core::provider::Chosen;
use plimsoll_core::request::{JavaScriptRun, Payload, Request};
use plimsoll_core::result::Output;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

/// A run's budget on every tier: the corpus's timers wait at most 50 ms.
const TIMEOUT_MS: i32 = 10_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What a snippet printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    stdout: String,
    stderr: String,
    exit: i32,
}

impl Seen {
    /// The fields in which `self` differs from `reference`.
    fn differs(&self, reference: &Seen) -> Vec<&'static str> {
        let mut d = Vec::new();
        if self.stdout != reference.stdout {
            d.push("stdout");
        }
        if self.stderr != reference.stderr {
            d.push("stderr");
        }
        if self.exit != reference.exit {
            d.push("exit");
        }
        d
    }
}

/// One line of `differences.txt`: `FILE TIER FIELDS KIND REASON…`.
#[derive(Debug)]
struct Listed {
    fields: Vec<String>,
    documented: bool,
}

fn differences() -> BTreeMap<(String, String), Listed> {
    let text = std::fs::read_to_string(root().join("tests/parity/differences.txt")).unwrap();
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.splitn(5, char::is_whitespace).collect();
        let [file, tier, fields, kind, reason] = parts[..] else {
            panic!(
                "differences.txt:{}: want FILE TIER FIELDS KIND REASON",
                n + 1
            )
        };
        assert!(
            matches!(tier, "wasm" | "docker"),
            "differences.txt:{}: tier {tier:?}",
            n + 1
        );
        assert!(
            matches!(kind, "documented" | "open") && !reason.trim().is_empty(),
            "differences.txt:{}: kind {kind:?} and a reason",
            n + 1
        );
        let listed = Listed {
            fields: fields.split(',').map(str::to_owned).collect(),
            documented: kind == "documented",
        };
        assert!(
            out.insert((file.to_owned(), tier.to_owned()), listed)
                .is_none(),
            "differences.txt:{}: {file} {tier} listed twice",
            n + 1
        );
    }
    out
}

fn target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// The host `node` of the pinned version, from `images/node.sh`.
fn reference_node() -> PathBuf {
    let dir = target().join("parity-node");
    let out = std::process::Command::new("bash")
        .arg(root().join("images/node.sh"))
        .arg("bin")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "images/node.sh bin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Runs `code` as the snippet image runs it: `node -`, the code on stdin,
/// the image's environment, in an empty working directory.
async fn on_node(node: &Path, code: &str) -> Seen {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(node)
        .arg("-")
        .env_clear()
        .envs([
            ("HOME", "/tmp"),
            ("LANG", "C.UTF-8"),
            ("NODE_DISABLE_COLORS", "1"),
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(code.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the reference node ends within 30 s")
        .unwrap();
    Seen {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        exit: out.status.code().unwrap_or(-1),
    }
}

async fn on_engine(engine: &Engine, code: &str) -> Seen {
    let mut request = Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        ..JavaScriptRun::default()
    }));
    request.envelope.timeout_ms = TIMEOUT_MS;
    let response = engine
        .run(&Caller::anonymous(), request, CancellationToken::new())
        .await
        .unwrap();
    let Some(Output::JavaScript(r)) = response.output else {
        panic!("not a snippet result")
    };
    Seen {
        stdout: String::from_utf8_lossy(&r.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&r.stderr).into_owned(),
        exit: if r.timed_out { -2 } else { r.exit_code },
    }
}

/// `text` cut to its first 600 characters, for a failure message.
fn cut(text: &str) -> String {
    let mut s: String = text.chars().take(600).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_snippet_prints_the_same_on_every_tier_as_on_node() {
    let mut corpus: Vec<PathBuf> = std::fs::read_dir(root().join("tests/parity/corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .collect();
    corpus.sort();
    assert!(corpus.len() >= 150, "{} snippets", corpus.len());
    let listed = differences();

    let node = reference_node();
    // Every snippet from one caller: no rate limit.
    let unlimited = |c: Config| Config {
        admission: plimsoll_core::admission::Limits {
            rate_per_min: 0,
            ..c.admission
        },
        ..c
    };
    let wasm = Engine::start(&unlimited(Config {
        provider: Chosen::new(WasmSettings),
        instance: "plimsoll-test:parity-wasm".into(),
        ..Config::default()
    }))
    .await
    .unwrap();
    let config = unlimited(Config {
        provider: Chosen::new(DockerSettings {
            runtime: DockerRuntime::Runc,
            runtime_name: "runc".into(),
            ..DockerSettings::default()
        }),
        instance: format!(
            "plimsoll-test:parity-{}",
            hex::encode(rand::random::<[u8; 4]>())
        ),
        ..Config::default()
    });
    let docker = Engine::with_provider(
        std::sync::Arc::new(support::docker_provider(&config).unwrap()),
        &config,
    )
    .await
    .unwrap();
    // The reference is the image's own Node version.
    let version = on_node(&node, "console.log(process.versions.node)").await;
    let runtimes = docker.describe().javascript_environment.unwrap().runtimes;
    assert_eq!(
        runtimes,
        [format!("node {}", version.stdout.trim())],
        "the host reference must be the image's node"
    );

    let mut failures = Vec::new();
    let mut agree: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut documented, mut open) = (0, 0);
    let mut seen_entries = 0;
    // Node, wasm and docker run each snippet at once, two snippets at a
    // time: the suite waits mostly on docker, and the answers are judged in
    // corpus order below.
    let seen: Vec<(String, Seen, [Seen; 2])> = futures_util::stream::iter(&corpus)
        .map(|path| {
            let (node, wasm, docker) = (&node, &wasm, &docker);
            async move {
                let file = path.file_name().unwrap().to_string_lossy().into_owned();
                let code = std::fs::read_to_string(path).unwrap();
                let (reference, on_wasm, on_docker) = tokio::join!(
                    on_node(node, &code),
                    on_engine(wasm, &code),
                    on_engine(docker, &code)
                );
                (file, reference, [on_wasm, on_docker])
            }
        })
        .buffered(2)
        .collect()
        .await;
    for (file, reference, got) in seen {
        for (tier, got) in ["wasm", "docker"].into_iter().zip(got) {
            let differs = got.differs(&reference);
            let entry = listed.get(&(file.clone(), tier.to_owned()));
            seen_entries += usize::from(entry.is_some());
            if differs.is_empty() {
                *agree.entry(tier).or_default() += 1;
                if entry.is_some() {
                    failures.push(format!(
                        "{file} on {tier}: agrees with node now; remove its differences.txt line"
                    ));
                }
                continue;
            }
            match entry {
                Some(l) if l.fields == differs => {
                    if l.documented {
                        documented += 1;
                    } else {
                        open += 1;
                    }
                }
                _ => failures.push(format!(
                    "{file} on {tier}: {differs:?} differ{}\n  node:  {:?} exit {}\n         stderr {:?}\n  {tier}: {:?} exit {}\n         stderr {:?}",
                    entry.map_or(String::new(), |l| format!(" (listed: {:?})", l.fields)),
                    cut(&reference.stdout),
                    reference.exit,
                    cut(&reference.stderr),
                    cut(&got.stdout),
                    got.exit,
                    cut(&got.stderr),
                )),
            }
        }
    }
    let n = corpus.len();
    let rate = |tier| {
        let a = agree.get(tier).copied().unwrap_or(0);
        format!("{a}/{n} ({:.1} %)", 100.0 * a as f64 / n as f64)
    };
    let summary = format!(
        "parity ({n} snippets, node {}): wasm agrees on {}, docker (runc) on {}; differences listed: {documented} documented, {open} open",
        version.stdout.trim(),
        rate("wasm"),
        rate("docker"),
    );
    println!("{summary}");
    // scripts/test.sh prints it after the suite (cargo captures a passing test's output).
    std::fs::write(target().join("parity-summary.txt"), format!("{summary}\n")).unwrap();
    assert_eq!(
        seen_entries,
        listed.len(),
        "differences.txt names snippets that are not in the corpus"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    support::assert_none_left(&config.instance).await;
}
