//! An empty crate whose dependencies pin shared features: see its
//! `Cargo.toml`. Nothing uses it as code.
