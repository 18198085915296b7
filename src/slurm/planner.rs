//! Turns a snapshot of slurmctld into decisions, through the same
//! [`Policy`] the simulator runs, and learns what Slurm made of them.
//!
//! The slots are [`SlotModel`]'s. Running jobs occupy slots until their
//! estimated end. Estimates per flavor come from the job's hint, else its
//! time limit, else the mean of earlier jobs with the same user, name and
//! partition, else the configured default. Each pending array task is a
//! job of its own with the array's hints.
//!
//! A start is only a proposal until [`Planner::observe`] hears Slurm's
//! answer: a started job keeps its slot from one plan to the next; a
//! refused one (a QOS or association limit, licenses, a node taken
//! meanwhile) keeps Slurm's reason and sits out the plans for
//! [`RETRY_AFTER`] seconds, so its slot goes to someone else.

use super::config::{Config, FairshareBy};
use super::hints::{self, Hint};
use super::history::History;
use super::slots::SlotModel;
use super::snapshot::{Action, Checked, Decision, FinishedJob, JobInfo, Outcome, Snapshot};
use super::window::{self, Ranked};
use crate::policy::{
    allox::Allox, usage_scores, MachineView, PendingJob, Policy, RunningJob, View,
};
use std::collections::{HashMap, HashSet, VecDeque};

/// Seconds a job Slurm refused to start sits out of the plans.
pub const RETRY_AFTER: f64 = 2.0;

/// The matching's id for task `task` of Slurm job `job_id`: stable from one
/// plan to the next, as stickiness needs.
fn pending_id(job_id: u32, task: u32) -> usize {
    ((job_id as usize) << 32) | task as usize
}

/// Longest reason text handed to Slurm.
const MAX_REASON: usize = 240;

fn policy_for(config: &Config) -> Allox {
    let mut allox = Allox::new(Config::default().alpha).expect("the default alpha is valid");
    configure(&mut allox, config);
    allox
}

/// Applies `config` to the policy; a parameter the policy refuses is
/// reported and the policy keeps its previous value.
fn configure(allox: &mut Allox, config: &Config) {
    if let Err(e) = allox.set_alpha(config.alpha) {
        log::error!("{e}; keeping alpha {}", allox.alpha());
    }
    allox.max_candidates = config.max_candidates;
    allox.candidate_rule = config.candidate_rule;
    if let Err(e) = allox.set_stickiness(config.stickiness) {
        log::error!("{e}; keeping {}", allox.stickiness);
    }
}

/// Where an estimate came from, for the reason a user sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Hint,
    TimeLimit,
    History,
    Default,
}

impl Source {
    fn label(self) -> &'static str {
        match self {
            Source::Hint => "hint",
            Source::TimeLimit => "time limit",
            Source::History => "history",
            Source::Default => "default",
        }
    }
}

pub struct Planner {
    config: Config,
    /// Kept across plans: it remembers the previous plan for stickiness.
    policy: Allox,
    history: History,
    /// The jobs Slurm started for this planner: precise start time (Slurm
    /// keeps whole seconds) and the slot of the model, so a running job
    /// keeps its slot from one plan to the next and plans can stick to
    /// slots.
    started: HashMap<u32, (f64, usize)>,
    /// The last plan's starts per Slurm job, in decision order, until
    /// their outcomes arrive.
    proposed: HashMap<u32, VecDeque<usize>>,
    /// Jobs Slurm refused to start, and until when they sit out.
    refused: HashMap<u32, f64>,
    /// Jobs whose hint problems were already reported.
    noted: HashSet<u32>,
    /// Per fair-share key: attained service, its rate since the last plan,
    /// and when that was.
    attained: HashMap<String, f64>,
    rates: HashMap<String, f64>,
    last_now: Option<f64>,
}

/// The least time a job is planned to hold its slot. Slurm counts whole
/// seconds and a launch takes a fraction of one; and to the matching a
/// zero-length job costs nothing wherever it waits, so a queue of them
/// would be started one per cycle instead of one per free slot.
pub const MIN_PLANNED_SECONDS: f64 = 1.0;

/// Users (or accounts) remembered for attained service, at most.
const MAX_USERS: usize = 10_000;

impl Planner {
    pub fn new(config: Config) -> Self {
        Planner {
            policy: policy_for(&config),
            config,
            history: History::default(),
            started: HashMap::new(),
            proposed: HashMap::new(),
            refused: HashMap::new(),
            noted: HashSet::new(),
            attained: HashMap::new(),
            rates: HashMap::new(),
            last_now: None,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A new configuration; what was learned (attained service, run
    /// times, the previous plan, starts) is kept.
    pub fn set_config(&mut self, config: Config) {
        // Keep the policy itself: it remembers the previous plan.
        configure(&mut self.policy, &config);
        self.config = config;
    }

    /// What Slurm made of the last plan's starts, in decision order.
    pub fn observe(&mut self, outcomes: &[Outcome]) {
        for o in outcomes {
            let slot = self
                .proposed
                .get_mut(&o.job_id)
                .and_then(VecDeque::pop_front);
            match &o.result {
                Ok(running_id) => {
                    if let Some(slot) = slot {
                        self.started.insert(*running_id, (o.at, slot));
                    }
                }
                Err(refusal) => {
                    log::debug!("job {} not started: {}", o.job_id, refusal.reason);
                    // A node still busy is retried at once; a limit (QOS,
                    // association, licenses) holds for a while.
                    if !refusal.busy {
                        self.refused.insert(o.job_id, o.at + RETRY_AFTER);
                    }
                }
            }
        }
        self.proposed.clear();
    }

    /// The pending records (indices into `snap.pending`) Slurm's checks
    /// must look at before [`Planner::plan`]: see [`super::window`]. Empty
    /// when the records checked so far are enough. Without a candidate
    /// cap, every unchecked record.
    pub fn to_check(&self, snap: &Snapshot) -> Vec<usize> {
        let unchecked = || {
            (0..snap.pending.len())
                .filter(|&i| snap.pending[i].checked == Checked::Not)
                .collect()
        };
        let Some(cap) = self.config.max_candidates else {
            return unchecked();
        };
        let model = SlotModel::build(&self.config, snap);
        let names: Vec<&str> = model.flavors.iter().map(|f| f.name.as_str()).collect();
        let mut usable = vec![false; model.flavors.len()];
        for slot in &model.slots {
            usable[slot.flavor] = true;
        }
        // With alpha 1 every user is eligible in every pool (AlloX's
        // fairness rule): one group for all.
        let per_user = self.policy.alpha() < 1.0;
        let mut groups: HashMap<&str, usize> = HashMap::new();
        let ranked: Vec<Ranked> = snap
            .pending
            .iter()
            .map(|job| {
                // A refused job sits out the plan, and a blocked one is
                // not ranked: neither needs its hint read.
                let estimates =
                    if self.refused.contains_key(&job.job_id) || job.checked == Checked::Blocked {
                        vec![None; model.flavors.len()]
                    } else {
                        let hint = hints::parse(&job.comment, &names);
                        self.estimates(&model, job, &hint)
                            .into_iter()
                            .map(|e| e.map(|(s, _)| s))
                            .collect()
                    };
                let next = groups.len();
                let group = if per_user {
                    *groups.entry(self.fair_share(job).0).or_insert(next)
                } else {
                    0
                };
                let risky = model
                    .flavor_nodes
                    .iter()
                    .map(|nodes| {
                        job.usable_nodes
                            .as_ref()
                            .is_some_and(|usable| !nodes.iter().all(|n| usable.contains(n)))
                    })
                    .collect();
                Ranked {
                    risky,
                    checked: job.checked,
                    tasks: job.tasks,
                    job_id: job.job_id,
                    arrival: job.submit,
                    group,
                    estimates,
                }
            })
            .collect();
        // A cycle starts at most one job per slot, and each start may drop
        // one job matched to its slot (see `window`).
        let quota = cap.saturating_add(2 * model.slots.len());
        window::to_check(&ranked, quota, self.config.candidate_rule, &usable)
    }

    /// Learns the run times of jobs that finished. [`Planner::plan`] does
    /// this first; a cycle that plans nothing (every CPU held) calls it
    /// alone, so no ending is missed while no plan runs.
    pub fn learn(&mut self, finished: &[FinishedJob]) {
        for f in finished {
            self.history
                .record(&f.user, &f.name, &f.partition, f.seconds);
        }
    }

    /// Decides every runnable pending job of `snap`: start now (where) or
    /// wait (why). Records not checked, or held back by Slurm, get no
    /// decision: they keep the reason they have.
    pub fn plan(&mut self, snap: &Snapshot) -> Vec<Decision> {
        self.learn(&snap.finished);
        let live: HashSet<u32> = snap
            .pending
            .iter()
            .chain(&snap.running)
            .map(|j| j.job_id)
            .collect();
        self.started.retain(|id, _| live.contains(id));
        self.noted.retain(|id| live.contains(id));
        self.refused
            .retain(|id, until| live.contains(id) && *until > snap.now);
        self.proposed.clear();
        let runnable;
        let snap = if snap.pending.iter().all(|j| j.checked == Checked::Runnable) {
            snap
        } else {
            runnable = Snapshot {
                now: snap.now,
                nodes: snap.nodes.clone(),
                partitions: snap.partitions.clone(),
                pending: snap
                    .pending
                    .iter()
                    .filter(|j| j.checked == Checked::Runnable)
                    .cloned()
                    .collect(),
                running: snap.running.clone(),
                finished: Vec::new(),
            };
            &runnable
        };

        if let Some(last) = self.last_now {
            let elapsed = (snap.now - last).max(0.0);
            for (user, rate) in &self.rates {
                *self.attained.entry(user.clone()).or_default() += rate * elapsed;
            }
        }
        self.last_now = Some(snap.now);
        if self.attained.len() > MAX_USERS {
            // Forget the least served: they compare as new users anyway.
            let mut by_service: Vec<(String, f64)> = self.attained.drain().collect();
            by_service.sort_by(|a, b| b.1.total_cmp(&a.1));
            by_service.truncate(MAX_USERS / 2);
            self.attained = by_service.into_iter().collect();
        }

        let model = SlotModel::build(&self.config, snap);
        let names: Vec<&str> = model.flavors.iter().map(|f| f.name.as_str()).collect();
        let hints: Vec<Hint> = snap
            .pending
            .iter()
            .map(|j| hints::parse(&j.comment, &names))
            .collect();
        let estimates: Vec<Vec<Option<(f64, Source)>>> = snap
            .pending
            .iter()
            .zip(&hints)
            .map(|(job, hint)| self.estimates(&model, job, hint))
            .collect();

        // Users (or accounts) get indices in the order of their names: the
        // policy breaks ties between users by index, and that must not
        // hang on which jobs the snapshot holds (see `window`).
        let mut users: Vec<String> = snap
            .running
            .iter()
            .chain(&snap.pending)
            .map(|job| self.fair_share(job).0.to_owned())
            .collect();
        users.sort_unstable();
        users.dedup();
        let user_index: HashMap<String, usize> = users
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, u)| (u, i))
            .collect();
        // A user's (or account's) weight is its fair-share shares in the
        // association tree, where accounting keeps one; 1 otherwise.
        let mut weights: Vec<Option<f64>> = vec![None; users.len()];
        let mut user_of = |job: &JobInfo| {
            let (key, shares) = self.fair_share(job);
            let u = user_index[key];
            if weights[u].is_none() {
                weights[u] = shares.filter(|s| s.is_finite() && *s > 0.0);
            }
            u
        };
        // The slots of each flavor on each node, so placing a running job
        // costs its node's slots, not every slot.
        let mut slots_at: HashMap<(usize, &str), Vec<usize>> = HashMap::new();
        for (i, slot) in model.slots.iter().enumerate() {
            slots_at
                .entry((slot.flavor, snap.nodes[slot.node].name.as_str()))
                .or_default()
                .push(i);
        }

        let mut machines: Vec<MachineView> = model
            .slots
            .iter()
            .map(|s| MachineView {
                flavor: s.flavor,
                free_at: snap.now,
                idle: true,
            })
            .collect();
        let mut running: Vec<RunningJob> = Vec::new();
        // Jobs that remember their slot go first, so no other takes it.
        let mut order: Vec<usize> = (0..snap.running.len()).collect();
        order.sort_by_key(|&r| !self.started.contains_key(&snap.running[r].job_id));
        for r in order {
            let job = &snap.running[r];
            let Some(place) = &job.running else { continue };
            let Some(flavor) = model.flavor_index(&place.partition) else {
                continue;
            };
            let candidates = slots_at
                .get(&(flavor, place.node.as_str()))
                .map_or(&[][..], Vec::as_slice);
            let fits = |i: usize| candidates.contains(&i) && machines[i].idle;
            let remembered = self.started.get(&job.job_id).copied();
            let slot = remembered
                .map(|(_, m)| m)
                .filter(|&m| fits(m))
                .or_else(|| candidates.iter().copied().find(|&i| machines[i].idle));
            let Some(machine) = slot else { continue };
            let hint = hints::parse(&job.comment, &names);
            let est = self.estimates(&model, job, &hint);
            let start = remembered.map_or(place.start, |(t, _)| t);
            let length = est[flavor].map_or(self.config.default_runtime, |(s, _)| s);
            machines[machine].idle = false;
            machines[machine].free_at = start + length;
            running.push(RunningJob {
                id: usize::MAX - r,
                user: user_of(job),
                machine,
                started: start,
                estimates: est.iter().map(|e| e.map(|(s, _)| s)).collect(),
            });
        }
        let mut pending: Vec<PendingJob> = Vec::new();
        // Which record of the snapshot each pending id belongs to.
        let mut record_of: HashMap<usize, usize> = HashMap::new();
        for (i, job) in snap.pending.iter().enumerate() {
            if self.refused.contains_key(&job.job_id) || !estimates[i].iter().any(Option::is_some) {
                continue;
            }
            let user = user_of(job);
            for task in 0..job.tasks.max(1) {
                let id = pending_id(job.job_id, task);
                record_of.insert(id, i);
                pending.push(PendingJob {
                    id,
                    user,
                    arrival: job.submit,
                    estimates: estimates[i].iter().map(|e| e.map(|(s, _)| s)).collect(),
                });
            }
        }
        let usable = |record: usize, node: usize| {
            snap.pending[record]
                .usable_nodes
                .as_ref()
                .is_none_or(|nodes| nodes.contains(&node))
        };

        let weights: Vec<f64> = weights.into_iter().map(|w| w.unwrap_or(1.0)).collect();
        let attained: Vec<f64> = users
            .iter()
            .map(|u| self.attained.get(u).copied().unwrap_or(0.0))
            .collect();
        // Per snapshot record, the slots its tasks start on.
        let mut starts: HashMap<usize, Vec<usize>> = HashMap::new();
        // Ask again at the same instant while jobs start, as the simulator
        // does, so fairness scores see the jobs just started.
        loop {
            let view = View {
                now: snap.now,
                flavors: &model.flavors,
                machines: &machines,
                pending: &pending,
                running: &running,
                user_weights: &weights,
                attained: &attained,
            };
            let decided = if pending.is_empty() || !machines.iter().any(|m| m.idle) {
                Vec::new()
            } else {
                self.policy.decide(&view).unwrap_or_else(|e| {
                    log::error!("policy failed: {e}; jobs stay pending");
                    Vec::new()
                })
            };
            if decided.is_empty() {
                // The shares users hold from now until the next plan.
                self.rates = users.iter().cloned().zip(usage_scores(&view)).collect();
                break;
            }
            let mut index_of: HashMap<usize, usize> =
                pending.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
            for s in decided {
                let Some(p) = index_of.remove(&s.job) else {
                    continue;
                };
                if let Some(last) = pending.last().filter(|_| p + 1 < pending.len()) {
                    index_of.insert(last.id, p); // swap_remove moves it to p
                }
                let record = record_of[&s.job];
                let flavor = machines[s.machine].flavor;
                // The matching knows flavors, not the nodes a job may use
                // (--exclude, --nodelist): take an idle slot of the same
                // flavor on a usable node, or let the job wait this round.
                let machine = if usable(record, model.slots[s.machine].node) {
                    Some(s.machine)
                } else {
                    (0..machines.len()).find(|&m| {
                        machines[m].idle
                            && machines[m].flavor == flavor
                            && usable(record, model.slots[m].node)
                    })
                };
                let job = pending.swap_remove(p);
                let (Some(machine), Some(length)) = (machine, job.estimates[flavor]) else {
                    continue;
                };
                if !machines[machine].idle {
                    continue;
                }
                machines[machine].idle = false;
                machines[machine].free_at = snap.now + length;
                running.push(RunningJob {
                    id: job.id,
                    user: job.user,
                    machine,
                    started: snap.now,
                    estimates: job.estimates,
                });
                starts.entry(record).or_default().push(machine);
            }
        }

        let mut decisions = Vec::new();
        for (i, job) in snap.pending.iter().enumerate() {
            let note = self.note(job, &hints[i], &estimates[i], &model);
            let slots = starts.remove(&i).unwrap_or_default();
            for &m in &slots {
                let slot = &model.slots[m];
                self.proposed.entry(job.job_id).or_default().push_back(m);
                decisions.push(Decision {
                    job_id: job.job_id,
                    action: Action::Start {
                        partition: model.flavors[slot.flavor].name.clone(),
                        node: snap.nodes[slot.node].name.clone(),
                        gpus: u32::from(slot.gpu),
                    },
                    reason: String::new(),
                    note: note.clone(),
                });
            }
            if slots.len() < job.tasks.max(1) as usize {
                let reason = if self.refused.contains_key(&job.job_id) {
                    String::new() // Slurm's own reason for the refusal
                } else {
                    wait_reason(&model, &hints[i], &estimates[i])
                };
                decisions.push(Decision {
                    job_id: job.job_id,
                    action: Action::Wait,
                    reason,
                    note: if slots.is_empty() { note } else { None },
                });
            }
        }
        decisions
    }

    /// Whom `job` counts for in fair share (its user or its account, as
    /// configured), and that association's shares where accounting has them.
    fn fair_share<'j>(&self, job: &'j JobInfo) -> (&'j str, Option<f64>) {
        match self.config.fairshare_by {
            FairshareBy::User => (&job.user, job.user_shares),
            FairshareBy::Account => (&job.account, job.account_shares),
        }
    }

    /// Estimate per model flavor for `job`; `None` where it may not run.
    fn estimates(
        &self,
        model: &SlotModel,
        job: &JobInfo,
        hint: &Hint,
    ) -> Vec<Option<(f64, Source)>> {
        model
            .flavors
            .iter()
            .zip(&model.gpu_flavor)
            .zip(&model.flavor_nodes)
            .map(|((f, &gpu), nodes)| {
                let reachable = job
                    .usable_nodes
                    .as_ref()
                    .is_none_or(|usable| nodes.iter().any(|n| usable.contains(n)));
                if !job.partitions.contains(&f.name) || (job.needs_gpu && !gpu) || !reachable {
                    return None;
                }
                let (s, source) = if let Some(s) = hint.estimate(&f.name) {
                    (s, Source::Hint)
                } else if let Some(s) = job.time_limit {
                    (s, Source::TimeLimit)
                } else if let Some(s) = self.history.mean(&job.user, &job.name, &f.name) {
                    (s, Source::History)
                } else {
                    (self.config.default_runtime, Source::Default)
                };
                Some((s.max(MIN_PLANNED_SECONDS), source))
            })
            .collect()
    }

    /// The admin note for a job whose hint was missing or faulty, once.
    fn note(
        &mut self,
        job: &JobInfo,
        hint: &Hint,
        est: &[Option<(f64, Source)>],
        model: &SlotModel,
    ) -> Option<String> {
        let fell_back = est.iter().flatten().any(|(_, s)| *s != Source::Hint);
        if !fell_back || self.noted.contains(&job.job_id) {
            return None;
        }
        self.noted.insert(job.job_id);
        let mut why = hint.problems.clone();
        if !hint.present && why.is_empty() {
            why.push("no 'fairmatch: flavor=duration' hint in the comment".into());
        }
        if why.is_empty() {
            why.push("hint names only some of the job's partitions".into());
        }
        Some(truncate(format!(
            "fairmatch: {}; using {}",
            why.join("; "),
            describe(model, est)
        )))
    }
}

fn wait_reason(model: &SlotModel, hint: &Hint, est: &[Option<(f64, Source)>]) -> String {
    if est.iter().all(Option::is_none) {
        return "fairmatch: none of the job's partitions has slots".into();
    }
    let mut reason = format!("fairmatch: queued; {}", describe(model, est));
    if !hint.problems.is_empty() {
        reason.push_str("; hint: ");
        reason.push_str(&hint.problems.join("; "));
    }
    truncate(reason)
}

fn describe(model: &SlotModel, est: &[Option<(f64, Source)>]) -> String {
    model
        .flavors
        .iter()
        .zip(est)
        .filter_map(|(f, e)| e.map(|(s, src)| format!("{}={}s ({})", f.name, s, src.label())))
        .collect::<Vec<_>>()
        .join(" ")
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_REASON {
        let mut cut = MAX_REASON - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}
