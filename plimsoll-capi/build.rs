//! Gives `libplimsoll.so` the soname `libplimsoll.so.<major>` (`.so.0` before
//! 1.0), so a program linked against an installed library asks the loader for
//! the ABI it was built for; `scripts/install-capi.sh` installs the file as
//! `libplimsoll.so.<version>` with the soname and `libplimsoll.so` as links.

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libplimsoll.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
