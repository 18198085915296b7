//! Two GPU types in one partition and jobs of widths 1, 2 and 4, side by
//! side with sched/backfill: the workload every ML cluster runs, planned
//! by type and started whole.

use super::harness::{self, local_time, now, Cluster, Record};
use super::{calibrate_overhead, FAST};
use fairmatch::metrics::JobOutcome;
use fairmatch::model::{Cluster as SimCluster, Flavor, Job, Scenario, User, Width, Workload};
use fairmatch::policy::baselines::slurm_backfill::SlurmBackfill;
use fairmatch::sim::{self, EstimateSource, Profiling, SimOptions};
use std::time::Duration;

/// The test cluster's options for one partition of two 4-GPU nodes, g1
/// of type a100 and g2 of type v100.
pub const TWO_TYPES: &[&str] = &[
    "--gpu-nodes",
    "2",
    "--gpus",
    "4",
    "--gpu-types",
    "a100,v100",
];

/// Seconds per unit of the jobs' run times.
const UNIT: f64 = 1.5;

/// The 24 jobs in submission order, by class (one shuffled order of 6 A,
/// 4 B, 4 C, 3 D, 3 E and 4 F jobs; all arrive in one instant).
const ORDER: &str = "DAEBBCFFCAAFAEAEBFDDBACC";

/// A class's width in GPUs and run times in units on a100 (g1) and v100
/// (g2): A, C and F are much faster on a100; B, D and E do not care.
fn class(c: char) -> (u32, f64, f64) {
    match c {
        'A' => (1, 1.0, 5.0),
        'B' => (1, 4.0, 4.0),
        'C' => (2, 2.0, 8.0),
        'D' => (2, 6.0, 6.0),
        'E' => (4, 8.0, 8.0),
        'F' => (4, 3.0, 9.0),
        _ => unreachable!("no class {c}"),
    }
}

/// How users ask for GPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Users {
    /// `--gres=gpu:W`, any type.
    Untyped,
    /// `--gres=gpu:a100:W` for jobs much faster there, else untyped.
    PinFast,
    /// As `PinFast`, and each job with a time limit (`-t 1`, the least
    /// Slurm takes), so that backfill can plan with it.
    PinFastLimited,
}

struct Run {
    label: String,
    /// The cluster's overhead per job (see [`calibrate_overhead`]).
    overhead: f64,
    /// Per job: its class and what its script recorded.
    jobs: Vec<(char, Record)>,
    /// Seconds from the common release to each job's end.
    jct: Vec<f64>,
}

impl Run {
    fn avg(&self) -> f64 {
        self.jct.iter().sum::<f64>() / self.jct.len() as f64
    }

    /// Jobs of the sensitive narrow class (A) that ran on the fast type.
    fn narrow_on_fast(&self) -> usize {
        self.jobs
            .iter()
            .filter(|(c, r)| *c == 'A' && r.node == "g1")
            .count()
    }
}

fn run(sched: &str, users: Users) -> Run {
    let mut options = TWO_TYPES.to_vec();
    options.extend(["--sched", sched, "--sched-params", "bf_interval=1"]);
    let c = Cluster::start(&options, FAST);
    let overhead = if users == Users::PinFastLimited {
        // Eight GPUs, jobs with a time limit as the measured ones.
        calibrate_overhead(&c, 8, &["-p", "gpu", "--gres=gpu:1", "-t1"])
    } else {
        0.0
    };
    let released = (now() + 10.0).ceil();
    let begin = format!("--begin={}", local_time(released));
    let ids: Vec<u32> = ORDER
        .chars()
        .map(|k| {
            let (width, fast, slow) = class(k);
            let pin = users != Users::Untyped && fast < slow;
            let gres = if pin {
                format!("--gres=gpu:a100:{width}")
            } else {
                format!("--gres=gpu:{width}")
            };
            let hint = format!(
                "fairmatch: a100={:.1}s v100={:.1}s",
                fast * UNIT,
                slow * UNIT
            );
            let mut args = vec![begin.as_str(), "-p", "gpu", &gres, "--comment", &hint];
            if users == Users::PinFastLimited {
                args.push("-t1");
            }
            let times = format!("g1={:.1} g2={:.1}", fast * UNIT, slow * UNIT);
            c.submit_env(
                &args,
                &[("FM_NODE_SECONDS", &times)],
                fast * UNIT,
                slow * UNIT,
            )
        })
        .collect();
    assert!(now() < released, "submitting took too long");
    c.wait_done(&ids, Duration::from_secs(600));
    let jobs: Vec<(char, Record)> = ORDER
        .chars()
        .zip(&ids)
        .map(|(k, &id)| {
            assert_eq!(c.runs(id), 1, "job {id} ran {} times", c.runs(id));
            let record = c.record(id);
            let (width, ..) = class(k);
            assert_eq!(record.gpus, width, "job {id} of class {k}");
            let gres = c.job(id).get("JOB_GRES").cloned().unwrap_or_default();
            let on = if record.node == "g1" { "a100" } else { "v100" };
            assert!(
                gres.contains(&format!("gpu:{on}:{width}")),
                "job {id} on {} holds {gres:?}",
                record.node
            );
            if users != Users::Untyped && class(k).1 < class(k).2 {
                assert_eq!(record.node, "g1", "pinned job {id} ran on {}", record.node);
            }
            (k, record)
        })
        .collect();
    let jct = jobs.iter().map(|(_, r)| r.end - released).collect();
    Run {
        label: format!("{sched} ({users:?})"),
        overhead,
        jobs,
        jct,
    }
}

/// The simulator's `slurm-backfill` on the `PinFastLimited` run's jobs,
/// told what real backfill knows (each job's `-t1`: 60 s wherever it may
/// run), with backfill passes every second as the cluster's
/// `bf_interval=1`, and `overhead` seconds per job for launch and
/// completion. Outcomes in submission order.
fn backfill_twin(overhead: f64) -> Vec<JobOutcome> {
    let jobs = ORDER
        .chars()
        .enumerate()
        .map(|(i, k)| {
            let (width, fast, slow) = class(k);
            let anywhere = fast >= slow;
            Job {
                name: format!("{k}{i}"),
                user: 0,
                arrival: 0.0,
                durations: vec![Some(fast * UNIT), anywhere.then_some(slow * UNIT)],
                estimates: vec![Some(60.0), anywhere.then_some(60.0)],
                width: Width::new(width as usize, 1).unwrap(),
            }
        })
        .collect();
    let node = |name: &str| Flavor {
        name: name.into(),
        slots: 4,
        per_node: 4,
    };
    let scenario = Scenario {
        cluster: SimCluster {
            flavors: vec![node("a100"), node("v100")],
        },
        workload: Workload {
            users: vec![User::new("u", 1.0).unwrap()],
            jobs,
        },
    };
    let mut policy = SlurmBackfill::conservative().with_interval(1.0);
    let options = SimOptions {
        estimates: EstimateSource::Input,
        profile: Profiling::Off,
        job_overhead: overhead,
        preempt_overhead: 0.0,
    };
    sim::simulate(&scenario, &mut policy, &options, &mut |_| {})
        .unwrap()
        .jobs
}

/// Prints the runs beside the best backfill one.
fn show(runs: &[Run], best_backfill: f64) {
    println!("\nTwo GPU types (g1 a100, g2 v100, 4 each), 24 jobs of widths 1/2/4, unit {UNIT} s:");
    println!(
        "{:<36} {:>12} {:>16} {:>18}",
        "scheduler (users)", "avg JCT (s)", "vs best backfill", "A jobs on a100"
    );
    for r in runs {
        let ratio = if best_backfill.is_finite() {
            format!("{:.2}x", r.avg() / best_backfill)
        } else {
            "-".into()
        };
        println!(
            "{:<36} {:>12.1} {:>16} {:>15}/6",
            r.label,
            r.avg(),
            ratio,
            r.narrow_on_fast()
        );
    }
}

/// Slurm's backfill (the `PinFastLimited` run) beside its model in the
/// simulator: jobs on the same node, and the model's average JCT.
fn check_twin(limited: &Run) {
    let twin = backfill_twin(limited.overhead);
    let avg = twin.iter().map(JobOutcome::jct).sum::<f64>() / twin.len() as f64;
    let same_node = twin
        .iter()
        .zip(&limited.jobs)
        .filter(|(t, (_, r))| (t.flavor == 0) == (r.node == "g1"))
        .count();
    println!(
        "simulator's slurm-backfill, {:.2} s/job overhead: avg JCT {avg:.1} s \
         (real {:.1} s, {:+.0}%), {same_node}/24 jobs on the same node",
        limited.overhead,
        limited.avg(),
        100.0 * (limited.avg() / avg - 1.0)
    );
    // The model places jobs as Slurm does but starts them sooner (the
    // runs are in CHANGELOG.md): the simulator's baseline flatters Slurm,
    // never the reverse. 20 of 24 and 0.9 leave room for noise.
    assert!(
        same_node >= 20,
        "{same_node}/24 jobs where the model put them"
    );
    assert!(
        limited.avg() >= 0.9 * avg,
        "real backfill {:.1} s beat its model's {avg:.1} s",
        limited.avg()
    );
}

/// Side by side: backfill with three kinds of users, fairmatch with
/// untyped users and hints. With `FAIRMATCH_SKIP_REFERENCE` (the 26.05
/// run of the test command) only fairmatch runs, and only what it must do
/// alone is checked.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn two_gpu_types_and_wide_jobs_beside_backfill() {
    let alone = std::env::var_os("FAIRMATCH_SKIP_REFERENCE").is_some();
    let mut runs = Vec::new();
    if !alone {
        // Two at once; the one whose model is checked, alone.
        runs.extend(harness::concurrently(
            vec![Users::Untyped, Users::PinFast],
            |u| run("sched/backfill", u),
        ));
        runs.push(run("sched/backfill", Users::PinFastLimited));
    }
    runs.push(run("sched/fairmatch", Users::Untyped));
    let best_backfill = runs[..runs.len() - 1]
        .iter()
        .map(Run::avg)
        .fold(f64::INFINITY, f64::min);
    show(&runs, best_backfill);
    let fairmatch = runs.last().expect("fairmatch ran");
    assert_eq!(
        fairmatch.narrow_on_fast(),
        6,
        "type-sensitive 1-GPU jobs off the fast type"
    );
    if alone {
        return;
    }
    check_twin(&runs[2]);
    // A model of greedy first-fit puts fairmatch at 0.60x of the better
    // backfill run; real backfill does worse (it packs narrow jobs on g1
    // and leaves g2 to the wide ones; CHANGELOG.md has the runs), and 0.7
    // leaves room for a noisy machine.
    assert!(
        fairmatch.avg() <= 0.7 * best_backfill,
        "fairmatch {:.1} s against backfill's best {best_backfill:.1} s",
        fairmatch.avg()
    );
}
