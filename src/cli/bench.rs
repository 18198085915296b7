//! `fairmatch bench solver`: one seeded instance, one solve, measured.

use super::{BenchSolverArgs, CliError};
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
    let report = BenchReport {
        jobs: args.jobs,
        machines: args.machines,
        flavors: args.flavors,
        solver: kind.name(),
        seconds,
        objective: solution.objective,
        peak_rss_mb: peak_rss_mb(),
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(|e| CliError::Run(e.to_string()))?
        );
    } else {
        println!(
            "{} jobs x {} machines x {} flavors, {}: {:.6} s, objective {}, peak RSS {} MB",
            report.jobs,
            report.machines,
            report.flavors,
            report.solver,
            report.seconds,
            report.objective,
            report.peak_rss_mb.map_or("?".into(), |m| format!("{m:.1}"))
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
