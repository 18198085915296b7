//! The site's priority in the planner: an admin's priority, QOS priority
//! and partition tiers order strict classes, and AlloX decides within one.

use fairmatch::slurm::config::{parse, Config};
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::snapshot::{
    Action, Checked, Decision, JobInfo, JobPriority, NodeInfo, PartitionInfo, Snapshot,
};

/// Two one-GPU nodes in `gpu` (PriorityTier 1) and in `urgent` (tier 5,
/// the same nodes), and one CPU node in `cpu`.
fn cluster() -> Snapshot {
    let mut gpu = PartitionInfo::new("gpu", vec![0, 1]);
    gpu.limits.priority_tier = 1;
    let mut urgent = PartitionInfo::new("urgent", vec![0, 1]);
    urgent.limits.priority_tier = 5;
    Snapshot {
        now: 5000.0,
        nodes: vec![
            NodeInfo::up("g1", 1, "gpu:1"),
            NodeInfo::up("g2", 1, "gpu:1"),
            NodeInfo::up("c1", 1, ""),
        ],
        partitions: vec![gpu, urgent, PartitionInfo::new("cpu", vec![2])],
        pending: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
    }
}

/// A one-GPU job of 60 s, older the lower its id, with the priority
/// priority/basic would give it (older = higher).
fn gpu_job(id: u32, user: &str) -> JobInfo {
    let mut j = JobInfo::pending(id, user, "fairmatch: gpu=60s", &["gpu"]);
    j.eligible = 1000.0 + f64::from(id);
    j.gpus = 1;
    j.priority = JobPriority {
        value: 100_000 - id,
        ..JobPriority::default()
    };
    j
}

fn started(decisions: &[Decision]) -> Vec<u32> {
    let mut ids: Vec<u32> = decisions
        .iter()
        .filter(|d| matches!(d.action, Action::Start { .. }))
        .map(|d| d.job_id)
        .collect();
    ids.sort_unstable();
    ids
}

fn raised(mut job: JobInfo, value: u32) -> JobInfo {
    job.priority.value = value;
    job.priority.set_by_admin = true;
    job
}

/// 16 equal jobs of four users wait for two GPUs; an admin raises the
/// last two. They start first, as under `sched/backfill`; without the
/// admin's priority, fairness and age pick two others.
#[test]
fn jobs_an_admin_raised_start_first() {
    let users = ["ann", "bob", "cid", "dan"];
    let queue = |raise: bool| -> Vec<JobInfo> {
        (1..=16)
            .map(|id| {
                let j = gpu_job(id, users[id as usize % 4]);
                if raise && id > 14 {
                    raised(j, 1_000_000 + id)
                } else {
                    j
                }
            })
            .collect()
    };
    let mut snap = cluster();
    snap.pending = queue(true);
    assert_eq!(
        started(&Planner::new(Config::default()).plan(&snap)),
        vec![15, 16]
    );

    snap.pending = queue(false);
    let plain = started(&Planner::new(Config::default()).plan(&snap));
    assert_eq!(plain.len(), 2);
    assert!(plain.iter().all(|&id| id <= 14), "{plain:?}");

    let (off, w) = parse("f.conf", "PriorityTiers=none\n");
    assert!(w.is_empty(), "{w:?}");
    snap.pending = queue(true);
    assert_eq!(started(&Planner::new(off).plan(&snap)), plain);
}

/// An admin's priority below every computed one sends the job last.
#[test]
fn a_job_an_admin_lowered_waits_for_the_rest() {
    let mut snap = cluster();
    snap.pending = vec![
        raised(gpu_job(1, "ann"), 5),
        gpu_job(2, "ann"),
        gpu_job(3, "ann"),
    ];
    assert_eq!(
        started(&Planner::new(Config::default()).plan(&snap)),
        vec![2, 3]
    );
}

#[test]
fn a_higher_qos_priority_goes_first() {
    let mut snap = cluster();
    snap.pending = (1..=4).map(|id| gpu_job(id, "ann")).collect();
    snap.pending[3].priority.qos = 100;
    snap.pending[3].qos = "high".into();
    let got = started(&Planner::new(Config::default()).plan(&snap));
    assert!(got.contains(&4) && got.len() == 2, "{got:?}");
}

#[test]
fn a_higher_partition_tier_goes_first() {
    let mut snap = cluster();
    snap.pending = (1..=4).map(|id| gpu_job(id, "ann")).collect();
    snap.pending[2].partitions = vec!["urgent".into()];
    let decisions = Planner::new(Config::default()).plan(&snap);
    let got = started(&decisions);
    assert!(got.contains(&3) && got.len() == 2, "{got:?}");
}

/// Within a class, the matching still picks the flavors: the urgent job
/// fast on a GPU gets one, and a job of a lower class takes the CPU the
/// urgent one does not want.
#[test]
fn within_a_class_the_matching_picks_the_flavor() {
    let mut snap = cluster();
    let mut urgent = JobInfo::pending(
        1,
        "ann",
        "fairmatch: urgent=60s cpu=600s",
        &["urgent", "cpu"],
    );
    urgent.eligible = 1002.0;
    let mut cpu_fine = JobInfo::pending(2, "bob", "fairmatch: cpu=61s", &["cpu"]);
    cpu_fine.eligible = 1001.0;
    snap.pending = vec![urgent, cpu_fine];
    let decisions = Planner::new(Config::default()).plan(&snap);
    let place = |id: u32| {
        decisions
            .iter()
            .find(|d| d.job_id == id)
            .and_then(|d| match &d.action {
                Action::Start { partition, .. } => Some(partition.clone()),
                _ => None,
            })
    };
    assert_eq!(place(1).as_deref(), Some("urgent"));
    assert_eq!(place(2).as_deref(), Some("cpu"), "{decisions:?}");
}

/// With a candidate cap, Slurm's checks reach the raised jobs at the end
/// of a long queue: each class has its own window.
#[test]
fn the_check_window_reaches_a_raised_job_at_the_back_of_the_queue() {
    let (config, w) = parse("f.conf", "MaxCandidates=1\n");
    assert!(w.is_empty(), "{w:?}");
    let planner = Planner::new(config);
    let mut snap = cluster();
    snap.pending = (1..=60)
        .map(|id| JobInfo {
            checked: Checked::Not,
            ..gpu_job(id, "ann")
        })
        .collect();
    snap.pending[59] = raised(snap.pending[59].clone(), 9_000_000);
    let wanted = planner.to_check(&snap);
    assert!(wanted.contains(&59), "{wanted:?}");
    assert!(wanted.len() < 60, "a window, not the queue: {wanted:?}");
}

/// The first GPU to free goes to the admin's job even while the other
/// GPUs' jobs have overrun their estimates (the plan takes them to free
/// "imminently") or are about to end, and the plan made before the raise
/// placed the raised jobs on those GPUs: neither a tie with an overrun GPU
/// nor the plan's stickiness hands the free GPU to a lower class.
#[test]
fn a_free_gpu_goes_to_the_raised_job_while_other_gpus_overrun() {
    let mut nodes: Vec<NodeInfo> = (1..=4)
        .map(|i| NodeInfo::up(&format!("g{i}"), 1, "gpu:1"))
        .collect();
    // A CPU node too, which these jobs may not use: the matching has two
    // flavors, as on a mixed cluster.
    nodes.push(NodeInfo::up("c1", 1, ""));
    let blocker = |id: u32, node: &str, start: f64| {
        let mut j = JobInfo::pending(id, "ann", "fairmatch: gpu=8s", &["gpu"]);
        j.gpus = 1;
        j.running = Some(fairmatch::slurm::snapshot::Placement::on(
            "gpu", node, start,
        ));
        j
    };
    let mut snap = Snapshot {
        nodes,
        partitions: vec![
            PartitionInfo::new("gpu", vec![0, 1, 2, 3]),
            PartitionInfo::new("cpu", vec![4]),
        ],
        ..cluster()
    };
    let users = ["ann", "bob", "cid", "dan"];
    let queue = |raise: bool| -> Vec<JobInfo> {
        (1..=16)
            .map(|id| {
                let mut j = gpu_job(id, users[id as usize % 4]);
                j.comment = "fairmatch: gpu=2s".into();
                if raise && id > 12 {
                    raised(j, 1_000_000 + id)
                } else {
                    j
                }
            })
            .collect()
    };
    // Now 5008.5: the blockers' 8 s ended 0.5 s ago, or end in 0.5 s.
    for (idle_first, blockers_start) in (1..=4).flat_map(|g| [(g, 5000.0), (g, 5001.0)]) {
        let mut planner = Planner::new(Config::default());
        // Every GPU busy: the plan places the queue, raised or not yet.
        snap.now = 5000.2;
        snap.running = (1..=4)
            .map(|i| blocker(100 + i, &format!("g{i}"), blockers_start))
            .collect();
        snap.pending = queue(false);
        assert!(started(&planner.plan(&snap)).is_empty());
        snap.now = 5000.5;
        snap.pending = queue(true);
        assert!(started(&planner.plan(&snap)).is_empty());
        // Past every blocker's estimate, one GPU frees.
        snap.running.remove(idle_first - 1);
        snap.now = 5008.5;
        let got = started(&planner.plan(&snap));
        assert_eq!(
            got,
            vec![16],
            "g{idle_first} freed first, blockers from {blockers_start}"
        );
    }
}
