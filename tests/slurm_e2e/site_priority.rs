//! The site's priority on a real cluster, beside sched/backfill: jobs an
//! admin raised with `scontrol update Priority=`, jobs of a QOS with a
//! higher priority, and jobs of a partition with a higher `PriorityTier`
//! start first when GPUs free up, as backfill starts them.

use super::harness::{self, Cluster};
use std::time::Duration;

/// Four GPUs (two nodes of two), each held by a blocker this long.
const BLOCKER: f64 = 8.0;
/// The equal jobs queued behind the blockers.
const QUEUED: usize = 16;
const RUN: f64 = 2.0;

/// A GPU cluster under `sched`, with `extra` options for slurm-cluster.sh.
fn cluster(sched: &str, extra: &[&str]) -> Cluster {
    let options = [
        &[
            "--sched",
            sched,
            "--sched-params",
            "bf_interval=1",
            "--gpu-nodes",
            "2",
            "--gpus",
            "2",
        ],
        extra,
    ]
    .concat();
    Cluster::start(&options, "IntervalMs=100\n")
}

fn gpu_job(c: &Cluster, seconds: f64, extra: &[&str]) -> u32 {
    let comment = format!("fairmatch: gpu={seconds}s");
    let args = [
        &[
            "-p",
            "gpu",
            "--gres=gpu:1",
            "-t",
            "2",
            "--comment",
            &comment,
        ],
        extra,
    ]
    .concat();
    c.submit(&args, seconds, seconds)
}

/// Fills the four GPUs, queues `QUEUED` equal jobs behind them (job `i`
/// with `extra(i)`), lets `prepare` act on them while the GPUs are busy,
/// and returns the first four to start after the blockers end.
fn first_wave(
    c: &Cluster,
    extra: impl Fn(usize) -> Vec<String>,
    prepare: impl FnOnce(&Cluster, &[u32]),
) -> Vec<u32> {
    let blockers: Vec<u32> = (0..4).map(|_| gpu_job(c, BLOCKER, &[])).collect();
    for &b in &blockers {
        c.wait_state(b, "RUNNING", Duration::from_secs(30));
    }
    let queued: Vec<u32> = (0..QUEUED)
        .map(|i| {
            let args = extra(i);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            gpu_job(c, RUN, &args)
        })
        .collect();
    prepare(c, &queued);
    for &b in &blockers {
        assert_eq!(
            c.state(b),
            "RUNNING",
            "a blocker ended before the queue was ready; lengthen BLOCKER"
        );
    }
    c.wait_done(&queued, Duration::from_secs(120));
    let mut by_start: Vec<(f64, u32)> = queued.iter().map(|&id| (c.record(id).start, id)).collect();
    by_start.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut first: Vec<u32> = by_start[..4].iter().map(|&(_, id)| id).collect();
    first.sort_unstable();
    // The first wave is a wave: the fifth job starts a run later.
    assert!(
        by_start[4].0 - by_start[3].0 >= RUN - 1.0,
        "no clear first wave: {by_start:?}"
    );
    first
}

/// Runs `scenario` under backfill and fairmatch, at once (the order is
/// checked, not the times); both must start `want` (indices into the
/// queued jobs) first.
fn side_by_side(
    label: &str,
    options: &[&str],
    extra: impl Fn(usize) -> Vec<String> + Copy + Sync,
    prepare: impl Fn(&Cluster, &[u32]) + Copy + Sync,
    setup: impl Fn(&Cluster) + Copy + Sync,
    want: &[usize],
) {
    harness::concurrently(harness::schedulers().to_vec(), |sched| {
        let c = cluster(sched, options);
        setup(&c);
        let mut queued = Vec::new();
        let first = first_wave(&c, extra, |c, ids| {
            queued = ids.to_vec();
            prepare(c, ids);
        });
        let wanted: Vec<u32> = want.iter().map(|&i| queued[i]).collect();
        eprintln!("{label}: under {sched} the first to start were {first:?}, wanted {wanted:?}");
        assert_eq!(first, wanted, "{sched}: {label}\n{}", c.log_tail());
    });
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn x_jobs_an_admin_raised_start_first() {
    // Above any priority Slurm computes (priority/basic counts down from
    // 0xffff0000), so backfill starts them first too.
    side_by_side(
        "admin priority",
        &[],
        |_| Vec::new(),
        |c, ids| {
            for (k, &id) in ids[QUEUED - 4..].iter().enumerate() {
                harness::run(c.cmd("scontrol").args([
                    "update",
                    &format!("JobId={id}"),
                    &format!("Priority={}", 4_294_950_000u32 + k as u32),
                ]));
            }
        },
        |_| {},
        &[12, 13, 14, 15],
    );
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn y_jobs_of_a_higher_qos_priority_start_first() {
    side_by_side(
        "QOS priority",
        &[
            "--accounting",
            "--conf-line",
            "PriorityType=priority/multifactor",
            "--conf-line",
            "PriorityWeightQOS=100000",
        ],
        |i| {
            if i % 4 == 3 {
                vec!["--qos=urgent".to_string()]
            } else {
                Vec::new()
            }
        },
        |_, _| {},
        |c| {
            let sacctmgr = |args: &[&str]| harness::run(c.cmd("sacctmgr").arg("-i").args(args));
            sacctmgr(&["add", "qos", "urgent", "Priority=100"]);
            sacctmgr(&["modify", "user", "root", "set", "qos+=urgent"]);
            std::thread::sleep(Duration::from_secs(1)); // slurmctld hears of it
        },
        &[3, 7, 11, 15],
    );
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn z_jobs_of_a_higher_partition_tier_start_first() {
    side_by_side(
        "partition PriorityTier",
        &[
            "--conf-line",
            "PartitionName=urgent Nodes=g1,g2 PriorityTier=5 MaxTime=INFINITE State=UP",
        ],
        |i| {
            if i >= QUEUED - 4 {
                vec![
                    "-p".to_string(),
                    "urgent".to_string(),
                    format!("--comment=fairmatch: urgent={RUN}s"),
                ]
            } else {
                Vec::new()
            }
        },
        |_, _| {},
        |_| {},
        &[12, 13, 14, 15],
    );
}
