//! Finish-time fairness (Themis, Mahajan et al., NSDI 2020), in Gavel's
//! round framework ([`super::rounds`]), preemptive.
//!
//! A job's rho is its expected finish time, counted from its arrival, over
//! the time it would take alone on a `1/N` share of the cluster
//! ([`crate::metrics::isolated_time`], `N` the active jobs, each a
//! contending app as in Themis):
//!
//!   rho_j(x) = (elapsed_j + left_j / throughput_j(x)) / isolated_j
//!
//! Each round minimises the largest rho. For a fixed target `rho` the
//! condition is linear, `throughput_j(x) >= left_j / (rho * isolated_j -
//! elapsed_j)`, so the round bisects on `rho`, asking the max-min LP of
//! [`super::max_min::max_min`] whether every job can meet it. The bisection
//! stops within 1% of the best `rho`.

use super::max_min::max_min_sized;
use super::rounds::{ActiveJob, Allocator, RoundBased, ROUND_SECONDS};
use super::PolicyError;
use crate::metrics::isolated_time;
use crate::model::Flavor;

/// The finish-time-fairness allocator.
#[derive(Clone, Debug, Default)]
pub struct FinishTimeFairness;

/// Finish-time fairness, reallocated every round.
pub type Ftf = RoundBased<FinishTimeFairness>;

impl Ftf {
    /// Finish-time fairness with rounds of `round` seconds.
    pub fn new(round: f64) -> Self {
        RoundBased::with(FinishTimeFairness, round)
    }
}

impl Default for Ftf {
    fn default() -> Self {
        Ftf::new(ROUND_SECONDS)
    }
}

/// The shares that keep every job's rho at most `rho`, if any.
fn meets(
    rho: f64,
    now: f64,
    jobs: &[ActiveJob],
    isolated: &[f64],
    flavors: &[Flavor],
) -> Result<Option<Vec<Vec<f64>>>, PolicyError> {
    let mut need = Vec::with_capacity(jobs.len());
    for (job, iso) in jobs.iter().zip(isolated) {
        let window = rho * iso - (now - job.arrival);
        if window <= 0.0 {
            return Ok(None);
        }
        // The left work is 1 in units of `left`, so the throughput needed
        // is one over the time it has.
        need.push(1.0 / window);
    }
    let times: Vec<Vec<Option<f64>>> = jobs.iter().map(|j| j.left.clone()).collect();
    let sizes: Vec<f64> = jobs.iter().map(|j| j.slots as f64).collect();
    let a = max_min_sized(&times, flavors, &need, &sizes)?;
    Ok((a.level >= 1.0 - 1e-9).then_some(a.shares))
}

impl Allocator for FinishTimeFairness {
    fn label(&self) -> String {
        "ftf".into()
    }

    fn allocate(
        &self,
        now: f64,
        jobs: &[ActiveJob],
        flavors: &[Flavor],
    ) -> Result<Vec<Vec<f64>>, PolicyError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let slots: Vec<usize> = flavors.iter().map(|f| f.slots).collect();
        let isolated: Vec<f64> = jobs
            .iter()
            .map(|j| isolated_time(&j.full, &slots, jobs.len()).max(1e-9))
            .collect();
        // No job can beat a whole slot of its best flavor from now on.
        let mut low = jobs
            .iter()
            .zip(&isolated)
            .map(|(j, iso)| {
                let best = j
                    .left
                    .iter()
                    .zip(flavors)
                    .filter(|(_, f)| f.slots > 0)
                    .filter_map(|(p, _)| *p)
                    .fold(f64::INFINITY, f64::min);
                (now - j.arrival + best) / iso
            })
            .fold(0.0, f64::max);
        let mut high = low.max(1e-9);
        let mut best = None;
        for _ in 0..60 {
            if let Some(shares) = meets(high, now, jobs, &isolated, flavors)? {
                best = Some(shares);
                break;
            }
            low = high;
            high *= 2.0;
        }
        let Some(mut best) = best else {
            return Err(PolicyError::Parameter(
                "ftf: no allocation meets any finish-time target".into(),
            ));
        };
        while high - low > 0.01 * high {
            let mid = 0.5 * (low + high);
            match meets(mid, now, jobs, &isolated, flavors)? {
                Some(shares) => {
                    high = mid;
                    best = shares;
                }
                None => low = mid,
            }
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: usize, arrival: f64, times: [Option<f64>; 2]) -> ActiveJob {
        ActiveJob {
            id,
            left: times.to_vec(),
            full: times.to_vec(),
            arrival,
            slots: 1,
        }
    }

    #[test]
    fn the_job_that_waited_longest_gets_the_fast_flavor() {
        // One GPU, one CPU; both jobs take 100 s on the GPU and 400 s on
        // the CPU. Job 0 has waited 300 s, job 1 has just arrived. Isolated
        // (half a GPU or half a CPU each): 200 s. Job 0 on the GPU ends at
        // rho (300 + 100) / 200 = 2, and job 1 on the CPU at 400 / 200 = 2;
        // the other way round, job 0 would reach (300 + 400) / 200 = 3.5.
        let flavors = vec![
            Flavor {
                name: "gpu".into(),
                slots: 1,
                per_node: 1,
            },
            Flavor {
                name: "cpu".into(),
                slots: 1,
                per_node: 1,
            },
        ];
        let jobs = [
            job(0, 0.0, [Some(100.0), Some(400.0)]),
            job(1, 300.0, [Some(100.0), Some(400.0)]),
        ];
        let x = FinishTimeFairness.allocate(300.0, &jobs, &flavors).unwrap();
        assert!(x[0][0] > 0.9 && x[1][1] > 0.9, "{x:?}");
    }
}
