//! The hosted providers against the real services, with an operator's own
//! credentials: never in CI (they cost money and need accounts), run by
//! `scripts/live.sh <e2b|dockercloud|openshell>`, which refuses to start
//! without that provider's variables. Each test reads the whole
//! configuration from the process environment exactly as plimsolld does
//! (`SANDBOX_PROVIDER` must name the provider under test), starts an engine
//! (the startup proof against the real service), runs a snippet and a
//! project at the provider's tier with their records verified, refuses a
//! floor above it, shuts down, and checks that a second instance's reconcile
//! finds nothing of the first left. Anything wrong fails the test: a
//! configured live test never skips.
//!
//! The variables: `docs/providers/<name>.md`; `PLIMSOLL_LIVE=<name>` marks
//! the run as deliberate.
#![cfg(all(feature = "e2b", feature = "dockercloud", feature = "openshell"))]
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

use plimsoll_core::Isolation;
use plimsoll_core::client::Runner;
use plimsoll_core::config::Config;
use plimsoll_core::engine::Engine;
use plimsoll_core::env::Env;
use plimsoll_core::request::{JavaScriptRun, Payload, ProjectFile, ProjectRun, Request};
use plimsoll_core::result::{Output, ProjectOutcome};
use tokio_util::sync::CancellationToken;

/// The configuration for `provider` from the process environment; panics
/// (fails) when the run was not asked for or the variables are wrong.
fn configured(provider: &str) -> Config {
    assert_eq!(
        std::env::var("PLIMSOLL_LIVE").as_deref(),
        Ok(provider),
        "run the live tests through scripts/live.sh {provider}"
    );
    let get = |k: &str| std::env::var(k).ok();
    let mut config = Config::from_env(&Env::new(&get))
        .unwrap_or_else(|e| panic!("the {provider} live configuration: {e}"));
    assert_eq!(config.provider.name(), provider, "SANDBOX_PROVIDER");
    config.instance = format!(
        "plimsoll-live:{provider}-{}",
        hex::encode(rand::random::<[u8; 4]>())
    );
    config
}

async fn live(provider: &str, tier: Isolation) {
    let config = configured(provider);
    let engine = Engine::start(&config)
        .await
        .unwrap_or_else(|e| panic!("{provider}: startup against the real service: {e}"));
    let r = Runner::from_engine(engine.clone());

    let mut req = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "console.log(6 * 7)".into(),
        grant_profile: String::new(),
    }));
    req.envelope.timeout_ms = 60_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    assert_eq!(resp.evidence.isolation, tier.as_str());
    let Some(Output::JavaScript(j)) = resp.output else {
        panic!("not a snippet result")
    };
    assert_eq!((j.stdout.as_slice(), j.exit_code), (b"42\n".as_slice(), 0));

    let mut req = Request::new(Payload::Project(ProjectRun {
        files: vec![ProjectFile {
            path: "main.js".into(),
            content: "require('fs').writeFileSync('out.txt', '42\\n')".into(),
        }],
        steps: vec!["node main.js".into(), "cat out.txt".into()],
        artifacts: vec!["out.txt".into()],
        ..ProjectRun::default()
    }));
    req.envelope.timeout_ms = 120_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::Project(p)) = resp.output else {
        panic!("not a project result")
    };
    assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
    assert_eq!(p.steps[1].stdout, b"42\n");
    assert_eq!(p.artifacts.len(), 1);

    engine.shutdown().await;
    // The same instance, started again: nothing of the first is left to reap.
    let again = config.build_provider().unwrap();
    assert_eq!(again.reconcile_orphans().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs E2B credentials: scripts/live.sh e2b"]
async fn e2b_against_the_real_service() {
    live("e2b", Isolation::Vm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Docker Cloud credentials: scripts/live.sh dockercloud"]
async fn dockercloud_against_the_real_service() {
    live("dockercloud", Isolation::Vm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs an OpenShell gateway and its client bundle: scripts/live.sh openshell"]
async fn openshell_against_the_real_service() {
    live("openshell", Isolation::Container).await;
}
