//! Link settings for the guest module.

fn main() {
    // QuickJS keeps each JavaScript call's frame on the C (shadow) stack in
    // linear memory; 1 MiB (the default) allows only ~3,500 nested calls, 4 MiB
    // ~14,000, past the ~11,000 the host's 8 MiB wasm stack allows (Node allows
    // about as many). The stack sits below the data (stack-first), so running
    // past it traps (an out-of-bounds access) rather than overwriting anything.
    println!(
        "cargo:rustc-link-arg-cdylib=-zstack-size={}",
        4 * 1024 * 1024
    );
    println!("cargo:rerun-if-changed=build.rs");
}
