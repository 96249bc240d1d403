//! A project's steps on a hosted sandbox, one after another until one fails
//! or the run's deadline: the loop and the outcome every hosted provider
//! reports alike, over each provider's own way of running one step
//! ([`Steps`]).

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::Result;
use crate::result::{ProjectOutcome, ProjectResult, StepResult};

/// How one step ended, as the provider ran it.
pub(crate) struct StepEnd {
    /// Its result (the loop fills in `command`).
    pub result: StepResult,
    /// Why the provider stopped it, where that is neither its own exit nor
    /// the deadline (completes "step N …").
    pub stopped: Option<String>,
}

/// A provider's way to run one step (`sh -c <step>` in the project
/// directory, as the guest) by a deadline.
#[async_trait]
pub(crate) trait Steps: Send + Sync {
    /// Runs `step` until `deadline`.
    async fn step(&self, step: &str, deadline: Instant) -> Result<StepEnd>;
}

/// Runs `steps` in order until one fails, is stopped, or is still running
/// at `deadline` (the run's budget is `budget_ms`); no artifacts.
pub(crate) async fn run(
    runner: &dyn Steps,
    steps: &[String],
    deadline: Instant,
    budget_ms: u128,
) -> Result<ProjectResult> {
    let mut result = ProjectResult {
        outcome: ProjectOutcome::Completed,
        ..ProjectResult::default()
    };
    for (i, step) in steps.iter().enumerate() {
        let n = i + 1;
        let StepEnd {
            result: mut r,
            stopped,
        } = runner.step(step, deadline).await?;
        r.command = step.clone();
        let (timed_out, code) = (r.timed_out, r.exit_code);
        result.steps.push(r);
        if timed_out {
            result.outcome = ProjectOutcome::TimedOut;
            result.outcome_detail =
                format!("step {n} was still running at the run's deadline of {budget_ms} ms");
            break;
        }
        if let Some(why) = stopped {
            result.outcome_detail = format!("step {n} {why}");
            break;
        }
        if code != 0 {
            result.outcome_detail = format!("step {n} exited with code {code}");
            break;
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps whose exit is their text's number; "stop" is stopped, "slow" times out.
    struct Scripted;

    #[async_trait]
    impl Steps for Scripted {
        async fn step(&self, step: &str, _deadline: Instant) -> Result<StepEnd> {
            let mut r = StepResult::default();
            let mut stopped = None;
            match step {
                "slow" => {
                    r.exit_code = 124;
                    r.timed_out = true;
                }
                "stop" => {
                    r.exit_code = 153;
                    stopped = Some("was killed".into());
                }
                n => r.exit_code = n.parse().unwrap_or(99),
            }
            Ok(StepEnd { result: r, stopped })
        }
    }

    async fn outcome(steps: &[&str]) -> (ProjectOutcome, String, usize) {
        let steps: Vec<String> = steps.iter().map(|s| (*s).to_owned()).collect();
        let r = run(&Scripted, &steps, Instant::now(), 5000).await.unwrap();
        (r.outcome, r.outcome_detail, r.steps.len())
    }

    #[tokio::test]
    async fn the_first_failure_stops_the_run_and_says_which_step() {
        assert_eq!(
            outcome(&["0", "0"]).await,
            (ProjectOutcome::Completed, String::new(), 2)
        );
        assert_eq!(
            outcome(&["0", "4", "0"]).await,
            (
                ProjectOutcome::Completed,
                "step 2 exited with code 4".into(),
                2
            )
        );
        assert_eq!(
            outcome(&["slow", "0"]).await,
            (
                ProjectOutcome::TimedOut,
                "step 1 was still running at the run's deadline of 5000 ms".into(),
                1
            )
        );
        assert_eq!(
            outcome(&["0", "stop", "0"]).await,
            (ProjectOutcome::Completed, "step 2 was killed".into(), 2)
        );
    }
}
