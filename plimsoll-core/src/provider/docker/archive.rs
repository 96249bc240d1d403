//! Files in and out of `/work`, and the two small shell programs that move
//! them.
//!
//! In: the host builds a tar of the project's files (validated clean relative
//! paths, regular files 0644 and directories 0755, nothing else) and a guest
//! `tar -x` unpacks it into the empty `/work` before any step runs.
//!
//! Out: only after every guest process is gone ([`STOP_GUEST`]) does a guest
//! `sh` check each requested path — it must resolve to itself under `/work`
//! (so no component is a symlink) and be a regular file — and stream a tar of
//! the ones that fit the budget on stdout, with one status line per path on
//! stderr. With no guest process left, nothing can swap a file between the
//! check and the read. The host then takes only regular-file entries whose
//! names it asked for. What this does not cover: files the guest made
//! unreadable to itself (they are reported missing).

use std::collections::{BTreeSet, HashMap};
use std::io::Read;

use crate::request::ProjectFile;
use crate::result::Artifact;

/// Kills every process of the exec's own uid (the guest's) but itself, until
/// none is left, then exits 0; exits 3 if some survive five seconds. Pure
/// POSIX sh: dash reads each status file without forking, so the only
/// child it ever has is `sleep`, between scans.
pub(crate) const STOP_GUEST: &str = r#"
me=$$
uid=$1
i=0
while :; do
  kill -9 -1 2>/dev/null
  left=0
  for d in /proc/[0-9]*; do
    [ "${d#/proc/}" = "$me" ] && continue
    u=; st=
    while read -r k v rest; do
      case "$k" in
        State:) st=$v ;;
        Uid:) u=$v; break ;;
      esac
    done 2>/dev/null < "$d/status"
    [ "$u" = "$uid" ] && [ "$st" != Z ] && left=$((left + 1))
  done
  [ "$left" -eq 0 ] && exit 0
  i=$((i + 1))
  [ "$i" -ge 50 ] && { echo "$left guest processes survive" >&2; exit 3; }
  sleep 0.1
done
"#;

/// Checks and archives the requested artifacts; see the module docs.
/// Arguments: `<budget bytes> <path>...`.
pub(crate) const COLLECT: &str = r#"
budget=$1
shift
n=$#
total=0
i=0
full=
while [ "$i" -lt "$n" ]; do
  rel=$1
  shift
  i=$((i + 1))
  p="/work/$rel"
  if [ -n "$full" ]; then echo "dropped $rel" >&2; continue; fi
  real=$(realpath -e -- "$p" 2>/dev/null) || { echo "missing $rel" >&2; continue; }
  if [ "$real" != "$p" ]; then echo "escapes $rel" >&2; continue; fi
  if [ -L "$p" ] || [ ! -f "$p" ]; then echo "notfile $rel" >&2; continue; fi
  size=$(wc -c < "$p" 2>/dev/null) || { echo "unreadable $rel" >&2; continue; }
  if [ $((total + size)) -gt "$budget" ]; then full=1; echo "dropped $rel" >&2; continue; fi
  total=$((total + size))
  echo "ok $rel" >&2
  set -- "$@" "$rel"
done
[ "$#" -eq 0 ] && exit 0
exec tar -c -f - -C /work --no-recursion --hard-dereference -- "$@"
"#;

/// Builds the tar of the project's files. Paths were validated by the
/// request's rules (clean, relative, no `..`).
pub(crate) fn pack(files: &[ProjectFile]) -> std::io::Result<Vec<u8>> {
    let mut dirs = BTreeSet::new();
    for f in files {
        let mut parts: Vec<&str> = f.path.split('/').collect();
        parts.pop();
        for i in 1..=parts.len() {
            dirs.insert(parts[..i].join("/"));
        }
    }
    let mut b = tar::Builder::new(Vec::new());
    b.mode(tar::HeaderMode::Deterministic);
    for d in &dirs {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        h.set_mtime(0);
        b.append_data(&mut h, format!("{d}/"), std::io::empty())?;
    }
    for f in files {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(f.content.len() as u64);
        h.set_mtime(0);
        b.append_data(&mut h, &f.path, f.content.as_bytes())?;
    }
    b.into_inner()
}

/// What the collector reported, path by path.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Collected {
    /// The artifacts, in the order requested.
    pub artifacts: Vec<Artifact>,
    /// Some existing files were dropped at the budget.
    pub truncated: bool,
    /// Paths refused, with why (`missing`, `escapes`, `notfile`, `unreadable`).
    pub refused: Vec<(String, String)>,
}

/// Reads the collector's tar (stdout) and status lines (stderr). Only
/// regular-file entries named `ok` in the status are taken, each at most once.
pub(crate) fn unpack(requested: &[String], tar_bytes: &[u8], status: &[u8]) -> Collected {
    let mut out = Collected::default();
    let mut ok = BTreeSet::new();
    for line in String::from_utf8_lossy(status).lines() {
        let Some((word, rel)) = line.split_once(' ') else {
            continue;
        };
        if !requested.iter().any(|r| r == rel) {
            continue;
        }
        match word {
            "ok" => {
                ok.insert(rel.to_owned());
            }
            "dropped" => out.truncated = true,
            "missing" | "escapes" | "notfile" | "unreadable" => {
                out.refused.push((rel.to_owned(), word.to_owned()))
            }
            _ => {}
        }
    }
    let mut found: HashMap<String, Vec<u8>> = HashMap::new();
    let mut archive = tar::Archive::new(tar_bytes);
    if let Ok(entries) = archive.entries() {
        for entry in entries {
            let Ok(mut entry) = entry else { break };
            if entry.header().entry_type() != tar::EntryType::Regular {
                continue;
            }
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            if !ok.contains(&name) || found.contains_key(&name) {
                continue;
            }
            let mut content = Vec::new();
            if entry.read_to_end(&mut content).is_ok() {
                found.insert(name, content);
            }
        }
    }
    for rel in requested {
        if let Some(content) = found.remove(rel) {
            out.artifacts.push(Artifact {
                path: rel.clone(),
                content,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_then_unpack() {
        let files = vec![
            ProjectFile {
                path: "a/b/c.txt".into(),
                content: "hello".into(),
            },
            ProjectFile {
                path: "top".into(),
                content: "x".repeat(300),
            },
        ];
        let t = pack(&files).unwrap();
        let requested = vec![
            "a/b/c.txt".to_string(),
            "top".to_string(),
            "gone".to_string(),
        ];
        let got = unpack(
            &requested,
            &t,
            b"ok a/b/c.txt\nok top\nmissing gone\nok not-asked\n",
        );
        assert_eq!(got.artifacts.len(), 2);
        assert_eq!(got.artifacts[0].content, b"hello");
        assert_eq!(got.artifacts[1].path, "top");
        assert_eq!(
            got.refused,
            vec![("gone".to_string(), "missing".to_string())]
        );
        assert!(!got.truncated);
        // An entry the status did not vouch for is ignored.
        let got = unpack(&requested, &t, b"ok top\ndropped a/b/c.txt\n");
        assert_eq!(got.artifacts.len(), 1);
        assert!(got.truncated);
        // Directories are never artifacts, and garbage is no artifact at all.
        assert!(unpack(&["a".into()], &t, b"ok a\n").artifacts.is_empty());
        assert!(
            unpack(&requested, b"junk", b"ok top\n")
                .artifacts
                .is_empty()
        );
    }
}
