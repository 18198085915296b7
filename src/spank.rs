//! fairmatch's SPANK plugin (feature `spank`): runtime hints as sbatch,
//! salloc and srun options (`--fm-runtime`, `--fm-preemptible`), checked
//! at submission with the same grammar slurmctld reads them with.
//!
//! The plugin is c_shim/spank_fairmatch.c; a cdylib exports only Rust
//! symbols, so the ones Slurm's plugin loader looks up are defined here
//! and forward to it. Built by scripts/build-plugin.sh as
//! `spank_fairmatch.so`, apart from `sched_fairmatch.so` (each cdylib is
//! one plugin, and sbatch loads none of the scheduler).

use crate::slurm::hints;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::catch_unwind;

include!(concat!(env!("OUT_DIR"), "/spank_version.rs"));

/// The plugin's name: Slurm names the options' variables after it.
#[no_mangle]
#[used]
pub static plugin_name: [u8; 10] = *b"fairmatch\0";
/// A SPANK plugin.
#[no_mangle]
#[used]
pub static plugin_type: [u8; 6] = *b"spank\0";
/// The Slurm release the plugin was built against: Slurm loads a SPANK
/// plugin only into the same major and minor release.
#[no_mangle]
#[used]
pub static plugin_version: u32 = SLURM_VERSION_NUMBER;

extern "C" {
    fn fairmatch_spank_init(sp: *mut c_void, ac: c_int, av: *mut *mut c_char) -> c_int;
    fn fairmatch_spank_init_post_opt(sp: *mut c_void, ac: c_int, av: *mut *mut c_char) -> c_int;
}

/// Slurm's entry point: registers the options.
///
/// # Safety
/// Called by Slurm's plugin stack with its own handle and arguments.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_init(
    sp: *mut c_void,
    ac: c_int,
    av: *mut *mut c_char,
) -> c_int {
    fairmatch_spank_init(sp, ac, av)
}

/// Slurm's entry point once every option is read: passes the hint on.
///
/// # Safety
/// Called by Slurm's plugin stack with its own handle and arguments.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_init_post_opt(
    sp: *mut c_void,
    ac: c_int,
    av: *mut *mut c_char,
) -> c_int {
    fairmatch_spank_init_post_opt(sp, ac, av)
}

/// 0 if `value` is a well-formed hint body ([`hints::check_option`]);
/// else 1, with why in `why` (NUL-terminated, cut to `len`).
///
/// # Safety
/// `value` is NULL or a NUL-terminated string; `why` is NULL or holds
/// `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_check_hint(
    value: *const c_char,
    why: *mut c_char,
    len: usize,
) -> c_int {
    let verdict = if value.is_null() {
        Err("no value".to_string())
    } else {
        let value = CStr::from_ptr(value).to_string_lossy();
        catch_unwind(|| hints::check_option(&value))
            .unwrap_or_else(|_| Err("internal error while checking".into()))
    };
    match verdict {
        Ok(()) => 0,
        Err(e) => {
            if !why.is_null() && len > 0 {
                let n = e.len().min(len - 1);
                std::ptr::copy_nonoverlapping(e.as_ptr(), why.cast::<u8>(), n);
                *why.add(n) = 0;
            }
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn the_check_names_the_bad_part_and_cuts_to_the_buffer() {
        let check = |v: &str, len: usize| {
            let v = CString::new(v).unwrap();
            let mut why = vec![1 as c_char; len.max(1)];
            let rc = unsafe { fairmatch_rs_check_hint(v.as_ptr(), why.as_mut_ptr(), len) };
            let text = unsafe { CStr::from_ptr(why.as_ptr()) };
            (rc, text.to_string_lossy().into_owned())
        };
        assert_eq!(check("gpu=20m,cpu=3h", 64).0, 0);
        let (rc, why) = check("gpu=20x", 64);
        assert_eq!(rc, 1);
        assert!(why.contains("bad duration '20x'"), "{why}");
        let (rc, why) = check("gpu=20x", 5);
        assert_eq!((rc, why.as_str()), (1, "gpu:"));
        let rc = unsafe { fairmatch_rs_check_hint(std::ptr::null(), std::ptr::null_mut(), 0) };
        assert_eq!(rc, 1);
    }
}
