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
        let mut ranked: Vec<((f64, bool, f64, usize), Ranked)> = Vec::new();
        for job in view.running {
            let flavor = view.machines[job.machine].flavor;
            let end = job.started + job.estimates[flavor].unwrap_or(0.0);
            let key = ((end - view.now).max(0.0), false, f64::NEG_INFINITY, job.id);
            ranked.push((key, Ranked::Running { id: job.id, flavor }));
        }
        for job in view.pending {
            if let Some((flavor, t)) = best_flavor(&job.estimates, view.flavors) {
                ranked.push(((t, true, job.arrival, job.id), Ranked::Pending { flavor }));
            }
        }
        ranked.sort_by(|(a, _), (b, _)| {
            a.0.total_cmp(&b.0)
                .then(a.1.cmp(&b.1))
                .then(a.2.total_cmp(&b.2))
                .then(a.3.cmp(&b.3))
        });
        let ranking: Vec<Ranked> = ranked.into_iter().map(|(_, r)| r).collect();
        Ok(outranked(view, &ranking))
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut order: Vec<&PendingJob> = view.pending.iter().collect();
        order.sort_by(|a, b| {
            left(view, a)
                .total_cmp(&left(view, b))
                .then(a.arrival.total_cmp(&b.arrival))
                .then(a.id.cmp(&b.id))
        });
        Ok(start_in_order(view, &order))
    }
}
