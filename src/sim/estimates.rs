//! What the scheduler is told about run times.

use crate::metrics::JobOutcome;
use crate::model::{Scenario, Workload, MAX_SECONDS};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

/// A noisy estimate is never below this fraction of the truth, so a large
/// sigma cannot produce zero or negative run times.
pub const ESTIMATE_FLOOR: f64 = 0.01;

/// Where the run times a policy is told come from.
#[derive(Clone, Debug, PartialEq)]
pub enum EstimateSource {
    /// The input's estimate columns; the true duration where a cell is
    /// empty.
    Input,
    /// `true * max(1 + e, ESTIMATE_FLOOR)` with `e ~ Normal(0, sigma)`, at
    /// most `MAX_SECONDS`,
    /// drawn per job and flavor from a generator seeded with `seed`, in
    /// workload order. Sigma 0 gives exact estimates.
    RelativeError {
        /// Standard deviation of the relative error.
        sigma: f64,
        /// Seed of the error generator.
        seed: u64,
    },
    /// As the plugin learns them, with no hint and no time limit: when a
    /// job arrives and again at every decision while it waits, the
    /// history of the jobs finished so far (keyed by user, [`kind`] and
    /// flavor; `slurm::history::History::estimates`), `default` seconds
    /// where it knows nothing of the user, and at least the time the job's longest run
    /// in flight on a flavor has run there (`slurm::history::in_flight`).
    Learned {
        /// Seconds, when nothing is known of the user (the plugin's
        /// `DefaultRuntime`).
        default: f64,
        /// Runs learned before the first arrival, in the order they ended:
        /// what the plugin reads from slurmdbd at its first start
        /// (`LearnFromAccounting`). Empty to learn from nothing.
        past: Vec<PastRun>,
    },
}

/// A run that ended before the simulation starts, as accounting
/// records it.
#[derive(Clone, Debug, PartialEq)]
pub struct PastRun {
    /// The user's name.
    pub user: String,
    /// The job it was a run of ([`kind`] of its id).
    pub job: String,
    /// The flavor's name.
    pub flavor: String,
    /// Its run time there, in seconds.
    pub seconds: f64,
}

/// The runs of `outcomes`, a simulation of `scenario`, in the order they
/// ended: what a site's accounting holds of that period.
pub fn past_runs(scenario: &Scenario, outcomes: &[JobOutcome]) -> Vec<PastRun> {
    let mut runs: Vec<(f64, PastRun)> = outcomes
        .iter()
        .zip(&scenario.workload.jobs)
        .filter_map(|(o, job)| {
            Some((
                o.finish,
                PastRun {
                    user: scenario.workload.users[job.user].name.clone(),
                    job: kind(&job.name).to_string(),
                    flavor: scenario.cluster.flavors[o.flavor].name.clone(),
                    seconds: job.durations[o.flavor]?,
                },
            ))
        })
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    runs.into_iter().map(|(_, r)| r).collect()
}

/// The job a run belongs to, for learned estimates: its id without a
/// trailing `-N` (`train-17` is a run of `train`); the id itself otherwise.
pub fn kind(id: &str) -> &str {
    match id.rsplit_once('-') {
        Some((kind, n))
            if !kind.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            kind
        }
        _ => id,
    }
}

impl EstimateSource {
    /// Estimates per job and flavor; `None` exactly where the job cannot run.
    pub fn resolve(&self, workload: &Workload) -> Vec<Vec<Option<f64>>> {
        match *self {
            // Learned estimates start as the input's, for the flavors a
            // job may use; the simulator replaces them on arrival.
            EstimateSource::Input | EstimateSource::Learned { .. } => workload
                .jobs
                .iter()
                .map(|job| {
                    job.durations
                        .iter()
                        .zip(&job.estimates)
                        .map(|(d, e)| d.map(|d| e.unwrap_or(d)))
                        .collect()
                })
                .collect(),
            EstimateSource::RelativeError { sigma, seed } => {
                let mut rng = StdRng::seed_from_u64(seed);
                let noise = Normal::new(0.0, sigma.max(0.0)).expect("sigma is finite");
                workload
                    .jobs
                    .iter()
                    .map(|job| {
                        job.durations
                            .iter()
                            .map(|d| {
                                d.map(|d| {
                                    let e: f64 = noise.sample(&mut rng);
                                    (d * (1.0 + e).max(ESTIMATE_FLOOR)).min(MAX_SECONDS)
                                })
                            })
                            .collect()
                    })
                    .collect()
            }
        }
    }
}
