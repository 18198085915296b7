//! The matching's view of a Slurm cluster: each managed partition is a
//! flavor, or, where its nodes have GPUs of several types (`Gres=gpu:a100:4`
//! on some, `gpu:v100:4` on others), each GPU type within it is one,
//! named `partition:type`. Its nodes offer slots. A GPU flavor (its nodes
//! have GPUs) has one slot per GPU of its type: a node with GPUs of
//! several types (MIG profiles, `gpu:1g.10gb:4,gpu:3g.40gb:1`) offers
//! each type's GPUs to that type's flavor, and a running job holds slots
//! of the type Slurm gave it. A CPU partition has
//! `cpus / cpus_per_slot` slots per node, where `cpus_per_slot` is the
//! configured value or, by default, the most CPUs a job that may run in
//! that partition asks for on one node.
//!
//! A GPU flavor whose nodes have shards (`Gres=gpu:2,shard:8`) has a
//! shard flavor beside it, `flavor:shard`, for the jobs that ask for
//! shards (`--gres=shard:N`): one slot per shard. Slurm takes a job's
//! shards on a node from one GPU, so each GPU's shards are a node of their
//! own to the policy, and a job of N shards a gang of N slots on one of
//! them (`view` keeps a gang's nodes apart). A GPU given whole offers
//! no shards and a GPU shared out is not given whole: the GPU slots leave
//! out the GPUs some job holds shards of, the shard slots those given
//! whole, and a start in one flavor takes the other's slots of the same
//! GPUs (`view`). Nodes with GPUs of several types offer no shards to the
//! plan.
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
use super::snapshot::{JobInfo, NodeInfo, PartitionInfo, Preemption, Snapshot};
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
    /// A shard slot: the index of its GPU on the node (`None` for every
    /// other slot, and for a running job's shard whose GPU is not known).
    pub device: Option<u32>,
    /// A shard slot of a GPU a job holds whole: busy until a job on the
    /// node ends, as a full node's.
    pub held_whole: bool,
}

/// Flavors and slots built from a snapshot's partitions and nodes.
pub struct SlotModel {
    /// One flavor per managed partition, or per GPU type within it, named
    /// after the partition (`partition:type` for a type within one), and
    /// a shard flavor beside each GPU flavor with shards. `per_node` is
    /// the most slots one of its nodes offers (of a shard flavor, the most
    /// shards one GPU offers).
    pub flavors: Vec<Flavor>,
    /// Per flavor: its partition.
    pub partition: Vec<String>,
    /// Per flavor: its nodes' GPU type (`None`: untyped, or no GPUs).
    pub gpu_type: Vec<Option<String>>,
    /// Per flavor: its nodes have GPUs.
    pub gpu_flavor: Vec<bool>,
    /// Per flavor: its slots are shards of GPUs.
    pub shard_flavor: Vec<bool>,
    /// Per flavor: the nodes that offer it slots now.
    pub flavor_nodes: Vec<Vec<usize>>,
    /// Per flavor: how many of its partition's nodes have its kind of
    /// slot, whatever their state now (a node still completing a job, or
    /// down, offers none for a while, but a gang that fits the type's
    /// nodes is still its type's).
    pub configured_nodes: Vec<usize>,
    /// Every slot the plan may fill now.
    pub slots: Vec<Slot>,
    /// The shard slots each running shard job holds, by job id.
    pub held_shards: HashMap<u32, Vec<usize>>,
}

impl SlotModel {
    /// Builds the slots the snapshot's managed partitions offer now.
    pub fn build(config: &Config, snap: &Snapshot, full: &FullNodes) -> SlotModel {
        let cx = Context {
            config,
            snap,
            full,
            held: HeldByPartition::of(snap),
            node_types: snap.nodes.iter().map(NodeInfo::gpus_by_type).collect(),
        };
        let mut model = SlotModel {
            flavors: Vec::new(),
            partition: Vec::new(),
            gpu_type: Vec::new(),
            gpu_flavor: Vec::new(),
            shard_flavor: Vec::new(),
            flavor_nodes: Vec::new(),
            configured_nodes: Vec::new(),
            slots: Vec::new(),
            held_shards: HashMap::new(),
        };
        for part in snap.partitions.iter().filter(|p| config.manages(&p.name)) {
            let gpu = is_gpu(snap, part);
            let types = cx.node_types(part, gpu);
            for gpu_type in &types {
                let name = match gpu_type {
                    Some(t) if types.len() > 1 => format!("{}:{t}", part.name),
                    _ => part.name.clone(),
                };
                let shards =
                    (gpu && cx.has_shards(part, gpu_type)).then(|| format!("{name}:shard"));
                model.add_flavor(&cx, part, gpu, name, gpu_type);
                if let Some(shards) = shards {
                    model.add_shard_flavor(&cx, part, shards, gpu_type);
                }
            }
        }
        model
    }

    /// Adds `part`'s shard flavor `name` over its nodes of one GPU type,
    /// `gpu_type`, that have shards.
    fn add_shard_flavor(
        &mut self,
        cx: &Context<'_>,
        part: &PartitionInfo,
        name: String,
        gpu_type: &Option<String>,
    ) {
        let snap = cx.snap;
        let flavor = self.flavors.len();
        let before = self.slots.len();
        let mut per_node = 0;
        for &n in &part.nodes {
            let node = &snap.nodes[n];
            if !cx.offers_shards(n, gpu_type)
                || !part.schedulable
                || !node.available
                || node.reserved_from.is_some()
            {
                continue;
            }
            let widest = node.devices.iter().map(|d| d.shards).max().unwrap_or(0);
            per_node = per_node.max(widest as usize);
            let is_full = cx.full.holds(snap, &part.name, &node.name);
            let slot = |device, held_whole| Slot {
                flavor,
                node: n,
                gpu: false,
                full: is_full,
                device,
                held_whole,
            };
            // A running job's shards are on the first GPU whose held
            // shards hold them (Slurm does not say which it took).
            let mut unclaimed: Vec<u32> = node.devices.iter().map(|d| d.shards_used).collect();
            for (job_id, shards) in cx.held.own_shard_jobs(n, &part.name) {
                let device = unclaimed.iter().position(|&u| u >= shards);
                if let Some(d) = device {
                    unclaimed[d] -= shards;
                }
                let held = self.held_shards.entry(job_id).or_default();
                held.extend(self.slots.len()..self.slots.len() + shards as usize);
                self.slots
                    .extend((0..shards).map(|_| slot(device.map(|d| d as u32), false)));
            }
            // A GPU held whole keeps its shards, busy: a shard job may wait
            // for them.
            for (d, device) in node.devices.iter().enumerate() {
                let (count, held_whole) = if device.whole {
                    (device.shards, true)
                } else {
                    (device.shards_free(), false)
                };
                self.slots
                    .extend((0..count).map(|_| slot(Some(d as u32), held_whole)));
            }
        }
        let configured = part
            .nodes
            .iter()
            .filter(|&&n| cx.offers_shards(n, gpu_type))
            .count();
        self.close_flavor(part, name, gpu_type, Kind::Shards, before, per_node);
        self.configured_nodes.push(configured);
    }

    /// Adds `part`'s flavor `name` over its nodes of GPU type `gpu_type`
    /// (all its nodes, on a CPU partition), with their slots.
    fn add_flavor(
        &mut self,
        cx: &Context<'_>,
        part: &PartitionInfo,
        gpu: bool,
        name: String,
        gpu_type: &Option<String>,
    ) {
        let (snap, held) = (cx.snap, &cx.held);
        let flavor = self.flavors.len();
        let share = cpu_share(snap, part);
        let slot_cpus = slot_cpus(cx.config, snap, part);
        let before = self.slots.len();
        let mut per_node = 0;
        let of_type = |n: usize| {
            cx.node_types[n]
                .iter()
                .find(|(t, _)| t == gpu_type)
                .map_or(0, |(_, c)| *c)
        };
        let usable = part
            .nodes
            .iter()
            .filter(|&&n| !gpu || of_type(n) > 0)
            .map(|&n| (n, &snap.nodes[n]))
            .filter(|(_, node)| part.schedulable && node.available && node.reserved_from.is_none());
        for (n, node) in usable {
            let mixed = cx.node_types[n].len() > 1;
            let (other_cpus, other_gpus) = held.by_others(n, part, gpu_type, mixed);
            // The partition's own running jobs keep their slots whatever
            // else holds the node: the plan places them there.
            let own = held.own(n, &part.name, gpu, gpu_type, mixed);
            let is_full = cx.full.holds(snap, &part.name, &node.name);
            let cpus_allowed = part.limits.cpus_on(node.cpus, node.sockets);
            let count = if gpu {
                // Foreign GPUs may be of any type: on a node of several,
                // each type counts them.
                let mine = of_type(n);
                per_node = per_node.max(mine as usize);
                mine.saturating_sub(node.foreign_gpus)
                    .saturating_sub(other_gpus)
                    .saturating_sub(node.gpus_shared_out())
            } else {
                per_node = per_node.max((cpus_allowed.saturating_mul(share) / slot_cpus) as usize);
                let free = node
                    .cpus
                    .saturating_sub(node.foreign_cpus)
                    .saturating_sub(other_cpus);
                free.min(cpus_allowed).saturating_mul(share) / slot_cpus
            }
            .max(own);
            self.slots.extend((0..count).map(|_| Slot {
                flavor,
                node: n,
                gpu,
                full: is_full,
                device: None,
                held_whole: false,
            }));
        }
        let kind = if gpu { Kind::Gpus } else { Kind::Cpus };
        let configured = part
            .nodes
            .iter()
            .filter(|&&n| !gpu || of_type(n) > 0)
            .count();
        self.close_flavor(part, name, gpu_type, kind, before, per_node);
        self.configured_nodes.push(configured);
    }

    /// Records the flavor whose slots are `self.slots[before..]`.
    fn close_flavor(
        &mut self,
        part: &PartitionInfo,
        name: String,
        gpu_type: &Option<String>,
        kind: Kind,
        before: usize,
        per_node: usize,
    ) {
        self.flavors.push(Flavor {
            name,
            slots: self.slots.len() - before,
            per_node: per_node.max(1),
        });
        self.partition.push(part.name.clone());
        self.gpu_type.push(gpu_type.clone());
        self.gpu_flavor.push(kind == Kind::Gpus);
        self.shard_flavor.push(kind == Kind::Shards);
        let mut with_slots: Vec<usize> = self.slots[before..].iter().map(|s| s.node).collect();
        with_slots.dedup();
        self.flavor_nodes.push(with_slots);
    }

    /// The flavor of partition `partition` on node `node` (an index into
    /// the snapshot's nodes) for a job holding GPUs of `held` there, or
    /// (`shards`) shards of a GPU: on a node of one GPU type, its type's;
    /// on a node of several, `held`'s (`None` when it is not known).
    pub fn flavor_on(
        &self,
        snap: &Snapshot,
        partition: &str,
        node: usize,
        held: Option<&str>,
        shards: bool,
    ) -> Option<usize> {
        let flavors: Vec<usize> = (0..self.flavors.len())
            .filter(|&f| self.partition[f] == partition && self.shard_flavor[f] == shards)
            .collect();
        if flavors.len() == 1 {
            return Some(flavors[0]);
        }
        let on_node: Vec<usize> = flavors
            .into_iter()
            .filter(|&f| snap.nodes[node].gpus_of(&self.gpu_type[f]) > 0)
            .collect();
        match on_node.as_slice() {
            [f] => Some(*f),
            _ => on_node
                .into_iter()
                .find(|&f| held.is_some() && self.gpu_type[f].as_deref() == held),
        }
    }

    /// The names a hint key may take: flavors, partitions, GPU types and,
    /// where there are shards, `shard`.
    pub fn hint_keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.flavors.iter().map(|f| f.name.as_str()).collect();
        if self.shard_flavor.contains(&true) {
            keys.push(SHARD_KEY);
        }
        keys.extend(self.partition.iter().map(String::as_str));
        keys.extend(self.gpu_type.iter().flatten().map(String::as_str));
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The hint keys that give flavor `f`'s time, most specific first:
    /// `partition:type`, the type, the partition. A shard flavor's start
    /// with its own name and `shard`: a job asks for shards or GPUs, so
    /// the GPUs' keys name its time on their shards.
    pub fn keys_of(&self, f: usize) -> Vec<&str> {
        let name = self.flavors[f].name.as_str();
        let mut keys = Vec::with_capacity(5);
        if name != self.partition[f] {
            keys.push(name);
        }
        if self.shard_flavor[f] {
            keys.push(SHARD_KEY);
            if let Some(gpu) = name
                .strip_suffix(":shard")
                .filter(|g| *g != self.partition[f])
            {
                keys.push(gpu);
            }
        }
        keys.extend(self.gpu_type[f].as_deref());
        keys.push(&self.partition[f]);
        keys
    }
}

/// What a flavor's slots are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A share of a node's CPUs each.
    Cpus,
    /// One GPU each.
    Gpus,
    /// One shard of a GPU each.
    Shards,
}

/// The hint key that names every shard flavor's time.
pub const SHARD_KEY: &str = "shard";

/// What building a slot model reads, once per build.
struct Context<'s> {
    config: &'s Config,
    snap: &'s Snapshot,
    full: &'s FullNodes,
    held: HeldByPartition<'s>,
    /// Each snapshot node's GPUs by type ([`NodeInfo::gpus_by_type`]).
    node_types: Vec<Vec<(Option<String>, u32)>>,
}

impl Context<'_> {
    /// The GPU types of a GPU partition's nodes, in the order first met
    /// (`None` for untyped GPUs); one entry, `None`, for a CPU partition.
    /// A node of several types counts for each.
    fn node_types(&self, part: &PartitionInfo, gpu: bool) -> Vec<Option<String>> {
        let mut types: Vec<Option<String>> = Vec::new();
        if gpu {
            for &n in &part.nodes {
                for (t, _) in &self.node_types[n] {
                    if !types.contains(t) {
                        types.push(t.clone());
                    }
                }
            }
        }
        if types.is_empty() {
            types.push(None);
        }
        types
    }

    /// Whether node `n` offers shards to a flavor of GPU type `t`: it has
    /// shards and GPUs of that one type.
    fn offers_shards(&self, n: usize, t: &Option<String>) -> bool {
        let types = &self.node_types[n];
        !self.snap.nodes[n].devices.is_empty() && types.len() == 1 && types[0].0 == *t
    }

    /// Whether some node of `part` offers shards to GPU type `t`.
    fn has_shards(&self, part: &PartitionInfo, t: &Option<String>) -> bool {
        part.nodes.iter().any(|&n| self.offers_shards(n, t))
    }
}

/// CPUs per slot of a CPU partition: the configured value, or the most
/// CPUs a job that may run in it asks for.
fn slot_cpus(config: &Config, snap: &Snapshot, part: &PartitionInfo) -> u32 {
    if config.cpus_per_slot > 0 {
        return config.cpus_per_slot;
    }
    jobs_of(snap, part)
        .map(JobInfo::cpus_per_node)
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

/// What a running job holds on one node.
struct Holding<'s> {
    partition: &'s str,
    cpus: u32,
    gpus: u32,
    /// The type of its GPUs there, where Slurm said (one type).
    gpu_type: Option<&'s str>,
    /// Its Slurm job id.
    job_id: u32,
    /// The shards of a GPU it holds (0: it holds GPUs, or none).
    shards: u32,
}

impl Holding<'_> {
    /// Whether its GPUs count against type `t` on a node: of that type,
    /// or, on a node of several types, of a type not known.
    fn of_type(&self, t: &Option<String>, mixed: bool) -> bool {
        match self.gpu_type {
            Some(held) => !mixed || t.as_deref() == Some(held),
            None => true,
        }
    }
}

/// CPUs and GPUs the running jobs of each partition hold on each node.
struct HeldByPartition<'s> {
    /// Per node: what each running job there holds.
    on_node: HashMap<usize, Vec<Holding<'s>>>,
    /// Each partition's `PriorityTier`.
    tiers: HashMap<&'s str, u32>,
}

impl<'s> HeldByPartition<'s> {
    fn of(snap: &'s Snapshot) -> Self {
        let index = snap.node_index();
        let gpu_parts: Vec<&str> = snap
            .partitions
            .iter()
            .filter(|p| is_gpu(snap, p))
            .map(|p| p.name.as_str())
            .collect();
        let mut on_node: HashMap<usize, Vec<Holding>> = HashMap::new();
        for job in &snap.running {
            let Some(place) = &job.running else { continue };
            let gpus = if job.shards > 0 {
                0 // its GPU is counted as shared out (`NodeInfo::devices`)
            } else if job.gpus > 0 {
                job.gpus
            } else {
                u32::from(gpu_parts.contains(&place.partition.as_str()))
            };
            for node in &place.nodes {
                let Some(&n) = index.get(node.as_str()) else {
                    continue;
                };
                on_node.entry(n).or_default().push(Holding {
                    partition: place.partition.as_str(),
                    cpus: job.cpus_per_node(),
                    gpus,
                    gpu_type: job.gpu_type.as_deref(),
                    job_id: job.job_id,
                    shards: job.shards,
                });
            }
        }
        let tiers = snap
            .partitions
            .iter()
            .map(|p| (p.name.as_str(), p.limits.priority_tier))
            .collect();
        HeldByPartition { on_node, tiers }
    }

    /// The slots the running jobs of `partition` hold on node `n`: their
    /// GPUs of type `t` on a GPU partition (on a node of several types,
    /// those whose type Slurm said), else one per job.
    fn own(&self, n: usize, partition: &str, gpu: bool, t: &Option<String>, mixed: bool) -> u32 {
        let on = self.on_node.get(&n).into_iter().flatten();
        on.filter(|h| h.partition == partition && h.shards == 0)
            .filter(|h| !gpu || !mixed || (h.gpu_type.is_some() && h.of_type(t, mixed)))
            .map(|h| if gpu { h.gpus } else { 1 })
            .sum()
    }

    /// The running jobs of `partition` that hold shards on node `n`:
    /// (job id, shards).
    fn own_shard_jobs(&self, n: usize, partition: &str) -> Vec<(u32, u32)> {
        let on = self.on_node.get(&n).into_iter().flatten();
        on.filter(|h| h.partition == partition && h.shards > 0)
            .map(|h| (h.job_id, h.shards))
            .collect()
    }

    /// What the running jobs of partitions other than `part` hold of node
    /// `n` and `part`'s jobs may not preempt: (CPUs, GPUs that count
    /// against type `t`).
    fn by_others(
        &self,
        n: usize,
        part: &PartitionInfo,
        t: &Option<String>,
        mixed: bool,
    ) -> (u32, u32) {
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
            .filter(|h| h.partition != part.name && !preemptable(h.partition))
            .fold((0, 0), |(c, g), h| {
                let gpus = if h.of_type(t, mixed) { h.gpus } else { 0 };
                (c.saturating_add(h.cpus), g.saturating_add(gpus))
            })
    }
}
