//! envd's `process.Process/Start`: the request a run sends and the events
//! it reads back (proto3 canonical JSON: lowerCamelCase names, defaults
//! omitted, `bytes` as standard base64), per `spec/envd/process/process.proto`
//! pinned in `docs/research/hosted-providers.md` §1.2.
//!
//! A stream is exactly one `start`, then `data` and `keepalive` events, then
//! one `end`; [`Events`] holds envd to that order.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRequest {
    /// The program.
    pub cmd: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub envs: BTreeMap<String, String>,
    /// The working directory.
    pub cwd: Option<String>,
    /// Whether its stdin is held open for `SendInput` (closed otherwise).
    pub stdin: bool,
}

impl StartRequest {
    /// The request message, as JSON.
    pub fn to_json(&self) -> Value {
        let mut process = json!({"cmd": self.cmd, "args": self.args});
        if !self.envs.is_empty() {
            process["envs"] = json!(self.envs);
        }
        if let Some(cwd) = &self.cwd {
            process["cwd"] = json!(cwd);
        }
        json!({"process": process, "stdin": self.stdin})
    }
}

/// How a process ended (`ProcessEvent.EndEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct End {
    /// The exit code; -1 when a signal ended it.
    pub exit_code: i32,
    /// It exited (rather than being ended by a signal).
    pub exited: bool,
    /// envd's description (`exit status 1`, `signal: killed`).
    pub status: String,
    /// The wait error, if any.
    pub error: Option<String>,
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The process started with this pid.
    Start(u32),
    /// Output on stdout.
    Stdout(Vec<u8>),
    /// Output on stderr.
    Stderr(Vec<u8>),
    /// Nothing happened for a while.
    Keepalive,
    /// The process ended.
    End(End),
}

/// Reads one `{"event": {...}}` message.
pub fn parse(message: &Value) -> Result<Event, String> {
    let event = message
        .get("event")
        .and_then(Value::as_object)
        .ok_or("a message without an event")?;
    if event.len() != 1 {
        return Err(format!("an event with {} kinds", event.len()));
    }
    let (kind, body) = event.iter().next().ok_or("an empty event")?;
    let int = |names: &[&str]| -> Result<i64, String> {
        for n in names {
            if let Some(v) = body.get(*n) {
                return v
                    .as_i64()
                    .ok_or_else(|| format!("{kind}.{n} is not an integer"));
            }
        }
        Ok(0)
    };
    match kind.as_str() {
        "start" => {
            let pid = int(&["pid"])?;
            u32::try_from(pid)
                .map(Event::Start)
                .map_err(|_| format!("pid {pid} out of range"))
        }
        "data" => {
            let bytes = |v: &Value| {
                v.as_str()
                    .and_then(|s| B64.decode(s).ok())
                    .ok_or_else(|| "data is not base64".to_owned())
            };
            match (body.get("stdout"), body.get("stderr")) {
                (Some(v), None) => bytes(v).map(Event::Stdout),
                (None, Some(v)) => bytes(v).map(Event::Stderr),
                // PTY output never comes: no PTY is asked for.
                _ => Err("a data event that is neither stdout nor stderr".into()),
            }
        }
        "keepalive" => Ok(Event::Keepalive),
        "end" => {
            let code = int(&["exitCode", "exit_code"])?;
            let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
            Ok(Event::End(End {
                exit_code: i32::try_from(code)
                    .map_err(|_| format!("exit code {code} out of range"))?,
                exited: body.get("exited").and_then(Value::as_bool).unwrap_or(false),
                status: text("status").unwrap_or_default(),
                error: text("error"),
            }))
        }
        other => Err(format!("an unknown event {other:?}")),
    }
}

/// Holds a stream's events to envd's order: one start first, one end last.
#[derive(Debug, Default)]
pub struct Events {
    pid: Option<u32>,
    ended: bool,
}

impl Events {
    /// Checks `event` against what came before.
    pub fn accept(&mut self, event: &Event) -> Result<(), String> {
        if self.ended {
            return Err("an event after end".into());
        }
        match (event, self.pid) {
            (Event::Start(pid), None) => {
                self.pid = Some(*pid);
                Ok(())
            }
            (Event::Start(_), Some(_)) => Err("a second start".into()),
            (_, None) => Err("an event before start".into()),
            (Event::End(_), Some(_)) => {
                self.ended = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The pid from the start event.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the end event came.
    pub fn ended(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envd_events_read_as_the_canonical_json_mapping_says() {
        let p = |v: Value| parse(&v);
        assert_eq!(
            p(json!({"event":{"start":{"pid":412}}})),
            Ok(Event::Start(412))
        );
        assert_eq!(
            p(json!({"event":{"data":{"stdout":"aGVsbG8K"}}})),
            Ok(Event::Stdout(b"hello\n".to_vec()))
        );
        assert_eq!(
            p(json!({"event":{"data":{"stderr":""}}})),
            Ok(Event::Stderr(Vec::new()))
        );
        assert_eq!(p(json!({"event":{"keepalive":{}}})), Ok(Event::Keepalive));
        // Exit 0: exitCode omitted.
        assert_eq!(
            p(json!({"event":{"end":{"exited":true,"status":"exit status 0"}}})),
            Ok(Event::End(End {
                exit_code: 0,
                exited: true,
                status: "exit status 0".into(),
                error: None
            }))
        );
        // Killed: exited omitted (false), either spelling of the code.
        assert_eq!(
            p(
                json!({"event":{"end":{"exit_code":-1,"status":"signal: killed","error":"signal: killed"}}})
            ),
            Ok(Event::End(End {
                exit_code: -1,
                exited: false,
                status: "signal: killed".into(),
                error: Some("signal: killed".into())
            }))
        );
        for bad in [
            json!({}),
            json!({"event":{}}),
            json!({"event":{"start":{"pid":-1}}}),
            json!({"event":{"data":{"stdout":"!!"}}}),
            json!({"event":{"data":{"pty":"aGk="}}}),
            json!({"event":{"start":{},"end":{}}}),
            json!({"event":{"end":{"exitCode":"1"}}}),
            json!({"event":{"wat":{}}}),
        ] {
            assert!(p(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn events_keep_envds_order() {
        let mut e = Events::default();
        assert!(e.accept(&Event::Keepalive).is_err());
        let mut e = Events::default();
        e.accept(&Event::Start(3)).unwrap();
        assert!(e.accept(&Event::Start(4)).is_err());
        e.accept(&Event::Stdout(vec![1])).unwrap();
        e.accept(&Event::End(End::default())).unwrap();
        assert!(e.ended());
        assert_eq!(e.pid(), Some(3));
        assert!(e.accept(&Event::Keepalive).is_err());
    }

    #[test]
    fn a_start_request_is_canonical_json() {
        let r = StartRequest {
            cmd: "/bin/sh".into(),
            args: vec!["-c".into(), "id".into()],
            envs: BTreeMap::new(),
            cwd: None,
            stdin: false,
        };
        assert_eq!(
            r.to_json(),
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "id"]}, "stdin": false})
        );
    }
}
