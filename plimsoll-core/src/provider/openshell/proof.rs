//! The openshell startup proof. The gateway's own report comes first: its
//! compute driver must be docker (that report is what paints `container`).
//! Then one throwaway sandbox, read back in full like every run's, shows
//! from inside:
//!
//! - the probe's files unpacked into the project directory and run through
//!   exactly a project step's path (`sh` → a script → `node`), node present,
//!   the directory honoured, the guest not root, TCP to 1.1.1.1 and
//!   example.com both failing ([`crate::provider::hosted::probe`]), and the
//!   host API client granted runs load in the image;
//! - writes land only under `/tmp`, loopback is the only interface, the
//!   memory and CPU limits asked for are the ones in force, and a child
//!   cannot open its parent's memory ([`WALLS`], judged by [`walls`]);
//! - a command whose stream is dropped (a cancel) leaves no process behind.
//!
//! Then the sandbox is deleted and a read confirms it gone. It costs a
//! sandbox, so it runs at startup only, never on `/readyz`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::Inner;
use super::run::{PROJECT_DIR, fresh, guest};
use super::sandbox::Live;
use crate::error::{Error, Result};
use crate::provider::hosted::http::excerpt;
use crate::provider::hosted::probe::{PROBE, SCRIPT, verdict};

/// The whole proof's budget.
pub const BUDGET: Duration = Duration::from_secs(180);

/// Reports, one fact a line, what the walls look like from inside.
///
/// The limits come from the sandbox's own cgroup (v2 or v1); a sandbox that
/// shows no cgroup filesystem (gVisor's sentry enforces the container's
/// cgroup from outside) reports the machine it was given instead: its
/// memory and its CPUs, which gVisor sizes from that cgroup.
pub const WALLS: &str = r#"for d in / /etc /usr /var /home /root /opt /srv /work /run; do
  f="$d/.plimsoll-write-$$"
  if ( : > "$f" ) 2>/dev/null; then echo "wrote $d"; rm -f "$f"; fi
done
if ( : > /tmp/.plimsoll-write-$$ ) 2>/dev/null; then echo "tmp writable"; rm -f /tmp/.plimsoll-write-$$; fi
echo "ifaces $(awk -F: 'NR>2{gsub(/ /,"",$1);printf "%s ",$1}' /proc/net/dev)"
if [ -r /sys/fs/cgroup/memory.max ]; then
  echo "limits cgroup2 $(cat /sys/fs/cgroup/memory.max) $(cat /sys/fs/cgroup/cpu.max)"
elif [ -r /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "limits cgroup1 $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes) $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"
else
  echo "limits machine $(awk '/^MemTotal:/{printf "%d", $2*1024}' /proc/meminfo) $(nproc)"
fi
if dd if=/proc/self/mem of=/dev/null count=0 2>/dev/null; then
  sh -c 'if dd if=/proc/$PPID/mem of=/dev/null count=0 2>/dev/null; then echo "parentmem readable"; else echo "parentmem denied"; fi'
else
  echo "parentmem untested"
fi
"#;

fn fail(m: impl std::fmt::Display) -> Error {
    Error::infrastructure(format!("the openshell startup proof failed: {m}"))
}

/// What is wrong with [`WALLS`]' report for a sandbox asked for
/// `memory_mib` and `cpus` (empty: nothing).
pub fn walls(report: &str, memory_mib: u32, cpus: f64) -> Vec<String> {
    let mut wrong = Vec::new();
    let line = |key: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(key).map(str::trim))
    };
    for l in report.lines().filter_map(|l| l.strip_prefix("wrote ")) {
        wrong.push(format!(
            "the guest could write {l}: writes must land only under /tmp"
        ));
    }
    if !report.lines().any(|l| l == "tmp writable") {
        wrong.push("the guest could not write /tmp".into());
    }
    match line("ifaces ") {
        Some("lo") => {}
        Some(i) => wrong.push(format!(
            "its interfaces are {i:?}: loopback must be the only one"
        )),
        None => wrong.push("it did not list its interfaces".into()),
    }
    let memory = u64::from(memory_mib) << 20;
    let fields: Vec<&str> = line("limits ")
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let (got_memory, got_cpus) = match fields.as_slice() {
        ["cgroup2", m, q, p] | ["cgroup1", m, q, p] => (
            m.parse::<u64>().ok(),
            q.parse::<f64>()
                .ok()
                .zip(p.parse::<f64>().ok())
                .map(|(q, p)| q / p),
        ),
        ["machine", m, n] => (m.parse::<u64>().ok(), n.parse::<f64>().ok()),
        _ => (None, None),
    };
    if got_memory != Some(memory) {
        wrong.push(format!(
            "its memory limit is {}, not the {memory_mib} MiB asked for",
            got_memory.map_or_else(
                || "unlimited or unknown".to_owned(),
                |m| format!("{m} bytes")
            )
        ));
    }
    let want_cpus = if fields.first() == Some(&"machine") {
        cpus.ceil()
    } else {
        cpus
    };
    if got_cpus.is_none_or(|c| (c - want_cpus).abs() > 0.001) {
        wrong.push(format!(
            "its CPU limit is {}, not the {cpus} asked for",
            got_cpus.map_or_else(|| "unlimited or unknown".to_owned(), |c| c.to_string())
        ));
    }
    match line("parentmem ") {
        Some("denied") => {}
        Some("readable") => wrong.push("a child could open its parent's memory".into()),
        Some(other) => wrong.push(format!(
            "whether a child can read its parent's memory is {other}"
        )),
        None => wrong.push("it did not say whether a child can read its parent's memory".into()),
    }
    wrong
}

/// Runs the proof.
pub(crate) async fn prove(p: &Arc<Inner>) -> Result<()> {
    match tokio::time::timeout(BUDGET, steps(p)).await {
        Ok(r) => r,
        Err(_) => Err(fail(format!(
            "it did not finish within {} s",
            BUDGET.as_secs()
        ))),
    }
}

async fn steps(p: &Arc<Inner>) -> Result<()> {
    p.driver().await.map_err(|e| fail(e.message()))?;
    let token = hex::encode(rand::random::<[u8; 8]>());
    let files: [(&str, &[u8]); 4] = [
        (".plimsoll-proof/probe.sh", SCRIPT.as_bytes()),
        (".plimsoll-proof/probe.js", PROBE.as_bytes()),
        (".plimsoll-proof/data/token.txt", token.as_bytes()),
        (".plimsoll-proof/data/second.txt", b"second file"),
    ];
    let (live, written) = fresh(p, BUDGET, &files)
        .await
        .map_err(|e| fail(e.message()))?;
    let name = live.name.clone();
    let result = inside(p, &live, written, &token).await;
    live.delete().await;
    result?;
    match p.gateway.get(&name).await {
        Ok(None) => Ok(()),
        Ok(Some(_)) => Err(fail(format!(
            "the throwaway sandbox {name} is still there after its delete"
        ))),
        Err(e) => Err(fail(e.message())),
    }
}

async fn inside(
    p: &Arc<Inner>,
    live: &Live,
    written: std::result::Result<(), String>,
    token: &str,
) -> Result<()> {
    written.map_err(|why| fail(format!("unpacking the probe's files: {why}")))?;
    let sh = |script: &str| ["/bin/sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let until = || Instant::now() + Duration::from_secs(30);
    let ran = guest(
        live,
        &sh("sh .plimsoll-proof/probe.sh"),
        Vec::new(),
        until(),
    )
    .await
    .map_err(|e| fail(e.message()))?;
    if ran.exit_code != 0 {
        return Err(fail(format!(
            "the probe exited {}; stderr: {}",
            ran.exit_code,
            excerpt(&ran.out.stderr, &[])
        )));
    }
    let v: Value = serde_json::from_slice(&ran.out.stdout).map_err(|_| {
        fail(format!(
            "the probe printed {}",
            excerpt(&ran.out.stdout, &[])
        ))
    })?;
    let mut wrong = verdict(&v, token, PROJECT_DIR);
    if v.get("client") != Some(&Value::Bool(true)) {
        wrong.push(format!(
            "the host API client {} is not in the image (granted runs load it)",
            super::relay::NODE_CLIENT
        ));
    }
    let ran = guest(live, &sh(WALLS), Vec::new(), until())
        .await
        .map_err(|e| fail(e.message()))?;
    wrong.extend(walls(
        &String::from_utf8_lossy(&ran.out.stdout),
        p.settings.memory_mib,
        p.settings.cpus,
    ));
    if let Some(why) = cancel_leaves_nothing(p, live)
        .await
        .map_err(|e| fail(e.message()))?
    {
        wrong.push(why);
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(fail(wrong.join("; ")))
    }
}

/// Starts a command that leaves a child and a grandchild running, drops
/// its stream once it has started, and looks for them; `Some(why)`: one
/// was still there after 5 s.
async fn cancel_leaves_nothing(p: &Arc<Inner>, live: &Live) -> Result<Option<String>> {
    let mark = format!(
        "{}.{}",
        4000 + rand::random::<u16>() % 1000,
        rand::random::<u32>()
    );
    let script = format!("sleep {mark} & sh -c 'sleep {mark}' & echo started; wait");
    let cmd = ["/bin/sh".to_owned(), "-c".to_owned(), script];
    p.gateway
        .start_then_drop(&live.name, &cmd, Duration::from_secs(30))
        .await?;
    // The pattern does not match the looking command's own arguments.
    let (head, tail) = mark.split_at(1);
    let look = format!(
        "grep -l '[{head}]{}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
        tail.replace('.', "\\.")
    );
    let sh = ["/bin/sh".to_owned(), "-c".to_owned(), look];
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let ran = guest(
            live,
            &sh,
            Vec::new(),
            Instant::now() + Duration::from_secs(10),
        )
        .await?;
        let left = String::from_utf8_lossy(&ran.out.stdout).trim().to_owned();
        if ran.exit_code == 0 && left == "0" {
            return Ok(None);
        }
        if Instant::now() >= until {
            return Ok(Some(format!(
                "a cancelled command's processes were still running 5 s after its cancel ({left} left)"
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str =
        "tmp writable\nifaces lo \nlimits cgroup1 268435456 100000 100000\nparentmem denied\n";

    #[test]
    fn sound_walls_pass_under_either_cgroup_and_gvisor() {
        assert!(
            walls(GOOD, 256, 1.0).is_empty(),
            "{:?}",
            walls(GOOD, 256, 1.0)
        );
        let v2 = GOOD.replace(
            "cgroup1 268435456 100000 100000",
            "cgroup2 268435456 150000 100000",
        );
        assert!(walls(&v2, 256, 1.5).is_empty());
        let machine = GOOD.replace("cgroup1 268435456 100000 100000", "machine 268435456 2");
        assert!(walls(&machine, 256, 1.5).is_empty());
        let unlimited = GOOD.replace("cgroup1 268435456 100000 100000", "machine 268435456 4");
        assert!(
            walls(&unlimited, 256, 1.0)
                .join("")
                .contains("CPU limit is 4")
        );
    }

    #[test]
    fn each_broken_wall_is_named() {
        for (change, why) in [
            (
                GOOD.replace("tmp writable\n", "tmp writable\nwrote /etc\n"),
                "could write /etc",
            ),
            (GOOD.replace("tmp writable\n", ""), "could not write /tmp"),
            (
                GOOD.replace("ifaces lo ", "ifaces lo eth0 "),
                "loopback must be the only one",
            ),
            (
                GOOD.replace("268435456", "max"),
                "memory limit is unlimited",
            ),
            (GOOD.replace("268435456", "536870912"), "not the 256 MiB"),
            (GOOD.replace("100000 100000", "-1 100000"), "CPU limit"),
            (
                GOOD.replace("denied", "readable"),
                "open its parent's memory",
            ),
            (GOOD.replace("denied", "untested"), "is untested"),
            (
                GOOD.replace("parentmem denied\n", ""),
                "did not say whether a child",
            ),
            (
                GOOD.replace("limits cgroup1 268435456 100000 100000\n", ""),
                "memory limit is unlimited or unknown",
            ),
        ] {
            let wrong = walls(&change, 256, 1.0).join("; ");
            assert!(wrong.contains(why), "{why}: {wrong}");
        }
    }
}
