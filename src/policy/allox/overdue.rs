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
//! Without preemption the tier never makes a job finish later than
//! waiting would, and never turns the cluster first come first served:
//! - An overdue job holds only the machine where it finishes soonest of
//!   all, waiting for a busy one included. Where the tier's share of that
//!   machine's flavor is taken, the job stays with the matching rather than
//!   start on a slower flavor: a job that takes ten times its best run on a
//!   slow machine, because the fast ones were held, stretches the schedule
//!   for everyone behind it.
//! - The tier takes only the share of the cluster the backlog leaves. The
//!   backlog's drain time `D` is the work waiting and running, on each
//!   job's fastest flavor, over that flavor's machines ([`drain_time`]);
//!   of each flavor the tier may hold [`TIER_SHARE`] x (1 - D / bound) of
//!   the machines, rounded up. While the cluster keeps up, `D` is short
//!   and the tier works as stated. As the backlog grows toward the
//!   bound, the tier gives way, and once the backlog alone takes longer
//!   than the bound, no order can keep the bound for every job: a tier
//!   serving the oldest first there only lets the short jobs behind them
//!   age past it too (on Google at 14 + 14 slots, 5.4 times as many jobs
//!   waited over a day as without a bound). The matching's order stands,
//!   and preemption ([`super::preemption`]) is what bounds the wait.
//!
//! While a job wider than one slot waits, the gang plan decides (see
//! [`super::gangs`]) with the same bound and the same share: it serves the
//! overdue jobs of every width first, oldest first, within the tier's
//! share of the cluster's slots.

use super::preemption::OWED_SHARE;
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
/// jobs may hold at once on an empty cluster; it shrinks as the backlog
/// grows (see the module's note). When work arrives faster than the
/// cluster runs it, every job in time becomes overdue, and a tier without
/// a cap turns the whole cluster first come first served: on Gavel's
/// dev_seed1 the average JCT was 5.4 times AlloX's without a bound and
/// more jobs starved, not fewer. On Google at 16 + 16 slots, where the
/// cluster keeps up, a half scaled down by the backlog let one job wait
/// over a day; three quarters let none.
pub const TIER_SHARE: f64 = 0.75;

/// With preemption, while some running job may not be stopped (in Slurm,
/// one that did not opt in), the share of each flavor's machines overdue
/// jobs may hold at once: half, so the matching keeps its order on the
/// rest.
pub const VICTIMLESS_SHARE: f64 = 0.5;

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
    /// estimate, and for a gang that gave way for total JCT at
    /// [`OWED_SHARE`] of the bound. `None` when neither bound is set.
    pub(super) fn bound_of(&self, view: &View<'_>, job: &PendingJob) -> Option<f64> {
        let relative = self.preemption.and_then(|rule| {
            best_flavor(&job.estimates, view.flavors).map(|(_, p)| rule.wait_factor * p.max(1.0))
        });
        // A gang that gave way is owed its restart: overdue sooner, while
        // the bound itself (`served_first`'s whole share, clearing beside
        // idle slower nodes) stays every job's.
        let owed = self.gave_way.contains_key(&job.id);
        let absolute = self
            .max_wait
            .map(|bound| if owed { OWED_SHARE * bound } else { bound });
        match (absolute, relative) {
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

    /// The part of the tier's share the backlog leaves: `1 - D / bound`
    /// for the backlog's drain time `D` ([`drain_time`] of `pending` and
    /// the running jobs), none once the backlog alone outlasts the bound;
    /// without a bound, all of it.
    pub(super) fn backlog_spare(
        &self,
        view: &View<'_>,
        pending: &[&PendingJob],
        free_in: &[f64],
    ) -> f64 {
        match self.max_wait {
            Some(bound) => (1.0 - drain_time(view, pending, free_in) / bound).max(0.0),
            None => 1.0,
        }
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
        // Without preemption, the share of the cluster the backlog leaves
        // the tier (see the module's note); with it, which bounds the wait
        // when no order can, the whole share (see `share` below).
        let spare = if self.preemption.is_some() {
            1.0
        } else {
            self.backlog_spare(view, &left, free_in)
        };
        let feasible = spare > 0.0;
        let (mut overdue, left): (Vec<&PendingJob>, Vec<&PendingJob>) = left
            .into_iter()
            .partition(|j| feasible && self.is_overdue(view, j));
        self.oldest_first(&mut overdue);
        let mut starts = Vec::new();
        // Per flavor, the machines the tier may still take. Preemption can
        // win back any machine a preemptible job holds, so it lifts the
        // cap; where some running job may not be stopped (in Slurm, one
        // that did not opt in), the cap stays, or overdue jobs alone would
        // fill the cluster.
        let uncapped = self.preemption.is_some() && view.running.iter().all(|r| r.preemptible);
        let share = if self.preemption.is_some() {
            VICTIMLESS_SHARE
        } else {
            self.tier_share * spare
        };
        let mut room: Vec<usize> = view
            .flavors
            .iter()
            .map(|f| {
                if uncapped {
                    usize::MAX
                } else {
                    (f.slots as f64 * share).ceil() as usize
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
            // Its soonest finish of all; where the tier has no room left
            // there, the matching keeps the job (see the module's note).
            let soonest = soonest_finish(view, job, free_in, |m| !idle[m], |_| true);
            let Some((m, _)) = soonest.filter(|&(m, _)| room[view.machines[m].flavor] > 0) else {
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

/// How long the cluster would take to run the work of `pending` and of
/// the running jobs (`free_in` per machine), in seconds: the most loaded
/// flavor's share, each pending job on its fastest flavor, over that
/// flavor's machines.
pub(super) fn drain_time(view: &View<'_>, pending: &[&PendingJob], free_in: &[f64]) -> f64 {
    let mut slots = vec![0usize; view.flavors.len()];
    let mut load = vec![0.0; view.flavors.len()];
    for (m, machine) in view.machines.iter().enumerate() {
        slots[machine.flavor] += 1;
        load[machine.flavor] += free_in[m];
    }
    for job in pending {
        if let Some((f, p)) = best_flavor(&job.estimates, view.flavors) {
            load[f] += p * job.width.slots() as f64;
        }
    }
    load.iter()
        .zip(&slots)
        .filter(|(_, &n)| n > 0)
        .map(|(l, &n)| l / n as f64)
        .fold(0.0, f64::max)
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
