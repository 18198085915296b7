//! AlloX's start-time forecasts ([`Policy::forecast`]), read off the plan
//! it made anyway: each job of the matching's queues starts when the runs
//! before it on its machine end (the gang plan's serial schedule, in
//! `gangs`). The jobs the plan left out (past the candidate cap, or not in
//! its view at all) follow in the order the cap would let them in, each
//! where it finishes soonest behind the plan ([`Tail`]): what the next
//! plans would do if no other job came, approximately.
//!
//! [`Policy::forecast`]: crate::policy::Policy::forecast

use super::candidates::CandidateRule;
use crate::model::Width;
use crate::ordered::TotalF64;
use crate::policy::{Forecast, IdMap, PendingJob, View};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// The forecasts of a decision whose matching left `queues` (per
/// machine, in order) on machines free in `free_in`, with `left` the jobs
/// still waiting (the queued ones among them); and where every node's
/// slots free behind them, for the jobs it did not plan.
pub(super) fn starts(
    view: &View<'_>,
    queues: &[Vec<usize>],
    free_in: &[f64],
    left: &[&PendingJob],
    rule: CandidateRule,
) -> (Vec<Forecast>, Tail) {
    let by_id: IdMap<&PendingJob> = left.iter().map(|j| (j.id, *j)).collect();
    let mut out = Vec::new();
    let mut planned: IdMap<()> = IdMap::default();
    // Each (node, flavor) is a node of the tail: a node may hold
    // machines of two flavors (its GPUs and its CPUs).
    let mut tail_node: HashMap<(usize, usize), usize> = HashMap::new();
    let mut ends: Vec<(usize, Vec<f64>)> = Vec::new();
    for (m, queue) in queues.iter().enumerate() {
        let machine = &view.machines[m];
        let flavor = machine.flavor;
        let mut t = free_in[m];
        for job in queue {
            let Some(length) = by_id.get(job).and_then(|j| j.estimates[flavor]) else {
                break;
            };
            out.push(Forecast {
                job: *job,
                at: view.now + t,
                flavor,
            });
            planned.insert(*job, ());
            t += length;
        }
        let next = ends.len();
        let n = *tail_node.entry((machine.node, flavor)).or_insert(next);
        if n == next {
            ends.push((flavor, Vec::new()));
        }
        ends[n].1.push(t);
    }
    let mut tail = Tail::new(view.now, view.flavors.len());
    for (flavor, slots) in ends {
        tail.add_node(flavor, slots);
    }
    let rest: Vec<&PendingJob> = left
        .iter()
        .copied()
        .filter(|j| !planned.contains_key(&j.id))
        .collect();
    let rest = tail.in_cap_order(rest, rule);
    out.extend(tail.follow(&rest));
    (out, tail)
}

/// Slot ends closer than this (seconds) count as one time: a slot freed
/// by a job ending at `t` is free for one starting at `t`.
const SAME_TIME: f64 = 1e-6;

/// Where each node's slots free, from now, once the jobs a plan placed
/// have run: the jobs it did not place follow there, one after another,
/// each on the flavor where it finishes soonest. Each node keeps its
/// slots, so a gang waits until enough of them free on enough nodes.
#[derive(Clone, Debug, Default)]
pub(super) struct Tail {
    now: f64,
    /// Per node: its flavor, and when each of its slots frees (from
    /// now), soonest first.
    nodes: Vec<(usize, Vec<f64>)>,
    /// Per flavor, its nodes.
    by_flavor: Vec<Vec<usize>>,
    /// Per flavor, its nodes by when their first slot frees, for one-slot
    /// jobs; an entry is stale once its node's first slot moved (checked
    /// when it comes up), so each move only pushes.
    first_free: Vec<BinaryHeap<Reverse<(TotalF64, usize)>>>,
}

impl Tail {
    /// No nodes yet, at `now`, for `flavors` flavors.
    pub(super) fn new(now: f64, flavors: usize) -> Self {
        Tail {
            now,
            nodes: Vec::new(),
            by_flavor: vec![Vec::new(); flavors],
            first_free: vec![BinaryHeap::new(); flavors],
        }
    }

    /// A node of `flavor` whose slots free in `slots` (from now; 0 if
    /// idle). Nodes are numbered in the order they are added.
    pub(super) fn add_node(&mut self, flavor: usize, mut slots: Vec<f64>) {
        slots.sort_by(f64::total_cmp);
        let n = self.nodes.len();
        if let Some(of_flavor) = self.by_flavor.get_mut(flavor) {
            of_flavor.push(n);
        }
        self.nodes.push((flavor, slots));
        self.note_first_free(n);
    }

    fn note_first_free(&mut self, n: usize) {
        let (flavor, slots) = &self.nodes[n];
        if let (Some(heap), Some(&first)) = (self.first_free.get_mut(*flavor), slots.first()) {
            heap.push(Reverse((TotalF64(first), n)));
        }
    }

    /// A job runs `per_node` slots of each of `nodes` from `start` to
    /// `end`: on each node the slots free by `start` that freed last
    /// (best fit, so earlier holes stay for shorter jobs), or the soonest
    /// ones if fewer are free by then.
    pub(super) fn hold(&mut self, nodes: &[usize], per_node: usize, start: f64, end: f64) {
        for &n in nodes {
            let slots = &mut self.nodes[n].1;
            let k = per_node.min(slots.len());
            let free = slots.partition_point(|&e| e <= start + SAME_TIME);
            let from = free.saturating_sub(k).min(slots.len() - k);
            for s in &mut slots[from..from + k] {
                *s = end;
            }
            slots.sort_by(f64::total_cmp);
            self.note_first_free(n);
        }
    }

    /// The soonest a job of `width` can start on `flavor` (from now), and
    /// on which nodes: those where its share of slots frees first.
    fn earliest(&mut self, flavor: usize, width: Width) -> Option<(f64, Vec<usize>)> {
        if width.is_one() {
            let heap = self.first_free.get_mut(flavor)?;
            while let Some(&Reverse((TotalF64(t), n))) = heap.peek() {
                if self.nodes[n].1.first() == Some(&t) {
                    return Some((t.max(0.0), vec![n]));
                }
                heap.pop();
            }
            return None;
        }
        let k = width.per_node;
        let ready = self.by_flavor.get(flavor)?.iter().filter_map(|&n| {
            let slots = &self.nodes[n].1;
            (slots.len() >= k).then(|| (slots[k - 1], n))
        });
        if width.nodes == 1 {
            let (t, n) = ready.min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))?;
            return Some((t.max(0.0), vec![n]));
        }
        let mut ready: Vec<(f64, usize)> = ready.collect();
        if ready.len() < width.nodes {
            return None;
        }
        let by_time = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        ready.select_nth_unstable_by(width.nodes - 1, by_time);
        ready.truncate(width.nodes);
        let t = ready.iter().map(|r| r.0).fold(0.0, f64::max);
        Some((t, ready.into_iter().map(|r| r.1).collect()))
    }

    /// `jobs`, in order, each on the flavor where it finishes soonest
    /// behind the jobs before it: when each would start.
    pub(super) fn follow(&mut self, jobs: &[&PendingJob]) -> Vec<Forecast> {
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            let soonest = (0..self.by_flavor.len())
                .filter_map(|f| {
                    let p = (*job.estimates.get(f)?)?;
                    let (t, nodes) = self.earliest(f, job.width)?;
                    Some((f, t, t + p, nodes))
                })
                .min_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
            let Some((flavor, start, end, nodes)) = soonest else {
                continue;
            };
            self.hold(&nodes, job.width.per_node, start, end);
            out.push(Forecast {
                job: job.id,
                at: self.now + start,
                flavor,
            });
        }
        out
    }

    /// `jobs` in the order the candidate cap takes them in: first come,
    /// or (`Shortest`) fastest first on a flavor the tail has, equal ones
    /// first come.
    pub(super) fn in_cap_order<'a>(
        &self,
        mut jobs: Vec<&'a PendingJob>,
        rule: CandidateRule,
    ) -> Vec<&'a PendingJob> {
        jobs.sort_by(|a, b| a.arrival.total_cmp(&b.arrival).then(a.id.cmp(&b.id)));
        if rule == CandidateRule::Shortest {
            let fastest = |j: &PendingJob| {
                j.estimates
                    .iter()
                    .enumerate()
                    .filter(|(f, _)| self.by_flavor.get(*f).is_some_and(|n| !n.is_empty()))
                    .filter_map(|(_, t)| *t)
                    .fold(f64::INFINITY, f64::min)
            };
            // Stable: equal ones keep their order of arrival.
            jobs.sort_by(|a, b| fastest(a).total_cmp(&fastest(b)));
        }
        jobs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Width;
    use crate::policy::allox::tests::{flavors, job};
    use crate::policy::MachineView;

    #[test]
    fn jobs_the_cap_kept_out_follow_the_plan_where_they_finish_soonest() {
        let flavors = flavors();
        let machines = [0, 1].map(|flavor| MachineView {
            flavor,
            node: flavor,
            free_at: 12.0,
            idle: false,
        });
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &[],
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        // The matching queued job 0 on the GPU (2 s left there); jobs 1
        // (5 s on a GPU, 6 s on a CPU) and 2 (1 s on a GPU, 9 s on a CPU)
        // were kept out. Shortest first: job 2 behind job 0 on the GPU
        // (at 14), then job 1 on the CPU (at 12: it ends at 18 there, 20
        // on the GPU).
        let jobs = [
            job(0, 0, Some(2.0), None),
            job(1, 0, Some(5.0), Some(6.0)),
            job(2, 0, Some(1.0), Some(9.0)),
        ];
        let left: Vec<&PendingJob> = jobs.iter().collect();
        let queues = vec![vec![0], vec![]];
        let (mut got, _) = starts(&view, &queues, &[2.0, 2.0], &left, CandidateRule::Shortest);
        got.sort_by_key(|f| f.job);
        let at = |job, at, flavor| Forecast { job, at, flavor };
        assert_eq!(got, vec![at(0, 12.0, 0), at(1, 12.0, 1), at(2, 14.0, 0)]);
    }

    #[test]
    fn a_gang_waits_for_enough_slots_on_enough_nodes_and_leaves_holes_to_shorter_jobs() {
        // Two nodes of two slots: A's free now and in 5 s, B's both in 3 s.
        let mut tail = Tail::new(100.0, 1);
        tail.add_node(0, vec![5.0, 0.0]);
        tail.add_node(0, vec![3.0, 3.0]);
        let gang = |id, per_node, nodes, p| PendingJob {
            width: Width::new(per_node, nodes).unwrap(),
            ..job(id, 0, Some(p), None)
        };
        let jobs = [
            gang(0, 2, 1, 4.0), // both slots of one node: B at 3, not A at 5
            gang(1, 1, 2, 1.0), // a slot on each node: B's free again at 7
            gang(2, 1, 1, 1.0), // one slot: A's idle one, which job 1 left
        ];
        let jobs: Vec<&PendingJob> = jobs.iter().collect();
        let got = tail.follow(&jobs);
        let at = |job, at| Forecast { job, at, flavor: 0 };
        assert_eq!(got, vec![at(0, 103.0), at(1, 107.0), at(2, 100.0)]);
        // A gang wider than the nodes of its flavor gets no forecast.
        let too_wide = gang(3, 1, 3, 1.0);
        assert_eq!(tail.follow(&[&too_wide]), vec![]);
    }
}
