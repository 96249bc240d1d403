//! The startup proof: one throwaway container per image, created by the same
//! lockdown, runtime and seccomp settings runs use, shows from inside what a
//! run gets.
//!
//! From its own mount table: a read-only root, and every writable mount a
//! tmpfs of the promised size marked noexec and nosuid. A write at every
//! mount point lands only on the promised ones, and a program copied there
//! does not run. Loopback is the only interface. The process limit is the
//! configured one (read from the host's cgroup via the container's PID, since
//! gVisor's own file reads `max`). No capabilities, no_new_privs on. A
//! throwaway host Unix socket, mounted exactly as a run's broker socket would
//! be, answers a connect from inside: a runtime that could not carry a grant's
//! calls refuses to start. The interpreters that start are the languages
//! Describe reports. What this does not cover: attestation — this is
//! behavioural evidence under this configuration, on this host, at startup.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::grant::socket::{self, Access};
use crate::provider::RunContext;
use crate::provider::docker::DockerRuntime;
use crate::provider::docker::container::Live;
use crate::provider::docker::exec::{self, Ended, ExecSpec};
use crate::provider::docker::images::PinnedImage;
use crate::provider::docker::lockdown::{
    BROKER_DIR, BROKER_SOCKET, Lockdown, Role, container_name,
};
use crate::provider::docker::snippet::unix_after;
use crate::provider::docker::{Inner, mounts, project, snippet, walls};
use crate::request::{JavaScriptRun, ProjectFile, ProjectRun};
use crate::result::ProjectOutcome;

const PROOF_SECS: u64 = 120;

fn failed(image: &PinnedImage, what: impl std::fmt::Display) -> Error {
    Error::infrastructure(format!(
        "startup proof failed for image {} ({}): {what}",
        image.reference, image.id
    ))
}

/// A host directory holding a listening Unix socket that hands each admitted
/// connection a nonce; made and guarded exactly as a run's broker socket
/// (guest-owned `0700` directory, `0600` socket, the same peer check), so the
/// proof shows the runtime's peer passes it. Removed on drop.
struct ProbeSocket {
    dir: PathBuf,
    nonce: String,
    task: tokio::task::JoinHandle<()>,
}

impl ProbeSocket {
    fn open(access: Access) -> std::io::Result<ProbeSocket> {
        let (dir, listener) = socket::bind(&std::env::temp_dir(), "plimsoll-proof", access)?;
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        let reply = format!("{nonce}\n");
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                if socket::admitted(&conn, access).is_ok() {
                    let _ = conn.write_all(reply.as_bytes()).await;
                }
                let _ = conn.shutdown().await;
            }
        });
        Ok(ProbeSocket { dir, nonce, task })
    }
}

impl Drop for ProbeSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The facts script: status lines, interfaces, the in-container pids limit
/// and the interpreters that start.
const FACTS: &str = r#"
while read -r k v rest; do
  case "$k" in NoNewPrivs:|CapEff:|CapPrm:|CapBnd:|Seccomp:) echo "$k $v" ;; esac
done < /proc/self/status
for i in /sys/class/net/*; do echo "iface ${i##*/}"; done
if [ -r /sys/fs/cgroup/pids/pids.max ]; then echo "pids $(cat /sys/fs/cgroup/pids/pids.max)";
elif [ -r /sys/fs/cgroup/pids.max ]; then echo "pids $(cat /sys/fs/cgroup/pids.max)"; fi
if v=$(node -p 'process.versions.node' 2>/dev/null); then echo "lang javascript node $v"; fi
if v=$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null); then echo "lang python python $v"; fi
python3 -c 'import ctypes; print("nnp %d" % ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))' 2>/dev/null
"#;

/// The write script: one line per mount point, `wrote`/`denied`, and for the
/// promised ones whether a program copied there runs.
const WRITES: &str = r#"
for m in "$@"; do
  if [ -d "$m" ]; then
    f="$m/.plimsoll-proof-$$"
    if (: > "$f") 2>/dev/null; then
      echo "wrote $m"
      if cp /bin/true "$f" 2>/dev/null && chmod +x "$f" 2>/dev/null && "$f" 2>/dev/null; then echo "ran $m"; fi
      rm -f "$f"
    else
      echo "denied $m"
    fi
  elif (: >> "$m") 2>/dev/null; then echo "wrote $m"; else echo "denied $m"; fi
done
"#;

/// The socket script: connect to the mounted socket and print what it says.
const SOCKET_NODE: &str = r#"const s=require("net").connect(process.argv[1]);let d="";s.on("data",c=>d+=c);s.on("end",()=>process.stdout.write("socket "+d.trim()+"\n"));s.on("error",e=>process.stdout.write("socketerr "+e.code+"\n"));"#;
const SOCKET_PYTHON: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); d = b""
    while True:
        c = s.recv(100)
        if not c: break
        d += c
    print("socket " + d.decode().strip())
except OSError as e:
    print("socketerr %s" % e.errno)
"#;

async fn sh(
    docker: &Docker,
    live: &Live,
    l: &Lockdown,
    script: &str,
    args: &[String],
) -> Result<String> {
    let mut cmd = vec!["sh".into(), "-c".into(), script.into(), "sh".into()];
    cmd.extend_from_slice(args);
    run(docker, live, l, cmd).await
}

/// Runs `cmd` as the guest in the proof container `live`, exactly as a
/// run's guest processes start under the lockdown `l`; its stdout, or an
/// infrastructure error unless it exits 0.
pub(crate) async fn run(
    docker: &Docker,
    live: &Live,
    l: &Lockdown,
    cmd: Vec<String>,
) -> Result<String> {
    let spec = ExecSpec {
        user: l.guest_user(),
        cmd: l.guest_cmd(cmd),
        workdir: "/".into(),
        stdin: None,
        cap: 1 << 20,
        end_with_process: false,
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let never = CancellationToken::new();
    match exec::run(docker, live.name(), spec, deadline, &never, &never).await {
        Ok(d) if d.ended == Ended::Exited(0) => {
            Ok(String::from_utf8_lossy(&d.stdout.finish().0).into_owned())
        }
        Ok(d) => Err(Error::infrastructure(format!(
            "a probe ended {:?}: {}",
            d.ended,
            String::from_utf8_lossy(&d.stderr.finish().0).trim()
        ))),
        Err(exec::ExecFail::Infrastructure(e)) => Err(e),
        Err(exec::ExecFail::NotRunning(m) | exec::ExecFail::Refused(m)) => {
            Err(Error::infrastructure(format!("a probe could not run: {m}")))
        }
    }
}

/// The container's pids limit as the host's cgroup holds it.
fn host_pids_max(pid: i64) -> std::result::Result<String, String> {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .map_err(|e| format!("reading /proc/{pid}/cgroup on the host: {e} (plimsolld must share the host's PID namespace)"))?;
    let (base, rel) = cgroups
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
            if ctrl.split(',').any(|c| c == "pids") {
                Some((Path::new("/sys/fs/cgroup/pids"), path.to_owned()))
            } else if ctrl.is_empty() {
                Some((Path::new("/sys/fs/cgroup"), path.to_owned()))
            } else {
                None
            }
        })
        .ok_or("the container's process has no pids cgroup")?;
    let file = base.join(rel.trim_start_matches('/')).join("pids.max");
    std::fs::read_to_string(&file)
        .map(|s| s.trim().to_owned())
        .map_err(|e| format!("reading {}: {e}", file.display()))
}

/// A language whose interpreter started in a proof container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Language {
    /// `javascript` or `python`.
    pub name: String,
    /// The interpreter and the exact version it reported (`node 24.22.3`).
    pub runtime: String,
}

/// The languages in the facts script's `lang NAME INTERPRETER VERSION` lines.
fn languages(facts: &str) -> Vec<Language> {
    facts
        .lines()
        .filter_map(|x| x.strip_prefix("lang "))
        .filter_map(|x| {
            let (name, runtime) = x.trim().split_once(' ')?;
            Some(Language {
                name: name.to_owned(),
                runtime: runtime.to_owned(),
            })
        })
        .collect()
}

/// Proves one image under `role`; returns the languages whose interpreters
/// start and, where python3 starts, what the system-call probe of
/// [`walls`](super::walls) saw in this container.
pub(crate) async fn prove_image(
    p: &Inner,
    role: Role,
    image: &PinnedImage,
) -> Result<(Vec<Language>, Option<walls::Observed>)> {
    let docker = p.client().await?;
    let l = &p.lockdown;
    let socket = ProbeSocket::open(Access {
        guest_uid: l.settings.guest_uid,
        via_runsc: l.settings.runtime == DockerRuntime::Runsc,
    })
    .map_err(|e| failed(image, format!("cannot open a throwaway host socket: {e}")))?;
    let body = l.create_body(
        role,
        &image.id,
        &image.env,
        PROOF_SECS,
        unix_after(Duration::from_secs(PROOF_SECS)),
        Some(&socket.dir),
    );
    let mut live = Live::create(docker, &p.live, container_name(), body).await?;
    live.start().await.map_err(|e| {
        failed(
            image,
            format!("the proof container did not start: {}", e.message()),
        )
    })?;
    let promises = l.promises(role);

    // The mount table.
    let table = run(
        docker,
        &live,
        l,
        vec!["cat".into(), "/proc/self/mountinfo".into()],
    )
    .await?;
    let mounts = mounts::parse(&table).map_err(|e| failed(image, e))?;
    let points =
        mounts::judge(&mounts, &promises, l.settings.runtime).map_err(|e| failed(image, e))?;

    // Writes at every mount point.
    let writes = sh(docker, &live, l, WRITES, &points).await?;
    for m in &points {
        let promised = promises.iter().any(|p| p.path == m);
        let wrote = writes.lines().any(|x| x == format!("wrote {m}"));
        if promised != wrote {
            return Err(failed(
                image,
                if promised {
                    format!("the guest cannot write the promised tmpfs {m}")
                } else {
                    format!("a guest write landed on {m}, which is not promised")
                },
            ));
        }
        if writes.lines().any(|x| x == format!("ran {m}")) {
            return Err(failed(
                image,
                format!("a program copied to {m} ran: noexec is not in force"),
            ));
        }
    }

    // Status, interfaces, limits, languages.
    let facts = sh(docker, &live, l, FACTS, &[]).await?;
    let fact = |k: &str| {
        facts
            .lines()
            .find_map(|x| x.strip_prefix(k).map(|v| v.trim().to_owned()))
    };
    // gVisor's status file has no NoNewPrivs line; prctl answers there.
    let nnp = fact("NoNewPrivs:").or_else(|| fact("nnp "));
    if nnp.as_deref() != Some("1") {
        return Err(failed(
            image,
            format!(
                "no_new_privs is not shown set on the guest ({nnp:?}; without a NoNewPrivs status line python3 must be present to ask prctl)"
            ),
        ));
    }
    for cap in ["CapEff:", "CapPrm:"] {
        if fact(cap).is_some_and(|v| !v.trim_start_matches('0').is_empty()) {
            return Err(failed(
                image,
                format!("the guest holds capabilities ({cap} {:?})", fact(cap)),
            ));
        }
    }
    let ifaces: Vec<&str> = facts
        .lines()
        .filter_map(|x| x.strip_prefix("iface "))
        .collect();
    if ifaces != ["lo"] {
        return Err(failed(
            image,
            format!("interfaces other than loopback: {ifaces:?}"),
        ));
    }
    let want_pids = l.envelope.pids.to_string();
    if l.settings.runtime == DockerRuntime::Runc
        && fact("pids ").as_deref() != Some(want_pids.as_str())
    {
        return Err(failed(
            image,
            format!(
                "the container's pids.max reads {:?}, configured {want_pids}",
                fact("pids ")
            ),
        ));
    }
    let inspect = docker
        .inspect_container(live.name(), None)
        .await
        .map_err(|e| Error::infrastructure(format!("inspecting the proof container: {e}")))?;
    let pid = inspect.state.and_then(|s| s.pid).unwrap_or(0);
    let host = host_pids_max(pid).map_err(|e| failed(image, e))?;
    if host != want_pids {
        return Err(failed(
            image,
            format!("the host's pids.max for the container reads {host:?}, configured {want_pids}"),
        ));
    }
    let languages = languages(&facts);
    let has = |name: &str| languages.iter().any(|x| x.name == name);

    // The broker socket path: mounted the way a run mounts it, and connectable.
    let target = format!("{BROKER_DIR}/{BROKER_SOCKET}");
    let said = if has("javascript") {
        run(
            docker,
            &live,
            l,
            vec!["node".into(), "-e".into(), SOCKET_NODE.into(), target],
        )
        .await?
    } else if has("python") {
        run(
            docker,
            &live,
            l,
            vec!["python3".into(), "-c".into(), SOCKET_PYTHON.into(), target],
        )
        .await?
    } else {
        return Err(failed(image, "neither node nor python3 starts in it"));
    };
    if said.trim() != format!("socket {}", socket.nonce) {
        return Err(failed(
            image,
            format!(
                "the guest could not reach a host Unix socket mounted as the broker's ({}); under runsc docker must register it with --host-uds=open",
                said.trim()
            ),
        ));
    }
    let probe = if has("python") {
        Some(walls::observe(docker, &live, l).await?)
    } else {
        None
    };
    live.remove().await?;
    drop(socket);
    Ok((languages, probe))
}

/// Runs the real snippet and project paths once, exactly as a run does.
pub(crate) async fn run_paths(inner: &Inner) -> Result<()> {
    let ctx = RunContext {
        timeout: Duration::from_secs(30),
        cancel: CancellationToken::new(),
        principal: "startup-proof".into(),
        grant: None,
        warm: Default::default(),
        phases: Default::default(),
    };
    let js = snippet::run(
        inner,
        &JavaScriptRun {
            code: "console.log(6*7)".into(),
            ..JavaScriptRun::default()
        },
        &ctx,
    )
    .await?;
    if js.exit_code != 0 || js.stdout != b"42\n" {
        return Err(Error::infrastructure(format!(
            "startup proof: a snippet did not run as a run does (exit {}, stdout {:?}, stderr {:?})",
            js.exit_code,
            String::from_utf8_lossy(&js.stdout),
            String::from_utf8_lossy(&js.stderr)
        )));
    }
    let p = project::run(
        inner,
        &ProjectRun {
            files: vec![ProjectFile {
                path: "in/probe.txt".into(),
                content: "plimsoll".into(),
            }],
            steps: vec!["cp in/probe.txt out.txt".into()],
            artifacts: vec!["out.txt".into()],
            ..ProjectRun::default()
        },
        &ctx,
    )
    .await?;
    let ok = p.outcome == ProjectOutcome::Completed
        && p.artifacts
            .first()
            .is_some_and(|a| a.content == b"plimsoll");
    if !ok {
        return Err(Error::infrastructure(format!(
            "startup proof: a project did not run as a run does ({}: {})",
            p.outcome.as_str(),
            p.outcome_detail
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_language_line_names_its_interpreter_and_version() {
        let facts = "NoNewPrivs: 1\nlang javascript node 24.22.3\niface lo\nlang python python 3.13.5\nlang broken\n";
        let got = languages(facts);
        assert_eq!(
            got,
            [
                Language {
                    name: "javascript".into(),
                    runtime: "node 24.22.3".into()
                },
                Language {
                    name: "python".into(),
                    runtime: "python 3.13.5".into()
                }
            ]
        );
    }
}
