//! The safe layer of the Slurm plugin (feature `plugin`): the symbols
//! slurmctld looks up, the functions the C shim calls, and a logger that
//! writes to slurmctld's log. Every `extern "C"` entry catches panics, so
//! no unwind ever crosses into slurmctld; on any failure jobs stay pending
//! and the shim's first-come first-served fallback keeps Slurm usable.

mod convert;
mod raw;

use crate::slurm::config::{self, Config};
use crate::slurm::planner::Planner;
use parking_lot::Mutex;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

// The symbols Slurm's plugin loader reads. plugin_name and plugin_type are
// char arrays, as in C plugins; plugin_version must equal the running
// slurmctld's SLURM_VERSION_NUMBER or the load is refused.
#[no_mangle]
#[used]
pub static plugin_name: [u8; 46] = *b"fairmatch: fair heterogeneity-aware scheduler\0";
#[no_mangle]
#[used]
pub static plugin_type: [u8; 16] = *b"sched/fairmatch\0";
#[no_mangle]
#[used]
pub static plugin_version: u32 = raw::SLURM_VERSION_NUMBER;

/// Configuration and learned state, shared by slurmctld's threads.
struct State {
    config_path: PathBuf,
    planner: Planner,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

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

/// Reads the configuration beside slurm.conf; a missing file means the
/// documented defaults, a bad line a warning in the log.
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
        "alpha={} max_candidates={:?} fairshare_by={:?} cpus_per_slot={} default_runtime={}s interval_ms={} partitions={}",
        c.alpha,
        c.max_candidates,
        c.fairshare_by,
        c.cpus_per_slot,
        c.default_runtime,
        c.interval_ms,
        if c.partitions.is_empty() { "all".into() } else { c.partitions.join(",") }
    )
}

#[no_mangle]
pub extern "C" fn init() -> i32 {
    guarded("init", -1, || {
        logger::install();
        // SAFETY: the shim returns slurm_conf's path or null.
        let conf = unsafe { convert::text(slurm_conf_path()) };
        let config_path = Path::new(&conf)
            .parent()
            .unwrap_or(Path::new("/etc/slurm"))
            .join("fairmatch.conf");
        let config = load_config(&config_path);
        log::info!("loaded; {}", describe(&config));
        *STATE.lock() = Some(State {
            config_path,
            planner: Planner::new(config),
        });
        // SAFETY: plain call into the shim, which starts its agent thread.
        unsafe { raw::fairmatch_shim_start() }
    })
}

#[no_mangle]
pub extern "C" fn fini() {
    guarded("fini", (), || {
        // SAFETY: stops and joins the agent; no Rust lock is held.
        unsafe { raw::fairmatch_shim_stop() };
        *STATE.lock() = None;
    })
}

#[no_mangle]
pub extern "C" fn sched_p_reconfig() -> i32 {
    guarded("reconfig", 0, || {
        // SAFETY: runs under slurmctld's config lock, as Slurm calls it.
        unsafe { raw::fairmatch_shim_reconfig() };
        let mut state = STATE.lock();
        if let Some(s) = state.as_mut() {
            let config = load_config(&s.config_path);
            log::info!("reconfigured; {}", describe(&config));
            s.planner.set_config(config);
        }
        0
    })
}

#[no_mangle]
pub extern "C" fn fairmatch_rs_interval_ms() -> u32 {
    guarded("interval", 500, || {
        STATE
            .lock()
            .as_ref()
            .map_or(500, |s| s.planner.config().interval_ms)
    })
}

/// # Safety
/// `partition` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_manages(partition: *const c_char) -> i32 {
    guarded("manages", 0, || {
        let name = convert::text(partition);
        let state = STATE.lock();
        i32::from(
            state
                .as_ref()
                .is_some_and(|s| s.planner.config().manages(&name)),
        )
    })
}

/// # Safety
/// `snapshot` points to a valid snapshot and `out` to `cap` writable
/// decisions, as `fairmatch_shim.h` describes.
#[no_mangle]
pub unsafe extern "C" fn fairmatch_rs_decide(
    snapshot: *const raw::fm_snapshot_t,
    out: *mut raw::fm_decision_t,
    cap: usize,
) -> i64 {
    guarded("decide", -1, || {
        if snapshot.is_null() || (out.is_null() && cap > 0) {
            return -1;
        }
        let snap = convert::snapshot(&*snapshot);
        let mut state = STATE.lock();
        let Some(s) = state.as_mut() else { return -1 };
        let decisions = s.planner.plan(&snap);
        let out = if cap == 0 {
            &mut [][..]
        } else {
            std::slice::from_raw_parts_mut(out, cap)
        };
        let n = decisions.len().min(out.len());
        for (d, o) in decisions.iter().zip(out.iter_mut()) {
            convert::decision(d, o);
        }
        n as i64
    })
}

/// slurm.conf's path, from the shim.
unsafe fn slurm_conf_path() -> *const c_char {
    raw::fairmatch_shim_conf_path()
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
