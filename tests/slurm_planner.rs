//! The plugin's planner on hand-made snapshots of slurmctld: the same
//! decisions the simulator makes, hints and their fallbacks, and reasons.

use fairmatch::slurm::config::Config;
use fairmatch::slurm::planner::{Planner, RETRY_AFTER};
use fairmatch::slurm::snapshot::{
    Action, FinishedJob, JobInfo, NodeInfo, Outcome, PartitionInfo, Placement, Refusal, Snapshot,
};

fn node(name: &str, cpus: u32, gres: &str) -> NodeInfo {
    NodeInfo::up(name, cpus, gres)
}

/// c1, c2 (1 CPU each) in `cpu`; g1, g2 (1 GPU each) in `gpu`.
fn cluster(now: f64) -> Snapshot {
    Snapshot {
        now,
        nodes: vec![
            node("c1", 1, ""),
            node("c2", 1, ""),
            node("g1", 1, "gpu:1"),
            node("g2", 1, "gpu:1"),
        ],
        partitions: vec![
            PartitionInfo {
                name: "cpu".into(),
                nodes: vec![0, 1],
                schedulable: true,
                limits: Default::default(),
            },
            PartitionInfo {
                name: "gpu".into(),
                nodes: vec![2, 3],
                schedulable: true,
                limits: Default::default(),
            },
        ],
        pending: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
    }
}

fn job(id: u32, user: &str, comment: &str) -> JobInfo {
    JobInfo {
        eligible: 1000.0 + f64::from(id),
        ..JobInfo::pending(id, user, comment, &["cpu", "gpu"])
    }
}

fn placed(
    decisions: &[fairmatch::slurm::snapshot::Decision],
    id: u32,
) -> Option<(String, String, u32)> {
    decisions
        .iter()
        .find(|d| d.job_id == id)
        .and_then(|d| match &d.action {
            Action::Start {
                partition,
                nodes,
                gpus,
                ..
            } => Some((partition.clone(), nodes.join(","), *gpus)),
            Action::Wait | Action::FirstCome | Action::Preempt { .. } => None,
        })
}

#[test]
fn motivation_case_sends_the_cpu_slow_jobs_to_gpus() {
    let mut snap = cluster(5000.0);
    snap.pending = vec![
        job(1, "alice", "fairmatch: gpu=40s cpu=50s"),
        job(2, "alice", "fairmatch: gpu=40s cpu=50s"),
        job(3, "bob", "fairmatch: gpu=40s cpu=80s"),
        job(4, "bob", "fairmatch: gpu=40s cpu=80s"),
    ];
    let decisions = Planner::new(Config::default()).plan(&snap);
    let flavor = |id| placed(&decisions, id).map(|(p, _, g)| (p, g));
    assert_eq!(flavor(1), Some(("cpu".into(), 0)));
    assert_eq!(flavor(2), Some(("cpu".into(), 0)));
    assert_eq!(flavor(3), Some(("gpu".into(), 1)));
    assert_eq!(flavor(4), Some(("gpu".into(), 1)));
    let nodes: Vec<String> = (1..=4)
        .map(|id| placed(&decisions, id).unwrap().1)
        .collect();
    let mut unique = nodes.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "one job per slot: {nodes:?}");
}

/// `Solver=classes` (without stickiness, where it runs) finds the same
/// optimum, and keeps its state from one plan to the next: a second plan
/// after one job arrived still sends each job to the flavor it is fast on.
#[test]
fn the_class_solver_plans_the_motivation_case_too() {
    let (config, warnings) =
        fairmatch::slurm::config::parse("f.conf", "Solver=classes\nStickiness=0\n");
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut planner = Planner::new(config);
    let mut snap = cluster(5000.0);
    snap.nodes.push(node("c3", 1, ""));
    snap.partitions[0].nodes.push(4);
    snap.pending = vec![
        job(1, "alice", "fairmatch: gpu=40s cpu=50s"),
        job(2, "alice", "fairmatch: gpu=40s cpu=50s"),
        job(3, "bob", "fairmatch: gpu=40s cpu=80s"),
        job(4, "bob", "fairmatch: gpu=40s cpu=80s"),
    ];
    let flavor = |d: &[fairmatch::slurm::snapshot::Decision], id| placed(d, id).map(|(p, _, _)| p);
    let decisions = planner.plan(&snap);
    assert_eq!(flavor(&decisions, 3).as_deref(), Some("gpu"));
    assert_eq!(flavor(&decisions, 4).as_deref(), Some("gpu"));
    assert_eq!(flavor(&decisions, 1).as_deref(), Some("cpu"));
    assert_eq!(flavor(&decisions, 2).as_deref(), Some("cpu"));
    // Nothing started yet (no outcome observed): the same queue plus one
    // job that is only fast on a CPU gets the idle CPU.
    snap.now += 1.0;
    snap.pending
        .push(job(5, "carol", "fairmatch: gpu=500s cpu=10s"));
    let decisions = planner.plan(&snap);
    assert_eq!(flavor(&decisions, 5).as_deref(), Some("cpu"));
    assert_eq!(flavor(&decisions, 3).as_deref(), Some("gpu"));
}

#[test]
fn zero_length_jobs_fill_every_free_slot_at_once() {
    // To the matching a 0 s job costs nothing wherever it waits; planned
    // at 1 s, each free slot takes one now (a burst of `true` jobs).
    let mut snap = cluster(5000.0);
    snap.pending = (1..=10)
        .map(|id| job(id, "alice", "fairmatch: gpu=0s cpu=0s"))
        .collect();
    let decisions = Planner::new(Config::default()).plan(&snap);
    let started = (1..=10)
        .filter(|&id| placed(&decisions, id).is_some())
        .count();
    assert_eq!(started, 4, "{decisions:?}");
}

#[test]
fn running_jobs_hold_their_slots_until_their_estimated_end() {
    let mut snap = cluster(100.0);
    let mut long = job(9, "carol", "fairmatch: gpu=1000s cpu=1000s");
    long.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 50.0,
    });
    snap.running = vec![long];
    // 5x faster on a GPU: takes g2, the free GPU.
    snap.pending = vec![job(1, "alice", "fairmatch: gpu=10s cpu=50s")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(placed(&d, 1), Some(("gpu".into(), "g2".into(), 1)));
}

#[test]
fn a_job_faster_on_cpu_runs_on_cpu_and_waiting_jobs_say_why() {
    let mut snap = cluster(0.0);
    snap.nodes.truncate(3);
    snap.partitions[1].nodes = vec![2];
    snap.pending = vec![
        job(1, "alice", "fairmatch: gpu=100s cpu=20s"),
        job(2, "alice", "fairmatch: gpu=100s cpu=20s"),
        job(3, "alice", "fairmatch: gpu=100s cpu=20s"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    let started: Vec<String> = (1..=3)
        .filter_map(|id| placed(&d, id))
        .map(|p| p.0)
        .collect();
    assert_eq!(started, vec!["cpu", "cpu"]);
    // The third waits 20 s for a CPU rather than taking 100 s on the GPU,
    // and says so: where, and from when (its StartTime).
    let third = d.iter().find(|x| x.action == Action::Wait).unwrap();
    assert!(
        third
            .reason
            .starts_with("fairmatch: queued for cpu; cpu=20s (hint) gpu=100s (hint)"),
        "{}",
        third.reason
    );
    assert_eq!(third.start_at, Some(snap.now + 20.0), "{third:?}");
    // What `fairmatch queue` reads back from it.
    let read = fairmatch::slurm::reasons::read_wait_reason(&third.reason).unwrap();
    assert_eq!(read.flavor.as_deref(), Some("cpu"));
    assert_eq!(
        read.estimates,
        vec![
            ("cpu".to_string(), 20.0, "hint".to_string()),
            ("gpu".to_string(), 100.0, "hint".to_string())
        ]
    );
}

#[test]
fn bad_hints_fall_back_in_order_and_are_noted_once() {
    let mut planner = Planner::new(Config {
        default_runtime: 77.0,
        ..Config::default()
    });
    let mut snap = one_cpu(0.0);
    let mut with_limit = job(1, "alice", "garbage");
    with_limit.partitions = vec!["cpu".into()];
    with_limit.time_limit = Some(600.0);
    let mut learned = job(2, "bob", "fairmatch: cpu=-5m");
    learned.partitions = vec!["cpu".into()];
    let mut unknown = job(3, "bob", "fairmatch: tpu=5m");
    unknown.partitions = vec!["cpu".into()];
    unknown.name = "other".into();
    snap.pending = vec![with_limit, learned, unknown];
    snap.finished = vec![FinishedJob {
        user: "bob".into(),
        name: "train".into(),
        partition: "cpu".into(),
        nodes: String::new(),
        shards: false,
        seconds: 42.0,
        end: 0.0,
    }];
    let d = planner.plan(&snap);
    let note = |id: u32| {
        d.iter()
            .find(|x| x.job_id == id)
            .unwrap()
            .note
            .clone()
            .unwrap()
    };
    assert!(
        note(1).contains("no 'fairmatch: flavor=duration' hint")
            && note(1).contains("cpu=600s (time limit)"),
        "{}",
        note(1)
    );
    assert!(
        note(2).contains("negative") && note(2).contains("cpu=42s (history)"),
        "{}",
        note(2)
    );
    assert!(
        note(3).contains("unknown flavor 'tpu'")
            && note(3).contains("cpu=42s (user's typical run)"),
        "{}",
        note(3)
    );
    // The reason a waiting job shows carries the hint problem too.
    let waiting: Vec<_> = d.iter().filter(|x| x.action == Action::Wait).collect();
    assert_eq!(waiting.len(), 2);
    snap.finished.clear();
    let again = planner.plan(&snap);
    assert!(
        again.iter().all(|x| x.note.is_none()),
        "notes repeat: {again:?}"
    );
}

#[test]
fn small_alpha_lets_a_second_user_in_ahead_of_a_long_queue() {
    let mut planner = Planner::new(Config {
        alpha: 0.1,
        ..Config::default()
    });
    let mut snap = cluster(0.0);
    snap.nodes = vec![node("c1", 1, ""), node("c2", 1, "")];
    snap.partitions = vec![PartitionInfo {
        name: "cpu".into(),
        nodes: vec![0, 1],
        schedulable: true,
        limits: Default::default(),
    }];
    let mut run = job(100, "alice", "fairmatch: cpu=100s");
    run.partitions = vec!["cpu".into()];
    run.running = Some(Placement {
        partition: "cpu".into(),
        nodes: vec!["c1".into()],
        start: 0.0,
    });
    snap.running = vec![run];
    for id in 1..=30 {
        let mut j = job(id, "alice", "fairmatch: cpu=10s");
        j.partitions = vec!["cpu".into()];
        snap.pending.push(j);
    }
    let mut late = job(31, "bob", "fairmatch: cpu=60s");
    late.partitions = vec!["cpu".into()];
    late.eligible = 2000.0;
    snap.pending.push(late);
    let d = planner.plan(&snap);
    assert_eq!(
        placed(&d, 31).map(|p| p.1),
        Some("c2".into()),
        "bob's job starts on the free slot"
    );
}

#[test]
fn unavailable_nodes_get_nothing() {
    let mut snap = cluster(0.0);
    snap.nodes[2].available = false;
    snap.nodes[3].available = false;
    snap.pending = vec![job(1, "alice", "fairmatch: gpu=1s cpu=50s")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(placed(&d, 1).unwrap().0, "cpu");
}

fn starts(decisions: &[fairmatch::slurm::snapshot::Decision], id: u32) -> Vec<(String, String)> {
    decisions
        .iter()
        .filter(|d| d.job_id == id)
        .filter_map(|d| match &d.action {
            Action::Start {
                partition, nodes, ..
            } => Some((partition.clone(), nodes.join(","))),
            Action::Wait | Action::FirstCome | Action::Preempt { .. } => None,
        })
        .collect()
}

fn outcome(job_id: u32, result: Result<u32, &str>, at: f64) -> Outcome {
    Outcome {
        job_id,
        result: result.map_err(|reason| Refusal {
            reason: reason.into(),
            busy: reason == "Resources",
        }),
        at,
        preemption: false,
    }
}

/// One CPU (c1) and no GPU node.
fn one_cpu(now: f64) -> Snapshot {
    let mut snap = cluster(now);
    snap.nodes = vec![node("c1", 1, "")];
    snap.partitions = vec![PartitionInfo {
        name: "cpu".into(),
        nodes: vec![0],
        schedulable: true,
        limits: Default::default(),
    }];
    snap
}

/// One GPU (g1) and no CPU node.
fn one_gpu(now: f64) -> Snapshot {
    let mut snap = cluster(now);
    snap.nodes = vec![node("g1", 1, "gpu:1")];
    snap.partitions = vec![PartitionInfo {
        name: "gpu".into(),
        nodes: vec![0],
        schedulable: true,
        limits: Default::default(),
    }];
    snap
}

fn gpu_job(id: u32, user: &str) -> JobInfo {
    let mut j = job(id, user, "fairmatch: gpu=10s");
    j.partitions = vec!["gpu".into()];
    j
}

#[test]
fn a_refused_job_keeps_slurms_reason_and_its_slot_goes_to_the_next() {
    let mut planner = Planner::new(Config::default());
    let mut snap = one_gpu(100.0);
    snap.pending = vec![gpu_job(1, "alice"), gpu_job(2, "bob")];
    let first = planner.plan(&snap);
    assert_eq!(starts(&first, 1), vec![("gpu".into(), "g1".into())]);
    planner.observe(&[outcome(1, Err("QOSGrpGRES"), 100.0)]);

    snap.now = 100.5;
    let second = planner.plan(&snap);
    assert_eq!(starts(&second, 2), vec![("gpu".into(), "g1".into())]);
    let wait = second.iter().find(|d| d.job_id == 1).unwrap();
    assert_eq!(wait.action, Action::Wait);
    assert_eq!(wait.reason, "", "Slurm's reason must stay");
    planner.observe(&[outcome(2, Ok(2), 100.5)]);

    // After the back-off it is planned again, behind the running job.
    snap.now = 100.0 + RETRY_AFTER + 0.1;
    snap.pending = vec![gpu_job(1, "alice")];
    let mut running = gpu_job(2, "bob");
    running.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 100.0,
    });
    snap.running = vec![running];
    // No GPU is free: it waits for resources, as Slurm says it.
    let third = planner.plan(&snap);
    assert!(
        third[0].for_resources && third[0].reason.is_empty(),
        "{third:?}"
    );
}

#[test]
fn a_job_that_waits_beside_a_free_slot_shows_the_plans_queue() {
    // g1 is busy and c1 free, but the job would rather wait for the GPU.
    let mut snap = cluster(100.0);
    snap.nodes = vec![node("c1", 1, ""), node("g1", 1, "gpu:1")];
    snap.partitions[0].nodes = vec![0];
    snap.partitions[1].nodes = vec![1];
    let mut running = job(2, "bob", "fairmatch: gpu=10s cpu=1000s");
    running.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 99.0,
    });
    snap.running = vec![running];
    snap.pending = vec![job(1, "alice", "fairmatch: gpu=10s cpu=1000s")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(!d[0].for_resources, "{d:?}");
    assert!(d[0].reason.starts_with("fairmatch: queued"), "{d:?}");
}

#[test]
fn a_node_slurm_finds_full_is_left_until_its_jobs_change() {
    let mut planner = Planner::new(Config::default());
    let mut snap = one_gpu(100.0);
    snap.nodes.push(node("g2", 1, "gpu:1"));
    snap.partitions[0].nodes = vec![0, 1];
    snap.pending = vec![gpu_job(1, "alice")];
    let first = starts(&planner.plan(&snap), 1);
    assert_eq!(first.len(), 1);
    planner.observe(&[outcome(1, Err("Resources"), 100.0)]);

    // At once, and on the other node.
    snap.now = 100.1;
    let second = starts(&planner.plan(&snap), 1);
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].1, first[0].1, "the same full node again");
    planner.observe(&[outcome(1, Err("Resources"), 100.1)]);

    // Both full: it waits, for resources.
    snap.now = 100.2;
    let third = planner.plan(&snap);
    assert!(starts(&third, 1).is_empty(), "{third:?}");
    assert!(third[0].for_resources, "{third:?}");

    // A job came to g1: what Slurm said of g1 no longer holds.
    let mut other = gpu_job(9, "carol");
    other.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 100.25,
    });
    snap.running = vec![other];
    snap.nodes[0].gres = "gpu:2".into();
    snap.now = 100.3;
    assert_eq!(
        starts(&planner.plan(&snap), 1),
        vec![("gpu".into(), "g1".into())]
    );
}

#[test]
fn partition_cpu_limits_and_overlaps_bound_the_slots_of_a_node() {
    use fairmatch::slurm::snapshot::PartitionLimits;
    // Two 4-CPU nodes; p1 holds n1 and n2 with MaxCPUsPerNode=2, p2
    // overlaps it on n2 and already runs 3 one-CPU jobs there.
    let mut snap = cluster(100.0);
    snap.nodes = vec![node("n1", 4, ""), node("n2", 4, "")];
    let limited = PartitionLimits {
        max_cpus_per_node: Some(2),
        ..Default::default()
    };
    snap.partitions = vec![
        PartitionInfo {
            limits: limited,
            ..PartitionInfo::new("p1", vec![0, 1])
        },
        PartitionInfo::new("p2", vec![1]),
    ];
    snap.running = (0..3)
        .map(|k| {
            let mut j = job(50 + k, "bob", "");
            j.partitions = vec!["p2".into()];
            j.running = Some(Placement {
                partition: "p2".into(),
                nodes: vec!["n2".into()],
                start: 90.0,
            });
            j
        })
        .collect();
    snap.pending = (1..=4)
        .map(|id| {
            let mut j = job(id, "alice", "fairmatch: p1=10s p2=10s");
            j.partitions = vec!["p1".into(), "p2".into()];
            j
        })
        .collect();
    let d = Planner::new(Config::default()).plan(&snap);
    let mut placed: Vec<(String, String)> = (1..=4).flat_map(|id| starts(&d, id)).collect();
    placed.sort();
    // Two on n1 for p1 (its limit), and n2's last CPU once: to p1 or to
    // p2, not to both.
    let on = |p: &str, n: &str| placed.iter().filter(|x| x.0 == p && x.1 == n).count();
    assert_eq!(on("p1", "n1"), 2, "{d:?}");
    assert_eq!(on("p1", "n2") + on("p2", "n2"), 1, "{d:?}");
}

#[test]
fn oversubscribed_partitions_share_cpus_when_their_jobs_ask_or_are_forced() {
    use fairmatch::slurm::snapshot::PartitionLimits;
    let sharing = |force: bool, ask: bool| {
        let mut snap = one_cpu(100.0);
        snap.partitions[0].limits = PartitionLimits {
            jobs_per_cpu: 2,
            force_share: force,
            ..Default::default()
        };
        snap.pending = (1..=2)
            .map(|id| {
                let mut j = job(id, "alice", "fairmatch: cpu=10s");
                j.partitions = vec!["cpu".into()];
                j.shares_cpus = ask;
                j
            })
            .collect();
        let d = Planner::new(Config::default()).plan(&snap);
        (1..=2).map(|id| starts(&d, id).len()).sum::<usize>()
    };
    assert_eq!(sharing(false, true), 2, "YES:2 and both ask");
    assert_eq!(sharing(true, false), 2, "FORCE:2");
    assert_eq!(sharing(false, false), 1, "YES:2 and nobody asks");
}

#[test]
fn every_pending_array_task_is_a_job_with_the_arrays_hints() {
    let mut snap = cluster(0.0);
    let mut array = job(7, "alice", "fairmatch: gpu=3s cpu=60s");
    array.tasks = 3;
    snap.pending = vec![array];
    let mut planner = Planner::new(Config::default());
    let d = planner.plan(&snap);
    // Two GPUs: two tasks start there, the third waits for a GPU rather
    // than take 60 s on a CPU.
    let started = starts(&d, 7);
    assert_eq!(started.len(), 2, "{d:?}");
    assert!(started.iter().all(|(p, _)| p == "gpu"), "{started:?}");
    assert!(d.iter().any(|x| x.job_id == 7 && x.action == Action::Wait));
    // Each task that started is known by its own job id from then on.
    planner.observe(&[outcome(7, Ok(70), 0.0), outcome(7, Ok(71), 0.0)]);
}

#[test]
fn jobs_start_only_on_nodes_they_may_use() {
    let mut snap = cluster(0.0);
    let mut not_g1 = job(1, "alice", "fairmatch: gpu=1s cpu=5s");
    not_g1.usable_nodes = Some(vec![0, 1, 3]);
    // Fast on a GPU, but may use no GPU node: runs on a CPU.
    let mut cpu_only = job(2, "bob", "fairmatch: gpu=1s cpu=5s");
    cpu_only.usable_nodes = Some(vec![1]);
    snap.pending = vec![not_g1, cpu_only];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), vec![("gpu".into(), "g2".into())]);
    assert_eq!(starts(&d, 2), vec![("cpu".into(), "c2".into())]);
}

#[test]
fn slots_held_by_other_work_or_reserved_are_not_given_out() {
    let mut snap = cluster(0.0);
    snap.nodes[2].foreign_gpus = 1; // g1: a multi-GPU job's
    snap.nodes[3].reserved_from = Some(50.0); // g2: a 2-node job's, soon
    snap.partitions[0].schedulable = false; // cpu: DOWN
    snap.pending = vec![job(1, "alice", "fairmatch: gpu=1s cpu=5s")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d, 1).is_empty(), "{d:?}");
    assert_eq!(d[0].action, Action::Wait);
}

#[test]
fn a_job_that_asked_for_a_gpu_runs_only_on_gpus() {
    let mut snap = cluster(0.0);
    let mut j = job(1, "alice", "fairmatch: gpu=50s cpu=1s");
    j.gpus = 1;
    snap.pending = vec![j];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1)[0].0, "gpu");
}

#[test]
fn fair_share_follows_the_association_trees_shares() {
    // a runs on g1 and g2, b on g3; g4 is free and alpha 0.5 lets one
    // account start. Unweighted, b (one GPU to a's two) gets it.
    let plan = |a_shares: Option<f64>| {
        let mut snap = cluster(100.0);
        snap.nodes = (1..=4)
            .map(|i| node(&format!("g{i}"), 1, "gpu:1"))
            .collect();
        snap.partitions = vec![PartitionInfo {
            name: "gpu".into(),
            nodes: vec![0, 1, 2, 3],
            schedulable: true,
            limits: Default::default(),
        }];
        let with = |id: u32, account: &str, shares: Option<f64>| {
            let mut j = gpu_job(id, "someone");
            j.account = account.into();
            j.account_shares = shares;
            j
        };
        let running = |id: u32, account: &str, node: &str, shares| {
            let mut j = with(id, account, shares);
            j.running = Some(Placement {
                partition: "gpu".into(),
                nodes: vec![node.into()],
                start: 95.0,
            });
            j
        };
        snap.running = vec![
            running(1, "a", "g1", a_shares),
            running(5, "a", "g2", a_shares),
            running(2, "b", "g3", Some(1.0)),
        ];
        snap.pending = vec![with(4, "a", a_shares), with(3, "b", Some(1.0))];
        let mut planner = Planner::new(Config {
            alpha: 0.5,
            fairshare_by: fairmatch::slurm::config::FairshareBy::Account,
            ..Config::default()
        });
        let d = planner.plan(&snap);
        [3, 4].into_iter().find(|&id| !starts(&d, id).is_empty())
    };
    assert_eq!(plan(None), Some(3), "unweighted: b, the least served");
    assert_eq!(plan(Some(3.0)), Some(4), "a holds 3 shares to b's 1");
}

#[test]
fn a_flavor_whose_slots_a_job_may_not_use_is_not_its_flavor() {
    // g1 drained, g2 reserved for others (not in the job's usable nodes):
    // a GPU-fast job must run on a CPU, not wait for g2 forever.
    let mut snap = cluster(0.0);
    snap.nodes[2].available = false;
    let mut j = job(1, "alice", "fairmatch: gpu=1s cpu=3s");
    j.usable_nodes = Some(vec![0, 1, 2]);
    snap.pending = vec![j];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1)[0].0, "cpu", "{d:?}");
}

#[test]
fn a_wave_of_starts_picks_distinct_pending_jobs_for_distinct_slots() {
    // Forty jobs of four users with distinct estimates and alpha 0.5: the
    // policy ranks users again after every start, and the planner maps
    // each start back to its pending job as the list shrinks.
    let mut snap = cluster(5000.0);
    snap.pending = (1..=40)
        .map(|id| {
            let user = ["ann", "bob", "cat", "dan"][id as usize % 4];
            let hint = format!("fairmatch: gpu={}s cpu={}s", 10 + id, 60 - id);
            job(id, user, &hint)
        })
        .collect();
    let config = Config {
        alpha: 0.5,
        ..Config::default()
    };
    let decisions = Planner::new(config).plan(&snap);
    let started: Vec<(u32, String)> = (1..=40)
        .filter_map(|id| placed(&decisions, id).map(|(_, node, _)| (id, node)))
        .collect();
    assert_eq!(started.len(), 4, "{decisions:?}");
    let mut nodes: Vec<&String> = started.iter().map(|(_, n)| n).collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 4, "{started:?}");
    let users: std::collections::BTreeSet<usize> =
        started.iter().map(|(id, _)| *id as usize % 4).collect();
    assert!(users.len() >= 2, "one wave went to one user: {started:?}");
    assert_eq!(decisions.len(), 40, "every job gets a decision");
}

#[test]
fn run_times_learned_while_no_plan_runs_reach_the_next_plan() {
    // A full cluster's cycles skip the plan but hand over the jobs that
    // finished: the next plan estimates from them.
    let mut planner = Planner::new(Config::default());
    let mut snap = one_cpu(0.0);
    snap.finished = vec![FinishedJob {
        user: "bob".into(),
        name: "train".into(),
        partition: "cpu".into(),
        nodes: String::new(),
        shards: false,
        seconds: 42.0,
        end: 0.0,
    }];
    planner.learn(&snap);
    snap.finished.clear();
    let mut learned = job(2, "bob", "");
    learned.partitions = vec!["cpu".into()];
    snap.pending = vec![learned];
    let d = planner.plan(&snap);
    let note = d[0].note.clone().unwrap_or_default();
    assert!(note.contains("cpu=42s (history)"), "{note}");
}

#[test]
fn a_big_job_elsewhere_does_not_size_a_capped_partitions_slots() {
    use fairmatch::slurm::snapshot::PartitionLimits;
    // p1 may hold one CPU per node; a 4-CPU job waits for the GPUs only.
    let mut snap = cluster(100.0);
    snap.partitions[0].limits = PartitionLimits {
        max_cpus_per_node: Some(1),
        ..Default::default()
    };
    let mut small = job(1, "alice", "fairmatch: cpu=10s");
    small.partitions = vec!["cpu".into()];
    let mut big = gpu_job(2, "bob");
    big.cpus = 4;
    snap.pending = vec![small, big];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1).len(), 1, "{d:?}");
}

#[test]
fn a_node_slurm_found_full_keeps_its_slots_marked_full() {
    use fairmatch::slurm::full_nodes::{FullNodes, Occupants};
    use fairmatch::slurm::slots::SlotModel;
    let mut snap = one_gpu(100.0);
    snap.nodes[0].gres = "gpu:2".into();
    let mut running = gpu_job(5, "bob");
    running.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 90.0,
    });
    snap.running = vec![running];
    let config = Config::default();
    let mut full = FullNodes::default();
    assert_eq!(SlotModel::build(&config, &snap, &full).slots.len(), 2);
    let occupants = Occupants::of(&snap, "g1").unwrap();
    full.refused("gpu", "g1", occupants, 100.0);
    // Both slots stay, marked full: bob's job keeps its slot, and the
    // free one is busy in the plan until a job on g1 ends.
    let model = SlotModel::build(&config, &snap, &full);
    assert_eq!(model.slots.len(), 2);
    assert!(model.slots.iter().all(|s| s.full));
}

#[test]
fn a_job_may_wait_for_a_full_gpu_rather_than_take_a_slow_cpu() {
    // g1's GPU is free in the model, but Slurm found g1 full (memory held
    // by a job ending at 106): a 1 s GPU job waits for it rather than run
    // 100 s on c1.
    let mut planner = Planner::new(Config::default());
    let mut snap = cluster(100.0);
    snap.nodes = vec![node("c1", 1, ""), node("g1", 1, "gpu:2")];
    snap.partitions[0].nodes = vec![0];
    snap.partitions[1].nodes = vec![1];
    let mut blocker = gpu_job(9, "bob");
    blocker.comment = "fairmatch: gpu=16s".into();
    blocker.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 90.0,
    });
    snap.running = vec![blocker];
    snap.pending = vec![job(1, "alice", "fairmatch: gpu=1s cpu=100s")];
    let first = planner.plan(&snap);
    assert_eq!(starts(&first, 1), vec![("gpu".into(), "g1".into())]);
    planner.observe(&[outcome(1, Err("Resources"), 100.0)]);
    snap.now = 100.1;
    let second = planner.plan(&snap);
    assert!(starts(&second, 1).is_empty(), "{second:?}");
}

#[test]
fn overlapping_partitions_with_per_socket_limits_fill_both_nodes() {
    use fairmatch::slurm::snapshot::PartitionLimits;
    // SchedMD's test_146_1: p1 on n1,n2 and p2 on n2,n3, each at most one
    // CPU per socket; p1 runs two jobs on n1 and two on n2.
    let mut snap = cluster(100.0);
    snap.nodes = (1..=3)
        .map(|i| {
            let mut n = node(&format!("n{i}"), 12, "");
            n.sockets = 2;
            n
        })
        .collect();
    let limits = PartitionLimits {
        max_cpus_per_socket: Some(1),
        ..Default::default()
    };
    snap.partitions = vec![
        PartitionInfo {
            limits,
            ..PartitionInfo::new("p1", vec![0, 1])
        },
        PartitionInfo {
            limits,
            ..PartitionInfo::new("p2", vec![1, 2])
        },
    ];
    snap.running = [("n1", 50), ("n1", 51), ("n2", 52), ("n2", 53)]
        .iter()
        .map(|&(n, id)| {
            let mut j = job(id, "bob", "");
            j.partitions = vec!["p1".into()];
            j.running = Some(Placement {
                partition: "p1".into(),
                nodes: vec![n.into()],
                start: 90.0,
            });
            j
        })
        .collect();
    snap.pending = (1..=4)
        .map(|id| {
            let mut j = job(id, "alice", "");
            j.partitions = vec!["p2".into()];
            j
        })
        .collect();
    let d = Planner::new(Config::default()).plan(&snap);
    let placed: Vec<(String, String)> = (1..=4).flat_map(|id| starts(&d, id)).collect();
    assert_eq!(placed.len(), 4, "{d:?}");
}

#[test]
fn a_job_that_may_preempt_is_retried_on_the_same_node_at_once() {
    use fairmatch::slurm::snapshot::Preemption;
    // Under preemption Slurm answers "busy" until it has preempted: the
    // node is not full, the answer just changes with time.
    let mut planner = Planner::new(Config::default());
    let mut snap = one_gpu(100.0);
    snap.partitions[0].limits.preemption = Preemption::LowerTiers;
    snap.pending = vec![gpu_job(1, "alice")];
    planner.plan(&snap);
    planner.observe(&[outcome(1, Err("Resources"), 100.0)]);
    snap.now = 100.1;
    assert_eq!(
        starts(&planner.plan(&snap), 1),
        vec![("gpu".into(), "g1".into())]
    );
}

#[test]
fn an_overdue_job_goes_ahead_of_shorter_ones() {
    // Both CPU slots free; a 4 s job eligible at 1,000 s, then six 1 s
    // jobs eligible at 1,001 s: 5 s of work per slot, within MaxWait (6
    // s). At 1,005 s nothing is overdue and the matching starts two short
    // jobs; at 1,007 s the long job has waited past MaxWait, the short
    // ones not, and it takes a slot at once.
    let config = Config {
        max_wait: Some(6.0),
        ..Config::default()
    };
    let queue = |now: f64, shorts: u32| {
        let mut snap = cluster(now);
        snap.partitions.truncate(1);
        snap.nodes.truncate(2);
        snap.pending = (1..=shorts)
            .map(|id| JobInfo {
                eligible: 1001.0,
                ..JobInfo::pending(id, "alice", "fairmatch: cpu=1s", &["cpu"])
            })
            .collect();
        snap.pending.push(JobInfo {
            eligible: 1000.0,
            ..JobInfo::pending(99, "bob", "fairmatch: cpu=4s", &["cpu"])
        });
        snap
    };
    let early = Planner::new(config.clone()).plan(&queue(1005.0, 6));
    assert_eq!(placed(&early, 99), None);
    let late = Planner::new(config.clone()).plan(&queue(1007.0, 6));
    assert!(placed(&late, 99).is_some(), "{late:?}");
    // Twenty short jobs are 12 s of work per slot: no order keeps a 6 s
    // bound for every job, and the matching's order stands.
    let backlog = Planner::new(config).plan(&queue(1007.0, 20));
    assert_eq!(placed(&backlog, 99), None, "{backlog:?}");
}
