//! The class solver's search: one shortest path from a new job to a free
//! unit, over the classes, and its application.

use super::{Classes, Key, NONE};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

impl Classes {
    /// Makes room for class levels `0..levels`.
    pub(super) fn reserve_levels(&mut self, levels: usize) {
        let nf = self.flavors.len();
        while self.levels < levels {
            self.pot.extend(std::iter::repeat_n(0.0, nf));
            self.dist.extend(std::iter::repeat_n(f64::INFINITY, nf));
            self.pred.extend(std::iter::repeat_n((NONE, NONE), nf));
            self.settled.extend(std::iter::repeat_n(false, nf));
            self.cross.extend((0..nf * nf).map(|_| BinaryHeap::new()));
            self.cross_low
                .extend(std::iter::repeat_n(f64::INFINITY, nf * nf));
            self.levels += 1;
        }
    }

    fn time(&self, job: u32, fi: usize) -> Option<f64> {
        self.times[job as usize * self.nflavors + self.flavor_ids[fi]]
    }

    /// The reduced cost of class `node`'s arc to the sink (its next unit),
    /// or infinity when the class is full.
    pub(super) fn sink_cost(&self, node: usize) -> f64 {
        let nf = self.flavors.len();
        let fl = &self.flavors[node % nf];
        let c = fl.count[node / nf] as usize;
        match fl.ready.get(c) {
            Some(&a) => a + self.pot[node],
            None => f64::INFINITY,
        }
    }

    /// How far below its potential's promise an arc to the sink may end:
    /// the searches settle that much past the best path.
    fn slack(&mut self) -> f64 {
        let mut worst: f64 = 0.0;
        let mut i = 0;
        while i < self.loose.len() {
            let rc = self.sink_cost(self.loose[i]);
            if rc < 0.0 {
                worst = worst.max(-rc);
                i += 1;
            } else {
                self.loose.swap_remove(i);
            }
        }
        worst
    }

    /// Where the search stops: past the best path found so far (plus the
    /// slack), or past the probes' cap.
    fn limit(&self, slack: f64) -> f64 {
        (self.best + slack).min(self.cap)
    }

    /// Offers class `node` the distance `d`. A distance at or past the best
    /// path to a free unit found so far (plus the slack) is dropped: the
    /// search ends before it would settle there, and the potential update
    /// caps it anyway.
    #[inline(always)]
    fn relax(&mut self, node: usize, d: f64, from: u32, job: u32, slack: f64) {
        if d < self.dist[node] && d < self.limit(slack) && !self.settled[node] {
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
            let to_sink = d + self.sink_cost(node);
            if to_sink < self.best {
                self.best = to_sink;
                self.last = node as u32;
            }
        }
    }

    /// Relaxes `job` entering flavor `fi` from a search distance `base`
    /// (its cost where it is already subtracted).
    fn enter(&mut self, fi: usize, job: u32, base: f64, from: u32, slack: f64) {
        let Some(p) = self.time(job, fi) else {
            return;
        };
        let nf = self.flavors.len();
        let at = self.at[job as usize * nf + fi] as usize;
        let (lo, hi) = self.flavors[fi].entry(at);
        for k in lo..=hi {
            let node = k * nf + fi;
            let d = base + (k + 1) as f64 * p - self.pot[node];
            self.relax(node, d, from, job, slack);
        }
    }

    /// What entering flavor `fi` costs `job` at its cheapest entry, in
    /// reduced terms: `min_k (k + 1) p - pot(k)`. The sorted entry classes
    /// attain the minimum over all of the flavor's classes (the module
    /// comment), so this depends only on potentials, which only fall: it
    /// never decreases while `job` stays where it is.
    fn entry_value(&self, fi: usize, job: u32) -> Option<f64> {
        let p = self.time(job, fi)?;
        let nf = self.flavors.len();
        let at = self.at[job as usize * nf + fi] as usize;
        let (lo, hi) = self.flavors[fi].entry(at);
        (lo..=hi)
            .map(|k| (k + 1) as f64 * p - self.pot[k * nf + fi])
            .min_by(f64::total_cmp)
    }

    /// Relaxes the moves of class `v`'s jobs into flavor `f2` that may end
    /// below the best path found so far, cheapest bound first.
    fn relax_cross(&mut self, v: usize, f2: usize, d: f64, slack: f64) {
        let nf = self.flavors.len();
        let (fi, kth) = (v % nf, (v / nf + 1) as f64);
        let idx = v * nf + f2;
        let pv = self.pot[v];
        // Most settled classes have no move worth relaxing: the flat lower
        // bound says so without touching the heap.
        if d + pv + self.cross_low[idx] >= self.limit(slack) {
            return;
        }
        while let Some(&Reverse((Key(bound), x, ver))) = self.cross[idx].peek() {
            if ver != self.version[x as usize] {
                self.cross[idx].pop();
                continue;
            }
            if d + pv + bound >= self.limit(slack) {
                break;
            }
            self.cross[idx].pop();
            let leave = kth * self.time(x, fi).unwrap_or(0.0);
            let entry = self.entry_value(f2, x).unwrap_or(f64::INFINITY);
            self.seen[x as usize * nf + f2] = entry;
            let value = entry - leave;
            if value > bound {
                self.cross[idx].push(Reverse((Key(value), x, ver)));
                continue;
            }
            self.work.relaxed += 1;
            self.enter(f2, x, d + pv - leave, v as u32, slack);
            self.keep.push((Key(value), x, ver));
        }
        for e in self.keep.drain(..) {
            self.cross[idx].push(Reverse(e));
        }
        self.cross_low[idx] = self.cross[idx]
            .peek()
            .map_or(f64::INFINITY, |Reverse((Key(b), _, _))| *b);
    }

    /// Files `job`, just moved into class `v`, under each other flavor.
    fn file(&mut self, v: usize, job: u32) {
        let nf = self.flavors.len();
        let (fi, kth) = (v % nf, (v / nf + 1) as f64);
        let leave = kth * self.time(job, fi).unwrap_or(0.0);
        let ver = self.version[job as usize] + 1;
        self.version[job as usize] = ver;
        self.home[job as usize] = v as u32;
        for f2 in 0..nf {
            if f2 == fi || self.time(job, f2).is_none() {
                continue;
            }
            // Any entry value seen before is still a lower bound.
            let seen = self.seen[job as usize * nf + f2];
            let value = if seen.is_nan() {
                let value = self.entry_value(f2, job).unwrap_or(f64::INFINITY);
                self.seen[job as usize * nf + f2] = value;
                value
            } else {
                seen
            };
            let idx = v * nf + f2;
            self.cross[idx].push(Reverse((Key(value - leave), job, ver)));
            self.cross_low[idx] = self.cross_low[idx].min(value - leave);
        }
    }

    /// The moves out of settled class `v` other than one class up: one
    /// class down, and its jobs' moves to the other flavors.
    fn relax_rest(&mut self, v: usize, slack: f64) {
        let nf = self.flavors.len();
        let (fi, k, d) = (v % nf, v / nf, self.dist[v]);
        if k > 0 {
            let fl = &self.flavors[fi];
            let (longest, t) = (fl.longest[k], fl.longest_time[k]);
            let down = d - t + self.pot[v] - self.pot[v - nf];
            self.relax(v - nf, down, v as u32, longest, slack);
        }
        for f2 in 0..nf {
            if f2 != fi {
                self.relax_cross(v, f2, d, slack);
            }
        }
    }

    /// What the path costs that enters flavor `fi` at `job`'s cheaper
    /// entry class and walks up the chain (each class's shortest job one
    /// class up) to the first class with a free unit, in reduced terms;
    /// and the largest magnitude summed on the way. The search prunes at
    /// this cost (plus an allowance for rounding, `augment`): with dense
    /// ties a flavor's moves cost about nothing, and a search that found
    /// its best path late relaxed thousands of moves between flavors
    /// first. The walk only reads: the search's distances and
    /// predecessors stay its own (relaxing from classes not yet settled
    /// let rounding close a cycle of predecessors).
    fn probe(&self, fi: usize, job: u32) -> Option<(f64, f64)> {
        let nf = self.flavors.len();
        let p = self.time(job, fi)?;
        let at = self.at[job as usize * nf + fi] as usize;
        let fl = &self.flavors[fi];
        let (lo, hi) = fl.entry(at);
        let (mut d, mut k) = (lo..=hi)
            .map(|k| ((k + 1) as f64 * p - self.pot[k * nf + fi], k))
            .min_by(|a, b| a.0.total_cmp(&b.0))?;
        let mut scale = ((hi + 1) as f64 * p).abs().max(self.pot[k * nf + fi].abs());
        loop {
            let v = k * nf + fi;
            let to_sink = self.sink_cost(v);
            if to_sink.is_finite() {
                return Some((d + to_sink, scale.max(to_sink.abs()).max(d.abs())));
            }
            if fl.count[k] == 0 || k + 1 >= self.levels {
                return None;
            }
            let t = fl.shortest_time[k];
            d += t + self.pot[v] - self.pot[v + nf];
            scale = scale
                .max(t.abs())
                .max(self.pot[v].abs())
                .max(self.pot[v + nf].abs());
            k += 1;
        }
    }

    /// One shortest path from `job` to a free unit, applied. `probe`:
    /// cap the search first (`probe`). Warm arrivals do: they land
    /// mid-queue, below a long walk to the front. A cold solve does not:
    /// it places the longest job first, so each job enters near the
    /// fronts, its search is short, and the probes made it 6 to 9% slower.
    pub(super) fn augment(&mut self, job: u32, probe: bool) {
        let nf = self.flavors.len();
        let top = self.flavors.iter().map(|fl| fl.open).max().unwrap_or(0);
        self.reserve_levels(top + 2);
        let slack = self.slack();
        // The probes' cheapest path bounds the search. Its cost is summed
        // in another order than the search's distances, and potentials
        // carry their own rounding, so the cap is a pruning bound only:
        // the search finds its path itself, and when its best path is not
        // below the cap (less the slack), the cap may have cut something
        // short, and the search runs again without it (exactly the search
        // before the probe). That has happened only on fractional times.
        self.cap = f64::INFINITY;
        for fi in (0..nf).filter(|_| probe) {
            if let Some((cost, scale)) = self.probe(fi, job) {
                self.cap = self.cap.min(cost + slack + 1e-9 * scale.max(1.0));
            }
        }
        self.search(job, slack);
        if self.cap < f64::INFINITY && self.best + slack >= self.cap {
            self.work.reruns += 1;
            self.forget_search();
            self.cap = f64::INFINITY;
            self.search(job, slack);
        }
        let (best, last) = (self.best, self.last);
        debug_assert!(last != NONE, "a validated job always reaches a free unit");
        // Settled classes past the best (within the slack) keep theirs.
        for &v in &self.done {
            self.pot[v] += (self.dist[v] - best).min(0.0);
        }
        self.forget_settled();
        self.apply(last as usize);
        self.forget_distances();
    }

    /// Dijkstra from `job`'s entries to the best path to a free unit,
    /// bounded by `limit`; leaves `best`, `last`, the settled classes
    /// (`done`) and the distances (`touched`).
    fn search(&mut self, job: u32, slack: f64) {
        let nf = self.flavors.len();
        self.best = f64::INFINITY;
        self.last = NONE;
        // The new job's entries have any sign: all go to the heap.
        self.now = f64::NEG_INFINITY;
        for fi in 0..nf {
            self.enter(fi, job, 0.0, NONE, slack);
        }
        loop {
            let (d, v) = if let Some(v) = self.level.pop() {
                (self.dist[v as usize], v as usize)
            } else if let Some(v) = self.deferred.pop() {
                // The walk at this distance is over: now the other moves
                // of the classes it settled, bounded by what it found.
                if self.dist[v] < self.limit(slack) {
                    self.relax_rest(v, slack);
                }
                continue;
            } else if let Some(Reverse((Key(d), v))) = self.heap.pop() {
                (d, v as usize)
            } else {
                break;
            };
            if d >= self.limit(slack) {
                break;
            }
            if self.settled[v] || d > self.dist[v] {
                continue;
            }
            self.now = d;
            self.settled[v] = true;
            self.done.push(v);
            self.work.settled += 1;
            let (fi, k) = (v % nf, v / nf);
            let fl = &self.flavors[fi];
            if fl.count[k] == 0 {
                continue;
            }
            // One class up first: after a search those moves are tight, so
            // this walks to the front and its free unit at this distance.
            let shortest = fl.shortest[k];
            let up = d + fl.shortest_time[k] + self.pot[v] - self.pot[v + nf];
            self.relax(v + nf, up, v as u32, shortest, slack);
            self.deferred.push(v);
        }
        self.deferred.clear();
        self.heap.clear();
        self.level.clear();
    }

    fn forget_settled(&mut self) {
        for &v in &self.done {
            self.settled[v] = false;
        }
        self.done.clear();
    }

    fn forget_distances(&mut self) {
        for &v in &self.touched {
            self.dist[v] = f64::INFINITY;
        }
        self.touched.clear();
    }

    /// Undoes a search's marks (the moves between flavors it took from the
    /// per-class heaps are back in them, and their bounds stay bounds).
    fn forget_search(&mut self) {
        self.forget_settled();
        self.forget_distances();
    }

    /// Applies the path that ends at class `last`: it takes the new unit;
    /// jobs that crossed flavors change sets (moves within a flavor are
    /// implied by the order); the path's classes, the only ones whose
    /// members changed, find their bounds and file their new jobs.
    // One function on purpose: it runs once per augmentation, and its
    // scratch buffers (`path`, `runs`, `fix`) are taken from `self` once and
    // handed back at the end, so each step reuses their allocations and
    // reads the path the step before built.
    fn apply(&mut self, last: usize) {
        let nf = self.flavors.len();
        let (fi, k) = (last % nf, last / nf);
        if self.flavors[fi].grow(k) {
            // The class after it opens below its predecessor's potential,
            // so the arcs into it cost at least the arcs into `k`.
            let next = last + nf;
            self.pot[next] = self.pot[last].min(-self.flavors[fi].ready[0]);
            if self.sink_cost(next) < 0.0 {
                self.loose.push(next);
            }
        }
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let mut v = last;
        loop {
            let (from, x) = self.pred[v];
            let fi = v % nf;
            path.push((v, x));
            if from == NONE {
                let at = self.at[x as usize * nf + fi] as usize;
                self.flavors[fi].hold(at, true);
                break;
            }
            let from = from as usize;
            let fj = from % nf;
            if fj != fi {
                let out = self.at[x as usize * nf + fj] as usize;
                self.flavors[fj].hold(out, false);
                let at = self.at[x as usize * nf + fi] as usize;
                self.flavors[fi].hold(at, true);
            }
            v = from;
        }
        // Which class holds a job follows from the order and the counts.
        // That is the path's own assignment, but for ties: a job entering
        // at the edge of a class and an equal neighbour moved out may land
        // swapped (same cost), always across a class boundary. So each job
        // the path moved is filed where the order puts it, and the path's
        // classes and their neighbours find their bounds again and file
        // their boundary jobs where they are not filed yet.
        let mut fix = std::mem::take(&mut self.fix);
        fix.clear();
        // A path's stretch within one flavor moves one class at a time, so
        // its classes and their neighbours are one range of classes.
        let mut runs = std::mem::take(&mut self.runs);
        runs.clear();
        let mut i = 0;
        while i < path.len() {
            let fi = path[i].0 % nf;
            let (mut lo, mut hi) = (path[i].0 / nf, path[i].0 / nf);
            i += 1;
            while i < path.len() && path[i].0 % nf == fi {
                let k = path[i].0 / nf;
                (lo, hi) = (lo.min(k), hi.max(k));
                i += 1;
            }
            runs.push((fi, lo.saturating_sub(1), (hi + 1).min(self.levels - 1)));
        }
        runs.sort_unstable();
        let mut merged = 0;
        for r in 1..runs.len() {
            let (fi, lo, hi) = runs[r];
            let last = &mut runs[merged];
            if last.0 == fi && lo <= last.2 + 1 {
                last.2 = last.2.max(hi);
            } else {
                merged += 1;
                runs[merged] = (fi, lo, hi);
            }
        }
        runs.truncate(merged + 1);
        for &(fi, lo, hi) in &runs {
            self.flavors[fi].bound_range(lo, hi);
            fix.extend((lo..=hi).map(|k| k * nf + fi));
        }
        self.runs = runs;
        if nf > 1 {
            for &(v, x) in &path {
                let fi = v % nf;
                let fl = &self.flavors[fi];
                let rank = fl.held.rank(self.at[x as usize * nf + fi] as usize);
                let home = fl.class_of(rank) * nf + fi;
                if self.home[x as usize] != home as u32 {
                    self.file(home, x);
                }
            }
            for &v in &fix {
                let (fi, k) = (v % nf, v / nf);
                if k >= self.flavors[fi].open {
                    continue;
                }
                for x in [self.flavors[fi].longest[k], self.flavors[fi].shortest[k]] {
                    if self.home[x as usize] != v as u32 {
                        self.file(v, x);
                    }
                }
            }
        }
        self.fix = fix;
        self.path = path;
    }
}
