//! A snapshot of slurmctld as the policy sees it: the slot model's slots
//! as machines, running jobs placed on the slots of their nodes, each
//! pending array task as a job of its own, users (or accounts) as indices.
//! It is the planner's [`Driver`] for the shared decision loop, so a
//! start the policy asks for lands here and nowhere else.

use super::estimates::Estimates;
use super::hints::{self, Hint};
use super::shapes;
use super::shared_gpus::SharedGpus;
use super::slots::SlotModel;
use super::snapshot::{JobInfo, Preemption, Snapshot};
use crate::policy::decision_loop::Driver;
use crate::policy::{MachineView, PendingJob, PolicyError, RunningJob, Start, View};
use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;

/// The matching's id for task `task` of Slurm job `job_id`: stable from one
/// plan to the next, as stickiness needs.
fn pending_id(job_id: u32, task: u32) -> usize {
    ((job_id as usize) << 32) | task as usize
}

/// Slurm's job id of a pending id ([`pending_id`]).
pub(super) fn job_id_of(id: usize) -> u32 {
    (id >> 32) as u32
}

/// What the planner remembers between plans that the view needs: how the
/// planner is asked keeps this module from depending on it.
pub(super) trait PlanMemory {
    /// Whom `job` counts for in fair share, and that party's shares where
    /// accounting has them.
    fn fair_share<'j>(&self, job: &'j JobInfo) -> (Cow<'j, str>, Option<f64>);
    /// The start time and slots of a job Slurm started on the planner's
    /// word.
    fn started(&self, job_id: u32) -> Option<(f64, &[usize])>;
    /// Whether Slurm refused `job_id` lately, so that it sits out.
    fn is_refused(&self, job_id: u32) -> bool;
    /// The attained service of a fair-share party.
    fn attained(&self, key: &str) -> f64;
    /// Running `job`'s estimate per flavor of `model`, given its parsed
    /// hint.
    fn estimates(&self, model: &SlotModel, job: &JobInfo, hint: &Hint) -> Estimates;
    /// The run time assumed where a running job has no estimate.
    fn default_runtime(&self) -> f64;
    /// Whether running `job` may be preempted now (see
    /// `Planner::preemptible`).
    fn preemptible(&self, job: &JobInfo, hint: &Hint) -> bool;
    /// When a running job being preempted leaves its slots, if it is.
    fn leaves_at(&self, job_id: u32) -> Option<f64>;
}

/// The policy's view of one snapshot, and the starts decided on it.
pub(super) struct SnapshotView<'s> {
    snap: &'s Snapshot,
    model: &'s SlotModel,
    /// Users (or accounts) by name, sorted: a user's index is its place.
    pub(super) users: Vec<String>,
    weights: Vec<f64>,
    attained: Vec<f64>,
    machines: Vec<MachineView>,
    running: Vec<RunningJob>,
    pending: Vec<PendingJob>,
    /// Which record of the snapshot each pending id belongs to.
    record_of: HashMap<usize, usize>,
    /// Per snapshot record, the slots each of its starting tasks takes
    /// (one, or a gang's on one node).
    pub(super) starts: HashMap<usize, Vec<Vec<usize>>>,
    /// CPUs left on each node that offers slots to several partitions:
    /// their slots overlap, so a start in one takes from the others.
    shared_cpus_left: HashMap<usize, u32>,
    /// GPUs with shards, on each node that has them.
    gpus: SharedGpus,
}

impl<'s> SnapshotView<'s> {
    /// The view of `snap` on `model`; `estimates` are the pending records'
    /// (see `estimates::of_job`).
    pub(super) fn build(
        planner: &impl PlanMemory,
        snap: &'s Snapshot,
        model: &'s SlotModel,
        estimates: &[Estimates],
        classes: &[u32],
    ) -> Self {
        let users = user_names(planner, snap);
        let mut view = SnapshotView {
            snap,
            model,
            weights: Vec::new(),
            attained: users.iter().map(|u| planner.attained(u)).collect(),
            users,
            machines: machines(model, snap.now),
            running: Vec::new(),
            pending: Vec::new(),
            record_of: HashMap::new(),
            starts: HashMap::new(),
            shared_cpus_left: shared_cpus_left(snap, model),
            gpus: SharedGpus::of(snap, model),
        };
        // A user's (or account's) weight is its fair-share shares in the
        // association tree, where accounting keeps one, taken from its
        // first job placed; 1 otherwise.
        let mut weights = vec![None; view.users.len()];
        view.place_running(planner, &mut weights);
        view.hold_full_slots(planner);
        view.queue_pending(planner, estimates, classes, &mut weights);
        view.weights = weights.into_iter().map(|w| w.unwrap_or(1.0)).collect();
        view
    }

    /// The index of `job`'s user, noting its shares if it has none yet.
    fn user_of(
        &self,
        planner: &impl PlanMemory,
        job: &JobInfo,
        weights: &mut [Option<f64>],
    ) -> usize {
        let (key, shares) = planner.fair_share(job);
        let u = self
            .users
            .binary_search_by(|name| name.as_str().cmp(&key))
            .expect("every job's user is listed");
        if weights[u].is_none() {
            weights[u] = shares.filter(|s| s.is_finite() && *s > 0.0);
        }
        u
    }

    /// Running jobs take slots of their flavor on their node (one, or
    /// their GPUs), busy until their estimated end. Jobs that remember
    /// their slots go first, so no other takes them.
    fn place_running(&mut self, planner: &impl PlanMemory, weights: &mut [Option<f64>]) {
        let (snap, model) = (self.snap, self.model);
        // The slots of each flavor on each node, so placing a running job
        // costs its node's slots, not every slot.
        let mut slots_at: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for (i, slot) in model.slots.iter().enumerate() {
            slots_at
                .entry((slot.flavor, slot.node))
                .or_default()
                .push(i);
        }
        let node_index = snap.node_index();
        let keys = model.hint_keys();
        let mut order: Vec<usize> = (0..snap.running.len()).collect();
        order.sort_by_key(|&r| planner.started(snap.running[r].job_id).is_none());
        for r in order {
            let job = &snap.running[r];
            let Some(place) = &job.running else { continue };
            let nodes: Vec<usize> = place
                .nodes
                .iter()
                .filter_map(|name| node_index.get(name.as_str()).copied())
                .collect();
            let held = job.gpu_type.as_deref();
            let Some(flavor) = nodes
                .first()
                .and_then(|&n| model.flavor_on(snap, &place.partition, n, held, job.shards > 0))
            else {
                continue;
            };
            let width = if model.gpu_flavor[flavor] {
                job.gpus.max(1) as usize
            } else if model.shard_flavor[flavor] {
                job.shards as usize
            } else {
                1
            };
            let remembered = planner.started(job.job_id);
            // On each of its nodes, its width in slots of its flavor: those
            // it was started on first.
            let mut slots: Vec<usize> = Vec::new();
            for &n in &nodes {
                let candidates = slots_at.get(&(flavor, n)).map_or(&[][..], Vec::as_slice);
                let machines = &self.machines;
                // A shard job's slots are those the model kept for it: a
                // GPU's free shards stay free.
                let candidates = if model.shard_flavor[flavor] {
                    model
                        .held_shards
                        .get(&job.job_id)
                        .map_or(&[][..], Vec::as_slice)
                } else {
                    candidates
                };
                let idle = |i: &usize| candidates.contains(i) && machines[*i].idle;
                let mut on_node: Vec<usize> = remembered
                    .map(|(_, m)| m.iter().copied().filter(idle).collect())
                    .unwrap_or_default();
                on_node.truncate(width);
                for &i in candidates {
                    if on_node.len() == width {
                        break;
                    }
                    if machines[i].idle && !on_node.contains(&i) {
                        on_node.push(i);
                    }
                }
                slots.extend(on_node);
            }
            if slots.is_empty() {
                continue;
            }
            let hint = hints::of_job(&job.comment, job.hint_option.as_deref(), &keys);
            let est = planner.estimates(model, job, &hint);
            let start = remembered.map_or(place.start, |(t, _)| t);
            let length = est[flavor].map_or(planner.default_runtime(), |(s, _)| s);
            let preemptible = planner.preemptible(job, &hint);
            let end = planner
                .leaves_at(job.job_id)
                .map_or(start + length, |t| t.max(snap.now));
            let user = self.user_of(planner, job, weights);
            let estimates: Vec<Option<f64>> = est.iter().map(|e| e.map(|(s, _)| s)).collect();
            for machine in slots {
                self.machines[machine].idle = false;
                self.machines[machine].free_at = end;
                // A gang is listed once per slot it holds.
                self.running.push(RunningJob {
                    id: usize::MAX - r,
                    user,
                    machine,
                    started: start,
                    estimates: estimates.clone(),
                    preemptible,
                });
            }
        }
    }

    /// A slot on a node Slurm found full, or whose CPUs are all held
    /// (`shared_cpus_left`), and a shard of a GPU held whole, stays busy
    /// until the first job there is expected to end (or, with none the
    /// plan knows of, for the default run time): the plan may wait for it,
    /// not start on it.
    fn hold_full_slots(&mut self, planner: &impl PlanMemory) {
        let mut first_end: HashMap<usize, f64> = HashMap::new();
        for (m, machine) in self.machines.iter().enumerate() {
            if !machine.idle {
                let end = first_end
                    .entry(self.model.slots[m].node)
                    .or_insert(f64::INFINITY);
                *end = end.min(machine.free_at);
            }
        }
        let fallback = self.snap.now + planner.default_runtime();
        for (m, slot) in self.model.slots.iter().enumerate() {
            let no_cpu = self.shared_cpus_left.get(&slot.node) == Some(&0);
            if (slot.full || slot.held_whole || no_cpu) && self.machines[m].idle {
                let end = first_end.get(&slot.node).copied().unwrap_or(fallback);
                self.machines[m].idle = false;
                self.machines[m].free_at = end.max(self.snap.now);
            }
        }
    }

    /// Every task of every pending record that may run somewhere and did
    /// not just sit out a refusal.
    fn queue_pending(
        &mut self,
        planner: &impl PlanMemory,
        estimates: &[Estimates],
        classes: &[u32],
        weights: &mut [Option<f64>],
    ) {
        for (i, job) in self.snap.pending.iter().enumerate() {
            if planner.is_refused(job.job_id) || !estimates[i].iter().any(Option::is_some) {
                continue;
            }
            let user = self.user_of(planner, job, weights);
            for task in 0..job.tasks.max(1) {
                let id = pending_id(job.job_id, task);
                self.record_of.insert(id, i);
                self.pending.push(PendingJob {
                    id,
                    user,
                    arrival: job.eligible,
                    estimates: estimates[i].iter().map(|e| e.map(|(s, _)| s)).collect(),
                    width: shapes::width(job, self.model),
                    priority: classes[i],
                });
            }
        }
    }

    /// The slots no job holds once the plan's starts are applied.
    /// The snapshot's running record behind the policy's running id.
    pub(super) fn running_record(&self, id: usize) -> Option<usize> {
        let r = usize::MAX.checked_sub(id)?;
        (r < self.snap.running.len()).then_some(r)
    }

    /// The snapshot record of pending job `id`.
    pub(super) fn pending_record(&self, id: usize) -> Option<usize> {
        self.record_of.get(&id).copied()
    }

    /// The jobs still pending in the view.
    pub(super) fn pending_jobs(&self) -> &[PendingJob] {
        &self.pending
    }

    /// Each task of `job`, a record outside the view (one Slurm's checks
    /// have not looked at), as the policy would see it, for its forecast
    /// ([`crate::policy::Policy::forecast`]); ids as the view's.
    pub(super) fn outside(&self, job: &JobInfo, estimates: &Estimates) -> Vec<PendingJob> {
        let width = shapes::width(job, self.model);
        (0..job.tasks.max(1))
            .map(|task| PendingJob {
                id: pending_id(job.job_id, task),
                user: 0,
                arrival: job.eligible,
                estimates: estimates.iter().map(|e| e.map(|(s, _)| s)).collect(),
                width,
                priority: 0,
            })
            .collect()
    }

    /// Running job `id` is being preempted: its slots are free from `at`
    /// on, and nothing preempts it again.
    pub(super) fn leaves(&mut self, id: usize, at: f64) {
        for r in self.running.iter_mut().filter(|r| r.id == id) {
            r.preemptible = false;
            self.machines[r.machine].free_at = at;
        }
    }

    pub(super) fn idle_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.machines.len()).filter(|&m| self.machines[m].idle)
    }

    /// The idle slots `job` (of snapshot record `record`) takes for the
    /// policy's `asked`: those, when they are its width's idle slots of
    /// nodes it may use (`per_node` on each of `nodes` nodes of one
    /// flavor); else as many idle slots of as many usable nodes of the
    /// same flavor (the matching knows flavors, not the nodes a job may
    /// use: --exclude, --nodelist, --constraint); else none, and the job
    /// waits this round.
    fn placement(&self, record: usize, job: &PendingJob, asked: &[usize]) -> Option<Vec<usize>> {
        let width = job.width;
        let slot_node = |m: usize| self.model.slots[m].node;
        let flavor = self.machines[*asked.first()?].flavor;
        let fits = |m: usize| {
            self.machines[m].idle
                && self.machines[m].flavor == flavor
                && self.usable(record, slot_node(m))
        };
        let mut asked_nodes: Vec<usize> = asked.iter().map(|&m| slot_node(m)).collect();
        asked_nodes.sort_unstable();
        asked_nodes.dedup();
        let as_asked = asked.len() == width.slots()
            && asked_nodes.len() == width.nodes
            && asked.iter().all(|&m| fits(m))
            && asked_nodes
                .iter()
                .all(|&n| asked.iter().filter(|&&m| slot_node(m) == n).count() == width.per_node);
        if as_asked {
            return Some(asked.to_vec());
        }
        // Nodes in the order the policy asked for them, then the rest.
        let mut by_node: Vec<(usize, Vec<usize>)> =
            asked_nodes.iter().map(|&n| (n, Vec::new())).collect();
        let mut at_of: HashMap<usize, usize> = asked_nodes
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i))
            .collect();
        for m in (0..self.machines.len()).filter(|&m| fits(m)) {
            let n = slot_node(m);
            let at = *at_of.entry(n).or_insert_with(|| {
                by_node.push((n, Vec::new()));
                by_node.len() - 1
            });
            if by_node[at].1.len() < width.per_node {
                by_node[at].1.push(m);
            }
        }
        let mut taken: Vec<usize> = Vec::with_capacity(width.slots());
        let full = by_node
            .into_iter()
            .filter(|(_, slots)| slots.len() == width.per_node);
        for (_, slots) in full.take(width.nodes) {
            taken.extend(slots);
        }
        (taken.len() == width.slots()).then_some(taken)
    }

    /// A shard job's slots as Slurm fills them: on each of `width.nodes`
    /// nodes (those the policy asked for first), `width.per_node` idle
    /// shards of the first GPU that has them (select/cons_tres takes a
    /// job's shards on a node from one GPU, the first with enough).
    fn shard_placement(
        &self,
        record: usize,
        job: &PendingJob,
        asked: &[usize],
    ) -> Option<Vec<usize>> {
        let width = job.width;
        let flavor = self.machines[*asked.first()?].flavor;
        let mut nodes: Vec<usize> = asked.iter().map(|&m| self.model.slots[m].node).collect();
        nodes.extend(self.model.flavor_nodes[flavor].iter().copied());
        let mut seen = std::collections::HashSet::with_capacity(nodes.len());
        nodes.retain(|&n| seen.insert(n));
        let need = self.snap.pending[record].cpus_per_node().max(1);
        let cpus_enough = |n: &usize| self.shared_cpus_left.get(n).is_none_or(|&l| l >= need);
        let mut taken = Vec::with_capacity(width.slots());
        for n in nodes
            .into_iter()
            .filter(|&n| self.usable(record, n) && cpus_enough(&n))
        {
            let mut by_gpu: Vec<(u32, Vec<usize>)> = Vec::new();
            for &m in self.gpus.slots_on(n) {
                let slot = &self.model.slots[m];
                let Some(d) = slot
                    .device
                    .filter(|_| slot.flavor == flavor && self.machines[m].idle)
                else {
                    continue;
                };
                match by_gpu.iter_mut().find(|(g, _)| *g == d) {
                    Some((_, slots)) => slots.push(m),
                    None => by_gpu.push((d, vec![m])),
                }
            }
            by_gpu.sort_by_key(|(d, _)| *d);
            if let Some((_, slots)) = by_gpu.into_iter().find(|(_, s)| s.len() >= width.per_node) {
                taken.extend(&slots[..width.per_node]);
                if taken.len() == width.slots() {
                    return Some(taken);
                }
            }
        }
        None
    }

    /// Applies what a start on `machines` until `end` does to the GPUs
    /// with shards: a GPU given whole offers no shards until then, and a
    /// GPU shared out is not given whole. False, and nothing changed,
    /// when the nodes lack the whole GPUs a start asks for.
    fn take_shared_gpus(&mut self, machines: &[usize], end: f64) -> bool {
        let model = self.model;
        let gpu_slots = |n: usize| {
            machines
                .iter()
                .filter(|&&m| model.slots[m].gpu && model.slots[m].node == n)
                .count()
        };
        let mut nodes: Vec<usize> = machines.iter().map(|&m| model.slots[m].node).collect();
        nodes.dedup();
        if nodes
            .iter()
            .any(|&n| self.gpus.whole_left(n) < gpu_slots(n))
        {
            return false;
        }
        let mut busy: Vec<usize> = Vec::new();
        for &n in &nodes {
            for device in self.gpus.give_whole(n, gpu_slots(n)) {
                busy.extend(
                    self.gpus
                        .slots_on(n)
                        .iter()
                        .filter(|&&o| model.slots[o].device == Some(device)),
                );
            }
        }
        for &m in machines {
            let slot = &model.slots[m];
            let Some(device) = slot.device else { continue };
            if self.gpus.share_out(slot.node, device) {
                // One GPU fewer to give whole: any idle GPU slot there.
                let machines = &self.machines;
                let idle_gpu = self
                    .gpus
                    .slots_on(slot.node)
                    .iter()
                    .copied()
                    .find(|&o| model.slots[o].gpu && machines[o].idle);
                busy.extend(idle_gpu);
            }
        }
        for o in busy {
            let machine = &mut self.machines[o];
            machine.free_at = if machine.idle {
                end
            } else {
                machine.free_at.max(end)
            };
            machine.idle = false;
        }
        true
    }

    /// Whether snapshot record `record` may run on node `node`.
    pub(super) fn usable(&self, record: usize, node: usize) -> bool {
        self.snap.pending[record]
            .usable_nodes
            .as_ref()
            .is_none_or(|nodes| nodes.contains(&node))
    }
}

/// The model's slots as the policy's machines. A machine's node is its
/// (flavor, node) pair: a gang takes slots of one flavor on one node. A
/// shard slot's is its GPU: Slurm takes a job's shards from one.
fn machines(model: &SlotModel, now: f64) -> Vec<MachineView> {
    let mut groups: HashMap<(usize, usize, Option<u32>), usize> = HashMap::new();
    model
        .slots
        .iter()
        .map(|s| {
            let next = groups.len();
            MachineView {
                flavor: s.flavor,
                node: *groups.entry((s.flavor, s.node, s.device)).or_insert(next),
                free_at: now,
                idle: true,
            }
        })
        .collect()
}

/// Per node that offers slots to more than one flavor, or shards (many
/// small jobs on few CPUs), the CPUs no job holds there; none where jobs
/// may preempt others.
fn shared_cpus_left(snap: &Snapshot, model: &SlotModel) -> HashMap<usize, u32> {
    // Where jobs may preempt to start, Slurm's select_nodes() makes room.
    if snap
        .partitions
        .iter()
        .any(|p| p.limits.preemption != Preemption::None)
    {
        return HashMap::new();
    }
    let mut flavors_on: HashMap<usize, Vec<usize>> = HashMap::new();
    for slot in &model.slots {
        let on = flavors_on.entry(slot.node).or_default();
        if !on.contains(&slot.flavor) {
            on.push(slot.flavor);
        }
    }
    flavors_on
        .into_iter()
        .filter(|(_, flavors)| flavors.len() > 1 || flavors.iter().any(|&f| model.shard_flavor[f]))
        .map(|(n, _)| {
            let node = &snap.nodes[n];
            let held: u32 = snap
                .running
                .iter()
                .filter(|j| j.running.as_ref().is_some_and(|p| p.holds(&node.name)))
                .map(JobInfo::cpus_per_node)
                .sum();
            (
                n,
                node.cpus
                    .saturating_sub(node.foreign_cpus)
                    .saturating_sub(held),
            )
        })
        .collect()
}

/// Users (or accounts) sorted by name: the policy breaks ties between
/// users by index, and that must not hang on which jobs the snapshot holds
/// (see `window`).
fn user_names(planner: &impl PlanMemory, snap: &Snapshot) -> Vec<String> {
    let mut users: Vec<String> = snap
        .running
        .iter()
        .chain(&snap.pending)
        .map(|job| planner.fair_share(job).0.into_owned())
        .collect();
    users.sort_unstable();
    users.dedup();
    users
}

impl Driver for SnapshotView<'_> {
    type Error = Infallible;

    fn with_view<T>(&self, f: impl FnOnce(&View<'_>) -> T) -> T {
        f(&View {
            now: self.snap.now,
            flavors: &self.model.flavors,
            machines: &self.machines,
            pending: &self.pending,
            running: &self.running,
            user_weights: &self.weights,
            attained: &self.attained,
        })
    }

    /// Takes each start the policy asked for that still fits (a gang's
    /// slots all together); the others leave their jobs out of this plan.
    fn apply(&mut self, decided: Vec<Start>) -> Result<(), Infallible> {
        let mut index_of: HashMap<usize, usize> = self
            .pending
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id, i))
            .collect();
        // A gang's starts come together, one per slot.
        let mut asked: Vec<(usize, Vec<usize>)> = Vec::new();
        for s in decided {
            match asked.iter_mut().find(|(job, _)| *job == s.job) {
                Some((_, machines)) => machines.push(s.machine),
                None => asked.push((s.job, vec![s.machine])),
            }
        }
        // Whole GPUs first, then shards on the GPUs left to share, as the
        // planner hands the starts to Slurm.
        let model = self.model;
        let machines = &self.machines;
        asked.sort_by_key(|(_, m)| model.shard_flavor[machines[m[0]].flavor]);
        for (id, machines) in asked {
            let Some(p) = index_of.remove(&id) else {
                continue;
            };
            if let Some(last) = self.pending.last().filter(|_| p + 1 < self.pending.len()) {
                index_of.insert(last.id, p); // swap_remove moves it to p
            }
            let job = self.pending.swap_remove(p);
            let record = self.record_of[&id];
            let on_shards = machines
                .first()
                .is_some_and(|&m| self.model.shard_flavor[self.machines[m].flavor]);
            let placed = if on_shards {
                self.shard_placement(record, &job, &machines)
            } else {
                self.placement(record, &job, &machines)
            };
            let Some(machines) = placed else {
                continue;
            };
            let flavor = self.machines[machines[0]].flavor;
            let Some(length) = job.estimates[flavor] else {
                continue;
            };
            let mut nodes: Vec<usize> =
                machines.iter().map(|&m| self.model.slots[m].node).collect();
            nodes.sort_unstable();
            nodes.dedup();
            let need = self.snap.pending[record].cpus_per_node().max(1);
            let short = |n: &usize| self.shared_cpus_left.get(n).is_some_and(|&l| l < need);
            if nodes.iter().any(short) || !self.take_shared_gpus(&machines, self.snap.now + length)
            {
                continue;
            }
            for n in &nodes {
                if let Some(left) = self.shared_cpus_left.get_mut(n) {
                    *left -= need;
                }
            }
            for &machine in &machines {
                self.machines[machine].idle = false;
                self.machines[machine].free_at = self.snap.now + length;
                self.running.push(RunningJob {
                    id: job.id,
                    user: job.user,
                    machine,
                    started: self.snap.now,
                    estimates: job.estimates.clone(),
                    preemptible: false,
                });
            }
            self.starts.entry(record).or_default().push(machines);
        }
        Ok(())
    }

    fn policy_failed(&mut self, error: PolicyError) -> Result<(), Infallible> {
        log::error!("policy failed: {error}; jobs stay pending");
        Ok(())
    }
}
