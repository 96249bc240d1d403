//! The byte-exact digests of what was asked and what came back: the request
//! digest, the result digest and the software rule id a run record carries
//! (`spec/wire.md` §7), over the same length-prefixed preimage as the record's
//! own digest ([`crate::record`]).

use crate::record::{Preimage, sha256_hex};
use crate::request::{Envelope, Payload, SoftwareRule};
use crate::result::Output;

/// The request digest (`requestSha256`) over the envelope and payload as sent.
/// Trace id, session id, languages and owner are not covered.
pub fn request_digest(env: &Envelope, payload: Option<&Payload>) -> String {
    let v2 = env.protocol >= 2;
    let mut p = Preimage::new(if v2 {
        "plimsoll.run-request.v2"
    } else {
        "plimsoll.run-request.v1"
    });
    p.int("protocol", env.protocol);
    p.str("minimum_isolation", &env.minimum_isolation);
    p.int("timeout_ms", env.timeout_ms);
    if v2 {
        let (mode, ids): (&str, &[String]) = match &env.software_rule {
            Some(r) => (&r.mode, &r.identities),
            None => ("", &[]),
        };
        p.str("software_mode", mode);
        p.count("software_identities", ids.len());
        for id in ids {
            p.str("software_identity", id);
        }
    }
    let files = |p: &mut Preimage, files: &[crate::request::ProjectFile]| {
        p.count("files", files.len());
        for f in files {
            p.str("file_path", &f.path);
            p.str("file_content", &f.content);
        }
    };
    match payload {
        None => p.str("kind", ""),
        Some(Payload::JavaScript(j)) => {
            p.str("kind", "javascript");
            p.str("code", &j.code);
            p.str("grant_profile", &j.grant_profile);
        }
        Some(Payload::Cell(c)) => {
            p.str("kind", "cell");
            p.str("language", &c.language);
            p.str("code", &c.code);
            files(&mut p, &c.files);
        }
        Some(Payload::Project(pr)) => {
            p.str("kind", "project");
            p.str("grant_profile", &pr.grant_profile);
            files(&mut p, &pr.files);
            p.count("steps", pr.steps.len());
            for s in &pr.steps {
                p.str("step_command", s);
            }
            p.count("artifacts", pr.artifacts.len());
            for a in &pr.artifacts {
                p.str("artifact_path", a);
            }
        }
        Some(Payload::Module(m)) => {
            p.str("kind", "module");
            p.str("model", &m.model);
            p.doubles("end_time", &[m.end_time]);
            p.doubles("step", &[m.step]);
            p.count("rows", m.rows.len());
            for r in &m.rows {
                p.doubles("row_values", &r.values);
            }
        }
    }
    p.finish()
}

/// The result digest (`resultSha256`). Durations, advice and evidence are not covered.
pub fn result_digest(output: Option<&Output>) -> String {
    let mut p = Preimage::new("plimsoll.run-result.v1");
    let streams = |p: &mut Preimage,
                   exit: i32,
                   timed_out: bool,
                   out: &[u8],
                   err: &[u8],
                   ot: bool,
                   et: bool| {
        p.int("exit_code", exit);
        p.bool("timed_out", timed_out);
        p.bytes("stdout", out);
        p.bytes("stderr", err);
        p.bool("stdout_truncated", ot);
        p.bool("stderr_truncated", et);
    };
    match output {
        None => p.str("kind", ""),
        Some(Output::JavaScript(r)) => {
            p.str("kind", "javascript");
            streams(
                &mut p,
                r.exit_code,
                r.timed_out,
                &r.stdout,
                &r.stderr,
                r.stdout_truncated,
                r.stderr_truncated,
            );
        }
        Some(Output::Cell(r)) => {
            p.str("kind", "cell");
            streams(
                &mut p,
                r.exit_code,
                r.timed_out,
                &r.stdout,
                &r.stderr,
                r.stdout_truncated,
                r.stderr_truncated,
            );
            p.bool("interpreter_started", r.interpreter_started);
            p.bool("interpreter_ended", r.interpreter_ended);
        }
        Some(Output::Project(r)) => {
            p.str("kind", "project");
            p.int("outcome", r.outcome.number());
            p.str("outcome_detail", &r.outcome_detail);
            p.bool("artifacts_truncated", r.artifacts_truncated);
            p.count("steps", r.steps.len());
            for s in &r.steps {
                p.str("step_command", &s.command);
                p.int("step_exit_code", s.exit_code);
                p.bool("step_timed_out", s.timed_out);
                p.bytes("step_stdout", &s.stdout);
                p.bytes("step_stderr", &s.stderr);
                p.bool("step_stdout_truncated", s.stdout_truncated);
                p.bool("step_stderr_truncated", s.stderr_truncated);
            }
            p.count("artifacts", r.artifacts.len());
            for a in &r.artifacts {
                p.str("artifact_path", &a.path);
                p.bytes("artifact_content", &a.content);
            }
        }
        Some(Output::Module(r)) => {
            p.str("kind", "module");
            p.int("outcome", r.outcome.number());
            p.str("outcome_detail", &r.outcome_detail);
            p.int("width", r.width);
            p.bytes("stdout", &r.stdout);
            p.bytes("stderr", &r.stderr);
            p.count("runs", r.runs.len());
            for run in &r.runs {
                p.int("run_status", run.status);
                p.doubles("run_outputs", &run.outputs);
            }
        }
    }
    p.finish()
}

/// The software rule id: `""` with no rule, `exact:<id>` for one identity, else
/// `approved:sha256:<hex>` over the identities sorted bytewise and joined by NUL.
pub fn rule_id(rule: Option<&SoftwareRule>) -> String {
    match rule {
        None => String::new(),
        Some(r) if r.identities.len() == 1 => format!("exact:{}", r.identities[0]),
        Some(r) => {
            let mut ids: Vec<&[u8]> = r.identities.iter().map(|s| s.as_bytes()).collect();
            ids.sort();
            format!("approved:sha256:{}", sha256_hex(&ids.join(&0u8)))
        }
    }
}
