//! The plugin's planner on a partition of two GPU types, with jobs of
//! several widths: flavors per type, hints naming types, gangs started
//! whole on one node, and what a running gang holds.

use fairmatch::slurm::config::Config;
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::snapshot::{
    Action, Decision, JobInfo, NodeInfo, PartitionInfo, Placement, Snapshot,
};

/// Partition `gpu`: g1 with 4 a100, g2 with 4 v100.
fn cluster() -> Snapshot {
    Snapshot {
        now: 5000.0,
        nodes: vec![
            NodeInfo::up("g1", 8, "gpu:a100:4"),
            NodeInfo::up("g2", 8, "gpu:v100:4"),
        ],
        partitions: vec![PartitionInfo::new("gpu", vec![0, 1])],
        pending: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
    }
}

fn job(id: u32, gpus: u32, comment: &str) -> JobInfo {
    JobInfo {
        gpus,
        eligible: 1000.0 + f64::from(id),
        ..JobInfo::pending(id, "alice", comment, &["gpu"])
    }
}

/// Each start of job `id`: (partition, node, GPUs).
fn starts(decisions: &[Decision], id: u32) -> Vec<(String, String, u32)> {
    decisions
        .iter()
        .filter(|d| d.job_id == id)
        .filter_map(|d| match &d.action {
            Action::Start {
                partition,
                nodes,
                gpus,
                ..
            } => Some((partition.clone(), nodes.join(","), *gpus)),
            Action::Wait | Action::FirstCome | Action::Preempt { .. } => None,
        })
        .collect()
}

fn start(partition: &str, node: &str, gpus: u32) -> Vec<(String, String, u32)> {
    vec![(partition.into(), node.into(), gpus)]
}

#[test]
fn each_gpu_type_of_a_partition_is_a_flavor_a_hint_can_name() {
    let mut snap = cluster();
    snap.pending = vec![
        job(1, 1, "fairmatch: a100=10m v100=40m"),
        job(2, 1, "fairmatch: gpu:a100=40m gpu:v100=10m"),
        // The partition's key stands for both types; a type's overrides it.
        job(3, 1, "fairmatch: gpu=30m a100=5m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), start("gpu", "g1", 1), "{d:?}");
    assert_eq!(starts(&d, 2), start("gpu", "g2", 1), "{d:?}");
    assert_eq!(starts(&d, 3), start("gpu", "g1", 1), "{d:?}");
    assert!(
        d.iter().all(|d| d.note.is_none()),
        "every hint was read: {d:?}"
    );
}

#[test]
fn an_unknown_type_is_reported_not_fatal() {
    let mut snap = cluster();
    snap.pending = vec![job(1, 1, "fairmatch: h100=1m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1).len(), 1, "{d:?}");
    let note = d[0].note.clone().unwrap_or_default();
    assert!(note.contains("unknown flavor 'h100'"), "{note}");
    assert!(note.contains("a100"), "the known keys are listed: {note}");
}

#[test]
fn a_wide_job_starts_whole_on_one_node() {
    let mut snap = cluster();
    snap.pending = vec![
        job(1, 4, "fairmatch: a100=10m v100=30m"),
        job(2, 2, "fairmatch: a100=10m v100=12m"),
        job(3, 2, "fairmatch: a100=10m v100=12m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    // The 4-wide job gains most from a100: it takes g1 whole, and the two
    // indifferent 2-wide jobs share g2.
    assert_eq!(starts(&d, 1), start("gpu", "g1", 4), "{d:?}");
    assert_eq!(starts(&d, 2), start("gpu", "g2", 2), "{d:?}");
    assert_eq!(starts(&d, 3), start("gpu", "g2", 2), "{d:?}");
}

#[test]
fn a_job_that_asked_for_a_type_gets_only_that_type() {
    let mut snap = cluster();
    let mut pinned = job(1, 2, "fairmatch: a100=1m v100=60m");
    pinned.gpu_type = Some("v100".into());
    snap.pending = vec![pinned];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), start("gpu", "g2", 2), "{d:?}");
}

#[test]
fn a_job_wider_than_every_node_is_never_planned() {
    let mut snap = cluster();
    snap.pending = vec![job(1, 8, "fairmatch: a100=1m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d, 1).is_empty(), "{d:?}");
    assert!(
        d[0].reason.contains("none of the job's partitions"),
        "{d:?}"
    );
}

#[test]
fn a_running_gang_holds_its_gpus_and_a_wide_job_waits_for_them() {
    let mut snap = cluster();
    let mut running = job(9, 3, "fairmatch: a100=10m");
    running.running = Some(Placement {
        partition: "gpu".into(),
        nodes: vec!["g1".into()],
        start: 4990.0,
    });
    snap.running = vec![running];
    // g1 has one GPU left. A 2-wide job much faster on a100 would rather
    // wait for g1 than run on g2 now; a 1-wide one takes g1's last GPU.
    snap.pending = vec![
        job(1, 2, "fairmatch: a100=10m v100=100m"),
        job(2, 1, "fairmatch: a100=1m v100=10m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d, 1).is_empty(), "{d:?}");
    assert_eq!(starts(&d, 2), start("gpu", "g1", 1), "{d:?}");
}

#[test]
fn a_job_that_may_not_use_the_planned_node_takes_another_of_its_flavor() {
    let mut snap = cluster();
    snap.nodes.push(NodeInfo::up("g3", 8, "gpu:a100:4"));
    snap.partitions[0].nodes.push(2);
    let mut picky = job(1, 4, "fairmatch: a100=1m v100=60m");
    picky.usable_nodes = Some(vec![1, 2]); // --exclude=g1
    snap.pending = vec![picky];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d, 1), start("gpu", "g3", 4), "{d:?}");
}

/// Run times are learned per GPU type: on this partition, the flavor a
/// finished job ran on is named by its node's type.
#[test]
fn run_times_are_learned_per_gpu_type() {
    use fairmatch::slurm::saved_state::decode;
    use fairmatch::slurm::snapshot::FinishedJob;
    let ran = |nodes: &str, seconds: f64| FinishedJob {
        user: "alice".into(),
        name: "train".into(),
        partition: "gpu".into(),
        nodes: nodes.into(),
        shards: false,
        seconds,
        end: 0.0,
    };
    let mut p = Planner::new(Config::default());
    let mut snap = cluster();
    // 300 s on the a100s, 100 s on the v100s: the mean over the
    // partition, 200 s on each, would not tell them apart.
    for _ in 0..3 {
        snap.finished.push(ran("g1", 300.0));
        snap.finished.push(ran("g2", 100.0));
    }
    p.learn(&snap);
    let learned: Vec<(String, f64)> = decode(&p.saved_state())
        .unwrap()
        .history
        .iter()
        .map(|e| (e.flavor.clone(), e.mean))
        .collect();
    assert!(learned.contains(&("gpu:a100".into(), 300.0)), "{learned:?}");
    assert!(learned.contains(&("gpu:v100".into(), 100.0)), "{learned:?}");
    snap.finished.clear();
    snap.pending = vec![JobInfo {
        name: "train".into(),
        ..job(1, 1, "")
    }];
    assert_eq!(starts(&p.plan(&snap), 1), start("gpu", "g2", 1));
    // A multi-node run over both types is learned for the partition; a
    // gang on one type, for that type.
    let mut snap = cluster();
    snap.finished = vec![ran("g[1-2]", 50.0)];
    p.learn(&snap);
    let history = decode(&p.saved_state()).unwrap().history;
    assert!(history.iter().any(|e| e.flavor == "gpu"), "{history:?}");
    let mut p = Planner::new(Config::default());
    let mut snap = cluster();
    snap.nodes.push(NodeInfo::up("g3", 8, "gpu:a100:2"));
    snap.partitions[0].nodes.push(2);
    snap.finished = vec![ran("g[1,3]", 70.0)];
    p.learn(&snap);
    let history = decode(&p.saved_state()).unwrap().history;
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0].flavor, "gpu:a100", "{history:?}");
}
