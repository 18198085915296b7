//! The serial schedule of the gang plan: each node's load over time as
//! jobs are placed at their earliest fit. The search copies a schedule for
//! every move it weighs, so a copy owns only what it placed.

use super::fresh_nodes::FreshNodes;
use super::profile::Profile;
use super::{PlanNode, SHORTEST_HOLD};
use crate::model::Width;
use std::rc::Rc;

/// The serial schedule: the nodes' profiles and what has been placed.
pub struct Schedule<'a> {
    nodes: &'a [PlanNode],
    /// Each node's profile with nothing placed: shared by the schedule's
    /// copies, as the search copies a schedule for each move it weighs and
    /// a move places its jobs on a few of many nodes.
    unplaced: Rc<[Profile<'a>]>,
    /// Per node, where its own profile is in `placed`, or [`UNPLACED`].
    placed_at: Vec<u32>,
    /// The nodes something is placed on, in the order they were first,
    /// with their profiles.
    placed: Vec<Placed<'a>>,
    /// Per flavor, its nodes: shared as `unplaced` is.
    by_flavor: Rc<[Vec<usize>]>,
    /// The nodes nothing is placed on, in the order a one-node job takes
    /// them; shared as `unplaced` is.
    fresh: Rc<FreshNodes>,
}

impl Clone for Schedule<'_> {
    fn clone(&self) -> Self {
        Schedule {
            nodes: self.nodes,
            unplaced: Rc::clone(&self.unplaced),
            placed_at: self.placed_at.clone(),
            placed: self.placed.clone(),
            by_flavor: Rc::clone(&self.by_flavor),
            fresh: Rc::clone(&self.fresh),
        }
    }

    /// Keeps this copy's buffers where they are large enough: the search
    /// copies a schedule into the same one for each move it weighs.
    fn clone_from(&mut self, source: &Self) {
        self.nodes = source.nodes;
        self.unplaced.clone_from(&source.unplaced);
        self.placed_at.clone_from(&source.placed_at);
        self.placed.clone_from(&source.placed);
        self.by_flavor.clone_from(&source.by_flavor);
        self.fresh.clone_from(&source.fresh);
    }
}

/// A node something is placed on, and its profile.
struct Placed<'a> {
    node: usize,
    profile: Profile<'a>,
}

impl Clone for Placed<'_> {
    fn clone(&self) -> Self {
        Placed {
            node: self.node,
            profile: self.profile.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.node = source.node;
        self.profile.clone_from(&source.profile);
    }
}

/// [`Schedule::placed_at`] of a node nothing is placed on.
const UNPLACED: u32 = u32::MAX;

impl<'a> Schedule<'a> {
    /// The nodes with their busy slots, nothing placed yet.
    pub fn new(nodes: &'a [PlanNode], flavors: usize) -> Self {
        let mut by_flavor = vec![Vec::new(); flavors];
        let unplaced = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                by_flavor[n.flavor].push(i);
                Profile::new(&n.busy_until)
            })
            .collect();
        Schedule {
            nodes,
            unplaced,
            placed_at: vec![UNPLACED; nodes.len()],
            placed: Vec::new(),
            by_flavor: by_flavor.into(),
            fresh: Rc::new(FreshNodes::new(nodes, flavors)),
        }
    }

    /// Node `n`'s profile.
    fn profile(&self, n: usize) -> &Profile<'a> {
        match self.placed_at[n] {
            UNPLACED => &self.unplaced[n],
            k => &self.placed[k as usize].profile,
        }
    }

    /// Whether nothing is placed on node `n`.
    fn is_fresh(&self, n: usize) -> bool {
        self.placed_at[n] == UNPLACED
    }

    /// Holds `slots` of node `n` over `[start, end)`.
    fn add(&mut self, n: usize, start: f64, end: f64, slots: usize) {
        if self.is_fresh(n) {
            self.placed_at[n] =
                u32::try_from(self.placed.len()).expect("fewer nodes than u32::MAX");
            self.placed.push(Placed {
                node: n,
                profile: self.unplaced[n].clone(),
            });
        }
        let k = self.placed_at[n] as usize;
        self.placed[k].profile.add(start, end, slots);
    }

    /// The `take` fullest nodes of `flavor` (best fit, ties by index) that
    /// hold `width.per_node` slots over `[t, t + p)`; fewer if fewer do.
    fn fitting_at(&self, flavor: usize, width: Width, t: f64, p: f64, take: usize) -> Vec<usize> {
        let mut fit: Vec<(usize, usize)> = self.free_fitting(flavor, width, t, p).collect();
        if take > 0 && fit.len() > take {
            fit.select_nth_unstable(take - 1);
            fit.truncate(take);
        }
        fit.sort_unstable();
        fit.into_iter().map(|(_, n)| n).collect()
    }

    /// `(free slots, node)` of each node of `flavor` with `width.per_node`
    /// slots free over `[t, t + p)`.
    fn free_fitting(
        &self,
        flavor: usize,
        width: Width,
        t: f64,
        p: f64,
    ) -> impl Iterator<Item = (usize, usize)> + '_ {
        let p = p.max(SHORTEST_HOLD);
        self.by_flavor[flavor].iter().filter_map(move |&n| {
            let free = self.nodes[n]
                .slots
                .saturating_sub(self.profile(n).peak(t, t + p));
            (free >= width.per_node).then_some((free, n))
        })
    }

    /// The nodes a gang of `width` and time `p` would take on `flavor` at
    /// `t` (best fit), if it fits there. Places nothing.
    pub fn fit_at(&self, flavor: usize, width: Width, t: f64, p: f64) -> Option<Vec<usize>> {
        if width.nodes == 1 {
            // The fullest node that fits, without sorting them all.
            let fullest = self.free_fitting(flavor, width, t, p).min();
            return fullest.map(|(_, n)| vec![n]);
        }
        let nodes = self.fitting_at(flavor, width, t, p, width.nodes);
        (nodes.len() >= width.nodes).then_some(nodes)
    }

    /// Places `job` of `width` and time `p` on `flavor` at `t` if its gang
    /// fits there; returns its nodes.
    pub fn place_at(&mut self, flavor: usize, width: Width, p: f64, t: f64) -> Option<Vec<usize>> {
        let nodes = self.fit_at(flavor, width, t, p)?;
        self.hold(&nodes, width, t, p);
        Some(nodes)
    }

    /// [`Schedule::earliest`] for a job on one node of `flavor`, taking
    /// `share` slots of it: its start and its node.
    pub(super) fn earliest_one(&self, flavor: usize, share: usize, p: f64) -> Option<(f64, usize)> {
        // The soonest any node fits, each from its own intervals (where
        // its load drops), and best fit then. The nodes that fit at the
        // soonest time are exactly those whose own soonest it is (one that
        // fit within a step would fit from the step's start), so the least
        // (start, free, node) over the nodes is the answer: the first
        // untouched node of their standing order, against each touched
        // node of the flavor.
        let order = self
            .fresh
            .order(self.nodes, &self.by_flavor[flavor], flavor, share);
        let p = p.max(SHORTEST_HOLD);
        let mut best = order.iter().find(|&&(_, _, n)| self.is_fresh(n)).copied();
        for &Placed {
            node: n,
            ref profile,
        } in &self.placed
        {
            let node = &self.nodes[n];
            if node.flavor != flavor {
                continue;
            }
            let bound = best.map_or(f64::INFINITY, |b| b.0);
            if let Some((t, free)) = profile.earliest_fit(node.slots, share, p, bound) {
                if best.is_none_or(|(bt, bf, bn)| t < bt || (t == bt && (free, n) < (bf, bn))) {
                    best = Some((t, free, n));
                }
            }
        }
        best.map(|(t, _, n)| (t, n))
    }

    /// The earliest time a job's gang fits on `flavor` without moving
    /// anything placed, and the nodes it would take then; `None` if the
    /// flavor has too few nodes of enough slots. Places nothing.
    pub fn earliest(&self, flavor: usize, width: Width, p: f64) -> Option<(f64, Vec<usize>)> {
        // Every node of the flavor that holds the share, in the order a
        // one-node job would take them untouched.
        let order = self
            .fresh
            .order(self.nodes, &self.by_flavor[flavor], flavor, width.per_node);
        if order.len() < width.nodes {
            return None;
        }
        if width.nodes == 1 {
            return self
                .earliest_one(flavor, width.per_node, p)
                .map(|(t, n)| (t, vec![n]));
        }
        // Each node fits the gang's share at the times of a few closed
        // intervals: a sweep over their ends finds the first time enough
        // nodes fit together (the start of one of them: 0, or where a
        // node's load drops), in one pass rather than a count of every
        // node at every time.
        let held = p.max(SHORTEST_HOLD);
        // (time, +1 where a node starts to fit, -1 just after it stops)
        let mut events: Vec<(f64, i32)> = Vec::new();
        for &n in &self.by_flavor[flavor] {
            let Some(limit) = self.nodes[n].slots.checked_sub(width.per_node) else {
                continue;
            };
            self.profile(n).fitting_times(limit, held, &mut events);
        }
        // At equal times, starts first: the intervals are closed.
        events.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut fitting = 0;
        for (t, change) in events {
            fitting += change;
            if change > 0 && fitting >= width.nodes as i32 {
                return Some((t, self.fitting_at(flavor, width, t, p, width.nodes)));
            }
        }
        unreachable!("every slot is free after the last interval ends")
    }

    /// Holds `width.per_node` slots of each of `nodes` over `[t, t + p)`.
    pub fn hold(&mut self, nodes: &[usize], width: Width, t: f64, p: f64) {
        for &n in nodes {
            self.add(n, t, t + p.max(SHORTEST_HOLD), width.per_node);
        }
    }

    /// Places a job at the earliest time its gang fits on `flavor` without
    /// moving anything placed: returns its start and nodes, or `None` if
    /// the flavor has too few nodes of enough slots.
    pub fn place_earliest(
        &mut self,
        flavor: usize,
        width: Width,
        p: f64,
    ) -> Option<(f64, Vec<usize>)> {
        let (t, nodes) = self.earliest(flavor, width, p)?;
        self.hold(&nodes, width, t, p);
        Some((t, nodes))
    }
}
