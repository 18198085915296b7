//! Where a one-node job would go among the nodes the plan has placed
//! nothing on yet. Such a node's load only falls, so its soonest fit for
//! a share, and the slots free then, depend on the share alone, not on
//! the job's length: they are worked out once per plan, per flavor and
//! share, and shared by every copy of the schedule the search makes. A
//! one-node job then reads the nodes the plan has touched, one by one,
//! and only the first untouched node of this order, rather than every
//! node of its flavor.

use super::profile::Profile;
use super::PlanNode;
use std::cell::OnceCell;

/// Per flavor and share: the untouched nodes as `(soonest start, free
/// slots then, node)`, least first: the order in which the one-node
/// search would prefer them (sooner, then fuller, then lower index).
pub(super) struct FreshNodes {
    /// The most slots any node has, plus one: the row length.
    shares: usize,
    /// `[flavor * shares + share]`, filled on first use.
    orders: Vec<OnceCell<Vec<(f64, usize, usize)>>>,
}

impl FreshNodes {
    pub(super) fn new(nodes: &[PlanNode], flavors: usize) -> Self {
        let shares = nodes.iter().map(|n| n.slots).max().unwrap_or(0) + 1;
        FreshNodes {
            shares,
            orders: (0..flavors * shares).map(|_| OnceCell::new()).collect(),
        }
    }

    /// The nodes of `of_flavor` (all of `flavor`) that hold `share`
    /// slots, every one of them, in the order above.
    pub(super) fn order(
        &self,
        nodes: &[PlanNode],
        of_flavor: &[usize],
        flavor: usize,
        share: usize,
    ) -> &[(f64, usize, usize)] {
        if share >= self.shares {
            return &[];
        }
        self.orders[flavor * self.shares + share].get_or_init(|| {
            let mut order: Vec<(f64, usize, usize)> = of_flavor
                .iter()
                .filter_map(|&n| {
                    let profile = Profile::new(&nodes[n].busy_until);
                    // Any length: an untouched node's answer ignores it.
                    let (t, free) =
                        profile.earliest_fit(nodes[n].slots, share, 1.0, f64::INFINITY)?;
                    Some((t, free, n))
                })
                .collect();
            order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            order
        })
    }
}
