//! AlloX's matching kept between decisions, for `--solver classes`.
//!
//! Between two decisions of a busy queue, usually only three things
//! happen: time passes, jobs arrive, and machines start the first job of
//! their planned queue. The class solver's state absorbs each of them
//! exactly (see `solver::classes`), so the next decision costs one
//! augmentation per arrival instead of a cold solve of the whole queue.
//!
//! Anything else (a machine free earlier or later than planned by more
//! than rounding, a job that left the candidates or whose estimates
//! changed, a start the class state cannot take) makes
//! [`WarmPlan::update`] or [`WarmPlan::start`] refuse, and the caller
//! solves cold. A warm plan costs what a cold solve of the same jobs
//! costs; debug builds check it.

use crate::policy::{IdMap, PendingJob};
use crate::solver::classes::Classes;
use crate::solver::Instance;

pub(crate) struct WarmPlan {
    /// The class solver's state. It starts only a flavor's shortest job on
    /// one of its soonest free machines (what list scheduling puts first
    /// there), which covers the starts of a steady queue.
    state: Box<Classes>,
    /// State id -> pending job id.
    ids: Vec<usize>,
    /// Pending job id -> state id, for the jobs not started yet.
    index: IdMap<u32>,
    /// The absolute time the state describes.
    now: f64,
}

impl WarmPlan {
    /// A cold solve of `instance`, whose jobs are `ids`, at time `now`, by
    /// the class solver. `None` if it does not take the instance (a
    /// preferred machine).
    pub(crate) fn cold(instance: &Instance, ids: Vec<usize>, now: f64) -> Option<Self> {
        let state = Box::new(Classes::cold(instance).ok()?);
        let index = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        Some(WarmPlan {
            state,
            ids,
            index,
            now,
        })
    }

    /// Brings the plan to time `now`, machines free in `free_in`, and
    /// exactly these candidates. False if that is not a warm step (the plan
    /// is then unusable and must be dropped).
    pub(crate) fn update(&mut self, now: f64, free_in: &[f64], candidates: &[&PendingJob]) -> bool {
        let dt = now - self.now;
        if dt < 0.0 || free_in.len() != self.state.machines() {
            return false;
        }
        for (m, &actual) in free_in.iter().enumerate() {
            // Floating-point rounding of absolute times.
            let tolerance = 1e-6 + 1e-9 * actual.abs() + 8.0 * f64::EPSILON * now.abs();
            // A machine with a queue must stay busy through `dt`, or it
            // would have started its next job in between. The class state
            // has no queues of its own: no machine with jobs may free
            // before `dt` ([`Classes::room`]).
            if dt > self.state.room() + tolerance {
                return false;
            }
            let expected = (self.state.free_in(m) - dt).max(0.0);
            if (expected - actual).abs() > tolerance {
                return false;
            }
        }
        // Every job the state holds must still be a candidate, with the
        // same estimates; anything else is not a warm step.
        let flavors = self.state.flavors();
        let mut kept = 0;
        for job in candidates {
            if job.estimates.len() != flavors {
                return false;
            }
            if let Some(&i) = self.index.get(&job.id) {
                if self.state.times_of(i) != job.estimates.as_slice() {
                    return false;
                }
                kept += 1;
            }
        }
        if kept != self.index.len() {
            return false;
        }
        self.state.advance(dt);
        self.now = now;
        for job in candidates {
            if self.index.contains_key(&job.id) {
                continue;
            }
            match self.state.add_job(&job.estimates).ok() {
                Some(i) => {
                    debug_assert_eq!(i as usize, self.ids.len());
                    self.ids.push(job.id);
                    self.index.insert(job.id, i);
                }
                None => return false,
            }
        }
        #[cfg(debug_assertions)]
        self.check_against_cold();
        true
    }

    /// Debug builds, small queues: the warm plan costs what a cold solve of
    /// the same jobs costs.
    #[cfg(debug_assertions)]
    fn check_against_cold(&self) {
        if self.index.len() > 64 {
            return;
        }
        let (instance, _) = self.state.remaining();
        if let Ok(cold) = crate::solver::fast::solve(&instance) {
            let warm = self.state.cost();
            let tolerance = 1e-9 * cold.objective.abs().max(1.0);
            assert!(
                (warm - cold.objective).abs() <= tolerance,
                "warm plan {warm} != cold solve {}",
                cold.objective
            );
        }
    }

    /// Per machine, the pending ids in run order.
    pub(crate) fn queues(&self) -> Vec<Vec<usize>> {
        self.state
            .queues()
            .into_iter()
            .map(|q| q.into_iter().map(|i| self.ids[i as usize]).collect())
            .collect()
    }

    /// Starts `job`, which must be first on `machine`. False if it is not,
    /// or if the state cannot take that start.
    pub(crate) fn start(&mut self, machine: usize, job: usize) -> bool {
        match self.index.get(&job) {
            Some(&i) if self.state.startable(machine) == Some(i) => {
                self.state.start(machine);
                self.index.remove(&job);
                true
            }
            _ => false,
        }
    }
}

/// The warm plan as a field of a `Clone + Debug` policy: a clone starts
/// cold, since the state is a cache, not part of the policy's settings.
#[derive(Default)]
pub(crate) struct WarmSlot(pub(crate) Option<WarmPlan>);

impl Clone for WarmSlot {
    fn clone(&self) -> Self {
        WarmSlot(None)
    }
}

impl std::fmt::Debug for WarmSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WarmSlot({})",
            if self.0.is_some() { "warm" } else { "cold" }
        )
    }
}
