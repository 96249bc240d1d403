//! Starting plimsolld from a test: a clean environment, and the addresses
//! its JSON log announces.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `program` (plimsolld, or a wrapper such as `prlimit` that execs it) with
/// none of the caller's `SANDBOX_`/`PLIMSOLL_` variables, loopback listeners
/// on free ports, JSON logs, then `env`.
pub fn command(program: &str, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(program);
    for (k, _) in std::env::vars() {
        if k.starts_with("SANDBOX_") || k.starts_with("PLIMSOLL_") {
            c.env_remove(k);
        }
    }
    c.env("PLIMSOLL_ADDR", "127.0.0.1:0")
        .env("PLIMSOLL_METRICS_ADDR", "127.0.0.1:0")
        .env("PLIMSOLL_LOG_FORMAT", "json");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Spawns `c` and waits for its `listening` line: the child, the RPC
/// address and the metrics address (empty when off). The rest of its log is
/// drained on a thread.
pub fn spawn_listening(mut c: Command) -> (Child, String, String) {
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plimsolld spawns");
    let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let mut metrics = String::new();
    let addr = loop {
        let line = lines
            .next()
            .expect("plimsolld exited before listening")
            .expect("plimsolld's log is text");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if v["message"] == "metrics listening" {
            metrics = v["addr"].as_str().unwrap_or_default().to_owned();
        }
        if v["message"] == "listening" {
            break v["addr"].as_str().unwrap_or_default().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr, metrics)
}
