//! The planner's preemption through Slurm's requeue, on hand-made
//! snapshots: only running jobs that opted in and that Slurm may requeue
//! are stopped, never before their minimum run, with their `--signal`
//! notice first, and never while preemption is off (the default).

use fairmatch::slurm::config::{Config, PreemptMode};
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::snapshot::{
    Action, Decision, JobInfo, NodeInfo, Outcome, PartitionInfo, Placement, Refusal, Snapshot,
};

/// c1 and c2 (one CPU each) in `cpu`: `opted` runs on c1 since `started`,
/// 1,000 s long; a longer job that did not opt in runs on c2; a 100 s job
/// eligible at 100 s waits.
fn busy(now: f64, opted: JobInfo, started: f64) -> Snapshot {
    let run = |mut job: JobInfo, node: &str, start: f64| {
        job.running = Some(Placement {
            partition: "cpu".into(),
            nodes: vec![node.into()],
            start,
        });
        job
    };
    let other = JobInfo {
        requeue: true,
        ..JobInfo::pending(2, "bob", "fairmatch: cpu=2000s", &["cpu"])
    };
    Snapshot {
        now,
        nodes: vec![NodeInfo::up("c1", 1, ""), NodeInfo::up("c2", 1, "")],
        partitions: vec![PartitionInfo {
            name: "cpu".into(),
            nodes: vec![0, 1],
            schedulable: true,
            limits: Default::default(),
        }],
        pending: vec![JobInfo {
            eligible: 100.0,
            ..JobInfo::pending(3, "carol", "fairmatch: cpu=100s", &["cpu"])
        }],
        running: vec![run(opted, "c1", started), run(other, "c2", 100.0)],
        finished: Vec::new(),
    }
}

fn opted_in() -> JobInfo {
    JobInfo {
        requeue: true,
        ..JobInfo::pending(1, "alice", "fairmatch: cpu=1000s preemptible", &["cpu"])
    }
}

/// Preemption on for overdue jobs: 300 s bound, rounds and minimum run of
/// a minute.
fn preemptive() -> Config {
    Config {
        max_wait: Some(300.0),
        preempt: PreemptMode::Overdue,
        preempt_round: 60.0,
        preempt_min_run: 60.0,
        ..Config::default()
    }
}

/// The preemptions among `decisions`: (job, with notice).
fn preempted(decisions: &[Decision]) -> Vec<(u32, bool)> {
    decisions
        .iter()
        .filter_map(|d| match d.action {
            Action::Preempt { notice } => Some((d.job_id, notice)),
            _ => None,
        })
        .collect()
}

/// Slurm's answer to each preemption among `decisions`: carried out, or
/// refused with `refused`.
fn answer(planner: &mut Planner, decisions: &[Decision], at: f64, refused: Option<&str>) {
    let outcomes: Vec<Outcome> = preempted(decisions)
        .into_iter()
        .map(|(job_id, _)| Outcome {
            job_id,
            result: match refused {
                None => Ok(job_id),
                Some(reason) => Err(Refusal {
                    reason: reason.into(),
                    busy: false,
                }),
            },
            at,
            preemption: true,
        })
        .collect();
    planner.observe(&outcomes);
}

fn started(decisions: &[Decision], id: u32) -> Option<String> {
    decisions.iter().find_map(|d| match &d.action {
        Action::Start { nodes, .. } if d.job_id == id => Some(nodes.join(",")),
        _ => None,
    })
}

#[test]
fn nothing_is_preempted_while_preemption_is_off() {
    let config = Config {
        max_wait: Some(300.0),
        ..Config::default()
    };
    assert_eq!(config.preempt, PreemptMode::Off);
    let d = Planner::new(config).plan(&busy(500.0, opted_in(), 100.0));
    assert!(preempted(&d).is_empty(), "{d:?}");
}

#[test]
fn an_overdue_job_preempts_the_opted_in_job_only_and_takes_its_slot() {
    // The job that did not opt in has more work left, so the policy
    // would rather stop it; it may not.
    let mut planner = Planner::new(Config {
        preempt_round: 30.0,
        ..preemptive()
    });
    let d = planner.plan(&busy(500.0, opted_in(), 100.0));
    assert_eq!(preempted(&d), vec![(1, false)], "{d:?}");
    assert_eq!(started(&d, 3), None, "the slot is not free yet: {d:?}");
    answer(&mut planner, &d, 500.1, None);
    // Requeued, but still listed as running, and the next round comes: no
    // other job is preempted, the other job still is not.
    for now in [501.0, 531.0] {
        let d = planner.plan(&busy(now, opted_in(), 100.0));
        assert!(preempted(&d).is_empty(), "at {now}: {d:?}");
    }
    // Requeued: it waits again (Slurm's begin time), and the overdue job
    // starts where it ran.
    let mut snap = busy(562.0, opted_in(), 100.0);
    let mut requeued = snap.running.remove(0);
    requeued.running = None;
    requeued.eligible = 621.0;
    snap.pending.push(requeued);
    let d = planner.plan(&snap);
    assert_eq!(started(&d, 3).as_deref(), Some("c1"), "{d:?}");
}

#[test]
fn a_job_is_not_preempted_before_its_minimum_run() {
    let d = Planner::new(preemptive()).plan(&busy(500.0, opted_in(), 480.0));
    assert!(preempted(&d).is_empty(), "{d:?}");
}

#[test]
fn a_job_that_slurm_may_not_requeue_is_never_preempted() {
    let job = JobInfo {
        requeue: false,
        ..opted_in()
    };
    let d = Planner::new(preemptive()).plan(&busy(500.0, job, 100.0));
    assert!(preempted(&d).is_empty(), "{d:?}");
}

#[test]
fn a_preemptible_qos_opts_its_jobs_in() {
    let job = || JobInfo {
        requeue: true,
        qos: "scavenger".into(),
        ..JobInfo::pending(1, "alice", "fairmatch: cpu=1000s", &["cpu"])
    };
    let d = Planner::new(preemptive()).plan(&busy(500.0, job(), 100.0));
    assert!(preempted(&d).is_empty(), "not listed: {d:?}");
    let config = Config {
        preemptible_qos: vec!["scavenger".into()],
        ..preemptive()
    };
    let d = Planner::new(config).plan(&busy(500.0, job(), 100.0));
    assert_eq!(preempted(&d), vec![(1, false)], "{d:?}");
}

#[test]
fn a_job_with_a_signal_gets_its_notice_before_the_requeue() {
    // --signal=...@30: signalled now, requeued once 30 s have passed.
    let job = || JobInfo {
        notice: Some(30.0),
        ..opted_in()
    };
    let mut planner = Planner::new(preemptive());
    let d = planner.plan(&busy(500.0, job(), 100.0));
    assert_eq!(preempted(&d), vec![(1, true)], "{d:?}");
    answer(&mut planner, &d, 500.1, None);
    let d = planner.plan(&busy(520.0, job(), 100.0));
    assert!(preempted(&d).is_empty(), "{d:?}");
    // The requeue is due; its decision is dropped (no answer), so the next
    // plan asks again.
    for now in [530.5, 531.0] {
        let d = planner.plan(&busy(now, job(), 100.0));
        assert_eq!(preempted(&d), vec![(1, false)], "at {now}: {d:?}");
    }
    // A notice longer than PreemptGraceTime is cut to it.
    let config = Config {
        preempt_grace: 10.0,
        ..preemptive()
    };
    let mut planner = Planner::new(config);
    let d = planner.plan(&busy(500.0, job(), 100.0));
    answer(&mut planner, &d, 500.1, None);
    let d = planner.plan(&busy(510.5, job(), 100.0));
    assert_eq!(preempted(&d), vec![(1, false)], "{d:?}");
}

#[test]
fn a_requeue_is_cancelled_when_the_waiting_job_started_elsewhere() {
    let job = || JobInfo {
        notice: Some(30.0),
        ..opted_in()
    };
    let mut planner = Planner::new(preemptive());
    let d = planner.plan(&busy(500.0, job(), 100.0));
    assert_eq!(preempted(&d), vec![(1, true)], "{d:?}");
    answer(&mut planner, &d, 500.1, None);
    // During the notice, c2's job ends and the waiting job starts there.
    let mut snap = busy(520.0, job(), 100.0);
    let mut waiting = snap.pending.remove(0);
    waiting.running = Some(Placement {
        partition: "cpu".into(),
        nodes: vec!["c2".into()],
        start: 519.0,
    });
    snap.running[1] = waiting;
    let d = planner.plan(&snap);
    assert!(preempted(&d).is_empty(), "{d:?}");
    // The notice ends: the requeue is not asked, then or at the next round.
    for now in [531.0, 595.0] {
        snap.now = now;
        let d = planner.plan(&snap);
        assert!(preempted(&d).is_empty(), "at {now}: {d:?}");
    }
}

#[test]
fn a_preemption_counts_only_once_slurm_carried_it_out() {
    // Dropped (no answer): nothing is remembered; the next round asks
    // again.
    let mut planner = Planner::new(preemptive());
    let d = planner.plan(&busy(500.0, opted_in(), 100.0));
    assert_eq!(preempted(&d), vec![(1, false)], "{d:?}");
    let d = planner.plan(&busy(561.0, opted_in(), 100.0));
    assert_eq!(preempted(&d), vec![(1, false)], "{d:?}");
    // Refused: not asked again for a round (or the minimum run, if longer),
    // and no other job is stopped instead.
    answer(
        &mut planner,
        &d,
        561.0,
        Some("Requested operation is presently disabled"),
    );
    for now in [600.0, 615.0] {
        let d = planner.plan(&busy(now, opted_in(), 100.0));
        assert!(preempted(&d).is_empty(), "at {now}: {d:?}");
    }
    let d = planner.plan(&busy(622.0, opted_in(), 100.0));
    assert_eq!(preempted(&d), vec![(1, false)], "{d:?}");
}

/// Partition `gpu` of g1 and g2, 4 GPUs each. On g1, opted-in jobs of 1
/// and 2 GPUs (one GPU idle); on g2, an opted-in 2-GPU job beside a 2-GPU
/// job that did not opt in. All run since 100 s, 1,000 s long. A 4-GPU
/// job of 1,000 s waits since 100 s (overdue at 400 s, long before its
/// aging, 4 times its run).
fn gpu_nodes(now: f64) -> Snapshot {
    let gpu_job = |id: u32, gpus: u32, comment: &str| JobInfo {
        gpus,
        requeue: true,
        eligible: 100.0,
        ..JobInfo::pending(id, "alice", comment, &["gpu"])
    };
    let run = |mut job: JobInfo, node: &str| {
        job.running = Some(Placement {
            partition: "gpu".into(),
            nodes: vec![node.into()],
            start: 100.0,
        });
        job
    };
    let opted = "fairmatch: gpu=1000s preemptible";
    Snapshot {
        now,
        nodes: vec![
            NodeInfo::up("g1", 8, "gpu:4"),
            NodeInfo::up("g2", 8, "gpu:4"),
        ],
        partitions: vec![PartitionInfo::new("gpu", vec![0, 1])],
        pending: vec![gpu_job(5, 4, "fairmatch: gpu=1000s")],
        running: vec![
            run(gpu_job(1, 1, opted), "g1"),
            run(gpu_job(2, 2, opted), "g1"),
            run(gpu_job(3, 2, opted), "g2"),
            run(gpu_job(4, 2, "fairmatch: gpu=1000s"), "g2"),
        ],
        finished: Vec::new(),
    }
}

#[test]
fn an_overdue_gang_clears_one_node_whole_and_starts_there_first() {
    let mut planner = Planner::new(preemptive());
    let d = planner.plan(&gpu_nodes(500.0));
    // g1's jobs both; nothing on g2, where a job that did not opt in
    // keeps two GPUs busy.
    let mut stopped = preempted(&d);
    stopped.sort_unstable();
    assert_eq!(stopped, vec![(1, false), (2, false)], "{d:?}");
    answer(&mut planner, &d, 500.1, None);
    // Requeued and gone: g1 is free. A 10 s job that arrived since would
    // go first by the plan's order; the nodes cleared for the gang are
    // its own.
    let mut snap = gpu_nodes(510.0);
    let requeued: Vec<JobInfo> = snap.running.drain(..2).collect();
    for mut job in requeued {
        job.running = None;
        job.eligible = 631.0;
        snap.pending.push(job);
    }
    snap.pending.push(JobInfo {
        gpus: 1,
        eligible: 505.0,
        ..JobInfo::pending(6, "bob", "fairmatch: gpu=10s", &["gpu"])
    });
    let d = planner.plan(&snap);
    assert_eq!(started(&d, 5).as_deref(), Some("g1"), "{d:?}");
    assert_eq!(started(&d, 6), None, "{d:?}");
}

/// Partition `fast` of f1 and f2 and partition `slow` of s1 and s2, one
/// CPU each. On f1 and f2, opted-in jobs of 100,000 s run since 100 s; the
/// slow nodes are idle. A gang on both CPUs of two nodes, 100 s on the fast
/// nodes and 100,000 s on the slow ones, waits since 100 s: it finishes
/// soonest by waiting for the fast nodes, about 100,100 s on.
fn gang_beside_idle_slow_nodes(now: f64) -> Snapshot {
    let run = |id: u32, node: &str| JobInfo {
        requeue: true,
        running: Some(Placement {
            partition: "fast".into(),
            nodes: vec![node.into()],
            start: 100.0,
        }),
        ..JobInfo::pending(
            id,
            "alice",
            "fairmatch: fast=100000s preemptible",
            &["fast"],
        )
    };
    Snapshot {
        now,
        nodes: ["f1", "f2", "s1", "s2"]
            .into_iter()
            .map(|n| NodeInfo::up(n, 1, ""))
            .collect(),
        partitions: vec![
            PartitionInfo::new("fast", vec![0, 1]),
            PartitionInfo::new("slow", vec![2, 3]),
        ],
        pending: vec![JobInfo {
            nodes: 2,
            cpus: 2,
            eligible: 100.0,
            ..JobInfo::pending(
                3,
                "bob",
                "fairmatch: fast=100s slow=100000s",
                &["fast", "slow"],
            )
        }],
        running: vec![run(1, "f1"), run(2, "f2")],
        finished: Vec::new(),
    }
}

#[test]
fn an_overdue_gang_beside_idle_slow_nodes_clears_fast_ones_only_past_max_wait() {
    // Its wait for the fast nodes would end within a bound of 1,000,000 s:
    // overdue at 10x its run (1,000 s), it stops nothing.
    let mut planner = Planner::new(Config {
        max_wait: Some(1_000_000.0),
        ..preemptive()
    });
    let d = planner.plan(&gang_beside_idle_slow_nodes(1_500.0));
    assert_eq!(preempted(&d), vec![], "{d:?}");
    // Past the 300 s bound, it clears both fast nodes, whose jobs have
    // more work left than its run.
    let mut planner = Planner::new(preemptive());
    let d = planner.plan(&gang_beside_idle_slow_nodes(500.0));
    let mut stopped = preempted(&d);
    stopped.sort_unstable();
    assert_eq!(stopped, vec![(1, false), (2, false)], "{d:?}");
}

/// g1, 4 GPUs, runs an opted-in 4-GPU job of 100,000 s since 100 s;
/// `narrow` one-GPU jobs of 100 s wait since 100 s.
fn a_gang_and_narrow_jobs(now: f64, narrow: u32) -> Snapshot {
    let gpu_job = |id: u32, gpus: u32, comment: &str| JobInfo {
        gpus,
        requeue: true,
        eligible: 100.0,
        ..JobInfo::pending(id, "alice", comment, &["gpu"])
    };
    let mut gang = gpu_job(1, 4, "fairmatch: gpu=100000s preemptible");
    gang.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 100.0,
    });
    Snapshot {
        now,
        nodes: vec![NodeInfo::up("g1", 8, "gpu:4")],
        partitions: vec![PartitionInfo::new("gpu", vec![0])],
        pending: (0..narrow)
            .map(|k| gpu_job(10 + k, 1, "fairmatch: gpu=100s"))
            .collect(),
        running: vec![gang],
        finished: Vec::new(),
    }
}

#[test]
fn an_opted_in_gang_gives_way_to_as_many_short_jobs_for_total_jct() {
    let gain = Config {
        preempt: PreemptMode::Gain,
        ..preemptive()
    };
    // Four 100 s jobs would wait about 99,600 s behind it: it is requeued
    // once, for all four.
    let d = Planner::new(gain.clone()).plan(&a_gang_and_narrow_jobs(500.0, 4));
    assert_eq!(preempted(&d), vec![(1, false)], "{d:?}");
    // Three would leave one of its GPUs idle: it keeps running.
    let d = Planner::new(gain).plan(&a_gang_and_narrow_jobs(500.0, 3));
    assert!(preempted(&d).is_empty(), "{d:?}");
    // Preempting only for overdue jobs, it keeps running too.
    let d = Planner::new(preemptive()).plan(&a_gang_and_narrow_jobs(500.0, 4));
    assert!(preempted(&d).is_empty(), "{d:?}");
}
