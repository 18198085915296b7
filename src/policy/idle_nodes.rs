//! The idle slots of a view, by flavor and node: where a job of some
//! [`Width`] can start now, and the machines it takes.
//!
//! Placement is best fit: a job takes the nodes with the fewest idle slots
//! that still hold its width, so narrow jobs fill partly used nodes and
//! whole nodes stay whole for wide ones. Ties go to the lower node, and
//! within a node the lower machines go first; with one slot per node that
//! is "lowest idle machine first", the rule the greedy policies always had.

use super::{Start, View};
use crate::model::Width;
use std::collections::BTreeSet;

/// Idle slots per flavor and node; see the module's description.
pub(crate) struct IdleNodes {
    /// Per flavor, per count of idle slots `c`, the nodes with exactly `c`
    /// (index 0 unused).
    buckets: Vec<Vec<BTreeSet<usize>>>,
    /// Per node (a [`crate::policy::MachineView::node`]), its idle
    /// machines, highest first (taken from the back).
    machines: Vec<Vec<usize>>,
    /// Idle slots per flavor.
    count: Vec<usize>,
}

impl IdleNodes {
    pub(crate) fn new(view: &View<'_>) -> Self {
        let nodes = view.machines.iter().map(|m| m.node + 1).max().unwrap_or(0);
        let mut machines = vec![Vec::new(); nodes];
        let mut flavor_of = vec![usize::MAX; nodes];
        for m in view.idle_machines() {
            let node = view.machines[m].node;
            machines[node].push(m);
            flavor_of[node] = view.machines[m].flavor;
        }
        let mut count = vec![0; view.flavors.len()];
        let mut buckets: Vec<Vec<BTreeSet<usize>>> = vec![Vec::new(); view.flavors.len()];
        for (node, idle) in machines.iter_mut().enumerate() {
            if idle.is_empty() {
                continue;
            }
            idle.sort_unstable_by(|a, b| b.cmp(a));
            let f = flavor_of[node];
            count[f] += idle.len();
            if buckets[f].len() <= idle.len() {
                buckets[f].resize(idle.len() + 1, BTreeSet::new());
            }
            buckets[f][idle.len()].insert(node);
        }
        IdleNodes {
            buckets,
            machines,
            count,
        }
    }

    /// Whether a job of `width` can start on `flavor` now.
    pub(crate) fn fits(&self, flavor: usize, width: Width) -> bool {
        let mut found = 0;
        for nodes in self.buckets[flavor].iter().skip(width.per_node) {
            found += nodes.len();
            if found >= width.nodes {
                return true;
            }
        }
        false
    }

    /// The machines a job of `width` takes on `flavor` (best fit), now
    /// no longer idle; `None`, taking nothing, if it does not fit.
    pub(crate) fn take(&mut self, flavor: usize, width: Width) -> Option<Vec<usize>> {
        if !self.fits(flavor, width) {
            return None;
        }
        let mut chosen = Vec::with_capacity(width.nodes);
        'pick: for c in width.per_node..self.buckets[flavor].len() {
            for &node in &self.buckets[flavor][c] {
                chosen.push((node, c));
                if chosen.len() == width.nodes {
                    break 'pick;
                }
            }
        }
        let mut taken = Vec::with_capacity(width.slots());
        for (node, c) in chosen {
            let bucket = &mut self.buckets[flavor];
            bucket[c].remove(&node);
            let idle = &mut self.machines[node];
            for _ in 0..width.per_node {
                taken.push(idle.pop().expect("the bucket counts its idle slots"));
            }
            if c > width.per_node {
                bucket[c - width.per_node].insert(node);
            }
        }
        self.count[flavor] -= taken.len();
        taken.sort_unstable();
        Some(taken)
    }

    /// Idle slots of `flavor`.
    pub(crate) fn count(&self, flavor: usize) -> usize {
        self.count[flavor]
    }

    /// Whether any slot is idle.
    pub(crate) fn any(&self) -> bool {
        self.count.iter().any(|&c| c > 0)
    }
}

/// The starts of job `job` on `machines`: one per slot.
pub(crate) fn gang_starts(job: usize, machines: &[usize]) -> impl Iterator<Item = Start> + '_ {
    machines.iter().map(move |&machine| Start { job, machine })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flavor;
    use crate::policy::MachineView;

    /// One flavor of three 4-slot nodes; `busy` machines are taken.
    fn view_with(busy: &[usize]) -> (Vec<Flavor>, Vec<MachineView>) {
        let flavors = vec![Flavor {
            name: "gpu".into(),
            slots: 12,
            per_node: 4,
        }];
        let machines = (0..12)
            .map(|m| MachineView {
                flavor: 0,
                node: m / 4,
                free_at: 0.0,
                idle: !busy.contains(&m),
            })
            .collect();
        (flavors, machines)
    }

    fn idle(flavors: &[Flavor], machines: &[MachineView]) -> IdleNodes {
        IdleNodes::new(&View {
            now: 0.0,
            flavors,
            machines,
            pending: &[],
            running: &[],
            user_weights: &[],
            attained: &[],
        })
    }

    #[test]
    fn narrow_jobs_fill_the_fullest_node_and_wide_ones_take_whole_nodes() {
        // Node 0 has 1 idle slot, node 1 has 3, node 2 is whole.
        let (f, m) = view_with(&[0, 1, 2, 4]);
        let mut idle = idle(&f, &m);
        assert_eq!(idle.count(0), 8);
        assert_eq!(idle.take(0, Width::ONE), Some(vec![3]));
        assert_eq!(idle.take(0, Width::new(2, 1).unwrap()), Some(vec![5, 6]));
        assert!(idle.fits(0, Width::new(4, 1).unwrap()));
        assert!(!idle.fits(0, Width::new(4, 2).unwrap()));
        assert_eq!(
            idle.take(0, Width::new(4, 1).unwrap()),
            Some(vec![8, 9, 10, 11])
        );
        assert_eq!(idle.take(0, Width::new(2, 1).unwrap()), None);
        assert_eq!(idle.take(0, Width::ONE), Some(vec![7]));
        assert!(!idle.any());
    }

    #[test]
    fn a_multi_node_job_takes_its_slots_on_distinct_nodes() {
        let (f, m) = view_with(&[0]);
        let mut idle = idle(&f, &m);
        let taken = idle.take(0, Width::new(2, 3).unwrap()).unwrap();
        assert_eq!(taken, vec![1, 2, 4, 5, 8, 9]);
        assert_eq!(idle.count(0), 5);
        assert_eq!(idle.take(0, Width::new(3, 1).unwrap()), None);
        assert_eq!(
            idle.take(0, Width::new(2, 2).unwrap()),
            Some(vec![6, 7, 10, 11])
        );
    }
}
