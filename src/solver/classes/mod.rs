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
//! Two facts keep the searches short:
//! - **Bounded moves between flavors.** The moves in and out of a class
//!   are tight or cost at least 0, so within a flavor `(k + 1) p - pot(k)`
//!   is convex in `k` and its minimum over all classes lies at the sorted
//!   entry. So what entering a flavor costs a job depends only on that
//!   flavor's potentials, which only fall: it never decreases while the job
//!   stays in its class. Each class keeps its jobs in a heap keyed by that
//!   cost when last seen, a lower bound, and settling the class relaxes
//!   only the moves whose bound can still end below the best path found.
//! - **Ties settle in depth.** The moves one class up are tight after a
//!   search, so a search that reaches a flavor finds its classes at one
//!   distance. Those are settled next, past the heap, last reached first:
//!   the walk reaches the front and its free unit before the rest, and the
//!   search ends without settling the classes at that distance.
//! - **A probe caps a warm arrival's search.** Before it, a walk up each chain from the
//!   new job's entry to the first free unit prices one real path; the
//!   search prunes every class and move at or past it. Without it the
//!   moves to other flavors of every class below the best path were
//!   relaxed before that path was found (about 6,000 a warm arrival at
//!   10,000 x 16 x 2, 5 with it). The cap is summed apart from the
//!   search's distances, so it only prunes: a search whose best path is
//!   not below it runs again without it.
//!
//! Counts only grow during a solve (the last class of a path takes the new
//! unit), so a flavor's classes `0..open` are non-empty and the next one,
//! `open`, is the only empty class a path may reach. A class that opens
//! gets the lower of its predecessor's potential and the one that makes its
//! arc to the sink tight: the arcs into it then cost at least the arcs into
//! its predecessor.
//!
//! **Warm state.** [`Classes`] keeps the classes and potentials between
//! decisions. An arrival is one augmentation. A start (the soonest-free
//! machine of a flavor takes its first job, the flavor's shortest) leaves
//! the rest optimal: in machine terms it is the old instance with that job
//! fixed first on that machine. Its potentials stay valid but for one arc,
//! the freed unit's arc to the sink, which may now cost less than its
//! potential says. Searches allow for such arcs (`loose`): they settle
//! everything within the most negative one's excess, and a search that
//! settles a class leaves its arc to the sink non-negative.
//!
//! When every job is placed, each flavor's jobs are scheduled onto its
//! machines by list scheduling ([`super::one_flavor`]), which is optimal for
//! a fixed set of jobs and so costs what the classes cost.
//!
//! Preferences (a bonus on one machine) break the likeness of a flavor's
//! machines, so such instances go to the slot solver ([`super::fast`]).
//! Sums are exact for integer inputs below 2^53, as in the other solvers.

mod flavor;
mod search;

use super::{one_flavor, Instance, Machine, Slot, Solution, SolveError};
use crate::ordered::TotalF64 as Key;
use flavor::Flavor;
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
#[cfg_attr(feature = "cli", derive(serde::Serialize))]
pub struct Work {
    /// Classes settled by the searches, over all augmentations.
    pub settled: u64,
    /// Moves between flavors relaxed.
    pub relaxed: u64,
    /// Searches run again without the probes' cap (`search.rs`, `augment`).
    pub reruns: u64,
}

/// [`solve`], also saying how much searching it took.
pub fn solve_counting(instance: &Instance) -> Result<(Solution, Work), SolveError> {
    let state = Classes::cold(instance)?;
    let mut slots = vec![
        Slot {
            machine: 0,
            position: 0
        };
        instance.jobs()
    ];
    for (fi, fl) in state.flavors.iter().enumerate() {
        let jobs: Vec<usize> = fl.members().map(|i| fl.order[i] as usize).collect();
        one_flavor::schedule(
            instance,
            state.flavor_ids[fi],
            &fl.machines,
            &jobs,
            &mut slots,
        );
    }
    let objective = instance.objective(&slots);
    Ok((Solution { slots, objective }, state.work))
}

/// The class solver's state: which flavor and class each job is in, and
/// the potentials, kept between decisions.
pub struct Classes {
    /// The instance's flavor count (a job's times have one per flavor).
    nflavors: usize,
    /// The flavors that have machines.
    flavors: Vec<Flavor>,
    /// Instance flavor -> index into `flavors`, `NONE` without machines.
    flavor_of: Vec<u32>,
    flavor_ids: Vec<usize>,
    machine_flavor: Vec<usize>,
    /// When each machine is free, on the state's clock.
    free_at: Vec<f64>,
    clock: f64,
    /// Per job, its time per instance flavor.
    times: Vec<Option<f64>>,
    /// Per job and flavor index: its order position there, or `NONE`.
    at: Vec<u32>,
    /// Jobs that have started: they are in no flavor any more.
    gone: Vec<bool>,
    /// Per job: bumped each time it changes class.
    version: Vec<u32>,
    /// Per job: the class node it is filed under (`NONE`: none).
    home: Vec<u32>,
    /// Per job and flavor index: what entering that flavor cost it when
    /// last computed (NaN: never). Entry costs only rise, so it stays a
    /// lower bound.
    seen: Vec<f64>,
    /// Class levels allocated: class `k` of flavor index `f` is node
    /// `k * flavors.len() + f`.
    levels: usize,
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
    /// the heap.
    level: Vec<u32>,
    /// The distance being settled.
    now: f64,
    /// Classes settled at that distance whose moves other than one class
    /// up wait until the walk at that distance is over.
    deferred: Vec<usize>,
    /// Per class node and other flavor index: the class's jobs keyed by a
    /// lower bound on what entering that flavor costs them, as `(bound,
    /// job, version)`. Entries of a job that has moved since are stale:
    /// their version is behind `version[job]`.
    cross: Vec<BinaryHeap<Reverse<(Key, u32, u32)>>>,
    /// Per entry of `cross`: at most the least bound in its heap (stale
    /// entries included), infinity when empty; read before the heap.
    cross_low: Vec<f64>,
    /// Entries popped while settling a class, to put back.
    keep: Vec<(Key, u32, u32)>,
    /// The path of the last search: `(class, job that entered it)`.
    path: Vec<(usize, u32)>,
    /// Classes to look at again after a path (kept to save allocations),
    /// and the ranges of classes they form, as `(flavor, first, last)`.
    fix: Vec<usize>,
    runs: Vec<(usize, usize, usize)>,
    /// The cheapest path to a free unit found so far in this search, and
    /// the class it leaves from: an upper bound on the search's end.
    best: f64,
    last: u32,
    /// What a path up one chain to a free unit costs, found before the
    /// search (`probe`), plus the slack and an allowance for rounding: no
    /// class at or past it can be on a cheaper path.
    cap: f64,
    /// Classes whose arc to the sink may cost less than its potential says
    /// (after a start).
    loose: Vec<usize>,
    work: Work,
}

impl Classes {
    /// The searching done so far, over every augmentation of this state.
    pub fn work(&self) -> Work {
        self.work
    }
    /// Places every job of `instance` (which [`applies`] must accept).
    pub fn cold(instance: &Instance) -> Result<Self, SolveError> {
        instance.validate()?;
        if !applies(instance) {
            return Err(SolveError::Shape);
        }
        let mut state = Classes::empty(instance);
        let n = instance.jobs();
        let fastest: Vec<f64> = (0..n)
            .map(|j| {
                state
                    .flavor_ids
                    .iter()
                    .filter_map(|&f| instance.time(j, f))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        // Longest first: each new job tends to enter near the fronts, so
        // its search stays among the last classes.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| fastest[b].total_cmp(&fastest[a]).then(a.cmp(&b)));
        for &j in &order {
            state.augment(j as u32, false);
        }
        state.debug_check();
        Ok(state)
    }

    /// The machines of `instance` and all its jobs, none placed yet.
    fn empty(instance: &Instance) -> Self {
        let n = instance.jobs();
        let mut flavor_of = vec![NONE; instance.flavors];
        let mut flavor_ids = Vec::new();
        let mut machines: Vec<Vec<usize>> = Vec::new();
        for (m, machine) in instance.machines.iter().enumerate() {
            if flavor_of[machine.flavor] == NONE {
                flavor_of[machine.flavor] = flavor_ids.len() as u32;
                flavor_ids.push(machine.flavor);
                machines.push(Vec::new());
            }
            machines[flavor_of[machine.flavor] as usize].push(m);
        }
        let nf = flavor_ids.len();
        let mut at = vec![NONE; n * nf];
        let flavors: Vec<Flavor> = machines
            .into_iter()
            .enumerate()
            .map(|(fi, ms)| {
                let f = flavor_ids[fi];
                let time = |j: u32| instance.time(j as usize, f).unwrap_or(0.0);
                let mut order: Vec<u32> = (0..n as u32)
                    .filter(|&j| instance.time(j as usize, f).is_some())
                    .collect();
                order.sort_by(|&a, &b| time(b).total_cmp(&time(a)).then(a.cmp(&b)));
                for (i, &j) in order.iter().enumerate() {
                    at[j as usize * nf + fi] = i as u32;
                }
                let ready = ms.iter().map(|&m| instance.machines[m].free_in).collect();
                let times = order.iter().map(|&j| time(j)).collect();
                Flavor::new(ms, ready, order, times)
            })
            .collect();
        let mut state = Classes {
            nflavors: instance.flavors,
            flavor_of,
            flavor_ids,
            machine_flavor: instance.machines.iter().map(|m| m.flavor).collect(),
            free_at: instance.machines.iter().map(|m| m.free_in).collect(),
            clock: 0.0,
            times: instance.times.clone(),
            at,
            gone: vec![false; n],
            version: vec![0; n],
            home: vec![NONE; n],
            seen: vec![f64::NAN; n * nf],
            levels: 0,
            pot: Vec::new(),
            dist: Vec::new(),
            pred: Vec::new(),
            settled: Vec::new(),
            touched: Vec::new(),
            done: Vec::new(),
            heap: BinaryHeap::new(),
            level: Vec::new(),
            now: f64::NEG_INFINITY,
            deferred: Vec::new(),
            cross: Vec::new(),
            cross_low: Vec::new(),
            keep: Vec::new(),
            path: Vec::new(),
            fix: Vec::new(),
            runs: Vec::new(),
            best: f64::INFINITY,
            last: NONE,
            cap: f64::INFINITY,
            loose: Vec::new(),
            work: Work::default(),
            flavors,
        };
        state.reserve_levels(2);
        for fi in 0..nf {
            // Class 0 is open: its arc to the sink is tight.
            state.pot[fi] = -state.flavors[fi].ready[0];
        }
        state
    }

    /// Adds a job (its time per flavor) and places it optimally. Returns
    /// its id in this state.
    pub fn add_job(&mut self, times: &[Option<f64>]) -> Result<u32, SolveError> {
        let j = self.gone.len();
        if times.len() != self.nflavors
            || times.iter().flatten().any(|p| !p.is_finite() || *p < 0.0)
        {
            return Err(SolveError::Shape);
        }
        if !times
            .iter()
            .enumerate()
            .any(|(f, p)| p.is_some() && self.flavor_of[f] != NONE)
        {
            return Err(SolveError::Unplaceable { job: j });
        }
        let job = j as u32;
        self.times.extend_from_slice(times);
        self.gone.push(false);
        self.version.push(0);
        self.home.push(NONE);
        let nf = self.flavors.len();
        self.seen.extend(std::iter::repeat_n(f64::NAN, nf));
        self.at.extend(std::iter::repeat_n(NONE, nf));
        for fi in 0..nf {
            let Some(p) = times[self.flavor_ids[fi]] else {
                continue;
            };
            let fl = &self.flavors[fi];
            let f = self.flavor_ids[fi];
            let times = &self.times;
            // Longest first, ties by index: the new job goes after its equals.
            let i = fl
                .order
                .partition_point(|&x| times[x as usize * self.nflavors + f].unwrap_or(0.0) >= p);
            self.flavors[fi].insert(i, job, p);
            for &x in &self.flavors[fi].order[i + 1..] {
                self.at[x as usize * nf + fi] += 1;
            }
            self.at[j * nf + fi] = i as u32;
        }
        self.augment(job, true);
        self.debug_check();
        Ok(job)
    }

    /// In debug builds, checks every flavor's bookkeeping, and that the
    /// potentials price no move one class up or down, and no job's move to
    /// another flavor, below zero (beyond rounding).
    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            for fl in &self.flavors {
                fl.check();
            }
            self.check_potentials();
        }
    }

    fn check_potentials(&self) {
        let nf = self.flavors.len();
        // Rounding scales with the largest magnitude summed: potentials,
        // and a time at the deepest position.
        let deepest = self.levels as f64;
        let longest = self.times.iter().flatten().fold(1.0f64, |m, t| m.max(*t));
        let scale = self
            .pot
            .iter()
            .fold(longest * deepest, |m, p| m.max(p.abs()));
        let tol = 1e-12 * scale;
        for (fi, fl) in self.flavors.iter().enumerate() {
            let f = self.flavor_ids[fi];
            let time = |x: u32| self.times[x as usize * self.nflavors + f].unwrap_or(0.0);
            for k in 0..fl.open {
                let v = k * nf + fi;
                let up = time(fl.shortest[k]) + self.pot[v] - self.pot[v + nf];
                assert!(
                    up >= -tol,
                    "move up from class {k} of flavor {fi} costs {up}"
                );
                if k > 0 {
                    let down = -time(fl.longest[k]) + self.pot[v] - self.pot[v - nf];
                    assert!(
                        down >= -tol,
                        "move down from class {k} of flavor {fi} costs {down}"
                    );
                }
            }
        }
    }

    /// Moves the clock `dt >= 0` forward. Valid while every machine with
    /// jobs stays busy that long (see [`Classes::room`]); machines without
    /// jobs become free no earlier than now, which only makes them dearer.
    pub fn advance(&mut self, dt: f64) {
        self.clock += dt;
        let now = self.clock;
        for fl in &mut self.flavors {
            for r in &mut fl.ready {
                *r = r.max(now);
            }
        }
        for f in &mut self.free_at {
            *f = f.max(now);
        }
    }

    /// How far the clock may move: until the soonest machine with jobs
    /// frees, or forever when no job waits.
    pub fn room(&self) -> f64 {
        self.flavors
            .iter()
            .filter(|fl| fl.size > 0)
            .map(|fl| fl.ready[0] - self.clock)
            .fold(f64::INFINITY, f64::min)
    }

    /// The next start: the clock moves to when the soonest machine with
    /// jobs frees, and that machine starts its flavor's shortest job.
    /// Returns the machine and the job, or `None` when no job waits.
    pub fn start_next(&mut self) -> Option<(usize, u32)> {
        let fi = (0..self.flavors.len())
            .filter(|&fi| self.flavors[fi].size > 0)
            .min_by(|&a, &b| self.flavors[a].ready[0].total_cmp(&self.flavors[b].ready[0]))?;
        self.advance(self.room().max(0.0));
        let machine = self.flavors[fi]
            .machines
            .iter()
            .copied()
            .min_by(|&a, &b| self.free_at[a].total_cmp(&self.free_at[b]).then(a.cmp(&b)))
            .expect("a flavor has machines");
        Some((machine, self.start_shortest(fi, machine)))
    }

    /// The job [`Classes::start`] would start on `machine`: its flavor's
    /// shortest, when the machine is among the flavor's soonest free (list
    /// scheduling gives those the shortest jobs first). `None` otherwise.
    pub fn startable(&self, machine: usize) -> Option<u32> {
        let fi = self.flavor_of[self.machine_flavor[machine]] as usize;
        let fl = &self.flavors[fi];
        (fl.size > 0 && self.free_at[machine] == fl.ready[0])
            .then(|| fl.order[fl.held.select(fl.size - 1)])
    }

    /// Starts [`Classes::startable`]'s job on `machine`, when it frees; the
    /// clock stays. It was first on that machine in an optimal schedule, so
    /// the rest stays optimal (as for [`Classes::start_next`]). Returns the
    /// job, or `None` (and nothing changes) when there is none.
    pub fn start(&mut self, machine: usize) -> Option<u32> {
        self.startable(machine)?;
        let fi = self.flavor_of[self.machine_flavor[machine]] as usize;
        Some(self.start_shortest(fi, machine))
    }

    /// `machine`, one of flavor `fi`'s soonest free, starts the flavor's
    /// shortest job when it frees.
    fn start_shortest(&mut self, fi: usize, machine: usize) -> u32 {
        let nf = self.flavors.len();
        let fl = &self.flavors[fi];
        let pos = fl.held.select(fl.size - 1);
        let job = fl.order[pos];
        let p = self.times[job as usize * self.nflavors + self.flavor_ids[fi]].unwrap_or(0.0);
        let ends = self.free_at[machine].max(self.clock) + p;
        self.free_at[machine] = ends;
        let fl = &mut self.flavors[fi];
        fl.requeue_soonest(ends);
        fl.hold(pos, false);
        let k = fl.shrink_last();
        self.gone[job as usize] = true;
        self.version[job as usize] += 1;
        self.home[job as usize] = NONE;
        // The unit `job` held is free again; the rest is still optimal.
        let node = k * nf + fi;
        if self.sink_cost(node) < 0.0 {
            self.loose.push(node);
        }
        self.debug_check();
        job
    }

    /// Each machine's queue, first to run first: each flavor's jobs by list
    /// scheduling, shortest first, each onto the machine that frees first
    /// (ties: the lower index), which is optimal for the flavor's set. So
    /// the soonest machine's first job is what [`Classes::startable`] says.
    pub fn queues(&self) -> Vec<Vec<u32>> {
        let mut queues = vec![Vec::new(); self.free_at.len()];
        for (fi, fl) in self.flavors.iter().enumerate() {
            let f = self.flavor_ids[fi];
            let members: Vec<usize> = fl.members().collect();
            // The order is longest first: its last member is the shortest.
            let jobs = members.iter().rev().map(|&pos| {
                let job = fl.order[pos] as usize;
                (job, self.times[job * self.nflavors + f].unwrap_or(0.0))
            });
            one_flavor::list_schedule(
                &fl.machines,
                |m| self.free_at[m],
                jobs,
                |job, m| queues[m].push(job as u32),
            );
        }
        queues
    }

    /// The number of machines.
    pub fn machines(&self) -> usize {
        self.free_at.len()
    }

    /// The instance's number of flavors.
    pub fn flavors(&self) -> usize {
        self.nflavors
    }

    /// How long until `machine` is free.
    pub fn free_in(&self, machine: usize) -> f64 {
        self.free_at[machine] - self.clock
    }

    /// A job's times per flavor, as given.
    pub fn times_of(&self, job: u32) -> &[Option<f64>] {
        &self.times[job as usize * self.nflavors..(job as usize + 1) * self.nflavors]
    }

    /// The jobs still waiting: the sum of their completion times from now.
    pub fn cost(&self) -> f64 {
        let mut total = 0.0;
        for (fi, fl) in self.flavors.iter().enumerate() {
            let f = self.flavor_ids[fi];
            let mut members = fl.members();
            for k in 0..fl.open {
                for i in 0..fl.count[k] as usize {
                    let x = fl.order[members.next().expect("counts match members")];
                    let p = self.times[x as usize * self.nflavors + f].unwrap_or(0.0);
                    total += fl.ready[i] - self.clock + (k + 1) as f64 * p;
                }
            }
        }
        total
    }

    /// The jobs still waiting, in id order, as a fresh instance over the
    /// machines as they are now: what a cold solve of this state would be
    /// given. Returns the instance and the ids.
    pub fn remaining(&self) -> (Instance, Vec<u32>) {
        let ids: Vec<u32> = (0..self.gone.len() as u32)
            .filter(|&j| !self.gone[j as usize])
            .collect();
        let machines = (0..self.free_at.len())
            .map(|m| Machine {
                flavor: self.machine_flavor[m],
                free_in: self.free_at[m] - self.clock,
            })
            .collect();
        let instance = Instance::of_jobs(self.nflavors, machines, &self.times, &ids, Vec::new());
        (instance, ids)
    }
}
