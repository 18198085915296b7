//! The raw layer: bindgen's view of `c_shim/fairmatch_shim.h` (plus
//! `SLURM_VERSION_NUMBER`), nothing else.
#![allow(non_camel_case_types, non_upper_case_globals, dead_code)]
include!(concat!(env!("OUT_DIR"), "/shim_bindings.rs"));
