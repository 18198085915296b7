//! Gavel's heterogeneity-aware max-min fairness (Narayanan et al., OSDI
//! 2020), round-based and preemptive ([`super::rounds`]).
//!
//! Each round's LP maximises the smallest normalised effective throughput:
//! a job's throughput under the allocation over its throughput on an equal
//! time share, `slots[f] / S` of every flavor where `S` sums the active
//! jobs' scale factors (their slots; `n` for `n` one-slot jobs), scaled
//! down to at most all of the time. A job of scale factor `s` holds `s`
//! slots for its share of time, as in Gavel's LP. Every job counts once,
//! with weight 1: Gavel's max-min is per job.

use super::max_min::{max_min_sized, throughput, Allocation};
use super::rounds::{ActiveJob, Allocator, RoundBased, ROUND_SECONDS};
use super::PolicyError;
use crate::model::Flavor;

/// The max-min allocator.
#[derive(Clone, Debug, Default)]
pub struct MaxMin;

/// Gavel's max-min fairness, reallocated every round.
pub type GavelMaxMin = RoundBased<MaxMin>;

impl GavelMaxMin {
    /// Gavel's max-min fairness with rounds of `round` seconds.
    pub fn new(round: f64) -> Self {
        RoundBased::with(MaxMin, round)
    }
}

impl Default for GavelMaxMin {
    fn default() -> Self {
        GavelMaxMin::new(ROUND_SECONDS)
    }
}

/// The max-min LP for jobs with run times `times[j][f]` on `flavors`.
/// `sizes[j]` is job `j`'s slots (empty: 1 each).
pub fn allocation(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    sizes: &[f64],
) -> Result<Allocation, PolicyError> {
    let n = if sizes.is_empty() {
        times.len() as f64
    } else {
        sizes.iter().sum()
    }
    .max(1.0);
    let total: f64 = flavors.iter().map(|f| f.slots as f64).sum();
    let scale = (total / n).max(1.0);
    let equal_share: Vec<f64> = times
        .iter()
        .map(|row| {
            row.iter()
                .zip(flavors)
                .filter_map(|(p, f)| p.map(|p| f.slots as f64 / n / scale * throughput(p)))
                .sum()
        })
        .collect();
    max_min_sized(times, flavors, &equal_share, sizes)
}

impl Allocator for MaxMin {
    fn label(&self) -> String {
        "gavel-maxmin".into()
    }

    fn allocate(
        &self,
        _now: f64,
        jobs: &[ActiveJob],
        flavors: &[Flavor],
    ) -> Result<Vec<Vec<f64>>, PolicyError> {
        let times: Vec<Vec<Option<f64>>> = jobs.iter().map(|j| j.left.clone()).collect();
        let sizes: Vec<f64> = jobs.iter().map(|j| j.slots as f64).collect();
        Ok(allocation(&times, flavors, &sizes)?.shares)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flavors(gpus: usize, cpus: usize) -> Vec<Flavor> {
        vec![
            Flavor {
                name: "gpu".into(),
                slots: gpus,
                per_node: 1,
            },
            Flavor {
                name: "cpu".into(),
                slots: cpus,
                per_node: 1,
            },
        ]
    }

    #[test]
    fn the_lp_equalises_normalised_throughput_where_flavors_differ() {
        // One GPU, one CPU. Job A is 4x faster on the GPU; job B 2x faster
        // on the CPU. An equal share gives each 1/2 of both: A gets
        // throughput 0.625, B 0.75. A alone on the GPU (1/0.625 = 1.6) and B
        // alone on the CPU (1/0.75 = 4/3) is better for both, and B can do
        // no better than its whole CPU, so the max-min level is exactly 4/3.
        let times = vec![vec![Some(1.0), Some(4.0)], vec![Some(2.0), Some(1.0)]];
        let a = allocation(&times, &flavors(1, 1), &[]).unwrap();
        assert!((a.level - 4.0 / 3.0).abs() < 1e-6, "{a:?}");
        assert!(
            (a.shares[1][1] - 1.0).abs() < 1e-6,
            "B holds the CPU: {a:?}"
        );
        let normalised_a = (a.shares[0][0] + 0.25 * a.shares[0][1]) / 0.625;
        assert!(normalised_a >= 4.0 / 3.0 - 1e-6, "{a:?}");
    }

    #[test]
    fn identical_jobs_share_equally() {
        // Three identical jobs, two GPUs: each gets 2/3 of a GPU.
        let times = vec![vec![Some(10.0), None]; 3];
        let a = allocation(&times, &flavors(2, 0), &[]).unwrap();
        for row in &a.shares {
            assert!((row[0] - 2.0 / 3.0).abs() < 1e-6, "{a:?}");
        }
        assert!((a.level - 1.0).abs() < 1e-6);
    }
}
