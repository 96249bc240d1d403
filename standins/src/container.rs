//! What every stand-in's "machine" (a local container standing in for a
//! hosted VM or sandbox) does the same way: an attached `docker exec` with
//! its stdin written then closed, and the exit code docker records for it.

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::stream::BoxStream;
use tokio::io::AsyncWriteExt;

/// A started exec.
pub struct Started {
    /// stdout and stderr chunks, in order.
    pub output: BoxStream<'static, Result<LogOutput, bollard::errors::Error>>,
    /// The docker exec id.
    pub exec_id: String,
}

/// One command to start in a container.
#[derive(Debug, Default)]
pub struct Exec {
    /// The argv.
    pub argv: Vec<String>,
    /// `K=V` environment entries.
    pub env: Vec<String>,
    /// The user (`None`: the image's).
    pub user: Option<String>,
    /// The working directory (`None`: the image's).
    pub working_dir: Option<String>,
    /// Written to the command's stdin, which is then closed (`None`: no stdin).
    pub stdin: Option<Vec<u8>>,
    /// Chunks forwarded to the command's stdin as they come; it is closed
    /// when the sender is dropped (instead of `stdin`).
    pub stdin_stream: Option<tokio::sync::mpsc::Receiver<Vec<u8>>>,
}

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Starts `exec` in `container`, attached.
pub async fn exec(docker: &Docker, container: &str, exec: Exec) -> Result<Started, String> {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions::<String> {
                attach_stdin: Some(exec.stdin.is_some() || exec.stdin_stream.is_some()),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                tty: Some(false),
                user: exec.user,
                working_dir: exec.working_dir,
                cmd: Some(exec.argv),
                env: Some(exec.env),
                privileged: Some(false),
                ..CreateExecOptions::default()
            },
        )
        .await
        .map_err(|e| fail("docker exec create", e))?;
    let start = docker
        .start_exec(
            &created.id,
            Some(StartExecOptions {
                detach: false,
                tty: false,
                output_capacity: Some(64 * 1024),
            }),
        )
        .await
        .map_err(|e| fail("docker exec start", e))?;
    let StartExecResults::Attached { output, mut input } = start else {
        return Err("docker detached an attached exec".into());
    };
    match (exec.stdin, exec.stdin_stream) {
        (_, Some(mut chunks)) => {
            tokio::spawn(async move {
                while let Some(bytes) = chunks.recv().await {
                    if input.write_all(&bytes).await.is_err() || input.flush().await.is_err() {
                        break;
                    }
                }
                let _ = input.shutdown().await;
            });
        }
        (Some(bytes), None) => {
            tokio::spawn(async move {
                if !bytes.is_empty() {
                    let _ = input.write_all(&bytes).await;
                }
                let _ = input.shutdown().await;
            });
        }
        (None, None) => drop(input),
    }
    Ok(Started {
        output,
        exec_id: created.id,
    })
}

/// The exit code docker recorded for an exec, once it has one (up to 5 s
/// after its output ended).
pub async fn exit_code(docker: &Docker, exec_id: &str) -> Option<i64> {
    for _ in 0..250 {
        match docker.inspect_exec(exec_id).await {
            Ok(i) if i.running != Some(true) => return i.exit_code,
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            Err(_) => return None,
        }
    }
    None
}
