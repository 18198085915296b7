//! Each way a user asks Slurm for GPUs gets what Slurm would give it, on a
//! partition of two GPU types: the modelled shapes through fairmatch's
//! plan, the others first come first served.

use super::harness::Cluster;
use super::typed_gpus::TWO_TYPES;
use super::FAST;
use std::time::Duration;

/// What one request must end with.
struct Case {
    args: &'static [&'static str],
    /// GPUs in all (on one node, for the modelled ones).
    gpus: u32,
    /// The node type it must run on, if the request names one.
    gpu_type: Option<&'static str>,
    /// Planned by fairmatch (else started first come first served).
    modelled: bool,
}

const CASES: &[Case] = &[
    Case {
        args: &["--gpus-per-node=2"],
        gpus: 2,
        gpu_type: None,
        modelled: true,
    },
    Case {
        args: &["--gpus=3", "-N1"],
        gpus: 3,
        gpu_type: None,
        modelled: true,
    },
    Case {
        args: &["--gres=gpu:v100:2"],
        gpus: 2,
        gpu_type: Some("v100"),
        modelled: true,
    },
    Case {
        args: &["--gpus-per-node=a100:1"],
        gpus: 1,
        gpu_type: Some("a100"),
        modelled: true,
    },
    Case {
        args: &["--constraint=v100", "--gres=gpu:1"],
        gpus: 1,
        gpu_type: Some("v100"),
        modelled: true,
    },
    Case {
        args: &[],
        gpus: 1,
        gpu_type: None,
        modelled: true,
    },
    Case {
        args: &["--gpus=2"],
        gpus: 2,
        gpu_type: None,
        modelled: false,
    },
    Case {
        args: &["-N2", "--gpus-per-node=1"],
        gpus: 2,
        gpu_type: None,
        modelled: false,
    },
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
    let c = Cluster::start(TWO_TYPES, FAST);
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
    for (case, &id) in CASES.iter().zip(&ids) {
        let job = c.job(id);
        assert_eq!(job["JobState"], "COMPLETED", "{:?}: {job:?}", case.args);
        assert_eq!(c.runs(id), 1, "{:?}", case.args);
        let record = c.record(id);
        let held = gpus_held(&job["JOB_GRES"]);
        assert_eq!(held, case.gpus, "{:?}: {job:?}", case.args);
        if case.modelled {
            assert_eq!(record.gpus, case.gpus, "{:?}: one node", case.args);
        }
        let node_type = if record.node == "g1" { "a100" } else { "v100" };
        if let Some(t) = case.gpu_type {
            assert_eq!(node_type, t, "{:?} ran on {}", case.args, record.node);
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
