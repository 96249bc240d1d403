//! Which plimsolld the examples start, and what a docker daemon left behind
//! (shared by `load`, `soak` and `bench_wasm` through `#[path]`; not an
//! example itself).
//!
//! `$PLIMSOLLD` when set; otherwise the plimsolld built beside the example, in
//! the same profile: an example at `target/<profile>/examples/<name>` runs
//! `target/<profile>/plimsolld`, so `cargo run --example X` drives the daemon
//! of the build it came from, never a stale binary of another profile. Cargo
//! does not build the daemon for an example: build it first
//! (`cargo build --bins --examples`, as scripts/test.sh does).

use std::path::{Path, PathBuf};

/// The daemon binary to start; exits with a message when it is missing.
pub fn plimsolld() -> PathBuf {
    let bin = match std::env::var_os("PLIMSOLLD") {
        Some(path) => PathBuf::from(path),
        None => {
            let exe = std::env::current_exe().expect("this example's own path");
            let profile = exe
                .parent()
                .and_then(Path::parent)
                .expect("the example sits in target/<profile>/examples");
            profile.join("plimsolld")
        }
    };
    if !bin.is_file() {
        eprintln!(
            "{} does not exist: build it first (cargo build -p plimsolld, in this example's profile), or set PLIMSOLLD",
            bin.display()
        );
        std::process::exit(2);
    }
    bin
}

/// How many containers of the plimsoll instance `instance` are left, after
/// waiting up to 10 s for removals in flight to finish.
#[allow(dead_code, reason = "bench_wasm runs no docker")]
pub fn containers_left(instance: &str) -> usize {
    let mut left = 0;
    for _ in 0..40 {
        let out = std::process::Command::new("docker")
            .args([
                "ps",
                "-aq",
                "--filter",
                &format!("label=io.plimsoll.instance={instance}"),
            ])
            .output()
            .expect("docker runs");
        left = String::from_utf8_lossy(&out.stdout).lines().count();
        if left == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    left
}
