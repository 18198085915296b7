//! `fairmatch simulate`: load a scenario, run each policy on it, compare.

use super::run_report::{self, Report, RunReport, Runs};
use super::{inputs, report, table, CliError, PolicyArg, PreemptArg, ProfileArg, SimulateArgs};
use clap::ValueEnum;
use fairmatch::metrics::{self, JobOutcome};
use fairmatch::model::Scenario;
use fairmatch::policy::allox::{Allox, Preemption};
use fairmatch::policy::baselines::drf::Drf;
use fairmatch::policy::baselines::drfa::Drfa;
use fairmatch::policy::baselines::equal_share::EqualShare;
use fairmatch::policy::baselines::ftf::Ftf;
use fairmatch::policy::baselines::gavel_maxmin::GavelMaxMin;
use fairmatch::policy::baselines::sjf::Sjf;
use fairmatch::policy::baselines::slurm_backfill::SlurmBackfill;
use fairmatch::policy::baselines::srpt::Srpt;
use fairmatch::policy::baselines::tiresias::Tiresias;
use fairmatch::policy::baselines::{fifo::Fifo, jsq::Jsq};
use fairmatch::policy::Policy;
use fairmatch::sim::{self, EstimateSource, Profiling, SimOptions};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::Path;

/// One policy configuration to run.
#[derive(Clone, Debug)]
struct RunSpec {
    policy: PolicyArg,
    alpha: Option<f64>,
}

pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    let Runs {
        name,
        scenario,
        runs,
    } = execute(&args)?;
    if args.json {
        let doc = Report {
            workload: &name,
            runs: &runs,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::Run(e.to_string()))?
        );
    } else {
        print!("{}", table::render(&name, &scenario, &runs));
    }
    report::write_if_asked(args.report.as_deref(), &name, &scenario, &runs)
}

/// Loads the scenario and runs every policy of `args` on it, in parallel,
/// with a progress bar per run; writes `--schedule-out` if asked.
pub(super) fn execute(args: &SimulateArgs) -> Result<Runs, CliError> {
    let (name, scenario, time_unit) = inputs::load(args)?;
    let specs = run_specs(args)?;
    let options = SimOptions {
        estimates: match (args.estimate_error, args.learned_estimates) {
            (Some(sigma), _) => EstimateSource::RelativeError {
                sigma,
                seed: args.seed,
            },
            (None, Some(default)) if default.is_finite() && default > 0.0 => {
                EstimateSource::Learned {
                    default,
                    past: Vec::new(),
                }
            }
            (None, Some(_)) => {
                return Err(CliError::Input(
                    "--learned-estimates takes seconds above 0".into(),
                ))
            }
            (None, None) => EstimateSource::Input,
        },
        profile: match args.profile {
            None => Profiling::Off,
            Some(ProfileArg::Fairmatch) => Profiling::Fairmatch,
            Some(ProfileArg::Allox) => Profiling::Allox {
                min_probe: time_unit,
            },
        },
        job_overhead: args.job_overhead,
        preempt_overhead: args.preempt_overhead,
    };

    let bars = MultiProgress::with_draw_target(if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let style = ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} jobs {elapsed}")
        .expect("static template")
        .progress_chars("=> ");
    let runs: Vec<Result<(RunReport, Vec<JobOutcome>), CliError>> = specs
        .par_iter()
        .map(|spec| {
            let mut policy = make_policy(spec, args)?;
            let bar = bars.add(ProgressBar::new(scenario.workload.jobs.len() as u64));
            bar.set_style(style.clone());
            bar.set_prefix(policy.label());
            let started = std::time::Instant::now();
            let outcome = sim::simulate(&scenario, policy.as_mut(), &options, &mut |done| {
                bar.set_position(done as u64)
            })
            .map_err(|e| CliError::Run(format!("{}: {e}", policy.label())))?;
            bar.finish_and_clear();
            let slots: Vec<usize> = scenario.cluster.flavors.iter().map(|f| f.slots).collect();
            let m = metrics::compute(
                &outcome.jobs,
                &outcome.busy,
                &slots,
                scenario.workload.users.len(),
                args.starvation_bound,
            );
            let mut report = RunReport::new(
                &scenario,
                spec.policy.name(),
                spec.alpha,
                policy.label(),
                &m,
                outcome.decisions,
            );
            report.starvation_bound = args.starvation_bound;
            report.jct_percentiles = run_report::percentiles(
                outcome.jobs.iter().map(|o| o.finish - o.arrival).collect(),
            );
            report.wait_percentiles =
                run_report::percentiles(outcome.jobs.iter().map(|o| o.longest_wait).collect());
            report.decision_mean_seconds =
                outcome.decision_seconds / outcome.decisions.max(1) as f64;
            report.decision_max_seconds = outcome.decision_seconds_max;
            report.wall_seconds = started.elapsed().as_secs_f64();
            Ok((report, outcome.jobs))
        })
        .collect();
    let (runs, schedules): (Vec<RunReport>, Vec<Vec<JobOutcome>>) = runs
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    if let Some(path) = &args.schedule_out {
        write_schedules(path, &scenario, &runs, &schedules)
            .map_err(|e| CliError::Run(format!("{}: {e}", path.display())))?;
    }
    Ok(Runs {
        name,
        scenario,
        runs,
    })
}

fn run_specs(args: &SimulateArgs) -> Result<Vec<RunSpec>, CliError> {
    let bad = |m: String| Err(CliError::Input(m));
    for &a in &args.alphas {
        if !(a > 0.0 && a <= 1.0) {
            return bad(format!("--alpha {a}: must be in (0, 1]"));
        }
    }
    if let Some(s) = args.estimate_error {
        if !(s.is_finite() && s >= 0.0) {
            return bad(format!(
                "--estimate-error {s}: must be a finite number >= 0"
            ));
        }
    }
    if !(args.job_overhead.is_finite() && args.job_overhead >= 0.0) {
        return bad(format!(
            "--job-overhead {}: must be a finite number >= 0",
            args.job_overhead
        ));
    }
    for (flag, v) in [
        ("--preempt-overhead", Some(args.preempt_overhead)),
        ("--max-wait", Some(args.max_wait)),
        ("--wait-factor", Some(args.wait_factor)),
        ("--min-run", args.min_run),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return bad(format!("{flag} {v}: must be a finite number >= 0"));
        }
    }
    if !(args.round.is_finite() && args.round > 0.0) {
        return bad(format!(
            "--round {}: must be a number of seconds > 0",
            args.round
        ));
    }
    if !(args.stickiness.is_finite() && args.stickiness >= 0.0) {
        return bad(format!(
            "--stickiness {}: must be a finite number >= 0",
            args.stickiness
        ));
    }
    if args.max_candidates == Some(0) {
        return bad("--max-candidates must be at least 1".into());
    }
    if args.gpu_slots == Some(0) && args.cpu_slots == Some(0) {
        return bad("--gpu-slots and --cpu-slots are both 0: no machine to run on".into());
    }
    let alphas = if args.alphas.is_empty() {
        vec![0.5, 1.0]
    } else {
        args.alphas.clone()
    };
    let mut policies = args.policies.clone();
    if policies.is_empty() {
        policies = PolicyArg::value_variants().to_vec();
    }
    let mut seen = Vec::new();
    policies.retain(|p| {
        let new = !seen.contains(p);
        seen.push(*p);
        new
    });
    Ok(policies
        .into_iter()
        .flat_map(|policy| match policy {
            PolicyArg::Allox => alphas
                .iter()
                .map(|&a| RunSpec {
                    policy,
                    alpha: Some(a),
                })
                .collect::<Vec<_>>(),
            _ => vec![RunSpec {
                policy,
                alpha: None,
            }],
        })
        .collect())
}

fn make_policy(spec: &RunSpec, args: &SimulateArgs) -> Result<Box<dyn Policy>, CliError> {
    Ok(match spec.policy {
        PolicyArg::Allox => {
            let alpha = spec.alpha.expect("allox runs carry an alpha");
            let mut allox =
                Allox::new(alpha).map_err(|e| CliError::Input(format!("--alpha: {e}")))?;
            allox.max_candidates = args.max_candidates;
            allox.candidate_rule = args.candidate_rule.into();
            allox.solver = args.solver.into();
            allox.stickiness = args.stickiness;
            allox.max_wait = (!args.no_max_wait).then_some(args.max_wait);
            allox.preemption = match args.preempt {
                PreemptArg::Off => None,
                PreemptArg::Rounds => Some(Preemption {
                    round: args.round,
                    min_run: args.min_run.unwrap_or(args.round),
                    wait_factor: args.wait_factor,
                    restart: args.preempt_overhead,
                    for_gain: !args.no_preempt_gain,
                    for_gangs: true,
                }),
            };
            Box::new(allox)
        }
        PolicyArg::Fifo => Box::new(Fifo),
        PolicyArg::Jsq => Box::new(Jsq),
        PolicyArg::Sjf => Box::new(Sjf),
        PolicyArg::DrfFifo => Box::new(Drf::fifo()),
        PolicyArg::DrfSjf => Box::new(Drf::sjf()),
        PolicyArg::Drfa => Box::new(Drfa),
        PolicyArg::Es => Box::new(EqualShare),
        PolicyArg::Srpt => Box::new(Srpt),
        PolicyArg::Tiresias => Box::new(Tiresias::default()),
        PolicyArg::GavelMaxmin => Box::new(GavelMaxMin::default()),
        PolicyArg::Ftf => Box::new(Ftf::default()),
        PolicyArg::SlurmBackfill => Box::new(SlurmBackfill::conservative()),
        PolicyArg::SlurmEasy => Box::new(SlurmBackfill::easy()),
    })
}

fn write_schedules(
    path: &Path,
    scenario: &Scenario,
    runs: &[RunReport],
    schedules: &[Vec<JobOutcome>],
) -> Result<(), csv::Error> {
    let mut out = csv::Writer::from_path(path)?;
    out.write_record([
        "run",
        "job_id",
        "user",
        "flavor",
        "machine",
        "arrival",
        "start",
        "finish",
        "longest_wait",
        "preemptions",
    ])?;
    let machines = scenario.cluster.machine_names();
    for (run, jobs) in runs.iter().zip(schedules) {
        for (job, o) in scenario.workload.jobs.iter().zip(jobs) {
            out.write_record([
                run.label.as_str(),
                &job.name,
                &scenario.workload.users[o.user].name,
                &scenario.cluster.flavors[o.flavor].name,
                &machines[o.machine],
                &o.arrival.to_string(),
                &o.start.to_string(),
                &o.finish.to_string(),
                &o.longest_wait.to_string(),
                &o.preemptions.to_string(),
            ])?;
        }
    }
    out.flush()?;
    Ok(())
}
