//! `fairmatch bench gangs`: how far AlloX's plan for jobs of any width is
//! from the exact optimum, on seeded random small instances, beside a
//! named baseline (smallest area first on each job's fastest flavor, in
//! the same serial schedule); and `--decision`: the wall time of one cold
//! AlloX decision on a deep queue of mixed widths.

use super::bench::print_json;
use super::{BenchGangsArgs, CliError};
use fairmatch::model::{best_flavor, Flavor, Width};
use fairmatch::policy::allox::Allox;
use fairmatch::policy::gang_plan::oracle as gangs;
use fairmatch::policy::gang_plan::{self, PlanJob, PlanNode};
use fairmatch::policy::{MachineView, PendingJob, Policy, View};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

#[derive(Serialize)]
struct GapReport {
    instances: usize,
    jobs: usize,
    seed: u64,
    /// Gaps of AlloX's plan to the exact optimum, `plan / optimum - 1`.
    allox: GapSummary,
    /// The same for the baseline, on the same instances.
    baseline: &'static str,
    baseline_gaps: GapSummary,
    /// With every job one slot wide (AlloX's exact matching): must be 0.
    narrow_allox: GapSummary,
    seconds: f64,
}

#[derive(Serialize)]
struct GapSummary {
    mean: f64,
    p95: f64,
    worst: f64,
    /// Instances where the plan is optimal (gap below 1e-9).
    optimal: usize,
}

fn summary(mut gaps: Vec<f64>) -> GapSummary {
    gaps.sort_by(f64::total_cmp);
    let n = gaps.len().max(1);
    GapSummary {
        mean: gaps.iter().sum::<f64>() / n as f64,
        p95: gaps
            .get(((n as f64 * 0.95).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0),
        worst: gaps.last().copied().unwrap_or(0.0),
        optimal: gaps.iter().filter(|&&g| g < 1e-9).count(),
    }
}

/// The baseline: each job on its fastest flavor, smallest area first.
fn area_first(nodes: &[PlanNode], flavors: usize, jobs: &[PlanJob]) -> f64 {
    let fl: Vec<Flavor> = (0..flavors)
        .map(|f| Flavor::new(format!("f{f}"), 1))
        .collect();
    let mut order: Vec<(f64, usize, usize)> = jobs
        .iter()
        .enumerate()
        .filter_map(|(j, job)| {
            best_flavor(&job.times, &fl).map(|(f, p)| (p * job.width.slots() as f64, j, f))
        })
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let order: Vec<(usize, usize)> = order.into_iter().map(|(_, j, f)| (j, f)).collect();
    gang_plan::total_completion(&gang_plan::schedule_all(nodes, flavors, jobs, &order))
}

/// One instance's gaps: AlloX's, the baseline's.
fn gaps(seed: u64, jobs: usize, narrow: bool) -> Result<(f64, f64), CliError> {
    let (nodes, plan_jobs) = gangs::random_instance(seed, jobs, narrow);
    let flavors = nodes.iter().map(|n| n.flavor + 1).max().unwrap_or(0);
    let planned = gang_plan::planned_total(&nodes, flavors, &plan_jobs)
        .map_err(|e| CliError::Run(format!("instance {seed}: {e}")))?;
    let baseline = area_first(&nodes, flavors, &plan_jobs);
    let best = gangs::exact(&nodes, &plan_jobs, planned.min(baseline))
        .ok_or_else(|| CliError::Run(format!("instance {seed}: a job fits nowhere")))?;
    if planned < best * (1.0 - 1e-9) {
        return Err(CliError::Run(format!(
            "instance {seed}: the plan ({planned}) beats the exhaustive optimum ({best})"
        )));
    }
    Ok((planned / best - 1.0, baseline / best - 1.0))
}

pub fn run(args: BenchGangsArgs) -> Result<(), CliError> {
    if args.decision {
        return decision(&args);
    }
    if args.jobs == 0 || args.jobs > gangs::MAX_JOBS {
        return Err(CliError::Input(format!(
            "--jobs {} must be from 1 to {} (the exact search is exhaustive)",
            args.jobs,
            gangs::MAX_JOBS
        )));
    }
    let started = Instant::now();
    let seeds: Vec<u64> = (0..args.instances as u64)
        .map(|i| args.seed.wrapping_add(i))
        .collect();
    let wide: Vec<(f64, f64)> = seeds
        .par_iter()
        .map(|&s| gaps(s, args.jobs, false))
        .collect::<Result<_, _>>()?;
    let narrow: Vec<(f64, f64)> = seeds
        .par_iter()
        .map(|&s| gaps(s, args.jobs, true))
        .collect::<Result<_, _>>()?;
    let report = GapReport {
        instances: args.instances,
        jobs: args.jobs,
        seed: args.seed,
        allox: summary(wide.iter().map(|g| g.0).collect()),
        baseline: "area-first",
        baseline_gaps: summary(wide.iter().map(|g| g.1).collect()),
        narrow_allox: summary(narrow.iter().map(|g| g.0).collect()),
        seconds: started.elapsed().as_secs_f64(),
    };
    if args.json {
        return print_json(&report);
    }
    println!(
        "{} random instances of {} jobs (widths 1, 2, 4 and 2x2; 2-3 GPU types; 1-3 nodes of 2 or 4 slots each), seed {}; gap = plan / exact optimum - 1",
        report.instances, report.jobs, report.seed
    );
    println!("plan                          mean      p95    worst  optimal");
    let row = |name: &str, g: &GapSummary| {
        println!(
            "{name:<28} {:>6.2}%  {:>6.2}%  {:>6.2}%  {:>4}/{}",
            g.mean * 100.0,
            g.p95 * 100.0,
            g.worst * 100.0,
            g.optimal,
            report.instances
        )
    };
    row("allox (mixed widths)", &report.allox);
    row("area-first (mixed widths)", &report.baseline_gaps);
    row("allox (all one slot wide)", &report.narrow_allox);
    println!("took {:.1} s", report.seconds);
    Ok(())
}

#[derive(Serialize)]
struct DecisionReport {
    pending: usize,
    nodes: usize,
    gpu_types: usize,
    /// Wall seconds of one cold decision, the median of `repeats`.
    seconds: f64,
    repeats: usize,
    started: usize,
}

/// One cold AlloX decision: `--pending` jobs of widths 1, 2, 4 and 2x4 on
/// `--nodes` 4-GPU nodes of `--types` types, a quarter of the slots busy.
fn decision(args: &BenchGangsArgs) -> Result<(), CliError> {
    let mut rng = StdRng::seed_from_u64(args.seed);
    let types = args.types.max(1);
    let per_type = args.nodes.div_ceil(types);
    let flavors: Vec<Flavor> = (0..types)
        .map(|t| Flavor {
            name: format!("gpu{t}"),
            slots: per_type * 4,
            per_node: 4,
        })
        .collect();
    let mut machines = Vec::new();
    for t in 0..types {
        for n in 0..per_type {
            for _ in 0..4 {
                let busy = rng.gen_bool(0.25);
                machines.push(MachineView {
                    flavor: t,
                    node: t * per_type + n,
                    free_at: if busy {
                        rng.gen_range(10.0..2000.0)
                    } else {
                        0.0
                    },
                    idle: !busy,
                });
            }
        }
    }
    let pending: Vec<PendingJob> = (0..args.pending)
        .map(|id| {
            let base: f64 = rng.gen_range(60.0..7200.0);
            PendingJob {
                id,
                user: id % 10,
                arrival: -rng.gen_range(0.0..600.0),
                estimates: (0..types)
                    .map(|_| Some(base * rng.gen_range(1.0..3.0)))
                    .collect(),
                width: match rng.gen_range(0..10) {
                    0..=4 => Width::ONE,
                    5..=7 => Width::new(2, 1).expect("valid"),
                    8 => Width::new(4, 1).expect("valid"),
                    _ => Width::new(4, 2).expect("valid"),
                },
                priority: 0,
            }
        })
        .collect();
    let view = View {
        now: 0.0,
        flavors: &flavors,
        machines: &machines,
        pending: &pending,
        running: &[],
        user_weights: &[1.0; 10],
        attained: &[],
    };
    let repeats = 5;
    let mut times = Vec::new();
    let mut started = 0;
    for _ in 0..repeats {
        let mut allox = Allox::new(1.0).map_err(|e| CliError::Run(e.to_string()))?;
        let t = Instant::now();
        let starts = allox
            .decide(&view)
            .map_err(|e| CliError::Run(e.to_string()))?;
        times.push(t.elapsed().as_secs_f64());
        started = starts.len();
    }
    times.sort_by(f64::total_cmp);
    let report = DecisionReport {
        pending: args.pending,
        nodes: per_type * types,
        gpu_types: types,
        seconds: times[repeats / 2],
        repeats,
        started,
    };
    if args.json {
        return print_json(&report);
    }
    println!(
        "one cold decision: {} pending jobs (widths 1, 2, 4, 2x4) on {} 4-GPU nodes of {} types: {:.1} ms (median of {}), {} slots started",
        report.pending,
        report.nodes,
        report.gpu_types,
        report.seconds * 1e3,
        report.repeats,
        report.started
    );
    Ok(())
}
