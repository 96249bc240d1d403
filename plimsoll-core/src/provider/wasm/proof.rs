//! The wasm provider's startup proof: real snippets on the embedded guest,
//! judged before the daemon serves.
//!
//! Besides "the guest runs and sees no ambient globals" and "the host call
//! answers no grant", the proof runs the two limits the tier rests on, each
//! with a tiny budget so startup stays fast (tens of milliseconds in all):
//!
//! - a **memory bomb** under a cap a few MiB above the snapshot's own memory:
//!   it must fail with the guest's "out of memory" (exit 1) before its budget,
//!   and the instance's linear memory, read after the run, must be at the cap:
//!   not past it, and within half the room of it (so the cap, not something
//!   else, stopped the bomb);
//! - a **loop** (`while (true) {}`) with a [`SPIN_BUDGET`] deadline: it must
//!   end with exit 124 and `timed_out`, no sooner than its deadline and within
//!   [`DEADLINE_SLACK`] of it.
//!
//! The judgement ([`judge_limits`]) is a pure function over what the probes
//! returned, so a limit that does not hold is a startup error (the daemon
//! refuses to start) and the unit tests feed it outcomes that must fail.
//!
//! What it does not cover: the probes show the limits hold for these snippets
//! on this build, at the proof's own small cap and deadline; the configured
//! cap and the per-request deadline use the same limiter and epoch callback,
//! and are exercised at full size by the test suite, not at startup.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::guest::Compiled;
use super::run;
use crate::error::{Error, Result};

/// What the first proof runs execute, and what each must print.
pub const OUTPUT_PROOF: &[(&str, &str)] = &[
    ("console.log(6*7)", "42\n"),
    (
        "console.log([typeof require, typeof fetch, typeof std, typeof os, typeof WebAssembly, Object.keys(process.env).length].join())",
        "undefined,undefined,undefined,undefined,undefined,0\n",
    ),
    // The web globals reach their natives (UTF-8, the URL parser, Buffer's
    // encodings, the digest): a guest built without them fails here.
    (
        "crypto.subtle.digest('SHA-256', new TextEncoder().encode('abc')).then((d) => console.log(new TextDecoder().decode(new TextEncoder().encode('\\u00e9')), new URL('../b?x=1', 'http://h/a/c').href, Buffer.from('hi').toString('hex'), Buffer.from(d).toString('hex').slice(0, 16), structuredClone(new Map([[1, 2]])).get(1)))",
        "\u{e9} http://h/b?x=1 6869 ba7816bf8f01cfea 2\n",
    ),
];

/// Prints fresh randomness: run twice, the two lines must differ. The guest
/// is a snapshot; randomness drawn before it would repeat in every run.
pub const RANDOMNESS: &str = "console.log(crypto.randomUUID(), Math.random(), crypto.getRandomValues(new Uint32Array(2)).join('.'))";

/// Judges two runs of [`RANDOMNESS`]: each a v4 UUID, a number and two
/// integers, and no part the same in both (a chance of about 2^-64 of a
/// false refusal per part).
pub fn judge_randomness(first: &str, second: &str) -> std::result::Result<(), String> {
    let parts = |s: &str| -> Option<[String; 3]> {
        let p: Vec<&str> = s.trim_end().split(' ').collect();
        let [uuid, float, ints] = p.as_slice() else {
            return None;
        };
        let v4 = uuid.len() == 36 && uuid.as_bytes()[14] == b'4';
        (v4 && float.parse::<f64>().is_ok() && ints.split('.').all(|n| n.parse::<u32>().is_ok()))
            .then(|| [uuid.to_string(), float.to_string(), ints.to_string()])
    };
    let (Some(a), Some(b)) = (parts(first), parts(second)) else {
        return Err(format!(
            "the randomness probe printed {first:?} and {second:?}"
        ));
    };
    match a.iter().zip(&b).position(|(x, y)| x == y) {
        Some(i) => Err(format!(
            "two runs drew the same randomness ({:?}): it comes from the snapshot, not from each run",
            a[i]
        )),
        None => Ok(()),
    }
}

/// The memory bomb: allocates without end, in chunks small enough that it
/// fills the cap closely.
pub const BOMB: &str = "const a = []; while (true) a.push(new Array(1e4).fill(1))";
/// The proof cap's room above the snapshot's own memory, bytes.
pub const BOMB_ROOM: usize = 4 << 20;
/// The bomb's deadline: if the cap does not hold it runs (and grows) until
/// this, then the proof fails.
pub const BOMB_BUDGET: Duration = Duration::from_millis(1_000);
/// The loop.
pub const SPIN: &str = "while (true) {}";
/// The loop's deadline.
pub const SPIN_BUDGET: Duration = Duration::from_millis(20);
/// How late past its deadline the loop may stop (a loaded machine's scheduling).
pub const DEADLINE_SLACK: Duration = Duration::from_millis(1_000);

/// What one limit probe's run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The run's exit code.
    pub exit_code: i32,
    /// Whether the deadline ended it.
    pub timed_out: bool,
    /// Its standard error, as text.
    pub stderr: String,
    /// Wall-clock time from the call to the answer.
    pub took: Duration,
    /// The guest's linear-memory size after the run, bytes.
    pub memory_bytes: usize,
}

/// The limit probes' settings and outcomes, as [`judge_limits`] reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitProbes {
    /// The bomb's memory cap, bytes.
    pub cap_bytes: usize,
    /// The bomb's outcome.
    pub bomb: Outcome,
    /// The loop's deadline.
    pub spin_budget: Duration,
    /// The loop's outcome.
    pub spin: Outcome,
}

/// Whether the limits held: `Ok` or the first reason they did not.
pub fn judge_limits(p: &LimitProbes) -> std::result::Result<(), String> {
    let b = &p.bomb;
    if b.timed_out || b.took >= BOMB_BUDGET {
        return Err(format!(
            "the memory bomb was not stopped by the {} MiB cap: it ran {:?} (timed out: {})",
            p.cap_bytes >> 20,
            b.took,
            b.timed_out
        ));
    }
    if b.exit_code != 1 || !b.stderr.contains("out of memory") {
        return Err(format!(
            "the memory bomb ended with exit {} and stderr {:?}, not exit 1 with \"out of memory\"",
            b.exit_code, b.stderr
        ));
    }
    if b.memory_bytes > p.cap_bytes {
        return Err(format!(
            "the memory bomb grew linear memory to {} bytes, past the {}-byte cap",
            b.memory_bytes, p.cap_bytes
        ));
    }
    if b.memory_bytes + BOMB_ROOM / 2 < p.cap_bytes {
        return Err(format!(
            "the memory bomb stopped at {} bytes, short of the {}-byte cap: something else stopped it",
            b.memory_bytes, p.cap_bytes
        ));
    }
    let s = &p.spin;
    if s.exit_code != run::EXIT_TIMEOUT || !s.timed_out {
        return Err(format!(
            "the loop ended with exit {} (timed out: {}), not exit {} at its deadline",
            s.exit_code,
            s.timed_out,
            run::EXIT_TIMEOUT
        ));
    }
    if s.took < p.spin_budget || s.took > p.spin_budget + DEADLINE_SLACK {
        return Err(format!(
            "the loop's {:?} deadline stopped it after {:?}",
            p.spin_budget, s.took
        ));
    }
    Ok(())
}

/// Runs `code` on a run thread under `memory_bytes` and `timeout`, timing it.
pub async fn probe(
    compiled: &Arc<Compiled>,
    code: &'static str,
    memory_bytes: usize,
    timeout: Duration,
) -> Result<Outcome> {
    let limits = run::Limits {
        memory_bytes,
        timeout,
        cancel: Arc::default(),
        grant: None,
        phases: None,
    };
    let c = compiled.clone();
    let started = Instant::now();
    let (result, memory_bytes) = compiled
        .pool
        .run(move || run::execute_measured(&c, code, &limits))
        .await
        .map_err(|e| {
            Error::infrastructure(format!("wasm provider: the proof's thread failed: {e}"))
        })??;
    Ok(Outcome {
        exit_code: result.exit_code,
        timed_out: result.timed_out,
        stderr: String::from_utf8_lossy(&result.stderr).into_owned(),
        took: started.elapsed(),
        memory_bytes,
    })
}

/// Runs the memory bomb and the loop and returns what they came to.
pub async fn run_limit_probes(compiled: &Arc<Compiled>) -> Result<LimitProbes> {
    let cap_bytes = compiled.initial_memory as usize + BOMB_ROOM;
    let bomb = probe(compiled, BOMB, cap_bytes, BOMB_BUDGET).await?;
    let spin = probe(compiled, SPIN, cap_bytes, SPIN_BUDGET).await?;
    Ok(LimitProbes {
        cap_bytes,
        bomb,
        spin_budget: SPIN_BUDGET,
        spin,
    })
}

/// The limit half of the startup proof: runs the probes and judges them; an
/// infrastructure error names the limit that did not hold.
pub async fn prove_limits(compiled: &Arc<Compiled>) -> Result<LimitProbes> {
    let probes = run_limit_probes(compiled).await?;
    judge_limits(&probes).map_err(|why| {
        Error::infrastructure(format!("wasm provider: the startup proof failed: {why}"))
    })?;
    Ok(probes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> LimitProbes {
        LimitProbes {
            cap_bytes: 10 << 20,
            bomb: Outcome {
                exit_code: 1,
                timed_out: false,
                stderr: "InternalError: out of memory\n".into(),
                took: Duration::from_millis(15),
                memory_bytes: (10 << 20) - 65536,
            },
            spin_budget: SPIN_BUDGET,
            spin: Outcome {
                exit_code: run::EXIT_TIMEOUT,
                timed_out: true,
                stderr: String::new(),
                took: SPIN_BUDGET + Duration::from_millis(3),
                memory_bytes: 6 << 20,
            },
        }
    }

    #[test]
    fn randomness_must_differ_between_runs() {
        let a = "0b6f2a1e-9c1d-4e2f-8a3b-5c6d7e8f9a0b 0.25 1.2\n";
        let b = "7d1c3b2a-1e0f-4a9b-9c8d-7e6f5a4b3c2d 0.75 3.4\n";
        assert_eq!(judge_randomness(a, b), Ok(()));
        assert!(
            judge_randomness(a, a)
                .unwrap_err()
                .contains("same randomness")
        );
        let same_float = "7d1c3b2a-1e0f-4a9b-9c8d-7e6f5a4b3c2d 0.25 3.4\n";
        assert!(judge_randomness(a, same_float).is_err());
        assert!(judge_randomness(a, "").unwrap_err().contains("printed"));
        assert!(judge_randomness(a, "not-a-uuid 0.5 1.2").is_err());
    }

    #[test]
    fn limits_that_held_pass() {
        assert_eq!(judge_limits(&held()), Ok(()));
    }

    #[test]
    fn every_way_a_limit_fails_is_refused() {
        type Break = fn(&mut LimitProbes);
        let cases: Vec<(&str, Break)> = vec![
            (
                "not stopped by",
                (|p| {
                    p.bomb.timed_out = true;
                    p.bomb.exit_code = run::EXIT_TIMEOUT;
                }),
            ),
            ("not stopped by", (|p| p.bomb.took = BOMB_BUDGET)),
            ("not exit 1", (|p| p.bomb.exit_code = 0)),
            ("not exit 1", (|p| p.bomb.stderr = String::new())),
            ("past the", (|p| p.bomb.memory_bytes = p.cap_bytes + 65536)),
            (
                "short of the",
                (|p| p.bomb.memory_bytes = p.cap_bytes - BOMB_ROOM),
            ),
            ("not exit 124", (|p| p.spin.exit_code = 0)),
            ("not exit 124", (|p| p.spin.timed_out = false)),
            (
                "deadline stopped it after",
                (|p| p.spin.took = p.spin_budget - Duration::from_millis(1)),
            ),
            (
                "deadline stopped it after",
                (|p| p.spin.took = p.spin_budget + DEADLINE_SLACK + Duration::from_millis(1)),
            ),
        ];
        for (want, break_it) in cases {
            let mut p = held();
            break_it(&mut p);
            let got = judge_limits(&p).expect_err(want);
            assert!(got.contains(want), "{got:?} does not say {want:?}");
        }
    }
}
