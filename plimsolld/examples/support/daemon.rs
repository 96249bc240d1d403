//! Which plimsolld the examples start (shared by `load`, `soak` and
//! `bench_wasm` through `#[path]`; not an example itself).
//!
//! `$PLIMSOLLD` when set; otherwise the plimsolld built beside the example, in
//! the same profile: an example at `target/<profile>/examples/<name>` runs
//! `target/<profile>/plimsolld`, so `cargo run --example X` drives the daemon
//! of the build it came from, never a stale binary of another profile. Cargo
//! does not build the daemon for an example: build it first
//! (`cargo build -p plimsolld --bins --examples`, as scripts/test.sh does).

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
