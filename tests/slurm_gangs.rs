//! The plugin's planner with multi-node jobs: a gang of `-N k` nodes is
//! planned on one flavor and started whole, in one decision naming all
//! its nodes; `--gpus=N` with the node count left to Slurm takes the
//! fewest nodes that hold it; a running gang holds its slots on every
//! node it runs on.

use fairmatch::slurm::config::Config;
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::snapshot::{
    Action, Decision, JobInfo, NodeInfo, PartitionInfo, Placement, Snapshot,
};

/// Partition `gpu`: a1, a2 with 2 a100 each; v1, v2 with 2 v100 each.
fn cluster() -> Snapshot {
    Snapshot {
        now: 5000.0,
        nodes: vec![
            NodeInfo::up("a1", 8, "gpu:a100:2"),
            NodeInfo::up("a2", 8, "gpu:a100:2"),
            NodeInfo::up("v1", 8, "gpu:v100:2"),
            NodeInfo::up("v2", 8, "gpu:v100:2"),
        ],
        partitions: vec![PartitionInfo::new("gpu", vec![0, 1, 2, 3])],
        pending: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
    }
}

/// A job of `nodes` nodes with `gpus` GPUs on each.
fn gang(id: u32, nodes: u32, gpus: u32, comment: &str) -> JobInfo {
    JobInfo {
        gpus,
        nodes,
        cpus: nodes,
        eligible: 1000.0 + f64::from(id),
        ..JobInfo::pending(id, "alice", comment, &["gpu"])
    }
}

/// Each start of job `id`: (nodes, GPUs per node).
fn starts(decisions: &[Decision], id: u32) -> Vec<(Vec<String>, u32)> {
    decisions
        .iter()
        .filter(|d| d.job_id == id)
        .filter_map(|d| match &d.action {
            Action::Start { nodes, gpus, .. } => Some((nodes.clone(), *gpus)),
            Action::Wait | Action::FirstCome | Action::Preempt { .. } => None,
        })
        .collect()
}

fn on(nodes: &[&str], gpus: u32) -> Vec<(Vec<String>, u32)> {
    vec![(nodes.iter().map(|n| n.to_string()).collect(), gpus)]
}

#[test]
fn a_gang_starts_whole_on_nodes_of_its_fastest_type() {
    let mut snap = cluster();
    snap.pending = vec![
        gang(1, 2, 2, "fairmatch: a100=10m v100=40m"),
        gang(2, 2, 1, "fairmatch: a100=10m v100=11m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), on(&["a1", "a2"], 2), "{d:?}");
    assert_eq!(starts(&d, 2), on(&["v1", "v2"], 1), "{d:?}");
}

#[test]
fn a_gang_never_spans_two_types() {
    let mut snap = cluster();
    // Four nodes wanted: the partition has four, but only two per type.
    // The plan cannot hold it; Slurm may run it across types: it goes to
    // the first-come pass. Asking for a100 it can run nowhere: it waits.
    let mut typed = gang(2, 4, 1, "fairmatch: gpu=10m");
    typed.gpu_type = Some("a100".into());
    snap.pending = vec![gang(1, 4, 1, "fairmatch: gpu=10m"), typed];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d, 1).is_empty(), "{d:?}");
    let action = |id: u32| d.iter().find(|d| d.job_id == id).map(|d| d.action.clone());
    assert_eq!(action(1), Some(Action::FirstCome), "{d:?}");
    assert_eq!(action(2), Some(Action::Wait), "{d:?}");
    // Untyped nodes of one flavor hold it.
    let mut snap = cluster();
    for n in &mut snap.nodes {
        n.gres = "gpu:2".into();
    }
    snap.pending = vec![gang(1, 4, 1, "fairmatch: gpu=10m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), on(&["a1", "a2", "v1", "v2"], 1), "{d:?}");
}

#[test]
fn gpus_for_the_job_take_the_fewest_nodes_that_hold_them() {
    let mut snap = cluster();
    let mut job = gang(1, 1, 0, "fairmatch: a100=10m v100=30m");
    job.gpus_per_job = 4;
    snap.pending = vec![job];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), on(&["a1", "a2"], 2), "{d:?}");
    // Three GPUs: two nodes, two reserved on each (Slurm gives 2 + 1).
    let mut job = gang(1, 1, 0, "fairmatch: a100=10m v100=30m");
    job.gpus_per_job = 3;
    snap.pending = vec![job];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), on(&["a1", "a2"], 2), "{d:?}");
    // A node range that cannot reach two nodes holds it nowhere.
    let mut job = gang(1, 1, 0, "fairmatch: gpu=10m");
    job.gpus_per_job = 4;
    job.max_nodes = Some(1);
    snap.pending = vec![job];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d, 1).is_empty(), "{d:?}");
}

#[test]
fn a_running_gang_holds_every_node_it_runs_on() {
    let mut snap = cluster();
    let mut running = gang(9, 2, 2, "fairmatch: a100=30m");
    running.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["a1".into(), "a2".into()],
        start: 4990.0,
    });
    snap.running = vec![running];
    // The a100s are held for 30 minutes: a one-node job much faster there
    // still goes to a v100 now, and the gang behind it waits for the
    // a100s rather than take the v100 it would have to share.
    snap.pending = vec![
        gang(1, 1, 2, "fairmatch: a100=1m v100=2m"),
        gang(2, 2, 2, "fairmatch: a100=10m v100=100m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    let first = starts(&d, 1);
    assert_eq!(first.len(), 1, "{d:?}");
    assert!(first[0].0[0].starts_with('v'), "{d:?}");
    assert!(starts(&d, 2).is_empty(), "{d:?}");
}

#[test]
fn a_gang_uses_only_nodes_it_may_use() {
    let mut snap = cluster();
    snap.nodes.push(NodeInfo::up("a3", 8, "gpu:a100:2"));
    snap.partitions[0].nodes.push(4);
    let mut picky = gang(1, 2, 2, "fairmatch: a100=1m v100=60m");
    picky.usable_nodes = Some(vec![1, 2, 3, 4]); // --exclude=a1
    snap.pending = vec![picky];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), on(&["a2", "a3"], 2), "{d:?}");
}

#[test]
fn a_cpu_gang_takes_a_slot_on_each_of_its_nodes() {
    let mut snap = Snapshot {
        nodes: vec![
            NodeInfo::up("c1", 4, ""),
            NodeInfo::up("c2", 4, ""),
            NodeInfo::up("c3", 4, ""),
        ],
        partitions: vec![PartitionInfo::new("cpu", vec![0, 1, 2])],
        ..cluster()
    };
    // Two nodes of four CPUs each: a slot is the most CPUs a job asks per
    // node (four), so one job per node.
    let mut wide = JobInfo::pending(1, "alice", "fairmatch: cpu=10m", &["cpu"]);
    wide.nodes = 2;
    wide.cpus = 8;
    let mut narrow = JobInfo::pending(2, "bob", "fairmatch: cpu=1m", &["cpu"]);
    narrow.cpus = 4;
    let mut third = JobInfo::pending(3, "carol", "fairmatch: cpu=1m", &["cpu"]);
    third.cpus = 4;
    snap.pending = vec![wide, narrow, third];
    let d = Planner::new(Config::default()).plan(&snap);
    let started: usize = [1, 2, 3].iter().map(|&id| starts(&d, id).len()).sum();
    assert_eq!(
        started, 2,
        "three slots, a gang of two and two of one: {d:?}"
    );
    for (nodes, gpus) in starts(&d, 1) {
        assert_eq!((nodes.len(), gpus), (2, 0), "{d:?}");
    }
}

#[test]
fn a_gang_wider_than_each_type_is_checked_though_it_ranks_nowhere() {
    let mut snap = cluster();
    let mut across = gang(1, 4, 1, "fairmatch: gpu=10m");
    across.checked = fairmatch::slurm::snapshot::Checked::Not;
    let mut fits = gang(2, 2, 1, "fairmatch: gpu=10m");
    fits.checked = fairmatch::slurm::snapshot::Checked::Not;
    snap.pending = vec![across, fits];
    let check = Planner::new(Config::default()).to_check(&snap);
    assert_eq!(check, vec![0, 1]);
}

#[test]
fn a_gang_one_type_holds_waits_while_that_types_nodes_are_busy_ending() {
    // a2 is still completing a job (not available): no a100 gang of two
    // fits now, but a1 and a2 hold it once a2 is back. It waits, rather
    // than go to the first-come pass, which may run it across types.
    let mut snap = cluster();
    snap.nodes[1].available = false;
    snap.nodes[3].available = false;
    snap.pending = vec![gang(1, 2, 1, "fairmatch: gpu=10m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(d.iter().all(|d| d.action == Action::Wait), "{d:?}");
    // Four nodes, more than either type has: across types, first come.
    snap.nodes[1].available = true;
    snap.nodes[3].available = true;
    snap.pending = vec![gang(1, 4, 1, "fairmatch: gpu=10m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(d.iter().any(|d| d.action == Action::FirstCome), "{d:?}");
}
