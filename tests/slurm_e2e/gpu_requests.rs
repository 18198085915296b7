//! Each way a user asks Slurm for GPUs gets what Slurm would give it, on a
//! partition of four GPU nodes of two types: the modelled shapes (one node
//! or a gang of nodes of one type) through fairmatch's plan, the others
//! first come first served.

use super::harness::{self, Cluster};
use super::FAST;
use fairmatch::slurm::hostlist;
use std::time::Duration;

/// g1 and g3 with 4 a100 each, g2 and g4 with 4 v100 each.
const FOUR_NODES: &[&str] = &[
    "--gpu-nodes",
    "4",
    "--gpus",
    "4",
    "--gpu-types",
    "a100,v100",
];

/// What one request must end with.
struct Case {
    args: &'static [&'static str],
    /// GPUs in all, on all its nodes.
    gpus: u32,
    /// Nodes it must get.
    nodes: u32,
    /// The node type it must run on, if the request names one.
    gpu_type: Option<&'static str>,
    /// Planned by fairmatch (else started first come first served).
    modelled: bool,
}

const fn case(args: &'static [&'static str], gpus: u32, nodes: u32, modelled: bool) -> Case {
    Case {
        args,
        gpus,
        nodes,
        gpu_type: None,
        modelled,
    }
}

const fn typed(args: &'static [&'static str], gpus: u32, nodes: u32, t: &'static str) -> Case {
    Case {
        args,
        gpus,
        nodes,
        gpu_type: Some(t),
        modelled: true,
    }
}

const CASES: &[Case] = &[
    case(&["--gpus-per-node=2"], 2, 1, true),
    case(&["--gpus=3", "-N1"], 3, 1, true),
    typed(&["--gres=gpu:v100:2"], 2, 1, "v100"),
    typed(&["--gpus-per-node=a100:1"], 1, 1, "a100"),
    typed(&["--constraint=v100", "--gres=gpu:1"], 1, 1, "v100"),
    case(&[], 1, 1, true),
    // --gpus=N alone: the fewest nodes that hold N.
    case(&["--gpus=2"], 2, 1, true),
    case(&["--gpus=6"], 6, 2, true),
    // Gangs of -N nodes.
    case(&["-N2", "--gpus-per-node=1"], 2, 2, true),
    case(&["-N2", "--gpus=4"], 4, 2, true),
    typed(&["-N2", "--gres=gpu:v100:2"], 4, 2, "v100"),
    case(&["-N2-3", "--gpus-per-node=1"], 2, 2, true),
    case(&["-N2", "--ntasks-per-node=2", "--gres=gpu:2"], 4, 2, true),
    // More nodes than either type has: Slurm runs it across types, first
    // come first served.
    case(&["-N4", "--gpus-per-node=1"], 4, 4, false),
    // Per task or socket, where the tasks or sockets per node are fixed.
    case(
        &["-N2", "--ntasks-per-node=2", "--gpus-per-task=1"],
        4,
        2,
        true,
    ),
    case(
        &["-n3", "--ntasks-per-node=3", "--gpus-per-task=1"],
        3,
        1,
        true,
    ),
    case(&["--sockets-per-node=1", "--gpus-per-socket=2"], 2, 1, true),
    // Tasks Slurm may place as it likes: their GPUs per node are not
    // known before the allocation.
    case(&["-N2", "--ntasks=3", "--gpus-per-task=1"], 3, 2, false),
];

/// GPUs in all in `scontrol show job -d`'s `JOB_GRES`
/// (`gpu:a100:1(IDX:0),gpu:v100:1(IDX:0)`).
fn gpus_held(job_gres: &str) -> u32 {
    job_gres
        .split(',')
        .filter_map(|entry| {
            let entry = entry.split('(').next()?.trim();
            entry
                .strip_prefix("gpu:")?
                .rsplit(':')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .sum()
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn gpu_requests_get_what_slurm_would_give() {
    let c = Cluster::start(FOUR_NODES, FAST);
    // The hint makes a100 the faster type: a job that names v100 (or
    // constrains to it) must still run there.
    let hint = ["--comment", "fairmatch: a100=1s v100=3s"];
    let ids: Vec<u32> = CASES
        .iter()
        .map(|case| {
            let mut args = vec!["-p", "gpu"];
            args.extend(hint);
            args.extend(case.args);
            c.submit(&args, 1.0, 1.0)
        })
        .collect();
    c.wait_done(&ids, Duration::from_secs(120));
    let log = c.log();
    let type_of = |node: &str| match node {
        "g1" | "g3" => "a100",
        _ => "v100",
    };
    for (case, &id) in CASES.iter().zip(&ids) {
        let job = c.job(id);
        assert_eq!(job["JobState"], "COMPLETED", "{:?}: {job:?}", case.args);
        assert_eq!(c.runs(id), 1, "{:?}", case.args);
        let held = gpus_held(&job["JOB_GRES"]);
        assert_eq!(held, case.gpus, "{:?}: {job:?}", case.args);
        assert_eq!(
            job["NumNodes"],
            case.nodes.to_string(),
            "{:?}: {job:?}",
            case.args
        );
        let nodes = hostlist::expand(&job["NodeList"], 64);
        assert_eq!(nodes.len(), case.nodes as usize, "{:?}: {job:?}", case.args);
        let types: Vec<&str> = nodes.iter().map(|n| type_of(n)).collect();
        if case.modelled {
            // The plan holds a gang on nodes of one flavor.
            assert!(
                types.iter().all(|t| *t == types[0]),
                "{:?} ran on {nodes:?}",
                case.args
            );
        }
        if let Some(t) = case.gpu_type {
            assert!(
                types.iter().all(|n| n == &t),
                "{:?} ran on {nodes:?}",
                case.args
            );
        }
        let planned = log.contains(&format!("fairmatch: started JobId={id} in gpu on"));
        let first_come = log.contains(&format!("fairmatch: started JobId={id} first-come"));
        assert_eq!(
            (planned, first_come),
            (case.modelled, !case.modelled),
            "{:?}: planned {planned}, first come {first_come}",
            case.args
        );
    }
}

/// A job of a managed partition that the plan does not model says why in
/// `squeue` while it waits, beside what it waits for.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn an_unplanned_request_says_why_in_squeue() {
    let c = Cluster::start(FOUR_NODES, FAST);
    let blocker = c.submit(
        &[
            "-p",
            "gpu",
            "-N4",
            "--gpus-per-node=4",
            "--comment",
            "fairmatch: gpu=8s",
        ],
        8.0,
        8.0,
    );
    c.wait_state(blocker, "RUNNING", Duration::from_secs(20));
    let waiting = c.submit(
        &["-p", "gpu", "-N2", "--ntasks=3", "--gpus-per-task=1"],
        1.0,
        1.0,
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let reason = loop {
        let out =
            harness::run(
                c.cmd("squeue")
                    .args(["-h", "-o", "%r", "-j", &waiting.to_string()]),
            );
        let reason = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if reason.starts_with("fairmatch:") || std::time::Instant::now() > deadline {
            break reason;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        reason,
        "fairmatch: not planned (GPUs per task without --ntasks-per-node): first come first served, Resources"
    );
    assert_eq!(c.state(blocker), "RUNNING", "the blocker ended too soon");
    c.wait_done(&[blocker, waiting], Duration::from_secs(60));
    assert_eq!(c.runs(waiting), 1);
}

/// g1: two 1g.10gb MIG slices and two 3g.40gb; g2: four 3g.40gb. Each
/// fake slice is two files (`MultipleFiles=`), as a real one is its GPU's
/// device and its capability.
const MIG_NODES: &[&str] = &[
    "--gpu-nodes",
    "2",
    "--gpus",
    "4",
    "--gpu-types",
    "1g.10gb+3g.40gb,3g.40gb",
    "--multiple-files",
];

/// The GPUs a job holds by type, from `JOB_GRES`
/// (`gpu:3g.40gb:1(IDX:2),gpu:1g.10gb:1(IDX:0)`).
fn held_by_type(job_gres: &str) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for entry in job_gres.split(',') {
        let entry = entry.split('(').next().unwrap_or("").trim();
        let parts: Vec<&str> = entry.split(':').collect();
        if let ["gpu", t, n] = parts.as_slice() {
            let n: u32 = n.parse().unwrap_or(0);
            match out.iter_mut().find(|(u, _)| u == t) {
                Some((_, m)) => *m += n,
                None => out.push((t.to_string(), n)),
            }
        }
    }
    out.sort();
    out
}

/// MIG slices are GPU types: a job asking for a profile gets it, a gang
/// of one profile spans the nodes that have it, and an untyped job on a
/// node of two profiles gets the one the plan chose (its hint's faster).
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn mig_slices_are_planned_as_gpu_types() {
    let c = Cluster::start(MIG_NODES, FAST);
    let submit = |args: &[&str], hint: &str| {
        let mut all = vec!["-p", "gpu", "--comment", hint];
        all.extend(args);
        c.submit(&all, 1.0, 1.0)
    };
    // Hints: the small slice is the fast one for the untyped jobs.
    let small_fast = "fairmatch: 1g.10gb=1s 3g.40gb=4s";
    // (job, GPUs it must hold by type, nodes)
    type Want = (u32, Vec<(String, u32)>, u32);
    let cases: Vec<Want> = vec![
        (
            submit(&["--gres=gpu:1g.10gb:1"], "fairmatch: gpu=1s"),
            vec![("1g.10gb".into(), 1)],
            1,
        ),
        (
            submit(&["--gres=gpu:3g.40gb:2"], "fairmatch: gpu=1s"),
            vec![("3g.40gb".into(), 2)],
            1,
        ),
        (
            submit(&["-N2", "--gres=gpu:3g.40gb:1"], "fairmatch: gpu=1s"),
            vec![("3g.40gb".into(), 2)],
            2,
        ),
        (
            submit(&["--gres=gpu:1"], small_fast),
            vec![("1g.10gb".into(), 1)],
            1,
        ),
    ];
    let ids: Vec<u32> = cases.iter().map(|(id, ..)| *id).collect();
    c.wait_done(&ids, Duration::from_secs(60));
    let log = c.log();
    for (id, want, nodes) in &cases {
        let job = c.job(*id);
        assert_eq!(job["JobState"], "COMPLETED", "{job:?}");
        assert_eq!(c.runs(*id), 1);
        assert_eq!(held_by_type(&job["JOB_GRES"]), *want, "job {id}: {job:?}");
        assert_eq!(job["NumNodes"], nodes.to_string(), "job {id}: {job:?}");
        assert!(
            log.contains(&format!("fairmatch: started JobId={id} in gpu on")),
            "job {id} was not planned"
        );
    }
}

/// g1 and g2, eight CPUs and two GPUs each, each GPU with four shards
/// (`Gres=gpu:2,shard:8`).
const SHARD_NODES: &[&str] = &[
    "--gpu-nodes",
    "2",
    "--gpus",
    "2",
    "--gpu-node-cpus",
    "8",
    "--shards",
    "4",
];

/// Shards are planned: a job asking for shards gets them on one GPU (two
/// such jobs share a GPU at once), a job asking for GPUs gets them whole
/// beside the shared ones, a gang gets shards on each node, and the plan
/// keeps to Slurm's rule that a GPU is given whole or shared out, never
/// both: Slurm refuses none of its starts.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn shards_are_planned_beside_whole_gpus() {
    let c = Cluster::start(SHARD_NODES, FAST);
    let submit = |args: &[&str], seconds: f64| {
        let mut all = vec!["-p", "gpu", "--comment", "fairmatch: gpu=3s"];
        all.extend(args);
        c.submit(&all, seconds, seconds)
    };
    // (job, what JOB_GRES must say, nodes)
    let mut cases: Vec<(u32, &str, u32)> = Vec::new();
    for _ in 0..6 {
        cases.push((submit(&["--gres=shard:2"], 3.0), "shard:2", 1));
    }
    cases.push((submit(&["--gres=gpu:1"], 3.0), "gpu:1", 1));
    cases.push((submit(&["--gres=shard:3"], 3.0), "shard:3", 1));
    cases.push((submit(&["-N2", "--gres=shard:1"], 3.0), "shard:2", 2));
    cases.push((submit(&["--gres=gpu:2"], 3.0), "gpu:2", 1));
    let ids: Vec<u32> = cases.iter().map(|(id, ..)| *id).collect();
    c.wait_done(&ids, Duration::from_secs(120));
    let log = c.log();
    let mut on_shards: Vec<(String, String, String)> = Vec::new();
    for (id, gres, nodes) in &cases {
        let job = c.job(*id);
        assert_eq!(job["JobState"], "COMPLETED", "{job:?}");
        assert_eq!(c.runs(*id), 1);
        assert_eq!(job["JOB_GRES"].trim(), *gres, "job {id}: {job:?}");
        assert_eq!(job["NumNodes"], nodes.to_string(), "job {id}: {job:?}");
        assert!(
            log.contains(&format!("fairmatch: started JobId={id} in gpu on")),
            "job {id} was not planned"
        );
        assert!(
            !log.contains(&format!("JobId={id} not started")),
            "Slurm refused a start of job {id}:\n{}",
            c.log_tail()
        );
        if gres.starts_with("shard") && *nodes == 1 {
            on_shards.push((
                job["NodeList"].clone(),
                job["StartTime"].clone(),
                job["EndTime"].clone(),
            ));
        }
    }
    // Three shard jobs at once on a node of two GPUs: two of them shared
    // one. (Intervals that overlap pairwise share a moment.)
    let overlap = |a: &(String, String, String), b: &(String, String, String)| {
        a.0 == b.0 && a.1 < b.2 && b.1 < a.2
    };
    let shared = (0..on_shards.len()).any(|i| {
        (i + 1..on_shards.len()).any(|j| {
            (j + 1..on_shards.len()).any(|k| {
                let (a, b, c) = (&on_shards[i], &on_shards[j], &on_shards[k]);
                overlap(a, b) && overlap(a, c) && overlap(b, c)
            })
        })
    });
    assert!(shared, "no GPU was shared: {on_shards:?}");
}
