// With the `plugin` feature, compiles the C shim against a configured Slurm
// source tree named by SLURM_SRC_DIR and generates the Rust view of the
// shim's header. Without it, does nothing: a plain `cargo build` never
// needs Slurm.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SLURM_SRC_DIR");
    #[cfg(feature = "plugin")]
    shim::build();
}

#[cfg(feature = "plugin")]
mod shim {
    use std::path::PathBuf;

    pub fn build() {
        const SOURCES: [&str; 5] = [
            "c_shim/sched_fairmatch.c",
            "c_shim/fm_snapshot.c",
            "c_shim/fm_start.c",
            "c_shim/fm_hold.c",
            "c_shim/fm_loaded_by.c",
        ];
        for f in SOURCES.iter().chain(&[
            "c_shim/fm_slurm.h",
            "c_shim/fm_compat.h",
            "c_shim/fairmatch_shim.h",
            "c_shim/bindgen_wrapper.h",
        ]) {
            println!("cargo:rerun-if-changed={f}");
        }
        let Some(src) = std::env::var_os("SLURM_SRC_DIR").map(PathBuf::from) else {
            panic!(
                "the `plugin` feature needs SLURM_SRC_DIR: a Slurm source tree of the \
                 installed version, after ./configure (scripts/slurm-deps.sh prepares one)"
            );
        };
        if !src.join("config.h").is_file() || !src.join("slurm/slurm_version.h").is_file() {
            panic!(
                "SLURM_SRC_DIR={} has no config.h or slurm/slurm_version.h: run ./configure there first",
                src.display()
            );
        }
        cc::Build::new()
            .files(SOURCES)
            .include(&src)
            .include(src.join("slurm"))
            .include("c_shim")
            .flag("-Werror=implicit-function-declaration")
            .flag("-Werror=int-conversion")
            .flag("-Werror=incompatible-pointer-types")
            .flag_if_supported("-Wno-unused-parameter")
            .flag_if_supported("-Wno-sign-compare")
            .compile("fairmatch_shim");
        // Lazy binding, as Slurm's own plugins and its RTLD_LAZY dlopen()
        // expect: with rustc's default -z now, a plugin built for another
        // release fails dlopen() on the first function that release lacks,
        // before c_shim/fm_loaded_by.c can say which releases differ.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,lazy");

        let bindings = bindgen::Builder::default()
            .header("c_shim/bindgen_wrapper.h")
            .clang_arg(format!("-I{}", src.display()))
            .clang_arg("-Ic_shim")
            .allowlist_type("fm_.*")
            .allowlist_function("fairmatch_shim_.*")
            .allowlist_var("FM_.*|SLURM_VERSION_NUMBER")
            .generate()
            .expect("bindgen could not read c_shim/bindgen_wrapper.h");
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        bindings
            .write_to_file(out.join("shim_bindings.rs"))
            .expect("cannot write the shim bindings");
    }
}
