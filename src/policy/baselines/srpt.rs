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
                let width = job.width;
                ranked.push((key, Ranked::Pending { flavor, width }));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flavor, Width};
    use crate::policy::baselines::testing::{pending, running, view};
    use crate::policy::MachineView;

    #[test]
    fn a_gang_preempts_the_job_whose_node_it_needs() {
        // Two nodes of 2 GPUs. Node 0: A (990 s left) and an idle slot;
        // node 1: B (990 s) and C (890 s). A 2-wide 10 s job outranks them
        // all; freeing A's slot makes node 0 whole, so A goes, not B.
        let flavors = vec![
            Flavor {
                name: "gpu".into(),
                slots: 4,
                per_node: 2,
            },
            Flavor::new("cpu", 0),
        ];
        let machines: Vec<MachineView> = (0..4)
            .map(|m| MachineView {
                flavor: 0,
                node: m / 2,
                free_at: 0.0,
                idle: m == 1,
            })
            .collect();
        let run = [
            running(0, 0, 0, [Some(1000.0), None]),
            running(1, 1, 2, [Some(1000.0), None]),
            running(2, 2, 3, [Some(900.0), None]),
        ];
        let mut wide = pending(3, 3, 5.0, [Some(10.0), None]);
        wide.width = Width::new(2, 1).unwrap();
        let jobs = [wide];
        let v = view(&flavors, &machines, &jobs, &run);
        assert_eq!(Srpt.preempt(&v).unwrap(), vec![0]);
    }
}
