//! One flavor's side of the class solver: its jobs in one fixed order,
//! which of them it holds, how many each class holds, and its machines'
//! free times.

const NONE: u32 = u32::MAX;

/// A set of positions `0..n` with rank and select: a bit per position and,
/// per 64-bit word, how many are set before it. A change costs `O(n / 64)`
/// (few per augmentation), a rank one popcount, a select a binary search
/// over the words; searches make many more queries than changes.
pub(super) struct RankedSet {
    bits: Vec<u64>,
    before: Vec<u32>,
}

impl RankedSet {
    pub(super) fn new(n: usize) -> Self {
        let words = n.div_ceil(64).max(1);
        RankedSet {
            bits: vec![0; words],
            before: vec![0; words],
        }
    }

    pub(super) fn flip(&mut self, i: usize, on: bool) {
        let w = i / 64;
        self.bits[w] ^= 1 << (i % 64);
        for b in &mut self.before[w + 1..] {
            *b = if on { *b + 1 } else { *b - 1 };
        }
    }

    /// Makes room for a new, unset position `i`: positions from `i` on move
    /// one up. `len` is the number of positions before the insertion.
    pub(super) fn open_gap(&mut self, i: usize, len: usize) {
        if (len + 1).div_ceil(64) > self.bits.len() {
            self.bits.push(0);
            self.before.push(0);
        }
        let w = i / 64;
        for k in (w + 1..self.bits.len()).rev() {
            self.bits[k] = (self.bits[k] << 1) | (self.bits[k - 1] >> 63);
        }
        let low = self.bits[w] & ((1u64 << (i % 64)) - 1);
        let high = self.bits[w] & !((1u64 << (i % 64)) - 1);
        self.bits[w] = low | (high << 1);
        // From `w` on: a word just pushed (when `w` is it) counts too.
        for k in w.max(1)..self.bits.len() {
            self.before[k] = self.before[k - 1] + self.bits[k - 1].count_ones();
        }
    }

    /// How many positions below `i` are set.
    pub(super) fn rank(&self, i: usize) -> usize {
        let w = i / 64;
        let below = self.bits[w] & ((1u64 << (i % 64)) - 1);
        self.before[w] as usize + below.count_ones() as usize
    }

    /// The `r`-th set position (0-based); it must exist.
    pub(super) fn select(&self, r: usize) -> usize {
        let w = self.before.partition_point(|&b| b as usize <= r) - 1;
        let mut bits = self.bits[w];
        for _ in 0..r - self.before[w] as usize {
            bits &= bits - 1;
        }
        w * 64 + bits.trailing_zeros() as usize
    }

    /// Set positions from `i` on, in order.
    pub(super) fn from(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
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

pub(super) struct Flavor {
    pub(super) machines: Vec<usize>,
    /// Free times of its machines (on the state's clock), ascending: the
    /// `i`-th unit of a class costs `ready[i]`.
    pub(super) ready: Vec<f64>,
    /// The jobs that may use the flavor, longest first (ties by index).
    pub(super) order: Vec<u32>,
    /// Their times here, beside them: the searches read the edge jobs'
    /// times of every class they settle, and the jobs' own rows are
    /// scattered over memory.
    time: Vec<f64>,
    pub(super) held: RankedSet,
    pub(super) size: usize,
    pub(super) count: Vec<u32>,
    /// `start[k]`: the first rank of class `k`, for `k <= open`.
    pub(super) start: Vec<u32>,
    /// The class of each rank below `size`. Growing class `k` rewrites the
    /// ranks after it: few, as paths mostly end at the front.
    class_at: Vec<u32>,
    /// Per non-empty class: its longest and its shortest job, and their
    /// times.
    pub(super) longest: Vec<u32>,
    pub(super) shortest: Vec<u32>,
    pub(super) longest_time: Vec<f64>,
    pub(super) shortest_time: Vec<f64>,
    /// Classes `0..open` are non-empty; `open` is the one empty class a
    /// path may reach.
    pub(super) open: usize,
}

impl Flavor {
    /// A flavor over `machines` (free at `ready`), holding nothing yet,
    /// whose order is `order` (`time`: each one's time here).
    pub(super) fn new(
        machines: Vec<usize>,
        mut ready: Vec<f64>,
        order: Vec<u32>,
        time: Vec<f64>,
    ) -> Self {
        ready.sort_by(f64::total_cmp);
        let len = order.len();
        Flavor {
            machines,
            ready,
            held: RankedSet::new(len),
            order,
            time,
            size: 0,
            count: vec![0; 2],
            start: vec![0; 3],
            class_at: Vec::new(),
            longest: vec![NONE; 2],
            shortest: vec![NONE; 2],
            longest_time: vec![0.0; 2],
            shortest_time: vec![0.0; 2],
            open: 0,
        }
    }

    pub(super) fn hold(&mut self, i: usize, yes: bool) {
        self.held.flip(i, yes);
        self.size = if yes { self.size + 1 } else { self.size - 1 };
    }

    /// Order positions of the held jobs, in order.
    pub(super) fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.held.from(0).take(self.size)
    }

    /// Puts `job` into the order at `i` (not held); the caller moves the
    /// positions it keeps for the jobs after it.
    pub(super) fn insert(&mut self, i: usize, job: u32, time: f64) {
        self.held.open_gap(i, self.order.len());
        self.order.insert(i, job);
        self.time.insert(i, time);
    }

    /// The class holding rank `r`.
    pub(super) fn class_of(&self, r: usize) -> usize {
        self.class_at[r] as usize
    }

    /// Finds class `k`'s longest and shortest jobs again.
    pub(super) fn bound(&mut self, k: usize) {
        let (first, c) = (self.start[k] as usize, self.count[k] as usize);
        if c > 0 {
            let (a, b) = (self.held.select(first), self.held.select(first + c - 1));
            self.longest[k] = self.order[a];
            self.shortest[k] = self.order[b];
            self.longest_time[k] = self.time[a];
            self.shortest_time[k] = self.time[b];
        }
    }

    /// [`Flavor::bound`] for classes `lo..=hi` (those below `open`). When
    /// the classes are small, one select and a walk over their members
    /// costs less than two selects per class.
    pub(super) fn bound_range(&mut self, lo: usize, hi: usize) {
        if self.open == 0 || lo >= self.open {
            return;
        }
        let hi = hi.min(self.open - 1);
        let (first, end) = (self.start[lo] as usize, self.start[hi + 1] as usize);
        if end - first > 16 * (hi - lo + 1) {
            for k in lo..=hi {
                self.bound(k);
            }
            return;
        }
        let mut k = lo;
        let from = self.held.select(first);
        for (r, pos) in (first..end).zip(self.held.from(from)) {
            if r == self.start[k] as usize {
                self.longest[k] = self.order[pos];
                self.longest_time[k] = self.time[pos];
            }
            if r + 1 == self.start[k + 1] as usize {
                self.shortest[k] = self.order[pos];
                self.shortest_time[k] = self.time[pos];
                k += 1;
            }
        }
    }

    /// Class `k` takes one more unit. Says whether that opened a class.
    pub(super) fn grow(&mut self, k: usize) -> bool {
        self.count[k] += 1;
        let opened = k == self.open;
        if opened {
            self.open += 1;
            if self.open + 1 >= self.count.len() {
                self.count.push(0);
                self.start.push(0);
                self.longest.push(NONE);
                self.shortest.push(NONE);
                self.longest_time.push(0.0);
                self.shortest_time.push(0.0);
            }
            self.start[self.open] = self.start[k];
        }
        for s in &mut self.start[k + 1..=self.open] {
            *s += 1;
        }
        let total = self.start[self.open] as usize;
        if self.class_at.len() < total {
            self.class_at.resize(total, 0);
        }
        for c in k..self.open {
            let (from, to) = (self.start[c] as usize, self.start[c + 1] as usize);
            self.class_at[from..to].fill(c as u32);
        }
        opened
    }

    /// The last class gives up its last unit (its shortest job has left).
    /// Returns that class.
    pub(super) fn shrink_last(&mut self) -> usize {
        let k = self.open - 1;
        self.count[k] -= 1;
        self.start[self.open] -= 1;
        if self.count[k] == 0 {
            self.open -= 1;
        } else {
            self.bound(k);
        }
        k
    }

    /// The classes a job at order position `at` (not held) may enter.
    pub(super) fn entry(&self, at: usize) -> (usize, usize) {
        let r = self.held.rank(at);
        let hi = if r < self.size {
            self.class_of(r)
        } else {
            self.open
        };
        let lo = if r > 0 { self.class_of(r - 1) } else { 0 };
        (lo, hi)
    }

    /// Panics unless the counts, class starts, ranks and bounds agree with
    /// the held jobs (debug builds check it after every change).
    pub(super) fn check(&self) {
        let members: Vec<usize> = self.members().collect();
        assert_eq!(members.len(), self.size, "size");
        assert_eq!(self.held.from(0).count(), self.size, "stray bits");
        let total: u32 = self.count[..self.open].iter().sum();
        assert_eq!(total as usize, self.size, "counts");
        assert!(self.count[self.open..].iter().all(|&c| c == 0), "open");
        for k in 0..self.open {
            assert!(self.count[k] > 0, "empty class below open");
            let first = self.start[k] as usize;
            let last = first + self.count[k] as usize - 1;
            assert_eq!(self.start[k + 1] as usize, last + 1, "start");
            assert_eq!(self.longest[k], self.order[members[first]], "longest");
            assert_eq!(self.shortest[k], self.order[members[last]], "shortest");
            assert_eq!(
                self.longest_time[k], self.time[members[first]],
                "longest time"
            );
            assert_eq!(
                self.shortest_time[k], self.time[members[last]],
                "shortest time"
            );
            assert!((first..=last).all(|r| self.class_of(r) == k), "class_at");
        }
    }

    /// Puts a machine's new free time in place of the soonest one.
    pub(super) fn requeue_soonest(&mut self, free: f64) {
        self.ready.remove(0);
        let i = self.ready.partition_point(|&r| r <= free);
        self.ready.insert(i, free);
    }
}
