//! Scheduling policies behind one trait.
//!
//! A policy sees a snapshot of the cluster ([`View`]) and answers which
//! pending jobs start now, and where. It never sees true durations, only
//! estimates, so the same code can run in the simulator and inside Slurm.

pub mod allox;
pub mod baselines;
pub mod decision_loop;
pub mod gang_plan;
pub(crate) mod idle_nodes;
pub mod priority_classes;

use crate::model::{best_flavor, Flavor, Width};
use crate::solver::SolveError;
use std::fmt;

/// A pending job as a scheduler knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingJob {
    /// Caller's handle, echoed back in [`Start`].
    pub id: usize,
    /// The job's user, an index into [`View::user_weights`].
    pub user: usize,
    /// When the job arrived, in absolute seconds.
    pub arrival: f64,
    /// Estimated run time per flavor; `None` = cannot run there.
    pub estimates: Vec<Option<f64>>,
    /// The slots it needs at once, all on one flavor: it starts with one
    /// [`Start`] per slot, `width.per_node` on each of `width.nodes`
    /// nodes, all in one answer.
    pub width: Width,
    /// Its priority class: every job of a higher class is served before
    /// any job of a lower one (see [`priority_classes`]); 0 for all when
    /// jobs are equal, as in the simulator.
    pub priority: u32,
}

/// A job already running on a machine. A job of several slots is one
/// `RunningJob` per slot, so shares and service count each slot it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningJob {
    /// Caller's handle, as [`PendingJob::id`] was while it waited.
    pub id: usize,
    /// The job's user, an index into [`View::user_weights`].
    pub user: usize,
    /// The machine it runs on, an index into [`View::machines`].
    pub machine: usize,
    /// When it started, in absolute seconds.
    pub started: f64,
    /// Estimated run time per flavor; `None` = cannot run there.
    pub estimates: Vec<Option<f64>>,
    /// A preemptive policy may stop it. In the simulator every job may
    /// be; in Slurm only one that opted in (and not again before its
    /// minimum run time, nor while it is being stopped).
    pub preemptible: bool,
}

/// One slot of one flavor.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineView {
    /// The machine's flavor, an index into [`View::flavors`].
    pub flavor: usize,
    /// The node it is on: machines with the same node share one; numbers
    /// are unique over the cluster.
    pub node: usize,
    /// When the machine is expected to be free (absolute time); `<= now`
    /// when idle. For a busy machine this is an estimate and may be past.
    pub free_at: f64,
    /// Nothing runs on it now.
    pub idle: bool,
}

/// What a policy sees at one decision point.
#[derive(Clone, Debug)]
pub struct View<'a> {
    /// The time of the decision, in absolute seconds.
    pub now: f64,
    /// The cluster's flavors; [`MachineView::flavor`] indexes them.
    pub flavors: &'a [Flavor],
    /// Every slot of the cluster; [`Start::machine`] indexes them.
    pub machines: &'a [MachineView],
    /// Jobs waiting to start.
    pub pending: &'a [PendingJob],
    /// Jobs running now.
    pub running: &'a [RunningJob],
    /// Weight per user index.
    pub user_weights: &'a [f64],
    /// Service each user has had so far: [`usage_scores`] integrated over
    /// time. Shorter than `user_weights` (or empty) means 0 for the rest.
    pub attained: &'a [f64],
}

impl View<'_> {
    /// The indices into [`View::machines`] of the idle machines.
    pub fn idle_machines(&self) -> impl Iterator<Item = usize> + '_ {
        self.machines
            .iter()
            .enumerate()
            .filter(|(_, m)| m.idle)
            .map(|(i, _)| i)
    }

    /// Time until each machine is free: a busy machine that overran its
    /// estimate is taken to free up imminently, [`OVERRUN_FREE_IN`] from
    /// now, so an idle machine is still the better place to start a job
    /// (a tie would let a job wait for a busy machine while an idle one
    /// goes to another, of a lower priority class, say).
    pub fn free_in(&self, machine: usize) -> f64 {
        let m = &self.machines[machine];
        if m.idle {
            0.0
        } else {
            (m.free_at - self.now).max(OVERRUN_FREE_IN)
        }
    }

    /// The estimate of `job` on the flavor of `machine`, if it may run there.
    pub fn estimate_on(&self, job: &PendingJob, machine: usize) -> Option<f64> {
        job.estimates[self.machines[machine].flavor]
    }
}

/// When a busy machine whose job overran its estimate is taken to free up,
/// in seconds from now: soon, but not now.
pub const OVERRUN_FREE_IN: f64 = 1e-3;

/// Each user's current share of the cluster, AlloX's `L_u`: over the
/// user's running jobs, `DS_best * p_best / p_used` (the share of its
/// fastest flavor the job would take, discounted when it runs on a slower
/// one), divided by the user's weight. Indexed like `user_weights`.
pub fn usage_scores(view: &View<'_>) -> Vec<f64> {
    let mut scores = vec![0.0; view.user_weights.len()];
    for job in view.running {
        scores[job.user] += job_share(view, &job.estimates, view.machines[job.machine].flavor);
    }
    for (s, w) in scores.iter_mut().zip(view.user_weights) {
        *s /= w;
    }
    scores
}

/// One job's part of its user's [`usage_scores`] when it runs on `flavor`,
/// before the user's weight: `DS_best * p_best / p_used`.
pub fn job_share(view: &View<'_>, estimates: &[Option<f64>], flavor: usize) -> f64 {
    match (estimates[flavor], best_flavor(estimates, view.flavors)) {
        (Some(used), Some((fbest, pbest))) => {
            let ds_best = 1.0 / view.flavors[fbest].slots as f64;
            // A zero-length estimate on the used flavor is as fast as it gets.
            let discount = if used > 0.0 { pbest / used } else { 1.0 };
            ds_best * discount
        }
        _ => 0.0,
    }
}

/// Start pending job `job` (a [`PendingJob::id`]) on `machine` now. A
/// job of several slots is started by one `Start` per slot, all in the
/// same answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The job to start, a [`PendingJob::id`].
    pub job: usize,
    /// Where, an index into [`View::machines`].
    pub machine: usize,
}

/// Where and when a policy's plan expects a job it did not start to
/// start, if nothing else changes (no job arrives, every run takes its
/// estimate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Forecast {
    /// The job, a [`PendingJob::id`].
    pub job: usize,
    /// When, on the view's clock ([`View::now`]).
    pub at: f64,
    /// On which flavor.
    pub flavor: usize,
}

/// A scheduling policy. `decide` may keep state between calls (AlloX does
/// not; learning policies will), so it takes `&mut self`.
pub trait Policy {
    /// A short label for tables, e.g. `allox(a=0.5)`.
    fn label(&self) -> String;
    /// Which jobs start now. Each start must name a pending job and an idle
    /// machine of a flavor the job can use, each at most once; callers
    /// check and reject anything else.
    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError>;

    /// Preemptive policies: running jobs (by [`RunningJob::id`]) to stop
    /// now and queue again with the work they have left; asked before
    /// [`Policy::decide`] whenever jobs wait. Only jobs marked
    /// [`RunningJob::preemptible`] may be named.
    fn preempt(&mut self, _view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        Ok(Vec::new())
    }

    /// When the policy wants to decide again even if no job arrives or
    /// ends: a round's end, or a job crossing a priority threshold.
    fn wake_at(&self, _view: &View<'_>) -> Option<f64> {
        None
    }

    /// Planning policies: the jobs their last [`Policy::decide`] planned
    /// but did not start, with when and where, from the plan it made
    /// anyway (no second solve); then, where the policy can say, the jobs
    /// of `more` it did not plan (jobs its view did not hold, such as
    /// those a caller has not checked yet), behind them. Jobs it cannot
    /// place have none. Asked once per instant at most, so a policy may
    /// keep the plan and work the times out here.
    fn forecast(&self, more: &[PendingJob]) -> Vec<Forecast> {
        let _ = more;
        Vec::new()
    }
}

/// A policy could not decide. Callers leave every job pending.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyError {
    /// The solver failed on the policy's instance.
    Solver(SolveError),
    /// A parameter out of its range (alpha, stickiness).
    Parameter(String),
}

impl From<SolveError> for PolicyError {
    fn from(e: SolveError) -> Self {
        PolicyError::Solver(e)
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::Solver(e) => write!(f, "solver failed: {e}"),
            PolicyError::Parameter(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for PolicyError {}

/// Pending jobs in arrival order, ties by id: the order FIFO-like policies
/// and candidate caps use.
pub(crate) fn by_arrival(pending: &[PendingJob]) -> Vec<&PendingJob> {
    // Ids are unique, so the keys are: an unstable sort gives the same
    // order, faster, and keys taken once spare the comparisons a lookup.
    let mut keyed: Vec<((crate::ordered::TotalF64, usize), &PendingJob)> = pending
        .iter()
        .map(|j| ((crate::ordered::TotalF64(j.arrival), j.id), j))
        .collect();
    keyed.sort_unstable_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, j)| j).collect()
}

/// A hasher for job ids (`usize`): one multiply, as in rustc's FxHasher.
/// Ids are not attacker-chosen here, and SipHash showed up at the top of
/// deep-queue profiles.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A map keyed by job id.
pub(crate) type IdMap<V> =
    std::collections::HashMap<usize, V, std::hash::BuildHasherDefault<IdHasher>>;
