//! Planning jobs of any width: AlloX's matching on a relaxation decides
//! each job's flavor and its place in the order, then a serial schedule
//! places the jobs in that order on whole nodes, each at the earliest time
//! its gang fits without moving any job placed before it.
//!
//! Minimising total completion time with gangs is NP-hard (it contains
//! `P|size_j|ΣC_j`), so this is an approximation; with every job one slot
//! wide AlloX never comes here (its matching is exact). The relaxation
//! cuts each job of width `w` and time `p` into one job of time `w * p`
//! (its area) on one slot: the matching then weighs a wide job by the
//! slot-time it takes from everyone behind it, and orders the jobs of
//! each slot shortest area first, the order that minimises total
//! completion on one slot. Jobs go to the serial schedule in the order of
//! their start in the relaxed plan. `docs/solver-design.md` gives the
//! formulation, its cost and its measured gap to an exact oracle.
//!
//! The serial schedule is conservative backfilling: a job placed later
//! never delays one placed earlier, so a wide job that holds a place in
//! the order is not pushed back by narrow ones filling the slots it waits
//! for. Online ([`start_now`]), only the first few jobs that cannot start
//! at once hold a reservation (`reservations`), as Slurm's backfill limits
//! its depth; the rest start now only where they delay none of those.

use super::{PendingJob, Start, View};
use crate::model::Width;
use crate::solver::{self, Instance, Machine, SolveError, SolverKind};

mod fresh_nodes;
#[cfg(feature = "cli")]
pub mod oracle;
mod profile;
mod schedule;

pub use schedule::Schedule;

/// The jobs at the head of the relaxed order that local search reorders
/// in each decision.
pub const SEARCHED_JOBS: usize = 16;

/// Schedules the local search may evaluate per decision.
pub const SEARCH_BUDGET: usize = 200;

/// One node as the plan sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanNode {
    /// Its flavor.
    pub flavor: usize,
    /// Its slots.
    pub slots: usize,
    /// When each busy slot frees, from now (> 0). Idle slots are not
    /// listed.
    pub busy_until: Vec<f64>,
}

/// One job to plan.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanJob {
    /// Run time per flavor at its width; `None` = it cannot run there.
    pub times: Vec<Option<f64>>,
    /// Its gang.
    pub width: Width,
    /// How long it has waited (a tie-break of the relaxed order).
    pub waited: f64,
}

impl PlanJob {
    /// Pending `job` as the plan takes it at time `now`.
    pub fn of(job: &PendingJob, now: f64) -> Self {
        PlanJob {
            times: job.estimates.clone(),
            width: job.width,
            waited: (now - job.arrival).max(0.0),
        }
    }
}

/// Where and when the plan runs one job.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// Index into the jobs planned.
    pub job: usize,
    /// The nodes it runs on (indices into the nodes planned), `width.nodes`
    /// of them.
    pub nodes: Vec<usize>,
    /// When it starts and ends, from now.
    pub start: f64,
    /// See `start`.
    pub end: f64,
}

/// The relaxed matching's order of `jobs`, and each job's flavor: AlloX's
/// matching with each job's time scaled by its width, on one machine per
/// slot of `nodes`.
pub fn relaxed_order(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
) -> Result<Vec<(usize, usize)>, SolveError> {
    let instance = slot_instance(nodes, flavors, jobs, |j| j.width.slots() as f64);
    let solution = solver::solve(&instance, SolverKind::Classes)?;
    let queues = solution.queues(instance.machines.len());
    // (relaxed start, relaxed end, -waited, job, flavor)
    let mut keyed: Vec<(f64, f64, f64, usize, usize)> = Vec::with_capacity(jobs.len());
    for (m, queue) in queues.iter().enumerate() {
        let mut t = instance.machines[m].free_in;
        let flavor = instance.machines[m].flavor;
        for &j in queue {
            let p = instance
                .time(j, flavor)
                .expect("matched to an allowed flavor");
            keyed.push((t, t + p, -jobs[j].waited, j, flavor));
            t += p;
        }
    }
    keyed.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then(a.2.total_cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    Ok(keyed.into_iter().map(|(_, _, _, j, f)| (j, f)).collect())
}

/// The matching instance of `jobs` on one machine per slot of `nodes`,
/// each job's times multiplied by `scale(job)`.
fn slot_instance(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
    scale: impl Fn(&PlanJob) -> f64,
) -> Instance {
    let mut machines = Vec::new();
    for n in nodes {
        let mut free: Vec<f64> = n.busy_until.clone();
        free.resize(n.slots.max(free.len()), 0.0);
        machines.extend(free.into_iter().map(|free_in| Machine {
            flavor: n.flavor,
            free_in,
        }));
    }
    Instance {
        flavors,
        releases: jobs.iter().map(|j| -j.waited).collect(),
        times: jobs
            .iter()
            .flat_map(|j| {
                let k = scale(j);
                j.times.iter().map(move |t| t.map(|t| t * k))
            })
            .collect(),
        machines,
        preferred: Vec::new(),
    }
}

/// A busy slot is taken to free no sooner than this (seconds): one whose
/// job overran its estimate is not idle.
const STILL_BUSY: f64 = 1e-3;

/// The least time a placed job holds its slots (seconds): a job estimated
/// at 0 s still takes them at its start.
const SHORTEST_HOLD: f64 = 1e-3;

/// The view's nodes as the plan sees them, in order of their first
/// machine, and each one's idle machines, lowest first.
pub fn view_nodes(view: &View<'_>) -> (Vec<PlanNode>, Vec<Vec<usize>>) {
    let node_count = view.machines.iter().map(|m| m.node + 1).max().unwrap_or(0);
    let mut index = vec![usize::MAX; node_count];
    let mut nodes: Vec<PlanNode> = Vec::new();
    let mut idle: Vec<Vec<usize>> = Vec::new();
    for (m, mv) in view.machines.iter().enumerate() {
        if index[mv.node] == usize::MAX {
            index[mv.node] = nodes.len();
            nodes.push(PlanNode {
                flavor: mv.flavor,
                slots: 0,
                busy_until: Vec::new(),
            });
            idle.push(Vec::new());
        }
        let n = index[mv.node];
        nodes[n].slots += 1;
        if mv.idle {
            idle[n].push(m);
        } else {
            nodes[n].busy_until.push(view.free_in(m).max(STILL_BUSY));
        }
    }
    for n in &mut nodes {
        n.busy_until.sort_by(f64::total_cmp);
    }
    (nodes, idle)
}

/// The starts of placements at time 0: job `p.job` is pending job
/// `jobs[p.job]`, taking `width.per_node` idle machines of each of its
/// nodes (`idle`, as [`view_nodes`] gives them).
pub fn starts_now(
    placements: &[Placement],
    jobs: &[&PendingJob],
    idle: &[Vec<usize>],
) -> Vec<Start> {
    let mut taken = vec![0usize; idle.len()];
    let mut starts = Vec::new();
    for p in placements.iter().filter(|p| p.start == 0.0) {
        let job = jobs[p.job];
        for &n in &p.nodes {
            for _ in 0..job.width.per_node {
                starts.push(Start {
                    job: job.id,
                    machine: idle[n][taken[n]],
                });
                taken[n] += 1;
            }
        }
    }
    starts
}

/// The whole serial schedule of `jobs` in `order` (job, flavor): every job
/// at its earliest fit. What the gap study measures.
pub fn schedule_all(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
    order: &[(usize, usize)],
) -> Vec<Placement> {
    let mut schedule = Schedule::new(nodes, flavors);
    let mut out = Vec::with_capacity(order.len());
    for &(j, f) in order {
        let p = jobs[j].times[f].expect("ordered on an allowed flavor");
        if let Some((start, nodes)) = schedule.place_earliest(f, jobs[j].width, p) {
            out.push(Placement {
                job: j,
                nodes,
                start,
                end: start + p,
            });
        } else {
            // Unreachable while flavors a job does not fit are `None`; an
            // unplaced job costs infinitely, never nothing.
            out.push(Placement {
                job: j,
                nodes: Vec::new(),
                start: f64::INFINITY,
                end: f64::INFINITY,
            });
        }
    }
    out
}

/// The total completion time, from now, of the schedule AlloX plans for
/// `jobs` all waiting now: with every job one slot wide, the matching's
/// optimum (exact); otherwise the serial schedule in the relaxed order,
/// its first [`SEARCHED_JOBS`] improved by local search within
/// [`SEARCH_BUDGET`], as each decision does.
pub fn planned_total(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
) -> Result<f64, SolveError> {
    if jobs.iter().all(|j| j.width.is_one()) {
        let instance = slot_instance(nodes, flavors, jobs, |_| 1.0);
        let solution = solver::solve(&instance, SolverKind::Fast)?;
        // Releases are the jobs' waits: take them back out.
        let waited: f64 = jobs.iter().map(|j| j.waited).sum();
        return Ok(instance.objective(&solution.slots) - waited);
    }
    let relaxed = relaxed_order(nodes, flavors, jobs)?;
    let head = relaxed.len().min(SEARCHED_JOBS);
    let head_jobs: Vec<PlanJob> = relaxed[..head]
        .iter()
        .map(|&(j, _)| jobs[j].clone())
        .collect();
    let head_order = relaxed[..head]
        .iter()
        .enumerate()
        .map(|(i, &(_, f))| (i, f))
        .collect();
    let improved = improved_order(nodes, flavors, &head_jobs, head_order, SEARCH_BUDGET);
    let order: Vec<(usize, usize)> = improved
        .into_iter()
        .map(|(i, f)| (relaxed[i].0, f))
        .chain(relaxed[head..].iter().copied())
        .collect();
    Ok(total_completion(&schedule_all(
        nodes, flavors, jobs, &order,
    )))
}

/// Local search from `order` on the serial schedule's total completion:
/// moving one job to another place in the order, or to another flavor it
/// can use, while some move gains, with at most `budget` schedules
/// evaluated. The same jobs oldest first, each on the flavor where it
/// finishes soonest behind those before it ([`soonest_finish_order`]),
/// are a second start, searched with the same budget, and the better
/// result is kept: one move at a time cannot leave a plan where narrow
/// jobs take the fast node a wide job needs, when the better plan starts
/// the wide job there and moves them all to the slower node.
pub fn improved_order(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
    order: Vec<(usize, usize)>,
    budget: usize,
) -> Vec<(usize, usize)> {
    let oldest = soonest_finish_order(nodes, flavors, jobs, &order);
    let (first, first_total) = searched(nodes, flavors, jobs, order, budget);
    let (second, second_total) = searched(nodes, flavors, jobs, oldest, budget);
    if second_total < first_total * (1.0 - 1e-12) {
        second
    } else {
        first
    }
}

/// The jobs of `order`, oldest first, each on the flavor where it would
/// finish soonest in the serial schedule of those before it (ties: the
/// flavor `order` gave it, then the lower index).
pub fn soonest_finish_order(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
    order: &[(usize, usize)],
) -> Vec<(usize, usize)> {
    let mut oldest = order.to_vec();
    oldest.sort_by(|a, b| {
        jobs[b.0]
            .waited
            .total_cmp(&jobs[a.0].waited)
            .then(a.0.cmp(&b.0))
    });
    let mut schedule = Schedule::new(nodes, flavors);
    for (j, f) in oldest.iter_mut() {
        let job = &jobs[*j];
        let soonest = (0..flavors)
            .filter_map(|g| {
                let p = job.times[g]?;
                let (t, _) = schedule.earliest(g, job.width, p)?;
                Some((g, t + p))
            })
            .min_by(|a, b| {
                a.1.total_cmp(&b.1)
                    .then((a.0 != *f).cmp(&(b.0 != *f)))
                    .then(a.0.cmp(&b.0))
            });
        if let Some((g, _)) = soonest {
            *f = g;
            let p = job.times[g].expect("a flavor it can use");
            schedule.place_earliest(g, job.width, p);
        }
    }
    oldest
}

/// [`improved_order`]'s search from one start: the order it ends at and
/// that order's total completion.
fn searched(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
    order: Vec<(usize, usize)>,
    budget: usize,
) -> (Vec<(usize, usize)>, f64) {
    let mut evaluated = 0usize;
    // Every order is scheduled from the same empty schedule, which keeps
    // what it works out about the nodes.
    let empty = Schedule::new(nodes, flavors);
    let mut best = Prefixes::of(&empty, jobs, order);
    let mut improved = true;
    while improved && evaluated < budget {
        improved = false;
        'moves: for i in 0..best.order.len() {
            let (j, f) = best.order[i];
            // Another flavor in place.
            for g in 0..flavors {
                if g == f || jobs[j].times[g].is_none() {
                    continue;
                }
                let mut o = best.order.clone();
                o[i] = (j, g);
                evaluated += 1;
                if best.gains(jobs, &o, i) {
                    best.accept(jobs, o, i);
                    improved = true;
                    break 'moves;
                }
            }
            // Another place in the order.
            for k in 0..best.order.len() {
                if k == i {
                    continue;
                }
                let mut o = best.order.clone();
                let moved = o.remove(i);
                o.insert(k, moved);
                evaluated += 1;
                if best.gains(jobs, &o, i.min(k)) {
                    best.accept(jobs, o, i.min(k));
                    improved = true;
                    break 'moves;
                }
            }
            if evaluated >= budget {
                break;
            }
        }
    }
    let total = best.total();
    (best.order, total)
}

/// An order with its serial schedule after each of its prefixes, so that
/// a move that keeps the first `k` jobs in place schedules only the rest:
/// the search's moves are evaluated from where they change the order,
/// which halves its cost on average and changes none of its sums.
struct Prefixes<'a> {
    order: Vec<(usize, usize)>,
    /// `schedules[k]`: the first `k` jobs placed.
    schedules: Vec<Schedule<'a>>,
    /// `completion[k]`: the sum of the first `k` jobs' ends, added in
    /// order as [`total_completion`] adds them.
    completion: Vec<f64>,
    /// Where [`Prefixes::gains`] schedules the orders it weighs.
    scratch: Schedule<'a>,
}

impl<'a> Prefixes<'a> {
    fn of(empty: &Schedule<'a>, jobs: &[PlanJob], order: Vec<(usize, usize)>) -> Self {
        let mut prefixes = Prefixes {
            order: Vec::new(),
            schedules: vec![empty.clone()],
            completion: vec![0.0],
            scratch: empty.clone(),
        };
        prefixes.accept(jobs, order, 0);
        prefixes
    }

    /// Takes `order`, equal to this one in its first `same` jobs: only the
    /// schedules after those are placed again.
    fn accept(&mut self, jobs: &[PlanJob], order: Vec<(usize, usize)>, same: usize) {
        self.schedules.truncate(same + 1);
        self.completion.truncate(same + 1);
        let mut sum = self.completion[same];
        for &placed in &order[same..] {
            let mut next = self.schedules[self.schedules.len() - 1].clone();
            sum += place_next(&mut next, jobs, placed);
            self.schedules.push(next);
            self.completion.push(sum);
        }
        self.order = order;
    }

    fn total(&self) -> f64 {
        self.completion[self.order.len()]
    }

    /// Whether `order`, equal to this one in its first `same` jobs, has a
    /// lower total completion (by more than rounding). Ends are times from
    /// now, never negative, so the sum only grows: it stops as soon as it
    /// reaches this order's.
    fn gains(&mut self, jobs: &[PlanJob], order: &[(usize, usize)], same: usize) -> bool {
        let bar = self.total() * (1.0 - 1e-12);
        // Into the same copy each time: its buffers are reused.
        self.scratch.clone_from(&self.schedules[same]);
        let mut sum = self.completion[same];
        for &placed in &order[same..] {
            sum += place_next(&mut self.scratch, jobs, placed);
            if sum >= bar {
                return false;
            }
        }
        true
    }
}

/// Places `(job, flavor)` at its earliest fit; its end, infinite if it
/// cannot be placed, as in [`schedule_all`].
fn place_next(schedule: &mut Schedule<'_>, jobs: &[PlanJob], (j, f): (usize, usize)) -> f64 {
    let p = jobs[j].times[f].expect("ordered on an allowed flavor");
    let width = jobs[j].width;
    if width.nodes == 1 {
        // Without the list of nodes `place_earliest` returns: the search
        // places jobs many times per decision and needs only their ends.
        return match schedule.earliest_one(f, width.per_node, p) {
            Some((start, n)) => {
                schedule.hold(&[n], width, start, p);
                start + p
            }
            None => f64::INFINITY,
        };
    }
    match schedule.place_earliest(f, width, p) {
        Some((start, _)) => start + p,
        None => f64::INFINITY,
    }
}

/// The plan's total completion time, from now.
pub fn total_completion(placements: &[Placement]) -> f64 {
    placements.iter().map(|p| p.end).sum()
}

/// The jobs of `order` that start now (`start` 0), and their nodes: each
/// job starts if its gang fits now without delaying a reservation; the
/// first `reservations` jobs that do not fit now each reserve their
/// earliest fit, and are listed with it (`start` > 0). Stops once no slot
/// is idle and the reservations are made.
pub fn start_now(
    nodes: &[PlanNode],
    flavors: usize,
    jobs: &[PlanJob],
    order: &[(usize, usize)],
    reservations: usize,
) -> Vec<Placement> {
    let mut schedule = Schedule::new(nodes, flavors);
    let mut idle: usize = nodes
        .iter()
        .map(|n| n.slots.saturating_sub(n.busy_until.len()))
        .sum();
    let mut reserved = 0;
    let mut out = Vec::new();
    for &(j, f) in order {
        if idle == 0 && reserved >= reservations {
            break;
        }
        let width = jobs[j].width;
        let p = jobs[j].times[f].expect("ordered on an allowed flavor");
        if idle >= width.slots() {
            if let Some(nodes) = schedule.place_at(f, width, p, 0.0) {
                idle -= width.slots();
                out.push(Placement {
                    job: j,
                    nodes,
                    start: 0.0,
                    end: p,
                });
                continue;
            }
        }
        if reserved < reservations {
            if let Some((start, nodes)) = schedule.place_earliest(f, width, p) {
                reserved += 1;
                out.push(Placement {
                    job: j,
                    nodes,
                    start,
                    end: start + p,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(flavor: usize, slots: usize, busy: &[f64]) -> PlanNode {
        PlanNode {
            flavor,
            slots,
            busy_until: busy.to_vec(),
        }
    }

    fn job(times: &[Option<f64>], per_node: usize, nodes: usize) -> PlanJob {
        PlanJob {
            times: times.to_vec(),
            width: Width::new(per_node, nodes).unwrap(),
            waited: 0.0,
        }
    }

    #[test]
    fn a_reserved_wide_job_is_not_delayed_by_narrow_ones_behind_it() {
        // One 4-slot node, 2 slots busy for 10 s. The 4-wide job goes
        // first in the order: it cannot start now and reserves t = 10.
        // A 1-wide job of 5 s fits before it; one of 20 s would delay it.
        let nodes = [node(0, 4, &[10.0, 10.0])];
        let jobs = [
            job(&[Some(30.0)], 4, 1),
            job(&[Some(20.0)], 1, 1),
            job(&[Some(5.0)], 1, 1),
        ];
        let order = [(0, 0), (1, 0), (2, 0)];
        let now = start_now(&nodes, 1, &jobs, &order, 1);
        let listed: Vec<(usize, f64)> = now.iter().map(|p| (p.job, p.start)).collect();
        assert_eq!(listed, vec![(0, 10.0), (2, 0.0)]);
        let all = schedule_all(&nodes, 1, &jobs, &order);
        assert_eq!(all[0].start, 10.0);
        assert_eq!(all[1].start, 40.0);
        assert_eq!(all[2].start, 0.0);
    }

    #[test]
    fn a_multi_node_gang_starts_when_enough_nodes_are_free_together() {
        let nodes = [node(0, 2, &[5.0]), node(0, 2, &[]), node(0, 2, &[8.0, 8.0])];
        let jobs = [job(&[Some(10.0)], 2, 2)];
        let all = schedule_all(&nodes, 1, &jobs, &[(0, 0)]);
        assert_eq!(all[0].start, 5.0);
        assert_eq!(all[0].nodes, vec![0, 1]);
    }

    #[test]
    fn the_relaxation_weighs_a_job_by_its_area() {
        // Two 1-slot... one 2-slot node: a 2-wide 10 s job (area 20) and a
        // 1-wide 15 s job: area first puts the narrow one ahead.
        let nodes = [node(0, 2, &[])];
        let jobs = [job(&[Some(10.0)], 2, 1), job(&[Some(15.0)], 1, 1)];
        let order = relaxed_order(&nodes, 1, &jobs).unwrap();
        assert_eq!(order, vec![(1, 0), (0, 0)]);
    }

    #[test]
    fn a_gang_of_less_area_waits_for_its_nodes_rather_than_behind_narrow_jobs() {
        // Two 4-slot nodes, one free now and one in 0.4 s; a 2-node gang
        // of 1 s (area 8) and six 4-wide jobs of 4 s (area 16). Running a
        // narrow job on the free node would push the gang back 4 s to
        // save it 1 s. (At equal areas the two orders tie, and which one
        // a plan takes turns on the gap between the nodes' ends.)
        let nodes = [node(0, 4, &[]), node(0, 4, &[0.4; 4])];
        let mut jobs = vec![job(&[Some(1.0)], 4, 2)];
        jobs.extend((0..6).map(|_| job(&[Some(4.0)], 4, 1)));
        let relaxed = relaxed_order(&nodes, 1, &jobs).unwrap();
        let order = improved_order(&nodes, 1, &jobs, relaxed, SEARCH_BUDGET);
        let now = start_now(&nodes, 1, &jobs, &order, 1);
        let listed: Vec<(usize, f64)> = now.iter().map(|p| (p.job, p.start)).collect();
        assert_eq!(listed, vec![(0, 0.4)]);
    }

    proptest::proptest! {
        /// A gang's earliest start: the first time, of 0 and every end on
        /// the flavor's nodes, at which enough nodes are free for its
        /// whole length, on the fullest such nodes. Nodes of another
        /// flavor, placed on or not, change nothing.
        #[test]
        fn the_earliest_gang_start_is_the_first_end_it_fits_at(
            busy in proptest::collection::vec(proptest::collection::vec(1u32..30, 0..3), 3..6),
            others in proptest::collection::vec(0usize..6, 0..3),
            holds in proptest::collection::vec((0usize..6, 0u32..30, 1u32..15), 0..10),
            per_node in 1usize..3,
            wide in 1usize..4,
            p in 1u32..20,
        ) {
            let slots = 3;
            let mut nodes: Vec<PlanNode> = busy
                .iter()
                .map(|b| node(0, slots, &b.iter().map(|&e| f64::from(e)).collect::<Vec<_>>()))
                .collect();
            // Some nodes of flavor 1 among them, which the queries skip.
            let count = nodes.len();
            for &n in &others {
                nodes[n % count].flavor = 1;
            }
            let mut schedule = Schedule::new(&nodes, 2);
            let mut used: Vec<Vec<(f64, f64, usize)>> = vec![Vec::new(); nodes.len()];
            for (n, s, len) in holds {
                let n = n % nodes.len();
                let (s, e) = (f64::from(s), f64::from(s + len));
                // Only where the slot is free, as the schedule places.
                if profile::reference::peak(&nodes[n].busy_until, &used[n], s, e) < slots {
                    schedule.hold(&[n], Width::ONE, s, e - s);
                    used[n].push((s, e, 1));
                }
            }
            let ours = nodes.iter().filter(|n| n.flavor == 0).count();
            let width = Width::new(per_node, wide.min(ours.max(1))).unwrap();
            let p = f64::from(p);
            let free = |n: usize, t: f64| {
                slots.saturating_sub(profile::reference::peak(&nodes[n].busy_until, &used[n], t, t + p))
            };
            let mut times: Vec<f64> = vec![0.0];
            for (n, node) in nodes.iter().enumerate().filter(|(_, n)| n.flavor == 0) {
                times.extend(&node.busy_until);
                times.extend(used[n].iter().map(|&(_, e, _)| e));
            }
            times.sort_by(f64::total_cmp);
            let expected = times.into_iter().find_map(|t| {
                let mut fit: Vec<(usize, usize)> = (0..nodes.len())
                    .filter(|&n| nodes[n].flavor == 0)
                    .map(|n| (free(n, t), n))
                    .filter(|&(f, _)| f >= per_node)
                    .collect();
                fit.sort_unstable();
                (fit.len() >= width.nodes)
                    .then(|| (t, fit.into_iter().take(width.nodes).map(|(_, n)| n).collect::<Vec<_>>()))
            });
            proptest::prop_assert_eq!(schedule.earliest(0, width, p), expected);
        }
    }
}
