//! The baselines fairmatch is compared with, one per file: FIFO on the
//! fastest idle flavor (`fifo`), join-the-shortest-queue (`jsq`), shortest
//! job first (`sjf`), DRF across users (`drf`: AlloX's DRFF and DRFS) and
//! over a virtual CPU (`drfa`), equal share (`equal_share`), the
//! preemptive SRPT (`srpt`) and Tiresias (`tiresias`), Slurm's own
//! priority order with backfill (`slurm_backfill`), and, in the
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
pub mod slurm_backfill;
pub mod srpt;
#[cfg(test)]
pub(crate) mod testing;
pub mod tiresias;

pub(crate) use super::idle_nodes::{gang_starts, IdleNodes};
use super::{by_arrival, IdMap, PendingJob, Policy, PolicyError, RunningJob, Start, View};
use crate::model::{best_flavor, Flavor, Width};

/// Progressive filling across users, the rule of the DRF policies: while
/// some user has a job that can start, the user whose `share` of `held` is
/// smallest (ties: lower index) starts the first job of its queue that
/// `place` finds an idle flavor for, and `take` adds its slots (user,
/// flavor, how many) to `held`. A job that cannot start now does not block
/// its user's later jobs.
pub(crate) fn progressive_filling<H>(
    held: &mut H,
    mut queues: Vec<Vec<&PendingJob>>,
    idle: &mut IdleNodes,
    share: impl Fn(&H, usize) -> f64,
    place: impl Fn(&PendingJob, &IdleNodes) -> Option<usize>,
    take: impl Fn(&mut H, usize, usize, usize),
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
        let machines = idle.take(f, job.width).expect("checked idle");
        take(held, u, f, machines.len());
        starts.extend(gang_starts(job.id, &machines));
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

/// One job in a preemptive policy's ranking, best first. A running job of
/// several slots is ranked once per slot it holds (as [`View::running`]
/// lists it), with the same key.
pub(crate) enum Ranked {
    /// Keeps its machine if a slot of its flavor is left for it.
    Running { id: usize, flavor: usize },
    /// Would start on this flavor if its width's slots are left for it
    /// there, node by node.
    Pending { flavor: usize, width: Width },
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

/// Walks `ranked` best first (keys unique but for a running job's slots);
/// each job claims its slots of its flavor while they are left (machines
/// idle or running a job; not probes), a job too wide for what is left
/// claiming none. Returns the running jobs left without all their slots,
/// best first: the jobs to preempt so that every better job can run.
/// With gangs, claims are node by node: a running job keeps its slots if
/// its nodes still have them; a waiting gang claims best-fit nodes, so a
/// job is preempted only where a better gang's claim needs its node.
///
/// Claims of one flavor never touch another's, so when every job is one
/// slot wide the walk is the same as letting each flavor's best jobs claim
/// its slots: a selection per flavor instead of a sort of the whole queue,
/// which was most of a simulated Tiresias run (it sorted a deep queue twice
/// an event).
pub(crate) fn outranked<K: Ord + Copy>(view: &View<'_>, ranked: &[(K, Ranked)]) -> Vec<usize> {
    let wide = ranked
        .iter()
        .any(|(_, r)| matches!(*r, Ranked::Pending { width, .. } if !width.is_one()))
        || view.flavors.iter().any(|f| f.per_node > 1)
        || {
            let mut ids: Vec<usize> = view.running.iter().map(|j| j.id).collect();
            ids.sort_unstable();
            ids.windows(2).any(|w| w[0] == w[1])
        };
    if wide {
        return outranked_by_width(view, ranked);
    }
    let mut slots = vec![0usize; view.flavors.len()];
    for m in view.idle_machines() {
        slots[view.machines[m].flavor] += 1;
    }
    for job in view.running {
        slots[view.machines[job.machine].flavor] += 1;
    }
    let flavor = |r: &Ranked| match *r {
        Ranked::Running { flavor, .. } | Ranked::Pending { flavor, .. } => flavor,
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

/// [`outranked`] with jobs of any width: the walk itself, in key order.
fn outranked_by_width<K: Ord + Copy>(view: &View<'_>, ranked: &[(K, Ranked)]) -> Vec<usize> {
    // Per node: its flavor and the slots left to claim (idle or running a
    // job; not probes).
    let nodes = view.machines.iter().map(|m| m.node + 1).max().unwrap_or(0);
    let mut left = vec![0usize; nodes];
    let mut flavor_of = vec![usize::MAX; nodes];
    for m in view.idle_machines() {
        left[view.machines[m].node] += 1;
        flavor_of[view.machines[m].node] = view.machines[m].flavor;
    }
    // A running job once, with the node of each slot it holds.
    let mut held: IdMap<Vec<usize>> = IdMap::default();
    for job in view.running {
        let node = view.machines[job.machine].node;
        left[node] += 1;
        flavor_of[node] = view.machines[job.machine].flavor;
        held.entry(job.id).or_default().push(node);
    }
    let mut order: Vec<usize> = (0..ranked.len()).collect();
    order.sort_unstable_by_key(|&i| ranked[i].0);
    let mut out = Vec::new();
    for i in order {
        match ranked[i].1 {
            Ranked::Running { id, .. } => {
                let Some(on) = held.remove(&id) else { continue };
                let mut need: Vec<(usize, usize)> = Vec::new();
                for n in on {
                    match need.iter_mut().find(|(m, _)| *m == n) {
                        Some((_, k)) => *k += 1,
                        None => need.push((n, 1)),
                    }
                }
                if need.iter().all(|&(n, k)| left[n] >= k) {
                    for (n, k) in need {
                        left[n] -= k;
                    }
                } else {
                    out.push(id);
                }
            }
            Ranked::Pending { flavor, width } => {
                // Best fit: the nodes with the fewest slots left that hold
                // its share, ties by node.
                let mut fit: Vec<(usize, usize)> = (0..nodes)
                    .filter(|&n| flavor_of[n] == flavor && left[n] >= width.per_node)
                    .map(|n| (left[n], n))
                    .collect();
                if fit.len() >= width.nodes {
                    fit.sort_unstable();
                    for &(_, n) in &fit[..width.nodes] {
                        left[n] -= width.per_node;
                    }
                }
            }
        }
    }
    out
}

/// Starts the jobs of `order` best first (keys unique), each on idle
/// machines of its fastest flavor: the `decide` of the preemptive policies,
/// whose ranking already made room. As in [`outranked`], when every job is
/// one slot wide each flavor's idle machines go to its best jobs, found by
/// selection; otherwise the jobs are walked in order, each taking its
/// width's slots (best fit) if they are idle.
pub(crate) fn start_in_order<K: Ord + Copy>(
    view: &View<'_>,
    order: &[(K, &PendingJob)],
) -> Vec<Start> {
    let mut idle = IdleNodes::new(view);
    if order.iter().any(|(_, j)| !j.width.is_one()) {
        let mut sorted: Vec<&(K, &PendingJob)> = order.iter().collect();
        sorted.sort_unstable_by_key(|(k, _)| *k);
        let mut starts = Vec::new();
        for (_, job) in sorted {
            if !idle.any() {
                break;
            }
            if let Some((f, _)) = best_flavor(&job.estimates, view.flavors) {
                if let Some(machines) = idle.take(f, job.width) {
                    starts.extend(gang_starts(job.id, &machines));
                }
            }
        }
        return starts;
    }
    let keys: Vec<K> = order.iter().map(|(k, _)| *k).collect();
    let mut by_flavor: Vec<Vec<usize>> = vec![Vec::new(); view.flavors.len()];
    for (i, (_, job)) in order.iter().enumerate() {
        if let Some((f, _)) = best_flavor(&job.estimates, view.flavors) {
            if idle.count(f) > 0 {
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
            idle.take(f, order[i].1.width).map(|m| Start {
                job: order[i].1.id,
                machine: m[0],
            })
        })
        .collect()
}
