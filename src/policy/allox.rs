//! AlloX (Le et al., EuroSys 2020): min-cost matching of jobs to
//! (machine, position) slots, over the jobs of the users who have been
//! served least.
//!
//! Fairness: each user's score `L_u` sums, over its running jobs,
//! `DS_best * p_best / p_used`: the dominant share the job would take on its
//! fastest flavor, discounted when it runs on a slower one. Scores are
//! divided by the user's weight. Only the `ceil(alpha * |U|)` users with the
//! lowest score are eligible, where `U` is the set of users with pending
//! jobs. If the matching starts nothing on an idle machine, alpha doubles
//! for this decision and the matching is solved again, until every user is
//! eligible. Alpha starts afresh at the next decision.

use super::{by_arrival, PendingJob, Policy, PolicyError, Start, View};
use crate::solver::{self, Instance, Machine, SolverKind};

#[derive(Clone, Debug)]
pub struct Allox {
    pub alpha: f64,
    /// AlloX's `N_max`: solve over at most this many of the eligible jobs,
    /// the earliest arrivals first. `None` = no cap.
    pub max_candidates: Option<usize>,
    pub solver: SolverKind,
}

impl Allox {
    pub fn new(alpha: f64) -> Self {
        Allox {
            alpha,
            max_candidates: None,
            solver: SolverKind::Fast,
        }
    }
}

/// `L_u / weight_u` for every user index.
pub fn user_scores(view: &View<'_>) -> Vec<f64> {
    let mut scores = vec![0.0; view.user_weights.len()];
    for job in view.running {
        let used = job.estimates[view.machines[job.machine].flavor];
        let best = job
            .estimates
            .iter()
            .enumerate()
            .filter(|(f, _)| view.flavors[*f].slots > 0)
            .filter_map(|(f, t)| t.map(|t| (f, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(used), Some((fbest, pbest))) = (used, best) {
            let ds_best = 1.0 / view.flavors[fbest].slots as f64;
            // A zero-length estimate on the used flavor is as fast as it gets.
            let discount = if used > 0.0 { pbest / used } else { 1.0 };
            scores[job.user] += ds_best * discount;
        }
    }
    for (s, w) in scores.iter_mut().zip(view.user_weights) {
        *s /= w;
    }
    scores
}

impl Policy for Allox {
    fn label(&self) -> String {
        let mut label = format!("allox(a={})", self.alpha);
        if let Some(n) = self.max_candidates {
            label = format!("allox(a={},N={n})", self.alpha);
        }
        label
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        if view.pending.is_empty() || view.idle_machines().next().is_none() {
            return Ok(Vec::new());
        }
        let scores = user_scores(view);
        let mut users: Vec<usize> = view.pending.iter().map(|j| j.user).collect();
        users.sort_unstable();
        users.dedup();
        users.sort_by(|a, b| scores[*a].total_cmp(&scores[*b]).then(a.cmp(b)));

        let queued = by_arrival(view.pending);
        let mut alpha = self.alpha;
        loop {
            let eligible = ((alpha * users.len() as f64).ceil() as usize).clamp(1, users.len());
            let chosen = &users[..eligible];
            let candidates: Vec<&PendingJob> = queued
                .iter()
                .copied()
                .filter(|j| chosen.contains(&j.user) && placeable(view, j))
                .take(self.max_candidates.unwrap_or(usize::MAX))
                .collect();
            let starts = self.plan(view, &candidates)?;
            if !starts.is_empty() || eligible == users.len() {
                return Ok(starts);
            }
            alpha *= 2.0;
        }
    }
}

impl Allox {
    /// Solves the matching over `candidates` and starts, on each idle
    /// machine, the job matched to its first slot.
    fn plan(&self, view: &View<'_>, candidates: &[&PendingJob]) -> Result<Vec<Start>, PolicyError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let instance = Instance {
            flavors: view.flavors.len(),
            machines: (0..view.machines.len())
                .map(|m| Machine {
                    flavor: view.machines[m].flavor,
                    free_in: view.free_in(m),
                })
                .collect(),
            releases: candidates.iter().map(|j| j.arrival - view.now).collect(),
            times: candidates
                .iter()
                .flat_map(|j| j.estimates.iter().copied())
                .collect(),
        };
        let solution = solver::solve(&instance, self.solver)?;
        let queues = solution.queues(view.machines.len());
        Ok(view
            .idle_machines()
            .filter_map(|m| {
                queues[m].first().map(|&c| Start {
                    job: candidates[c].id,
                    machine: m,
                })
            })
            .collect())
    }
}

/// Whether the job may use some flavor that has a machine.
fn placeable(view: &View<'_>, job: &PendingJob) -> bool {
    view.machines
        .iter()
        .any(|m| job.estimates[m.flavor].is_some())
}
