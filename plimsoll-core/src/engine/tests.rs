//! Engine ordering: every refusal happens before the provider sees anything.

use super::*;
use crate::error::Refusal;
use crate::request::{
    CellRun, Envelope, JavaScriptRun, ModuleRow, ModuleRun, ProjectRun, SoftwareRule,
};
use crate::result::JavaScriptResult;
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
