//! AlloX's matching kept between decisions, for `--solver exchange` and
//! `--solver classes`.
//!
//! Between two decisions of a busy queue, usually only three things
//! happen: time passes, jobs arrive, and machines start the first job of
//! their planned queue. Both solvers' states absorb each of them exactly
//! (see `solver::exchange` and `solver::classes`), so the next decision
//! costs one augmentation per arrival instead of a cold solve of the whole
//! queue.
//!
//! Anything else (a machine free earlier or later than planned by more
//! than rounding, a job that left the candidates or whose estimates
//! changed, a step the exchange solver cannot certify, a start the class
//! state cannot take) makes [`WarmPlan::update`] or [`WarmPlan::start`]
//! refuse, and the caller solves cold. A warm plan costs what a cold solve
//! of the same jobs costs (for `exchange`, of the same gridded times; see
//! `solver::exchange` on the grid); debug builds check it.

use super::{IdMap, PendingJob};
use crate::solver::classes::Classes;
use crate::solver::exchange::{on_grid, Exchange};
use crate::solver::{Instance, SolverKind};

/// The solver state a plan keeps.
enum State {
    Exchange(Box<Exchange>),
    /// The class solver's state. It starts only a flavor's shortest job on
    /// one of its soonest free machines (what list scheduling puts first
    /// there), which covers the starts of a steady queue.
    Classes(Box<Classes>),
}

pub(crate) struct WarmPlan {
    state: State,
    /// State id -> pending job id.
    ids: Vec<usize>,
    /// Pending job id -> state id, for the jobs not started yet.
    index: IdMap<u32>,
    /// The absolute time the state describes.
    now: f64,
}

impl WarmPlan {
    /// A cold solve of `instance`, whose jobs are `ids`, at time `now`, by
    /// `solver` (`exchange` or `classes`). `None` for another solver, if
    /// the exchange search could not certify a step, or if the class
    /// solver does not take the instance (a preferred machine).
    pub(crate) fn cold(
        instance: &Instance,
        ids: Vec<usize>,
        now: f64,
        solver: SolverKind,
    ) -> Option<Self> {
        let state = match solver {
            SolverKind::Exchange => State::Exchange(Box::new(Exchange::cold(instance).ok()?)),
            SolverKind::Classes => State::Classes(Box::new(Classes::cold(instance).ok()?)),
            _ => return None,
        };
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
        let dt = self.state.step(self.now, now);
        if dt < 0.0 || free_in.len() != self.state.machines() {
            return false;
        }
        for (m, &actual) in free_in.iter().enumerate() {
            let tolerance = self.state.tolerance(actual, now);
            // A machine with a queue must stay busy through `dt`, or it
            // would have started its next job in between.
            if !self.state.stays_busy(m, dt, tolerance) {
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
                if !self.state.holds_times(i, &job.estimates) {
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
            match self.state.add_job(&job.estimates) {
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

impl State {
    /// How far the state's clock moves from `from` to `to`. The exchange
    /// state's clock moves in whole grid steps between the gridded decision
    /// times, so its machines never drift from the view by more than the
    /// rounding of one start and two clock readings.
    fn step(&self, from: f64, to: f64) -> f64 {
        match self {
            State::Exchange(_) => on_grid(to) - on_grid(from),
            State::Classes(_) => to - from,
        }
    }

    /// How far a machine's free time may be from the view's (`actual`, at
    /// time `now`) and still be the same: the grid's rounding for
    /// `exchange`, floating-point rounding of absolute times for `classes`.
    fn tolerance(&self, actual: f64, now: f64) -> f64 {
        match self {
            State::Exchange(_) => 2.0 / 1024.0 + 1e-9 * actual.abs(),
            State::Classes(_) => 1e-6 + 1e-9 * actual.abs() + 8.0 * f64::EPSILON * now.abs(),
        }
    }

    /// Whether `machine` stays busy through `dt` if it has a queue. The
    /// class state has no queues of its own: no machine with jobs may free
    /// before `dt` ([`Classes::room`]).
    fn stays_busy(&self, machine: usize, dt: f64, tolerance: f64) -> bool {
        match self {
            State::Exchange(s) => s.front(machine).is_none() || s.free_in(machine) >= dt,
            State::Classes(s) => dt <= s.room() + tolerance,
        }
    }

    fn holds_times(&self, job: u32, given: &[Option<f64>]) -> bool {
        match self {
            State::Exchange(s) => s
                .times_of(job)
                .iter()
                .zip(given)
                .all(|(held, given)| *held == given.map(on_grid)),
            State::Classes(s) => s.times_of(job) == given,
        }
    }

    fn machines(&self) -> usize {
        match self {
            State::Exchange(s) => s.machines(),
            State::Classes(s) => s.machines(),
        }
    }

    fn flavors(&self) -> usize {
        match self {
            State::Exchange(s) => s.flavors(),
            State::Classes(s) => s.flavors(),
        }
    }

    fn free_in(&self, machine: usize) -> f64 {
        match self {
            State::Exchange(s) => s.free_in(machine),
            State::Classes(s) => s.free_in(machine),
        }
    }

    fn advance(&mut self, dt: f64) {
        match self {
            State::Exchange(s) => s.advance(dt),
            State::Classes(s) => s.advance(dt),
        }
    }

    fn add_job(&mut self, times: &[Option<f64>]) -> Option<u32> {
        match self {
            State::Exchange(s) => s.add_job(times, None).ok(),
            State::Classes(s) => s.add_job(times).ok(),
        }
    }

    fn queues(&self) -> Vec<Vec<u32>> {
        match self {
            State::Exchange(s) => s.queues(),
            State::Classes(s) => s.queues(),
        }
    }

    /// The job a start on `machine` would start.
    fn startable(&self, machine: usize) -> Option<u32> {
        match self {
            State::Exchange(s) => s.front(machine),
            State::Classes(s) => s.startable(machine),
        }
    }

    fn start(&mut self, machine: usize) {
        match self {
            State::Exchange(s) => {
                s.start_front(machine);
            }
            State::Classes(s) => {
                s.start(machine);
            }
        }
    }

    #[cfg(debug_assertions)]
    fn remaining(&self) -> (Instance, Vec<u32>) {
        match self {
            State::Exchange(s) => s.remaining(),
            State::Classes(s) => s.remaining(),
        }
    }

    #[cfg(debug_assertions)]
    fn cost(&self) -> f64 {
        match self {
            State::Exchange(s) => s.cost(),
            State::Classes(s) => s.cost(),
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
