//! The exact solver: successive shortest augmenting paths (primal-dual, as
//! in Jonker-Volgenant) over a slot graph that is generated lazily and
//! searched flavor by flavor instead of slot by slot.
//!
//! Three facts make it fast:
//!
//! 1. **Lazy positions.** Costs grow with `k`, so a machine's free slots
//!    beyond its first free position `L_m + 1` are never better than that
//!    one. Only matched slots and one *frontier* slot per machine exist; a
//!    new frontier appears when the old one is taken. Free slots keep dual
//!    `v = 0`, which is what makes the unmaterialised slots dual-feasible.
//! 2. **Distances by flavor and position.** During Dijkstra the distance of
//!    slot `s = (m, k)` of flavor `f` is
//!    `min_j (D_j - u_j + k * p_jf) + (a_m - v_s) = E_f(k) + w_s`.
//!    `E_f(k)` is shared by every slot with the same `(f, k)`, so scanning a
//!    job costs `O(sum_f K_f)` (the longest queue per flavor), not
//!    `O(slots)`; and the best slot of a bucket `(f, k)` is the one with
//!    the smallest `w_s`, kept in an ordered set.
//! 3. **Lazy dual updates.** Only the jobs and slots a search touched change
//!    their duals, so an augmentation costs what it explores.
//!
//! A job's preferred machine (a bonus on one machine, see
//! [`Instance::preferred`]) does not fit the shared per-flavor envelope, so
//! those edges are relaxed one slot at a time into a small side heap that
//! the search consults beside the buckets.
//!
//! Invariants between augmentations: every `u_j + v_s <= c(j, s)`,
//! equality on matched pairs, `v_s <= 0`, and `v_s = 0` on free slots.
//! These are the LP optimality conditions, so the final matching is optimal.

use super::{Instance, Slot, Solution, SolveError};
use crate::ordered::TotalF64 as Key;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: u32 = u32::MAX;

/// All slots of one flavor at one position `k`, keyed by `w = a_m - v_s`.
///
/// A min-heap with lazy deletion (a second heap of removed entries), not
/// an ordered set: a bucket empties and fills again many times a solve,
/// and a `BTreeSet` freed and allocated its node each time (a third of a
/// simulated AlloX run went to malloc and free). The heaps keep their
/// capacity. Entries are `(w, matched, slot)`: among equal `w`, free slots
/// (`false`) first, since reaching one ends the search. It is a multiset:
/// a slot removed and put back with the same key before the removal
/// surfaced is there once.
#[derive(Default)]
struct Bucket {
    heap: BinaryHeap<Reverse<(Key, bool, u32)>>,
    gone: BinaryHeap<Reverse<(Key, bool, u32)>>,
}

impl Bucket {
    fn insert(&mut self, entry: (Key, bool, u32)) {
        self.heap.push(Reverse(entry));
        self.settle();
    }

    /// `entry` must be in the bucket.
    fn remove(&mut self, entry: (Key, bool, u32)) {
        self.gone.push(Reverse(entry));
        self.settle();
    }

    /// Drops removed entries from the top, so that `first` is live: a
    /// removed entry still in `heap` is at least `gone`'s top, so a live
    /// top of `heap` below it is the minimum.
    fn settle(&mut self) {
        while let (Some(a), Some(b)) = (self.heap.peek(), self.gone.peek()) {
            if a != b {
                break;
            }
            self.heap.pop();
            self.gone.pop();
        }
    }

    fn first(&self) -> Option<&(Key, bool, u32)> {
        self.heap.peek().map(|Reverse(e)| e)
    }

    fn min_w(&self) -> f64 {
        self.first().map_or(f64::INFINITY, |(w, _, _)| w.0)
    }
}

struct FlavorState {
    /// `buckets[k - 1]` holds the slots at position `k`.
    buckets: Vec<Bucket>,
    /// Cached `buckets[i].min_w()`.
    min_w: Vec<f64>,
    /// Dijkstra scratch: `E_f(k)` and the job that attains it.
    envelope: Vec<f64>,
    envelope_job: Vec<u32>,
    /// Smallest `E_f(k) + min_w(k)` and its bucket index.
    best: (f64, usize),
}

impl FlavorState {
    fn ensure_position(&mut self, k: usize) {
        while self.buckets.len() < k {
            self.buckets.push(Bucket::default());
            self.min_w.push(f64::INFINITY);
            self.envelope.push(f64::INFINITY);
            self.envelope_job.push(NONE);
        }
    }

    fn insert(&mut self, k: usize, w: f64, matched: bool, slot: u32) {
        self.ensure_position(k);
        self.buckets[k - 1].insert((Key(w), matched, slot));
        self.min_w[k - 1] = self.buckets[k - 1].min_w();
    }

    fn remove(&mut self, k: usize, w: f64, matched: bool, slot: u32) {
        self.buckets[k - 1].remove((Key(w), matched, slot));
        self.min_w[k - 1] = self.buckets[k - 1].min_w();
    }

    fn refresh_best(&mut self) {
        let mut best = (f64::INFINITY, 0);
        for (i, (e, w)) in self.envelope.iter().zip(&self.min_w).enumerate() {
            let d = e + w;
            // On ties prefer the deeper position: free frontier slots sit
            // there, and reaching one ends the search.
            if d <= best.0 {
                best = (d, i);
            }
        }
        self.best = best;
    }
}

struct State<'a> {
    inst: &'a Instance,
    flavors: Vec<FlavorState>,
    has_machine: Vec<bool>,
    // Per slot.
    slot_machine: Vec<u32>,
    slot_position: Vec<u32>,
    slot_v: Vec<f64>,
    slot_job: Vec<u32>,
    slot_pred: Vec<u32>,
    /// Popped in the current search.
    slot_done: Vec<bool>,
    /// Distance through a preferred-machine edge in the current search.
    slot_special: Vec<f64>,
    slot_special_pred: Vec<u32>,
    /// Slot ids of each machine some job prefers, by position - 1 (only
    /// preference edges walk a machine's slots; an allocation per machine
    /// and solve was most of what the rest cost in malloc).
    machine_slots: Vec<Vec<u32>>,
    preferred_machine: Vec<bool>,
    // Per job.
    job_slot: Vec<u32>,
    u: Vec<f64>,
    // Dijkstra scratch, reused across augmentations.
    scanned: Vec<(u32, f64)>,
    popped: Vec<(u32, f64)>,
    special: BinaryHeap<Reverse<(Key, u32)>>,
    special_touched: Vec<u32>,
}

/// Solves `inst` exactly. See the module comment for how.
pub fn solve(inst: &Instance) -> Result<Solution, SolveError> {
    inst.validate()?;
    let mut state = State::new(inst);
    // Longest jobs first: by Smith's rule a shorter job belongs in front
    // of longer ones, so a job inserted after them usually takes a free
    // front position instead of displacing a matched job along a long
    // augmenting path. Among equally long jobs the later index goes in
    // first, so that on ties the earlier job (callers list jobs by
    // arrival) ends up in front. The order changes which optimum is found
    // and how fast, never the optimal value.
    let shortest = |j: u32| {
        (0..inst.flavors)
            .filter_map(|f| state.usable(j, f))
            .fold(f64::INFINITY, f64::min)
    };
    let mut order: Vec<u32> = (0..inst.jobs() as u32).collect();
    order.sort_by(|&a, &b| shortest(b).total_cmp(&shortest(a)).then(b.cmp(&a)));
    for j in order {
        state.augment(j);
    }
    let slots: Vec<Slot> = state
        .job_slot
        .iter()
        .map(|&s| Slot {
            machine: state.slot_machine[s as usize] as usize,
            position: state.slot_position[s as usize] as usize,
        })
        .collect();
    let objective = inst.objective(&slots);
    Ok(Solution { slots, objective })
}

impl<'a> State<'a> {
    fn new(inst: &'a Instance) -> Self {
        // Every machine starts with one frontier slot and every
        // augmentation adds one: the slot vectors never grow past this.
        // (Grown one push at a time, they were a tenth of a simulated
        // AlloX run.)
        let slots = inst.machines.len() + inst.jobs();
        let mut state = State {
            inst,
            flavors: (0..inst.flavors)
                .map(|_| FlavorState {
                    buckets: Vec::new(),
                    min_w: Vec::new(),
                    envelope: Vec::new(),
                    envelope_job: Vec::new(),
                    best: (f64::INFINITY, 0),
                })
                .collect(),
            has_machine: vec![false; inst.flavors],
            slot_machine: Vec::with_capacity(slots),
            slot_position: Vec::with_capacity(slots),
            slot_v: Vec::with_capacity(slots),
            slot_job: Vec::with_capacity(slots),
            slot_pred: Vec::with_capacity(slots),
            slot_done: Vec::with_capacity(slots),
            slot_special: Vec::with_capacity(slots),
            slot_special_pred: Vec::with_capacity(slots),
            machine_slots: vec![Vec::new(); inst.machines.len()],
            preferred_machine: {
                let mut preferred = vec![false; inst.machines.len()];
                for &(m, _) in inst.preferred.iter().flatten() {
                    preferred[m] = true;
                }
                preferred
            },
            job_slot: vec![NONE; inst.jobs()],
            u: vec![0.0; inst.jobs()],
            scanned: Vec::new(),
            popped: Vec::new(),
            special: BinaryHeap::new(),
            special_touched: Vec::new(),
        };
        for (m, machine) in inst.machines.iter().enumerate() {
            state.has_machine[machine.flavor] = true;
            state.new_frontier(m, 1);
        }
        state
    }

    fn new_frontier(&mut self, machine: usize, k: usize) {
        let slot = self.slot_machine.len() as u32;
        self.slot_machine.push(machine as u32);
        self.slot_position.push(k as u32);
        self.slot_v.push(0.0);
        self.slot_job.push(NONE);
        self.slot_pred.push(NONE);
        self.slot_done.push(false);
        self.slot_special.push(f64::INFINITY);
        self.slot_special_pred.push(NONE);
        if self.preferred_machine[machine] {
            self.machine_slots[machine].push(slot);
        }
        let m = &self.inst.machines[machine];
        self.flavors[m.flavor].insert(k, m.free_in, false, slot);
    }

    fn w(&self, slot: u32) -> f64 {
        let m = self.slot_machine[slot as usize] as usize;
        self.inst.machines[m].free_in - self.slot_v[slot as usize]
    }

    fn usable(&self, job: u32, f: usize) -> Option<f64> {
        if self.has_machine[f] {
            self.inst.time(job as usize, f)
        } else {
            None
        }
    }

    /// Relaxes every bucket from `job`, reached at distance `dist`.
    fn scan(&mut self, job: u32, dist: f64) {
        self.scanned.push((job, dist));
        let base = dist - self.u[job as usize];
        for f in 0..self.inst.flavors {
            let Some(p) = self.usable(job, f) else {
                continue;
            };
            let fs = &mut self.flavors[f];
            for (i, (e, arg)) in fs
                .envelope
                .iter_mut()
                .zip(fs.envelope_job.iter_mut())
                .enumerate()
            {
                let d = base + (i + 1) as f64 * p;
                if d < *e {
                    *e = d;
                    *arg = job;
                }
            }
            fs.refresh_best();
        }
        if let Some((m, bonus, p)) = self.preference(job) {
            let free_in = self.inst.machines[m].free_in;
            for i in 0..self.machine_slots[m].len() {
                let slot = self.machine_slots[m][i];
                let s = slot as usize;
                if self.slot_done[s] {
                    continue;
                }
                let k = self.slot_position[s] as f64;
                let d = base + free_in + k * p - bonus - self.slot_v[s];
                if d < self.slot_special[s] {
                    if self.slot_special[s] == f64::INFINITY {
                        self.special_touched.push(slot);
                    }
                    self.slot_special[s] = d;
                    self.slot_special_pred[s] = job;
                    self.special.push(Reverse((Key(d), slot)));
                }
            }
        }
    }

    /// The job's preferred machine, its bonus and the job's time there,
    /// if it has one it may use.
    fn preference(&self, job: u32) -> Option<(usize, f64, f64)> {
        let (m, bonus) = (*self.inst.preferred.get(job as usize)?)?;
        let p = self.usable(job, self.inst.machines[m].flavor)?;
        Some((m, bonus, p))
    }

    /// The smallest live entry of the side heap, dropping stale ones.
    fn special_min(&mut self) -> Option<(f64, u32)> {
        while let Some(&Reverse((Key(d), slot))) = self.special.peek() {
            let s = slot as usize;
            if self.slot_done[s] || d != self.slot_special[s] {
                self.special.pop();
            } else {
                return Some((d, slot));
            }
        }
        None
    }

    /// The cheapest reduced cost from `job` to any slot, which becomes its
    /// dual `u_j` so that all its edges start non-negative.
    fn initial_dual(&self, job: u32) -> f64 {
        let mut best = f64::INFINITY;
        for f in 0..self.inst.flavors {
            if let Some(p) = self.usable(job, f) {
                for (i, w) in self.flavors[f].min_w.iter().enumerate() {
                    best = best.min((i + 1) as f64 * p + w);
                }
            }
        }
        if let Some((m, bonus, p)) = self.preference(job) {
            for &slot in &self.machine_slots[m] {
                let k = self.slot_position[slot as usize] as f64;
                best = best.min(k * p + self.w(slot) - bonus);
            }
        }
        best
    }

    fn augment(&mut self, start: u32) {
        for fs in &mut self.flavors {
            fs.envelope.fill(f64::INFINITY);
            fs.envelope_job.fill(NONE);
            fs.best = (f64::INFINITY, 0);
        }
        self.scanned.clear();
        self.popped.clear();
        self.u[start as usize] = self.initial_dual(start);
        self.scan(start, 0.0);

        let (terminal, delta) = loop {
            let (f, (dist, i)) = self
                .flavors
                .iter()
                .map(|fs| fs.best)
                .enumerate()
                .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
                .expect("an instance has at least one flavor");
            let (slot, dist) = match self.special_min() {
                Some((d, slot)) if d < dist => {
                    self.special.pop();
                    let s = slot as usize;
                    self.slot_pred[s] = self.slot_special_pred[s];
                    let m = self.slot_machine[s] as usize;
                    let w = self.w(slot);
                    let fs = &mut self.flavors[self.inst.machines[m].flavor];
                    fs.remove(
                        self.slot_position[s] as usize,
                        w,
                        self.slot_job[s] != NONE,
                        slot,
                    );
                    fs.refresh_best();
                    (slot, d)
                }
                _ => {
                    debug_assert!(dist.is_finite(), "validated instances always augment");
                    let fs = &mut self.flavors[f];
                    let &(Key(w), matched, slot) =
                        fs.buckets[i].first().expect("best bucket is empty");
                    self.slot_pred[slot as usize] = fs.envelope_job[i];
                    fs.remove(i + 1, w, matched, slot);
                    fs.refresh_best();
                    (slot, dist)
                }
            };
            self.slot_done[slot as usize] = true;
            self.popped.push((slot, dist));
            match self.slot_job[slot as usize] {
                NONE => break (slot, dist),
                job => self.scan(job, dist),
            }
        };

        // Duals first (the keys of popped slots depend on v), then the path.
        for &(job, d) in &self.scanned {
            self.u[job as usize] += delta - d;
        }
        for &(slot, d) in &self.popped {
            self.slot_v[slot as usize] -= delta - d;
        }
        let mut slot = terminal;
        loop {
            let job = self.slot_pred[slot as usize];
            let previous = self.job_slot[job as usize];
            self.slot_job[slot as usize] = job;
            self.job_slot[job as usize] = slot;
            if job == start {
                break;
            }
            slot = previous;
        }
        for &slot in &self.special_touched {
            self.slot_special[slot as usize] = f64::INFINITY;
        }
        self.special_touched.clear();
        self.special.clear();
        for i in 0..self.popped.len() {
            let slot = self.popped[i].0;
            self.slot_done[slot as usize] = false;
            let m = self.slot_machine[slot as usize] as usize;
            let k = self.slot_position[slot as usize] as usize;
            let w = self.w(slot);
            self.flavors[self.inst.machines[m].flavor].insert(k, w, true, slot);
        }
        let m = self.slot_machine[terminal as usize] as usize;
        let k = self.slot_position[terminal as usize] as usize;
        self.new_frontier(m, k + 1);
    }
}
