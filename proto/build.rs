//! Compiles the contracts with the system `protoc` (Debian's protobuf-compiler, which etcd-client's
//! build needs as well; scripts/setup.sh installs it).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tonic_prost_build::configure().compile_protos(&["kcp/store/v1/store.proto"], &["."])?;
    Ok(())
}
