//! `fairmatch generate`: a seeded synthetic workload in the native format.
//!
//! - **Users.** `users` users, each with `jobs_per_user` jobs.
//! - **Durations.** A job's time on the first flavor (the reference, for
//!   example `gpu`) is log-uniform between `min_duration` and
//!   `max_duration`, rounded to whole seconds.
//! - **Speedups.** Each user draws a slowdown factor per other flavor,
//!   log-uniform between `min_slowdown` and `max_slowdown`. It is how many
//!   times longer that user's jobs take there (a factor below 1 means the
//!   other flavor is faster). Each job then varies around its user's factor
//!   by a log-normal spread (`spread`, sigma of the log).
//! - **Arrivals.** Poisson, at the rate that makes the offered load (each
//!   job's work on its fastest flavor, over the cluster's slots) equal to
//!   `load`. With `load` 0, every job arrives at 0.
//!
//! The same options and seed give the same file.

use crate::model::{Cluster, Job, User, Width, Workload};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use std::fmt::Write;

/// The knobs of a synthetic workload; see the module's description.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateOptions {
    /// Number of users.
    pub users: usize,
    /// Jobs each user submits.
    pub jobs_per_user: usize,
    /// Offered load: work arriving per second (each job's time on its fastest
    /// flavor) over the cluster's slots; 0 puts every arrival at 0.
    pub load: f64,
    /// Shortest run time on the first flavor, in seconds.
    pub min_duration: f64,
    /// Longest run time on the first flavor, in seconds.
    pub max_duration: f64,
    /// Smallest per-user slowdown factor on the other flavors.
    pub min_slowdown: f64,
    /// Largest per-user slowdown factor on the other flavors.
    pub max_slowdown: f64,
    /// Sigma of the log-normal variation of each job around its user's factor.
    pub spread: f64,
    /// Seed of every random draw.
    pub seed: u64,
}

/// Checks the options; the message names the option at fault.
pub fn check(o: &GenerateOptions, cluster: &Cluster) -> Result<(), String> {
    let positive = |v: f64, name: &str| {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(format!("{name} must be a finite number > 0, not {v}"))
        }
    };
    if o.users == 0 || o.jobs_per_user == 0 {
        return Err("--users and --jobs-per-user must be at least 1".into());
    }
    if !(o.load.is_finite() && o.load >= 0.0) {
        return Err(format!(
            "--load must be a finite number >= 0, not {}",
            o.load
        ));
    }
    positive(o.min_duration, "--min-duration")?;
    positive(o.min_slowdown, "--min-slowdown")?;
    if !(o.max_duration >= o.min_duration && o.max_duration <= crate::model::MAX_SECONDS / 1e3) {
        return Err("--max-duration must be >= --min-duration and at most 1e7 s".into());
    }
    if !(o.max_slowdown >= o.min_slowdown && o.max_slowdown <= 1e3) {
        return Err("--max-slowdown must be >= --min-slowdown and at most 1000".into());
    }
    if !(o.spread.is_finite() && (0.0..=2.0).contains(&o.spread)) {
        return Err("--spread must be from 0 to 2".into());
    }
    if cluster.flavors.iter().all(|f| f.slots == 0) {
        return Err("the cluster has no slots".into());
    }
    Ok(())
}

fn log_uniform(rng: &mut StdRng, lo: f64, hi: f64) -> f64 {
    if hi <= lo {
        lo
    } else {
        rng.gen_range(lo.ln()..hi.ln()).exp()
    }
}

/// The workload; call [`check`] first.
pub fn workload(o: &GenerateOptions, cluster: &Cluster) -> Workload {
    let mut rng = StdRng::seed_from_u64(o.seed);
    let flavors = cluster.flavors.len();
    let factors: Vec<Vec<f64>> = (0..o.users)
        .map(|_| {
            (0..flavors)
                .map(|f| {
                    if f == 0 {
                        1.0
                    } else {
                        log_uniform(&mut rng, o.min_slowdown, o.max_slowdown)
                    }
                })
                .collect()
        })
        .collect();
    let noise = Normal::new(0.0, o.spread).expect("checked spread");
    let n = o.users * o.jobs_per_user;
    let mut jobs = Vec::with_capacity(n);
    for i in 0..n {
        // Users take turns, so every prefix of the file is mixed.
        let user = i % o.users;
        let base = log_uniform(&mut rng, o.min_duration, o.max_duration);
        let durations: Vec<Option<f64>> = (0..flavors)
            .map(|f| {
                let t = if f == 0 {
                    base
                } else {
                    base * factors[user][f] * noise.sample(&mut rng).exp()
                };
                Some(t.round().max(1.0))
            })
            .collect();
        jobs.push(Job {
            name: format!("g{i}"),
            user,
            arrival: 0.0,
            estimates: vec![None; flavors],
            durations,
            width: Width::ONE,
        });
    }
    if o.load > 0.0 {
        let fastest = |j: &Job| {
            j.durations
                .iter()
                .zip(&cluster.flavors)
                .filter(|(_, f)| f.slots > 0)
                .filter_map(|(d, _)| *d)
                .fold(f64::INFINITY, f64::min)
        };
        let mean: f64 = jobs.iter().map(fastest).sum::<f64>() / n as f64;
        let slots: usize = cluster.flavors.iter().map(|f| f.slots).sum();
        let rate = o.load * slots as f64 / mean;
        let mut t = 0.0;
        for job in &mut jobs {
            job.arrival = (t * 1000.0_f64).round() / 1000.0;
            t += -(1.0 - rng.gen::<f64>()).ln() / rate;
        }
    }
    let users = (0..o.users)
        .map(|u| User::new(format!("user{u}"), 1.0).expect("weight 1 is valid"))
        .collect();
    Workload { users, jobs }
}

/// The native CSV: `job_id,user,arrival,duration_<flavor>...`.
pub fn to_csv(workload: &Workload, cluster: &Cluster) -> String {
    let mut out = String::from("job_id,user,arrival");
    for f in &cluster.flavors {
        let _ = write!(out, ",duration_{}", f.name);
    }
    out.push('\n');
    for job in &workload.jobs {
        let _ = write!(
            out,
            "{},{},{}",
            job.name, workload.users[job.user].name, job.arrival
        );
        for d in &job.durations {
            match d {
                Some(d) => {
                    let _ = write!(out, ",{d}");
                }
                None => out.push(','),
            }
        }
        out.push('\n');
    }
    out
}

/// The cluster file for `cluster`.
pub fn cluster_yaml(cluster: &Cluster) -> String {
    let mut out = String::from("flavors:\n");
    for f in &cluster.flavors {
        let _ = writeln!(out, "  - {{name: {}, slots: {}}}", f.name, f.slots);
    }
    out
}
