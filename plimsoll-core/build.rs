//! Builds the QuickJS guest (`guest/`, a wasm32-wasip1 crate outside the
//! workspace) from source when the `wasm` feature is on, and leaves it in
//! `OUT_DIR/plimsoll_guest.wasm` for `include_bytes!`.
//!
//! The guest is built by a nested cargo in its own target directory (sharing
//! the outer one would deadlock on its lock), with `--locked` against the
//! guest's committed Cargo.lock. Nothing is downloaded but crates: QuickJS's C
//! sources are compiled by Debian's clang against Debian's wasi-libc
//! (`RQUICKJS_SYS_NO_WASI_SDK=1` keeps rquickjs-sys from fetching wasi-sdk).
//! Paths are remapped so the module's bytes, and so its SHA-256, do not depend
//! on where the checkout, the cargo home or the target directory live.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TARGET: &str = "wasm32-wasip1";
const INSTALL_HINT: &str = "run `bash scripts/install-wasm-toolchain.sh` (or build with --no-default-features to leave the wasm provider out)";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_WASM").is_none() {
        return;
    }
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let guest = manifest_dir.join("guest");
    for path in ["Cargo.toml", "Cargo.lock", "src"] {
        println!("cargo:rerun-if-changed={}", guest.join(path).display());
    }
    for var in [
        "PLIMSOLL_GUEST_TARGET_DIR",
        "CC_wasm32_wasip1",
        "CARGO_HOME",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let clang = env::var("CC_wasm32_wasip1").unwrap_or_else(|_| "clang".into());
    check_prerequisites(&rustc, &clang);

    let target_dir = guest_target_dir(&out_dir);
    let cargo_home = env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env::var("HOME").unwrap_or_default()).join(".cargo"));
    let rustflags = [
        format!("--remap-path-prefix={}=/plimsoll-guest", guest.display()),
        format!("--remap-path-prefix={}=/cargo", cargo_home.display()),
    ]
    .join("\x1f");
    let cflags = format!(
        "--target=wasm32-wasi -ffile-prefix-map={}=/guest-target",
        target_dir.display()
    );

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--release",
        "--locked",
        "--target",
        TARGET,
        "--manifest-path",
    ])
    .arg(guest.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir)
    // The outer build's settings are for the host; the guest gets its own.
    .env_remove("CARGO_TARGET_DIR")
    .env_remove("CARGO_BUILD_TARGET")
    .env_remove("RUSTFLAGS")
    .env_remove("CARGO_BUILD_RUSTFLAGS")
    .env_remove("CARGO_PROFILE_RELEASE_DEBUG")
    .env("CARGO_ENCODED_RUSTFLAGS", rustflags)
    .env("RQUICKJS_SYS_NO_WASI_SDK", "1")
    .env("CC_wasm32_wasip1", &clang)
    .env("CFLAGS_wasm32_wasip1", cflags)
    .stdout(Stdio::null())
    .stderr(Stdio::inherit());
    let status = cmd
        .status()
        .unwrap_or_else(|e| fail(&format!("could not start cargo to build the guest: {e}")));
    if !status.success() {
        fail(&format!(
            "building the QuickJS guest (plimsoll-core/guest, target {TARGET}) failed ({status}); its log is above. \
             If a toolchain piece is missing, {INSTALL_HINT}"
        ));
    }
    let built = target_dir
        .join(TARGET)
        .join("release")
        .join("plimsoll_guest.wasm");
    std::fs::copy(&built, out_dir.join("plimsoll_guest.wasm"))
        .unwrap_or_else(|e| fail(&format!("the guest build left no {}: {e}", built.display())));
}

/// Checks every prerequisite up front, so a missing one is named rather than
/// surfacing as a C compiler error deep in rquickjs-sys.
fn check_prerequisites(rustc: &str, clang: &str) {
    let sysroot = output(Command::new(rustc).args(["--print", "sysroot"]))
        .unwrap_or_else(|| fail(&format!("could not run `{rustc} --print sysroot`")));
    let std_dir = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(TARGET)
        .join("lib");
    if !std_dir.is_dir() {
        fail(&format!(
            "the Rust target {TARGET} is not installed (no {}): run `rustup target add {TARGET}`, or {INSTALL_HINT}",
            std_dir.display()
        ));
    }
    if output(Command::new(clang).arg("--version")).is_none() {
        fail(&format!(
            "clang (`{clang}`) is needed to compile QuickJS for {TARGET} and was not found: apt-get install clang, or {INSTALL_HINT}"
        ));
    }
    let builtins = output(Command::new(clang).args([
        "--target=wasm32-wasi",
        "--print-libgcc-file-name",
        "-rtlib=compiler-rt",
    ]));
    if !builtins.is_some_and(|p| Path::new(p.trim()).is_file()) {
        fail(&format!(
            "clang's wasm32 runtime builtins are missing: apt-get install libclang-rt-14-dev-wasm32 (matching your clang), or {INSTALL_HINT}"
        ));
    }
    let libc =
        output(Command::new(clang).args(["--target=wasm32-wasi", "--print-file-name=libc.a"]));
    if !libc.is_some_and(|p| Path::new(p.trim()).is_absolute() && Path::new(p.trim()).is_file()) {
        fail(&format!(
            "wasi-libc (libc.a and headers for wasm32-wasi) is missing: apt-get install wasi-libc, or {INSTALL_HINT}"
        ));
    }
}

/// The guest's own target directory: `PLIMSOLL_GUEST_TARGET_DIR`, else
/// `plimsoll-guest/` inside the outer target directory (found by its
/// CACHEDIR.TAG), so every profile of the host shares one guest build.
fn guest_target_dir(out_dir: &Path) -> PathBuf {
    if let Some(dir) = env::var_os("PLIMSOLL_GUEST_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(|target| target.join("plimsoll-guest"))
        .unwrap_or_else(|| out_dir.join("guest-target"))
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn fail(message: &str) -> ! {
    eprintln!("error: plimsoll-core (feature `wasm`): {message}");
    std::process::exit(1)
}
