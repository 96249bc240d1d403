//! Records the git commit plimsolld is built from (`BUILD_GIT_COMMIT`:
//! 12 hex digits, `-dirty` when the tree had changes, or `unknown` outside a
//! git checkout), for `plimsolld --version`, the startup log and the
//! `plimsoll_build_info` metric.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    // A new commit moves HEAD or the branch it names; an edit moves the index.
    for path in [
        "../.git/HEAD",
        "../.git/refs/heads",
        "../.git/packed-refs",
        "../.git/index",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(c) if c.len() == 12 && c.bytes().all(|b| b.is_ascii_hexdigit()) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{c}-dirty") } else { c }
        }
        _ => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=BUILD_GIT_COMMIT={commit}");
}
