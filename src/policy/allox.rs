//! AlloX (Le et al., EuroSys 2020): min-cost matching of jobs to
//! (machine, position) slots, over the jobs of the users who have been
//! served least.
//!
//! Fairness: each user's score `L_u` ([`usage_scores`]) sums, over its
//! running jobs, `DS_best * p_best / p_used`: the dominant share the job
//! would take on its fastest flavor, discounted when it runs on a slower
//! one, divided by the user's weight. Only the `ceil(alpha * |U|)` users with
//! the lowest score are eligible, where `U` is the set of users with pending
//! jobs; ties go to the user with the least attained service (the score
//! integrated over time), then to the lower index. If the matching starts nothing on an idle machine, alpha doubles
//! for this decision and the matching is solved again, until every user is
//! eligible. Alpha starts afresh at the next decision.

use super::{by_arrival, usage_scores, PendingJob, Policy, PolicyError, Start, View};
use crate::solver::{self, Instance, Machine, SolverKind};
use std::collections::HashMap;

#[derive(Clone, Debug)]
pub struct Allox {
    pub alpha: f64,
    /// AlloX's `N_max`: solve over at most this many of the eligible jobs,
    /// the earliest arrivals first. `None` = no cap.
    pub max_candidates: Option<usize>,
    pub solver: SolverKind,
    /// Seconds of total JCT a re-plan must gain to move a job off the
    /// machine the previous plan gave it. 0 (AlloX) re-plans freely; a
    /// little keeps plans steady when estimates and clocks jitter, which is
    /// what lets a simulator predict a real cluster job by job.
    pub stickiness: f64,
    /// The previous plan: pending job id -> machine.
    planned: HashMap<usize, usize>,
}

impl Allox {
    pub fn new(alpha: f64) -> Self {
        Allox {
            alpha,
            max_candidates: None,
            solver: SolverKind::Fast,
            stickiness: 0.0,
            planned: HashMap::new(),
        }
    }
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
        let scores = usage_scores(view);
        let mut users: Vec<usize> = view.pending.iter().map(|j| j.user).collect();
        users.sort_unstable();
        users.dedup();
        // Equal scores (typically: nothing running) go to the user with
        // the least service so far, not to the lowest index: AlloX's
        // instantaneous score alone would hand every simultaneous wave of
        // free slots to the same user.
        let attained = |u: usize| view.attained.get(u).copied().unwrap_or(0.0);
        users.sort_by(|&a, &b| {
            scores[a]
                .total_cmp(&scores[b])
                .then(attained(a).total_cmp(&attained(b)))
                .then(a.cmp(&b))
        });

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
    fn plan(
        &mut self,
        view: &View<'_>,
        candidates: &[&PendingJob],
    ) -> Result<Vec<Start>, PolicyError> {
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
            preferred: if self.stickiness > 0.0 {
                candidates
                    .iter()
                    .map(|j| {
                        self.planned
                            .get(&j.id)
                            .filter(|&&m| m < view.machines.len())
                            .map(|&m| (m, self.stickiness))
                    })
                    .collect()
            } else {
                Vec::new()
            },
        };
        let solution = solver::solve(&instance, self.solver)?;
        self.planned = candidates
            .iter()
            .zip(&solution.slots)
            .map(|(j, s)| (j.id, s.machine))
            .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flavor;
    use crate::policy::{usage_scores, MachineView, RunningJob};

    fn flavors() -> Vec<Flavor> {
        vec![
            Flavor {
                name: "gpu".into(),
                slots: 1,
            },
            Flavor {
                name: "cpu".into(),
                slots: 1,
            },
        ]
    }

    fn job(id: usize, user: usize, gpu: Option<f64>, cpu: Option<f64>) -> PendingJob {
        PendingJob {
            id,
            user,
            arrival: 0.0,
            estimates: vec![gpu, cpu],
        }
    }

    #[test]
    fn alpha_doubles_when_the_eligible_jobs_start_nothing() {
        // The GPU is busy for 1 more second; the CPU is idle. User 0's job
        // would rather wait for the GPU, so with alpha 0.5 (user 0 only)
        // nothing starts; doubling alpha admits user 1, whose job can only
        // use the CPU.
        let flavors = flavors();
        let machines = [
            MachineView {
                flavor: 0,
                free_at: 11.0,
                idle: false,
            },
            MachineView {
                flavor: 1,
                free_at: 10.0,
                idle: true,
            },
        ];
        let pending = [
            job(0, 0, Some(1.0), Some(100.0)),
            job(1, 1, None, Some(5.0)),
        ];
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0, 1.0],
            attained: &[],
        };
        let starts = Allox::new(0.5).decide(&view).unwrap();
        assert_eq!(starts, vec![Start { job: 1, machine: 1 }]);
    }

    #[test]
    fn scores_discount_jobs_on_their_slower_flavor_and_divide_by_weight() {
        let flavors = vec![
            Flavor {
                name: "gpu".into(),
                slots: 4,
            },
            Flavor {
                name: "cpu".into(),
                slots: 8,
            },
        ];
        let machines: Vec<MachineView> = [0, 1]
            .iter()
            .map(|&flavor| MachineView {
                flavor,
                free_at: 100.0,
                idle: false,
            })
            .collect();
        // User 0 runs a job on the CPU that is 4x faster on a GPU: share
        // 1/4 (GPU is best) times 10/40. User 1 (weight 2) runs one on its
        // best flavor, the CPU: 1/8, halved.
        let running = [
            RunningJob {
                id: 0,
                user: 0,
                machine: 1,
                started: 0.0,
                estimates: vec![Some(10.0), Some(40.0)],
            },
            RunningJob {
                id: 1,
                user: 1,
                machine: 1,
                started: 0.0,
                estimates: vec![Some(30.0), Some(20.0)],
            },
        ];
        let view = View {
            now: 0.0,
            flavors: &flavors,
            machines: &machines,
            pending: &[],
            running: &running,
            user_weights: &[1.0, 2.0],
            attained: &[],
        };
        assert_eq!(usage_scores(&view), vec![0.25 * 0.25, 0.125 / 2.0]);
    }

    #[test]
    fn candidate_cap_keeps_the_earliest_arrivals() {
        let flavors = flavors();
        let machines = [MachineView {
            flavor: 1,
            free_at: 0.0,
            idle: true,
        }];
        let mut pending = vec![job(0, 0, None, Some(50.0)), job(1, 0, None, Some(1.0))];
        pending[1].arrival = 5.0;
        let view = View {
            now: 5.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        // Uncapped, the short job goes first; capped at 1, only the first
        // arrival is considered.
        let mut allox = Allox::new(1.0);
        assert_eq!(allox.decide(&view).unwrap()[0].job, 1);
        allox.max_candidates = Some(1);
        assert_eq!(allox.decide(&view).unwrap()[0].job, 0);
    }
}
