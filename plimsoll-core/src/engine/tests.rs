//! Engine ordering: every refusal happens before the provider sees anything.

use super::*;
use crate::error::{ErrorCode, Refusal};
use crate::provider::{self, RunContext};
use crate::request::Payload;
use crate::request::{
    CellRun, Envelope, JavaScriptRun, ModuleRow, ModuleRun, ProjectRun, SoftwareRule,
};
use crate::result::JavaScriptResult;
use crate::result::Output;
use crate::verify::check_single;
use async_trait::async_trait;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A provider that records what reached it and echoes the code it was given.
struct Echo {
    tier: Isolation,
    calls: AtomicUsize,
    last_timeout: std::sync::Mutex<Duration>,
}

#[async_trait]
impl Provider for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn isolation(&self) -> Isolation {
        self.tier
    }
    fn environments(&self) -> provider::Environments {
        provider::Environments {
            javascript: Some(Environment {
                identity: "echo-image:sha256:00".into(),
                software_identity: "echo:1".into(),
                default_timeout_ms: 5_000,
                max_timeout_ms: 30_000,
                languages: vec!["javascript".into()],
                runtimes: Vec::new(),
            }),
            ..Default::default()
        }
    }
    async fn prove(&self) -> Result<Isolation> {
        Ok(self.tier)
    }
    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.last_timeout.lock().unwrap() = ctx.timeout;
        Ok(JavaScriptResult {
            stdout: job.code.clone().into_bytes(),
            exit_code: 3,
            ..Default::default()
        })
    }
}

async fn engine(tier: Isolation) -> (Engine, Arc<Echo>) {
    let echo = Arc::new(Echo {
        tier,
        calls: AtomicUsize::new(0),
        last_timeout: Default::default(),
    });
    let config = Config {
        instance: "plimsoll:test".into(),
        ..Config::default()
    };
    (
        Engine::with_provider(echo.clone(), &config).await.unwrap(),
        echo,
    )
}

fn js(code: &str) -> Request {
    Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        grant_profile: String::new(),
    }))
}

fn with(mut r: Request, f: impl FnOnce(&mut Envelope)) -> Request {
    f(&mut r.envelope);
    r
}

async fn refusal(e: &Engine, r: Request) -> Error {
    e.run(&Caller::anonymous(), r, CancellationToken::new())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_run_is_recorded_and_verifies() {
    let (e, echo) = engine(Isolation::Container).await;
    let r = with(js("hello"), |env| {
        env.minimum_isolation = "container".into()
    });
    let resp = e
        .run(&Caller::anonymous(), r.clone(), CancellationToken::new())
        .await
        .unwrap();
    check_single(&r, &resp).unwrap();
    let rec = resp.record.as_ref().unwrap();
    assert!(rec.ended_unix_ms >= rec.started_unix_ms);
    assert_eq!(rec.instance, "plimsoll:test");
    assert_eq!(echo.calls.load(Ordering::SeqCst), 1);
    // A non-zero exit is a result, not an error.
    assert!(matches!(resp.output, Some(Output::JavaScript(ref j)) if j.exit_code == 3));
    assert_eq!(*echo.last_timeout.lock().unwrap(), Duration::from_secs(5));
}

#[tokio::test]
async fn refusals_happen_before_dispatch() {
    let (e, echo) = engine(Isolation::Container).await;
    let cases: Vec<(Request, ErrorCode, Refusal)> = vec![
        (
            with(js("x"), |env| env.protocol = 0),
            ErrorCode::ProtocolMissing,
            Refusal::Protocol,
        ),
        (
            with(js("x"), |env| env.protocol = 5),
            ErrorCode::ProtocolMismatch,
            Refusal::Protocol,
        ),
        (js(""), ErrorCode::InvalidRequest, Refusal::Request),
        (
            with(js("x"), |env| env.minimum_isolation = "none".into()),
            ErrorCode::InvalidRequest,
            Refusal::Request,
        ),
        (
            with(js("x"), |env| env.timeout_ms = -1),
            ErrorCode::InvalidRequest,
            Refusal::Request,
        ),
        (
            with(js("x"), |env| env.minimum_isolation = "kernel".into()),
            ErrorCode::InsufficientIsolation,
            Refusal::Isolation,
        ),
        (
            with(js("x"), |env| {
                env.software_rule = Some(SoftwareRule {
                    mode: "exact".into(),
                    identities: vec!["other:1".into()],
                })
            }),
            ErrorCode::SoftwareMismatch,
            Refusal::Environment,
        ),
        (
            Request::new(Payload::Cell(CellRun {
                language: "python".into(),
                code: "1".into(),
                files: vec![],
            })),
            ErrorCode::InvalidRequest,
            Refusal::Request,
        ),
        (
            Request::new(Payload::Project(ProjectRun {
                steps: vec!["true".into()],
                ..Default::default()
            })),
            ErrorCode::Unsupported,
            Refusal::Unsupported,
        ),
        (
            Request::new(Payload::Module(ModuleRun {
                model: "m".into(),
                rows: vec![ModuleRow { values: vec![1.0] }],
                end_time: 1.0,
                step: 0.5,
            })),
            ErrorCode::Unsupported,
            Refusal::Unsupported,
        ),
        (
            Request::new(Payload::JavaScript(JavaScriptRun {
                code: "x".into(),
                grant_profile: "github".into(),
            })),
            ErrorCode::PermissionDenied,
            Refusal::Permission,
        ),
    ];
    for (r, code, reason) in cases {
        let err = refusal(&e, r).await;
        assert_eq!(
            (err.code(), err.not_dispatched()),
            (code, Some(reason)),
            "{err}"
        );
    }
    assert_eq!(
        echo.calls.load(Ordering::SeqCst),
        0,
        "a refused request reached the provider"
    );
}

#[tokio::test]
async fn timeouts_are_clamped_and_rules_can_pass() {
    let (e, echo) = engine(Isolation::Kernel).await;
    let r = with(js("x"), |env| {
        env.timeout_ms = 3_600_000;
        env.software_rule = Some(SoftwareRule {
            mode: "exact".into(),
            identities: vec!["echo:1".into()],
        });
    });
    let resp = e
        .run(&Caller::anonymous(), r.clone(), CancellationToken::new())
        .await
        .unwrap();
    check_single(&r, &resp).unwrap();
    assert_eq!(resp.record.unwrap().software_rule_id, "exact:echo:1");
    assert_eq!(*echo.last_timeout.lock().unwrap(), Duration::from_secs(30));
}

#[tokio::test]
async fn disabled_refuses_everything_and_minimum_is_enforced() {
    let config = Config::default();
    let e = Engine::start(&config).await.unwrap();
    assert_eq!(e.isolation(), Isolation::None);
    let err = refusal(&e, js("1")).await;
    assert_eq!(
        (err.code(), err.not_dispatched()),
        (ErrorCode::Disabled, Some(Refusal::Unsupported))
    );
    let err = refusal(
        &e,
        with(js("1"), |env| env.minimum_isolation = "process".into()),
    )
    .await;
    assert_eq!(err.code(), ErrorCode::InsufficientIsolation);
    let d = e.describe();
    assert_eq!(
        (d.sandbox.as_str(), d.isolation.as_str(), d.protocol),
        ("disabled", "none", 4)
    );
    assert!(!d.supports_project);

    let config = Config {
        min_isolation: Floor::parse("process").unwrap(),
        ..Config::default()
    };
    assert!(matches!(
        Engine::start(&config).await,
        Err(StartError::BelowMinimum { .. })
    ));
}

/// A startup error keeps its cause: the proof's error and the configuration
/// error are each the `source()` of the error that reports them.
#[test]
fn start_errors_keep_their_cause() {
    use std::error::Error as _;
    let proof = StartError::Proof(Error::infrastructure("dockerd is not reachable"));
    let cause = proof.source().and_then(|c| c.downcast_ref::<Error>());
    assert_eq!(cause.map(Error::code), Some(ErrorCode::Infrastructure));
    assert!(
        proof.to_string().contains("dockerd is not reachable"),
        "{proof}"
    );
    let config = StartError::Config(ConfigError::new("SANDBOX_PROVIDER", "\"nope\" is unknown"));
    let cause = config
        .source()
        .and_then(|c| c.downcast_ref::<ConfigError>());
    assert_eq!(cause.map(|c| c.variable), Some("SANDBOX_PROVIDER"));
}

/// A provider whose behaviour the snippet picks: block until released, fail,
/// refuse after dispatch, or panic.
struct Gate {
    release: tokio::sync::Semaphore,
}

#[async_trait]
impl Provider for Gate {
    fn name(&self) -> &'static str {
        "gate"
    }
    fn isolation(&self) -> Isolation {
        Isolation::Container
    }
    fn environments(&self) -> provider::Environments {
        provider::Environments {
            javascript: Some(Environment {
                default_timeout_ms: 5_000,
                max_timeout_ms: 30_000,
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    async fn prove(&self) -> Result<Isolation> {
        Ok(Isolation::Container)
    }
    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        _ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        match job.code.as_str() {
            "block" => {
                let _p = self.release.acquire().await.unwrap();
                Ok(JavaScriptResult::default())
            }
            "fail" => Err(Error::infrastructure("the container daemon went away")),
            "refuse" => Err(Error::unsupported("not today")),
            "panic" => panic!("provider bug"),
            _ => Ok(JavaScriptResult::default()),
        }
    }
}

async fn gated(limits: crate::admission::Limits) -> (Engine, Arc<Gate>) {
    let gate = Arc::new(Gate {
        release: tokio::sync::Semaphore::new(0),
    });
    let config = Config {
        admission: limits,
        ..Config::default()
    };
    (
        Engine::with_provider(gate.clone(), &config).await.unwrap(),
        gate,
    )
}

fn limits(max: u32, memory: Option<(u32, u32)>, per_key: u32) -> crate::admission::Limits {
    crate::admission::Limits {
        max_concurrent: max,
        memory,
        per_key_concurrent: per_key,
        rate_per_min: 0,
        rate_burst: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_at_once_admit_the_smaller_of_two_numbers() {
    for (memory, admitted) in [(Some((1024, 256)), 4usize), (None, 8usize)] {
        let (e, gate) = gated(limits(8, memory, 8)).await;
        let mut runs = Vec::new();
        for _ in 0..12 {
            let e = e.clone();
            runs.push(tokio::spawn(async move {
                e.run(&Caller::anonymous(), js("block"), CancellationToken::new())
                    .await
            }));
        }
        // Wait until every run has either taken a slot or been shed.
        while e.stats().in_flight as usize + e.stats().shed[0].1 as usize != 12 {
            tokio::task::yield_now().await;
        }
        gate.release.add_permits(12);
        let mut ok = 0;
        for r in runs {
            match r.await.unwrap() {
                Ok(_) => ok += 1,
                Err(err) => assert_eq!(
                    (err.code(), err.not_dispatched()),
                    (ErrorCode::AtCapacity, Some(Refusal::Capacity))
                ),
            }
        }
        assert_eq!(ok, admitted);
        assert_eq!(e.stats().in_flight, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_path_out_releases_the_slot() {
    let (e, gate) = gated(limits(1, None, 1)).await;
    // A result, a refusal after dispatch, an infrastructure error.
    assert!(
        e.run(&Caller::anonymous(), js("ok"), CancellationToken::new())
            .await
            .is_ok()
    );
    assert_eq!(
        refusal(&e, js("refuse")).await.code(),
        ErrorCode::Unsupported
    );
    let err = refusal(&e, js("fail")).await;
    assert_eq!(
        (err.code(), err.not_dispatched()),
        (ErrorCode::Infrastructure, None)
    );
    assert_eq!(e.stats().failed, 1);
    // A dropped future (a client that disconnected).
    let blocked = tokio::spawn({
        let e = e.clone();
        async move {
            e.run(&Caller::anonymous(), js("block"), CancellationToken::new())
                .await
        }
    });
    while e.stats().in_flight == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(refusal(&e, js("ok")).await.code(), ErrorCode::AtCapacity);
    blocked.abort();
    assert!(blocked.await.unwrap_err().is_cancelled());
    assert_eq!(e.stats().in_flight, 0);
    // A panic inside the provider.
    let panicked = tokio::spawn({
        let e = e.clone();
        async move {
            e.run(&Caller::anonymous(), js("panic"), CancellationToken::new())
                .await
        }
    });
    assert!(panicked.await.unwrap_err().is_panic());
    assert_eq!(e.stats().in_flight, 0);
    assert!(
        e.run(&Caller::anonymous(), js("ok"), CancellationToken::new())
            .await
            .is_ok()
    );
    drop(gate);
}

#[tokio::test]
async fn metrics_time_dispatched_runs_by_kind_and_outcome_only() {
    use crate::metrics::{RunKind, RunOutcome};
    let (e, _) = engine(Isolation::Container).await;
    // Echo exits 3: an answer whose guest failed.
    e.run(&Caller::anonymous(), js("x"), CancellationToken::new())
        .await
        .unwrap();
    // Refused before dispatch: never timed.
    refusal(&e, with(js("x"), |env| env.minimum_isolation = "vm".into())).await;
    assert!(e.ready().await.is_ok());
    let m = e.metrics();
    assert_eq!(
        (m.provider, m.tier, m.ready),
        ("echo", "container", Some(true))
    );
    let counted: Vec<_> = m
        .durations
        .iter()
        .filter(|(_, _, h)| h.count > 0)
        .map(|(k, o, h)| (*k, *o, h.count))
        .collect();
    assert_eq!(counted, [(RunKind::Snippet, RunOutcome::GuestFailed, 1)]);
    assert_eq!(m.stats.runs, 1);
    assert_eq!(m.sessions.open, 0);
    assert_eq!(m.pool, crate::metrics::PoolStats::default());
}
