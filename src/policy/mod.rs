//! Scheduling policies behind one trait.
//!
//! A policy sees a snapshot of the cluster ([`View`]) and answers which
//! pending jobs start now, and where. It never sees true durations, only
//! estimates, so the same code can run in the simulator and inside Slurm.

pub mod allox;
pub mod candidates;
pub mod decision_loop;
pub mod drf;
pub mod drfa;
pub mod equal_share;
pub mod fifo;
#[cfg(feature = "cli")]
pub mod ftf;
// Solves an LP with good_lp: only in the command's build, never in the
// Slurm plugin.
#[cfg(feature = "cli")]
pub mod gavel_maxmin;
pub mod jsq;
#[cfg(feature = "cli")]
pub mod max_min;
#[cfg(feature = "cli")]
pub mod rounds;
pub mod sjf;
pub mod srpt;
#[cfg(test)]
pub(crate) mod testing;
pub mod tiresias;
mod warm_plan;

use crate::model::{best_flavor, Flavor};
use crate::solver::SolveError;
use std::fmt;

/// A pending job as a scheduler knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingJob {
    /// Caller's handle, echoed back in [`Start`].
    pub id: usize,
    pub user: usize,
    pub arrival: f64,
    /// Estimated run time per flavor; `None` = cannot run there.
    pub estimates: Vec<Option<f64>>,
}

/// A job already running on a machine.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningJob {
    pub id: usize,
    pub user: usize,
    pub machine: usize,
    pub started: f64,
    pub estimates: Vec<Option<f64>>,
}

/// One slot of one flavor.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineView {
    pub flavor: usize,
    /// When the machine is expected to be free (absolute time); `<= now`
    /// when idle. For a busy machine this is an estimate and may be past.
    pub free_at: f64,
    pub idle: bool,
}

/// What a policy sees at one decision point.
#[derive(Clone, Debug)]
pub struct View<'a> {
    pub now: f64,
    pub flavors: &'a [Flavor],
    pub machines: &'a [MachineView],
    pub pending: &'a [PendingJob],
    pub running: &'a [RunningJob],
    /// Weight per user index.
    pub user_weights: &'a [f64],
    /// Service each user has had so far: [`usage_scores`] integrated over
    /// time. Shorter than `user_weights` (or empty) means 0 for the rest.
    pub attained: &'a [f64],
}

impl View<'_> {
    pub fn idle_machines(&self) -> impl Iterator<Item = usize> + '_ {
        self.machines
            .iter()
            .enumerate()
            .filter(|(_, m)| m.idle)
            .map(|(i, _)| i)
    }

    /// Time until each machine is free, never negative: a busy machine that
    /// overran its estimate is taken to free up imminently.
    pub fn free_in(&self, machine: usize) -> f64 {
        let m = &self.machines[machine];
        if m.idle {
            0.0
        } else {
            (m.free_at - self.now).max(0.0)
        }
    }

    /// The estimate of `job` on the flavor of `machine`, if it may run there.
    pub fn estimate_on(&self, job: &PendingJob, machine: usize) -> Option<f64> {
        job.estimates[self.machines[machine].flavor]
    }
}

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

/// Start pending job `job` (a [`PendingJob::id`]) on `machine` now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    pub job: usize,
    pub machine: usize,
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
    /// [`Policy::decide`] whenever jobs wait. Only the simulator asks: the
    /// Slurm plugin runs AlloX, which never preempts.
    fn preempt(&mut self, _view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        Ok(Vec::new())
    }

    /// When the policy wants to decide again even if no job arrives or
    /// ends: a round's end, or a job crossing a priority threshold.
    fn wake_at(&self, _view: &View<'_>) -> Option<f64> {
        None
    }
}

/// A policy could not decide. Callers leave every job pending.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyError {
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

/// The idle machines of each flavor, taken lowest index first: the
/// bookkeeping of the greedy policies, which start jobs one by one.
pub(crate) struct IdleByFlavor(Vec<std::collections::VecDeque<usize>>);

impl IdleByFlavor {
    pub(crate) fn new(view: &View<'_>) -> Self {
        let mut idle = vec![std::collections::VecDeque::new(); view.flavors.len()];
        for m in view.idle_machines() {
            idle[view.machines[m].flavor].push_back(m);
        }
        IdleByFlavor(idle)
    }

    pub(crate) fn has(&self, flavor: usize) -> bool {
        !self.0[flavor].is_empty()
    }

    pub(crate) fn take(&mut self, flavor: usize) -> Option<usize> {
        self.0[flavor].pop_front()
    }

    pub(crate) fn count(&self, flavor: usize) -> usize {
        self.0[flavor].len()
    }

    pub(crate) fn any(&self) -> bool {
        self.0.iter().any(|q| !q.is_empty())
    }
}

/// Progressive filling across users, the rule of the DRF policies: while
/// some user has a job that can start, the user whose `share` of `held` is
/// smallest (ties: lower index) starts the first job of its queue that
/// `place` finds an idle flavor for, and `take` adds the slot to `held`.
/// A job that cannot start now does not block its user's later jobs.
pub(crate) fn progressive_filling<H>(
    held: &mut H,
    mut queues: Vec<Vec<&PendingJob>>,
    idle: &mut IdleByFlavor,
    share: impl Fn(&H, usize) -> f64,
    place: impl Fn(&PendingJob, &IdleByFlavor) -> Option<usize>,
    take: impl Fn(&mut H, usize, usize),
) -> Vec<Start> {
    let mut starts = Vec::new();
    while idle.any() {
        let next = (0..queues.len())
            .filter_map(|u| {
                let i = queues[u].iter().position(|j| place(j, idle).is_some())?;
                Some((share(held, u), u, i))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let Some((_, u, i)) = next else { break };
        let job = queues[u].remove(i);
        let f = place(job, idle).expect("the candidate has an idle flavor");
        let machine = idle.take(f).expect("checked idle");
        take(held, u, f);
        starts.push(Start {
            job: job.id,
            machine,
        });
    }
    starts
}

/// A job's flavors that have slots, fastest first (ties: lower index).
pub(crate) fn flavors_by_speed(job: &PendingJob, flavors: &[Flavor]) -> Vec<usize> {
    let mut order: Vec<(f64, usize)> = job
        .estimates
        .iter()
        .enumerate()
        .filter(|(f, _)| flavors[*f].slots > 0)
        .filter_map(|(f, t)| t.map(|t| (t, f)))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    order.into_iter().map(|(_, f)| f).collect()
}

/// Pending jobs shortest first by their fastest estimate, ties by arrival
/// then id: the order SJF-like policies use.
pub(crate) fn by_fastest<'a>(pending: &'a [PendingJob], flavors: &[Flavor]) -> Vec<&'a PendingJob> {
    use crate::ordered::TotalF64;
    let mut keyed: Vec<((TotalF64, TotalF64, usize), &PendingJob)> = pending
        .iter()
        .map(|j| {
            let fastest = best_flavor(&j.estimates, flavors).map_or(f64::INFINITY, |b| b.1);
            ((TotalF64(fastest), TotalF64(j.arrival), j.id), j)
        })
        .collect();
    // Unique keys (they end with the id): unstable is the same order.
    keyed.sort_unstable_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, j)| j).collect()
}

/// One job in a preemptive policy's ranking, best first.
pub(crate) enum Ranked {
    /// Keeps its machine if a slot of its flavor is left for it.
    Running { id: usize, flavor: usize },
    /// Would start on this flavor if a slot of it is left for it.
    Pending { flavor: usize },
}

/// The indices of the `n` smallest keys among `members` (indices into
/// `keys`), in no order: a selection, not a sort.
fn smallest<K: Ord + Copy>(keys: &[K], mut members: Vec<usize>, n: usize) -> Vec<usize> {
    if members.len() > n {
        if n == 0 {
            return Vec::new();
        }
        members.select_nth_unstable_by_key(n - 1, |&i| keys[i]);
        members.truncate(n);
    }
    members
}

/// Walks `ranked` best first (keys unique); each job claims a slot of its
/// flavor while one is left (machines idle or running a job; not probes).
/// Returns the running jobs left without one, best first: the jobs to
/// preempt so that every better job can run.
///
/// Claims of one flavor never touch another's, so the walk is the same as
/// letting each flavor's best jobs claim its slots: a selection per flavor
/// instead of a sort of the whole queue, which was most of a simulated
/// Tiresias run (it sorted a deep queue twice an event).
pub(crate) fn outranked<K: Ord + Copy>(view: &View<'_>, ranked: &[(K, Ranked)]) -> Vec<usize> {
    let mut slots = vec![0usize; view.flavors.len()];
    for m in view.idle_machines() {
        slots[view.machines[m].flavor] += 1;
    }
    for job in view.running {
        slots[view.machines[job.machine].flavor] += 1;
    }
    let flavor = |r: &Ranked| match *r {
        Ranked::Running { flavor, .. } | Ranked::Pending { flavor } => flavor,
    };
    let keys: Vec<K> = ranked.iter().map(|(k, _)| *k).collect();
    let mut by_flavor: Vec<Vec<usize>> = vec![Vec::new(); view.flavors.len()];
    for (i, (_, r)) in ranked.iter().enumerate() {
        by_flavor[flavor(r)].push(i);
    }
    let mut claims = vec![false; ranked.len()];
    for (f, members) in by_flavor.into_iter().enumerate() {
        for i in smallest(&keys, members, slots[f]) {
            claims[i] = true;
        }
    }
    let mut out: Vec<(K, usize)> = ranked
        .iter()
        .zip(&claims)
        .filter_map(|((key, r), &claimed)| match *r {
            Ranked::Running { id, .. } if !claimed => Some((*key, id)),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out.into_iter().map(|(_, id)| id).collect()
}

/// Starts the jobs of `order` best first (keys unique), each on an idle
/// machine of its fastest flavor: the `decide` of the preemptive policies,
/// whose ranking already made room. As in [`outranked`], each flavor's
/// idle machines go to its best jobs, found by selection.
pub(crate) fn start_in_order<K: Ord + Copy>(
    view: &View<'_>,
    order: &[(K, &PendingJob)],
) -> Vec<Start> {
    let mut idle = IdleByFlavor::new(view);
    let keys: Vec<K> = order.iter().map(|(k, _)| *k).collect();
    let mut by_flavor: Vec<Vec<usize>> = vec![Vec::new(); view.flavors.len()];
    for (i, (_, job)) in order.iter().enumerate() {
        if let Some((f, _)) = best_flavor(&job.estimates, view.flavors) {
            if idle.has(f) {
                by_flavor[f].push(i);
            }
        }
    }
    let mut chosen: Vec<(K, usize, usize)> = Vec::new();
    for (f, members) in by_flavor.into_iter().enumerate() {
        chosen.extend(
            smallest(&keys, members, idle.count(f))
                .into_iter()
                .map(|i| (keys[i], i, f)),
        );
    }
    chosen.sort_unstable_by_key(|&(k, _, _)| k);
    chosen
        .into_iter()
        .filter_map(|(_, i, f)| {
            idle.take(f).map(|machine| Start {
                job: order[i].1.id,
                machine,
            })
        })
        .collect()
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
