//! The safe layer of the Slurm plugin (feature `plugin`): the symbols
//! slurmctld looks up and the functions the C shim's agent thread calls.
//!
//! The C side owns the plugin's life: `init`, `fini` and
//! `sched_p_reconfig` are exported from here only because a cdylib exports
//! Rust symbols alone, and they forward straight to the shim. The shim's
//! agent thread is then the only caller of the rest, once per cycle:
//! `fairmatch_rs_plan` with a snapshot, `fairmatch_rs_observe` with what
//! became of the starts, and `fairmatch_rs_load_config` when an admin
//! reconfigures. So the state mutex is never contended, and slurmctld's
//! own threads never wait for a solve.
//!
//! Every entry catches panics, so no unwind crosses into slurmctld; on a
//! failure jobs stay pending and the shim's first-come first-served
//! fallback keeps Slurm usable.

mod convert;
mod raw;
mod state_file;

use crate::slurm::config::{self, Config};
use crate::slurm::planner::Planner;
use parking_lot::Mutex;
use state_file::StateFile;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

// The symbols Slurm's plugin loader reads. plugin_name and plugin_type are
// char arrays, as in C plugins; plugin_version must equal the running
// slurmctld's SLURM_VERSION_NUMBER or the load is refused.
/// The plugin's description, as `scontrol show config` prints it.
#[no_mangle]
#[used]
pub static plugin_name: [u8; 46] = *b"fairmatch: fair heterogeneity-aware scheduler\0";
/// `SchedulerType=sched/fairmatch` selects this plugin.
#[no_mangle]
#[used]
pub static plugin_type: [u8; 16] = *b"sched/fairmatch\0";
/// The Slurm release the plugin was built against; any other is refused.
#[no_mangle]
#[used]
pub static plugin_version: u32 = raw::SLURM_VERSION_NUMBER;

// The C prototypes of this file's `fairmatch_rs_*` exports are written by
// hand in c_shim/fairmatch_shim.h. bindgen reads them into `raw` too, and
// build.rs writes, for every `fairmatch_rs_*` item the header declares,
// `let _ = [raw::name, name];` into one `const _` block: an array holds
// one type, so the two function pointers must be of exactly the same type
// (a safe export meets its prototype as an unsafe one) and the crate does
// not compile when a prototype drifts from its export, or names one that
// does not exist. rustc's `clashing_extern_declarations` lint compares
// `extern` blocks only with each other, never with a `#[no_mangle]`
// definition, so it could not catch this.
include!(concat!(env!("OUT_DIR"), "/ffi_check.rs"));

/// The shim's settings until fairmatch.conf is first read (and for good,
/// should that first read fail): the defaults of `Config`, every partition
/// managed. The shim reads this instead of writing the defaults again.
#[no_mangle]
pub static fairmatch_rs_defaults: raw::fm_settings_t = raw::fm_settings_t {
    interval_ms: config::DEFAULT_INTERVAL_MS,
    event_poll_ms: config::DEFAULT_EVENT_POLL_MS,
    hold_ms: config::DEFAULT_LOCK_HOLD_MS,
    // SAFETY: integers and a char array: all zeros is a valid value, and
    // the zeroed partitions are "" (every partition).
    ..unsafe { std::mem::zeroed() }
};

/// The planner: configuration and everything learned (attained service,
/// run times, the previous plan). Survives reconfigures.
static STATE: Mutex<Option<Planner>> = Mutex::new(None);

/// Where the planner's learned state is saved, once slurmctld's
/// `StateSaveLocation` is known. Only the agent thread takes it, after
/// [`STATE`].
static SAVED: Mutex<Option<StateFile>> = Mutex::new(None);

/// Runs `f`, turning a panic into `fallback` and an error in the log.
fn guarded<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log::error!("{what} failed: {msg}; jobs stay pending");
            fallback
        }
    }
}

/// Fault injection for the tests: with `FAIRMATCH_FAULT=plan` in
/// slurmctld's environment every plan panics, which shows that no panic
/// crosses into slurmctld and that the fallback keeps the cluster
/// scheduling.
fn injected_fault(what: &str) -> bool {
    std::env::var("FAIRMATCH_FAULT").is_ok_and(|v| v == what)
}

/// Reads the configuration; a missing file means the documented defaults,
/// a bad line a warning in the log and that key's default.
fn load_config(path: &Path) -> Config {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let (config, warnings) = config::parse(&path.display().to_string(), &text);
            for w in warnings {
                log::warn!("{w}");
            }
            config
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            log::info!("no {}; using defaults", path.display());
            Config::default()
        }
        Err(e) => {
            log::warn!("cannot read {}: {e}; using defaults", path.display());
            Config::default()
        }
    }
}

fn describe(c: &Config) -> String {
    format!(
        "alpha={} max_candidates={:?} fairshare_by={:?} cpus_per_slot={} default_runtime={}s interval_ms={} event_poll_ms={} lock_hold_ms={} partitions={}",
        c.alpha,
        c.max_candidates,
        c.fairshare_by,
        c.cpus_per_slot,
        c.default_runtime,
        c.interval_ms,
        c.event_poll_ms,
        c.lock_hold_ms,
        if c.partitions.is_empty() { "all".into() } else { c.partitions.join(",") }
    )
}

/// Slurm loads the plugin: starts the shim's agent thread.
#[no_mangle]
pub extern "C" fn init() -> i32 {
    guarded("init", -1, || {
        logger::install();
        // SAFETY: the shim starts its agent thread; no Rust lock is held.
        unsafe { raw::fairmatch_shim_init() }
    })
}

/// Slurm unloads the plugin: stops and joins the agent thread.
#[no_mangle]
pub extern "C" fn fini() {
    // SAFETY: the shim stops and joins its agent thread.
    guarded("fini", (), || unsafe { raw::fairmatch_shim_fini() })
}

/// `scontrol reconfigure`: the agent rereads fairmatch.conf at its next
/// cycle, outside slurmctld's locks.
#[no_mangle]
pub extern "C" fn sched_p_reconfig() -> i32 {
    // SAFETY: the shim only flags its agent; it waits for nothing.
    guarded("reconfig", (), || unsafe { raw::fairmatch_shim_reconfig() });
    0
}

/// # Safety
/// `slurm_conf` is null or a NUL-terminated path; `out` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_load_config(
    slurm_conf: *const c_char,
    state_dir: *const c_char,
    requeue_delay: u32,
    out: *mut raw::fm_settings_t,
) -> i32 {
    guarded("load_config", -1, || {
        let conf = convert::text(slurm_conf);
        let state_dir = convert::text(state_dir);
        let path = Path::new(&conf)
            .parent()
            .unwrap_or(Path::new("/etc/slurm"))
            .join("fairmatch.conf");
        let mut config = load_config(&path);
        config.requeue_delay = f64::from(requeue_delay);
        let mut state = STATE.lock();
        match state.as_mut() {
            Some(planner) => {
                log::info!("reconfigured; {}", describe(&config));
                planner.set_config(config);
            }
            None => {
                log::info!("loaded; {}", describe(&config));
                let mut planner = Planner::new(config);
                let file = StateFile::in_dir(&state_dir);
                if let Some(file) = &file {
                    file.restore(&mut planner);
                }
                *SAVED.lock() = file;
                *state = Some(planner);
            }
        }
        let c = state.as_ref().map(|p| p.config()).expect("set above");
        if let Some(out) = out.as_mut() {
            convert::settings(c, out);
        }
        0
    })
}

/// # Safety
/// `snapshot` points to a valid snapshot and `out` to `cap` writable
/// decisions, as `fairmatch_shim.h` describes.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_plan(
    snapshot: *const raw::fm_snapshot_t,
    out: *mut raw::fm_decision_t,
    cap: usize,
) -> i64 {
    guarded("plan", -1, || {
        if snapshot.is_null() || (out.is_null() && cap > 0) {
            return -1;
        }
        if injected_fault("plan") {
            panic!("injected fault (FAIRMATCH_FAULT=plan)");
        }
        let snap = convert::snapshot(&*snapshot);
        let mut state = STATE.lock();
        let Some(planner) = state.as_mut() else {
            return -1;
        };
        let decisions = planner.plan(&snap);
        if let Some(file) = SAVED.lock().as_mut() {
            file.save_if_due(planner, snap.now, false);
        }
        let out = out_slice(out, cap);
        if decisions.len() > out.len() {
            log::error!("{} decisions for {} places", decisions.len(), out.len());
        }
        let n = decisions.len().min(out.len());
        for (d, o) in decisions.iter().zip(out.iter_mut()) {
            convert::decision(d, o);
        }
        n as i64
    })
}

/// A cycle that plans nothing: learns the run times of the jobs that
/// finished since the last snapshot.
///
/// # Safety
/// `snapshot` points to a valid snapshot, as `fairmatch_shim.h` describes.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_learn(snapshot: *const raw::fm_snapshot_t) {
    guarded("learn", (), || {
        if snapshot.is_null() {
            return;
        }
        let snap = convert::snapshot(&*snapshot);
        if let Some(planner) = STATE.lock().as_mut() {
            planner.learn(&snap);
            if let Some(file) = SAVED.lock().as_mut() {
                file.save_if_due(planner, snap.now, false);
            }
        }
    })
}

/// Seconds of slurmdbd's history the shim should read now: the
/// configured `LearnFromAccounting` while the planner has learned nothing
/// (no state file was restored); 0 otherwise.
#[no_mangle]
pub extern "C" fn fairmatch_rs_accounting_wanted() -> f64 {
    guarded("accounting_wanted", 0.0, || {
        STATE
            .lock()
            .as_ref()
            .and_then(Planner::accounting_wanted)
            .unwrap_or(0.0)
    })
}

/// Runs the shim read from slurmdbd, held for the next plan to learn.
///
/// # Safety
/// `runs` is null (then `count` is ignored) or points to `count` valid
/// records, as `fairmatch_shim.h` describes.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_add_accounting_runs(
    runs: *const raw::fm_finished_t,
    count: usize,
) -> usize {
    guarded("add_accounting_runs", 0, || {
        let runs = convert::finished(runs, count);
        STATE
            .lock()
            .as_mut()
            .map_or(0, |planner| planner.add_accounting_runs(runs))
    })
}

/// The shim's output array: `cap` places at `out` (null when `cap` is 0).
///
/// # Safety
/// `out` has room for `cap` values, which nothing else uses meanwhile.
unsafe fn out_slice<'a, T>(out: *mut T, cap: usize) -> &'a mut [T] {
    if cap == 0 {
        &mut []
    } else {
        std::slice::from_raw_parts_mut(out, cap)
    }
}

/// Which pending records of `snapshot` Slurm's checks must look at next
/// ([`Planner::to_check`]), at most `cap` of them into `out`.
///
/// # Safety
/// `snapshot` is a valid snapshot from the shim, and `out` has room for
/// `cap` indices.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_to_check(
    snapshot: *const raw::fm_snapshot_t,
    out: *mut usize,
    cap: usize,
) -> i64 {
    guarded("to_check", -1, || {
        if snapshot.is_null() || (out.is_null() && cap > 0) {
            return -1;
        }
        let snap = convert::snapshot(&*snapshot);
        let state = STATE.lock();
        let Some(planner) = state.as_ref() else {
            return -1;
        };
        let wanted = planner.to_check(&snap);
        let out = out_slice(out, cap);
        let n = wanted.len().min(out.len());
        out[..n].copy_from_slice(&wanted[..n]);
        n as i64
    })
}

/// # Safety
/// `outcomes` is null or points to `count` valid outcomes.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_observe(outcomes: *const raw::fm_outcome_t, count: usize) {
    guarded("observe", (), || {
        let outcomes = convert::outcomes(outcomes, count);
        if let Some(planner) = STATE.lock().as_mut() {
            planner.observe(&outcomes);
        }
    })
}

/// The agent stops: what the planner learned is saved, and the planner
/// dropped.
#[no_mangle]
pub extern "C" fn fairmatch_rs_shutdown() {
    guarded("shutdown", (), || {
        let mut state = STATE.lock();
        if let (Some(planner), Some(file)) = (state.as_ref(), SAVED.lock().as_mut()) {
            file.save_if_due(planner, planner.last_now(), true);
        }
        *state = None;
        *SAVED.lock() = None;
    })
}

mod logger {
    //! `log` records go to slurmctld's log through the shim.
    use super::raw;
    use std::ffi::CString;

    struct SlurmLogger;

    impl log::Log for SlurmLogger {
        fn enabled(&self, _: &log::Metadata) -> bool {
            true
        }
        fn log(&self, record: &log::Record) {
            let level = match record.level() {
                log::Level::Error => 1,
                log::Level::Warn => 2,
                log::Level::Info => 3,
                log::Level::Debug => 4,
                log::Level::Trace => 5,
            };
            let text = record.args().to_string().replace('\0', " ");
            if let Ok(c) = CString::new(text) {
                // SAFETY: the shim copies the message into Slurm's log.
                unsafe { raw::fairmatch_shim_log(level, c.as_ptr()) };
            }
        }
        fn flush(&self) {}
    }

    static LOGGER: SlurmLogger = SlurmLogger;

    pub fn install() {
        // A second init (after fini) finds the logger already set: fine.
        let _ = log::set_logger(&LOGGER);
        log::set_max_level(log::LevelFilter::Debug);
    }
}
