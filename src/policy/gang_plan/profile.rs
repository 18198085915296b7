//! A node's slots in use over time, as the serial schedule places gangs:
//! a step function of the load, so that the schedule's questions (the
//! most slots in use over a window; the first window a share fits) read
//! the steps a window covers.

use std::borrow::Cow;

/// Slots in use on one node over time: its busy slots (each held from now
/// until it frees) and the plan's intervals.
#[derive(Debug, Default)]
pub(super) struct Profile<'a> {
    /// When each busy slot frees, ascending: the node's own list when it
    /// is sorted already ([`super::view_nodes`] sorts it), so that a schedule,
    /// built hundreds of times per decision, copies nothing.
    busy: Cow<'a, [f64]>,
    /// The load as a step function once the plan placed something on the
    /// node (empty before: the busy slots alone answer, and a schedule of
    /// many nodes allocates only for those it uses): `(t, slots in use
    /// from t until the next step)`, `t` ascending from 0. A query reads
    /// the steps its window covers rather than summing every interval at
    /// every start (quadratic in the intervals, which wide jobs on many
    /// nodes made most of a decision's time).
    steps: Vec<(f64, usize)>,
}

impl Clone for Profile<'_> {
    fn clone(&self) -> Self {
        Profile {
            busy: self.busy.clone(),
            steps: self.steps.clone(),
        }
    }

    /// Keeps `steps`' buffer where it is large enough.
    fn clone_from(&mut self, source: &Self) {
        self.busy.clone_from(&source.busy);
        self.steps.clone_from(&source.steps);
    }
}

impl<'a> Profile<'a> {
    pub(super) fn new(busy_until: &'a [f64]) -> Self {
        let busy = if busy_until.is_sorted_by(|a, b| a <= b) {
            Cow::Borrowed(busy_until)
        } else {
            let mut busy = busy_until.to_vec();
            busy.sort_by(f64::total_cmp);
            Cow::Owned(busy)
        };
        Profile {
            busy,
            steps: Vec::new(),
        }
    }

    /// With only busy slots (nothing placed), the first time at most
    /// `limit` are in use: the load only falls, so from the end that
    /// leaves `limit` busy, and for good.
    fn busy_fit_from(&self, limit: usize) -> f64 {
        match self.busy.len().checked_sub(limit + 1) {
            Some(k) => self.busy[k],
            None => 0.0,
        }
    }

    /// Slots busy at `c >= 0` (they are held from 0 and only free).
    fn busy_at(&self, c: f64) -> usize {
        self.busy.len() - self.busy.partition_point(|&e| e <= c)
    }

    /// The steps of the busy slots alone, before the first placement.
    fn busy_steps(&self) -> Vec<(f64, usize)> {
        // Room for a few placements before the first reallocation.
        let mut steps = Vec::with_capacity(self.busy.len() + 9);
        steps.push((0.0, self.busy.len()));
        for (k, &e) in self.busy.iter().enumerate() {
            let left = self.busy.len() - k - 1;
            match steps.last_mut() {
                Some(last) if last.0 == e => last.1 = left,
                _ => steps.push((e, left)),
            }
        }
        steps
    }

    /// The step holding `c >= 0`.
    fn step_at(&self, c: f64) -> usize {
        self.steps.partition_point(|&(t, _)| t <= c).max(1) - 1
    }

    /// A step starts at `t`, splitting the one that holds it; its index.
    fn split_at(&mut self, t: f64) -> usize {
        let k = self.step_at(t);
        if self.steps[k].0 == t {
            return k;
        }
        self.steps.insert(k + 1, (t, self.steps[k].1));
        k + 1
    }

    /// Holds `slots` more over `[start, end)`, `0 <= start < end`.
    pub(super) fn add(&mut self, start: f64, end: f64, slots: usize) {
        if self.steps.is_empty() {
            self.steps = self.busy_steps();
        }
        let from = self.split_at(start);
        let to = self.split_at(end);
        for step in &mut self.steps[from..to] {
            step.1 += slots;
        }
    }

    /// Most slots in use at any time in `[from, to)`, `from >= 0`.
    pub(super) fn peak(&self, from: f64, to: f64) -> usize {
        if self.steps.is_empty() {
            return self.busy_at(from);
        }
        let k = self.step_at(from);
        // A job of no length still needs its slots free at its start.
        let later = self.steps[k + 1..].iter().take_while(|&&(t, _)| t < to);
        later.fold(self.steps[k].1, |m, &(_, load)| m.max(load))
    }

    /// The earliest `t <= bound` (0, or an end of one of its intervals:
    /// only there can its load drop) at which `need` of `slots` are free
    /// over `[t, t + p)`, `p > 0`, with the slots free over that window
    /// (what best fit compares); `None` if there is none.
    pub(super) fn earliest_fit(
        &self,
        slots: usize,
        need: usize,
        p: f64,
        bound: f64,
    ) -> Option<(f64, usize)> {
        let limit = slots.checked_sub(need)?;
        if self.steps.is_empty() {
            let t = self.busy_fit_from(limit);
            return (t <= bound).then(|| (t, slots - self.busy_at(t)));
        }
        // The steps in order: the first whose window fits is the earliest
        // (a window that fits from a step where the load rose fits from
        // the step before it too, so it is 0 or a drop). A step too full
        // rules out every start whose window reaches it.
        let mut k = 0;
        'start: while k < self.steps.len() && self.steps[k].0 <= bound {
            let (t, load) = self.steps[k];
            if load > limit {
                k += 1;
                continue;
            }
            let mut peak = load;
            let mut j = k + 1;
            while j < self.steps.len() && self.steps[j].0 < t + p {
                if self.steps[j].1 > limit {
                    k = j + 1;
                    continue 'start;
                }
                peak = peak.max(self.steps[j].1);
                j += 1;
            }
            return Some((t, slots - peak));
        }
        None
    }

    /// Adds to `events` the closed intervals of the times `t` at which at
    /// most `limit` slots are in use over all of `[t, t + held)`, `held >
    /// 0`: `(start, 1)` and `(end, -1)`, the last one open-ended.
    pub(super) fn fitting_times(&self, limit: usize, held: f64, events: &mut Vec<(f64, i32)>) {
        if self.steps.is_empty() {
            events.push((self.busy_fit_from(limit), 1));
            return;
        }
        let mut from = 0.0;
        for (k, &(s, load)) in self.steps.iter().enumerate() {
            if load <= limit {
                continue;
            }
            // Too full over [s, e): no window may reach it, so t <= s -
            // held or t >= e.
            if s - held >= from {
                events.push((from, 1));
                events.push((s - held, -1));
            }
            let e = self.steps.get(k + 1).map_or(f64::INFINITY, |&(t, _)| t);
            from = f64::max(from, e);
        }
        events.push((from, 1));
    }
}

/// The definitions the step function must agree with: the load at a
/// time sums the busy slots and every interval covering it.
#[cfg(test)]
pub(super) mod reference {
    pub fn load_at(busy: &[f64], used: &[(f64, f64, usize)], c: f64) -> usize {
        busy.iter().filter(|&&e| e > c).count()
            + used
                .iter()
                .filter(|&&(s, e, _)| s <= c && c < e)
                .map(|&(_, _, n)| n)
                .sum::<usize>()
    }

    pub fn peak(busy: &[f64], used: &[(f64, f64, usize)], from: f64, to: f64) -> usize {
        used.iter()
            .filter(|&&(s, _, _)| from < s && s < to)
            .map(|&(s, _, _)| load_at(busy, used, s))
            .fold(load_at(busy, used, from), usize::max)
    }

    pub fn earliest_fit(
        busy: &[f64],
        used: &[(f64, f64, usize)],
        slots: usize,
        need: usize,
        p: f64,
        bound: f64,
    ) -> Option<(f64, usize)> {
        let limit = slots.checked_sub(need)?;
        let fits = |t: f64| peak(busy, used, t, t + p) <= limit;
        let ends = busy.iter().copied().chain(used.iter().map(|&(_, e, _)| e));
        let t = std::iter::once(0.0)
            .chain(ends)
            .filter(|&t| t <= bound && fits(t))
            .reduce(f64::min)?;
        Some((t, slots - peak(busy, used, t, t + p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn the_step_profile_answers_as_the_sums_do(
            busy in proptest::collection::vec(1u32..40, 0..4),
            placed in proptest::collection::vec((0u32..40, 1u32..20, 1usize..3), 0..8),
            queries in proptest::collection::vec((0u32..60, 0u32..30), 1..8),
            need in 1usize..4,
        ) {
            let slots = 4;
            let mut busy: Vec<f64> = busy.into_iter().map(f64::from).collect();
            busy.sort_by(f64::total_cmp);
            let mut profile = Profile::new(&busy);
            let mut used = Vec::new();
            for (s, len, n) in placed {
                let (s, e) = (f64::from(s), f64::from(s + len));
                profile.add(s, e, n);
                used.push((s, e, n));
            }
            for (from, len) in queries {
                let (from, to) = (f64::from(from), f64::from(from + len));
                proptest::prop_assert_eq!(profile.peak(from, to), reference::peak(&busy, &used, from, to));
                let p = f64::from(len.max(1));
                for bound in [f64::INFINITY, from] {
                    proptest::prop_assert_eq!(
                        profile.earliest_fit(slots, need, p, bound),
                        reference::earliest_fit(&busy, &used, slots, need, p, bound)
                    );
                }
            }
        }
    }
}
