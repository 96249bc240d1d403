//! Generates the OpenShell gateway's messages and service (server and client)
//! from the vendored 0.1.5 `.proto` files (`proto/`, pinned in its
//! README): `protox` parses them in Rust, so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = "proto";
    let files = [
        "options.proto",
        "datamodel.proto",
        "sandbox.proto",
        "openshell.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={dir}/{f}");
    }
    let fds = protox::compile(files, [dir])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // Every RPC the stand-in does not serve answers `unimplemented`.
        .generate_default_stubs(true)
        .compile_fds(fds)?;
    Ok(())
}
