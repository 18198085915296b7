//! Greedy join-the-shortest-queue, the heuristic AlloX's motivating example
//! argues against: in arrival order, each job joins the machine where it
//! would finish earliest given the work already queued there (ties: the
//! shorter run, then the lower machine). Jobs at the head of an idle
//! machine's queue start; the rest are re-planned at the next event. A job
//! of several slots joins the nodes where its gang would finish earliest:
//! on each node the machines that free first, and the nodes whose share
//! frees first.

use super::{by_arrival, gang_starts, PendingJob, Policy, PolicyError, Start, View};
use crate::ordered::TotalF64;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Per flavor, its machines by when their queues empty (soonest first,
/// then the lower machine): a job's best machine on a flavor is that
/// flavor's soonest, since its run time is the same on all of them. Lazy:
/// a machine's entry is stale once its queue grew.
struct Queues {
    ready: Vec<f64>,
    heaps: Vec<BinaryHeap<Reverse<(TotalF64, usize)>>>,
}

impl Queues {
    fn new(view: &View<'_>) -> Self {
        let ready: Vec<f64> = (0..view.machines.len()).map(|m| view.free_in(m)).collect();
        let mut heaps = vec![BinaryHeap::new(); view.flavors.len()];
        for (m, mv) in view.machines.iter().enumerate() {
            heaps[mv.flavor].push(Reverse((TotalF64(ready[m]), m)));
        }
        Queues { ready, heaps }
    }

    /// The machine of `flavor` whose queue empties first, and when.
    fn soonest(&mut self, flavor: usize) -> Option<(f64, usize)> {
        let heap = &mut self.heaps[flavor];
        while let Some(&Reverse((TotalF64(r), m))) = heap.peek() {
            if r == self.ready[m] {
                return Some((r, m));
            }
            heap.pop();
        }
        None
    }

    /// Machine `m` (of `flavor`) is busy until `t`.
    fn extend(&mut self, m: usize, flavor: usize, t: f64) {
        self.ready[m] = t;
        self.heaps[flavor].push(Reverse((TotalF64(t), m)));
    }
}

/// Join the shortest queue; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct Jsq;

impl Policy for Jsq {
    fn label(&self) -> String {
        "jsq".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut queues = Queues::new(view);
        let mut taken = vec![false; view.machines.len()];
        let mut starts = Vec::new();
        let mut node_machines: Vec<Vec<usize>> = Vec::new();
        for (m, mv) in view.machines.iter().enumerate() {
            if node_machines.len() <= mv.node {
                node_machines.resize(mv.node + 1, Vec::new());
            }
            node_machines[mv.node].push(m);
        }
        for job in by_arrival(view.pending) {
            if !job.width.is_one() {
                if let Some((start, finish, machines)) =
                    earliest_gang(view, job, &node_machines, &queues.ready, &taken)
                {
                    if start == 0.0 && machines.iter().all(|&m| view.machines[m].idle) {
                        starts.extend(gang_starts(job.id, &machines));
                        for &m in &machines {
                            taken[m] = true;
                        }
                    }
                    for m in machines {
                        queues.extend(m, view.machines[m].flavor, finish);
                    }
                }
                continue;
            }
            let best = (0..view.flavors.len())
                .filter_map(|f| {
                    let p = job.estimates[f]?;
                    let (ready, m) = queues.soonest(f)?;
                    Some((ready + p, p, m))
                })
                .min_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then(a.1.total_cmp(&b.1))
                        .then(a.2.cmp(&b.2))
                });
            let Some((finish, _, m)) = best else { continue };
            if view.machines[m].idle && !taken[m] {
                taken[m] = true;
                starts.push(Start {
                    job: job.id,
                    machine: m,
                });
            }
            queues.extend(m, view.machines[m].flavor, finish);
        }
        Ok(starts)
    }
}

/// Where a job of several slots would finish earliest: its start, its
/// finish and the machines (the soonest ready on each of the soonest ready
/// nodes of a flavor it can use); ties go to the lower flavor.
fn earliest_gang(
    view: &View<'_>,
    job: &PendingJob,
    node_machines: &[Vec<usize>],
    ready: &[f64],
    taken: &[bool],
) -> Option<(f64, f64, Vec<usize>)> {
    let w = job.width;
    let mut best: Option<(f64, f64, Vec<usize>)> = None;
    for (f, p) in job.estimates.iter().enumerate() {
        let Some(p) = *p else { continue };
        // (when the node's `per_node` soonest machines are all ready, them)
        let mut nodes: Vec<(f64, Vec<usize>)> = node_machines
            .iter()
            .filter(|ms| ms.first().is_some_and(|&m| view.machines[m].flavor == f))
            .filter_map(|ms| {
                let mut by_ready: Vec<(TotalF64, usize)> = ms
                    .iter()
                    .map(|&m| {
                        let t = if taken[m] { f64::INFINITY } else { ready[m] };
                        (TotalF64(t), m)
                    })
                    .collect();
                by_ready.sort_unstable();
                by_ready.truncate(w.per_node);
                let at = by_ready.last()?.0 .0;
                (by_ready.len() == w.per_node && at.is_finite())
                    .then(|| (at, by_ready.into_iter().map(|(_, m)| m).collect()))
            })
            .collect();
        if nodes.len() < w.nodes {
            continue;
        }
        nodes.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        nodes.truncate(w.nodes);
        let start = nodes.last().map_or(0.0, |n| n.0);
        if best.as_ref().is_none_or(|b| start + p < b.1) {
            let machines = nodes.into_iter().flat_map(|(_, ms)| ms).collect();
            best = Some((start, start + p, machines));
        }
    }
    best
}
