//! The matching's view of a Slurm cluster: each managed partition is a
//! flavor, and its nodes offer slots. A GPU partition (its nodes have
//! GPUs) has one slot per GPU; a CPU partition has `cpus / cpus_per_slot`
//! slots per node, where `cpus_per_slot` is the configured value or, by
//! default, the most CPUs any managed job asks for.
//!
//! Slots exist only where fairmatch may start a job now: a node that is
//! down, drained or not responding offers none, a partition whose state
//! forbids starts offers none, the CPUs and GPUs held by jobs the plan
//! does not model are taken off, and a node reserved for an unmodelled job
//! (the head of Slurm's queue, say a multi-node job) is left alone.

use super::config::Config;
use super::snapshot::Snapshot;
use crate::model::Flavor;

/// One slot: a place for one job on one node.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The partition's flavor, an index into [`SlotModel::flavors`].
    pub flavor: usize,
    /// The node, an index into [`super::snapshot::Snapshot::nodes`].
    pub node: usize,
    /// The slot is one GPU (else a share of a node's CPUs).
    pub gpu: bool,
}

/// Flavors and slots built from a snapshot's partitions and nodes.
pub struct SlotModel {
    /// One flavor per managed partition that offers slots, named after it.
    pub flavors: Vec<Flavor>,
    /// Per flavor: its nodes have GPUs.
    pub gpu_flavor: Vec<bool>,
    /// Per flavor: the nodes that offer it slots now.
    pub flavor_nodes: Vec<Vec<usize>>,
    /// Every slot the plan may fill now.
    pub slots: Vec<Slot>,
}

impl SlotModel {
    /// Builds the slots the snapshot's managed partitions offer now.
    pub fn build(config: &Config, snap: &Snapshot) -> SlotModel {
        let slot_cpus = if config.cpus_per_slot > 0 {
            config.cpus_per_slot
        } else {
            snap.pending
                .iter()
                .chain(&snap.running)
                .map(|j| j.cpus)
                .max()
                .unwrap_or(1)
                .max(1)
        };
        let mut flavors = Vec::new();
        let mut gpu_flavor = Vec::new();
        let mut flavor_nodes = Vec::new();
        let mut slots = Vec::new();
        for part in snap.partitions.iter().filter(|p| config.manages(&p.name)) {
            let flavor = flavors.len();
            let gpu = part.nodes.iter().any(|&n| snap.nodes[n].gpus() > 0);
            let before = slots.len();
            let usable = part
                .nodes
                .iter()
                .map(|&n| (n, &snap.nodes[n]))
                .filter(|(_, node)| {
                    part.schedulable && node.available && node.reserved_from.is_none()
                });
            for (n, node) in usable {
                let count = if gpu {
                    node.gpus().saturating_sub(node.foreign_gpus)
                } else {
                    node.cpus.saturating_sub(node.foreign_cpus) / slot_cpus
                };
                slots.extend((0..count).map(|_| Slot {
                    flavor,
                    node: n,
                    gpu,
                }));
            }
            flavors.push(Flavor {
                name: part.name.clone(),
                slots: slots.len() - before,
            });
            gpu_flavor.push(gpu);
            let mut with_slots: Vec<usize> = slots[before..].iter().map(|s| s.node).collect();
            with_slots.dedup();
            flavor_nodes.push(with_slots);
        }
        SlotModel {
            flavors,
            gpu_flavor,
            flavor_nodes,
            slots,
        }
    }

    /// The index of the flavor for partition `name`.
    pub fn flavor_index(&self, name: &str) -> Option<usize> {
        self.flavors.iter().position(|f| f.name == name)
    }
}
