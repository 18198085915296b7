//! The exact solver for deep queues: successive shortest paths over
//! *machines*, not over `(machine, position)` slots.
//!
//! Positions are never a decision. On one machine the optimal order is
//! shortest first, so a machine's cost is a function of its set `S` alone:
//!
//! ```text
//! C(S) = |S| a + sum_{x in S} p_x + sum_{{x, y} in S} min(p_x, p_y) - bonuses
//! ```
//!
//! `C` is the cost of the best matching of `S` into the machine's slots,
//! which makes it M-natural-convex, so the whole problem is an M-convex
//! submodular flow (Murota). It is solved the way the slot solver solves
//! the matching: jobs are added one at a time, each by a shortest path in
//! an exchange graph with non-negative reduced costs under job potentials
//! `u`. A path is `j0 -> x1 -> ... -> x_t -> sink`. Each arc `y -> x` means
//! "y enters x's machine, and x leaves it". The last arc means "x_t enters
//! a machine, and nothing leaves". Ties go to the path with fewer arcs,
//! which is what keeps a path that visits a machine twice priced right.
//!
//! What one machine answers, in `O(log L)` from a sorted member list, its
//! prefix sums and two min-trees:
//! - **Absorb.** `C(S + y) - C(S) = a + p_y + G_S(y) - b_y`, where
//!   `G_S(y) = sum_{z in S} min(p_y, p_z)`.
//! - **Best ejection.** `C(S - x + y) - C(S) = p_y + G_S(y) - b_y
//!   - min(p_x, p_y) - G_S(x) + b_x`, minimised with `u_x` over the members
//!   `x` not yet labelled. The members shorter than `y` and the members
//!   longer than `y` each have their own tree.
//!
//! A scan therefore costs `O(M log L)`, not `O(F K)`, and an augmentation
//! rebuilds only the machines its path changed (`O(L)` each).
//!
//! Every path is checked: the objective change it claims must equal the
//! change recomputed from the machines' sets, and no reduced cost may be
//! negative. If either fails, the search reports [`Inexact`], and [`solve`]
//! falls back to the slot solver, which is exact by construction.
//!
//! Two things make a path that visits one machine twice add up (the
//! "unique minimum" lemma behind Murota's algorithm):
//! - **Ties are exact, and fewer arcs win them.** All times sit on a grid
//!   of 1/1024 s, so sums are exact in `f64` and equal paths compare
//!   equal. Before the grid, paths of equal length differed in the last
//!   bit, and the longer path sometimes won.
//! - **No member is cheaper to remove than its potential says** (against
//!   the one sink potential). A rebuild that finds otherwise marks the
//!   step uncertified.
//!
//! A cold solve ends with [`Exchange::certify`], which checks every arc,
//! not only those the searches scanned: a full optimality proof for the
//! gridded times.
//!
//! **What the grid costs.** The search is exact for the times rounded to
//! 1/1024 s. Against the original times, a job's cost moves by at most
//! its position times 1/2048 s, so the objective can exceed the true
//! optimum by at most the sum of positions over 1024 s (for 10,000 jobs
//! on 16 machines, under 3 s of total JCT in some 10^10). Within a
//! machine, equal grid times keep the order of the original times.
//!
//! A cold solve ([`solve`], [`Exchange::cold_grouped`]) treats identical
//! machines (same flavor and free time, preferred by no job) as one entry
//! of `M` copies that runs its jobs shortest first round-robin (see
//! `Queue`); swaps between identical machines cost exactly nothing, and
//! as arcs they only made searches longer. A single entry is sorted.
//!
//! The state outlives one solve ([`Exchange`]). That is the warm start:
//! - an arrival is one augmentation;
//! - starting a machine's first job keeps the rest optimal, and keeps every
//!   reduced cost non-negative. The machine becomes busy for exactly that
//!   job's time, which offsets the job's share in everyone's insertion
//!   cost, since it was the shortest.

use super::{Instance, Machine, Slot, Solution, SolveError};
use crate::ordered::TotalF64 as Key;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: u32 = u32::MAX;
/// A job that has started (warm state): no longer part of any decision.
const GONE: u32 = u32::MAX - 1;

/// The search could not certify its path; the caller must solve another way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inexact;

/// Solves `inst` exactly: the exchange search, or the slot solver if the
/// search cannot certify a step.
pub fn solve(inst: &Instance) -> Result<Solution, SolveError> {
    solve_reporting(inst).map(|(solution, _)| solution)
}

/// [`solve`], and whether it had to fall back to the slot solver.
pub fn solve_reporting(inst: &Instance) -> Result<(Solution, bool), SolveError> {
    inst.validate()?;
    match Exchange::cold_grouped(inst) {
        Ok(state) => Ok((state.solution(inst), false)),
        Err(Inexact) => Ok((super::fast::solve(inst)?, true)),
    }
}

/// Every time the search sees is a multiple of `GRID` seconds (1/1024 s),
/// so every sum and difference it forms is exact in `f64` up to 2^43 s,
/// far past the simulator's clock bound. Exact arithmetic is what makes
/// ties real ties: two paths of equal length must compare equal, because
/// ties go to the path with fewer arcs, and only that rule keeps a path
/// that visits a machine twice priced right. Rounding each time to the
/// grid moves a job's cost by at most its position times 1/2048 s; the
/// objective the caller sees is recomputed from the original times.
const GRID: f64 = 1024.0;

pub(crate) fn on_grid(t: f64) -> f64 {
    (t * GRID).round() / GRID
}

/// Minimum over a fixed array, with point updates and range queries.
#[derive(Default)]
struct MinTree {
    size: usize,
    val: Vec<f64>,
    arg: Vec<u32>,
}

impl MinTree {
    fn build(&mut self, leaves: &[f64]) {
        self.size = leaves.len().next_power_of_two().max(1);
        self.val.clear();
        self.val.resize(2 * self.size, f64::INFINITY);
        self.arg.clear();
        self.arg.resize(2 * self.size, NONE);
        for (i, &v) in leaves.iter().enumerate() {
            self.val[self.size + i] = v;
            self.arg[self.size + i] = i as u32;
        }
        for i in (1..self.size).rev() {
            self.pull(i);
        }
    }

    fn pull(&mut self, i: usize) {
        let (l, r) = (2 * i, 2 * i + 1);
        let pick = if self.val[r] < self.val[l] { r } else { l };
        self.val[i] = self.val[pick];
        self.arg[i] = self.arg[pick];
    }

    fn set(&mut self, i: usize, v: f64) {
        let mut i = i + self.size;
        self.val[i] = v;
        while i > 1 {
            i /= 2;
            self.pull(i);
        }
    }

    /// The smallest value in `[l, r)` and its index, `(inf, NONE)` if none.
    fn query(&self, l: usize, r: usize) -> (f64, u32) {
        let mut best = (f64::INFINITY, NONE);
        let (mut l, mut r) = (l + self.size, r + self.size);
        let mut take = |i: usize| {
            if self.val[i] < best.0 {
                best = (self.val[i], self.arg[i]);
            }
        };
        while l < r {
            if l & 1 == 1 {
                take(l);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                take(r);
            }
            l /= 2;
            r /= 2;
        }
        best
    }
}

/// One machine, or a group of identical machines (same flavor, same free
/// time, preferred by no job): its members sorted shortest first, and what
/// answers the absorb and ejection queries.
///
/// A group of `M` copies runs its members shortest first round-robin: the
/// member of descending rank `d` (the longest has `d = 1`) sits at position
/// `ceil(d / M)` from the end of copy `(d - 1) mod M`, so
/// `C(S) = |S| a + sum ceil(d / M) p_d - bonuses`. For `M = 1` that is the
/// one-machine formula. Grouping matters because swapping jobs between two
/// identical machines costs exactly nothing: with one entry per machine,
/// such zero-cost arcs let a search label nearly every job.
struct Queue {
    flavor: usize,
    free_in: f64,
    /// The machines this entry stands for (one unless grouped).
    machines: Vec<usize>,
    /// `(p, job)` ascending: the order the jobs run in.
    members: Vec<(f64, u32)>,
    /// `remove_prefix[i]`: the sum of `p_j` over `j < i` whose multiplier
    /// drops when a longer member leaves (`(n - j - 1) mod M == 0`).
    remove_prefix: Vec<f64>,
    /// `add_prefix[i]`: the sum of `p_j` over `j < i` whose multiplier
    /// grows when a longer job joins (`(n - j) mod M == 0`). With one
    /// copy, both are plain prefix sums.
    add_prefix: Vec<f64>,
    /// Per member: `u_x + b_x - (ceil((n-i)/M) p_x + add_prefix[i+1])`
    /// (ejected by a longer job).
    shorter: MinTree,
    /// Per member: `u_x + b_x - G_S(x)` (ejected by a shorter job).
    longer: MinTree,
    /// Scratch for rebuilding the trees.
    leaves: Vec<f64>,
}

impl Queue {
    fn multiplier(&self, rank: usize) -> f64 {
        rank.div_ceil(self.machines.len()) as f64
    }

    /// `G_S(x) = C(S) - C(S - x) - a + b_x` for the member at index `i`.
    fn g_member(&self, i: usize) -> f64 {
        let n = self.members.len();
        self.multiplier(n - i) * self.members[i].0 + self.remove_prefix[i]
    }

    /// What the `shorter` tree subtracts for the member at index `i`.
    fn g_shorter(&self, i: usize) -> f64 {
        let n = self.members.len();
        self.multiplier(n - i) * self.members[i].0 + self.add_prefix[i + 1]
    }

    /// For a job of time `p` (bonus aside): where it would sit, what it
    /// adds when it enters and the member it ejects is shorter (or none
    /// leaves: absorbing costs `a` more), and what it adds when the member
    /// it ejects is longer. With one copy these are `p + G_S(y)` and
    /// `G_S(y)`.
    fn place(&self, p: f64) -> (usize, f64, f64) {
        let n = self.members.len();
        let pos = self.members.partition_point(|&(q, _)| q <= p);
        (
            pos,
            self.multiplier(n + 1 - pos) * p + self.add_prefix[pos],
            self.multiplier(n - pos) * p + self.remove_prefix[pos],
        )
    }

    /// `C(S)`, recomputed.
    fn cost(&self, bonus: impl Fn(u32) -> f64) -> f64 {
        let n = self.members.len();
        self.members
            .iter()
            .enumerate()
            .map(|(i, &(p, x))| self.free_in + p * self.multiplier(n - i) - bonus(x))
            .sum()
    }

    /// The machine and position (from the end) of the member at index `i`.
    fn slot_of(&self, i: usize) -> Slot {
        let rank = self.members.len() - i;
        let copies = self.machines.len();
        Slot {
            machine: self.machines[(rank - 1) % copies],
            position: rank.div_ceil(copies),
        }
    }
}

/// Why a search entry exists: absorb `y` into `m`, or let `y` eject the
/// best unlabelled member of `m`.
const ABSORB: u8 = 0;
const EJECT: u8 = 1;
type Entry = Reverse<(Key, u32, u8, u32, u32)>;

/// The solver's state, kept between decisions for warm starts.
pub struct Exchange {
    flavors: usize,
    times: Vec<Option<f64>>,
    /// The times as given, before the grid: they order equal grid times.
    raw_times: Vec<Option<f64>>,
    preferred: Vec<Option<(usize, f64)>>,
    queues: Vec<Queue>,
    has_flavor: Vec<bool>,
    /// The potential of a free place, one for all machines: absorbing `y`
    /// into `m` has reduced cost `absorb - u_y + sink`. One value, not one
    /// per machine, or the certificate below proves nothing (a move that
    /// changes how many jobs two machines hold would not cancel out).
    sink: f64,
    home: Vec<u32>,
    index: Vec<u32>,
    u: Vec<f64>,
    // Search scratch.
    dist: Vec<f64>,
    hops: Vec<u32>,
    pred: Vec<(u32, u32)>,
    labelled: Vec<bool>,
    labelled_list: Vec<u32>,
    heap: BinaryHeap<Entry>,
    touched: Vec<bool>,
    touched_list: Vec<u32>,
    uncertified: bool,
}

impl Exchange {
    /// An empty state over these machines, one entry each.
    pub fn new(flavors: usize, machines: &[Machine]) -> Self {
        let groups: Vec<Vec<usize>> = (0..machines.len()).map(|m| vec![m]).collect();
        Self::with_groups(flavors, machines, groups)
    }

    /// An empty state with one entry per group of identical machines.
    fn with_groups(flavors: usize, machines: &[Machine], groups: Vec<Vec<usize>>) -> Self {
        let mut has_flavor = vec![false; flavors];
        let queues: Vec<Queue> = groups
            .into_iter()
            .map(|group| {
                let m = &machines[group[0]];
                has_flavor[m.flavor] = true;
                let mut q = Queue {
                    flavor: m.flavor,
                    free_in: on_grid(m.free_in),
                    machines: group,
                    members: Vec::new(),
                    remove_prefix: vec![0.0],
                    add_prefix: vec![0.0],
                    shorter: MinTree::default(),
                    longer: MinTree::default(),
                    leaves: Vec::new(),
                };
                q.shorter.build(&[]);
                q.longer.build(&[]);
                q
            })
            .collect();
        let touched = vec![false; queues.len()];
        Exchange {
            flavors,
            times: Vec::new(),
            raw_times: Vec::new(),
            preferred: Vec::new(),
            queues,
            has_flavor,
            sink: 0.0,
            home: Vec::new(),
            index: Vec::new(),
            u: Vec::new(),
            dist: Vec::new(),
            hops: Vec::new(),
            pred: Vec::new(),
            labelled: Vec::new(),
            labelled_list: Vec::new(),
            heap: BinaryHeap::new(),
            touched,
            touched_list: Vec::new(),
            uncertified: false,
        }
    }

    /// Every job of a validated instance, longest first, one entry per
    /// machine: the state the warm API works on.
    pub fn cold(inst: &Instance) -> Result<Self, Inexact> {
        Self::cold_over(inst, Exchange::new(inst.flavors, &inst.machines))
    }

    /// [`Exchange::cold`] with identical machines (same flavor, same free
    /// time, preferred by no job) grouped into one entry. Only
    /// [`Exchange::solution`] may be asked of the result: the warm API
    /// addresses single machines.
    pub fn cold_grouped(inst: &Instance) -> Result<Self, Inexact> {
        let preferred: std::collections::HashSet<usize> =
            inst.preferred.iter().flatten().map(|&(m, _)| m).collect();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of: std::collections::HashMap<(usize, u64), usize> =
            std::collections::HashMap::new();
        for (m, machine) in inst.machines.iter().enumerate() {
            if preferred.contains(&m) {
                groups.push(vec![m]);
                continue;
            }
            let key = (machine.flavor, machine.free_in.to_bits());
            match group_of.get(&key) {
                Some(&g) => groups[g].push(m),
                None => {
                    group_of.insert(key, groups.len());
                    groups.push(vec![m]);
                }
            }
        }
        Self::cold_over(
            inst,
            Self::with_groups(inst.flavors, &inst.machines, groups),
        )
    }

    /// By Smith's rule a shorter job belongs in front of longer ones, so
    /// adding the jobs longest first mostly takes a machine's front without
    /// moving anyone. Among equally long jobs the later index goes first.
    /// The order changes which optimum is found and how fast, never the
    /// optimal value.
    fn cold_over(inst: &Instance, mut state: Exchange) -> Result<Self, Inexact> {
        let has = state.has_flavor.clone();
        let shortest = |j: usize| {
            (0..inst.flavors)
                .filter(|&f| has[f])
                .filter_map(|f| inst.time(j, f))
                .fold(f64::INFINITY, f64::min)
        };
        let mut order: Vec<usize> = (0..inst.jobs()).collect();
        order.sort_by(|&a, &b| shortest(b).total_cmp(&shortest(a)).then(b.cmp(&a)));
        for j in 0..inst.jobs() {
            state.push_job(
                &inst.times[j * inst.flavors..(j + 1) * inst.flavors],
                inst.preferred.get(j).copied().flatten(),
            );
        }
        if state.queues.len() == 1 {
            state.fill_only_entry()?;
        } else {
            for j in order {
                state.augment(j as u32)?;
            }
        }
        state.certify()?;
        Ok(state)
    }

    /// With a single entry (one machine, or identical machines of one
    /// flavor) there is nothing to exchange: the optimum is every job
    /// shortest first, round-robin over the copies. Each job's potential is
    /// exactly its removal cost, which is what the certificate asks.
    fn fill_only_entry(&mut self) -> Result<(), Inexact> {
        let f = self.queues[0].flavor;
        let order = |z: u32| self.raw_times[z as usize * self.flavors + f].unwrap_or(0.0);
        let mut members = Vec::with_capacity(self.home.len());
        for y in 0..self.home.len() as u32 {
            let p = self.times[y as usize * self.flavors + f].ok_or(Inexact)?;
            members.push((p, order(y), y));
        }
        members.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.total_cmp(&b.1))
                .then(a.2.cmp(&b.2))
        });
        self.queues[0].members = members.iter().map(|&(p, _, y)| (p, y)).collect();
        for &(_, _, y) in &members {
            self.home[y as usize] = 0;
        }
        self.rebuild(0);
        self.uncertified = false;
        let a = self.queues[0].free_in;
        for i in 0..members.len() {
            let x = self.queues[0].members[i].1;
            self.u[x as usize] = self.sink + a + self.queues[0].g_member(i) - self.bonus(x, 0);
        }
        Ok(())
    }

    /// Adds a job (its time per flavor, and optionally a preferred machine
    /// and bonus) and places it optimally. Returns its id in this state.
    /// The caller guarantees the job may use a flavor that has a machine.
    pub fn add_job(
        &mut self,
        times: &[Option<f64>],
        preferred: Option<(usize, f64)>,
    ) -> Result<u32, Inexact> {
        let j = self.push_job(times, preferred);
        self.augment(j)?;
        Ok(j)
    }

    /// Starts the first job of `machine`'s queue: it leaves every decision,
    /// and the machine is busy for its time on top of what it had. The rest
    /// stays optimal and the potentials stay valid (see the module comment).
    pub fn start_front(&mut self, machine: usize) -> Option<u32> {
        debug_assert_eq!(self.queues[machine].machines.len(), 1, "grouped state");
        let q = &mut self.queues[machine];
        if q.members.is_empty() {
            return None;
        }
        let (p, job) = q.members.remove(0);
        q.free_in += p;
        self.home[job as usize] = GONE;
        self.rebuild(machine);
        Some(job)
    }

    /// Moves the clock `dt >= 0` forward. Valid while every machine with a
    /// queue stays busy at least that long, which holds between decisions
    /// when the plan's estimates hold. Idle machines stay at 0, which only
    /// makes them dearer, so the potentials stay valid.
    pub fn advance(&mut self, dt: f64) {
        let dt = on_grid(dt);
        for q in &mut self.queues {
            q.free_in = (q.free_in - dt).max(0.0);
        }
        self.sink += dt;
    }

    /// A job's times per flavor as the search sees them (on the grid).
    pub fn times_of(&self, job: u32) -> &[Option<f64>] {
        &self.times[job as usize * self.flavors..(job as usize + 1) * self.flavors]
    }

    /// The number of flavors.
    pub fn flavors(&self) -> usize {
        self.flavors
    }

    /// The job `machine` runs next, if it has a queue.
    pub fn front(&self, machine: usize) -> Option<u32> {
        self.queues[machine].members.first().map(|&(_, j)| j)
    }

    /// The number of machines.
    pub fn machines(&self) -> usize {
        self.queues.len()
    }

    /// How long until `machine` is free.
    pub fn free_in(&self, machine: usize) -> f64 {
        self.queues[machine].free_in
    }

    /// Each machine's queue, first to run first.
    pub fn queues(&self) -> Vec<Vec<u32>> {
        self.queues
            .iter()
            .map(|q| q.members.iter().map(|&(_, j)| j).collect())
            .collect()
    }

    /// The sum over queued jobs of their completion time from now, minus
    /// bonuses: the objective without the release term.
    pub fn cost(&self) -> f64 {
        (0..self.queues.len()).map(|m| self.queue_cost(m)).sum()
    }

    /// The jobs still queued (not started), in id order, as a fresh
    /// instance over the machines as they are now: what a cold solve of
    /// this state would be given. Returns the instance and the ids.
    pub fn remaining(&self) -> (Instance, Vec<u32>) {
        let ids: Vec<u32> = (0..self.home.len() as u32)
            .filter(|&j| self.home[j as usize] != GONE)
            .collect();
        let machines = self
            .queues
            .iter()
            .map(|q| Machine {
                flavor: q.flavor,
                free_in: q.free_in,
            })
            .collect();
        let preferred = ids.iter().map(|&j| self.preferred[j as usize]).collect();
        let instance = Instance::of_jobs(self.flavors, machines, &self.times, &ids, preferred);
        (instance, ids)
    }

    /// The assignment as a [`Solution`] of `inst`, whose jobs are this
    /// state's jobs in the same order.
    pub fn solution(&self, inst: &Instance) -> Solution {
        let mut slots = vec![
            Slot {
                machine: 0,
                position: 0
            };
            inst.jobs()
        ];
        for q in &self.queues {
            for (i, &(_, j)) in q.members.iter().enumerate() {
                slots[j as usize] = q.slot_of(i);
            }
        }
        let objective = inst.objective(&slots);
        Solution { slots, objective }
    }

    fn push_job(&mut self, times: &[Option<f64>], preferred: Option<(usize, f64)>) -> u32 {
        debug_assert_eq!(times.len(), self.flavors);
        let j = self.home.len() as u32;
        self.times.extend(times.iter().map(|t| t.map(on_grid)));
        self.raw_times.extend_from_slice(times);
        self.preferred.push(preferred.map(|(m, b)| (m, on_grid(b))));
        self.home.push(NONE);
        self.index.push(NONE);
        self.u.push(0.0);
        self.dist.push(f64::INFINITY);
        self.hops.push(0);
        self.pred.push((NONE, NONE));
        self.labelled.push(false);
        j
    }

    fn time(&self, job: u32, machine: usize) -> Option<f64> {
        self.times[job as usize * self.flavors + self.queues[machine].flavor]
    }

    /// A preferred machine is never grouped, so it is its entry's only one.
    fn bonus(&self, job: u32, entry: usize) -> f64 {
        match self.preferred[job as usize] {
            Some((m, b)) if m == self.queues[entry].machines[0] => b,
            _ => 0.0,
        }
    }

    fn queue_cost(&self, m: usize) -> f64 {
        self.queues[m].cost(|x| self.bonus(x, m))
    }

    /// Recomputes `m`'s prefix sums, member indices and trees from its
    /// members and their potentials.
    fn rebuild(&mut self, m: usize) {
        let n = self.queues[m].members.len();
        let copies = self.queues[m].machines.len();
        let q = &mut self.queues[m];
        q.remove_prefix.clear();
        q.add_prefix.clear();
        q.remove_prefix.push(0.0);
        q.add_prefix.push(0.0);
        for (i, &(p, x)) in q.members.iter().enumerate() {
            let drops = if (n - i - 1) % copies == 0 { p } else { 0.0 };
            let grows = if (n - i) % copies == 0 { p } else { 0.0 };
            q.remove_prefix.push(q.remove_prefix[i] + drops);
            q.add_prefix.push(q.add_prefix[i] + grows);
            self.index[x as usize] = i as u32;
        }
        let mut leaves = std::mem::take(&mut self.queues[m].leaves);
        leaves.clear();
        for i in 0..n {
            let (_, x) = self.queues[m].members[i];
            leaves.push(self.longer_key(m, i, x));
        }
        // The removal condition: `u_x - sink >= C(S) - C(S - x)`, and
        // `C(S) - C(S - x) = a + G_S(x) - b_x`, so every unmasked `longer`
        // key less `a` must be at least `sink`. If one is not, the
        // potentials no longer certify this machine, and the step is not
        // trusted.
        let floor = leaves
            .iter()
            .copied()
            .filter(|k| k.is_finite())
            .fold(f64::INFINITY, f64::min)
            - self.queues[m].free_in;
        if floor < self.sink - 1e-9 * self.sink.abs().max(floor.abs()).max(1.0) {
            self.uncertified = true;
        }
        self.queues[m].longer.build(&leaves);
        for (i, leaf) in leaves.iter_mut().enumerate() {
            let q = &self.queues[m];
            *leaf += q.g_member(i) - q.g_shorter(i);
        }
        let q = &mut self.queues[m];
        q.shorter.build(&leaves);
        q.leaves = leaves;
    }

    /// The member's key in the `longer` tree (`+inf` once labelled).
    fn longer_key(&self, m: usize, i: usize, x: u32) -> f64 {
        if self.labelled[x as usize] {
            f64::INFINITY
        } else {
            self.u[x as usize] - self.queues[m].g_member(i) + self.bonus(x, m)
        }
    }

    fn refresh_member(&mut self, x: u32) {
        let m = self.home[x as usize] as usize;
        let i = self.index[x as usize] as usize;
        let k = self.longer_key(m, i, x);
        let q = &mut self.queues[m];
        let shift = q.g_member(i) - q.g_shorter(i);
        q.longer.set(i, k);
        q.shorter.set(i, k + shift);
    }

    /// The raw (not reduced) costs of `y` entering `m`: absorbed, and
    /// ejecting the best unlabelled member (that member, and
    /// `E(y, x) + u_x`).
    fn entry_costs(&self, y: u32, m: usize) -> Option<(f64, f64, u32)> {
        let p = self.time(y, m)?;
        let q = &self.queues[m];
        let (pos, past_shorter, past_longer) = q.place(p);
        let b = self.bonus(y, m);
        let (s, sx) = q.shorter.query(0, pos);
        let (l, lx) = q.longer.query(pos, q.members.len());
        let (s, l) = (past_shorter - b + s, past_longer - b + l);
        let (best, arg) = if s <= l { (s, sx) } else { (l, lx) };
        let ejected = if arg == NONE {
            NONE
        } else {
            q.members[arg as usize].1
        };
        Some((q.free_in + past_shorter - b, best, ejected))
    }

    /// `raw - u`, which valid potentials keep non-negative. Rounding may
    /// leave a hair below 0, which is clamped; anything more means the
    /// potentials are wrong, and the search is flagged as uncertified.
    fn reduced(&mut self, raw: f64, u: f64) -> f64 {
        let r = raw - u;
        if r < 0.0 {
            if r < -1e-9 * raw.abs().max(u.abs()).max(1.0) {
                self.uncertified = true;
            }
            return 0.0;
        }
        r
    }

    /// Pushes `y`'s arcs into every machine but its own. `bound` is the
    /// cheapest absorb pushed so far: nothing dearer can matter.
    fn scan(&mut self, y: u32, bound: &mut f64) {
        let (d, h, uy) = (
            self.dist[y as usize],
            self.hops[y as usize] + 1,
            self.u[y as usize],
        );
        let own = self.home[y as usize];
        for m in 0..self.queues.len() {
            if m as u32 == own {
                continue;
            }
            let Some((absorb, eject, x)) = self.entry_costs(y, m) else {
                continue;
            };
            let r = self.reduced(absorb + self.sink, uy);
            let a = d + r;
            if a <= *bound {
                *bound = a;
                self.heap.push(Reverse((Key(a), h, ABSORB, y, m as u32)));
            }
            if x != NONE {
                let r = self.reduced(eject, uy);
                let e = d + r;
                if e <= *bound {
                    self.heap.push(Reverse((Key(e), h, EJECT, y, m as u32)));
                }
            }
        }
    }

    fn augment(&mut self, start: u32) -> Result<(), Inexact> {
        // The start's potential: its cheapest first arc, so that every arc
        // out of it is non-negative.
        let mut first = f64::INFINITY;
        for m in 0..self.queues.len() {
            if let Some((absorb, eject, _)) = self.entry_costs(start, m) {
                first = first.min(absorb + self.sink).min(eject);
            }
        }
        if !first.is_finite() {
            return Err(Inexact);
        }
        let s = start as usize;
        self.u[s] = first;
        self.dist[s] = 0.0;
        self.hops[s] = 0;
        self.labelled[s] = true;
        self.labelled_list.push(start);
        self.heap.clear();
        let mut bound = f64::INFINITY;
        self.scan(start, &mut bound);

        let (last, target, delta) = loop {
            let Some(Reverse((Key(d), h, kind, y, m))) = self.heap.pop() else {
                return Err(Inexact);
            };
            if kind == ABSORB {
                break (y, m as usize, d);
            }
            let Some((_, eject, x)) = self.entry_costs(y, m as usize) else {
                continue;
            };
            if x == NONE {
                continue;
            }
            let r = self.reduced(eject, self.u[y as usize]);
            let now = self.dist[y as usize] + r;
            if now > d {
                if now <= bound {
                    self.heap.push(Reverse((Key(now), h, EJECT, y, m)));
                }
                continue;
            }
            let xi = x as usize;
            self.dist[xi] = d;
            self.hops[xi] = h;
            self.pred[xi] = (y, m);
            self.labelled[xi] = true;
            self.labelled_list.push(x);
            self.refresh_member(x);
            // `y` may still eject the next member of `m`.
            self.heap.push(Reverse((Key(d), h, EJECT, y, m)));
            self.scan(x, &mut bound);
        };

        // The path, from the end: (job, machine it enters, job it ejects).
        let mut moves = Vec::new();
        let mut claimed = 0.0;
        let mut job = last;
        let mut machine = target;
        let mut ejected = NONE;
        loop {
            claimed += if ejected == NONE {
                self.entry_costs(job, machine).ok_or(Inexact)?.0
            } else {
                self.exchange_cost(job, machine, ejected)
            };
            moves.push((job, machine, ejected));
            if job == start {
                break;
            }
            ejected = job;
            let (y, m) = self.pred[job as usize];
            job = y;
            machine = m as usize;
        }

        // Duals, while the trees still describe the old sets.
        for i in 0..self.labelled_list.len() {
            let x = self.labelled_list[i] as usize;
            self.u[x] += delta - self.dist[x];
        }
        let before: f64 = moves.iter().map(|&(_, m, _)| m).fold(0.0, |acc, m| {
            if self.touched[m] {
                acc
            } else {
                self.touched[m] = true;
                self.touched_list.push(m as u32);
                acc + self.queue_cost(m)
            }
        });
        for &(y, m, x) in &moves {
            let f = self.queues[m].flavor;
            if x != NONE {
                let q = &mut self.queues[m];
                let i = q.members.iter().position(|&(_, z)| z == x).ok_or(Inexact)?;
                q.members.remove(i);
            }
            let p = self.times[y as usize * self.flavors + f].ok_or(Inexact)?;
            // Equal grid times run in the order of the original times
            // (then ids), so rounding never reorders a machine's queue.
            let order = |z: u32| self.raw_times[z as usize * self.flavors + f].unwrap_or(0.0);
            let key = (p, order(y), y);
            let at = self.queues[m]
                .members
                .partition_point(|&(r, z)| (r, order(z), z) < key);
            self.queues[m].members.insert(at, (p, y));
            self.home[y as usize] = m as u32;
        }
        for i in 0..self.labelled_list.len() {
            let x = self.labelled_list[i] as usize;
            self.labelled[x] = false;
            self.dist[x] = f64::INFINITY;
        }
        let mut after = 0.0;
        for i in 0..self.touched_list.len() {
            let m = self.touched_list[i] as usize;
            self.touched[m] = false;
            self.rebuild(m);
            after += self.queue_cost(m);
        }
        self.touched_list.clear();
        // Every key must be current before any slack is measured.
        for i in 0..self.labelled_list.len() {
            self.refresh_member(self.labelled_list[i]);
        }
        for i in 0..self.labelled_list.len() {
            self.tighten(self.labelled_list[i]);
        }
        self.labelled_list.clear();
        let tolerance = 1e-9 * (before.abs() + after.abs() + claimed.abs()).max(1.0);
        if std::mem::take(&mut self.uncertified) || ((after - before) - claimed).abs() > tolerance {
            return Err(Inexact);
        }
        Ok(())
    }

    /// Raises `u_x` by the reduced cost of its cheapest arc, so that this
    /// arc is tight. Valid: the arcs out of `x` stay non-negative, and the
    /// arcs into it only grow. It is what keeps searches short. Without it
    /// a job's potential lags behind the jobs that joined its machine later,
    /// ejecting it looks cheap, and every search wanders through it. A job
    /// with nowhere else to go gets an infinite potential: nobody can eject
    /// it.
    fn tighten(&mut self, x: u32) {
        let slack = self.slack(x);
        if slack > 0.0 {
            self.u[x as usize] += slack;
            self.refresh_member(x);
        }
    }

    /// The reduced cost of `x`'s cheapest arc, over unlabelled members.
    fn slack(&self, x: u32) -> f64 {
        let own = self.home[x as usize];
        let ux = self.u[x as usize];
        let mut slack = f64::INFINITY;
        for m in 0..self.queues.len() {
            if m as u32 == own {
                continue;
            }
            if let Some((absorb, eject, _)) = self.entry_costs(x, m) {
                slack = slack.min(absorb + self.sink - ux).min(eject - ux);
            }
        }
        slack
    }

    /// The whole optimality certificate, `O(N M log L)`: every arc of every
    /// job has a non-negative reduced cost, and no member is cheaper to
    /// remove than its potential says. With one sink potential these make
    /// each machine's set the minimum of `C_m(Y) - sum_{y in Y} (u_y - sink)`
    /// (local optimality is global for M-natural-convex functions), and
    /// summing over machines, any other assignment costs at least as much.
    pub fn certify(&mut self) -> Result<(), Inexact> {
        for m in 0..self.queues.len() {
            self.rebuild(m);
        }
        for x in 0..self.home.len() as u32 {
            if self.home[x as usize] == GONE || self.u[x as usize].is_infinite() {
                continue;
            }
            let slack = self.slack(x);
            if slack < -1e-9 * self.u[x as usize].abs().max(1.0) {
                self.uncertified = true;
            }
        }
        if std::mem::take(&mut self.uncertified) {
            Err(Inexact)
        } else {
            Ok(())
        }
    }

    /// `C(S - x + y) - C(S)` on machine `m`, where `x` is a member.
    fn exchange_cost(&self, y: u32, m: usize, x: u32) -> f64 {
        let q = &self.queues[m];
        let p = self.time(y, m).unwrap_or(f64::INFINITY);
        let (pos, past_shorter, past_longer) = q.place(p);
        let i = self.index[x as usize] as usize;
        debug_assert_eq!(q.members[i].1, x);
        let entered = if i < pos {
            past_shorter - q.g_shorter(i)
        } else {
            past_longer - q.g_member(i)
        };
        entered - self.bonus(y, m) + self.bonus(x, m)
    }
}
