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
    /// The command's stdin.
    pub stdin: Input,
}

/// A command's stdin.
#[derive(Debug, Default)]
pub enum Input {
    /// None attached.
    #[default]
    None,
    /// Written whole, then closed.
    Bytes(Vec<u8>),
    /// Forwarded chunk by chunk, closed when the sender is dropped.
    Stream(tokio::sync::mpsc::Receiver<Vec<u8>>),
}

impl From<Option<Vec<u8>>> for Input {
    fn from(b: Option<Vec<u8>>) -> Input {
        b.map_or(Input::None, Input::Bytes)
    }
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
                attach_stdin: Some(!matches!(exec.stdin, Input::None)),
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
    match exec.stdin {
        Input::Stream(mut chunks) => {
            tokio::spawn(async move {
                while let Some(bytes) = chunks.recv().await {
                    if input.write_all(&bytes).await.is_err() || input.flush().await.is_err() {
                        break;
                    }
                }
                let _ = input.shutdown().await;
            });
        }
        Input::Bytes(bytes) => {
            tokio::spawn(async move {
                if !bytes.is_empty() {
                    let _ = input.write_all(&bytes).await;
                }
                let _ = input.shutdown().await;
            });
        }
        Input::None => drop(input),
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
