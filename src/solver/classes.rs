//! Exact AlloX matching by shortest paths over *position classes*: every
//! machine of one flavor at one position `k` forms one class.
//!
//! A slot `(m, k)` costs `a_m + k * p_{j,f}`. The `a_m` part does not depend
//! on the job, so all slots of flavor `f` at position `k` are alike but for
//! a constant: class `(f, k)` is one node with `M_f` units of capacity, and
//! its `i`-th job pays the `i`-th smallest free time of the flavor (an arc
//! to the sink per machine, cheapest first). This is the slot matching, and
//! busy machines with distinct free times join their flavor's classes.
//!
//! Successive shortest paths then run over classes, not slots or jobs. A
//! job's potential is implied by its class (matched arcs are tight), so
//! only classes carry potentials. Three facts keep the arcs few; each drops
//! only arcs that another path at most as costly replaces, so distances are
//! those of the full graph:
//! - **Sorted classes.** An optimum keeps each flavor's jobs longest first
//!   (rearrangement), so a flavor is its jobs in one fixed order (time
//!   descending, then job index) cut into consecutive classes by counts.
//! - **Adjacent moves.** Within a flavor, moving a job from class `k` to
//!   `k'` is never cheaper than the chain of moves between neighbours: the
//!   shortest job of each class one step up, or the longest one step down.
//! - **Sorted entry.** A job entering a flavor enters only the class (or
//!   the two classes) where its time falls in that order. Entering lower
//!   costs at least entering there and pushing a longer job down; entering
//!   higher, at least entering there and pushing a shorter one up.
//!
//! Counts only grow (the last class of a path takes the new unit), so a
//! flavor's classes `0..open` are non-empty and the next one, `open`, is the
//! only empty class a path may reach. The empty classes beyond it keep the
//! potential that makes their sink arc tight, which keeps every arc of the
//! full graph dual-feasible when a flavor opens its next class.
//!
//! When every job is placed, each flavor's jobs are scheduled onto its
//! machines by list scheduling ([`super::one_flavor`]), which is optimal for
//! a fixed set of jobs and so costs what the classes cost.
//!
//! Preferences (a bonus on one machine) break the likeness of a flavor's
//! machines, so such instances go to the slot solver ([`super::fast`]).
//! Sums are exact for integer inputs below 2^53, as in the other solvers.

use super::{one_flavor, Instance, Slot, Solution, SolveError};
use crate::ordered::TotalF64 as Key;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: u32 = u32::MAX;

/// Whether this solver takes the instance: no job prefers a machine.
pub fn applies(instance: &Instance) -> bool {
    instance.preferred.iter().all(|p| p.is_none())
}

/// Solves an instance [`applies`] accepts; others are refused with
/// [`SolveError::Shape`].
pub fn solve(instance: &Instance) -> Result<Solution, SolveError> {
    solve_counting(instance).map(|(s, _)| s)
}

/// What a solve did, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Classes settled by the searches, over all augmentations.
    pub settled: u64,
    /// Cross-flavor arcs relaxed.
    pub relaxed: u64,
}

/// [`solve`], also saying how much searching it took.
pub fn solve_counting(instance: &Instance) -> Result<(Solution, Work), SolveError> {
    instance.validate()?;
    if !applies(instance) {
        return Err(SolveError::Shape);
    }
    let mut flow = Flow::new(instance);
    let n = instance.jobs();
    let fastest: Vec<f64> = (0..n)
        .map(|j| {
            (0..instance.flavors)
                .filter(|&f| flow.flavor_of[f] != NONE)
                .filter_map(|f| instance.time(j, f))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    // Longest first: each new job tends to enter near the fronts, so its
    // search stays among the last classes.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| fastest[b].total_cmp(&fastest[a]).then(a.cmp(&b)));
    for &j in &order {
        flow.augment(j);
    }
    let mut slots = vec![
        Slot {
            machine: 0,
            position: 0
        };
        n
    ];
    for (f, flavor) in flow.flavors.iter().enumerate() {
        let jobs: Vec<usize> = flavor.members().map(|i| flavor.order[i] as usize).collect();
        one_flavor::schedule(
            instance,
            flow.flavor_ids[f],
            &flavor.machines,
            &jobs,
            &mut slots,
        );
    }
    let objective = instance.objective(&slots);
    if std::env::var_os("FM_WORK").is_some() {
        eprintln!("work {:?}", flow.work);
    }
    Ok((Solution { slots, objective }, flow.work))
}

/// A set of positions `0..n` with rank and select: a bit per position and,
/// per 64-bit word, how many are set before it. A change costs `O(n / 64)`
/// (few per augmentation), a rank one popcount, a select a binary search
/// over the words; searches make many more queries than changes.
struct RankedSet {
    bits: Vec<u64>,
    before: Vec<u32>,
}

impl RankedSet {
    fn new(n: usize) -> Self {
        let words = n.div_ceil(64).max(1);
        RankedSet {
            bits: vec![0; words],
            before: vec![0; words],
        }
    }

    fn flip(&mut self, i: usize, on: bool) {
        let w = i / 64;
        self.bits[w] ^= 1 << (i % 64);
        for b in &mut self.before[w + 1..] {
            *b = if on { *b + 1 } else { *b - 1 };
        }
    }

    /// How many positions below `i` are set.
    fn rank(&self, i: usize) -> usize {
        let w = i / 64;
        let below = self.bits[w] & ((1u64 << (i % 64)) - 1);
        self.before[w] as usize + below.count_ones() as usize
    }

    /// The `r`-th set position (0-based); it must exist.
    fn select(&self, r: usize) -> usize {
        let w = self.before.partition_point(|&b| b as usize <= r) - 1;
        let mut bits = self.bits[w];
        for _ in 0..r - self.before[w] as usize {
            bits &= bits - 1;
        }
        w * 64 + bits.trailing_zeros() as usize
    }

    /// Set positions from `i` on, in order.
    fn from(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let mut word = i / 64;
        let mut bits = self.bits.get(word).map_or(0, |w| w & (!0u64 << (i % 64)));
        std::iter::from_fn(move || {
            while bits == 0 {
                word += 1;
                bits = *self.bits.get(word)?;
            }
            let b = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Some(word * 64 + b)
        })
    }
}

/// One flavor: its jobs in the fixed order, which of them it holds, and how
/// many of those each class holds.
struct Flavor {
    machines: Vec<usize>,
    /// Free times of its machines, ascending: the `i`-th unit of a class
    /// costs `ready[i]`.
    ready: Vec<f64>,
    /// The jobs that may use the flavor, longest first (ties by index).
    order: Vec<u32>,
    held: RankedSet,
    size: usize,
    count: Vec<u32>,
    /// `start[k]`: the first rank of class `k`, for `k <= open`.
    start: Vec<u32>,
    /// The class of each rank below the classes' total. Growing class `k`
    /// rewrites the ranks after it: few, as paths mostly end at the front.
    class_at: Vec<u32>,
    /// Per non-empty class: its longest and its shortest job.
    longest: Vec<u32>,
    shortest: Vec<u32>,
    /// Classes `0..open` are non-empty.
    open: usize,
    /// The global node of class 0.
    node0: usize,
}

impl Flavor {
    fn hold(&mut self, i: usize, yes: bool) {
        self.held.flip(i, yes);
        self.size = if yes { self.size + 1 } else { self.size - 1 };
    }

    /// Order positions of the held jobs, in order.
    fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.held.from(0).take(self.size)
    }

    /// The class holding rank `r`.
    fn class_of(&self, r: usize) -> usize {
        self.class_at[r] as usize
    }

    /// Finds class `k`'s longest and shortest jobs again.
    fn bound(&mut self, k: usize) {
        let (first, c) = (self.start[k] as usize, self.count[k] as usize);
        if c > 0 {
            self.longest[k] = self.order[self.held.select(first)];
            self.shortest[k] = self.order[self.held.select(first + c - 1)];
        }
    }

    /// Class `k` takes one more unit.
    fn grow(&mut self, k: usize) {
        self.count[k] += 1;
        if k == self.open {
            self.open += 1;
            self.start[self.open] = self.start[k];
        }
        for s in &mut self.start[k + 1..=self.open] {
            *s += 1;
        }
        for c in k..self.open {
            let (from, to) = (self.start[c] as usize, self.start[c + 1] as usize);
            self.class_at[from..to].fill(c as u32);
        }
    }

    /// The classes a job at order position `at` (not held) may enter.
    fn entry(&self, at: usize) -> (usize, usize) {
        let r = self.held.rank(at);
        let hi = if r < self.size {
            self.class_of(r)
        } else {
            self.open
        };
        let lo = if r > 0 { self.class_of(r - 1) } else { 0 };
        (lo, hi)
    }
}

struct Flow<'a> {
    instance: &'a Instance,
    flavors: Vec<Flavor>,
    /// Instance flavor -> index into `flavors`, `NONE` without machines.
    flavor_of: Vec<u32>,
    flavor_ids: Vec<usize>,
    /// Per job and flavor index: its order position there, or `NONE`.
    at: Vec<u32>,
    node_flavor: Vec<u32>,
    /// Class potentials; the sink's is 0 throughout.
    pot: Vec<f64>,
    dist: Vec<f64>,
    /// How the search reached a class: from which class, moving which job
    /// (`NONE` class: the new job entered here).
    pred: Vec<(u32, u32)>,
    settled: Vec<bool>,
    touched: Vec<usize>,
    done: Vec<usize>,
    heap: BinaryHeap<Reverse<(Key, u32)>>,
    /// Classes reached at the distance being settled: settled next, past
    /// the heap. Moves one class up are tight after a search, so a search
    /// that reaches a flavor walks its classes at one distance.
    level: Vec<u32>,
    /// The distance being settled.
    now: f64,
    /// Per class node and other flavor: the class's jobs keyed by a lower
    /// bound on what entering that flavor costs them (module comment), as
    /// `(bound, job, version)`. Entries of a job that has moved since are
    /// stale: their version is behind `version[job]`.
    cross: Vec<BinaryHeap<Reverse<(Key, u32, u32)>>>,
    /// Per job: bumped each time it changes class.
    version: Vec<u32>,
    /// Entries popped while settling a class, to put back.
    keep: Vec<(Key, u32, u32)>,
    /// The path of the last search: `(class, job that entered it)`.
    path: Vec<(usize, u32)>,
    /// The cheapest path to a free unit found so far in this search, and
    /// the class it leaves from: an upper bound on the search's end.
    best: f64,
    last: u32,
    work: Work,
}

impl<'a> Flow<'a> {
    fn new(instance: &'a Instance) -> Self {
        let n = instance.jobs();
        let mut flavor_of = vec![NONE; instance.flavors];
        let mut flavor_ids = Vec::new();
        let mut flavors: Vec<Flavor> = Vec::new();
        for (m, machine) in instance.machines.iter().enumerate() {
            if flavor_of[machine.flavor] == NONE {
                flavor_of[machine.flavor] = flavors.len() as u32;
                flavor_ids.push(machine.flavor);
                flavors.push(Flavor {
                    machines: Vec::new(),
                    ready: Vec::new(),
                    order: Vec::new(),
                    held: RankedSet::new(0),
                    size: 0,
                    count: Vec::new(),
                    start: Vec::new(),
                    class_at: Vec::new(),
                    longest: Vec::new(),
                    shortest: Vec::new(),
                    open: 0,
                    node0: 0,
                });
            }
            flavors[flavor_of[machine.flavor] as usize].machines.push(m);
        }
        let nf = flavors.len();
        let mut at = vec![NONE; n * nf];
        let mut nodes = 0;
        let mut node_flavor = Vec::new();
        let mut pot = Vec::new();
        for (fi, fl) in flavors.iter_mut().enumerate() {
            let f = flavor_ids[fi];
            fl.ready = fl
                .machines
                .iter()
                .map(|&m| instance.machines[m].free_in)
                .collect();
            fl.ready.sort_by(f64::total_cmp);
            let time = |j: u32| instance.time(j as usize, f).unwrap_or(0.0);
            fl.order = (0..n as u32)
                .filter(|&j| instance.time(j as usize, f).is_some())
                .collect();
            fl.order
                .sort_by(|&a, &b| time(b).total_cmp(&time(a)).then(a.cmp(&b)));
            for (i, &j) in fl.order.iter().enumerate() {
                at[j as usize * nf + fi] = i as u32;
            }
            let len = fl.order.len();
            fl.held = RankedSet::new(len);
            // A class per job at most, and the empty one after them.
            fl.count = vec![0; len + 1];
            fl.start = vec![0; len + 2];
            fl.class_at = vec![0; len];
            fl.longest = vec![NONE; len + 1];
            fl.shortest = vec![NONE; len + 1];
            fl.node0 = nodes;
            nodes += len + 1;
            node_flavor.extend(std::iter::repeat_n(fi as u32, len + 1));
            // Tight sink arcs on every empty class (module comment).
            pot.extend(std::iter::repeat_n(-fl.ready[0], len + 1));
        }
        Flow {
            instance,
            flavors,
            flavor_of,
            flavor_ids,
            at,
            node_flavor,
            pot,
            dist: vec![f64::INFINITY; nodes],
            pred: vec![(NONE, NONE); nodes],
            settled: vec![false; nodes],
            touched: Vec::new(),
            done: Vec::new(),
            heap: BinaryHeap::new(),
            level: Vec::new(),
            now: f64::NEG_INFINITY,
            cross: (0..nodes * nf).map(|_| BinaryHeap::new()).collect(),
            version: vec![0; n],
            keep: Vec::new(),
            path: Vec::new(),
            best: f64::INFINITY,
            last: NONE,
            work: Work::default(),
        }
    }

    fn time(&self, job: u32, fi: usize) -> Option<f64> {
        self.instance.time(job as usize, self.flavor_ids[fi])
    }

    /// Offers class `node` the distance `d`. A distance at or past the best
    /// path to a free unit found so far is dropped: the search ends before
    /// it would settle there, and the potential update caps it anyway.
    fn relax(&mut self, node: usize, d: f64, from: u32, job: u32) {
        if d < self.dist[node] && d < self.best && !self.settled[node] {
            if self.dist[node] == f64::INFINITY {
                self.touched.push(node);
            }
            self.dist[node] = d;
            self.pred[node] = (from, job);
            if d <= self.now {
                self.level.push(node as u32);
            } else {
                self.heap.push(Reverse((Key(d), node as u32)));
            }
            // A free unit here bounds the search at once.
            let fl = &self.flavors[self.node_flavor[node] as usize];
            let c = fl.count[node - fl.node0] as usize;
            if c < fl.ready.len() {
                let to_sink = d + fl.ready[c] + self.pot[node];
                if to_sink < self.best {
                    self.best = to_sink;
                    self.last = node as u32;
                }
            }
        }
    }

    /// Relaxes `job` entering flavor `fi` from a search distance `base`
    /// (its cost where it is already subtracted).
    fn enter(&mut self, fi: usize, job: u32, base: f64, from: u32) {
        let Some(p) = self.time(job, fi) else {
            return;
        };
        let at = self.at[job as usize * self.flavors.len() + fi] as usize;
        let (lo, hi) = self.flavors[fi].entry(at);
        let node0 = self.flavors[fi].node0;
        for k in lo..=hi {
            let node = node0 + k;
            let d = base + (k + 1) as f64 * p - self.pot[node];
            self.relax(node, d, from, job);
        }
    }

    /// What entering flavor `fi` costs `job` at its cheapest entry, in
    /// reduced terms: `min_k (k + 1) p - pot(k)`. The sorted entry classes
    /// attain the minimum over all of the flavor's classes (the module
    /// comment), so this depends only on potentials, which only fall: it
    /// never decreases while `job` stays where it is.
    fn entry_value(&self, fi: usize, job: u32) -> Option<f64> {
        let p = self.time(job, fi)?;
        let at = self.at[job as usize * self.flavors.len() + fi] as usize;
        let (lo, hi) = self.flavors[fi].entry(at);
        let node0 = self.flavors[fi].node0;
        (lo..=hi)
            .map(|k| (k + 1) as f64 * p - self.pot[node0 + k])
            .min_by(f64::total_cmp)
    }

    /// Relaxes the moves of class `v`'s jobs into flavor `f2` that may end
    /// below the best path found so far, cheapest bound first.
    fn relax_cross(&mut self, v: usize, fi: usize, f2: usize, d: f64) {
        let idx = v * self.flavors.len() + f2;
        let pv = self.pot[v];
        let kth = (v - self.flavors[fi].node0 + 1) as f64;
        while let Some(&Reverse((Key(bound), x, ver))) = self.cross[idx].peek() {
            if ver != self.version[x as usize] {
                self.cross[idx].pop();
                continue;
            }
            if d + pv + bound >= self.best {
                break;
            }
            self.cross[idx].pop();
            let leave = kth * self.time(x, fi).unwrap_or(0.0);
            let value = self.entry_value(f2, x).unwrap_or(f64::INFINITY) - leave;
            if value > bound {
                self.cross[idx].push(Reverse((Key(value), x, ver)));
                continue;
            }
            self.work.relaxed += 1;
            self.enter(f2, x, d + pv - leave, v as u32);
            self.keep.push((Key(value), x, ver));
        }
        for e in self.keep.drain(..) {
            self.cross[idx].push(Reverse(e));
        }
    }

    /// Files `job`, just moved into class `v`, under each other flavor.
    fn file(&mut self, v: usize, job: u32) {
        let nf = self.flavors.len();
        let fi = self.node_flavor[v] as usize;
        let kth = (v - self.flavors[fi].node0 + 1) as f64;
        let leave = kth * self.time(job, fi).unwrap_or(0.0);
        let ver = self.version[job as usize] + 1;
        self.version[job as usize] = ver;
        for f2 in 0..nf {
            if f2 != fi {
                if let Some(value) = self.entry_value(f2, job) {
                    self.cross[v * nf + f2].push(Reverse((Key(value - leave), job, ver)));
                }
            }
        }
    }

    /// One shortest path from `job` to a free unit, applied.
    fn augment(&mut self, job: usize) {
        let job = job as u32;
        self.best = f64::INFINITY;
        self.last = NONE;
        // The new job's entries have any sign: all go to the heap.
        self.now = f64::NEG_INFINITY;
        for fi in 0..self.flavors.len() {
            self.enter(fi, job, 0.0, NONE);
        }
        loop {
            let (d, v) = if let Some(v) = self.level.pop() {
                (self.dist[v as usize], v as usize)
            } else if let Some(Reverse((Key(d), v))) = self.heap.pop() {
                (d, v as usize)
            } else {
                break;
            };
            if d >= self.best {
                break;
            }
            if self.settled[v] || d > self.dist[v] {
                continue;
            }
            self.now = d;
            self.settled[v] = true;
            self.done.push(v);
            self.work.settled += 1;
            let fi = self.node_flavor[v] as usize;
            let fl = &self.flavors[fi];
            let k = v - fl.node0;
            let c = fl.count[k] as usize;
            let pv = self.pot[v];
            if c == 0 {
                continue;
            }
            let (longest, shortest) = (fl.longest[k], fl.shortest[k]);
            let up = d + self.time(shortest, fi).unwrap_or(0.0) + pv - self.pot[v + 1];
            self.relax(v + 1, up, v as u32, shortest);
            if k > 0 {
                let down = d - self.time(longest, fi).unwrap_or(0.0) + pv - self.pot[v - 1];
                self.relax(v - 1, down, v as u32, longest);
            }
            for f2 in 0..self.flavors.len() {
                if f2 != fi {
                    self.relax_cross(v, fi, f2, d);
                }
            }
        }
        self.heap.clear();
        self.level.clear();
        let (best, last) = (self.best, self.last);
        debug_assert!(last != NONE, "a validated job always reaches a free unit");
        for &v in &self.done {
            self.pot[v] += self.dist[v] - best;
            self.settled[v] = false;
        }
        self.done.clear();
        // Apply: the last class takes the new unit; jobs that crossed
        // flavors change sets (moves within a flavor are implied by order).
        let mut v = last as usize;
        {
            let fi = self.node_flavor[v] as usize;
            let fl = &mut self.flavors[fi];
            let k = v - fl.node0;
            fl.grow(k);
        }
        let nf = self.flavors.len();
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        loop {
            let (from, x) = self.pred[v];
            let fi = self.node_flavor[v] as usize;
            path.push((v, x));
            if from == NONE {
                let at = self.at[x as usize * nf + fi] as usize;
                self.flavors[fi].hold(at, true);
                break;
            }
            let from = from as usize;
            let fj = self.node_flavor[from] as usize;
            if fj != fi {
                let out = self.at[x as usize * nf + fj] as usize;
                self.flavors[fj].hold(out, false);
                let at = self.at[x as usize * nf + fi] as usize;
                self.flavors[fi].hold(at, true);
            }
            v = from;
        }
        // Only the path's classes changed members.
        for &(v, _) in &path {
            let fi = self.node_flavor[v] as usize;
            let k = v - self.flavors[fi].node0;
            self.flavors[fi].bound(k);
        }
        if nf > 1 {
            for &(v, x) in &path {
                self.file(v, x);
            }
        }
        self.path = path;
        for &v in &self.touched {
            self.dist[v] = f64::INFINITY;
        }
        self.touched.clear();
    }
}
