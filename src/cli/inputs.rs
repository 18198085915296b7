//! Reading the scenario `simulate` and `compare` run: a bundled workload,
//! or a workload file in one of the formats and its cluster.

use super::{
    BundledArg, CliError, Format, MultiGpuArg, PhillyTimesArg, SimulateArgs, TimeUnit,
    UserAssignmentArg,
};
use fairmatch::bundled::Bundled;
use fairmatch::io::gavel_format::{self, GavelOptions, Throughputs, UserAssignment};
use fairmatch::io::philly_format::{self, Derivation, PhillyOptions};
use fairmatch::io::{self, allox_format, allox_format::AlloxOptions, cluster_yaml, MultiGpu};
use fairmatch::model::{Cluster, Scenario, Workload};
use std::path::Path;

fn input(e: io::InputError) -> CliError {
    CliError::Input(e.to_string())
}

/// The scenario, its name, and the seconds in one time unit of its input
/// (AlloX's profiling probes last at least one).
pub(super) fn load(args: &SimulateArgs) -> Result<(String, Scenario, f64), CliError> {
    let Some(path) = &args.workload else {
        return load_bundled(args);
    };
    let name = path.display().to_string();
    let text = io::read_text(path).map_err(input)?;
    let scenario = match args.format {
        Format::Native => load_native(args, &name, &text)?,
        Format::Gavel => load_gavel(args, &name, &text)?,
        Format::Philly => load_philly(args, &name, &text)?,
        Format::Allox => {
            let (scenario, seconds_per_unit) = load_allox(args, &name, &text)?;
            return Ok((name, scenario, seconds_per_unit));
        }
    };
    Ok((name, scenario, 1.0))
}

fn load_bundled(args: &SimulateArgs) -> Result<(String, Scenario, f64), CliError> {
    if args.cluster.is_some() {
        return Err(CliError::Input(
            "--cluster needs --workload (the bundled workloads bring their own cluster)".into(),
        ));
    }
    let bundled = match args.bundled {
        BundledArg::Testbed => Bundled::Testbed,
        BundledArg::Google => Bundled::Google,
    };
    let options = allox_options(args, bundled.options());
    let workload = allox_format::parse(bundled.name(), bundled.text(), &options).map_err(input)?;
    let scenario = Scenario {
        cluster: allox_cluster(&options)?,
        workload,
    };
    Ok((
        bundled.name().to_string(),
        scenario,
        options.seconds_per_unit,
    ))
}

/// The `--cluster` file; without one, an input error saying what the
/// format needs (`missing`).
fn needed_cluster(
    args: &SimulateArgs,
    missing: &str,
) -> Result<cluster_yaml::ClusterSpec, CliError> {
    args.cluster
        .as_deref()
        .ok_or_else(|| CliError::Input(missing.into()))
        .and_then(cluster_file)
}

fn load_native(args: &SimulateArgs, name: &str, text: &str) -> Result<Scenario, CliError> {
    let spec = needed_cluster(args, "a native workload needs --cluster FILE.yaml")?;
    let workload =
        io::workload_csv::parse(name, text, &spec.cluster, &spec.weights).map_err(input)?;
    Ok(Scenario {
        cluster: spec.cluster,
        workload,
    })
}

fn load_gavel(args: &SimulateArgs, name: &str, text: &str) -> Result<Scenario, CliError> {
    let cluster = needed_cluster(
        args,
        "--format gavel needs --throughputs FILE.json and --cluster FILE.yaml (flavors named after worker types: v100, p100, k80)",
    )?
    .cluster;
    let table = args
        .throughputs
        .as_deref()
        .ok_or_else(|| CliError::Input("--format gavel needs --throughputs FILE.json".into()))?;
    let options = GavelOptions {
        users: args.users,
        assignment: match args.user_assignment {
            UserAssignmentArg::RoundRobin => UserAssignment::RoundRobin,
            UserAssignmentArg::Random => UserAssignment::Random { seed: args.seed },
        },
        multi_gpu: match args.multi_gpu {
            MultiGpuArg::Keep => MultiGpu::Keep,
            MultiGpuArg::Drop => MultiGpu::Drop,
            MultiGpuArg::Refuse => MultiGpu::Refuse,
        },
    };
    if !(args.load_factor.is_finite() && args.load_factor > 0.0) {
        return Err(CliError::Input(format!(
            "--load-factor {} must be a finite number above 0",
            args.load_factor
        )));
    }
    let mut trace =
        gavel_format::parse(name, text, &throughputs(table)?, &cluster, &options).map_err(input)?;
    // The same jobs arriving faster: a Poisson trace's arrivals divided by
    // F are a Poisson trace of F times the rate.
    for job in &mut trace.workload.jobs {
        job.arrival /= args.load_factor;
    }
    Ok(traced(
        name,
        cluster,
        trace.workload,
        trace.dropped_multi_gpu,
    ))
}

fn load_philly(args: &SimulateArgs, name: &str, text: &str) -> Result<Scenario, CliError> {
    let cluster = needed_cluster(
        args,
        "--format philly needs --cluster FILE.yaml (gpu and cpu for --philly-times allox; worker types for gavel)",
    )?
    .cluster;
    let table = match (args.philly_times, &args.throughputs) {
        (PhillyTimesArg::Gavel, Some(path)) => Some(throughputs(path)?),
        (PhillyTimesArg::Gavel, None) => {
            return Err(CliError::Input(
                "--philly-times gavel needs --throughputs FILE.json".into(),
            ))
        }
        (PhillyTimesArg::Allox, _) => None,
    };
    let options = PhillyOptions {
        derivation: match &table {
            Some(t) => Derivation::GavelTypes(t),
            None => Derivation::AlloxSpeedups {
                mean: args.speedup_mean,
                sd: args.speedup_sd,
            },
        },
        seed: args.seed,
        window: (args.window_start, args.window_end.unwrap_or(f64::INFINITY)),
        max_jobs: args.max_jobs,
        load_factor: args.load_factor,
        multi_gpu: match args.multi_gpu {
            MultiGpuArg::Keep => MultiGpu::Keep,
            MultiGpuArg::Drop => MultiGpu::Drop,
            MultiGpuArg::Refuse => MultiGpu::Refuse,
        },
    };
    let trace = philly_format::parse(name, text, &cluster, &options).map_err(input)?;
    Ok(traced(
        name,
        cluster,
        trace.workload,
        trace.dropped_multi_gpu,
    ))
}

/// The scenario and the seconds in one time unit of the file.
fn load_allox(args: &SimulateArgs, name: &str, text: &str) -> Result<(Scenario, f64), CliError> {
    if args.cluster.is_some() {
        return Err(CliError::Input(
            "--format allox takes --gpu-slots and --cpu-slots, not --cluster".into(),
        ));
    }
    if args.gpu_slots.is_none() || args.cpu_slots.is_none() {
        return Err(CliError::Input(
            "--format allox needs --gpu-slots N and --cpu-slots N".into(),
        ));
    }
    let options = allox_options(
        args,
        AlloxOptions {
            gpu_slots: 0,
            cpu_slots: 0,
            seconds_per_unit: 1.0,
        },
    );
    let workload = allox_format::parse(name, text, &options).map_err(input)?;
    let scenario = Scenario {
        cluster: allox_cluster(&options)?,
        workload,
    };
    Ok((scenario, options.seconds_per_unit))
}

fn cluster_file(path: &Path) -> Result<cluster_yaml::ClusterSpec, CliError> {
    let text = io::read_text(path).map_err(input)?;
    cluster_yaml::parse(&path.display().to_string(), &text).map_err(input)
}

fn throughputs(path: &Path) -> Result<Throughputs, CliError> {
    let text = io::read_text(path).map_err(input)?;
    gavel_format::parse_throughputs(&path.display().to_string(), &text).map_err(input)
}

/// A trace's scenario; says how many multi-GPU jobs `--multi-gpu drop`
/// left out, since the averages no longer cover the whole trace.
fn traced(name: &str, cluster: Cluster, workload: Workload, dropped: usize) -> Scenario {
    if dropped > 0 {
        eprintln!("{name}: dropped {dropped} multi-GPU job(s) (--multi-gpu drop)");
    }
    Scenario { cluster, workload }
}

/// The cluster of --gpu-slots and --cpu-slots.
fn allox_cluster(options: &AlloxOptions) -> Result<Cluster, CliError> {
    allox_format::cluster(options)
        .map_err(|e| CliError::Input(format!("--gpu-slots/--cpu-slots: {e}")))
}

fn allox_options(args: &SimulateArgs, defaults: AlloxOptions) -> AlloxOptions {
    AlloxOptions {
        gpu_slots: args.gpu_slots.unwrap_or(defaults.gpu_slots),
        cpu_slots: args.cpu_slots.unwrap_or(defaults.cpu_slots),
        seconds_per_unit: match args.time_unit {
            Some(TimeUnit::Seconds) => 1.0,
            Some(TimeUnit::Minutes) => 60.0,
            None => defaults.seconds_per_unit,
        },
    }
}
