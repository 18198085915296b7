// With the `plugin` feature, compiles the C shim against a configured Slurm
// source tree named by SLURM_SRC_DIR and generates the Rust view of the
// shim's header. Without it, does nothing: a plain `cargo build` never
// needs Slurm.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SLURM_SRC_DIR");
    #[cfg(feature = "plugin")]
    shim::build();
    #[cfg(feature = "spank")]
    spank::build();
}

/// The SPANK plugin's C half, against the Slurm named by SLURM_SRC_DIR
/// (only its public `slurm/spank.h` and its version number).
#[cfg(feature = "spank")]
mod spank {
    use std::path::PathBuf;

    pub fn build() {
        println!("cargo:rerun-if-changed=c_shim/spank_fairmatch.c");
        let Some(src) = std::env::var_os("SLURM_SRC_DIR").map(PathBuf::from) else {
            panic!("the `spank` feature needs SLURM_SRC_DIR (scripts/build-plugin.sh sets it)");
        };
        let version_h = src.join("slurm/slurm_version.h");
        let text = std::fs::read_to_string(&version_h).unwrap_or_else(|e| {
            panic!(
                "cannot read {}: {e} (run ./configure there first)",
                version_h.display()
            )
        });
        let number = text
            .lines()
            .find_map(|l| l.strip_prefix("#define SLURM_VERSION_NUMBER"))
            .map(str::trim)
            .unwrap_or_else(|| panic!("{} defines no SLURM_VERSION_NUMBER", version_h.display()));
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        std::fs::write(
            out.join("spank_version.rs"),
            format!("/// The Slurm release built against.\nconst SLURM_VERSION_NUMBER: u32 = {number};\n"),
        )
        .expect("cannot write the SPANK plugin's version");
        cc::Build::new()
            .file("c_shim/spank_fairmatch.c")
            .include(&src)
            .flag("-Werror=implicit-function-declaration")
            .flag("-Werror=incompatible-pointer-types")
            .compile("fairmatch_spank");
    }
}

#[cfg(feature = "plugin")]
mod shim {
    use std::path::PathBuf;

    pub fn build() {
        const SOURCES: [&str; 9] = [
            "c_shim/sched_fairmatch.c",
            "c_shim/fm_snapshot.c",
            "c_shim/fm_start.c",
            "c_shim/fm_lost_launch.c",
            "c_shim/fm_preempt.c",
            "c_shim/fm_deadline.c",
            "c_shim/fm_hold.c",
            "c_shim/fm_loaded_by.c",
            "c_shim/fm_accounting.c",
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

        let bindings = bindgen::Builder::default()
            .header("c_shim/bindgen_wrapper.h")
            .clang_arg(format!("-I{}", src.display()))
            .clang_arg("-Ic_shim")
            .allowlist_type("fm_.*")
            // The shim's functions for Rust to call, and Rust's exports as
            // the shim declares them (for ffi_check.rs, below).
            .allowlist_function("fairmatch_shim_.*|fairmatch_rs_.*")
            .allowlist_var("FM_.*|SLURM_VERSION_NUMBER|fairmatch_rs_.*")
            .generate()
            .expect("bindgen could not read c_shim/bindgen_wrapper.h");
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        bindings
            .write_to_file(out.join("shim_bindings.rs"))
            .expect("cannot write the shim bindings");
        std::fs::write(out.join("ffi_check.rs"), ffi_check(&bindings.to_string()))
            .expect("cannot write the FFI check");
    }

    /// Every `fairmatch_rs_*` function and static the header declares,
    /// beside the Rust definition of that name, in a one-element-type
    /// array each (src/plugin/mod.rs includes it): the crate compiles only
    /// if each C prototype has exactly the type of its Rust export.
    fn ffi_check(bindings: &str) -> String {
        let mut check = String::from(
            "// Generated by build.rs from c_shim/fairmatch_shim.h: see src/plugin/mod.rs.\n\
             const _: () = {\n",
        );
        let mut names = 0;
        for line in bindings.lines().map(str::trim_start) {
            let (item, rest) = if let Some(rest) = line.strip_prefix("pub fn ") {
                ("fn", rest)
            } else if let Some(rest) = line.strip_prefix("pub static ") {
                ("static", rest)
            } else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.starts_with("fairmatch_rs_") {
                assert!(
                    !(item == "static" && rest.contains("fairmatch_rs_")),
                    "c_shim/fairmatch_shim.h must declare Rust's statics const: {line}"
                );
                continue;
            }
            names += 1;
            check += &match item {
                "fn" => format!("    let _ = [raw::{name}, {name}];\n"),
                _ => format!("    let _ = [&raw const raw::{name}, &raw const {name}];\n"),
            };
        }
        assert!(
            names > 0,
            "bindgen's output declares no fairmatch_rs_ item: the FFI check would check nothing"
        );
        check + "};\n"
    }
}
