//! Gavel's traces (OSDI 2020, stanford-futuredata/gavel) with its table of
//! measured throughputs.
//!
//! A trace line is one job, tab-separated, in one of two layouts:
//! - current, 10 fields: `job_type, command, working_directory,
//!   num_steps_arg, needs_data_dir, total_steps, scale_factor,
//!   priority_weight, SLO, arrival_time`;
//! - older (the Philly-derived `msr` traces), 7 fields: `job_type, command,
//!   num_steps_arg, needs_data_dir, total_steps, arrival_time,
//!   scale_factor`.
//!
//! The throughput table (`simulation_throughputs.json`) maps each worker
//! type to job keys `"('<job_type>', <scale_factor>)"`, each holding the
//! isolated steps per second under `"null"`. A job's run time on a flavor
//! is `total_steps / steps_per_second` on the worker type of that name; a
//! flavor the table has no figure for, or a figure of 0 (the job does not
//! fit that GPU), is one the job cannot use.
//!
//! Gavel's traces have no users: jobs are dealt to `users` users
//! round-robin in trace order, or at random from a seed. A job on more than
//! one GPU (scale factor above 1) is a gang of that many slots
//! ([`super::gang_width`]), timed by the table's figure at its scale factor,
//! unless the caller drops or refuses such jobs.

use super::{InputError, MultiGpu};
use crate::model::{Cluster, Job, User, Workload};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

/// Isolated steps per second, per `(job type, scale factor)`, per worker
/// type.
#[derive(Clone, Debug, Default)]
pub struct Throughputs {
    by_worker: HashMap<String, HashMap<(String, u32), f64>>,
}

impl Throughputs {
    /// The worker types the table has figures for, sorted.
    pub fn worker_types(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.by_worker.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The job types on one GPU that run on `worker`, with their steps per
    /// second there, sorted by name.
    pub fn single_gpu_types(&self, worker: &str) -> Vec<(String, f64)> {
        let mut types: Vec<(String, f64)> = self
            .by_worker
            .get(worker)
            .map(|t| {
                t.iter()
                    .filter(|((_, scale), _)| *scale == 1)
                    .map(|((name, _), &tput)| (name.clone(), tput))
                    .collect()
            })
            .unwrap_or_default();
        types.sort_by(|a, b| a.0.cmp(&b.0));
        types
    }

    /// Isolated steps per second of `job_type` on `scale` GPUs of `worker`, if
    /// the table has a figure above 0.
    pub fn steps_per_second(&self, worker: &str, job_type: &str, scale: u32) -> Option<f64> {
        self.by_worker
            .get(worker)?
            .get(&(job_type.to_string(), scale))
            .copied()
    }

    fn knows(&self, job_type: &str, scale: u32) -> bool {
        self.by_worker
            .values()
            .any(|t| t.contains_key(&(job_type.to_string(), scale)))
    }
}

/// Reads `simulation_throughputs.json`.
pub fn parse_throughputs(file: &str, text: &str) -> Result<Throughputs, InputError> {
    let err = |m: String| InputError::at(file, None, m);
    let doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| InputError::at(file, Some(e.line()), format!("not JSON: {e}")))?;
    let workers = doc
        .as_object()
        .ok_or_else(|| err("expected an object of worker types".into()))?;
    let mut by_worker = HashMap::new();
    for (worker, jobs) in workers {
        let jobs = jobs.as_object().ok_or_else(|| {
            err(format!(
                "worker type '{worker}': expected an object of job keys"
            ))
        })?;
        let mut table = HashMap::new();
        for (key, entry) in jobs {
            let (job_type, scale) = parse_job_key(key)
                .ok_or_else(|| err(format!("worker type '{worker}': bad job key {key:?}; expected \"('<job type>', <scale factor>)\"")))?;
            let Some(isolated) = entry.get("null") else {
                continue;
            };
            let tput = isolated.as_f64().filter(|t| t.is_finite() && *t >= 0.0).ok_or_else(|| {
                err(format!(
                    "worker type '{worker}', job {key}: isolated throughput {isolated} is not a number >= 0"
                ))
            })?;
            // Gavel's table gives 0 where the job cannot run on that worker
            // (it does not fit): a flavor the job may not use.
            if tput > 0.0 {
                table.insert((job_type, scale), tput);
            }
        }
        by_worker.insert(worker.clone(), table);
    }
    Ok(Throughputs { by_worker })
}

/// `"('ResNet-18 (batch size 16)', 1)"` -> `("ResNet-18 (batch size 16)", 1)`.
fn parse_job_key(key: &str) -> Option<(String, u32)> {
    let inner = key.trim().strip_prefix("('")?.strip_suffix(')')?;
    let (job_type, scale) = inner.rsplit_once("',")?;
    Some((job_type.to_string(), scale.trim().parse().ok()?))
}

/// How jobs get users.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserAssignment {
    /// Job `i` of the trace (after drops) goes to user `i mod users`.
    RoundRobin,
    /// Each job goes to a user drawn uniformly.
    Random {
        /// Seed of the draws.
        seed: u64,
    },
}

/// How to read a Gavel trace.
#[derive(Clone, Debug, PartialEq)]
pub struct GavelOptions {
    /// How many users to deal the jobs to (at least 1).
    pub users: usize,
    /// How jobs are dealt to users.
    pub assignment: UserAssignment,
    /// What to do with jobs of a scale factor above 1.
    pub multi_gpu: MultiGpu,
}

/// A parsed trace, and how many multi-GPU jobs were dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct GavelTrace {
    /// The jobs, with users `user0`, `user1`, ...
    pub workload: Workload,
    /// Multi-GPU jobs left out.
    pub dropped_multi_gpu: usize,
}

/// Reads a trace against the throughput table; errors name the line.
pub fn parse(
    file: &str,
    text: &str,
    throughputs: &Throughputs,
    cluster: &Cluster,
    options: &GavelOptions,
) -> Result<GavelTrace, InputError> {
    if options.users == 0 {
        return Err(InputError::at(file, None, "--users must be at least 1"));
    }
    check_flavors(file, throughputs, cluster)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rng = match options.assignment {
        UserAssignment::Random { seed } => Some(StdRng::seed_from_u64(seed)),
        UserAssignment::RoundRobin => None,
    };
    let mut jobs = Vec::new();
    let mut dropped = 0;
    let mut last_arrival = 0.0;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let at = |m: String| InputError::at(file, Some(line_no), m);
        let line = read_line(line, last_arrival).map_err(at)?;
        // A dropped line still sets the time the next one may not precede.
        last_arrival = line.arrival;
        if line.scale > 1 {
            match options.multi_gpu {
                MultiGpu::Keep => {}
                MultiGpu::Drop => {
                    dropped += 1;
                    continue;
                }
                MultiGpu::Refuse => {
                    return Err(at(format!(
                        "job '{}' uses {} GPUs (--multi-gpu keep runs it as a gang, drop skips it)",
                        line.job_type, line.scale
                    )))
                }
            }
        }
        let width = super::gang_width(line.scale as usize, cluster);
        let durations = run_times(&line, throughputs, cluster).map_err(at)?;
        if cluster
            .fitting(&durations, width)
            .iter()
            .all(Option::is_none)
        {
            return Err(at(format!(
                "job '{}' on {} GPUs fits no flavor it has a throughput on (nodes of {} slots)",
                line.job_type, line.scale, width
            )));
        }
        let user = match rng.as_mut() {
            Some(rng) => rng.gen_range(0..options.users),
            None => jobs.len() % options.users,
        };
        jobs.push(Job {
            name: format!("line{line_no}"),
            user,
            arrival: line.arrival,
            estimates: vec![None; durations.len()],
            durations,
            width,
        });
    }
    let users = (0..options.users)
        .map(|u| User::new(format!("user{u}"), 1.0).expect("weight 1 is valid"))
        .collect();
    Ok(GavelTrace {
        workload: Workload { users, jobs },
        dropped_multi_gpu: dropped,
    })
}

/// Refuses a cluster with a flavor the throughput table does not name.
fn check_flavors(
    file: &str,
    throughputs: &Throughputs,
    cluster: &Cluster,
) -> Result<(), InputError> {
    let known = throughputs.worker_types();
    for f in &cluster.flavors {
        if !known.contains(&f.name.as_str()) {
            return Err(InputError::at(
                file,
                None,
                format!(
                    "the cluster's flavor '{}' is not a worker type of the throughput table ({})",
                    f.name,
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The fields of one trace line that the workload uses.
struct TraceLine<'a> {
    job_type: &'a str,
    total_steps: f64,
    /// GPUs the job uses (at least 1).
    scale: u32,
    /// Seconds from the trace's start.
    arrival: f64,
}

/// One non-blank line, checked against the arrival of the line before.
/// Errors are the message only, for the caller to place at the line.
fn read_line(line: &str, last_arrival: f64) -> Result<TraceLine<'_>, String> {
    let f: Vec<&str> = line.split('\t').collect();
    let (job_type, steps, scale, arrival) = match f.len() {
        10 => (f[0], f[5], f[6], f[9]),
        7 => (f[0], f[4], f[6], f[5]),
        n => {
            return Err(format!(
                "expected 10 tab-separated fields (Gavel's format) or 7 (its older msr format), found {n}"
            ))
        }
    };
    let number = |text: &str, what: &str| -> Result<f64, String> {
        let v: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("{what} '{text}' is not a number"))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(format!("{what} '{text}' must be a finite number >= 0"))
        }
    };
    let total_steps = number(steps, "total_steps")?;
    let scale_value = number(scale, "scale_factor")?;
    let arrival = super::within_bound(number(arrival, "arrival_time")?, "arrival_time", arrival)?;
    if arrival < last_arrival {
        return Err(format!(
            "arrival_time {arrival} goes back in time (the line before arrives at {last_arrival})"
        ));
    }
    if scale_value.fract() != 0.0 || scale_value < 1.0 {
        return Err(format!(
            "scale_factor '{scale}' must be a whole number >= 1"
        ));
    }
    Ok(TraceLine {
        job_type,
        total_steps,
        scale: scale_value as u32,
        arrival,
    })
}

/// The line's run time on each of the cluster's flavors, `None` where the
/// table has no throughput for its job type.
fn run_times(
    line: &TraceLine<'_>,
    throughputs: &Throughputs,
    cluster: &Cluster,
) -> Result<Vec<Option<f64>>, String> {
    let TraceLine {
        job_type,
        total_steps,
        scale,
        ..
    } = *line;
    // A job type the table has no figure for at the job's scale factor
    // (A3C, CycleGAN and Recommendation have none above 1) is timed at its
    // single-GPU figure: its gang is taken to run no faster than one GPU.
    let scale = if scale > 1 && !throughputs.knows(job_type, scale) {
        1
    } else {
        scale
    };
    if !throughputs.knows(job_type, scale) {
        return Err(format!(
            "job type '{job_type}' (scale factor {scale}) is not in the throughput table"
        ));
    }
    let durations: Vec<Option<f64>> = cluster
        .flavors
        .iter()
        .map(|flavor| {
            throughputs
                .steps_per_second(&flavor.name, job_type, scale)
                .map(|tput| total_steps / tput)
        })
        .collect();
    for d in durations.iter().flatten() {
        super::within_bound(*d, "run time (total_steps / throughput)", &format!("{d}"))?;
    }
    if !durations.iter().any(Option::is_some) {
        return Err(format!(
            "job type '{job_type}' has no throughput on any of the cluster's flavors"
        ));
    }
    Ok(durations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flavor;

    const TABLE: &str = r#"{
        "v100": {"('LM (batch size 10)', 1)": {"null": 10.0, "('x', 1)": [1, 2]},
                 "('LM (batch size 10)', 2)": {"null": 18.0}},
        "k80": {"('LM (batch size 10)', 1)": {"null": 2.5}, "('A3C', 1)": {"null": 0.0}}
    }"#;

    fn cluster() -> Cluster {
        Cluster::new(vec![
            Flavor {
                name: "v100".into(),
                slots: 2,
                per_node: 1,
            },
            Flavor {
                name: "k80".into(),
                slots: 2,
                per_node: 1,
            },
        ])
        .unwrap()
    }

    fn options() -> GavelOptions {
        GavelOptions {
            users: 2,
            assignment: UserAssignment::RoundRobin,
            multi_gpu: MultiGpu::Refuse,
        }
    }

    fn line10(steps: &str, scale: &str, arrival: &str) -> String {
        format!("LM (batch size 10)\tpython main.py\tlm\t--steps\t1\t{steps}\t{scale}\t1\t-1.0\t{arrival}\n")
    }

    #[test]
    fn run_times_are_steps_over_throughput_and_users_take_turns() {
        let t = parse_throughputs("t.json", TABLE).unwrap();
        let trace = line10("1000", "1", "0") + &line10("500", "1", "3.5")
            // The older 7-field layout: type, command, steps arg, data dir,
            // total_steps, arrival, scale.
            + "LM (batch size 10)\tpython main.py\t--steps\t1\t100\t7\t1\n";
        let w = parse("t.trace", &trace, &t, &cluster(), &options()).unwrap();
        let jobs = &w.workload.jobs;
        assert_eq!(jobs[0].durations, vec![Some(100.0), Some(400.0)]);
        assert_eq!(jobs[1].durations, vec![Some(50.0), Some(200.0)]);
        assert_eq!((jobs[2].arrival, jobs[2].durations[0]), (7.0, Some(10.0)));
        let users: Vec<usize> = jobs.iter().map(|j| j.user).collect();
        assert_eq!(users, vec![0, 1, 0]);
    }

    #[test]
    fn errors_name_the_line() {
        let t = parse_throughputs("t.json", TABLE).unwrap();
        let c = cluster();
        let err = |trace: &str, o: &GavelOptions| {
            parse("t.trace", trace, &t, &c, o).unwrap_err().to_string()
        };
        assert!(err("a\tb\n", &options()).starts_with("t.trace:1: expected 10 tab-separated"));
        let two = line10("1", "1", "5") + &line10("1", "1", "4");
        assert!(err(&two, &options()).starts_with("t.trace:2: arrival_time 4 goes back"));
        assert!(err(&line10("x", "1", "0"), &options()).contains("total_steps 'x' is not a number"));
        let multi = line10("1", "1", "0") + &line10("1", "2", "1");
        assert!(
            err(&multi, &options()).starts_with("t.trace:2: job 'LM (batch size 10)' uses 2 GPUs")
        );
        let unknown = "Nope (batch size 1)\tc\td\t-n\t1\t5\t1\t1\t-1\t0\n";
        assert!(err(unknown, &options()).contains("not in the throughput table"));
        // A throughput of 0 means the job does not fit that worker type;
        // with no other, the job can run nowhere.
        let a3c = "A3C\tc\td\t-n\t1\t5\t1\t1\t-1\t0\n";
        assert!(err(a3c, &options()).contains("not in the throughput table"));
        let mut o = options();
        o.users = 0;
        assert!(err(&line10("1", "1", "0"), &o).contains("--users"));
    }

    #[test]
    fn multi_gpu_jobs_can_be_dropped_and_counted() {
        let t = parse_throughputs("t.json", TABLE).unwrap();
        let multi = line10("1", "1", "0") + &line10("1", "2", "1") + &line10("1", "1", "2");
        let mut o = options();
        o.multi_gpu = MultiGpu::Drop;
        let w = parse("t.trace", &multi, &t, &cluster(), &o).unwrap();
        assert_eq!((w.workload.jobs.len(), w.dropped_multi_gpu), (2, 1));
    }

    #[test]
    fn random_users_follow_the_seed() {
        let t = parse_throughputs("t.json", TABLE).unwrap();
        let trace: String = (0..50).map(|i| line10("1", "1", &i.to_string())).collect();
        let with = |seed| {
            let o = GavelOptions {
                users: 3,
                assignment: UserAssignment::Random { seed },
                multi_gpu: MultiGpu::Refuse,
            };
            let w = parse("t.trace", &trace, &t, &cluster(), &o).unwrap();
            w.workload.jobs.iter().map(|j| j.user).collect::<Vec<_>>()
        };
        assert_eq!(with(1), with(1));
        assert_ne!(with(1), with(2));
        assert!((0..3).all(|u| with(1).contains(&u)));
    }

    #[test]
    fn bad_tables_and_flavors_are_errors() {
        assert!(parse_throughputs("t.json", "[1]")
            .unwrap_err()
            .to_string()
            .contains("worker types"));
        assert!(parse_throughputs("t.json", "{")
            .unwrap_err()
            .to_string()
            .starts_with("t.json:1: not JSON"));
        let t = parse_throughputs("t.json", TABLE).unwrap();
        let c = Cluster::new(vec![Flavor {
            name: "a100".into(),
            slots: 1,
            per_node: 1,
        }])
        .unwrap();
        let e = parse("t.trace", "", &t, &c, &options())
            .unwrap_err()
            .to_string();
        assert!(e.contains("'a100' is not a worker type"), "{e}");
    }
}
