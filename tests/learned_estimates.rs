//! The simulator's learned estimates: a replayed history where users give
//! no hints, with recurring jobs whose run times differ per flavor, and
//! the plugin's learning (trusted means, speed ratios between flavors).

use fairmatch::metrics::JobOutcome;
use fairmatch::model::{Cluster, Flavor, Job, Scenario, User, Width, Workload};
use fairmatch::policy::allox::Allox;
use fairmatch::policy::baselines::slurm_backfill::SlurmBackfill;
use fairmatch::sim::{kind, past_runs, simulate, EstimateSource, PastRun, Profiling, SimOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use std::collections::{HashMap, HashSet};

/// The plugin's `DefaultRuntime`: an hour.
const DEFAULT: f64 = 3600.0;

const LEARNED: EstimateSource = EstimateSource::Learned {
    default: DEFAULT,
    past: Vec::new(),
};

/// A GPU and a CPU flavor of one-slot nodes.
fn gpu_and_cpu(gpus: usize, cpus: usize) -> Cluster {
    let flavor = |name: &str, slots| Flavor {
        name: name.into(),
        slots,
        per_node: 1,
    };
    Cluster::new(vec![flavor("gpu", gpus), flavor("cpu", cpus)]).unwrap()
}

/// No profiling and no overheads: the scheduler is told `estimates`.
fn options(estimates: EstimateSource) -> SimOptions {
    SimOptions {
        estimates,
        profile: Profiling::Off,
        job_overhead: 0.0,
        preempt_overhead: 0.0,
    }
}

/// How a job's CPU time relates to its GPU time.
#[derive(Clone, Copy, Debug)]
enum Slowdowns {
    /// As `fairmatch generate` draws them: each user has a slowdown
    /// log-uniform in [0.5, 10], and each of its jobs varies around it by
    /// a log-normal spread (sigma 0.3): a user's jobs are alike.
    PerUser,
    /// Each job its own slowdown, log-uniform in [0.5, 10]: what one job
    /// teaches says nothing of its user's others.
    PerJob,
}

/// 4 GPU and 8 CPU slots; 4 users with 6 recurring jobs each, 30 runs of
/// each (720 jobs; [`history_of`] with other counts). A job's GPU time is log-uniform in [60 s, 1 h]; its
/// CPU time is that times its slowdown; each run varies around both by a
/// log-normal spread (sigma 0.2). Poisson arrivals at `load` of the
/// cluster's capacity, were every job on its faster flavor.
fn history(seed: u64, slowdowns: Slowdowns, load: f64) -> Scenario {
    history_of(seed, slowdowns, load, 30)
}

/// As [`history`], with `rounds` runs of each job. The same seed draws
/// the same jobs whatever the rounds.
fn history_of(seed: u64, slowdowns: Slowdowns, load: f64, rounds: usize) -> Scenario {
    let mut rng = StdRng::seed_from_u64(seed);
    let log_uniform = |rng: &mut StdRng, lo: f64, hi: f64| (rng.gen_range(lo.ln()..hi.ln())).exp();
    let noise = LogNormal::new(0.0, 0.2).unwrap();
    let users = 4;
    let spread = LogNormal::new(0.0, 0.3).unwrap();
    let mut kinds = Vec::new();
    for user in 0..users {
        let user_slowdown = log_uniform(&mut rng, 0.5, 10.0);
        for k in 0..6 {
            let gpu = log_uniform(&mut rng, 60.0, 3600.0);
            let slowdown = match slowdowns {
                Slowdowns::PerUser => user_slowdown * spread.sample(&mut rng),
                Slowdowns::PerJob => log_uniform(&mut rng, 0.5, 10.0),
            };
            kinds.push((user, format!("u{user}job{k}"), gpu, gpu * slowdown));
        }
    }
    let mut runs: Vec<(usize, String, f64, f64)> = Vec::new();
    for round in 0..rounds {
        for (user, name, gpu, cpu) in &kinds {
            let n = noise.sample(&mut rng);
            runs.push((*user, format!("{name}-{round}"), gpu * n, cpu * n));
        }
    }
    // Interleave the kinds' runs at random, then space them: the mean of
    // the faster of each job's times over 12 slots at 80%.
    for i in (1..runs.len()).rev() {
        let j = rng.gen_range(0..=i);
        runs.swap(i, j);
    }
    let mean_fastest = runs.iter().map(|r| r.2.min(r.3)).sum::<f64>() / runs.len() as f64;
    let gap = mean_fastest / (12.0 * load);
    let mut t = 0.0;
    let jobs = runs
        .into_iter()
        .map(|(user, name, gpu, cpu)| {
            t += -gap * (1.0 - rng.gen::<f64>()).ln();
            Job {
                name,
                user,
                arrival: t,
                durations: vec![Some(gpu.round().max(1.0)), Some(cpu.round().max(1.0))],
                estimates: vec![None, None],
                width: Width::ONE,
            }
        })
        .collect();
    Scenario {
        cluster: gpu_and_cpu(4, 8),
        workload: Workload {
            users: (0..users)
                .map(|u| User::new(format!("u{u}"), 1.0).unwrap())
                .collect(),
            jobs,
        },
    }
}

/// AlloX (alpha 1) on `s`, told `estimates`.
fn run(s: &Scenario, estimates: EstimateSource) -> Vec<JobOutcome> {
    let mut allox = Allox::new(1.0).unwrap();
    simulate(s, &mut allox, &options(estimates), &mut |_| {})
        .unwrap()
        .jobs
}

fn avg_jct(s: &Scenario, estimates: EstimateSource) -> f64 {
    avg_jct_after(s, estimates, 0)
}

/// The average JCT of the jobs that arrive after the first `skip`.
fn avg_jct_after(s: &Scenario, estimates: EstimateSource, skip: usize) -> f64 {
    let out = run(s, estimates);
    // Jobs are in arrival order.
    let late = &out[skip..];
    late.iter().map(|o| o.finish - o.arrival).sum::<f64>() / late.len() as f64
}

#[test]
fn runs_of_a_job_share_its_kind() {
    assert_eq!(kind("train-17"), "train");
    assert_eq!(kind("u0job3-0"), "u0job3");
    assert_eq!(kind("train"), "train");
    assert_eq!(kind("a-b"), "a-b");
    assert_eq!(kind("-5"), "-5");
}

/// The same history with every estimate the mean of its job's runs on
/// that flavor: the best that learning means can do.
fn with_true_means(s: &Scenario) -> Scenario {
    let mut sums: HashMap<&str, (Vec<f64>, f64)> = HashMap::new();
    for job in &s.workload.jobs {
        let e = sums
            .entry(kind(&job.name))
            .or_insert((vec![0.0; job.durations.len()], 0.0));
        for (sum, d) in e.0.iter_mut().zip(&job.durations) {
            *sum += d.unwrap_or(0.0);
        }
        e.1 += 1.0;
    }
    let mut out = s.clone();
    for job in &mut out.workload.jobs {
        let (sum, n) = &sums[kind(&job.name)];
        job.estimates = sum.iter().map(|t| Some(t / n)).collect();
    }
    out
}

/// Average JCTs on one history: perfect hints, learned, nothing learned,
/// and every estimate its job's true mean.
struct Jcts {
    perfect: f64,
    learned: f64,
    blind: f64,
    true_means: f64,
}

fn four_runs(seed: u64, slowdowns: Slowdowns, load: f64) -> Jcts {
    let s = history(seed, slowdowns, load);
    let learned = LEARNED;
    // The same history with every run a job of its own (no `-N`): nothing
    // is learned of a job but its user's typical run.
    let mut unique = s.clone();
    for job in &mut unique.workload.jobs {
        job.name = job.name.replace('-', "_");
    }
    Jcts {
        perfect: avg_jct(&s, EstimateSource::Input),
        learned: avg_jct(&s, learned.clone()),
        blind: avg_jct(&unique, learned),
        true_means: avg_jct(&with_true_means(&s), EstimateSource::Input),
    }
}

/// One GPU and one CPU slot; user `u` submits `jobs` (name, GPU and CPU
/// seconds) at 0, 1, 2...
fn one_of_each(jobs: &[(&str, f64, f64)]) -> Scenario {
    Scenario {
        cluster: gpu_and_cpu(1, 1),
        workload: Workload {
            users: vec![User::new("u", 1.0).unwrap()],
            jobs: jobs
                .iter()
                .enumerate()
                .map(|(i, &(name, gpu, cpu))| Job {
                    name: name.into(),
                    user: 0,
                    arrival: i as f64,
                    durations: vec![Some(gpu), Some(cpu)],
                    estimates: vec![None, None],
                    width: Width::ONE,
                })
                .collect(),
        },
    }
}

/// Accounting's runs, in the order they ended, with the flavor each ran
/// on and its run time there.
#[test]
fn past_runs_are_what_accounting_holds() {
    let s = one_of_each(&[
        ("a-1", 100.0, 500.0),
        ("b-1", 10.0, 20.0),
        ("a-2", 100.0, 500.0),
    ]);
    let out = run(&s, EstimateSource::Input);
    let past = past_runs(&s, &out);
    assert_eq!(past.len(), 3);
    let mut ends: Vec<f64> = out.iter().map(|o| o.finish).collect();
    ends.sort_by(f64::total_cmp);
    for (past_run, end) in past.iter().zip(ends) {
        let (i, o) = out
            .iter()
            .enumerate()
            .find(|(_, o)| o.finish == end)
            .unwrap();
        assert_eq!(past_run.job, kind(&s.workload.jobs[i].name));
        assert_eq!(past_run.user, "u");
        assert_eq!(past_run.flavor, ["gpu", "cpu"][o.flavor]);
        assert_eq!(
            Some(past_run.seconds),
            s.workload.jobs[i].durations[o.flavor]
        );
    }
}

/// What accounting taught is known at the first arrival: a job that ran
/// 100x faster on CPUs goes there at once, with both slots idle.
#[test]
fn runs_learned_beforehand_place_the_first_arrival() {
    let s = one_of_each(&[("a-9", 1000.0, 10.0)]);
    let past: Vec<PastRun> = [("gpu", 1000.0), ("cpu", 10.0)]
        .iter()
        .flat_map(|&(flavor, seconds)| {
            std::iter::repeat_n(
                PastRun {
                    user: "u".into(),
                    job: "a".into(),
                    flavor: flavor.into(),
                    seconds,
                },
                3,
            )
        })
        .collect();
    let warm = run(
        &s,
        EstimateSource::Learned {
            default: DEFAULT,
            past,
        },
    );
    assert_eq!((warm[0].flavor, warm[0].finish), (1, 10.0));
    // From nothing, both flavors are estimated at the default, and the
    // tie goes to the first.
    let cold = run(&s, LEARNED);
    assert_eq!((cold[0].flavor, cold[0].finish), (0, 1000.0));
}

/// Learning halves the average JCT at least, against the same history
/// where nothing can be learned. From nothing, within 10% of perfect
/// hints is not reached (the table below): every job is new at once, and
/// must run on each flavor before it is known.
#[test]
fn learned_estimates_beat_knowing_nothing() {
    for slowdowns in [Slowdowns::PerUser, Slowdowns::PerJob] {
        // Two seeds each: a debug build takes about a minute.
        for seed in 1..=2 {
            let j = four_runs(seed, slowdowns, 0.8);
            eprintln!(
                "{slowdowns:?} seed {seed}: learned {:.3}x perfect hints, nothing learned {:.3}x",
                j.learned / j.perfect,
                j.blind / j.perfect
            );
            assert!(j.learned >= j.perfect * 0.9, "learning beat perfect hints?");
            assert!(j.learned * 2.0 < j.blind, "{slowdowns:?} seed {seed}");
        }
    }
}

/// The same history with every estimate its job's true mean, but for
/// each job's first run, estimated at the default on every flavor: a
/// learner that knew a job exactly from its first run on.
fn first_run_blind(s: &Scenario) -> Scenario {
    let mut out = with_true_means(s);
    let mut seen = HashSet::new();
    for job in &mut out.workload.jobs {
        if seen.insert(kind(&job.name).to_string()) {
            job.estimates = vec![Some(DEFAULT); job.durations.len()];
        }
    }
    out
}

/// `long` split in two halves by arrival: the last `runs` of the first
/// as Slurm's backfill ran them (no hints; every job's time limit the
/// default, on every flavor), as accounting then holds them, and the
/// second half, its arrivals from 0 on.
fn after_backfill(long: &Scenario, runs: usize) -> (Vec<PastRun>, Scenario) {
    let half = long.workload.jobs.len() / 2;
    let mut before = long.clone();
    before.workload.jobs.truncate(half);
    before.workload.jobs.drain(..half - runs);
    let t0 = before.workload.jobs[0].arrival;
    for job in &mut before.workload.jobs {
        job.estimates = vec![Some(DEFAULT); job.durations.len()];
        job.arrival -= t0;
    }
    let mut backfill = SlurmBackfill::conservative();
    let ran = simulate(
        &before,
        &mut backfill,
        &options(EstimateSource::Input),
        &mut |_| {},
    )
    .unwrap();
    let mut after = long.clone();
    after.workload.jobs.drain(..half);
    let t0 = after.workload.jobs[0].arrival;
    for job in &mut after.workload.jobs {
        job.arrival -= t0;
    }
    (past_runs(&before, &ran.jobs), after)
}

/// The geometric mean of ratios, as their logarithms' sum over `n`.
fn geo(ln_sum: f64, n: u64) -> f64 {
    (ln_sum / n as f64).exp()
}

/// The table in docs/comparisons.md: per load and slowdown model, the
/// geometric mean over 40 seeds of the average JCT against perfect hints
/// on the same runs. On a history of 30 runs of each job: learned from
/// nothing; every job's true means; true means but for each job's first
/// run (the cost of meeting each job once). On the second half of a
/// history of 60 runs each: learned from nothing over the whole history
/// (where learning settles), and with true means; learned from the
/// accounting of the first half run under Slurm's backfill (all of it,
/// and its last 5 runs of each job), as the plugin's first start reads
/// slurmdbd. `cargo test --release --test learned_estimates -- --ignored
/// --nocapture` (about six minutes).
#[test]
#[ignore]
fn learned_estimates_table() {
    const SEEDS: u64 = 40;
    eprintln!(
        "| load | slowdowns | from nothing | true means | first run blind \
         | 2nd half: from nothing | true means | from backfill's 720 runs | its last 120 |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|");
    for load in [0.6, 0.8] {
        for slowdowns in [Slowdowns::PerUser, Slowdowns::PerJob] {
            let mut sums = [0.0; 7];
            for seed in 1..=SEEDS {
                let j = four_runs(seed, slowdowns, load);
                // Knowing each job's mean cannot be much worse than
                // learning it.
                assert!(j.true_means < j.learned * 1.1, "{slowdowns:?} {seed}");
                let s = history(seed, slowdowns, load);
                let blind = avg_jct(&first_run_blind(&s), EstimateSource::Input);
                let long = history_of(seed, slowdowns, load, 60);
                let half = long.workload.jobs.len() / 2;
                let perfect = avg_jct_after(&long, EstimateSource::Input, half);
                let settled = avg_jct_after(&long, LEARNED, half);
                let means = avg_jct_after(&with_true_means(&long), EstimateSource::Input, half);
                let mut ratios = vec![
                    j.learned / j.perfect,
                    j.true_means / j.perfect,
                    blind / j.perfect,
                    settled / perfect,
                    means / perfect,
                ];
                for runs in [half, 120] {
                    let (past, after) = after_backfill(&long, runs);
                    let perfect = avg_jct(&after, EstimateSource::Input);
                    let source = EstimateSource::Learned {
                        default: DEFAULT,
                        past,
                    };
                    ratios.push(avg_jct(&after, source) / perfect);
                }
                for (sum, x) in sums.iter_mut().zip(ratios) {
                    *sum += x.ln();
                }
            }
            let row: Vec<String> = sums
                .iter()
                .map(|&s| format!("{:.3}x", geo(s, SEEDS)))
                .collect();
            eprintln!("| {load} | {slowdowns:?} | {} |", row.join(" | "));
        }
    }
}

/// The target: a site that switches from backfill with its accounting
/// on comes within 10% of perfect hints on the month after, at 80% load,
/// whether a user's jobs are alike or not (5 seeds; the table has 40).
#[test]
fn learned_from_backfills_accounting_within_10_percent_of_perfect_hints() {
    const SEEDS: u64 = 5;
    for slowdowns in [Slowdowns::PerUser, Slowdowns::PerJob] {
        let mut ln_sum = 0.0;
        for seed in 1..=SEEDS {
            let long = history_of(seed, slowdowns, 0.8, 60);
            let (past, after) = after_backfill(&long, long.workload.jobs.len() / 2);
            let perfect = avg_jct(&after, EstimateSource::Input);
            let source = EstimateSource::Learned {
                default: DEFAULT,
                past,
            };
            let ratio = avg_jct(&after, source) / perfect;
            eprintln!("{slowdowns:?} seed {seed}: {ratio:.3}x perfect hints");
            assert!(ratio < 1.15, "{slowdowns:?} seed {seed}: {ratio:.3}x");
            ln_sum += ratio.ln();
        }
        let mean = geo(ln_sum, SEEDS);
        assert!(mean < 1.1, "{slowdowns:?}: {mean:.3}x");
    }
}
