//! `fairmatch bench solver`: one seeded instance, one solve, measured.

use super::{BenchSolverArg, BenchSolverArgs, CliError};
use fairmatch::solver::classes::{self, Classes};
use fairmatch::solver::oracle::random::{self, shortest_first};
use fairmatch::solver::oracle::{brute, munkres};
use fairmatch::solver::{self, Instance, Solution, SolveError, SolverKind};
use serde::Serialize;
use std::time::Instant;

#[derive(Serialize)]
struct BenchReport {
    jobs: usize,
    machines: usize,
    flavors: usize,
    /// The fraction of machines drawn busy (`--busy`).
    busy: f64,
    /// The solver that ran: "one-flavor" when only one flavor has machines.
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
    /// The class solver's searches: classes settled and moves between
    /// flavors relaxed, over the whole solve.
    #[serde(skip_serializing_if = "Option::is_none")]
    classes_work: Option<classes::Work>,
}

pub fn solver(args: BenchSolverArgs) -> Result<(), CliError> {
    if args.flavors == 0 || args.machines < args.flavors {
        return Err(CliError::Input(
            "need --flavors >= 1 and at least one machine per flavor".into(),
        ));
    }
    if !(0.0..=1.0).contains(&args.busy) {
        return Err(CliError::Input(format!(
            "--busy {} must be a fraction from 0 to 1",
            args.busy
        )));
    }
    if args.incremental {
        return incremental(args);
    }
    let instance =
        random::instance_with_busy(args.jobs, args.machines, args.flavors, args.seed, args.busy);
    let chosen = args.solver.unwrap_or_default();
    // `solver::solve` hands a one-flavor instance to list scheduling; the
    // oracles always run themselves.
    let one_flavor = !matches!(chosen, BenchSolverArg::Munkres | BenchSolverArg::Brute)
        && solver::one_flavor::applies(&instance).is_some();
    let started = Instant::now();
    let mut classes_work = None;
    let solution = match chosen {
        BenchSolverArg::Classes if !one_flavor && classes::applies(&instance) => {
            classes::solve_counting(&instance).map(|(s, work)| {
                classes_work = Some(work);
                s
            })
        }
        other => solve_with(&instance, other),
    }
    .map_err(|e| CliError::Run(e.to_string()))?;
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
        busy: args.busy,
        solver: if one_flavor {
            "one-flavor"
        } else {
            chosen.name()
        },
        seconds,
        objective: solution.objective,
        baseline: "shortest-first sort",
        baseline_seconds,
        ratio: seconds / baseline_seconds.max(1e-9),
        peak_rss_mb: peak_rss_mb(),
        classes_work,
    };
    if args.json {
        print_json(&report)?;
    } else {
        println!(
            "{} jobs x {} machines x {} flavors{}, {}: {:.6} s, objective {}, peak RSS {} MB; \
             {}: {:.6} s ({:.0}x)",
            report.jobs,
            report.machines,
            report.flavors,
            if report.busy == random::DEFAULT_BUSY {
                String::new()
            } else {
                format!(" ({:.0}% busy)", report.busy * 100.0)
            },
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

#[derive(Serialize)]
struct IncrementalReport {
    jobs: usize,
    machines: usize,
    flavors: usize,
    /// The fraction of machines drawn busy (`--busy`).
    busy: f64,
    /// The solver whose state is kept: "classes".
    solver: &'static str,
    /// The baseline: one cold solve of the starting instance by that solver.
    cold_seconds: f64,
    arrivals: usize,
    arrival_median_seconds: f64,
    arrival_max_seconds: f64,
    completions: usize,
    completion_median_seconds: f64,
    completion_max_seconds: f64,
    /// `cold_seconds / arrival_median_seconds`.
    arrival_speedup: f64,
    /// The class solver: classes settled and moves between flavors
    /// relaxed by the median arrival and the most by any (how much a slow
    /// arrival searched, whatever the machine's noise did to its time).
    #[serde(skip_serializing_if = "Option::is_none")]
    arrival_median_settled: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrival_max_settled: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrival_median_relaxed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrival_max_relaxed: Option<u64>,
    /// Arrivals whose search ran again without the probes' cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    arrival_reruns: Option<u64>,
    /// The final warm state's cost, and a cold solve's of the same jobs.
    warm_cost: f64,
    cold_cost: f64,
    peak_rss_mb: Option<f64>,
}

/// The median of some counts (sorts them); `None` when there are none.
fn median_count(v: &mut [u64]) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// `bench solver --incremental`: warm re-solves after one event each, on
/// the class solver's state (the one state AlloX keeps).
fn incremental(args: BenchSolverArgs) -> Result<(), CliError> {
    if args.solver.is_some_and(|s| s != BenchSolverArg::Classes) {
        return Err(CliError::Input(
            "--incremental measures the class solver's kept state: use --solver classes or leave --solver out".into(),
        ));
    }
    let report = measure_incremental(&args)?;
    let tolerance = 1e-9 * report.cold_cost.abs().max(1.0);
    if (report.warm_cost - report.cold_cost).abs() > tolerance {
        return Err(CliError::Run(format!(
            "warm cost {} differs from a cold solve's {}",
            report.warm_cost, report.cold_cost
        )));
    }
    if args.json {
        print_json(&report)?;
    } else {
        print_incremental(&report);
    }
    Ok(())
}

/// What the warm state measured over the events, one entry per event of
/// each kind.
#[derive(Default)]
struct EventTimes {
    /// Seconds per arrival.
    arrive: Vec<f64>,
    /// Seconds per completion that started a job.
    complete: Vec<f64>,
    /// Classes settled per arrival.
    settled: Vec<u64>,
    /// Moves between flavors relaxed per arrival.
    relaxed: Vec<u64>,
    /// Searches run again without the cap, over all arrivals; `None`
    /// when there were no arrivals.
    reruns: Option<u64>,
}

/// Solves the seeded instance cold, replays the events on the warm state,
/// and solves the remaining jobs cold again to check the warm cost.
fn measure_incremental(args: &BenchSolverArgs) -> Result<IncrementalReport, CliError> {
    let run = |e: SolveError| CliError::Run(e.to_string());
    let instance =
        random::instance_with_busy(args.jobs, args.machines, args.flavors, args.seed, args.busy);
    instance
        .validate()
        .map_err(|e| CliError::Run(e.to_string()))?;
    // Arrivals come from a second instance of the same shape.
    let arrivals = random::instance(args.events, args.machines, args.flavors, args.seed + 1);
    let started = Instant::now();
    let mut state = Classes::cold(&instance).map_err(run)?;
    let cold_seconds = started.elapsed().as_secs_f64();
    let EventTimes {
        mut arrive,
        mut complete,
        mut settled,
        mut relaxed,
        reruns,
    } = replay_events(&mut state, &arrivals, args).map_err(run)?;
    let (remaining, _) = state.remaining();
    let cold_cost = Classes::cold(&remaining).map_err(run)?.cost();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let max = |v: &Vec<f64>| v.iter().copied().fold(0.0, f64::max);
    let arrival_median_seconds = median(&mut arrive);
    Ok(IncrementalReport {
        jobs: args.jobs,
        machines: args.machines,
        flavors: args.flavors,
        busy: args.busy,
        solver: "classes",
        cold_seconds,
        arrivals: arrive.len(),
        arrival_max_seconds: max(&arrive),
        arrival_median_seconds,
        completions: complete.len(),
        completion_max_seconds: max(&complete),
        completion_median_seconds: median(&mut complete),
        arrival_speedup: cold_seconds / arrival_median_seconds.max(1e-9),
        arrival_median_settled: median_count(&mut settled),
        arrival_max_settled: settled.iter().copied().max(),
        arrival_median_relaxed: median_count(&mut relaxed),
        arrival_max_relaxed: relaxed.iter().copied().max(),
        arrival_reruns: reruns,
        warm_cost: state.cost(),
        cold_cost,
        peak_rss_mb: peak_rss_mb(),
    })
}

/// Replays `args.events` events on the warm state, timing each: even ones
/// are arrivals (event `e` adds job `e` of `arrivals`), odd ones
/// completions.
fn replay_events(
    state: &mut Classes,
    arrivals: &Instance,
    args: &BenchSolverArgs,
) -> Result<EventTimes, SolveError> {
    let mut times = EventTimes::default();
    for e in 0..args.events {
        if e % 2 == 0 {
            let f = args.flavors;
            let job_times = &arrivals.times[e * f..(e + 1) * f];
            let started = Instant::now();
            let before = state.work();
            state.add_job(job_times)?;
            times.settled.push(state.work().settled - before.settled);
            times.relaxed.push(state.work().relaxed - before.relaxed);
            *times.reruns.get_or_insert(0) += state.work().reruns - before.reruns;
            times.arrive.push(started.elapsed().as_secs_f64());
        } else {
            let started = Instant::now();
            if state.start_next().is_some() {
                times.complete.push(started.elapsed().as_secs_f64());
            }
        }
    }
    Ok(times)
}

fn print_incremental(report: &IncrementalReport) {
    println!(
        "{} jobs x {} machines x {} flavors, {} warm: arrival median {:.6} s / max {:.6} s ({} arrivals), \
         completion median {:.6} s / max {:.6} s ({}); cold solve {:.3} s ({:.0}x the median arrival); \
         warm cost {} = cold cost {}{}",
        report.jobs,
        report.machines,
        report.flavors,
        report.solver,
        report.arrival_median_seconds,
        report.arrival_max_seconds,
        report.arrivals,
        report.completion_median_seconds,
        report.completion_max_seconds,
        report.completions,
        report.cold_seconds,
        report.arrival_speedup,
        report.warm_cost,
        report.cold_cost,
        match (
            report.arrival_median_settled,
            report.arrival_max_settled,
            report.arrival_median_relaxed,
            report.arrival_max_relaxed,
        ) {
            (Some(ms), Some(xs), Some(mr), Some(xr)) => format!(
                "; per arrival, classes settled: median {ms}, max {xs}; \
                 moves between flavors relaxed: median {mr}, max {xr}; \
                 searches run again without the cap: {}",
                report.arrival_reruns.unwrap_or(0)
            ),
            _ => String::new(),
        },
    );
}

/// Solves with the product's solvers through [`solver::solve`], or with an
/// oracle.
fn solve_with(instance: &Instance, chosen: BenchSolverArg) -> Result<Solution, SolveError> {
    match chosen {
        BenchSolverArg::Fast => solver::solve(instance, SolverKind::Fast),
        BenchSolverArg::Classes => solver::solve(instance, SolverKind::Classes),
        BenchSolverArg::Munkres => munkres::solve(instance),
        BenchSolverArg::Brute => brute::solve(instance),
    }
}

/// A report as one line of JSON on stdout.
pub fn print_json(report: &impl Serialize) -> Result<(), CliError> {
    let line = serde_json::to_string(report).map_err(|e| CliError::Run(e.to_string()))?;
    println!("{line}");
    Ok(())
}

/// The process's peak resident set (VmHWM), where /proc has it.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
