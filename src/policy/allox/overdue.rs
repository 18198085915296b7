//! The waiting-time bound: a job that has waited past its bound goes
//! ahead of every job that has not, oldest first, on the machine of a
//! flavor it can use where it would finish soonest, and the matching plans
//! the rest around it.
//!
//! A tier rather than aging inside the matching's costs: the matching
//! minimises total completion time, and a finite weight on one job's wait
//! can always be outbid by enough short jobs behind it, which is exactly
//! how jobs starve at high load. A tier makes the bound unconditional. It
//! is also not a reservation of an idle slot: an overdue job that would
//! finish sooner on a busy fast machine holds that machine (its queue
//! position) and leaves the idle slow ones to the matching, so the bound
//! costs its own job no speed.
//!
//! The bound this gives: a narrow job waits at most its bound, plus the
//! time until the machine it holds frees (the rest of one run, the
//! longest job ahead of it on that machine), plus the runs of the older
//! overdue jobs that hold the same machine before it. While the cluster
//! keeps up, overdue jobs are rare and the last term is empty. When
//! arrivals exceed capacity, overdue jobs pile up, the tier serves them
//! first come first served, and no non-preemptive policy bounds the wait;
//! [`super::preemption`] is what bounds it then.
//!
//! The tier is the narrow path's. While a job wider than one slot waits,
//! the gang plan decides (see [`super::gangs`]) with its own aging.

use super::Allox;
use crate::model::best_flavor;
use crate::policy::{job_share, PendingJob, Start, View};

/// The default bound, in seconds: 17 hours. A day is the horizon past
/// which a user reads a waiting job as forgotten (and `compare` counts it
/// starved); 17 hours leave 7 for the run ahead of an overdue job to end,
/// more than the longest run of the bundled Google workload (6 hours). A
/// shorter bound costs average JCT, because the tier serves overdue jobs
/// first come first served, ahead of short jobs the matching would have
/// started: on that workload at 16 + 16 slots, 12 hours cost 12% over no
/// bound, 16 hours 5%, 17 hours 3.8%, 20 hours 2.2%.
pub const MAX_WAIT: f64 = 17.0 * 3600.0;

/// Without preemption, the share of each flavor's machines that overdue
/// jobs may hold at once. When work arrives faster than the cluster runs
/// it, every job in time becomes overdue, and a tier without a cap turns
/// the whole cluster first come first served: on Gavel's dev_seed1 the
/// average JCT was 5.4 times AlloX's without a bound and more jobs
/// starved, not fewer. Half the machines keep the matching's order on the
/// other half (1.7 times, on that trace), and while the cluster keeps up,
/// overdue jobs rarely fill half of it.
pub const TIER_SHARE: f64 = 0.5;

/// What the overdue tier leaves to the matching.
pub(super) struct Tiered<'v> {
    /// Overdue jobs started now.
    pub starts: Vec<Start>,
    /// The jobs left to the matching.
    pub left: Vec<&'v PendingJob>,
}

impl Allox {
    /// Since when `job` waits: its arrival, or the last time this policy
    /// preempted it.
    pub(super) fn waiting_since(&self, job: &PendingJob) -> f64 {
        self.requeued.get(&job.id).copied().unwrap_or(job.arrival)
    }

    /// The wait after which `job` is overdue: [`Allox::max_wait`], or
    /// with preemption sooner, at its wait factor times its fastest
    /// estimate. `None` when neither bound is set.
    pub(super) fn bound_of(&self, view: &View<'_>, job: &PendingJob) -> Option<f64> {
        let relative = self.preemption.and_then(|rule| {
            best_flavor(&job.estimates, view.flavors).map(|(_, p)| rule.wait_factor * p.max(1.0))
        });
        match (self.max_wait, relative) {
            (Some(a), Some(r)) => Some(a.min(r)),
            (a, r) => a.or(r),
        }
    }

    /// Sorts `jobs` by how long they have waited, longest first (ties:
    /// the lower id).
    pub(super) fn oldest_first(&self, jobs: &mut [&PendingJob]) {
        jobs.sort_by(|a, b| {
            self.waiting_since(a)
                .total_cmp(&self.waiting_since(b))
                .then(a.id.cmp(&b.id))
        });
    }

    /// Whether `job` has waited past its bound.
    pub(super) fn is_overdue(&self, view: &View<'_>, job: &PendingJob) -> bool {
        self.bound_of(view, job)
            .is_some_and(|b| view.now - self.waiting_since(job) > b)
    }

    /// Serves the overdue jobs of `left`, oldest first: each starts on the
    /// machine where it would finish soonest if that machine is idle, or
    /// else holds it (its queue grows by the job's run, so the matching
    /// plans behind it). `idle`, `free_in` and `scores` follow the starts.
    pub(super) fn serve_overdue<'v>(
        &mut self,
        view: &View<'_>,
        left: Vec<&'v PendingJob>,
        idle: &mut [bool],
        free_in: &mut [f64],
        scores: &mut [f64],
    ) -> Tiered<'v> {
        let (mut overdue, left): (Vec<&PendingJob>, Vec<&PendingJob>) =
            left.into_iter().partition(|j| self.is_overdue(view, j));
        self.oldest_first(&mut overdue);
        let mut starts = Vec::new();
        // Per flavor, the machines the tier may still take. Preemption can
        // win back any machine a preemptible job holds, so it lifts the
        // cap; where some running job may not be stopped (in Slurm, one
        // that did not opt in), the cap stays, or overdue jobs alone would
        // fill the cluster.
        let uncapped = self.preemption.is_some() && view.running.iter().all(|r| r.preemptible);
        let mut room: Vec<usize> = view
            .flavors
            .iter()
            .map(|f| {
                if uncapped {
                    usize::MAX
                } else {
                    (f.slots as f64 * self.tier_share).ceil() as usize
                }
            })
            .collect();
        let running: std::collections::HashSet<usize> = view.running.iter().map(|r| r.id).collect();
        self.promoted.retain(|id, _| running.contains(id));
        for r in view.running {
            if self.promoted.contains_key(&r.id) {
                let f = view.machines[r.machine].flavor;
                room[f] = room[f].saturating_sub(1);
            }
        }
        let mut rest = Vec::new();
        for job in overdue {
            let soonest = soonest_finish(
                view,
                job,
                free_in,
                |m| !idle[m],
                |m| room[view.machines[m].flavor] > 0,
            );
            let Some((m, _)) = soonest else {
                rest.push(job);
                continue;
            };
            let flavor = view.machines[m].flavor;
            let p = job.estimates[flavor].expect("a flavor it can use");
            room[flavor] -= 1;
            if idle[m] {
                self.promoted.insert(job.id, ());
                idle[m] = false;
                free_in[m] = p;
                scores[job.user] +=
                    job_share(view, &job.estimates, flavor) / view.user_weights[job.user];
                starts.push(Start {
                    job: job.id,
                    machine: m,
                });
            } else {
                free_in[m] += p;
            }
        }
        let mut left = left;
        left.extend(rest);
        Tiered { starts, left }
    }
}

/// The machine where `job` would finish soonest behind `free_in`, among
/// those `allowed`, and when; ties go to a machine that is not `busy`,
/// then to the lower index. `None` if it may use none of them.
pub(super) fn soonest_finish(
    view: &View<'_>,
    job: &PendingJob,
    free_in: &[f64],
    busy: impl Fn(usize) -> bool,
    allowed: impl Fn(usize) -> bool,
) -> Option<(usize, f64)> {
    (0..view.machines.len())
        .filter(|&m| allowed(m))
        .filter_map(|m| {
            view.estimate_on(job, m)
                .map(|p| (m, free_in[m] + p, busy(m)))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)))
        .map(|(m, finish, _)| (m, finish))
}
