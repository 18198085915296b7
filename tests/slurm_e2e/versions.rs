//! Slurm releases: a plugin built for one release and loaded by another.

use super::harness::repo;
use std::path::PathBuf;
use std::process::Command;

/// A plugin built against another release's tree is refused when slurmctld
/// loads it, with Slurm's own log line and the plugin's constructor's, which
/// names both releases; none of the rest of its code runs: Slurm
/// checks `plugin_version` (major, minor and micro) before `init()`. slurmctld then
/// stops with a fatal error, as for any scheduler plugin it cannot load;
/// it never crashes. `FAIRMATCH_OTHER_PLUGIN_DIR` names the mismatched
/// build (default: target/plugin/23.11, loaded by Debian's 22.05).
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn u_a_plugin_built_for_another_release_is_refused() {
    let other = std::env::var_os("FAIRMATCH_OTHER_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/plugin/23.11"));
    assert!(
        other.join("sched_fairmatch.so").is_file(),
        "no plugin in {}: run scripts/build-plugin.sh 23.11",
        other.display()
    );
    let dir = tempfile::Builder::new()
        .prefix("fairmatch-slurm-")
        .tempdir()
        .expect("temp dir");
    let script = repo().join("scripts/slurm-cluster.sh");
    let started = Command::new(&script)
        .arg("start")
        .arg(dir.path())
        .arg("--plugin-dir")
        .arg(&other)
        .output()
        .expect("slurm-cluster.sh runs");
    let _ = Command::new(&script).arg("stop").arg(dir.path()).output();
    let log = std::fs::read_to_string(dir.path().join("slurmctld.log")).unwrap_or_default();
    assert!(
        !started.status.success(),
        "slurmctld came up with a plugin built for another release:\n{log}"
    );
    assert!(
        log.contains("Incompatible Slurm plugin") || log.contains("undefined symbol"),
        "no line says why the plugin was refused:\n{log}"
    );
    // The plugin is linked for lazy binding, so dlopen() succeeds and its
    // constructor names both releases before Slurm refuses it.
    let ours = log
        .lines()
        .find(|l| l.contains("fairmatch: this sched_fairmatch.so was built for Slurm"))
        .unwrap_or_else(|| panic!("no line names both releases:\n{log}"));
    let running = slurmctld_series();
    assert!(
        ours.contains(&format!("this slurmctld runs Slurm {running}")),
        "{ours} (slurmctld is {running})"
    );
    assert!(
        log.contains("cannot create sched context for sched/fairmatch")
            && log.contains("fatal: Failed to initialize"),
        "{log}"
    );
    // The Rust side logs "fairmatch: loaded; ..." from init().
    assert!(
        !log.contains("fairmatch: loaded"),
        "the plugin's init() ran:\n{log}"
    );
    assert!(
        !log.contains("Segmentation") && !log.contains("SIGSEGV"),
        "slurmctld crashed:\n{log}"
    );
}

/// The release series (`22.05`) of the slurmctld on `PATH`.
fn slurmctld_series() -> String {
    let out = Command::new("slurmctld")
        .arg("-V")
        .output()
        .expect("slurmctld -V runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().nth(1).unwrap_or_default();
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}
