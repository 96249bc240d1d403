//! Generates Docker Sandboxes' Connect messages from the vendored descriptor
//! set (`proto/docker-sbx-api-0.36.0.binpb`, pinned in `proto/README.md`):
//! messages only, the services are spoken over Connect by hand.

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = "proto/docker-sbx-api-0.36.0.binpb";
    println!("cargo:rerun-if-changed={path}");
    let fds = prost_types::FileDescriptorSet::decode(std::fs::read(path)?.as_slice())?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(false)
        .include_file("docker_sbx.rs")
        .compile_fds(fds)?;
    Ok(())
}
