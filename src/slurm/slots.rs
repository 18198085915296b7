//! The matching's view of a Slurm cluster: each managed partition is a
//! flavor, and its nodes offer slots. A GPU partition (its nodes have
//! GPUs) has one slot per GPU; a CPU partition has `cpus / cpus_per_slot`
//! slots per node, where `cpus_per_slot` is the configured value or, by
//! default, the most CPUs a job that may run in that partition asks for.
//!
//! Slots exist only where fairmatch may start a job now: a node that is
//! down, drained or not responding offers none, a partition whose state
//! forbids starts offers none, the CPUs and GPUs held by jobs the plan
//! does not model are taken off, and a node reserved for an unmodelled job
//! (the head of Slurm's queue, say a multi-node job) is left alone.
//!
//! The partition's own limits hold as Slurm's node selection applies them:
//! `MaxCPUsPerNode` and `MaxCPUsPerSocket` cap its CPUs on each node, and
//! `OverSubscribe` lets its jobs share CPUs (always with `FORCE`; with
//! `YES` when every job of the partition asks to). Where partitions
//! overlap, what the other partitions' running jobs hold of a node is not
//! this partition's, unless its jobs may preempt them. A node Slurm
//! refused a start on though the model thought it free ([`FullNodes`])
//! keeps that partition's slots, marked full: the plan counts them busy
//! until a job on the node ends, so a job may still wait for them rather
//! than take a slower flavor now.

use super::config::Config;
use super::full_nodes::FullNodes;
use super::snapshot::{JobInfo, PartitionInfo, Preemption, Snapshot};
use crate::model::Flavor;
use std::collections::HashMap;

/// One slot: a place for one job on one node.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The partition's flavor, an index into [`SlotModel::flavors`].
    pub flavor: usize,
    /// The node, an index into [`super::snapshot::Snapshot::nodes`].
    pub node: usize,
    /// The slot is one GPU (else a share of a node's CPUs).
    pub gpu: bool,
    /// Slurm found the node full for this partition though the model did
    /// not ([`FullNodes`]): the slot is busy until a job there ends.
    pub full: bool,
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
    pub fn build(config: &Config, snap: &Snapshot, full: &FullNodes) -> SlotModel {
        let held = HeldByPartition::of(snap);
        let mut flavors = Vec::new();
        let mut gpu_flavor = Vec::new();
        let mut flavor_nodes = Vec::new();
        let mut slots = Vec::new();
        for part in snap.partitions.iter().filter(|p| config.manages(&p.name)) {
            let flavor = flavors.len();
            let gpu = is_gpu(snap, part);
            let share = cpu_share(snap, part);
            let slot_cpus = slot_cpus(config, snap, part);
            let before = slots.len();
            let usable = part
                .nodes
                .iter()
                .map(|&n| (n, &snap.nodes[n]))
                .filter(|(_, node)| {
                    part.schedulable && node.available && node.reserved_from.is_none()
                });
            for (n, node) in usable {
                let (other_cpus, other_gpus) = held.by_others(n, part);
                // The partition's own running jobs keep their slots
                // whatever else holds the node: the plan places them there.
                let own = held.jobs_of(n, &part.name);
                let is_full = full.holds(snap, &part.name, &node.name);
                let count = if gpu {
                    node.gpus()
                        .saturating_sub(node.foreign_gpus)
                        .saturating_sub(other_gpus)
                } else {
                    let free = node
                        .cpus
                        .saturating_sub(node.foreign_cpus)
                        .saturating_sub(other_cpus);
                    let cpus = free.min(part.limits.cpus_on(node.cpus, node.sockets));
                    cpus.saturating_mul(share) / slot_cpus
                }
                .max(own);
                slots.extend((0..count).map(|_| Slot {
                    flavor,
                    node: n,
                    gpu,
                    full: is_full,
                }));
            }
            flavors.push(Flavor {
                name: part.name.clone(),
                slots: slots.len() - before,
                per_node: 1,
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

/// CPUs per slot of a CPU partition: the configured value, or the most
/// CPUs a job that may run in it asks for.
fn slot_cpus(config: &Config, snap: &Snapshot, part: &PartitionInfo) -> u32 {
    if config.cpus_per_slot > 0 {
        return config.cpus_per_slot;
    }
    jobs_of(snap, part)
        .map(|j| j.cpus)
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The pending jobs that may run in `part`, and the jobs running there.
fn jobs_of<'s>(snap: &'s Snapshot, part: &'s PartitionInfo) -> impl Iterator<Item = &'s JobInfo> {
    let pending = snap
        .pending
        .iter()
        .filter(|j| j.partitions.contains(&part.name));
    let running = snap
        .running
        .iter()
        .filter(|j| j.running.as_ref().is_some_and(|p| p.partition == part.name));
    pending.chain(running)
}

/// A partition is a GPU flavor when any of its nodes has GPUs.
fn is_gpu(snap: &Snapshot, part: &PartitionInfo) -> bool {
    part.nodes.iter().any(|&n| snap.nodes[n].gpus() > 0)
}

/// Jobs per CPU of `part`: its `OverSubscribe` count where its jobs share
/// (`FORCE`, or every job of it asked to), else 1.
fn cpu_share(snap: &Snapshot, part: &PartitionInfo) -> u32 {
    let limits = &part.limits;
    if limits.jobs_per_cpu <= 1 {
        return 1;
    }
    let mut jobs = jobs_of(snap, part);
    if limits.force_share || jobs.all(|j| j.shares_cpus) {
        limits.jobs_per_cpu
    } else {
        1
    }
}

/// CPUs and GPUs the running jobs of each partition hold on each node.
struct HeldByPartition<'s> {
    /// Per node: (partition, CPUs, GPUs) of each running job there.
    on_node: HashMap<usize, Vec<(&'s str, u32, u32)>>,
    /// Each partition's `PriorityTier`.
    tiers: HashMap<&'s str, u32>,
}

impl<'s> HeldByPartition<'s> {
    fn of(snap: &'s Snapshot) -> Self {
        let index: HashMap<&str, usize> = snap
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let gpu_parts: Vec<&str> = snap
            .partitions
            .iter()
            .filter(|p| is_gpu(snap, p))
            .map(|p| p.name.as_str())
            .collect();
        let mut on_node: HashMap<usize, Vec<(&str, u32, u32)>> = HashMap::new();
        for job in &snap.running {
            let Some(place) = &job.running else { continue };
            let Some(&n) = index.get(place.node.as_str()) else {
                continue;
            };
            let gpus = u32::from(job.needs_gpu || gpu_parts.contains(&place.partition.as_str()));
            on_node
                .entry(n)
                .or_default()
                .push((place.partition.as_str(), job.cpus, gpus));
        }
        let tiers = snap
            .partitions
            .iter()
            .map(|p| (p.name.as_str(), p.limits.priority_tier))
            .collect();
        HeldByPartition { on_node, tiers }
    }

    /// How many running jobs of `partition` are on node `n`.
    fn jobs_of(&self, n: usize, partition: &str) -> u32 {
        let on = self.on_node.get(&n).into_iter().flatten();
        on.filter(|(p, _, _)| *p == partition).count() as u32
    }

    /// What the running jobs of partitions other than `part` hold of node
    /// `n` and `part`'s jobs may not preempt: (CPUs, GPUs).
    fn by_others(&self, n: usize, part: &PartitionInfo) -> (u32, u32) {
        let tier = part.limits.priority_tier;
        let preemptable = |other: &str| match part.limits.preemption {
            Preemption::None => false,
            Preemption::LowerTiers => self.tiers.get(other).is_some_and(|&t| t < tier),
            Preemption::Other => true,
        };
        self.on_node
            .get(&n)
            .into_iter()
            .flatten()
            .filter(|(p, _, _)| *p != part.name && !preemptable(p))
            .fold((0, 0), |(c, g), (_, cpus, gpus)| {
                (c.saturating_add(*cpus), g.saturating_add(*gpus))
            })
    }
}
