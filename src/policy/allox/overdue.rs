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

use super::Allox;
use crate::model::best_flavor;
use crate::policy::{job_share, PendingJob, Start, View};

/// The default bound, in seconds: 16 hours. A day is the horizon past
/// which a user reads a waiting job as forgotten (and `compare` counts it
/// starved); 16 hours leave 8 for the run ahead of an overdue job to end,
/// more than the longest run of the bundled Google workload (6 hours). A
/// shorter bound costs average JCT: on that workload at 16 + 16 slots, 12
/// hours cost 12% over no bound, 16 hours 4.8%, 20 hours 2.2%, because the
/// tier serves overdue jobs first come first served, ahead of short jobs
/// the matching would have started.
pub const MAX_WAIT: f64 = 16.0 * 3600.0;

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
    /// sooner with [`Allox::wait_factor`] times its fastest estimate.
    /// `None` when neither bound is set.
    pub(super) fn bound_of(&self, view: &View<'_>, job: &PendingJob) -> Option<f64> {
        let relative = self
            .wait_factor
            .and_then(|k| best_flavor(&job.estimates, view.flavors).map(|(_, p)| k * p.max(1.0)));
        match (self.max_wait, relative) {
            (Some(a), Some(r)) => Some(a.min(r)),
            (a, r) => a.or(r),
        }
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
        &self,
        view: &View<'_>,
        left: Vec<&'v PendingJob>,
        idle: &mut [bool],
        free_in: &mut [f64],
        scores: &mut [f64],
    ) -> Tiered<'v> {
        let (mut overdue, left): (Vec<&PendingJob>, Vec<&PendingJob>) =
            left.into_iter().partition(|j| self.is_overdue(view, j));
        overdue.sort_by(|a, b| {
            self.waiting_since(a)
                .total_cmp(&self.waiting_since(b))
                .then(a.id.cmp(&b.id))
        });
        let mut starts = Vec::new();
        for job in overdue {
            let soonest = (0..view.machines.len())
                .filter_map(|m| {
                    view.estimate_on(job, m)
                        .map(|p| (m, free_in[m] + p, !idle[m]))
                })
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
            let Some((m, _, _)) = soonest else {
                continue;
            };
            let flavor = view.machines[m].flavor;
            let p = job.estimates[flavor].expect("a flavor it can use");
            if idle[m] {
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
        Tiered { starts, left }
    }
}
