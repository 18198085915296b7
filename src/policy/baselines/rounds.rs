//! The round mechanism Gavel's policies share (Narayanan et al., OSDI
//! 2020), and the LP they solve.
//!
//! At the start of each round (360 s by default) an [`Allocator`] gives
//! every active job (waiting or running) `x[j][f]`: the share of the round
//! it should spend on flavor `f`. Gavel's mechanism then places jobs:
//! pairs `(j, f)` go in order of `x[j][f]` over the rounds `j` already had
//! on `f` (plus one), each taking a free slot of `f` if the job has none
//! yet. Pairs the allocation gave nothing fill what is left, fastest first,
//! so no slot idles while a job waits. Running jobs outside the round's
//! placement are preempted and keep their work. A job arriving mid-round
//! takes a free slot, fastest first, or waits for the next round.
//!
//! As in Gavel's scheduler (`_need_to_update_allocation`, set when a job
//! is added or removed), the allocation is recomputed only at a round
//! whose set of active jobs differs from the last one's; other rounds
//! place by the shares they have. On a deep queue of three or more
//! flavors the LP dominates the cost: about 90 ms for 1,000 jobs on 3
//! flavors, and a backlog that
//! lasts months of simulated time has tens of thousands of rounds but
//! only two changes per job.
//!
//! The max-min LP is what both allocators solve ([`super::max_min`]):
//! exactly and combinatorially on two flavors, by clarabel on more.

use super::{
    best_flavor, gang_starts, IdMap, IdleNodes, PendingJob, Policy, PolicyError, Start, View,
};
use crate::model::Flavor;
use std::collections::HashMap;

/// The round length Gavel's experiments use, in seconds.
pub const ROUND_SECONDS: f64 = 360.0;

/// A job the round's allocation covers.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveJob {
    /// The job's [`crate::policy::PendingJob::id`].
    pub id: usize,
    /// Run time per flavor for the work it has left.
    pub left: Vec<Option<f64>>,
    /// Run time per flavor for all of its work, and when it arrived.
    pub full: Vec<Option<f64>>,
    /// When it arrived, in absolute seconds.
    pub arrival: f64,
    /// The slots it holds at once (Gavel's scale factor).
    pub slots: usize,
}

/// What a round-based policy optimises: the shares `x[j][f]` of the
/// active jobs.
pub trait Allocator {
    /// A short label for tables, as [`crate::policy::Policy::label`].
    fn label(&self) -> String;
    /// The shares `x[j][f]`, one row per job of `jobs`, over `flavors`, at time
    /// `now`.
    fn allocate(
        &self,
        now: f64,
        jobs: &[ActiveJob],
        flavors: &[Flavor],
    ) -> Result<Vec<Vec<f64>>, PolicyError>;
}

/// A round-based, preemptive policy: `A` allocates, Gavel's mechanism
/// places.
#[derive(Clone, Debug)]
pub struct RoundBased<A> {
    /// What the rounds allocate by.
    pub allocator: A,
    /// Round length in seconds.
    pub round: f64,
    /// When the current round ends; `None` before the first.
    round_end: Option<f64>,
    /// The round's placement: job id -> flavor.
    placed: HashMap<usize, usize>,
    /// Rounds each job has had on each flavor, `(job, flavor) -> rounds`.
    rounds: HashMap<(usize, usize), f64>,
    /// Each job's arrival and full estimates, noted the first time it
    /// waits: a running job's are not in the view.
    seen: IdMap<(f64, Vec<Option<f64>>)>,
    /// The last allocation, by job id, and the sorted ids it was made for.
    shares: IdMap<Vec<f64>>,
    allocated_for: Vec<usize>,
    /// LPs solved (allocations computed), for tests and reports.
    pub allocations: usize,
}

impl<A: Allocator> RoundBased<A> {
    /// A round-based policy over `allocator`, with rounds of `round` seconds.
    pub fn with(allocator: A, round: f64) -> Self {
        RoundBased {
            allocator,
            round,
            round_end: None,
            placed: HashMap::new(),
            rounds: HashMap::new(),
            seen: IdMap::default(),
            shares: IdMap::default(),
            allocated_for: Vec::new(),
            allocations: 0,
        }
    }

    fn note(&mut self, view: &View<'_>) {
        for job in view.pending {
            self.seen
                .entry(job.id)
                .or_insert_with(|| (job.arrival, job.estimates.clone()));
        }
    }

    /// Allocates the round and places its jobs.
    fn plan_round(&mut self, view: &View<'_>) -> Result<(), PolicyError> {
        self.note(view);
        let mut active: Vec<ActiveJob> = Vec::new();
        // Slots per active job: a running job is listed once per slot.
        let mut width: IdMap<usize> = IdMap::default();
        for job in view.running {
            *width.entry(job.id).or_default() += 1;
            if width[&job.id] > 1 {
                continue;
            }
            let f = view.machines[job.machine].flavor;
            let done = (view.now - job.started).max(0.0);
            let share_left = job.estimates[f].map_or(1.0, |p| {
                if p > 0.0 {
                    ((p - done) / p).max(0.0)
                } else {
                    0.0
                }
            });
            let left: Vec<Option<f64>> = job
                .estimates
                .iter()
                .map(|e| e.map(|e| e * share_left))
                .collect();
            let (arrival, full) = self
                .seen
                .get(&job.id)
                .cloned()
                .unwrap_or((job.started, job.estimates.clone()));
            active.push(ActiveJob {
                id: job.id,
                left,
                full,
                arrival,
                slots: 1,
            });
        }
        for job in view.pending {
            width.insert(job.id, job.width.slots());
            let (arrival, full) = self.seen[&job.id].clone();
            active.push(ActiveJob {
                id: job.id,
                left: job.estimates.clone(),
                full,
                arrival,
                slots: job.width.slots(),
            });
        }
        for job in &mut active {
            job.slots = width[&job.id];
        }
        let mut ids: Vec<usize> = active.iter().map(|j| j.id).collect();
        ids.sort_unstable();
        if ids != self.allocated_for {
            let shares = self.allocator.allocate(view.now, &active, view.flavors)?;
            self.allocations += 1;
            self.shares = active.iter().map(|j| j.id).zip(shares).collect();
            self.allocated_for = ids;
        }
        let shares: Vec<&Vec<f64>> = active.iter().map(|j| &self.shares[&j.id]).collect();

        let mut pairs: Vec<(f64, f64, usize, usize)> = Vec::new();
        for (j, job) in active.iter().enumerate() {
            for (f, p) in job.left.iter().enumerate() {
                if let (Some(p), true) = (p, view.flavors[f].slots > 0) {
                    let had = self.rounds.get(&(job.id, f)).copied().unwrap_or(0.0);
                    pairs.push((shares[j][f] / (had + 1.0), -*p, job.id, f));
                }
            }
        }
        // Highest priority first; among pairs given nothing, fastest.
        pairs.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(b.1.total_cmp(&a.1))
                .then(a.2.cmp(&b.2))
        });
        // Probes hold slots too: only idle machines and running jobs count.
        let mut left = vec![0usize; view.flavors.len()];
        for m in view.idle_machines() {
            left[view.machines[m].flavor] += 1;
        }
        for job in view.running {
            left[view.machines[job.machine].flavor] += 1;
        }
        self.placed.clear();
        for (_, _, id, f) in pairs {
            let slots = width[&id];
            if left[f] >= slots && !self.placed.contains_key(&id) {
                left[f] -= slots;
                self.placed.insert(id, f);
                *self.rounds.entry((id, f)).or_insert(0.0) += 1.0;
            }
        }
        let live: std::collections::HashSet<usize> = active.iter().map(|j| j.id).collect();
        self.rounds.retain(|(id, _), _| live.contains(id));
        self.seen.retain(|id, _| live.contains(id));
        self.round_end = Some(view.now + self.round);
        Ok(())
    }
}

impl<A: Allocator> Policy for RoundBased<A> {
    fn label(&self) -> String {
        self.allocator.label()
    }

    fn preempt(&mut self, view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        if self.round_end.is_some_and(|end| view.now < end) {
            return Ok(Vec::new());
        }
        self.plan_round(view)?;
        let mut stop: Vec<usize> = view
            .running
            .iter()
            .filter(|j| self.placed.get(&j.id) != Some(&view.machines[j.machine].flavor))
            .map(|j| j.id)
            .collect();
        // A job of several slots is listed once per slot.
        let mut seen = std::collections::HashSet::new();
        stop.retain(|id| seen.insert(*id));
        Ok(stop)
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        self.note(view);
        if self.round_end.is_none() {
            self.plan_round(view)?;
        }
        let mut idle = IdleNodes::new(view);
        let mut starts = Vec::new();
        // The round's placement first, then (mid-round arrivals, slots a
        // finished job left) the waiting jobs fastest first.
        let mut rest: Vec<&PendingJob> = Vec::new();
        for job in view.pending {
            match self.placed.get(&job.id) {
                Some(&f) => {
                    if let Some(machines) = idle.take(f, job.width) {
                        starts.extend(gang_starts(job.id, &machines));
                    }
                }
                None => rest.push(job),
            }
        }
        let fastest =
            |j: &PendingJob| best_flavor(&j.estimates, view.flavors).map_or(f64::INFINITY, |b| b.1);
        rest.sort_by(|a, b| fastest(a).total_cmp(&fastest(b)).then(a.id.cmp(&b.id)));
        for job in rest {
            if let Some((f, _)) = best_flavor(&job.estimates, view.flavors) {
                if let Some(machines) = idle.take(f, job.width) {
                    self.placed.insert(job.id, f);
                    starts.extend(gang_starts(job.id, &machines));
                }
            }
        }
        Ok(starts)
    }

    fn wake_at(&self, view: &View<'_>) -> Option<f64> {
        let busy = !view.pending.is_empty() || !view.running.is_empty();
        self.round_end.filter(|_| busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baselines::gavel_maxmin::GavelMaxMin;
    use crate::policy::baselines::testing::{pending, running, two_flavors, view};

    #[test]
    fn the_lp_is_solved_again_only_when_the_active_jobs_change() {
        let (flavors, mut machines) = two_flavors(1, 1);
        let times = [Some(100.0), Some(400.0)];
        let jobs = [pending(0, 0, 0.0, times), pending(1, 1, 0.0, times)];
        let mut policy = GavelMaxMin::new(ROUND_SECONDS);
        let v = view(&flavors, &machines, &jobs, &[]);
        policy.preempt(&v).unwrap();
        let starts = policy.decide(&v).unwrap();
        assert_eq!((starts.len(), policy.allocations), (2, 1));

        // A round later the same two jobs run: the shares are kept, and
        // the round still places (and counts) both.
        machines[0].idle = false;
        machines[1].idle = false;
        let run: Vec<_> = starts
            .iter()
            .map(|s| running(s.job, s.job, s.machine, times))
            .collect();
        let later = View {
            now: 10.0 + ROUND_SECONDS,
            ..view(&flavors, &machines, &[], &run)
        };
        policy.preempt(&later).unwrap();
        assert_eq!(policy.allocations, 1);
        assert_eq!(policy.placed.len(), 2);

        // A third job arrives: the next round solves the LP again.
        let third = [pending(2, 2, 300.0, times)];
        let next = View {
            now: 10.0 + 2.0 * ROUND_SECONDS,
            ..view(&flavors, &machines, &third, &run)
        };
        policy.preempt(&next).unwrap();
        assert_eq!(policy.allocations, 2);
    }
}
