//! Greedy join-the-shortest-queue, the heuristic AlloX's motivating example
//! argues against: in arrival order, each job joins the machine where it
//! would finish earliest given the work already queued there (ties: the
//! shorter run, then the lower machine). Jobs at the head of an idle
//! machine's queue start; the rest are re-planned at the next event.

use super::{by_arrival, Policy, PolicyError, Start, View};

/// Join the shortest queue; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct Jsq;

impl Policy for Jsq {
    fn label(&self) -> String {
        "jsq".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut ready: Vec<f64> = (0..view.machines.len()).map(|m| view.free_in(m)).collect();
        let mut taken = vec![false; view.machines.len()];
        let mut starts = Vec::new();
        for job in by_arrival(view.pending) {
            let best = (0..view.machines.len())
                .filter_map(|m| view.estimate_on(job, m).map(|p| (ready[m] + p, p, m)))
                .min_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then(a.1.total_cmp(&b.1))
                        .then(a.2.cmp(&b.2))
                });
            let Some((finish, _, m)) = best else { continue };
            if view.machines[m].idle && !taken[m] {
                taken[m] = true;
                starts.push(Start {
                    job: job.id,
                    machine: m,
                });
            }
            ready[m] = finish;
        }
        Ok(starts)
    }
}
