//! End-to-end tests of sched/fairmatch on a real multi-node Slurm cluster
//! (slurmctld and four or more slurmd on loopback). They need Debian's
//! Slurm and the built plugin, so they are ignored by a plain `cargo test`;
//! scripts/test.sh installs everything and runs them with `--ignored`.

mod bench;
mod gang_preemption;
mod gpu_requests;
mod harness;
mod hint_options;
mod learned_state;
mod multi_node;
mod preemption;
mod reliability;
mod scale;
mod shared_cluster;
mod site_priority;
mod slurm_rules;
mod start_times;
mod typed_gpus;
mod versions;
mod waiting_bound;

use fairmatch::bundled::Bundled;
use fairmatch::io::allox_format;
use fairmatch::metrics::JobOutcome;
use fairmatch::model::{Cluster as SimCluster, Flavor, Scenario, Workload};
use fairmatch::policy::allox::Allox;
use fairmatch::sim::{self, EstimateSource, Profiling, SimOptions};
use harness::{now, Cluster, Record};
use std::time::Duration;

const FAST: &str = "IntervalMs=100\n";
/// As [`FAST`], with preemption on in rounds of 2 s: the shared-cluster
/// and reliability scenarios run with it, and as none of their jobs opts
/// in, each checks that none was preempted
/// ([`harness::Cluster::assert_no_preemption`]).
const PREEMPTIVE: &str = "IntervalMs=100\nPreempt=gain\nPreemptRound=2\nPreemptMinRunTime=1\n";

fn hint(gpu: f64, cpu: f64) -> String {
    format!("fairmatch: gpu={gpu:.3}s cpu={cpu:.3}s")
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn a_device_choice_follows_the_hint() {
    let c = Cluster::start(&[], FAST);
    let gpu_fast = c.submit(&["-p", "cpu,gpu", "--comment", &hint(1.0, 5.0)], 1.0, 5.0);
    let cpu_fast = c.submit(&["-p", "cpu,gpu", "--comment", &hint(5.0, 1.0)], 5.0, 1.0);
    c.wait_done(&[gpu_fast, cpu_fast], Duration::from_secs(60));

    let g = c.job(gpu_fast);
    assert_eq!(g["Partition"], "gpu", "{g:?}");
    assert!(g["NodeList"].starts_with('g'), "{g:?}");
    assert!(g["JOB_GRES"].contains("gpu:1"), "no GPU allocated: {g:?}");
    assert_eq!(c.record(gpu_fast).partition, "gpu");

    let k = c.job(cpu_fast);
    assert_eq!(k["Partition"], "cpu", "{k:?}");
    assert!(k["NodeList"].starts_with('c'), "{k:?}");
    assert_eq!(c.record(cpu_fast).partition, "cpu");
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn b_allox_motivation_case() {
    // 2 GPU slots and 2 CPU slots; one time unit is 0.2 s.
    const UNIT: f64 = 0.2;
    let c = Cluster::start(
        &["--cpus", "1", "--gpus", "1", "--gpu-node-cpus", "1"],
        FAST,
    );
    let jobs = [(40.0, 50.0), (40.0, 50.0), (40.0, 80.0), (40.0, 80.0)];
    // All four must become eligible in the same cycle. `scontrol release`
    // sends one RPC per job, and a 100 ms cycle once fell between them, so
    // the jobs share one `--begin` instant instead.
    let released = (now() + 3.0).ceil();
    let at = format!("--begin={}", harness::local_time(released));
    let ids: Vec<u32> = jobs
        .iter()
        .map(|&(g, k)| {
            c.submit(
                &[
                    at.as_str(),
                    "-p",
                    "cpu,gpu",
                    "--comment",
                    &hint(g * UNIT, k * UNIT),
                ],
                g * UNIT,
                k * UNIT,
            )
        })
        .collect();
    assert!(now() < released, "submitting took too long");
    c.wait_done(&ids, Duration::from_secs(60));

    let records: Vec<Record> = ids.iter().map(|&id| c.record(id)).collect();
    for (r, expected) in records.iter().zip(["cpu", "cpu", "gpu", "gpu"]) {
        assert_eq!(r.partition, expected, "{records:?}");
    }
    let avg = records.iter().map(|r| r.end - released).sum::<f64>() / 4.0 / UNIT;
    eprintln!("motivation case: average JCT {avg:.1} units (optimum 45, greedy 60)");
    assert!((45.0..=50.0).contains(&avg), "average JCT {avg} units");
}

/// The bundled AlloX testbed workload, durations multiplied by `scale`, on
/// a cluster shaped like the one the plugin sees: partition `cpu` (2 nodes
/// x 4 slots) first, then `gpu` (2 nodes x 2 GPUs).
fn testbed(scale: f64) -> Scenario {
    let options = Bundled::Testbed.options();
    let w = allox_format::parse("testbed", Bundled::Testbed.text(), &options).unwrap();
    let jobs = w
        .jobs
        .into_iter()
        .map(|mut j| {
            let (g, k) = (
                j.durations[allox_format::GPU],
                j.durations[allox_format::CPU],
            );
            let ms = |t: Option<f64>| t.map(|t| (t * scale * 1000.0).round() / 1000.0);
            j.durations = vec![ms(k), ms(g)];
            j.estimates = vec![None, None];
            j
        })
        .collect();
    Scenario {
        cluster: SimCluster {
            flavors: vec![
                Flavor {
                    name: "cpu".into(),
                    slots: 8,
                    per_node: 1,
                },
                Flavor {
                    name: "gpu".into(),
                    slots: 4,
                    per_node: 1,
                },
            ],
        },
        workload: Workload {
            users: w.users,
            jobs,
        },
    }
}

/// Machine index of the simulator -> node name of the test cluster.
fn node_of(machine: usize) -> &'static str {
    [
        "c1", "c1", "c1", "c1", "c2", "c2", "c2", "c2", "g1", "g1", "g2", "g2",
    ][machine]
}

const TESTBED_CLUSTER: &[&str] = &["--cpus", "4", "--gpus", "2", "--gpu-node-cpus", "2"];

/// Submits the scaled testbed so that every job becomes eligible in the
/// same second (`--begin` a few seconds ahead); returns job ids in workload
/// order and that instant. Ten seconds cover 40 submissions while another
/// cluster takes its own.
fn submit_testbed(c: &Cluster, s: &Scenario, extra: &[&str]) -> (Vec<u32>, f64) {
    let begin = (now() + 10.0).ceil();
    let at = harness::local_time(begin);
    let ids: Vec<u32> = s
        .workload
        .jobs
        .iter()
        .map(|j| {
            let (k, g) = (j.durations[0].unwrap(), j.durations[1].unwrap());
            let account = &s.workload.users[j.user].name;
            let begin_arg = format!("--begin={at}");
            let comment = hint(g, k);
            let mut args = vec![begin_arg.as_str(), "-p", "cpu,gpu", "-A", account.as_str()];
            args.extend(["--comment", comment.as_str()]);
            args.extend(extra);
            c.submit(&args, g, k)
        })
        .collect();
    assert!(
        now() < begin,
        "submitting took too long; raise the lead time"
    );
    (ids, begin)
}

/// The platform overhead of `c`: how much longer than its run time a job
/// holds its slot (launch, completion notice, the scheduler's next look).
/// Its `slots` slots run [`CALIBRATION_WAVES`] waves of
/// [`CALIBRATION_SECONDS`] jobs submitted with `args`; each wave starts
/// one run time plus one overhead after the one before. Medians, not
/// means: one launch that a busy machine delays by a second would move a
/// mean of 16 by 0.06 s a job, and a twin's prediction by more than its
/// slack (seen: 0.45 s against 0.13 to 0.21 s in the runs before and
/// after). And the median of several gaps, not one: a single late wave
/// (a slow cycle, a state save) once made a gap of 0.69 s and a
/// prediction 11% too slow.
fn calibrate_overhead(c: &Cluster, slots: usize, args: &[&str]) -> f64 {
    const D: f64 = CALIBRATION_SECONDS;
    let begin = (now() + 3.0).ceil();
    let at = format!("--begin={}", harness::local_time(begin));
    let ids: Vec<u32> = (0..CALIBRATION_WAVES * slots)
        .map(|_| {
            let mut all = vec![at.as_str()];
            all.extend(args);
            c.submit(&all, D, D)
        })
        .collect();
    c.wait_done(&ids, Duration::from_secs(60));
    let mut starts: Vec<f64> = ids.iter().map(|&id| c.record(id).start).collect();
    starts.sort_by(f64::total_cmp);
    let median = |xs: &mut [f64]| {
        xs.sort_by(f64::total_cmp);
        let n = xs.len();
        (xs[(n - 1) / 2] + xs[n / 2]) / 2.0
    };
    let waves: Vec<f64> = starts.chunks_mut(slots).map(median).collect();
    let mut gaps: Vec<f64> = waves.windows(2).map(|w| w[1] - w[0] - D).collect();
    median(&mut gaps).max(0.0)
}

/// How many waves [`calibrate_overhead`] runs: three gaps, so that one
/// late wave does not set the figure.
const CALIBRATION_WAVES: usize = 4;

/// The run time of [`calibrate_overhead`]'s jobs.
const CALIBRATION_SECONDS: f64 = 0.5;

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn c_digital_twin_matches_the_simulator() {
    const SCALE: f64 = 1.0 / 32.0;
    // Jobs predicted to start within this much of each other may start in
    // either order: that is the jitter of a real launch.
    const TOGETHER: f64 = 0.2;
    // Plans stick unless a move gains a second, in both twins.
    const STICKINESS: f64 = 1.0;
    let c = Cluster::start(
        TESTBED_CLUSTER,
        &format!("IntervalMs=20\nFairshareBy=account\nAlpha=1\nStickiness={STICKINESS}\n"),
    );
    let d = CALIBRATION_SECONDS;
    let overhead = calibrate_overhead(&c, 12, &["-p", "cpu,gpu", "--comment", &hint(d, d)]);

    // The prediction is made before the run, from the same inputs plus
    // the calibrated overhead.
    let scenario = testbed(SCALE);
    let mut policy = Allox::new(1.0).unwrap();
    policy.stickiness = STICKINESS;
    let predicted = sim::simulate(
        &scenario,
        &mut policy,
        &SimOptions {
            estimates: EstimateSource::Input,
            profile: Profiling::Off,
            job_overhead: overhead,
            preempt_overhead: 0.0,
        },
        &mut |_| {},
    )
    .unwrap()
    .jobs;
    let predicted_avg = predicted.iter().map(JobOutcome::jct).sum::<f64>() / predicted.len() as f64;

    let (ids, released) = submit_testbed(&c, &scenario, &[]);
    c.wait_done(&ids, Duration::from_secs(600));
    let real: Vec<Record> = ids.iter().map(|&id| c.record(id)).collect();

    let mut mismatches = Vec::new();
    for (i, (p, r)) in predicted.iter().zip(&real).enumerate() {
        let part = scenario.cluster.flavors[p.flavor].name.as_str();
        if r.partition != part || r.node != node_of(p.machine) {
            mismatches.push(format!(
                "job {i}: predicted {part}/{} at {:.2}, ran {}/{} at {:.2}",
                node_of(p.machine),
                p.start,
                r.partition,
                r.node,
                r.start - released
            ));
        }
    }
    // Start order: walking the real starts in order, predicted start times
    // never go back by more than the launch jitter.
    let mut order: Vec<usize> = (0..real.len()).collect();
    order.sort_by(|&a, &b| real[a].start.total_cmp(&real[b].start));
    for (k, &later) in order.iter().enumerate() {
        for &earlier in &order[..k] {
            if predicted[earlier].start > predicted[later].start + TOGETHER {
                mismatches.push(format!(
                    "start order: job {earlier} (predicted {:.2}) started before job {later} (predicted {:.2})",
                    predicted[earlier].start, predicted[later].start
                ));
            }
        }
    }
    let real_avg = real.iter().map(|r| r.end - released).sum::<f64>() / real.len() as f64;
    eprintln!(
        "digital twin: overhead {overhead:.3} s/job; predicted avg JCT {predicted_avg:.2} s, \
         realised {real_avg:.2} s ({:+.1}%), {} mismatches",
        100.0 * (real_avg / predicted_avg - 1.0),
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(
        (real_avg / predicted_avg - 1.0).abs() <= 0.10,
        "realised {real_avg} vs predicted {predicted_avg}"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn d_a_second_user_is_not_starved() {
    const LENGTH: f64 = 4.0;
    let c = Cluster::start(
        &["--cpus", "1", "--gpus", "1", "--gpu-node-cpus", "1"],
        "IntervalMs=100\nFairshareBy=account\nAlpha=0.1\n",
    );
    let comment = format!("fairmatch: cpu={LENGTH}s");
    let mut alice: Vec<u32> = (0..30)
        .map(|_| {
            c.submit(
                &["-p", "cpu", "-A", "alice", "--comment", &comment],
                LENGTH,
                LENGTH,
            )
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let arrival = now();
    let bob = c.submit(
        &["-p", "cpu", "-A", "bob", "--comment", &comment],
        LENGTH,
        LENGTH,
    );
    c.wait_done(&[bob], Duration::from_secs(60));
    let waited = c.record(bob).start - arrival;
    eprintln!("fairness: bob's job waited {waited:.2} s behind 30 of alice's {LENGTH} s jobs");
    assert!(waited <= LENGTH + 1.0, "bob waited {waited} s");
    let _ = c.cmd("scancel").args(["-A", "alice"]).status();
    alice.clear();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn e_bad_hints_fall_back_and_slurm_stays_up() {
    let c = Cluster::start(&[], "IntervalMs=100\nDefaultRuntime=30s\n");
    let long = format!("fairmatch: gpu=1s {}", "x".repeat(1000));
    let comments = [
        "garbage",
        "fairmatch: gpu=-5m cpu=-5m",
        "fairmatch: gpu=999999h cpu=999999h",
        "fairmatch: tpu=5m",
        long.as_str(),
    ];
    let mut ids = Vec::new();
    for (i, comment) in comments.iter().enumerate() {
        // Half with a time limit (first fallback), half without (default).
        let mut args = vec!["-p", "cpu,gpu", "--comment", comment];
        if i % 2 == 0 {
            args.extend(["-t", "1"]);
        }
        ids.push(c.submit(&args, 1.0, 1.0));
    }
    // Slurm itself refuses comments over 1024 bytes; that must not hurt.
    let huge = format!("fairmatch: gpu=1s {}", "x".repeat(10 * 1024));
    let refused = c
        .cmd("sbatch")
        .args(["-p", "cpu,gpu", "--comment", &huge, "--wrap", "true"])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a 10 KB comment was accepted");

    c.wait_done(&ids, Duration::from_secs(60));
    assert!(c.controller_up(), "slurmctld died");
    let log = c.log();
    for &id in &ids {
        let job = c.job(id);
        assert_eq!(job["JobState"], "COMPLETED", "{job:?}");
        let note = c.admin_comment(id);
        assert!(
            note.starts_with("fairmatch:"),
            "job {id}: no reason for the user: {job:?}"
        );
        assert!(
            log.contains(&format!("JobId={id} fairmatch:")),
            "job {id}: no reason in the log"
        );
    }
    let note = |i: usize| c.admin_comment(ids[i]);
    assert!(
        note(0).contains("no 'fairmatch: flavor=duration' hint"),
        "{}",
        note(0)
    );
    assert!(note(0).contains("(time limit)"), "{}", note(0));
    assert!(
        note(1).contains("negative") && note(1).contains("(default)"),
        "{}",
        note(1)
    );
    assert!(note(2).contains("over a year"), "{}", note(2));
    assert!(note(3).contains("unknown flavor 'tpu'"), "{}", note(3));
    assert!(note(4).contains("not flavor=duration"), "{}", note(4));

    // Those jobs completed, so a job of the same user and name with no
    // hint and no time limit now falls back to their learned run time.
    std::thread::sleep(Duration::from_millis(1500));
    let learner = c.submit(&["-p", "cpu,gpu", "--comment", "garbage"], 1.0, 1.0);
    c.wait_done(&[learner], Duration::from_secs(60));
    let learned = c.admin_comment(learner);
    assert!(learned.contains("(history)"), "{learned}");
}

/// Stock Slurm (backfill, multi-partition submission) against fairmatch
/// on the same cluster and workload. Prints the comparison table.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/side-by-side.sh"]
fn f_side_by_side_with_backfill() {
    let scale: f64 = std::env::var("FAIRMATCH_SIDE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0 / 64.0);
    let scenario = testbed(scale);
    let users: Vec<String> = scenario
        .workload
        .users
        .iter()
        .map(|u| u.name.clone())
        .collect();
    // Both on one machine at once: each pays the other's launches alike.
    let rows = harness::concurrently(vec!["sched/backfill", "sched/fairmatch"], |sched| {
        let mut options = TESTBED_CLUSTER.to_vec();
        options.extend(["--sched", sched]);
        let c = Cluster::start(&options, "IntervalMs=100\nFairshareBy=account\nAlpha=1\n");
        // Stock Slurm gets the same jobs with a time limit it can plan with.
        let (ids, released) = submit_testbed(&c, &scenario, &["-t", "60"]);
        c.wait_done(&ids, Duration::from_secs(1200));
        let jct: Vec<(usize, f64)> = ids
            .iter()
            .zip(&scenario.workload.jobs)
            .map(|(&id, j)| (j.user, (c.record(id).end - released) / scale))
            .collect();
        (sched, jct)
    });
    println!("\nSide by side, AlloX testbed scaled by {scale}, JCT in unscaled seconds:");
    print!("{:<16} {:>9}", "scheduler", "avg JCT");
    for u in &users {
        print!(" {u:>9}");
    }
    println!();
    for (label, jct) in &rows {
        let avg = jct.iter().map(|j| j.1).sum::<f64>() / jct.len() as f64;
        print!("{label:<16} {avg:>9.1}");
        for u in 0..users.len() {
            let mine: Vec<f64> = jct.iter().filter(|j| j.0 == u).map(|j| j.1).collect();
            print!(
                " {:>9.1}",
                mine.iter().sum::<f64>() / mine.len().max(1) as f64
            );
        }
        println!();
    }
    let avg = |r: &Vec<(usize, f64)>| r.iter().map(|j| j.1).sum::<f64>() / r.len() as f64;
    assert!(
        avg(&rows[1].1) < avg(&rows[0].1),
        "fairmatch is not faster than backfill"
    );
}
