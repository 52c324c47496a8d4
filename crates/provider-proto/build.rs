//! Compiles `proto/` into Rust with protox, a protobuf compiler written in Rust, so that the
//! build needs no system `protoc`.

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let file = root.join("mcpgateway/provider/v1/provider.proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let descriptors = match protox::compile([&file], [&root]) {
        Ok(descriptors) => descriptors,
        Err(error) => panic!("{error:?}"),
    };
    tonic_prost_build::configure()
        .compile_fds(descriptors)
        .expect("generating the Provider service code");
}
