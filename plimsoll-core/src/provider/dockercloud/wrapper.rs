//! The in-guest wrapper around every guest command. Docker's exec has no
//! timeout, no output bound, and a client-side timeout does not kill the
//! process (notes §2.3), so the guest bounds itself:
//!
//! - `timeout -s KILL <s>` around the command; what the command left in its
//!   process group is killed when it ends;
//! - each stream cut to [`KEPT`] bytes by `head -c` while the rest is drained
//!   (`cat >/dev/null`), so a flooding guest runs on to its deadline rather
//!   than dying of SIGPIPE; the caps themselves end a moment after the
//!   deadline, so a process that escaped the group cannot hold the exec open;
//! - the command's exit status carried out through a file descriptor of its
//!   own, not through the pipes, and printed after the capped stdout as a
//!   trailing marker line `\n<nonce> <status>\n`; an answer without it is an
//!   infrastructure error, never the guest's result.
//!
//! A status of 137 once the deadline has passed is the deadline's kill
//! (exit 124, timed out), as on every other provider.

use std::time::Duration;

/// Bytes kept per stream (64 KiB).
pub const OUTPUT_CAP: usize = 64 * 1024;
/// Bytes the guest lets through per stream: one more than kept, so a cut is
/// seen.
pub const KEPT: usize = OUTPUT_CAP + 1;

/// The wrapper: `sh -c SCRIPT plimsoll-wrap <seconds> <nonce> <command…>`.
const SCRIPT: &str = r#"s=$1; n=$2; shift 2
w=$(awk "BEGIN{print $s+2}")
cap() { timeout -s KILL "$w" sh -c 'head -c 65537; cat >/dev/null'; }
exec 3>&1
st=$(
  {
    {
      {
        timeout -s KILL "$s" "$@" 3>&- 4>&- 5>&- &
        p=$!
        wait "$p" 2>/dev/null
        echo "$?" >&5
        kill -KILL "-$p" 2>/dev/null
      } 2>&1 1>&4 | cap >&2
    } 4>&1 | cap >&3
  } 5>&1
)
printf '\n%s %s\n' "$n" "$st" >&3
"#;

/// The argv that runs `command` wrapped, with `budget`; `nonce` marks the
/// status line.
pub fn argv(command: &[String], budget: Duration, nonce: &str) -> Vec<String> {
    let mut v = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        SCRIPT.to_owned(),
        "plimsoll-wrap".to_owned(),
        format!("{:.3}", budget.as_secs_f64().max(0.001)),
        nonce.to_owned(),
    ];
    v.extend(command.iter().cloned());
    v
}

/// What a wrapped command gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapped {
    /// Its stdout, at most [`OUTPUT_CAP`] bytes.
    pub stdout: Vec<u8>,
    /// Whether stdout was cut.
    pub stdout_truncated: bool,
    /// Its stderr, at most [`OUTPUT_CAP`] bytes.
    pub stderr: Vec<u8>,
    /// Whether stderr was cut.
    pub stderr_truncated: bool,
    /// Its exit status as the shell saw it (128 + n for a signal n).
    pub status: i32,
}

fn cut(mut v: Vec<u8>) -> (Vec<u8>, bool) {
    let cut = v.len() > OUTPUT_CAP;
    v.truncate(OUTPUT_CAP);
    (v, cut)
}

/// Reads the exec's streams; `Err` when the marker line is missing or
/// malformed (the wrapper did not finish) or a stream is longer than the
/// wrapper lets through.
pub fn parse(stdout: Vec<u8>, stderr: Vec<u8>, nonce: &str) -> Result<Wrapped, String> {
    let marker = format!("\n{nonce} ");
    let at = stdout
        .windows(marker.len())
        .rposition(|w| w == marker.as_bytes())
        .ok_or("the wrapper printed no exit status (it did not finish)")?;
    let tail = std::str::from_utf8(&stdout[at + marker.len()..])
        .map_err(|_| "the wrapper's status line is not text")?;
    let status: i32 = tail
        .strip_suffix('\n')
        .and_then(|t| t.parse().ok())
        .filter(|s| (0..=255).contains(s))
        .ok_or_else(|| format!("the wrapper's status line is malformed: {:?}", tail.trim()))?;
    let mut out = stdout;
    out.truncate(at);
    if out.len() > KEPT || stderr.len() > KEPT {
        return Err("a stream is longer than the wrapper lets through".into());
    }
    let (stdout, stdout_truncated) = cut(out);
    let (stderr, stderr_truncated) = cut(stderr);
    Ok(Wrapped {
        stdout,
        stdout_truncated,
        stderr,
        stderr_truncated,
        status,
    })
}

/// How a wrapped command ended: `(exit code, timed out)`. 137 (SIGKILL) at
/// or after the deadline is the wrapper's `timeout`, reported as 124.
pub fn outcome(status: i32, elapsed: Duration, budget: Duration) -> (i32, bool) {
    if status == 137 && elapsed + Duration::from_millis(50) >= budget {
        (124, true)
    } else {
        (status, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_comes_from_the_trailing_marker() {
        let w = parse(b"hi\n\nN1 3\n".to_vec(), b"err".to_vec(), "N1").unwrap();
        assert_eq!((w.stdout.as_slice(), w.status), (b"hi\n".as_slice(), 3));
        assert_eq!(w.stderr, b"err");
        // A guest printing a marker of its own earlier does not matter: the last counts.
        let w = parse(b"\nN1 0\nx\nN1 7\n".to_vec(), vec![], "N1").unwrap();
        assert_eq!(
            (w.stdout.as_slice(), w.status),
            (b"\nN1 0\nx".as_slice(), 7)
        );
        for bad in [
            &b"hi\n"[..],
            b"\nN1 \n",
            b"\nN1 x\n",
            b"\nN1 3",
            b"\nN1 300\n",
        ] {
            assert!(parse(bad.to_vec(), vec![], "N1").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn streams_past_the_cap_are_cut_and_flagged() {
        let mut out = vec![b'y'; KEPT];
        out.extend_from_slice(b"\nN 0\n");
        let w = parse(out, vec![b'e'; OUTPUT_CAP], "N").unwrap();
        assert_eq!((w.stdout.len(), w.stdout_truncated), (OUTPUT_CAP, true));
        assert_eq!((w.stderr.len(), w.stderr_truncated), (OUTPUT_CAP, false));
        let mut out = vec![b'y'; KEPT + 1];
        out.extend_from_slice(b"\nN 0\n");
        assert!(parse(out, vec![], "N").is_err());
    }

    #[test]
    fn a_kill_at_the_deadline_is_124_timed_out() {
        let b = Duration::from_secs(2);
        assert_eq!(outcome(137, Duration::from_millis(2_010), b), (124, true));
        assert_eq!(outcome(137, Duration::from_millis(300), b), (137, false));
        assert_eq!(outcome(1, Duration::from_secs(3), b), (1, false));
        let a = argv(&["node".into(), "/work/main.js".into()], b, "N");
        assert_eq!(
            &a[3..],
            ["plimsoll-wrap", "2.000", "N", "node", "/work/main.js"]
        );
    }
}
