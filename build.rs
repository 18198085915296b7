// The Slurm shim is compiled here once a configured Slurm source tree is
// available (see issue 3). Until then the build only declares what should
// trigger a rebuild, so a plain `cargo build` never needs Slurm.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SLURM_SRC_DIR");
}
