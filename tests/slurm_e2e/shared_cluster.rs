//! fairmatch on a shared cluster: Slurm's own rules, refused starts that
//! leave no trace, arrays, unmodelled jobs beside managed ones, and a
//! switch back to sched/backfill.

use super::harness::{now, Cluster};
use super::{hint, FAST};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn state(c: &Cluster, id: u32) -> String {
    c.job(id).get("JobState").cloned().unwrap_or_default()
}

fn wait_state(c: &Cluster, id: u32, want: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while state(c, id) != want {
        assert!(
            Instant::now() < deadline,
            "job {id} not {want}: {:?}\n{}",
            c.job(id),
            c.log_tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A pending job is as its user submitted it: all its partitions, no GRES
/// it did not ask for, not held.
fn assert_as_submitted(job: &HashMap<String, String>, partitions: &str) {
    assert_eq!(job["Partition"], partitions, "{job:?}");
    assert!(
        job.get("TresPerNode").is_none_or(|t| t.is_empty()),
        "GRES added: {job:?}"
    );
    assert_ne!(job["Priority"], "0", "held: {job:?}");
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn g_a_refused_start_leaves_the_job_as_submitted() {
    let c = Cluster::start(&["--licenses", "lic:1"], FAST);
    let holder = c.submit(
        &["-p", "cpu", "-L", "lic:1", "--comment", &hint(6.0, 6.0)],
        6.0,
        6.0,
    );
    wait_state(&c, holder, "RUNNING", Duration::from_secs(20));
    // fairmatch plans it on a GPU; Slurm refuses while the license is out.
    let job = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "-L",
            "lic:1",
            "--comment",
            &hint(1.0, 10.0),
        ],
        1.0,
        10.0,
    );
    let mut reasons = Vec::new();
    while state(&c, holder) == "RUNNING" {
        let j = c.job(job);
        if j["JobState"] == "PENDING" {
            assert_as_submitted(&j, "cpu,gpu");
            reasons.push(j["Reason"].clone());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let refusals = c.log().matches(&format!("JobId={job} not started")).count();
    eprintln!("refused starts: {refusals}; reasons seen: {reasons:?}");
    assert!(refusals >= 1, "no refused start in the log");
    assert!(
        reasons.iter().any(|r| r == "Licenses"),
        "Slurm's reason never shown: {reasons:?}"
    );
    c.wait_done(&[holder, job], Duration::from_secs(60));
    let j = c.job(job);
    assert!(j["Partition"].starts_with("gpu"), "{j:?}");
    assert!(j["JOB_GRES"].contains("gpu:1"), "{j:?}");
    assert_eq!(c.record(job).partition, "gpu");
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn h_exclude_nodelist_and_constraint_hold() {
    let c = Cluster::start(&[], FAST);
    // Left alone, the plan would take the first node of each partition.
    let excluded = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--exclude",
            "g1",
            "--comment",
            &hint(1.0, 5.0),
        ],
        1.0,
        5.0,
    );
    let listed = c.submit(
        &["-p", "cpu", "-w", "c2", "--comment", &hint(5.0, 1.0)],
        5.0,
        1.0,
    );
    // GPU-fast, but no GPU node has the feature: it must run on c1.
    let constrained = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--constraint",
            "cpu1",
            "--comment",
            &hint(1.0, 2.0),
        ],
        1.0,
        2.0,
    );
    // GPU-fast, but every GPU node is excluded: it must run on a CPU.
    let no_gpus = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--exclude",
            "g1,g2",
            "--comment",
            &hint(1.0, 2.0),
        ],
        1.0,
        2.0,
    );
    c.wait_done(
        &[excluded, listed, constrained, no_gpus],
        Duration::from_secs(60),
    );
    assert_eq!(c.record(excluded).node, "g2");
    assert_eq!(c.record(listed).node, "c2");
    assert_eq!(c.record(constrained).node, "c1");
    assert_eq!(c.record(no_gpus).partition, "cpu");
    let j = c.job(excluded);
    assert!(j["ExcNodeList"].contains("g1"), "--exclude lost: {j:?}");
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn i_an_array_runs_where_its_hint_says() {
    let c = Cluster::start(&[], FAST);
    let array = c.submit(
        &[
            "--array=0-5",
            "-p",
            "cpu,gpu",
            "--comment",
            &hint(2.0, 30.0),
        ],
        2.0,
        30.0,
    );
    c.wait_array_done(array, Duration::from_secs(90));
    let records = c.records();
    assert_eq!(records.len(), 6, "{records:?}");
    for (id, r) in &records {
        assert_eq!(r.partition, "gpu", "task {id}: {r:?}");
    }
    // Operators see fairmatch's cycles where the main scheduler's were.
    let sdiag = c.sdiag();
    let cycles: u64 = sdiag
        .lines()
        .skip_while(|l| !l.contains("Main schedule statistics"))
        .find_map(|l| l.trim().strip_prefix("Total cycles:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no main-scheduler cycles in sdiag:\n{sdiag}"));
    eprintln!("sdiag: {cycles} fairmatch cycles");
    assert!(cycles > 0, "{sdiag}");
}

/// A 2-node job waits for c1, busy with `blocker`; single-node jobs keep
/// arriving behind it. Returns the seconds from its submission to its start.
fn multi_node_delay(c: &Cluster) -> f64 {
    let cpu4 = |secs: f64| format!("fairmatch: cpu={secs}s");
    let blocker = c.submit(
        &[
            "-p",
            "cpu",
            "-w",
            "c1",
            "-c",
            "4",
            "-t",
            "1",
            "--comment",
            &cpu4(8.0),
        ],
        8.0,
        8.0,
    );
    wait_state(c, blocker, "RUNNING", Duration::from_secs(20));
    let first = c.submit(&["-p", "cpu", "-c", "4", "--comment", &cpu4(4.0)], 4.0, 4.0);
    wait_state(c, first, "RUNNING", Duration::from_secs(20));
    let submitted = now();
    let wide = c.submit(&["-p", "cpu", "-N", "2", "-c", "4", "-t", "1"], 2.0, 2.0);
    let mut all = vec![blocker, first, wide];
    for _ in 0..14 {
        std::thread::sleep(Duration::from_secs(1));
        all.push(c.submit(&["-p", "cpu", "-c", "4", "--comment", &cpu4(4.0)], 4.0, 4.0));
    }
    c.wait_done(&all, Duration::from_secs(180));
    c.record(wide).start - submitted
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn j_a_multi_node_job_is_not_starved() {
    let backfill = {
        let c = Cluster::start(
            &[
                "--sched",
                "sched/backfill",
                "--sched-params",
                "bf_interval=1",
            ],
            "",
        );
        multi_node_delay(&c)
    };
    let fairmatch = {
        let c = Cluster::start(&[], FAST);
        multi_node_delay(&c)
    };
    eprintln!(
        "2-node job's start delay: sched/backfill {backfill:.1} s, sched/fairmatch {fairmatch:.1} s"
    );
    // The blocker ends about 7 s after the 2-node job is submitted.
    assert!(
        fairmatch <= backfill + 3.0,
        "fairmatch {fairmatch} s vs backfill {backfill} s"
    );
    assert!(fairmatch < 12.0, "starved: {fairmatch} s");
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn l_switching_back_to_backfill_leaves_jobs_as_submitted() {
    let c = Cluster::start(&["--licenses", "lic:1"], FAST);
    let holder = c.submit(
        &["-p", "cpu", "-L", "lic:1", "--comment", &hint(30.0, 30.0)],
        30.0,
        30.0,
    );
    wait_state(&c, holder, "RUNNING", Duration::from_secs(20));
    let refused = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "-L",
            "lic:1",
            "--comment",
            &hint(1.0, 10.0),
        ],
        1.0,
        10.0,
    );
    // Every other slot busy, so these wait with fairmatch's reasons.
    let mut ids = vec![holder, refused];
    for _ in 0..11 {
        ids.push(c.submit(
            &["-p", "cpu,gpu", "--comment", &hint(20.0, 20.0)],
            20.0,
            20.0,
        ));
    }
    let waiting: Vec<u32> = (0..3)
        .map(|_| c.submit(&["-p", "cpu,gpu", "--comment", &hint(1.0, 1.0)], 1.0, 1.0))
        .collect();
    ids.extend(&waiting);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !c.log().contains(&format!("JobId={refused} not started")) {
        assert!(
            Instant::now() < deadline,
            "no refused start\n{}",
            c.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for &id in waiting.iter().chain([&refused]) {
        let j = c.job(id);
        assert_eq!(j["JobState"], "PENDING", "{j:?}");
        assert_as_submitted(&j, "cpu,gpu");
    }

    c.restart_controller(Some("sched/backfill"));
    for &id in waiting.iter().chain([&refused]) {
        assert_as_submitted(&c.job(id), "cpu,gpu");
    }
    c.wait_done(&ids, Duration::from_secs(120));
    for &id in &ids {
        let j = c.job(id);
        assert_eq!(j["JobState"], "COMPLETED", "{j:?}");
    }
}
