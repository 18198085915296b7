//! Hints as sbatch options through fairmatch's SPANK plugin
//! (`--fm-runtime`, `--fm-preemptible`, on the command line and as
//! `#SBATCH` lines): they place jobs as the same hint in `--comment`
//! does, win over it, reach array tasks, and a malformed one is refused
//! by sbatch itself before anything is queued. (`--fm-preemptible` is
//! the opt-in of preemption.rs's scenarios.)

use super::harness::{run, Cluster};
use super::typed_gpus::TWO_TYPES;
use super::FAST;
use std::process::Output;
use std::time::Duration;

fn option(gpu: f64, cpu: f64) -> String {
    format!("--fm-runtime=gpu={gpu:.3}s,cpu={cpu:.3}s")
}

/// Submits the harness's sleeper through a script whose `#SBATCH` lines
/// are `lines`; returns the job id.
fn submit_with_lines(c: &Cluster, lines: &[&str], args: &[&str], gpu: f64, other: f64) -> u32 {
    let script = c.path().join(format!("lines-{}.sh", lines.join("").len()));
    let header: String = lines.iter().map(|l| format!("#SBATCH {l}\n")).collect();
    let body = format!(
        "#!/bin/sh\n{header}exec {} \"$@\"\n",
        c.path().join("job.sh").display()
    );
    std::fs::write(&script, body).unwrap();
    let out = run(c
        .cmd("sbatch")
        .args(["--parsable", "-o", "/dev/null", "-e", "/dev/null"])
        .args(args)
        .arg(&script)
        .arg(c.path())
        .arg(format!("{gpu:.3}"))
        .arg(format!("{other:.3}")));
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("sbatch printed {out:?}"))
}

/// sbatch's answer to `args`, which must be refused.
fn refused(c: &Cluster, args: &[&str]) -> Output {
    let out = c
        .cmd("sbatch")
        .args(["-o", "/dev/null", "-p", "cpu,gpu"])
        .args(args)
        .args(["--wrap", "true"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "sbatch {args:?} was accepted: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn o_hints_given_as_options_place_jobs_as_comments_do() {
    let c = Cluster::start(TWO_TYPES, FAST);
    let help = run(c.cmd("sbatch").arg("--help"));
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--fm-runtime") && help.contains("--fm-preemptible"),
        "sbatch --help lists no hint option:\n{help}"
    );

    // The same checks as the comment's: device choice, from the command
    // line and from #SBATCH lines.
    let gpu_fast = c.submit(&["-p", "cpu,gpu", &option(1.0, 5.0)], 1.0, 5.0);
    let cpu_fast = submit_with_lines(&c, &[&option(5.0, 1.0)], &["-p", "cpu,gpu"], 5.0, 1.0);
    // Keys by GPU type, and by partition and type.
    let on_a100 = c.submit(&["-p", "gpu", "--fm-runtime=a100=1s,v100=9s"], 1.0, 1.0);
    let on_v100 = submit_with_lines(
        &c,
        &["--fm-runtime=gpu:a100=9s,gpu:v100=1s"],
        &["-p", "gpu"],
        1.0,
        1.0,
    );
    // The option wins over a comment that says the opposite, and the
    // admin comment says so.
    let both = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--comment",
            "fairmatch: gpu=1s cpu=9s",
            &option(9.0, 1.0),
        ],
        9.0,
        1.0,
    );
    // A name no partition has: accepted by sbatch (partitions are
    // slurmctld's), reported there, and the job still runs.
    let unknown = c.submit(
        &["-p", "cpu,gpu", "-t", "1", "--fm-runtime=tpu=5m"],
        1.0,
        1.0,
    );
    let ids = [gpu_fast, cpu_fast, on_a100, on_v100, both, unknown];
    c.wait_done(&ids, Duration::from_secs(90));

    let partition = |id: u32| c.record(id).partition;
    assert_eq!(partition(gpu_fast), "gpu", "{:?}", c.job(gpu_fast));
    assert_eq!(partition(cpu_fast), "cpu", "{:?}", c.job(cpu_fast));
    assert_eq!(c.record(on_a100).node, "g1", "{:?}", c.job(on_a100));
    assert_eq!(c.record(on_v100).node, "g2", "{:?}", c.job(on_v100));
    assert_eq!(partition(both), "cpu", "{:?}", c.job(both));
    let note = c.admin_comment(both);
    assert!(note.contains("comment's hint is not read"), "{note}");
    let note = c.admin_comment(unknown);
    assert!(note.contains("unknown flavor 'tpu'"), "{note}");
    assert!(note.contains("(time limit)"), "{note}");
    for id in ids {
        assert_eq!(c.job(id)["JobState"], "COMPLETED", "{:?}", c.job(id));
    }

    // An array: every task runs where the option says.
    let array = c.submit(
        &["--array=0-3", "-p", "cpu,gpu", &option(2.0, 30.0)],
        2.0,
        30.0,
    );
    c.wait_array_done(array, Duration::from_secs(90));
    let tasks: Vec<_> = c
        .records()
        .into_iter()
        .filter(|(id, _)| !ids.contains(id))
        .collect();
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    for (id, r) in &tasks {
        assert_eq!(r.partition, "gpu", "task {id}: {r:?}");
    }
    assert!(c.controller_up(), "slurmctld died");
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn p_a_malformed_option_is_refused_at_submission() {
    let c = Cluster::start(&[], FAST);
    let cases: [(&[&str], &str); 5] = [
        (&["--fm-runtime=gpu=20x"], "gpu: bad duration '20x'"),
        (&["--fm-runtime=gpu=-5m"], "negative duration"),
        (&["--fm-runtime=gpu=20"], "lacks a unit"),
        (&["--fm-runtime=gpu=1m,cpu"], "'cpu' is not flavor=duration"),
        (&["--fm-runtime="], "empty"),
    ];
    for (args, why) in cases {
        let out = refused(&c, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "sbatch {args:?}: {err}");
        assert!(err.contains("Invalid --fm-runtime argument"), "{err}");
    }
    // From a #SBATCH line too.
    let script = c.path().join("bad.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n#SBATCH --fm-runtime=cpu=3h,gpu=soon\ntrue\n",
    )
    .unwrap();
    let out = c.cmd("sbatch").arg(&script).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("gpu: bad duration 'soon'"),
        "{out:?}"
    );
    // Nothing was queued.
    let queue = run(c.cmd("squeue").args(["-h", "-o", "%i"]));
    assert!(queue.stdout.is_empty(), "{queue:?}");
}
