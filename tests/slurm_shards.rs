//! The plugin's planner on nodes with shards (`Gres=gpu:2,shard:8`): a
//! job that asks for shards (`--gres=shard:N`) is planned on the shard
//! flavor beside the GPUs' (`gpu:shard`), a GPU's shards and the GPU
//! itself exclude each other within one plan and across plans, and a
//! shard job's hints and learned times are its shard flavor's.

use fairmatch::slurm::config::Config;
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::snapshot::{
    Action, Decision, FinishedJob, GpuDevice, JobInfo, NodeInfo, PartitionInfo, Placement, Snapshot,
};

/// Partition `gpu`: s1 with two GPUs of four shards each; c1, a CPU node,
/// in partition `cpu`.
fn cluster() -> Snapshot {
    Snapshot {
        now: 5000.0,
        nodes: vec![
            NodeInfo::with_shards("s1", 16, "gpu:2,shard:8", 4),
            NodeInfo::up("c1", 16, ""),
        ],
        partitions: vec![
            PartitionInfo::new("gpu", vec![0]),
            PartitionInfo::new("cpu", vec![1]),
        ],
        pending: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
    }
}

fn shard_job(id: u32, shards: u32, comment: &str) -> JobInfo {
    JobInfo {
        shards,
        eligible: 1000.0 + f64::from(id),
        ..JobInfo::pending(id, "alice", comment, &["gpu", "cpu"])
    }
}

fn gpu_job(id: u32, gpus: u32, comment: &str) -> JobInfo {
    JobInfo {
        gpus,
        eligible: 1000.0 + f64::from(id),
        ..JobInfo::pending(id, "alice", comment, &["gpu", "cpu"])
    }
}

/// Each start: (job, node, GPUs it is given).
fn starts(decisions: &[Decision]) -> Vec<(u32, String, u32)> {
    decisions
        .iter()
        .filter_map(|d| match &d.action {
            Action::Start { nodes, gpus, .. } => Some((d.job_id, nodes.join(","), *gpus)),
            _ => None,
        })
        .collect()
}

fn started(decisions: &[Decision], id: u32) -> bool {
    starts(decisions).iter().any(|(j, _, _)| *j == id)
}

#[test]
fn shard_jobs_fill_the_gpus_shards_and_keep_their_own_request() {
    let mut snap = cluster();
    snap.pending = (1..=5)
        .map(|id| shard_job(id, 2, "fairmatch: shard=5m"))
        .collect();
    let d = Planner::new(Config::default()).plan(&snap);
    let s = starts(&d);
    // Two GPUs of four shards hold four jobs of two; the fifth waits.
    assert_eq!(s.len(), 4, "{d:?}");
    assert!(
        s.iter().all(|(_, node, gpus)| node == "s1" && *gpus == 0),
        "on s1, their shard request kept, no GPU added: {d:?}"
    );
    let waiting = d.iter().find(|d| d.job_id == 5).expect("a decision");
    assert!(matches!(waiting.action, Action::Wait), "{waiting:?}");
}

#[test]
fn a_gpu_is_given_whole_or_shared_out_never_both() {
    let mut snap = cluster();
    // One GPU's worth of shards each, and GPU jobs: at most two of the
    // four fit at once.
    snap.pending = vec![
        shard_job(1, 4, "fairmatch: shard=5m"),
        gpu_job(2, 1, "fairmatch: gpu=5m"),
        shard_job(3, 4, "fairmatch: shard=5m"),
        gpu_job(4, 1, "fairmatch: gpu=5m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    let s = starts(&d);
    assert_eq!(s.len(), 2, "two GPUs, each whole or shared: {d:?}");

    // A GPU job beside one on shards: one GPU left to give whole.
    snap.pending = vec![
        shard_job(1, 1, "fairmatch: shard=5m"),
        gpu_job(2, 2, "fairmatch: gpu=5m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d).len(), 1, "{d:?}");
}

#[test]
fn what_running_jobs_hold_of_each_gpu_is_respected() {
    let mut snap = cluster();
    // GPU 0 held whole; GPU 1 has one of its four shards held.
    snap.nodes[0].devices = vec![
        GpuDevice {
            shards: 4,
            shards_used: 0,
            whole: true,
        },
        GpuDevice {
            shards: 4,
            shards_used: 1,
            whole: false,
        },
    ];
    let mut whole = gpu_job(8, 1, "fairmatch: gpu=30m");
    whole.running = Some(Placement::on("gpu", "s1", 4990.0));
    let mut sharing = shard_job(9, 1, "fairmatch: shard=30m");
    sharing.running = Some(Placement::on("gpu", "s1", 4990.0));
    snap.running = vec![whole, sharing];
    snap.pending = vec![
        gpu_job(1, 1, "fairmatch: gpu=1m"),
        shard_job(2, 1, "fairmatch: shard=1m"),
        shard_job(3, 1, "fairmatch: shard=1m"),
        shard_job(4, 1, "fairmatch: shard=1m"),
        shard_job(5, 1, "fairmatch: shard=1m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(!started(&d, 1), "no GPU is free whole: {d:?}");
    // GPU 1's three free shards, one job each; the fourth job waits.
    let on_shards: Vec<u32> = starts(&d).iter().map(|(j, _, _)| *j).collect();
    assert_eq!(on_shards.len(), 3, "{d:?}");
    assert!(!started(&d, 1));
}

#[test]
fn shards_are_for_shard_jobs_only() {
    let mut snap = cluster();
    // No GPU free whole: a GPU job and a job asking for nothing must not
    // take shards, and a shard job never runs on a CPU node.
    snap.nodes[0].devices[0].shards_used = 1;
    snap.nodes[0].devices[1].shards_used = 1;
    let plain = JobInfo {
        eligible: 1001.0,
        ..JobInfo::pending(1, "alice", "fairmatch: gpu=1m", &["gpu"])
    };
    snap.pending = vec![plain, gpu_job(2, 1, "fairmatch: gpu=1m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d).is_empty(), "{d:?}");

    let mut snap = cluster();
    snap.nodes[0].available = false;
    snap.pending = vec![shard_job(3, 1, "fairmatch: shard=1m cpu=1s")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d).is_empty(), "not on c1: {d:?}");
}

#[test]
fn a_shard_jobs_hint_may_name_its_gpus() {
    let mut snap = cluster();
    snap.pending = vec![shard_job(1, 1, "fairmatch: gpu=5m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(started(&d, 1), "{d:?}");
    assert!(
        d.iter().all(|d| d.note.is_none()),
        "`gpu` gives its time on the GPUs' shards, no other estimate: {d:?}"
    );
}

#[test]
fn a_finished_shard_job_teaches_its_shard_flavor() {
    let mut snap = cluster();
    snap.finished = (0..3)
        .map(|k| FinishedJob {
            user: "alice".into(),
            name: "train".into(),
            partition: "gpu".into(),
            nodes: "s1".into(),
            shards: true,
            seconds: 100.0,
            end: 4000.0 + f64::from(k),
        })
        .collect();
    // Without a hint, the admin note says what the plan learned for the
    // shard flavor.
    snap.pending = vec![shard_job(1, 1, "")];
    let mut planner = Planner::new(Config::default());
    let d = planner.plan(&snap);
    let note = d
        .iter()
        .find(|d| d.job_id == 1)
        .and_then(|d| d.note.clone())
        .unwrap_or_default();
    assert!(
        note.contains("gpu:shard=100s (history)"),
        "learned from its earlier runs: {d:?}"
    );
}

#[test]
fn whole_gpus_are_handed_out_before_shards_so_both_fit() {
    let mut snap = cluster();
    // GPU 1 has two of its four shards held; GPU 0 is free. Slurm takes a
    // job's shards from the first GPU with enough: were the shard job
    // started first, it would take GPU 0 and the GPU job would wait.
    snap.nodes[0].devices[1].shards_used = 2;
    let mut sharing = shard_job(9, 2, "fairmatch: shard=30m");
    sharing.running = Some(Placement::on("gpu", "s1", 4990.0));
    snap.running = vec![sharing];
    snap.pending = vec![
        shard_job(1, 2, "fairmatch: shard=10m"),
        gpu_job(2, 1, "fairmatch: gpu=5m"),
    ];
    let d = Planner::new(Config::default()).plan(&snap);
    let order: Vec<u32> = starts(&d).iter().map(|(j, _, _)| *j).collect();
    assert_eq!(order, vec![2, 1], "both start, the GPU job first: {d:?}");
}

#[test]
fn jobs_of_different_shard_counts_pack_each_gpu() {
    let mut snap = cluster();
    // Ten shards asked of eight: four of the five jobs fit, whatever
    // their sizes, as long as each job's shards are on one GPU (3 + 1 on
    // each, or 2 + 1 + 1 and 3).
    snap.pending = [3, 3, 1, 1, 2]
        .iter()
        .enumerate()
        .map(|(i, &n)| shard_job(i as u32 + 1, n, "fairmatch: shard=5m"))
        .collect();
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d).len(), 4, "{d:?}");

    // No GPU of four holds a job of five.
    snap.pending = vec![shard_job(1, 5, "fairmatch: shard=5m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d).is_empty(), "{d:?}");
}

#[test]
fn a_gang_on_shards_takes_one_gpus_shards_on_each_node() {
    let mut snap = cluster();
    snap.nodes
        .push(NodeInfo::with_shards("s2", 16, "gpu:2,shard:8", 4));
    snap.partitions[0].nodes.push(2);
    // s1 has three free shards on one GPU and one on the other.
    snap.nodes[0].devices[0].shards_used = 1;
    snap.nodes[0].devices[1].shards_used = 3;
    let mut gang = shard_job(1, 3, "fairmatch: shard=5m");
    gang.nodes = 2;
    snap.pending = vec![gang];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(starts(&d), vec![(1, "s1,s2".into(), 0)], "{d:?}");

    // With s1's shards spread one per GPU, the gang does not fit.
    snap.nodes[0].devices[0].shards_used = 2;
    snap.nodes[0].devices[1].shards_used = 2;
    let d = Planner::new(Config::default()).plan(&snap);
    assert!(starts(&d).is_empty(), "{d:?}");
}

#[test]
fn shard_jobs_need_cpus_too() {
    let mut snap = cluster();
    // s1 has two CPUs, and two shard jobs hold them: its free shards wait
    // for a CPU, and a second node's take the job.
    snap.nodes[0].cpus = 2;
    snap.nodes
        .push(NodeInfo::with_shards("s2", 2, "gpu:2,shard:8", 4));
    snap.partitions[0].nodes.push(2);
    snap.nodes[0].devices[0].shards_used = 2;
    snap.running = (8..10)
        .map(|id| {
            let mut job = shard_job(id, 1, "fairmatch: shard=30m");
            job.running = Some(Placement::on("gpu", "s1", 4990.0));
            job
        })
        .collect();
    snap.pending = (1..=3)
        .map(|id| shard_job(id, 1, "fairmatch: shard=1m"))
        .collect();
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(
        starts(&d),
        vec![(1, "s2".into(), 0), (2, "s2".into(), 0)],
        "two CPUs on s2, none on s1: {d:?}"
    );
}

#[test]
fn a_shard_job_waits_for_gpus_held_whole_and_stays_planned() {
    let mut snap = cluster();
    for device in &mut snap.nodes[0].devices {
        device.whole = true;
    }
    snap.running = (8..10)
        .map(|id| {
            let mut job = gpu_job(id, 1, "fairmatch: gpu=1m");
            job.running = Some(Placement::on("gpu", "s1", 4990.0));
            job
        })
        .collect();
    snap.pending = vec![shard_job(1, 1, "fairmatch: shard=1m")];
    let d = Planner::new(Config::default()).plan(&snap);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        matches!(d[0].action, Action::Wait) && d[0].for_resources,
        "it waits for the GPUs' shards, not for the first-come pass: {d:?}"
    );
}
