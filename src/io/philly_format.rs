//! Microsoft's Philly trace (2017), as preprocessed by the Sia artifact:
//! a CSV with the header `timestamp,duration,num_gpus,gpu_time,cluster`.
//!
//! - `timestamp` is `YYYY-MM-DD HH:MM:SS`. The file is not in time order;
//!   jobs are sorted by it (ties keep file order), and arrivals count from
//!   the first one.
//! - `duration` is the run time in seconds, on the trace's own GPUs.
//! - `num_gpus` above 1 is refused, naming the line, unless the caller
//!   drops such jobs.
//! - `gpu_time` is read and ignored.
//! - `cluster` (the virtual cluster) is the user.
//!
//! The trace has one run time per job. Per-flavor times come from one of
//! two seeded derivations:
//! - [`Derivation::GavelTypes`]: each job gets a Gavel job type, uniformly
//!   among the types (on one GPU) that run on the reference worker type
//!   `v100`. The trace's duration counts as its V100 time, so the job's
//!   steps are `duration * steps_per_second(v100)`, and its time on each
//!   flavor is those steps over that flavor's throughput.
//! - [`Derivation::AlloxSpeedups`]: as AlloX did, the time on the `gpu`
//!   flavor is the duration, and the time on `cpu` is the duration times a
//!   speedup drawn from a normal distribution truncated to [0.7, 60]
//!   (redrawn until it falls inside).
//!
//! Options then cut a time window, keep the first jobs, and compress
//! arrivals by a load factor (arrival / factor).

use super::gavel_format::Throughputs;
use super::{InputError, MultiGpu};
use crate::model::{Cluster, Job, User, Workload};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use std::collections::HashMap;

/// Gavel's reference worker type for a trace duration.
pub const REFERENCE_WORKER: &str = "v100";
/// AlloX's bounds on a job's CPU-over-GPU time.
pub const SPEEDUP_BOUNDS: (f64, f64) = (0.7, 60.0);

/// How a job's per-flavor run times are derived from its one trace duration.
#[derive(Clone, Debug)]
pub enum Derivation<'a> {
    /// Draw a Gavel job type per job, with times from this throughput table.
    GavelTypes(&'a Throughputs),
    /// AlloX's: a `cpu` time of the duration times a drawn speedup.
    AlloxSpeedups {
        /// Mean of the normal distribution of speedups.
        mean: f64,
        /// Its standard deviation.
        sd: f64,
    },
}

/// How to read the Philly trace.
#[derive(Clone, Debug)]
pub struct PhillyOptions<'a> {
    /// Where per-flavor run times come from.
    pub derivation: Derivation<'a>,
    /// Seed of the derivation's draws.
    pub seed: u64,
    /// Keep jobs arriving in `[start, end)` seconds after the first; their
    /// arrivals then count from `start`.
    pub window: (f64, f64),
    /// Keep at most this many jobs (the first, after the window).
    pub max_jobs: Option<usize>,
    /// Arrivals are divided by this (above 1 compresses them: more load).
    pub load_factor: f64,
    /// What to do with jobs on more than one GPU.
    pub multi_gpu: MultiGpu,
}

/// A parsed trace, and how many multi-GPU jobs were dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct PhillyTrace {
    /// The jobs; users are the trace's virtual clusters, in order of first
    /// appearance.
    pub workload: Workload,
    /// Multi-GPU jobs left out.
    pub dropped_multi_gpu: usize,
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2017-10-09 07:01:55` -> seconds since the Unix epoch.
fn parse_timestamp(text: &str) -> Option<f64> {
    let (date, time) = text.trim().split_once(' ')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let t: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let ([y, mo, da], [h, mi, s]) = (d.as_slice(), t.as_slice()) else {
        return None;
    };
    let valid = (1..=12).contains(mo) && (1..=31).contains(da) && *h < 24 && *mi < 60 && *s < 61;
    (valid && *h >= 0 && *mi >= 0 && *s >= 0)
        .then(|| (days_from_civil(*y, *mo, *da) * 86_400 + h * 3600 + mi * 60 + s) as f64)
}

/// One job line of the trace, kept until the lines are sorted by time.
struct TraceRow {
    /// Seconds since the Unix epoch.
    timestamp: f64,
    line_no: usize,
    /// GPUs it ran on.
    gpus: usize,
    /// Run time in seconds on the trace's own GPUs.
    duration: f64,
    virtual_cluster: String,
}

/// Reads the trace for `cluster`; errors name the line.
pub fn parse(
    file: &str,
    text: &str,
    cluster: &Cluster,
    options: &PhillyOptions<'_>,
) -> Result<PhillyTrace, InputError> {
    if !(options.load_factor.is_finite() && options.load_factor > 0.0) {
        return Err(InputError::at(
            file,
            None,
            "--load-factor must be a finite number > 0",
        ));
    }
    let names: Vec<&str> = cluster.flavors.iter().map(|f| f.name.as_str()).collect();
    let job_types = check_derivation(file, &names, &options.derivation)?;
    let (mut rows, dropped) = read_rows(file, text, options.multi_gpu)?;
    rows.sort_by(|a, b| {
        a.timestamp
            .total_cmp(&b.timestamp)
            .then(a.line_no.cmp(&b.line_no))
    });
    let workload = build_workload(file, rows, cluster, &job_types, options)?;
    Ok(PhillyTrace {
        workload,
        dropped_multi_gpu: dropped,
    })
}

/// Refuses a derivation the cluster cannot take; for Gavel's, returns the
/// job types to draw from with their steps per second on the reference
/// worker (empty for AlloX's).
fn check_derivation(
    file: &str,
    names: &[&str],
    derivation: &Derivation<'_>,
) -> Result<Vec<(String, f64)>, InputError> {
    let whole = |m: String| InputError::at(file, None, m);
    match derivation {
        Derivation::GavelTypes(table) => {
            let known = table.worker_types();
            if let Some(bad) = names.iter().find(|n| !known.contains(n)) {
                return Err(whole(format!(
                    "the cluster's flavor '{bad}' is not a worker type of the throughput table"
                )));
            }
            let types = table.single_gpu_types(REFERENCE_WORKER);
            if types.is_empty() {
                return Err(whole(format!(
                    "the throughput table has no job type on worker type '{REFERENCE_WORKER}'"
                )));
            }
            Ok(types)
        }
        Derivation::AlloxSpeedups { mean, sd } => {
            if names != ["gpu", "cpu"] && names != ["cpu", "gpu"] {
                return Err(whole(
                    "AlloX's derivation needs a cluster of two flavors, gpu and cpu".into(),
                ));
            }
            if !(mean.is_finite() && sd.is_finite() && *sd >= 0.0) {
                return Err(whole(
                    "--speedup-mean and --speedup-sd must be finite, sd >= 0".into(),
                ));
            }
            Ok(Vec::new())
        }
    }
}

/// The header, then every job line in file order, and how many multi-GPU
/// lines were dropped.
fn read_rows(
    file: &str,
    text: &str,
    multi_gpu: MultiGpu,
) -> Result<(Vec<TraceRow>, usize), InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, h)) if h.trim() == "timestamp,duration,num_gpus,gpu_time,cluster" => {}
        _ => {
            return Err(InputError::at(
                file,
                Some(1),
                "expected the header timestamp,duration,num_gpus,gpu_time,cluster",
            ))
        }
    }
    let mut rows = Vec::new();
    let mut dropped = 0;
    for (i, line) in lines {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        match read_row(file, line_no, line, multi_gpu)? {
            Some(row) => rows.push(row),
            None => dropped += 1,
        }
    }
    Ok((rows, dropped))
}

/// One non-blank job line; `None` for a multi-GPU job being dropped.
fn read_row(
    file: &str,
    line_no: usize,
    line: &str,
    multi_gpu: MultiGpu,
) -> Result<Option<TraceRow>, InputError> {
    let at = |m: String| InputError::at(file, Some(line_no), m);
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 5 {
        return Err(at(format!(
            "expected 5 comma-separated fields, found {}",
            f.len()
        )));
    }
    let timestamp = parse_timestamp(f[0])
        .ok_or_else(|| at(format!("timestamp '{}' is not YYYY-MM-DD HH:MM:SS", f[0])))?;
    let duration = super::parse_seconds(f[1], "duration").map_err(at)?;
    let gpus: u32 = f[2]
        .parse()
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| at(format!("num_gpus '{}' is not a whole number >= 1", f[2])))?;
    if gpus > 1 {
        match multi_gpu {
            MultiGpu::Keep => {}
            MultiGpu::Drop => return Ok(None),
            MultiGpu::Refuse => {
                return Err(at(format!(
                    "the job uses {gpus} GPUs (--multi-gpu keep runs it as a gang, drop skips it)"
                )))
            }
        }
    }
    if f[4].is_empty() {
        return Err(at("the cluster (user) field is empty".into()));
    }
    Ok(Some(TraceRow {
        timestamp,
        line_no,
        gpus: gpus as usize,
        duration,
        virtual_cluster: f[4].to_string(),
    }))
}

/// The jobs of the time-sorted rows inside the window, up to the cap, with
/// derived run times; one random stream serves them all in order, so a
/// seed gives the same workload.
fn build_workload(
    file: &str,
    rows: Vec<TraceRow>,
    cluster: &Cluster,
    job_types: &[(String, f64)],
    options: &PhillyOptions<'_>,
) -> Result<Workload, InputError> {
    let first = rows.first().map_or(0.0, |r| r.timestamp);
    let (start, end) = options.window;
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut users: Vec<User> = Vec::new();
    let mut user_of: HashMap<String, usize> = HashMap::new();
    let mut jobs = Vec::new();
    let names: Vec<&str> = cluster.flavors.iter().map(|f| f.name.as_str()).collect();
    for row in rows {
        let offset = row.timestamp - first;
        if offset < start || offset >= end {
            continue;
        }
        if options.max_jobs.is_some_and(|n| jobs.len() >= n) {
            break;
        }
        let line_no = row.line_no;
        let at = |m: String| InputError::at(file, Some(line_no), m);
        let durations = derive_durations(
            &options.derivation,
            job_types,
            &names,
            row.duration,
            &mut rng,
        )
        .map_err(at)?;
        let width = super::gang_width(row.gpus, cluster);
        if cluster
            .fitting(&durations, width)
            .iter()
            .all(Option::is_none)
        {
            return Err(at(format!(
                "the job on {} GPUs fits no flavor it can run on (nodes of {width} slots; --multi-gpu drop skips it)",
                row.gpus
            )));
        }
        for d in durations.iter().flatten() {
            super::within_bound(*d, "derived run time", &format!("{d}")).map_err(at)?;
        }
        if !durations.iter().any(Option::is_some) {
            return Err(at(
                "the job's type runs on none of the cluster's flavors".into()
            ));
        }
        let arrival = (offset - start) / options.load_factor;
        super::within_bound(
            arrival,
            "arrival (after the window and load factor)",
            &format!("{arrival}"),
        )
        .map_err(at)?;
        let vc = row.virtual_cluster;
        let user = *user_of.entry(vc.clone()).or_insert_with(|| {
            users.push(User::new(vc, 1.0).expect("weight 1 is valid"));
            users.len() - 1
        });
        jobs.push(Job {
            name: format!("line{line_no}"),
            user,
            arrival,
            estimates: vec![None; durations.len()],
            durations,
            width,
        });
    }
    Ok(Workload { users, jobs })
}

/// A job's run time on each flavor (`None` where it cannot run) from its
/// trace duration, drawing its job type or speedup from `rng`.
fn derive_durations(
    derivation: &Derivation<'_>,
    job_types: &[(String, f64)],
    names: &[&str],
    duration: f64,
    rng: &mut StdRng,
) -> Result<Vec<Option<f64>>, String> {
    Ok(match derivation {
        Derivation::GavelTypes(table) => {
            let (job_type, reference) = &job_types[rng.gen_range(0..job_types.len())];
            let steps = duration * reference;
            names
                .iter()
                .map(|w| table.steps_per_second(w, job_type, 1).map(|t| steps / t))
                .collect()
        }
        Derivation::AlloxSpeedups { mean, sd } => {
            let normal = Normal::new(*mean, *sd).map_err(|e| e.to_string())?;
            let (lo, hi) = SPEEDUP_BOUNDS;
            let mut speedup = normal.sample(rng);
            for _ in 0..1000 {
                if (lo..=hi).contains(&speedup) {
                    break;
                }
                speedup = normal.sample(rng);
            }
            let speedup = speedup.clamp(lo, hi);
            names
                .iter()
                .map(|&n| {
                    Some(if n == "gpu" {
                        duration
                    } else {
                        duration * speedup
                    })
                })
                .collect()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::gavel_format::parse_throughputs;
    use crate::model::Flavor;

    const TRACE: &str = "timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,100.0,1,100.0,vcA
2017-10-09 07:00:55,50.0,1,50.0,vcB
2017-10-09 07:03:55,10.0,2,20.0,vcA
2017-10-09 07:05:55,30.0,1,30.0,vcA
";

    fn cluster(names: &[&str]) -> Cluster {
        Cluster::new(
            names
                .iter()
                .map(|n| Flavor {
                    name: n.to_string(),
                    slots: 1,
                    per_node: 1,
                })
                .collect(),
        )
        .unwrap()
    }

    fn allox() -> PhillyOptions<'static> {
        PhillyOptions {
            derivation: Derivation::AlloxSpeedups {
                mean: 5.0,
                sd: 20.0,
            },
            seed: 1,
            window: (0.0, f64::INFINITY),
            max_jobs: None,
            load_factor: 1.0,
            multi_gpu: MultiGpu::Drop,
        }
    }

    #[test]
    fn jobs_are_sorted_by_time_and_users_are_virtual_clusters() {
        let t = parse("p.csv", TRACE, &cluster(&["gpu", "cpu"]), &allox()).unwrap();
        let w = &t.workload;
        assert_eq!(t.dropped_multi_gpu, 1);
        let arrivals: Vec<f64> = w.jobs.iter().map(|j| j.arrival).collect();
        assert_eq!(arrivals, vec![0.0, 60.0, 300.0]);
        assert_eq!(
            w.users.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(),
            ["vcB", "vcA"]
        );
        for j in &w.jobs {
            let (gpu, cpu) = (j.durations[0].unwrap(), j.durations[1].unwrap());
            let s = cpu / gpu;
            assert!((0.7..=60.0).contains(&s), "speedup {s}");
        }
        assert_eq!(w.jobs[0].durations[0], Some(50.0));
    }

    #[test]
    fn window_limit_and_load_factor() {
        let mut o = allox();
        o.window = (30.0, 400.0);
        o.load_factor = 2.0;
        let t = parse("p.csv", TRACE, &cluster(&["gpu", "cpu"]), &o).unwrap();
        let arrivals: Vec<f64> = t.workload.jobs.iter().map(|j| j.arrival).collect();
        assert_eq!(arrivals, vec![15.0, 135.0]);
        o.max_jobs = Some(1);
        let t = parse("p.csv", TRACE, &cluster(&["gpu", "cpu"]), &o).unwrap();
        assert_eq!(t.workload.jobs.len(), 1);
    }

    #[test]
    fn gavel_types_scale_the_v100_time_by_throughput() {
        let table = parse_throughputs(
            "t.json",
            r#"{"v100": {"('LM (batch size 10)', 1)": {"null": 10.0}},
                "k80": {"('LM (batch size 10)', 1)": {"null": 2.5}}}"#,
        )
        .unwrap();
        let mut o = allox();
        o.derivation = Derivation::GavelTypes(&table);
        let t = parse("p.csv", TRACE, &cluster(&["v100", "k80"]), &o).unwrap();
        // 50 s on a V100 is 500 steps; at 2.5 steps/s a K80 takes 200 s.
        assert_eq!(t.workload.jobs[0].durations, vec![Some(50.0), Some(200.0)]);
    }

    #[test]
    fn errors_name_the_line() {
        let c = cluster(&["gpu", "cpu"]);
        let mut o = allox();
        o.multi_gpu = MultiGpu::Refuse;
        let e = parse("p.csv", TRACE, &c, &o).unwrap_err().to_string();
        assert!(e.starts_with("p.csv:4: the job uses 2 GPUs"), "{e}");
        let bad = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-09 07:01:55,1,1,1,a\n";
        let e = parse("p.csv", bad, &c, &allox()).unwrap_err().to_string();
        assert!(e.starts_with("p.csv:2: timestamp"), "{e}");
        let bad = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,x,1,1,a\n";
        let e = parse("p.csv", bad, &c, &allox()).unwrap_err().to_string();
        assert!(e.starts_with("p.csv:2: duration"), "{e}");
        let e = parse("p.csv", "a,b\n", &c, &allox())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.csv:1: expected the header"), "{e}");
        let e = parse("p.csv", TRACE, &cluster(&["v100"]), &allox())
            .unwrap_err()
            .to_string();
        assert!(e.contains("gpu and cpu"), "{e}");
    }

    #[test]
    fn timestamps_are_seconds_since_the_epoch() {
        assert_eq!(parse_timestamp("1970-01-01 00:00:00"), Some(0.0));
        assert_eq!(
            parse_timestamp("2017-10-09 07:01:55"),
            Some(1_507_532_515.0)
        );
        assert_eq!(parse_timestamp("2017-10-09"), None);
    }
}
