//! `fairmatch bench solver`: one seeded instance, one solve, measured.

use super::{BenchSolverArgs, CliError};
use fairmatch::solver::random::shortest_first;
use fairmatch::solver::{self, random, SolverKind};
use serde::Serialize;
use std::time::Instant;

#[derive(Serialize)]
struct BenchReport {
    jobs: usize,
    machines: usize,
    flavors: usize,
    solver: &'static str,
    seconds: f64,
    objective: f64,
    /// The named baseline, timed in the same run on the same instance:
    /// sorting the jobs by their fastest time (what shortest-first costs,
    /// and the whole optimum on one machine).
    baseline: &'static str,
    baseline_seconds: f64,
    /// `seconds / baseline_seconds`.
    ratio: f64,
    peak_rss_mb: Option<f64>,
}

pub fn solver(args: BenchSolverArgs) -> Result<(), CliError> {
    if args.flavors == 0 || args.machines < args.flavors {
        return Err(CliError::Input(
            "need --flavors >= 1 and at least one machine per flavor".into(),
        ));
    }
    let instance = random::instance(args.jobs, args.machines, args.flavors, args.seed);
    let kind: SolverKind = args.solver.into();
    let started = Instant::now();
    let solution = solver::solve(&instance, kind).map_err(|e| CliError::Run(e.to_string()))?;
    let seconds = started.elapsed().as_secs_f64();
    // The sort takes microseconds; repeat it for a stable figure.
    let repeats = 20;
    let started = Instant::now();
    for _ in 0..repeats {
        std::hint::black_box(shortest_first(std::hint::black_box(&instance)));
    }
    let baseline_seconds = started.elapsed().as_secs_f64() / repeats as f64;
    let report = BenchReport {
        jobs: args.jobs,
        machines: args.machines,
        flavors: args.flavors,
        solver: kind.name(),
        seconds,
        objective: solution.objective,
        baseline: "shortest-first sort",
        baseline_seconds,
        ratio: seconds / baseline_seconds.max(1e-9),
        peak_rss_mb: peak_rss_mb(),
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(|e| CliError::Run(e.to_string()))?
        );
    } else {
        println!(
            "{} jobs x {} machines x {} flavors, {}: {:.6} s, objective {}, peak RSS {} MB; \
             {}: {:.6} s ({:.0}x)",
            report.jobs,
            report.machines,
            report.flavors,
            report.solver,
            report.seconds,
            report.objective,
            report.peak_rss_mb.map_or("?".into(), |m| format!("{m:.1}")),
            report.baseline,
            report.baseline_seconds,
            report.ratio,
        );
    }
    Ok(())
}

/// The process's peak resident set (VmHWM), where /proc has it.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
