//! `fairmatch bench sim`: a seeded synthetic workload through the
//! simulator under AlloX, with events per second.

use super::bench::print_json;
use super::{BenchSimArgs, CliError};
use fairmatch::model::{Cluster, Flavor, Job, Scenario, User, Width, Workload};
use fairmatch::policy::allox::Allox;
use fairmatch::sim::{self, EstimateSource, Profiling, SimOptions};
use fairmatch::solver::SolverKind;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::io::IsTerminal;
use std::time::Instant;

#[derive(Serialize)]
struct SimBenchReport {
    jobs: usize,
    gpu_slots: usize,
    cpu_slots: usize,
    /// Offered work over capacity, each job on its faster flavor; `null`
    /// when every job is queued at once.
    load: Option<f64>,
    solver: &'static str,
    seconds: f64,
    /// Policy decisions (one per batch of simultaneous events).
    decisions: usize,
    decisions_per_second: f64,
    avg_jct: f64,
    peak_rss_mb: Option<f64>,
}

/// The workload: job sizes log-uniform from a minute to ~50 minutes on
/// the GPU; the CPU is 1x to 8x slower, so some jobs barely care and
/// some care a lot. Users are drawn uniformly. Arrivals are Poisson at
/// `load`, counting each job on its GPU time over the GPU slots plus the
/// CPU slots at their CPU rate, or all at 0 with `at_once`.
pub fn synthetic(args: &BenchSimArgs) -> Scenario {
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut jobs = Vec::with_capacity(args.jobs);
    let mut sizes = Vec::with_capacity(args.jobs);
    for _ in 0..args.jobs {
        let base = rng.gen_range(60f64.ln()..3000f64.ln()).exp();
        let gpu = (base * rng.gen_range(0.2..1.5)).round().max(1.0);
        let cpu = (base * rng.gen_range(1.0..8.0)).round().max(1.0);
        sizes.push((gpu, cpu));
    }
    // Capacity in jobs per second, each flavor serving at its mean rate.
    let n = args.jobs.max(1) as f64;
    let mean_gpu: f64 = sizes.iter().map(|s| s.0).sum::<f64>() / n;
    let mean_cpu: f64 = sizes.iter().map(|s| s.1).sum::<f64>() / n;
    let capacity = args.gpu_slots as f64 / mean_gpu + args.cpu_slots as f64 / mean_cpu;
    let gap = 1.0 / (capacity * args.load.max(1e-9));
    let mut t = 0.0;
    for (i, &(gpu, cpu)) in sizes.iter().enumerate() {
        if !args.at_once {
            // Exponential gaps, rounded to whole seconds.
            t += -gap * (1.0 - rng.gen::<f64>()).ln();
        }
        jobs.push(Job {
            name: format!("j{i}"),
            user: rng.gen_range(0..args.users.max(1)),
            arrival: t.round(),
            durations: vec![Some(gpu), Some(cpu)],
            estimates: vec![None, None],
            width: Width::ONE,
        });
    }
    Scenario {
        cluster: Cluster {
            flavors: vec![
                Flavor {
                    name: "gpu".into(),
                    slots: args.gpu_slots,
                    per_node: 1,
                },
                Flavor {
                    name: "cpu".into(),
                    slots: args.cpu_slots,
                    per_node: 1,
                },
            ],
        },
        workload: Workload {
            users: (0..args.users.max(1))
                .map(|u| User {
                    name: format!("u{u}"),
                    weight: 1.0,
                })
                .collect(),
            jobs,
        },
    }
}

pub fn run(args: BenchSimArgs) -> Result<(), CliError> {
    if args.gpu_slots + args.cpu_slots == 0 || args.users == 0 {
        return Err(CliError::Input(
            "need at least one slot and one user".into(),
        ));
    }
    if !(args.load.is_finite() && args.load > 0.0) {
        return Err(CliError::Input(format!(
            "--load {} must be a positive number",
            args.load
        )));
    }
    let scenario = synthetic(&args);
    let mut policy = Allox::new(1.0).map_err(|e| CliError::Input(e.to_string()))?;
    policy.solver = args.solver.into();
    let options = SimOptions {
        estimates: EstimateSource::Input,
        profile: Profiling::Off,
        job_overhead: 0.0,
        preempt_overhead: 0.0,
    };
    let bar = ProgressBar::with_draw_target(
        Some(args.jobs as u64),
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} jobs {elapsed}")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_prefix("allox(a=1)");
    let started = Instant::now();
    let outcome = sim::simulate(&scenario, &mut policy, &options, &mut |done| {
        bar.set_position(done as u64)
    })
    .map_err(|e| CliError::Run(e.to_string()))?;
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let avg_jct = outcome.jobs.iter().map(|j| j.jct()).sum::<f64>() / args.jobs.max(1) as f64;
    let report = SimBenchReport {
        jobs: args.jobs,
        gpu_slots: args.gpu_slots,
        cpu_slots: args.cpu_slots,
        load: (!args.at_once).then_some(args.load),
        solver: SolverKind::from(args.solver).name(),
        seconds,
        decisions: outcome.decisions,
        decisions_per_second: outcome.decisions as f64 / seconds.max(1e-9),
        avg_jct,
        peak_rss_mb: super::bench::peak_rss_mb(),
    };
    if args.json {
        print_json(&report)?;
    } else {
        println!(
            "{} jobs on {} gpu + {} cpu slots ({}), allox(a=1) with {}: {:.2} s, \
             {} decisions ({:.0}/s), avg JCT {:.1} s, peak RSS {} MB",
            report.jobs,
            report.gpu_slots,
            report.cpu_slots,
            report
                .load
                .map_or("all queued at once".into(), |l| format!("load {l}")),
            report.solver,
            report.seconds,
            report.decisions,
            report.decisions_per_second,
            report.avg_jct,
            report.peak_rss_mb.map_or("?".into(), |m| format!("{m:.1}")),
        );
    }
    Ok(())
}
