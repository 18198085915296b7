//! What the C shim copies out of slurmctld under its locks, as plain Rust
//! values, and what the planner hands back. Times are seconds since the
//! epoch as `f64`.

use std::collections::HashMap;

/// A node of the cluster, as slurmctld knows it this cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeInfo {
    /// Slurm's node name.
    pub name: String,
    /// Configured CPUs.
    pub cpus: u32,
    /// Configured sockets (at least 1).
    pub sockets: u32,
    /// The node's configured GRES string, e.g. `gpu:2` or `gpu:a100:4`.
    pub gres: String,
    /// Up and not drained: its slots may be given out.
    pub available: bool,
    /// CPUs and GPUs held by running jobs the plan does not model.
    pub foreign_cpus: u32,
    /// GPUs held by running jobs the plan does not model.
    pub foreign_gpus: u32,
    /// Held back from this time on for an unmodelled job (multi-node, say)
    /// that Slurm's will-run test placed here: the plan leaves it alone.
    pub reserved_from: Option<f64>,
    /// On a node with shards (`Gres=gpu:2,shard:8`), its GPUs as their
    /// shards see them, in the GPUs' order; empty on a node without.
    pub devices: Vec<GpuDevice>,
}

/// One GPU of a node with shards. A GPU's shards and the GPU itself
/// exclude each other: Slurm gives a GPU whole or shares it out, never
/// both at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuDevice {
    /// Shards it offers.
    pub shards: u32,
    /// Shards of it that jobs hold.
    pub shards_used: u32,
    /// A job holds it whole.
    pub whole: bool,
}

impl GpuDevice {
    /// It offers shards now: no job holds it whole.
    pub fn shards_free(&self) -> u32 {
        if self.whole {
            0
        } else {
            self.shards.saturating_sub(self.shards_used)
        }
    }

    /// It may be given whole now: no job holds it or shards of it.
    pub fn free_whole(&self) -> bool {
        !self.whole && self.shards_used == 0
    }
}

impl NodeInfo {
    /// A node that is up, with nothing foreign on it and no reservation.
    pub fn up(name: &str, cpus: u32, gres: &str) -> Self {
        NodeInfo {
            name: name.into(),
            cpus,
            sockets: 1,
            gres: gres.into(),
            available: true,
            foreign_cpus: 0,
            foreign_gpus: 0,
            reserved_from: None,
            devices: Vec::new(),
        }
    }

    /// A node that is up with `gres` and, on each of its GPUs, `shards`
    /// shards, none held.
    pub fn with_shards(name: &str, cpus: u32, gres: &str, shards: u32) -> Self {
        let mut node = NodeInfo::up(name, cpus, gres);
        let device = GpuDevice {
            shards,
            ..GpuDevice::default()
        };
        node.devices = vec![device; node.gpus() as usize];
        node
    }

    /// Its GPUs that some job holds shards of: none of them may be given
    /// whole.
    pub fn gpus_shared_out(&self) -> u32 {
        self.devices.iter().filter(|d| d.shards_used > 0).count() as u32
    }

    /// GPUs in the GRES string (`gpu:N` or `gpu:type:N`, any socket suffix).
    pub fn gpus(&self) -> u32 {
        self.gpu_entries().map(|(_, n)| n).sum()
    }

    /// Its GPUs by type, one entry per type in the GRES string's order
    /// (`None`: untyped GPUs). A node of several types (MIG profiles, or
    /// cards of two kinds) offers each type's GPUs to that type's flavor.
    pub fn gpus_by_type(&self) -> Vec<(Option<String>, u32)> {
        let mut out: Vec<(Option<String>, u32)> = Vec::new();
        for (t, n) in self.gpu_entries() {
            let t = t.map(String::from);
            match out.iter_mut().find(|(u, _)| *u == t) {
                Some((_, m)) => *m += n,
                None => out.push((t, n)),
            }
        }
        out
    }

    /// Its GPUs of type `gpu_type` (`None`: untyped).
    pub fn gpus_of(&self, gpu_type: &Option<String>) -> u32 {
        self.gpu_entries()
            .filter(|(t, _)| *t == gpu_type.as_deref())
            .map(|(_, n)| n)
            .sum()
    }

    /// It has GPUs of several types.
    pub fn mixed(&self) -> bool {
        self.gpus_by_type().len() > 1
    }

    /// `(type, count)` of each `gpu` entry of the GRES string.
    fn gpu_entries(&self) -> impl Iterator<Item = (Option<&str>, u32)> + '_ {
        self.gres.split(',').filter_map(|entry| {
            let entry = entry.split('(').next().unwrap_or("");
            let parts: Vec<&str> = entry.split(':').map(str::trim).collect();
            match parts.as_slice() {
                ["gpu", n] => Some((None, n.parse().ok()?)),
                ["gpu", t, n] => Some((Some(*t), n.parse().ok()?)),
                _ => None,
            }
        })
    }
}

/// A partition the plugin may start jobs in.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionInfo {
    /// Slurm's partition name.
    pub name: String,
    /// Indices into [`Snapshot::nodes`].
    pub nodes: Vec<usize>,
    /// The partition's state lets jobs start (UP or DRAIN).
    pub schedulable: bool,
    /// What the partition lets its jobs hold of a node.
    pub limits: PartitionLimits,
}

impl PartitionInfo {
    /// An up partition of `nodes` with no limits.
    pub fn new(name: &str, nodes: Vec<usize>) -> Self {
        PartitionInfo {
            name: name.into(),
            nodes,
            schedulable: true,
            limits: PartitionLimits::default(),
        }
    }
}

/// A partition's limits on its jobs' share of a node, which Slurm's node
/// selection enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionLimits {
    /// `MaxCPUsPerNode`: CPUs its jobs may hold on one node.
    pub max_cpus_per_node: Option<u32>,
    /// `MaxCPUsPerSocket`: CPUs its jobs may hold on one socket.
    pub max_cpus_per_socket: Option<u32>,
    /// `OverSubscribe=YES:n` or `FORCE:n`: jobs that may share one CPU
    /// (1: none share).
    pub jobs_per_cpu: u32,
    /// `OverSubscribe=FORCE`: jobs share CPUs without asking.
    pub force_share: bool,
    /// `PriorityTier`.
    pub priority_tier: u32,
    /// Whether its jobs may preempt others' to start.
    pub preemption: Preemption,
}

/// Whom a partition's jobs may preempt to start, as `PreemptType` says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Preemption {
    /// No one.
    #[default]
    None,
    /// Jobs of partitions of a lower `PriorityTier` (`preempt/partition_prio`).
    LowerTiers,
    /// Whomever the QOS says (`preempt/qos`): anyone, as far as the plan knows.
    Other,
}

impl Default for PartitionLimits {
    fn default() -> Self {
        PartitionLimits {
            max_cpus_per_node: None,
            max_cpus_per_socket: None,
            jobs_per_cpu: 1,
            force_share: false,
            priority_tier: 1,
            preemption: Preemption::None,
        }
    }
}

impl PartitionLimits {
    /// CPUs the partition's jobs may hold on a node of `cpus` CPUs and
    /// `sockets` sockets.
    pub fn cpus_on(&self, cpus: u32, sockets: u32) -> u32 {
        let per_socket = self
            .max_cpus_per_socket
            .map_or(u32::MAX, |c| c.saturating_mul(sockets.max(1)));
        cpus.min(self.max_cpus_per_node.unwrap_or(u32::MAX))
            .min(per_socket)
    }
}

/// A pending or running job, as slurmctld knows it this cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct JobInfo {
    /// Slurm's job id.
    pub job_id: u32,
    /// Pending array tasks this record stands for; 1 for a plain job.
    pub tasks: u32,
    /// The user's name.
    pub user: String,
    /// The Slurm account the job is charged to.
    pub account: String,
    /// The job's name, which runtime history is kept under.
    pub name: String,
    /// The job's comment, where users give runtime hints.
    pub comment: String,
    /// The hint its sbatch options gave (`--fm-runtime`,
    /// `--fm-preemptible`), from its SPANK environment: it wins over the
    /// comment's.
    pub hint_option: Option<String>,
    /// The job's time limit in seconds, if it has one.
    pub time_limit: Option<f64>,
    /// Pending jobs: the partitions Slurm's limits let it start in now.
    /// Running jobs: the partitions it was submitted to.
    pub partitions: Vec<String>,
    /// CPUs the job asked for, on all its nodes together.
    pub cpus: u32,
    /// Pending jobs: the GPUs it asked for on each node (`--gres=gpu:N`,
    /// `--gpus-per-node`, or `--gpus=N` over `-N k`: N / k rounded up); 0
    /// when it asked for none per node, and then, without
    /// [`JobInfo::gpus_per_job`], it may still run on one GPU of a GPU
    /// partition. Running jobs: the most GPUs it holds on one node.
    pub gpus: u32,
    /// Pending jobs: `--gpus=N` where the job leaves its node count to
    /// Slurm; the plan takes the fewest nodes that hold them
    /// ([`super::shapes`]). 0 otherwise.
    pub gpus_per_job: u32,
    /// Pending jobs: the nodes it asks for (`-N`, the low end of a range;
    /// at least 1). Running jobs: the nodes it holds.
    pub nodes: u32,
    /// Pending jobs: the high end of its `-N` range, if it gave one.
    pub max_nodes: Option<u32>,
    /// Pending jobs: the GPU type it asked for (`--gres=gpu:a100:2`), if
    /// any: only nodes of that type will do. Running jobs: the type of
    /// the GPUs it holds, where they are of one type.
    pub gpu_type: Option<String>,
    /// The shards of one GPU it asks for (pending) or holds (running) on
    /// each node (`--gres=shard:N`); 0 for a job without. A job asks for
    /// shards or for GPUs, never both.
    pub shards: u32,
    /// The job asked to share its CPUs (`--oversubscribe`).
    pub shares_cpus: bool,
    /// Fair-share shares (sacctmgr's `Fairshare=`) of the job's user and
    /// account associations, where accounting has them.
    pub user_shares: Option<f64>,
    /// See [`JobInfo::user_shares`].
    pub account_shares: Option<f64>,
    /// The decayed usage of its user's association (`sshare`'s RawUsage),
    /// where priority/multifactor keeps one.
    pub user_usage: Option<f64>,
    /// See [`JobInfo::user_usage`]: its account's.
    pub account_usage: Option<f64>,
    /// Slurm's fair-share factor of the job's association (`sshare`'s
    /// FairShare: fair tree's rank, by default), in [0, 1], higher for the
    /// less served; `None` where Slurm keeps none.
    pub fair_share_factor: Option<f64>,
    /// Since when it may start: Slurm's eligible time (`begin_time`, set
    /// once the job is released, its dependencies are met and its
    /// `--begin` has passed), or its submit time if later. Its wait, and
    /// so its waiting-time bound, counts from here.
    pub eligible: f64,
    /// Pending jobs: the nodes it may use (`--exclude`, `--nodelist`,
    /// `--constraint`, reservations), as indices into [`Snapshot::nodes`].
    pub usable_nodes: Option<Vec<usize>>,
    /// For running jobs: where and since when.
    pub running: Option<Placement>,
    /// For pending jobs: the start Slurm shows for it now (`StartTime`,
    /// as the plan last wrote it, or backfill), if any.
    pub shown_start: Option<f64>,
    /// Slurm may requeue it: a batch job that allows it (`--requeue`, or
    /// `JobRequeue=1`). Only such a job may be preempted.
    pub requeue: bool,
    /// Its QOS's name ("" when none).
    pub qos: String,
    /// Seconds of warning it asked for with `--signal` before it is
    /// stopped; `None` when it asked for no signal.
    pub notice: Option<f64>,
    /// Pending jobs: Slurm's priority and where it came from.
    pub priority: JobPriority,
    /// Pending jobs: whether Slurm's own checks have looked at it yet
    /// (see [`super::window`]). Running jobs are [`Checked::Runnable`].
    pub checked: Checked,
}

impl JobInfo {
    /// A pending job of one task on one CPU, asking for no GPU, with
    /// `comment` and no time limit; runnable in `partitions`, on any node,
    /// eligible at 0.
    pub fn pending(job_id: u32, user: &str, comment: &str, partitions: &[&str]) -> Self {
        JobInfo {
            job_id,
            tasks: 1,
            user: user.into(),
            account: "acct".into(),
            name: "train".into(),
            comment: comment.into(),
            hint_option: None,
            time_limit: None,
            partitions: partitions.iter().map(|&p| p.into()).collect(),
            cpus: 1,
            gpus: 0,
            gpus_per_job: 0,
            nodes: 1,
            max_nodes: None,
            gpu_type: None,
            shares_cpus: false,
            shards: 0,
            user_shares: None,
            account_shares: None,
            user_usage: None,
            account_usage: None,
            fair_share_factor: None,
            eligible: 0.0,
            usable_nodes: None,
            running: None,
            shown_start: None,
            checked: Checked::Runnable,
            requeue: false,
            qos: String::new(),
            notice: None,
            priority: JobPriority::default(),
        }
    }
}

/// A pending job's priority as Slurm holds it (see [`super::priority`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobPriority {
    /// Its priority (`squeue --priority`); never 0, since a held job is
    /// not pending to the plan.
    pub value: u32,
    /// An operator set it (`scontrol update Priority=`), rather than the
    /// priority plugin.
    pub set_by_admin: bool,
    /// Its QOS's `Priority`; 0 without one.
    pub qos: u32,
}

impl Default for JobPriority {
    fn default() -> Self {
        JobPriority {
            value: 1,
            set_by_admin: false,
            qos: 0,
        }
    }
}

/// How far Slurm's own checks of a pending job have got this cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checked {
    /// Copied, not checked: its partitions are those it was submitted to,
    /// and its usable nodes are not known yet.
    Not,
    /// Slurm lets it start now: its partitions and nodes are what Slurm's
    /// limits and rules allow.
    #[default]
    Runnable,
    /// Slurm holds it back now, and has set its reason on the job.
    Blocked,
}

/// Where and since when a running job runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The partition it started in.
    pub partition: String,
    /// The nodes it runs on, in Slurm's node order (one, or a gang's).
    pub nodes: Vec<String>,
    /// Start time.
    pub start: f64,
}

impl Placement {
    /// A run on one node.
    pub fn on(partition: &str, node: &str, start: f64) -> Self {
        Placement {
            partition: partition.into(),
            nodes: vec![node.into()],
            start,
        }
    }

    /// Whether it runs on node `name`.
    pub fn holds(&self, name: &str) -> bool {
        self.nodes.iter().any(|n| n == name)
    }
}

impl JobInfo {
    /// CPUs it asks for (or holds) on each of its nodes: Slurm spreads a
    /// gang's CPUs over its nodes.
    pub fn cpus_per_node(&self) -> u32 {
        self.cpus.div_ceil(self.nodes.max(1))
    }
}

/// A job that finished, recorded in the runtime history.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedJob {
    /// The user's name.
    pub user: String,
    /// The job's name.
    pub name: String,
    /// The partition it ran in.
    pub partition: String,
    /// The nodes it ran on, as Slurm lists them (`g1`, `g[1-2]`): on one
    /// node of a partition with GPUs of several types, its GPU type
    /// names the flavor it learns for.
    pub nodes: String,
    /// It ran on shards of a GPU, and learns for its nodes' shard flavor.
    pub shards: bool,
    /// Its run time in seconds.
    pub seconds: f64,
    /// When it ended, in seconds since the epoch (whole seconds, as Slurm
    /// keeps them); 0 when unknown.
    pub end: f64,
}

/// Everything one scheduling cycle plans from.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The time of the copy.
    pub now: f64,
    /// The nodes that [`PartitionInfo::nodes`] and [`JobInfo::usable_nodes`]
    /// index.
    pub nodes: Vec<NodeInfo>,
    /// The partitions, with their nodes.
    pub partitions: Vec<PartitionInfo>,
    /// Pending jobs the plugin manages, each [`Checked`] as far as the
    /// cycle needed: only the runnable ones are planned.
    pub pending: Vec<JobInfo>,
    /// Running jobs on the managed partitions' nodes.
    pub running: Vec<JobInfo>,
    /// Jobs that finished since the previous snapshot.
    pub finished: Vec<FinishedJob>,
}

impl Snapshot {
    /// Each node's index in [`Snapshot::nodes`], by name: built once where
    /// many jobs' nodes are looked up.
    pub fn node_index(&self) -> HashMap<&str, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect()
    }
}

/// What to do with one pending job (or, for a preemption, a running one).
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start now in `partition` on `nodes`, with `gpus` GPUs on each.
    Start {
        /// The partition to start it in.
        partition: String,
        /// The nodes to start it on: one, or each node of a gang.
        nodes: Vec<String>,
        /// GPUs it gets on each node: its width on a GPU flavor (1 for a
        /// job that asked for none), 0 on a CPU slot.
        gpus: u32,
        /// The GPU type it must get, where its nodes have several and it
        /// asked for none: the plan's flavor, so Slurm gives it that type.
        gpu_type: Option<String>,
    },
    /// Stay pending.
    Wait,
    /// Leave it to the shim's first-come pass: the plan cannot hold its
    /// shape (a gang of more nodes than any one GPU type of its
    /// partitions has), though Slurm may run it across types.
    FirstCome,
    /// A running job gives way (preemption): with `notice`, Slurm sends it
    /// the signal of its `--signal` now and the planner asks for the
    /// requeue once the notice is over; without, Slurm requeues it now.
    Preempt {
        /// Send the job's `--signal` instead of requeueing it now.
        notice: bool,
    },
}

/// What became of a start (Slurm's answer to `select_nodes()`) or of a
/// preemption.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The job the decision named.
    pub job_id: u32,
    /// The job that runs (an array task has its own id), or the refusal.
    pub result: Result<u32, Refusal>,
    /// When Slurm answered.
    pub at: f64,
    /// The answer to a preemption ([`Action::Preempt`]): `Ok` when the job
    /// was signalled or requeued, else Slurm's refusal.
    pub preemption: bool,
}

/// Why Slurm refused a start.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// Slurm's words (`QOSGrpGRES`, `Licenses`, `Resources`, ...).
    pub reason: String,
    /// The node lacked the resources: the job is worth trying again at
    /// once, elsewhere ([`super::full_nodes`]).
    pub busy: bool,
}

/// The planner's verdict on one pending job.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The job, as in [`JobInfo::job_id`].
    pub job_id: u32,
    /// Start it or leave it pending.
    pub action: Action,
    /// Shown to the user as the job's reason while it waits; empty keeps
    /// the reason Slurm gave.
    pub reason: String,
    /// It waits because no slot it may use is free: Slurm's `Resources`
    /// stands for `reason`, as backfill shows it.
    pub for_resources: bool,
    /// Set once per job when its hint had problems or was missing: goes to
    /// the admin comment and the log.
    pub note: Option<String>,
    /// A wait the plan placed: when it expects the job to start (seconds
    /// since the epoch, not before the plan's now), Slurm's `StartTime`
    /// for `squeue --start`.
    pub start_at: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_gpus_in_gres_strings() {
        let node = |gres: &str| NodeInfo::up("n", 1, gres);
        assert_eq!(node("gpu:2").gpus(), 2);
        assert_eq!(node("gpu:a100:4(S:0-1),nic:1").gpus(), 4);
        assert_eq!(node("gpu:1,gpu:v100:2").gpus(), 3);
        assert_eq!(node("").gpus(), 0);
        assert_eq!(node("mps:100").gpus(), 0);
        assert_eq!(node("gpu:2").gpus_by_type(), vec![(None, 2)]);
        assert_eq!(
            node("gpu:a100:4(S:0-1),nic:1").gpus_by_type(),
            vec![(Some("a100".into()), 4)]
        );
        let mig = node("gpu:1g.10gb:4,gpu:3g.40gb:1,gpu:1g.10gb:2");
        assert_eq!(
            mig.gpus_by_type(),
            vec![(Some("1g.10gb".into()), 6), (Some("3g.40gb".into()), 1)]
        );
        assert!(mig.mixed() && !node("gpu:a100:4").mixed());
        assert_eq!(mig.gpus_of(&Some("3g.40gb".into())), 1);
        assert_eq!(node("gpu:a100:2,gpu:a100:2").gpus(), 4);
    }
}
