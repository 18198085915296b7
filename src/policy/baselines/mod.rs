//! The baselines fairmatch is compared with, one per file: FIFO on the
//! fastest idle flavor (`fifo`), join-the-shortest-queue (`jsq`), shortest
//! job first (`sjf`), DRF across users (`drf`: AlloX's DRFF and DRFS) and
//! over a virtual CPU (`drfa`), equal share (`equal_share`), the
//! preemptive SRPT (`srpt`) and Tiresias (`tiresias`), and, in the
//! command's build only (they solve LPs with `good_lp`), Gavel's rounds
//! (`rounds`) with their max-min LP (`max_min`) under Gavel's max-min
//! fairness (`gavel_maxmin`) and finish-time fairness (`ftf`). Below: the
//! bookkeeping they share.

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

use super::{by_arrival, IdMap, PendingJob, Policy, PolicyError, RunningJob, Start, View};
use crate::model::{best_flavor, Flavor};

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
