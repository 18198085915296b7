//! Shortest remaining processing time, preemptive. Every job, running or
//! waiting, is ranked by the time it has left: a waiting job on its fastest
//! flavor, a running one on the flavor it runs on. Best first, each job
//! claims a slot of that flavor; a running job left without one is
//! preempted (it keeps the work done), and the waiting jobs that got one
//! start. Running jobs never migrate, and win ties, so equal jobs do not
//! swap back and forth.

use super::{
    best_flavor, outranked, start_in_order, PendingJob, Policy, PolicyError, Ranked, Start, View,
};
use crate::ordered::TotalF64;

/// Shortest remaining processing time; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct Srpt;

/// A waiting job's time left on its fastest flavor.
fn left(view: &View<'_>, job: &PendingJob) -> f64 {
    best_flavor(&job.estimates, view.flavors).map_or(f64::INFINITY, |b| b.1)
}

impl Policy for Srpt {
    fn label(&self) -> String {
        "srpt".into()
    }

    fn preempt(&mut self, view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        // (time left, running first, arrival, id) and the job's claim.
        type Key = (TotalF64, bool, TotalF64, usize);
        let mut ranked: Vec<(Key, Ranked)> = Vec::new();
        for job in view.running {
            let flavor = view.machines[job.machine].flavor;
            let end = job.started + job.estimates[flavor].unwrap_or(0.0);
            let key = (
                TotalF64((end - view.now).max(0.0)),
                false,
                TotalF64(f64::NEG_INFINITY),
                job.id,
            );
            ranked.push((key, Ranked::Running { id: job.id, flavor }));
        }
        for job in view.pending {
            if let Some((flavor, t)) = best_flavor(&job.estimates, view.flavors) {
                let key = (TotalF64(t), true, TotalF64(job.arrival), job.id);
                let slots = job.width.slots();
                ranked.push((key, Ranked::Pending { flavor, slots }));
            }
        }
        Ok(outranked(view, &ranked))
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let order: Vec<_> = view
            .pending
            .iter()
            .map(|j| ((TotalF64(left(view, j)), TotalF64(j.arrival), j.id), j))
            .collect();
        Ok(start_in_order(view, &order))
    }
}
