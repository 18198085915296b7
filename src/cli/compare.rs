//! `fairmatch compare`: every policy on one input, side by side, each
//! against the best average JCT.

use super::run_report::{RunReport, Runs};
use super::simulate::execute;
use super::{report, table};
use super::{CliError, CompareArgs, PolicyArg};
use clap::ValueEnum;
use serde::Serialize;
use std::fmt::Write;

#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    run: &'a RunReport,
    /// This run's average JCT over the best run's.
    ratio_to_best: f64,
}

/// The CSV's columns: the scalar figures of a run.
#[derive(Serialize)]
struct CsvRow<'a> {
    policy: &'a str,
    label: &'a str,
    alpha: Option<f64>,
    jobs: usize,
    avg_jct: f64,
    ratio_to_best: f64,
    avg_wait: f64,
    p50_jct: f64,
    p95_jct: f64,
    p99_jct: f64,
    makespan: f64,
    longest_wait: f64,
    p99_wait: f64,
    starved: usize,
    preemptions: u64,
    waited: usize,
    forecast: usize,
    forecast_median_error: f64,
    forecast_p90_error: f64,
    jain: f64,
    rho_mean: f64,
    rho_max: f64,
    decisions: usize,
    decision_mean_seconds: f64,
    decision_max_seconds: f64,
    wall_seconds: f64,
}

/// `all`, or policy names separated by commas.
fn parse_policies(list: &str) -> Result<Vec<PolicyArg>, CliError> {
    if list.trim() == "all" {
        return Ok(PolicyArg::value_variants().to_vec());
    }
    list.split(',')
        .map(|name| {
            PolicyArg::from_str(name.trim(), false).map_err(|_| {
                let known: Vec<&str> = PolicyArg::value_variants()
                    .iter()
                    .map(|p| p.name())
                    .collect();
                CliError::Input(format!(
                    "--policies: unknown policy '{}'; known: all, {}",
                    name.trim(),
                    known.join(", ")
                ))
            })
        })
        .collect()
}

pub fn run(mut args: CompareArgs) -> Result<(), CliError> {
    if !args.sim.policies.is_empty() {
        return Err(CliError::Input(
            "compare takes --policies LIST (comma-separated, or all), not --policy".into(),
        ));
    }
    args.sim.policies = parse_policies(&args.policy_list)?;
    let Runs {
        name,
        scenario,
        runs,
    } = execute(&args.sim)?;
    let best = table::best_avg_jct(&runs);
    let ratio = |r: &RunReport| table::ratio_to_best(r, best);
    if args.sim.json {
        #[derive(Serialize)]
        struct Doc<'a> {
            workload: &'a str,
            best_avg_jct: f64,
            runs: Vec<Row<'a>>,
        }
        let doc = Doc {
            workload: &name,
            best_avg_jct: best,
            runs: runs
                .iter()
                .map(|run| Row {
                    run,
                    ratio_to_best: ratio(run),
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&doc).map_err(|e| CliError::Run(e.to_string()))?;
        println!("{text}");
    } else if args.csv {
        let mut out = csv::Writer::from_writer(std::io::stdout());
        for r in &runs {
            out.serialize(CsvRow {
                policy: &r.policy,
                label: &r.label,
                alpha: r.alpha,
                jobs: r.jobs,
                avg_jct: r.avg_jct,
                ratio_to_best: ratio(r),
                avg_wait: r.avg_wait,
                p50_jct: r.p50_jct,
                p95_jct: r.p95_jct,
                p99_jct: r.p99_jct,
                makespan: r.makespan,
                longest_wait: r.longest_wait,
                p99_wait: r.p99_wait,
                starved: r.starved,
                preemptions: r.preemptions,
                waited: r.waited,
                forecast: r.forecast,
                forecast_median_error: r.forecast_median_error,
                forecast_p90_error: r.forecast_p90_error,
                jain: r.jain,
                rho_mean: r.rho_mean,
                rho_max: r.rho_max,
                decisions: r.decisions,
                decision_mean_seconds: r.decision_mean_seconds,
                decision_max_seconds: r.decision_max_seconds,
                wall_seconds: r.wall_seconds,
            })
            .map_err(|e| CliError::Run(e.to_string()))?;
        }
        out.flush().map_err(|e| CliError::Run(e.to_string()))?;
    } else {
        print!("{}", render(&name, &runs, best));
    }
    report::write_if_asked(args.sim.report.as_deref(), &name, &scenario, &runs)
}

fn render(name: &str, runs: &[RunReport], best: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: {} jobs. Times in seconds; `vs best` is the average JCT over the best one's.\n",
        runs.first().map_or(0, |r| r.jobs)
    );
    let header: Vec<String> = [
        "policy",
        "avg JCT",
        "vs best",
        "p95",
        "p99",
        "max wait",
        "p99 wait",
        "starved",
        "preempted",
        "Jain",
        "rho",
        "max rho",
        "decisions",
        "ms/decision",
        "max ms",
        "wall s",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let mut order: Vec<&RunReport> = runs.iter().collect();
    order.sort_by(|a, b| a.avg_jct.total_cmp(&b.avg_jct));
    let rows: Vec<Vec<String>> = order
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                format!("{:.1}", r.avg_jct),
                format!("{:.2}x", table::ratio_to_best(r, best)),
                format!("{:.1}", r.p95_jct),
                format!("{:.1}", r.p99_jct),
                format!("{:.1}", r.longest_wait),
                format!("{:.1}", r.p99_wait),
                r.starved.to_string(),
                r.preemptions.to_string(),
                format!("{:.3}", r.jain),
                format!("{:.2}", r.rho_mean),
                format!("{:.2}", r.rho_max),
                r.decisions.to_string(),
                format!("{:.3}", r.decision_mean_seconds * 1e3),
                format!("{:.3}", r.decision_max_seconds * 1e3),
                format!("{:.3}", r.wall_seconds),
            ]
        })
        .collect();
    table::grid(&mut out, &header, &rows);
    forecasts(&mut out, &order);
    let _ = writeln!(
        out,
        "\nWaits are the longest at a stretch (arrival to start, or preemption to restart); a job waiting over {} s counts as starved. rho: JCT over the time alone on a 1/N share (Themis).",
        runs.first().map_or(0.0, |r| r.starvation_bound)
    );
    out
}

/// The start-time forecasts of the policies that make them: how many of
/// the jobs that waited had one, and how far off they were.
fn forecasts(out: &mut String, runs: &[&RunReport]) {
    let planning: Vec<&&RunReport> = runs.iter().filter(|r| r.forecast > 0).collect();
    if planning.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nStart-time forecasts (each job's first, while it waited; estimates as the runs had them):\n"
    );
    let header: Vec<String> = [
        "policy",
        "waited",
        "forecast",
        "share",
        "median |error|",
        "p90 |error|",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let rows: Vec<Vec<String>> = planning
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.waited.to_string(),
                r.forecast.to_string(),
                format!("{:.1}%", 100.0 * r.forecast as f64 / r.waited.max(1) as f64),
                format!("{:.1}", r.forecast_median_error),
                format!("{:.1}", r.forecast_p90_error),
            ]
        })
        .collect();
    table::grid(out, &header, &rows);
}
