//! Nodes that Slurm found full though the slot model thought them free.
//!
//! The model knows a partition's CPU limits, its oversubscription and
//! what overlapping partitions hold, but Slurm's node selection weighs
//! more (memory, cores against CPUs, sockets, GRES bindings). When
//! `select_nodes()` refuses a start on a node for want of resources, that
//! partition's slots on that node are left out of the plans until the
//! node's jobs change (one ends, or another starts there), or
//! [`FULL_FOR`] seconds pass, so the next plan tries another node instead
//! of the same one at every cycle.

use super::snapshot::Snapshot;
use std::collections::HashMap;

/// Longest a node stays full for a partition while its jobs stay the same:
/// what Slurm weighs beyond the jobs (a suspended job's memory, a job still
/// completing, a node's memory after a reconfiguration) may change without
/// them.
pub const FULL_FOR: f64 = 10.0;

/// What is on a node: while it stays the same, so does Slurm's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occupants {
    jobs: Vec<u32>,
    foreign_cpus: u32,
    foreign_gpus: u32,
}

impl Occupants {
    /// The jobs on node `node` (a name) of `snap`; `None` for a node the
    /// snapshot lacks.
    pub fn of(snap: &Snapshot, node: &str) -> Option<Occupants> {
        let info = snap.nodes.iter().find(|n| n.name == node)?;
        let mut jobs: Vec<u32> = snap
            .running
            .iter()
            .filter(|j| j.running.as_ref().is_some_and(|p| p.holds(node)))
            .map(|j| j.job_id)
            .collect();
        jobs.sort_unstable();
        Some(Occupants {
            jobs,
            foreign_cpus: info.foreign_cpus,
            foreign_gpus: info.foreign_gpus,
        })
    }
}

/// The (partition, node) pairs Slurm refused a start on, and what was on
/// the node then.
#[derive(Debug, Default)]
pub struct FullNodes {
    full: HashMap<(String, String), (Occupants, f64)>,
}

impl FullNodes {
    /// Slurm refused a start in `partition` on `node` at `at`, for want of
    /// resources, while `occupants` ran there.
    pub fn refused(&mut self, partition: &str, node: &str, occupants: Occupants, at: f64) {
        self.full
            .insert((partition.into(), node.into()), (occupants, at + FULL_FOR));
    }

    /// Forgets the nodes whose jobs changed since, and those held long
    /// enough.
    pub fn forget_changed(&mut self, snap: &Snapshot) {
        self.full.retain(|(_, node), (occupants, until)| {
            *until > snap.now && Occupants::of(snap, node).as_ref() == Some(occupants)
        });
    }

    /// Whether `partition` may not use `node` in `snap`: Slurm found it
    /// full, and neither its jobs nor [`FULL_FOR`] have passed since. Asks
    /// without forgetting, so every model built from `snap` agrees.
    pub fn holds(&self, snap: &Snapshot, partition: &str, node: &str) -> bool {
        if self.full.is_empty() {
            return false;
        }
        self.full
            .get(&(partition.to_owned(), node.to_owned()))
            .is_some_and(|(occupants, until)| {
                *until > snap.now && Occupants::of(snap, node).as_ref() == Some(occupants)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::snapshot::{NodeInfo, Snapshot};

    fn snap(now: f64, foreign: u32) -> Snapshot {
        let mut node = NodeInfo::up("n1", 4, "");
        node.foreign_cpus = foreign;
        Snapshot {
            now,
            nodes: vec![node, NodeInfo::up("n2", 4, "")],
            partitions: vec![],
            pending: vec![],
            running: vec![],
            finished: vec![],
        }
    }

    #[test]
    fn a_refused_node_stays_full_until_its_jobs_change_or_time_passes() {
        let mut full = FullNodes::default();
        let s = snap(100.0, 0);
        full.refused("p", "n1", Occupants::of(&s, "n1").unwrap(), 100.0);
        assert!(full.holds(&s, "p", "n1"));
        assert!(!full.holds(&s, "q", "n1"), "only the refused partition");
        assert!(!full.holds(&s, "p", "n2"));
        assert!(
            full.holds(&snap(105.0, 0), "p", "n1"),
            "nothing changed on n1"
        );
        assert!(
            !full.holds(&snap(106.0, 2), "p", "n1"),
            "a foreign job came or went"
        );
        assert!(
            !full.holds(&snap(100.0 + FULL_FOR, 0), "p", "n1"),
            "FULL_FOR passed"
        );
        full.forget_changed(&snap(105.0, 0));
        assert_eq!(full.full.len(), 1, "kept while nothing changed");
        full.forget_changed(&snap(106.0, 2));
        assert!(full.full.is_empty(), "forgotten once its jobs changed");
        full.refused("p", "n1", Occupants::of(&s, "n1").unwrap(), 100.0);
        full.forget_changed(&snap(100.0 + FULL_FOR, 0));
        assert!(full.full.is_empty(), "held for FULL_FOR at most");
    }
}
