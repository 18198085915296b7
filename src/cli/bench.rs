//! `fairmatch bench solver`: one seeded instance, one solve, measured.

use super::{BenchSolverArgs, CliError};
use fairmatch::solver::classes::{self, Classes};
use fairmatch::solver::exchange::{self, Exchange};
use fairmatch::solver::random::shortest_first;
use fairmatch::solver::{self, random, SolverKind};
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
    /// The exchange solver could not certify a step and the slot solver
    /// solved the instance instead (its time is included).
    fell_back: bool,
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
    let kind: SolverKind = args.solver.into();
    // `solver::solve` hands a one-flavor instance to list scheduling.
    let one_flavor =
        kind != SolverKind::Munkres && solver::one_flavor::applies(&instance).is_some();
    let started = Instant::now();
    let mut classes_work = None;
    let (solution, fell_back) = match kind {
        SolverKind::Exchange if !one_flavor => exchange::solve_reporting(&instance),
        SolverKind::Classes if !one_flavor && classes::applies(&instance) => {
            classes::solve_counting(&instance).map(|(s, work)| {
                classes_work = Some(work);
                (s, false)
            })
        }
        _ => solver::solve(&instance, kind).map(|s| (s, false)),
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
            kind.name()
        },
        fell_back,
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
            "{} jobs x {} machines x {} flavors{}, {}{}: {:.6} s, objective {}, peak RSS {} MB; \
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
            if report.fell_back {
                " (fell back to the slot solver)"
            } else {
                ""
            },
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
    /// The solver whose state is kept: "exchange" or "classes".
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

/// A solver state kept between events.
enum Warm {
    Exchange(Box<Exchange>),
    Classes(Box<Classes>),
}

impl Warm {
    fn cold(instance: &fairmatch::solver::Instance, classes: bool) -> Result<Self, CliError> {
        if classes {
            Classes::cold(instance)
                .map(|s| Warm::Classes(Box::new(s)))
                .map_err(|e| CliError::Run(e.to_string()))
        } else {
            Exchange::cold(instance)
                .map(|s| Warm::Exchange(Box::new(s)))
                .map_err(inexact)
        }
    }

    fn cost(&self) -> f64 {
        match self {
            Warm::Exchange(s) => s.cost(),
            Warm::Classes(s) => s.cost(),
        }
    }

    fn remaining(&self) -> fairmatch::solver::Instance {
        match self {
            Warm::Exchange(s) => s.remaining().0,
            Warm::Classes(s) => s.remaining().0,
        }
    }
}

/// The median of some counts (sorts them); `None` when there are none.
fn median_count(v: &mut [u64]) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

fn inexact(e: exchange::Inexact) -> CliError {
    CliError::Run(format!(
        "{e:?}: the exchange search could not certify a step"
    ))
}

/// `bench solver --incremental`: warm re-solves after one event each, with
/// the exchange solver's state or, with `--solver classes`, the class
/// solver's.
fn incremental(args: BenchSolverArgs) -> Result<(), CliError> {
    let classes = args.solver == super::SolverArg::Classes;
    let instance =
        random::instance_with_busy(args.jobs, args.machines, args.flavors, args.seed, args.busy);
    instance
        .validate()
        .map_err(|e| CliError::Run(e.to_string()))?;
    // Arrivals come from a second instance of the same shape.
    let arrivals = random::instance(args.events, args.machines, args.flavors, args.seed + 1);
    let started = Instant::now();
    let mut state = Warm::cold(&instance, classes)?;
    let cold_seconds = started.elapsed().as_secs_f64();
    let (mut arrive, mut complete) = (Vec::new(), Vec::new());
    let (mut settled, mut relaxed) = (Vec::new(), Vec::new());
    let mut reruns = None;
    for e in 0..args.events {
        if e % 2 == 0 {
            let f = args.flavors;
            let times = &arrivals.times[e * f..(e + 1) * f];
            let started = Instant::now();
            match &mut state {
                Warm::Exchange(s) => {
                    s.add_job(times, None).map_err(inexact)?;
                }
                Warm::Classes(s) => {
                    let before = s.work();
                    s.add_job(times).map_err(|e| CliError::Run(e.to_string()))?;
                    settled.push(s.work().settled - before.settled);
                    relaxed.push(s.work().relaxed - before.relaxed);
                    *reruns.get_or_insert(0) += s.work().reruns - before.reruns;
                }
            }
            arrive.push(started.elapsed().as_secs_f64());
        } else {
            match &mut state {
                Warm::Exchange(s) => {
                    // The next completion: the busy-soonest machine with a queue.
                    let queues = s.queues();
                    let Some(m) = (0..queues.len())
                        .filter(|&m| !queues[m].is_empty())
                        .min_by(|&a, &b| s.free_in(a).total_cmp(&s.free_in(b)))
                    else {
                        continue;
                    };
                    let started = Instant::now();
                    s.advance(s.free_in(m));
                    s.start_front(m);
                    complete.push(started.elapsed().as_secs_f64());
                }
                Warm::Classes(s) => {
                    let started = Instant::now();
                    if s.start_next().is_some() {
                        complete.push(started.elapsed().as_secs_f64());
                    }
                }
            }
        }
    }
    let remaining = state.remaining();
    let cold_cost = Warm::cold(&remaining, classes)?.cost();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let max = |v: &Vec<f64>| v.iter().copied().fold(0.0, f64::max);
    let arrival_median_seconds = median(&mut arrive);
    let report = IncrementalReport {
        jobs: args.jobs,
        machines: args.machines,
        flavors: args.flavors,
        busy: args.busy,
        solver: if classes { "classes" } else { "exchange" },
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
    };
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
    Ok(())
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
