//! The plugin's planner on nodes with GPUs of several types (MIG profiles
//! such as `gpu:1g.10gb:4,gpu:3g.40gb:1`, or two kinds of card): each
//! type's GPUs are slots of that type's flavor, a typed job gets its type
//! there, an untyped one is asked for the type the plan chose, and a
//! running job holds slots of the type Slurm gave it.

use fairmatch::slurm::config::Config;
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::snapshot::{
    Action, Decision, JobInfo, NodeInfo, PartitionInfo, Placement, Snapshot,
};

/// Partition `gpu`: m1 with four 1g.10gb slices and one 3g.40gb; m2 with
/// two 3g.40gb only.
fn cluster() -> Snapshot {
    Snapshot {
        now: 5000.0,
        nodes: vec![
            NodeInfo::up("m1", 8, "gpu:1g.10gb:4,gpu:3g.40gb:1"),
            NodeInfo::up("m2", 8, "gpu:3g.40gb:2"),
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

/// Each start of job `id`: (node, GPUs, the type it is asked for).
fn starts(decisions: &[Decision], id: u32) -> Vec<(String, u32, Option<String>)> {
    decisions
        .iter()
        .filter(|d| d.job_id == id)
        .filter_map(|d| match &d.action {
            Action::Start {
                nodes,
                gpus,
                gpu_type,
                ..
            } => Some((nodes.join(","), *gpus, gpu_type.clone())),
            _ => None,
        })
        .collect()
}

fn start(node: &str, gpus: u32, gpu_type: Option<&str>) -> Vec<(String, u32, Option<String>)> {
    vec![(node.into(), gpus, gpu_type.map(String::from))]
}

#[test]
fn each_type_of_a_mixed_node_is_its_flavors_and_an_untyped_job_is_asked_for_one() {
    let mut snap = cluster();
    let mut slice = job(1, 1, "fairmatch: 1g.10gb=5m 3g.40gb=4m");
    slice.gpu_type = Some("1g.10gb".into());
    snap.pending = vec![
        slice,
        // Much faster on 3g.40gb: one of those, on either node.
        job(2, 1, "fairmatch: 1g.10gb=30m 3g.40gb=2m"),
        job(3, 1, "fairmatch: 1g.10gb=30m 3g.40gb=2m"),
        job(4, 1, "fairmatch: 1g.10gb=30m 3g.40gb=2m"),
        // Indifferent: a 1g.10gb slice is left for it.
        job(5, 1, "fairmatch: gpu=3m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    // A typed job keeps its own request.
    assert_eq!(starts(&d, 1), start("m1", 1, None), "{d:?}");
    // The three 3g.40gb go to the three jobs that need them; on m1 the
    // untyped job is asked for that type, on m2 (one type) it need not be.
    let mut fast: Vec<(String, u32, Option<String>)> =
        [2, 3, 4].iter().flat_map(|&id| starts(&d, id)).collect();
    fast.sort();
    assert_eq!(
        fast,
        vec![
            ("m1".into(), 1, Some("3g.40gb".into())),
            ("m2".into(), 1, None),
            ("m2".into(), 1, None),
        ],
        "{d:?}"
    );
    assert_eq!(starts(&d, 5), start("m1", 1, Some("1g.10gb")), "{d:?}");
    assert!(
        !d.iter().any(|d| d.reason.contains('+')),
        "no flavor of its own for a mixed node: {d:?}"
    );
}

#[test]
fn a_running_job_holds_slots_of_the_type_it_was_given() {
    let mut snap = cluster();
    // The 3g.40gb of m1 is taken; its 1g.10gb slices are free.
    let mut running = job(9, 1, "fairmatch: gpu=30m");
    running.gpu_type = Some("3g.40gb".into());
    running.running = Some(Placement::on("gpu", "m1", 4990.0));
    let mut m2 = job(8, 2, "fairmatch: gpu=30m");
    m2.gpu_type = Some("3g.40gb".into());
    m2.running = Some(Placement::on("gpu", "m2", 4990.0));
    snap.running = vec![running, m2];
    let mut wants = job(1, 1, "fairmatch: 3g.40gb=1m");
    wants.gpu_type = Some("3g.40gb".into());
    snap.pending = vec![wants, job(2, 1, "fairmatch: gpu=1m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d, 1).is_empty(), "every 3g.40gb is held: {d:?}");
    assert_eq!(starts(&d, 2), start("m1", 1, Some("1g.10gb")), "{d:?}");
}
