//! `ExecSandbox`: a command run in a sandbox, its output streamed.
//!
//! As the gateway does (HEAD `crates/openshell-server/src/grpc/{sandbox.rs,
//! validation.rs}`): the request is validated (`sandbox` and `command`
//! required; at most [`MAX_ARGS`] arguments of at most [`MAX_ARG_LEN`]
//! bytes, no NUL; environment keys `^[A-Za-z_][A-Za-z0-9_]*$`, none starting
//! `OPENSHELL_` but `OPENSHELL_PYFUNC_B64`, values without NUL, CR or LF; a
//! workdir of at most [`MAX_WORKDIR_LEN`] bytes without them), then one shell
//! string is assembled, `cd '<workdir>' && K='v' … 'arg' 'arg'` (keys
//! sorted, values and arguments quoted unless plainly safe; at most
//! [`MAX_COMMAND_LEN`] bytes), and run by `/bin/sh -c` in the sandbox, where
//! the gateway runs it over the supervisor's SSH session. The stream carries
//! `stdout`/`stderr` chunks, then exactly one `exit{exit_code}`; an
//! `execution_timeout` reached kills the command and ends with
//! `exit{124}`; a client that drops the stream has the command's process
//! group killed (a `setsid` descendant escapes it, as on the real gateway).
//! `ExecSandboxInteractive` runs the same way with its stdin streamed.
//! Not covered: `tty`, `cols`/`rows` (ignored), login shells.

use std::sync::Arc;
use std::time::Duration;

use bollard::container::LogOutput;
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tonic::Status;

use super::Sandbox;
use super::container::{Input, Machine};
use super::proto::v1::{
    ExecSandboxEvent, ExecSandboxExit, ExecSandboxInput, ExecSandboxRequest, ExecSandboxStderr,
    ExecSandboxStdout, exec_sandbox_event::Payload, exec_sandbox_input::Payload as input_payload,
};

/// The most command arguments.
pub const MAX_ARGS: usize = 1024;
/// The longest argument or environment value, bytes.
pub const MAX_ARG_LEN: usize = 32 * 1024;
/// The longest workdir, bytes.
pub const MAX_WORKDIR_LEN: usize = 4096;
/// The longest assembled command string, bytes.
pub const MAX_COMMAND_LEN: usize = 256 * 1024;
/// The exit code a command cut at its timeout reports.
pub const TIMEOUT_EXIT: i32 = 124;
/// The exit code of a command whose sandbox died under it (killed with it).
pub const KILLED_EXIT: i32 = 137;
/// The `OPENSHELL_` environment key an exec may set (the client's `exec_python`).
const ALLOWED_OPENSHELL_KEYS: &[&str] = &["OPENSHELL_PYFUNC_B64"];
/// Where each exec's process-group id is kept while it runs.
const PID_DIR: &str = "/tmp/.openshell-exec";

/// The event stream `ExecSandbox` answers with.
pub type EventStream = tokio_stream::wrappers::ReceiverStream<Result<ExecSandboxEvent, Status>>;

/// `value` quoted for a POSIX shell unless it is plainly safe, as the gateway does.
pub fn shell_escape(value: &str) -> String {
    if value.is_empty() {
        return "''".into();
    }
    let safe = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-' | b'_'));
    if safe {
        return value.into();
    }
    format!("'{}'", value.replace('\'', "'\"'\"'"))
}

fn invalid(msg: String) -> Status {
    Status::invalid_argument(msg)
}

fn no_control(value: &str, what: &str) -> Result<(), Status> {
    if value.contains('\0') {
        return Err(invalid(format!("{what} contains null bytes")));
    }
    if value.contains(['\n', '\r']) {
        return Err(invalid(format!("{what} contains newline characters")));
    }
    Ok(())
}

fn valid_key(k: &str) -> bool {
    let mut b = k.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Validates `req` and assembles the shell string the gateway would run.
pub fn command_string(req: &ExecSandboxRequest) -> Result<String, Status> {
    if req.sandbox.is_empty() {
        return Err(invalid("sandbox is required".into()));
    }
    if req.command.is_empty() {
        return Err(invalid("command is required".into()));
    }
    if req.command.len() > MAX_ARGS {
        return Err(invalid(format!(
            "command array exceeds {MAX_ARGS} argument limit"
        )));
    }
    for (i, arg) in req.command.iter().enumerate() {
        if arg.len() > MAX_ARG_LEN {
            return Err(invalid(format!(
                "command argument {i} exceeds {MAX_ARG_LEN} byte limit"
            )));
        }
        if arg.contains('\0') {
            return Err(invalid(format!("command argument {i} contains null bytes")));
        }
    }
    let mut env: Vec<_> = req.environment.iter().collect();
    env.sort_by_key(|(k, _)| *k);
    for (k, v) in &env {
        if !valid_key(k) {
            return Err(invalid(format!(
                "environment keys must match ^[A-Za-z_][A-Za-z0-9_]*$; got '{k}'"
            )));
        }
        if k.starts_with("OPENSHELL_") && !ALLOWED_OPENSHELL_KEYS.contains(&k.as_str()) {
            return Err(invalid(format!(
                "environment keys starting with OPENSHELL_ are reserved; got '{k}'"
            )));
        }
        if v.len() > MAX_ARG_LEN {
            return Err(invalid(format!(
                "environment value for '{k}' exceeds {MAX_ARG_LEN} byte limit"
            )));
        }
        no_control(v, &format!("environment value for '{k}'"))?;
    }
    if req.workdir.len() > MAX_WORKDIR_LEN {
        return Err(invalid(format!(
            "workdir exceeds {MAX_WORKDIR_LEN} byte limit"
        )));
    }
    no_control(&req.workdir, "workdir")?;
    let mut parts: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k}={}", shell_escape(v)))
        .collect();
    parts.extend(req.command.iter().map(|a| shell_escape(a)));
    let command = parts.join(" ");
    let full = if req.workdir.is_empty() {
        command
    } else {
        format!("cd {} && {command}", shell_escape(&req.workdir))
    };
    if full.len() > MAX_COMMAND_LEN {
        return Err(invalid(format!(
            "assembled command string exceeds {MAX_COMMAND_LEN} byte limit"
        )));
    }
    Ok(full)
}

/// The argv that runs `command` as the leader of a new process group whose
/// id is kept in `pid_file` while it runs.
fn wrapped(command: &str, pid_file: &str) -> Vec<String> {
    let wrapper = format!(
        "mkdir -p {PID_DIR} 2>/dev/null; \
         setsid -w /bin/sh -c 'echo $$ > \"$0\"; exec /bin/sh -c \"$1\"' \"$1\" \"$2\"; \
         rc=$?; rm -f \"$1\"; exit $rc"
    );
    [
        "/bin/sh",
        "-c",
        &wrapper,
        "openshell-exec",
        pid_file,
        command,
    ]
    .map(String::from)
    .to_vec()
}

/// Kills the process group an exec's `pid_file` names (waiting up to a
/// second for the file to appear).
async fn kill_group(machine: &Machine, pid_file: &str) {
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do \
        if p=$(cat \"$1\" 2>/dev/null) && [ -n \"$p\" ]; then kill -s KILL -- \"-$p\"; exit 0; fi; \
        sleep 0.1; done; exit 1";
    let argv = ["/bin/sh", "-c", script, "openshell-kill", pid_file]
        .map(String::from)
        .to_vec();
    match machine.run(argv).await {
        Ok(0) => {}
        Ok(code) => tracing::debug!(code, "the exec's process group was already gone"),
        Err(e) => tracing::warn!(error = %e, "killing an exec's process group failed"),
    }
}

fn event(p: Payload) -> Result<ExecSandboxEvent, Status> {
    Ok(ExecSandboxEvent { payload: Some(p) })
}

/// Starts the exec with `req.stdin` and returns its event stream.
pub async fn start(
    sandbox: Arc<Sandbox>,
    machine: Machine,
    mut req: ExecSandboxRequest,
) -> Result<EventStream, Status> {
    let stdin = Input::Bytes(std::mem::take(&mut req.stdin));
    start_with(sandbox, machine, req, stdin).await
}

/// `ExecSandboxInteractive`: the first message must be `start` (validated
/// as `ExecSandbox` is); every later `stdin` chunk is forwarded to the
/// command as it comes, `resize` is ignored (no tty), a second `start` ends
/// the call as invalid; the client half-closing its stream closes the
/// command's stdin. The events are `ExecSandbox`'s.
pub async fn interactive(
    gateway: &super::service::Gateway,
    mut inputs: tonic::Streaming<ExecSandboxInput>,
) -> Result<EventStream, Status> {
    let first = inputs
        .message()
        .await?
        .ok_or_else(|| invalid("the stream ended before its start message".into()))?;
    let Some(input_payload::Start(req)) = first.payload else {
        return Err(invalid("the first message must be start".into()));
    };
    command_string(&req)?;
    let ws = super::sandboxes::workspace(req.workspace_scope.as_ref())?;
    let (s, machine) = gateway.ready_machine(&ws, &req.sandbox)?;
    let (tx, rx) = mpsc::channel(16);
    if !req.stdin.is_empty() {
        let _ = tx.send(req.stdin.clone()).await;
    }
    tokio::spawn(async move {
        while let Ok(Some(m)) = inputs.message().await {
            match m.payload {
                Some(input_payload::Stdin(b)) => {
                    if tx.send(b).await.is_err() {
                        return;
                    }
                }
                Some(input_payload::Resize(_)) | None => {}
                Some(input_payload::Start(_)) => return,
            }
        }
    });
    start_with(s, machine, req, Input::Stream(rx)).await
}

async fn start_with(
    sandbox: Arc<Sandbox>,
    machine: Machine,
    req: ExecSandboxRequest,
    stdin: Input,
) -> Result<EventStream, Status> {
    let command = command_string(&req)?;
    let timeout = req
        .execution_timeout
        .as_ref()
        .filter(|d| d.seconds > 0 || d.nanos > 0)
        .map(|d| {
            Duration::from_secs(u64::try_from(d.seconds).unwrap_or(0))
                + Duration::from_nanos(u64::try_from(d.nanos).unwrap_or(0))
        });
    let pid_file = format!("{PID_DIR}/{}", hex::encode(rand::random::<[u8; 8]>()));
    let mut started = machine
        .exec_with(wrapped(&command, &pid_file), stdin)
        .await
        .map_err(|e| Status::unavailable(format!("exec failed: {e}")))?;
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let deadline = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        // A sandbox killed under its command (gVisor's whole sandbox is
        // OOM-killed when the guest passes the memory cap) ends the command
        // as killed, as its process was.
        let mut alive = tokio::time::interval(Duration::from_secs(1));
        alive.tick().await;
        loop {
            tokio::select! {
                chunk = started.output.next() => match chunk {
                    Some(Ok(LogOutput::StdOut { message })) => {
                        let e = event(Payload::Stdout(ExecSandboxStdout { data: message.to_vec() }));
                        if tx.send(e).await.is_err() {
                            kill_group(&machine, &pid_file).await;
                            return;
                        }
                    }
                    Some(Ok(LogOutput::StdErr { message })) => {
                        let e = event(Payload::Stderr(ExecSandboxStderr { data: message.to_vec() }));
                        if tx.send(e).await.is_err() {
                            kill_group(&machine, &pid_file).await;
                            return;
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        tracing::warn!(sandbox = %sandbox.name, error = %e, "exec output failed");
                        break;
                    }
                    None => break,
                },
                () = &mut deadline => {
                    kill_group(&machine, &pid_file).await;
                    let _ = tx.send(event(Payload::Exit(ExecSandboxExit { exit_code: TIMEOUT_EXIT }))).await;
                    return;
                }
                _ = alive.tick() => {
                    if !machine.running().await {
                        let _ = tx.send(event(Payload::Exit(ExecSandboxExit { exit_code: KILLED_EXIT }))).await;
                        return;
                    }
                }
                () = tx.closed() => {
                    tracing::debug!(sandbox = %sandbox.name, "exec stream dropped; killing its process group");
                    kill_group(&machine, &pid_file).await;
                    return;
                }
            }
        }
        let last = match machine.exit_code(&started.exec_id).await {
            Some(code) => event(Payload::Exit(ExecSandboxExit {
                exit_code: i32::try_from(code).unwrap_or(-1),
            })),
            None => Err(Status::unavailable(
                "exec relay closed before the command reported an exit status",
            )),
        };
        let _ = tx.send(last).await;
    });
    Ok(tokio_stream::wrappers::ReceiverStream::new(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembles_as_the_gateway_does() {
        let req = ExecSandboxRequest {
            sandbox: "s".into(),
            command: vec!["echo".into(), "it's".into(), "".into()],
            workdir: "/tmp/a b".into(),
            environment: [
                ("B".to_owned(), "2".to_owned()),
                ("A".to_owned(), "x y".to_owned()),
            ]
            .into(),
            ..ExecSandboxRequest::default()
        };
        assert_eq!(
            command_string(&req).unwrap(),
            "cd '/tmp/a b' && A='x y' B=2 echo 'it'\"'\"'s' ''"
        );
        let mut bad = req.clone();
        bad.environment.insert("1X".into(), "v".into());
        assert_eq!(
            command_string(&bad).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        let mut bad = req.clone();
        bad.workdir = "/tmp\n".into();
        assert!(command_string(&bad).is_err());
        let mut bad = req;
        bad.command.clear();
        assert!(command_string(&bad).is_err());
    }
}
