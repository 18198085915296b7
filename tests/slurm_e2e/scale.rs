//! Scale: what a busy cluster's cycles cost slurmctld. The throughput
//! comparison with backfill is a bench (`bench.rs`); this is the test that
//! the cheap cycles of a full cluster lose no start.

use super::harness::{harness_time, now, run, Cluster};
use super::{hint, FAST};
use std::time::{Duration, Instant};

/// The agent's cycle lines logged at or after `since` (harness clock).
fn cycles_since(c: &Cluster, since: f64) -> Vec<String> {
    c.log()
        .lines()
        .filter(|l| l.contains("fairmatch: cycle "))
        .filter(|l| harness_time(l).is_some_and(|t| t >= since))
        .map(str::to_owned)
        .collect()
}

const SKIPPED: &str = "no plan: every CPU held";

/// Twelve one-CPU jobs of 300 s, running: on the default test cluster (2
/// CPU nodes of 4 CPUs, 2 GPU nodes of 2 GPUs and 2 CPUs) they hold every
/// CPU.
fn hold_every_cpu(c: &Cluster) -> Vec<u32> {
    let holders: Vec<u32> = (0..12)
        .map(|_| {
            c.submit(
                &["-p", "cpu,gpu", "--comment", &hint(300.0, 300.0)],
                300.0,
                300.0,
            )
        })
        .collect();
    for &h in &holders {
        c.wait_state(h, "RUNNING", Duration::from_secs(30));
    }
    holders
}

/// One of `holders` that runs on a CPU node.
fn holder_on_a_cpu_node(c: &Cluster, holders: &[u32]) -> u32 {
    holders
        .iter()
        .copied()
        .find(|&h| c.job(h)["Partition"] == "cpu")
        .expect("a holder on a CPU node")
}

/// With every CPU held, a cycle skips the pending jobs' copy and the plan
/// (nothing could start), yet plans at least every 10 s (so a new job gets
/// its reason), and a CPU that frees is used by the next cycle.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn v_a_full_cluster_skips_the_plan_and_a_freed_cpu_is_used_at_once() {
    let c = Cluster::start(&["--conf-line", "SlurmctldDebug=debug"], FAST);
    let holders = hold_every_cpu(&c);
    let submitted = now();
    let waiting = c.submit(&["-p", "cpu,gpu", "--comment", &hint(1.0, 1.0)], 1.0, 1.0);

    // The submission wakes the agent for about a second of 100 ms ticks;
    // the plan that placed the holders ran less than 10 s ago.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(c.state(waiting), "PENDING");
    let early = cycles_since(&c, submitted);
    let skipped = early.iter().filter(|l| l.contains(SKIPPED)).count();
    eprintln!(
        "{} cycles in the 3 s after the submission, {skipped} without a plan",
        early.len()
    );
    assert!(
        skipped >= 3,
        "a full cluster's cycles still plan:\n{}",
        early.join("\n")
    );

    // The idle check (every 5 s) plans once 10 s have passed since the
    // last plan: the waiting job is in it. Slack: 8 s.
    let deadline = Instant::now() + Duration::from_secs(20);
    let planned = loop {
        let planned = cycles_since(&c, submitted)
            .into_iter()
            .find(|l| l.contains(" 1 queued ("));
        if let Some(line) = planned {
            break line;
        }
        assert!(
            Instant::now() < deadline,
            "no plan with the waiting job within 20 s of its submission:\n{}",
            cycles_since(&c, submitted).join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!("planned while full: {planned}");
    assert_eq!(c.state(waiting), "PENDING");

    // A CPU frees: the next cycle plans and starts the waiting job. The
    // holder's ending takes its epilog; 3 s of slack on a loaded machine,
    // where ticks are 100 ms.
    let freed = holder_on_a_cpu_node(&c, &holders);
    let cancelled = now();
    run(c.cmd("scancel").arg(freed.to_string()));
    let started = c.wait_state(waiting, "RUNNING", Duration::from_secs(10));
    eprintln!(
        "started {:.2} s after a holder was cancelled",
        started - cancelled
    );
    assert!(
        started - cancelled <= 3.0,
        "the freed CPU waited {:.2} s",
        started - cancelled
    );
    c.wait_done(&[waiting], Duration::from_secs(30));
}

/// Between its ticks the agent polls for a job leaving a node and for a
/// submission, and plans for them at once, as Slurm's own scheduler runs on
/// both. With a 5 s tick, a job submitted to an idle cluster and a job
/// waiting for a CPU that frees both start well within it. Without the
/// polls (`EventPollMs=0`) each waits for the tick: in the two runs that
/// checked it, the submissions waited 3.2 to 4.3 s (one run after another,
/// each probe lands at about the same point of the tick) and the freed CPU
/// 2.9 s.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn w_a_submission_and_a_freed_cpu_wake_the_agent_between_ticks() {
    let c = Cluster::start(
        &["--conf-line", "SlurmctldDebug=debug"],
        "IntervalMs=5000\n",
    );
    // Three jobs, one at a time, on the idle cluster. Bound: 1.5 s from
    // sbatch to the script's start (a poll, a cycle, slurmd's launch; the
    // bench's probes take 0.1 to 0.15 s on a quiet machine), against the
    // tick's 5 s.
    let mut waits = Vec::new();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(700));
        let before = now();
        let id = c.submit(&["-p", "cpu,gpu", "--comment", &hint(0.1, 0.1)], 0.1, 0.1);
        c.wait_done(&[id], Duration::from_secs(30));
        waits.push(c.record(id).start - before);
    }
    eprintln!("sbatch to start on an idle cluster: {waits:.2?} s");
    assert!(
        waits.iter().all(|&w| w <= 1.5),
        "a submission waited for the tick: {waits:.2?} s"
    );

    // Every CPU held, one job waiting.
    let holders = hold_every_cpu(&c);
    let waiting = c.submit(&["-p", "cpu,gpu", "--comment", &hint(1.0, 1.0)], 1.0, 1.0);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(c.state(waiting), "PENDING");
    // A holder ends. Bound: 2 s from scancel to the waiting job's start
    // (the epilog, a poll, a cycle, the launch), against the 5 s tick.
    let freed = holder_on_a_cpu_node(&c, &holders);
    let cancelled = now();
    run(c.cmd("scancel").arg(freed.to_string()));
    c.wait_done(&[waiting], Duration::from_secs(30));
    let waited = c.record(waiting).start - cancelled;
    eprintln!("scancel of a holder to the waiting job's start: {waited:.2} s");
    assert!(
        waited <= 2.0,
        "the freed CPU waited for the tick: {waited:.2} s"
    );
    run(c.cmd("scancel").args(holders.iter().map(|h| h.to_string())));
}
