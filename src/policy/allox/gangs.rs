//! AlloX's decision when some waiting job is wider than one slot: the
//! eligible users' jobs are planned by [`crate::policy::gang_plan`], and those its
//! plan starts now start.
//!
//! Fairness is AlloX's: only the least-served users' jobs are planned, and
//! alpha doubles when their plan starts nothing. AlloX's cap on candidates
//! (`max_candidates`) applies to the jobs not served first; those are
//! always planned, whoever's they are. Below alpha 1 one job
//! starts per decision, so the users are ranked again before the next, as
//! with narrow jobs.
//!
//! Starvation: one rule for every width, the narrow path's (see
//! [`super::overdue`]). A job past its bound (`max_wait`, or with
//! preemption sooner, its wait factor times its fastest estimate) is
//! planned ahead of every job that is not, oldest first, so it holds one
//! of the first reservations; no job placed after it may delay it, so its
//! wait ends once the jobs ahead of it (older overdue jobs, and running
//! ones) are done, whatever keeps arriving. Overdue jobs take at most the
//! tier's share of the cluster's slots, which shrinks as the backlog
//! grows, to none once the backlog alone outlasts the bound: an order of
//! oldest first over an overloaded queue is a slow first come first
//! served. On Gavel's multi-GPU traces at twice their load, aging every
//! job past four times its estimate instead gave 1.8x to 2.0x the
//! average JCT, and 7x to 8x the starved jobs, of the same plan without
//! aging. With preemption the share shrinks the same way for jobs overdue
//! at their wait factor, and the jobs preemption stopped others for go
//! first whatever the backlog. A job past the bound itself (`max_wait`)
//! is served first within the whole share whatever the backlog: it holds
//! a reservation, so it starts once the nodes it holds drain, whatever
//! keeps arriving. Preemption alone did not bound a gang's wait: beside
//! idle slower nodes it clears a faster flavor's nodes only of jobs with
//! more work left than its run, which a gang of days or weeks rarely
//! finds, when it waits first or after it was stopped whole. On the
//! full Philly trace (30 s restarts) 130 jobs waited over a day at a
//! stretch, 101 of them 8-GPU jobs of 3.5 to 54 days, one for 50 days;
//! with the reservation none did, for 8% more average JCT (20,789 s
//! against 19,229 s). Reserving for every overdue job, at its wait factor
//! too, left one waiting over a day at 21,017 s; the share is not what
//! binds (a tenth of the cluster gave 20,778 s with one). On the first
//! 20,000 Philly jobs, a share that did not shrink under preemption for
//! any overdue job, with only gangs first once preemption cleared their
//! nodes, gave 74 times the preemptions and 9 times the starved jobs
//! (31,782 and 1,233, against 431 and 141).

use super::forecast::Tail;
use super::{candidates, eligible_count, ranked_users, Allox};
use crate::policy::gang_plan::{self, PlanJob, PlanNode, SEARCHED_JOBS, SEARCH_BUDGET};
use crate::policy::{
    by_arrival, usage_scores, Forecast, IdMap, PendingJob, PolicyError, Start, View,
};

/// Jobs that cannot start now and still hold a reservation.
pub const RESERVATIONS: usize = 8;

/// Overdue jobs served first in one decision, the oldest.
const SERVED_FIRST: usize = 64;

impl Allox {
    pub(super) fn decide_gangs(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let flavors = view.flavors.len();
        let (nodes, idle) = gang_plan::view_nodes(view);
        let mut usable = vec![false; flavors];
        for m in view.machines {
            usable[m.flavor] = true;
        }
        let left: Vec<&PendingJob> = by_arrival(view.pending)
            .into_iter()
            .filter(|j| {
                j.estimates
                    .iter()
                    .zip(&usable)
                    .any(|(e, &u)| u && e.is_some())
            })
            .collect();
        if left.is_empty() {
            return Ok(Vec::new());
        }
        let scores = usage_scores(view);
        let attained = |u: usize| view.attained.get(u).copied().unwrap_or(0.0);
        let users = ranked_users(&left, &scores, &attained);
        let served = self.served_first(view, &left);
        let mut alpha = self.alpha;
        loop {
            let chosen = &users[..eligible_count(alpha, users.len())];
            // Jobs served first are always planned, whoever's they are:
            // neither the eligible set nor AlloX's cap may hide one for
            // ever. The cap picks among the eligible users' other jobs.
            let (mut first, young): (Vec<&PendingJob>, Vec<&PendingJob>) = left
                .iter()
                .copied()
                .partition(|j| served.contains_key(&j.id));
            self.oldest_first(&mut first);
            let young: Vec<&PendingJob> = young
                .into_iter()
                .filter(|j| chosen.contains(&j.user))
                .collect();
            let cap = self.max_candidates.unwrap_or(usize::MAX);
            let mut candidates = first;
            candidates.extend(candidates::select(
                &young,
                cap,
                self.candidate_rule,
                &usable,
            ));
            let starts = self.plan_gangs(view, &nodes, &idle, &candidates, &served)?;
            if !starts.is_empty() || chosen.len() == users.len() {
                return Ok(starts);
            }
            alpha *= 2.0;
        }
    }

    /// The jobs the gang plan serves first: those preemption stopped
    /// running jobs for (the slots cleared for them must be theirs when
    /// they free), then the overdue ones, oldest first, while their slots
    /// fit in the tier's share of the cluster; with preemption, a job past
    /// `max_wait` itself within the whole share whatever the backlog (see
    /// the module's note).
    fn served_first(&self, view: &View<'_>, left: &[&PendingJob]) -> IdMap<()> {
        let mut served: IdMap<()> = left
            .iter()
            .filter(|j| self.cleared_for.contains_key(&j.id))
            .map(|j| (j.id, ()))
            .collect();
        let mut overdue: Vec<&PendingJob> = left
            .iter()
            .copied()
            .filter(|j| !served.contains_key(&j.id) && self.is_overdue(view, j))
            .collect();
        if overdue.is_empty() {
            return served;
        }
        self.oldest_first(&mut overdue);
        let free_in: Vec<f64> = (0..view.machines.len()).map(|m| view.free_in(m)).collect();
        let slots_of = |share: f64| (view.machines.len() as f64 * share).ceil() as usize;
        let room = slots_of(self.tier_share * self.backlog_spare(view, left, &free_in));
        let past_bound_room = match (self.preemption, self.max_wait) {
            (Some(_), Some(bound)) => Some((bound, slots_of(self.tier_share))),
            _ => None,
        };
        let mut taken = 0;
        for job in overdue {
            if served.len() >= SERVED_FIRST {
                break;
            }
            let room = match past_bound_room {
                Some((bound, whole)) if view.now - self.waiting_since(job) > bound => whole,
                _ => room,
            };
            let slots = job.width.slots();
            if taken + slots <= room {
                taken += slots;
                served.insert(job.id, ());
            }
        }
        served
    }

    /// The starts the plan of `candidates` makes now.
    fn plan_gangs(
        &mut self,
        view: &View<'_>,
        nodes: &[PlanNode],
        idle: &[Vec<usize>],
        candidates: &[&PendingJob],
        served: &IdMap<()>,
    ) -> Result<Vec<Start>, PolicyError> {
        let flavors = view.flavors.len();
        let jobs: Vec<PlanJob> = candidates
            .iter()
            .map(|j| PlanJob::of(j, view.now))
            .collect();
        let relaxed = gang_plan::relaxed_order(nodes, flavors, &jobs)?;
        // Jobs served first, oldest first, each on the flavor where it
        // finishes soonest behind those before it, never a slower one the
        // relaxation chose: the narrow tier's rule. The rest in the
        // relaxed order.
        let first = |j: usize| served.contains_key(&candidates[j].id);
        let served_order: Vec<(usize, usize)> =
            relaxed.iter().copied().filter(|&(j, _)| first(j)).collect();
        let mut order = gang_plan::soonest_finish_order(nodes, flavors, &jobs, &served_order);
        // The head of the rest, improved by local search on its own
        // schedule: it holds the jobs that start now and the reservations.
        let rest: Vec<(usize, usize)> = relaxed
            .iter()
            .copied()
            .filter(|&(j, _)| !first(j))
            .collect();
        let head = rest.len().min(SEARCHED_JOBS);
        let head_jobs: Vec<PlanJob> = rest[..head].iter().map(|&(j, _)| jobs[j].clone()).collect();
        let head_order: Vec<(usize, usize)> = rest[..head]
            .iter()
            .enumerate()
            .map(|(i, &(_, f))| (i, f))
            .collect();
        let improved =
            gang_plan::improved_order(nodes, flavors, &head_jobs, head_order, SEARCH_BUDGET);
        order.extend(improved.into_iter().map(|(i, f)| (rest[i].0, f)));
        order.extend(rest[head..].iter().copied());
        let mut placements = gang_plan::start_now(nodes, flavors, &jobs, &order, self.reservations);
        // A one-slot job's reservation holds nothing from the classes
        // below: it waits for a busy machine it prefers.
        let gangs: Vec<gang_plan::Placement> = placements
            .iter()
            .filter(|p| !candidates[p.job].width.is_one())
            .cloned()
            .collect();
        self.held = held_by(&gangs, idle);
        if self.alpha < 1.0 {
            // One start per decision: the first the plan makes now.
            if let Some(first) = placements.iter().position(|p| p.start == 0.0) {
                placements = vec![placements.swap_remove(first)];
            }
        }
        let starts = gang_plan::starts_now(&placements, candidates, idle);
        self.gang_forecast = (!self.by_class).then(|| GangForecast {
            nodes: nodes.to_vec(),
            flavors,
            ids: candidates.iter().map(|j| j.id).collect(),
            jobs,
            order,
            now: view.now,
        });
        Ok(starts)
    }
}

/// A gang plan kept for [`crate::policy::Policy::forecast`]: its serial
/// schedule, worked out only when asked, says when each job it did not
/// start now would start, and where the nodes free behind it.
#[derive(Clone, Debug)]
pub(super) struct GangForecast {
    nodes: Vec<PlanNode>,
    flavors: usize,
    /// Plan job -> pending job id.
    ids: Vec<usize>,
    jobs: Vec<PlanJob>,
    order: Vec<(usize, usize)>,
    now: f64,
}

impl GangForecast {
    /// The forecasts of the plan's jobs, and where the nodes free behind
    /// them (for the jobs it did not plan, not kept here: a decision
    /// would copy every waiting job).
    pub(super) fn starts(&self) -> (Vec<Forecast>, Tail) {
        let placements =
            gang_plan::schedule_all(&self.nodes, self.flavors, &self.jobs, &self.order);
        let mut tail = Tail::new(self.now, self.flavors);
        for node in &self.nodes {
            let mut slots = node.busy_until.clone();
            slots.resize(node.slots.max(slots.len()), 0.0);
            tail.add_node(node.flavor, slots);
        }
        let mut by_start: Vec<&gang_plan::Placement> =
            placements.iter().filter(|p| p.start.is_finite()).collect();
        by_start.sort_by(|a, b| a.start.total_cmp(&b.start));
        for p in by_start {
            tail.hold(&p.nodes, self.jobs[p.job].width.per_node, p.start, p.end);
        }
        let out: Vec<Forecast> = placements
            .iter()
            .zip(&self.order)
            .filter(|(p, _)| p.start > 0.0 && p.start.is_finite())
            .map(|(p, &(_, flavor))| Forecast {
                job: self.ids[p.job],
                at: self.now + p.start,
                flavor,
            })
            .collect();
        (out, tail)
    }
}

/// The idle machines the plan's reservations hold (`idle`, per node, as
/// [`gang_plan::view_nodes`] gives them), and until when from now: a
/// machine two reservations hold is held until the later one ends.
fn held_by(placements: &[gang_plan::Placement], idle: &[Vec<usize>]) -> Vec<(usize, f64)> {
    let mut held: Vec<(usize, f64)> = placements
        .iter()
        .filter(|p| p.start > 0.0)
        .flat_map(|p| {
            p.nodes
                .iter()
                .flat_map(move |&n| idle[n].iter().map(move |&m| (m, p.end)))
        })
        .collect();
    held.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    held.dedup_by_key(|h| h.0);
    held
}
