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
//! [`RETRY_AFTER`] seconds, so its slot goes to someone else. A refusal
//! for want of resources marks that node full for that partition
//! ([`FullNodes`]), and the job is planned again at once elsewhere.

use super::config::{Config, FairshareBy, PreemptMode};
use super::estimates::{self, Estimates, InFlight, Source};
use super::full_nodes::{FullNodes, Occupants};
use super::hints::{self, Hint};
use super::history::History;
use super::hostlist;
use super::preempting::{Preempting, LEAVES_AFTER};
use super::priority;
use super::reasons;
use super::saved_state::{self, SavedState};
use super::shapes;
use super::slots::SlotModel;
use super::snapshot::{
    Action, Checked, Decision, FinishedJob, JobInfo, Outcome, Preemption, Snapshot,
};
use super::view::{self, PlanMemory, SnapshotView};
use super::window::{self, Ranked};
use crate::policy::allox::Allox;
use crate::policy::decision_loop::Driver;
use crate::policy::decision_loop::{self, NamedService};
use crate::policy::{Forecast, Policy};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};

/// Seconds a job Slurm refused to start sits out of the plans.
pub const RETRY_AFTER: f64 = 2.0;

/// A start past the check window is written again once the plan's is
/// this many seconds off the one Slurm shows, and [`SHOWN_MOVES_SHARE`]
/// of the time left until it.
const SHOWN_MOVES_BY: f64 = 1.0;
/// See [`SHOWN_MOVES_BY`].
const SHOWN_MOVES_SHARE: f64 = 0.05;
/// Starts past the check window written per plan, at most: each is a
/// store to a job record under slurmctld's locks (about half a
/// microsecond with its lookup), and a queue of thousands drifts a little
/// at every cycle.
const SHOWN_PER_PLAN: usize = 256;

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
    allox.solver = config.solver;
    allox.candidate_rule = config.candidate_rule;
    if let Err(e) = allox.set_stickiness(config.stickiness) {
        log::error!("{e}; keeping {}", allox.stickiness);
    }
    allox.max_wait = config.max_wait;
    allox.preemption = match config.preempt {
        PreemptMode::Off => None,
        mode => Some(crate::policy::allox::Preemption {
            round: config.preempt_round,
            min_run: config.preempt_min_run,
            for_gain: mode == PreemptMode::Gain,
            // A requeued job may not start again before Slurm's delay:
            // the stopped job loses it beyond the restart itself.
            restart: crate::policy::allox::Preemption::default().restart + config.requeue_delay,
            ..crate::policy::allox::Preemption::default()
        }),
    };
}

/// Plans which pending Slurm jobs start where, cycle after cycle, with AlloX
/// over the snapshot's slots.
pub struct Planner {
    config: Config,
    /// Kept across plans: it remembers the previous plan for stickiness.
    policy: Allox,
    history: History,
    /// The jobs Slurm started for this planner: precise start time (Slurm
    /// keeps whole seconds) and the slot of the model, so a running job
    /// keeps its slot from one plan to the next and plans can stick to
    /// slots.
    started: HashMap<u32, (f64, Vec<usize>)>,
    /// The last plan's starts per Slurm job, in decision order, until
    /// their outcomes arrive.
    proposed: HashMap<u32, VecDeque<Proposal>>,
    /// Jobs Slurm refused to start, and until when they sit out.
    refused: HashMap<u32, f64>,
    /// Nodes Slurm found full for a partition though the model did not.
    full: FullNodes,
    /// Jobs whose hint problems were already reported.
    noted: HashSet<u32>,
    /// Per fair-share key: attained service, at the rates of the last plan.
    service: NamedService,
    /// The preemptions under way.
    preempting: Preempting,
    /// Per fair-share key, Slurm's decayed usage per share, where
    /// priority/multifactor keeps it (this plan's snapshot): it stands for
    /// `service` then, so fairness is what `sshare` shows and survives
    /// restarts with Slurm's own state.
    slurm_usage: HashMap<String, f64>,
    /// The latest end time of the finished jobs learned: after a restart
    /// the shim reports again the jobs slurmctld still lists, and those
    /// that ended by then were learned before it (and saved).
    learned_through: f64,
    /// Runs read from accounting at the first start, learned at the next
    /// plan (which names their flavors from its snapshot).
    from_accounting: Vec<FinishedJob>,
}

/// Runs from accounting held for the next plan, at most.
pub const MAX_ACCOUNTING_RUNS: usize = 200_000;

pub use super::estimates::MIN_PLANNED_SECONDS;

/// A start the last plan proposed: the model's slots, and where they are.
struct Proposal {
    slots: Vec<usize>,
    partition: String,
    node: String,
    /// What ran on the node when it was proposed; `None` where a busy
    /// answer says nothing of the node: a job that may preempt is busy
    /// until Slurm preempts, and that answer changes with time alone.
    occupants: Option<Occupants>,
}

/// Users (or accounts) remembered for attained service, at most.
const MAX_USERS: usize = 10_000;

impl Planner {
    /// A planner with no history and no previous plan.
    pub fn new(config: Config) -> Self {
        Planner {
            policy: policy_for(&config),
            config,
            history: History::default(),
            started: HashMap::new(),
            proposed: HashMap::new(),
            refused: HashMap::new(),
            full: FullNodes::default(),
            noted: HashSet::new(),
            service: NamedService::default(),
            preempting: Preempting::default(),
            slurm_usage: HashMap::new(),
            learned_through: 0.0,
            from_accounting: Vec::new(),
        }
    }

    /// How far back accounting should be read, in seconds: the configured
    /// `LearnFromAccounting` while nothing is learned (a first start, or a
    /// lost state file); `None` otherwise.
    pub fn accounting_wanted(&self) -> Option<f64> {
        self.config
            .learn_from_accounting
            .filter(|_| self.history.is_empty() && self.learned_through == 0.0)
    }

    /// Holds runs read from accounting for the next plan to learn, before
    /// the jobs slurmctld itself lists (which are then learned only if
    /// they ended later). Past [`MAX_ACCOUNTING_RUNS`] the rest is dropped;
    /// returns how many were taken.
    pub fn add_accounting_runs(&mut self, runs: Vec<FinishedJob>) -> usize {
        let room = MAX_ACCOUNTING_RUNS.saturating_sub(self.from_accounting.len());
        let taken = runs.len().min(room);
        self.from_accounting.extend(runs.into_iter().take(taken));
        taken
    }

    /// The settings it plans with.
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

    /// What it learned, as the text of a state file (see
    /// [`super::saved_state`]): attained service and learned run times.
    pub fn saved_state(&self) -> String {
        let (service, until) = self.service.entries();
        saved_state::encode(&SavedState {
            service: service
                .into_iter()
                .map(|(n, s)| (n.to_string(), s))
                .collect(),
            service_until: until.unwrap_or(0.0),
            history: self.history.entries(),
            learned_through: self.learned_through,
        })
    }

    /// Per fair-share key of `snap`'s jobs, Slurm's usage divided by the
    /// key's shares (1 without); empty where Slurm keeps no usage.
    fn slurm_usage_of(&self, snap: &Snapshot) -> HashMap<String, f64> {
        // Per key, per association (a user's in each of its accounts):
        // its usage per share. A user of several accounts has the sum.
        let mut by_assoc: HashMap<(Cow<str>, &str), f64> = HashMap::new();
        for job in snap.pending.iter().chain(&snap.running) {
            let (key, shares) = self.fair_share(job);
            let (usage, assoc) = match self.config.fairshare_by {
                FairshareBy::User => (
                    job.user_usage.map(|raw| raw / shares.unwrap_or(1.0)),
                    job.account.as_str(),
                ),
                FairshareBy::Account => {
                    (job.account_usage.map(|raw| raw / shares.unwrap_or(1.0)), "")
                }
                // Slurm ranked the associations already (higher is less
                // served), shares and the account tree counted.
                FairshareBy::Tree => (job.fair_share_factor.map(|f| 1.0 - f), ""),
            };
            // Jobs Slurm's checks did not reach this cycle carry none.
            if let Some(usage) = usage {
                by_assoc.insert((key, assoc), usage);
            }
        }
        let mut usage: HashMap<String, f64> = HashMap::new();
        for ((key, _), u) in by_assoc {
            *usage.entry(key.into_owned()).or_default() += u;
        }
        usage
    }

    /// The time of the last plan (0 before the first).
    pub fn last_now(&self) -> f64 {
        self.service.entries().1.unwrap_or(0.0)
    }

    /// Takes back what a state file holds, replacing what this planner
    /// learned so far; the service decays from the time it was saved to
    /// the next plan. Says what it took, or why the text was refused (the
    /// planner then keeps what it had).
    pub fn restore(&mut self, text: &str) -> Result<String, String> {
        let state = saved_state::decode(text)?;
        let summary = format!(
            "{} learned run times and the service of {} users or accounts, saved at {:.0}",
            state.history.len(),
            state.service.len(),
            state.service_until
        );
        self.history = History::restored(state.history);
        self.learned_through = state.learned_through;
        self.service = NamedService::restored(&state.service, state.service_until);
        Ok(summary)
    }

    /// What Slurm made of the last plan's starts, in decision order.
    pub fn observe(&mut self, outcomes: &[Outcome]) {
        for o in outcomes {
            if o.preemption {
                let retry = self.config.preempt_min_run.max(self.config.preempt_round);
                self.preempting.observe(o, retry);
                continue;
            }
            let proposal = self
                .proposed
                .get_mut(&o.job_id)
                .and_then(VecDeque::pop_front);
            match &o.result {
                Ok(running_id) => {
                    if let Some(p) = proposal {
                        self.started.insert(*running_id, (o.at, p.slots));
                    }
                }
                Err(refusal) => {
                    log::debug!("job {} not started: {}", o.job_id, refusal.reason);
                    // A node without the resources is full for that
                    // partition, and the job is tried elsewhere at once; a
                    // limit (QOS, association, licenses) holds for a while.
                    if !refusal.busy {
                        self.refused.insert(o.job_id, o.at + RETRY_AFTER);
                    } else if let Some(p) = proposal {
                        if let Some(occupants) = p.occupants {
                            self.full.refused(&p.partition, &p.node, occupants, o.at);
                        }
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
        let model = SlotModel::build(&self.config, snap, &self.full);
        let in_flight = InFlight::of(snap, &model);
        let keys = model.hint_keys();
        let mut usable = vec![false; model.flavors.len()];
        for slot in &model.slots {
            usable[slot.flavor] = true;
        }
        // With alpha 1 every user is eligible in every pool (AlloX's
        // fairness rule): one group for all.
        // A priority class is planned on its own (`policy::priority_classes`),
        // so each class has its own groups.
        let per_user = self.policy.alpha() < 1.0;
        let classes = priority::classes(snap, self.config.priority_tiers);
        let mut groups: HashMap<(u32, Cow<str>), usize> = HashMap::new();
        let ranked: Vec<Ranked> = snap
            .pending
            .iter()
            .zip(&classes)
            .map(|(job, &class)| {
                // A refused job sits out the plan, and a blocked one is
                // not ranked: neither needs its hint read.
                let estimates =
                    if self.refused.contains_key(&job.job_id) || job.checked == Checked::Blocked {
                        vec![None; model.flavors.len()]
                    } else {
                        let hint = hints::of_job(&job.comment, job.hint_option.as_deref(), &keys);
                        self.pending_estimates(&model, job, &hint, &in_flight)
                            .into_iter()
                            .map(|e| e.map(|(s, _)| s))
                            .collect()
                    };
                let next = groups.len();
                let party = if per_user {
                    self.fair_share(job).0
                } else {
                    Cow::Borrowed("")
                };
                let group = *groups.entry((class, party)).or_insert(next);
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
                    arrival: job.eligible,
                    group,
                    estimates,
                }
            })
            .collect();
        // A cycle starts at most one job per slot, and each start may drop
        // one job matched to its slot (see `window`).
        let quota = cap.saturating_add(2 * model.slots.len());
        let mut check = window::to_check(&ranked, quota, self.config.candidate_rule, &usable);
        // A gang no flavor holds ranks nowhere, but its check lets the
        // plan hand it to the first-come pass (`shapes::only_across_types`).
        check.extend((0..snap.pending.len()).filter(|&i| {
            let job = &snap.pending[i];
            job.checked == Checked::Not
                && ranked[i].estimates.iter().all(Option::is_none)
                && !self.refused.contains_key(&job.job_id)
                && shapes::only_across_types(job, &model)
        }));
        check.sort_unstable();
        check.dedup();
        check
    }

    /// Learns the run times of jobs that finished. [`Planner::plan`] does
    /// this first; a cycle that plans nothing (every CPU held) calls it
    /// alone, so no ending is missed while no plan runs.
    pub fn learn(&mut self, snap: &Snapshot) {
        let mut from_accounting = std::mem::take(&mut self.from_accounting);
        from_accounting.sort_by(|a, b| a.end.total_cmp(&b.end));
        // Accounting's runs first: the jobs slurmctld still lists that
        // accounting already had end by their latest end, and are skipped.
        let mut new: Vec<&FinishedJob> = from_accounting.iter().collect();
        let through = new
            .iter()
            .map(|f| f.end)
            .fold(self.learned_through, f64::max);
        // The shim reports each finished job once per life of slurmctld, in
        // batches that hold every job of an end second; so what ended by
        // the latest end learned was learned, before a restart if not now.
        new.extend(
            snap.finished
                .iter()
                .filter(|f| f.end <= 0.0 || f.end > through),
        );
        if !new.is_empty() {
            let model = SlotModel::build(&self.config, snap, &self.full);
            // By name once: a first start may learn 200,000 runs.
            let node_index = snap.node_index();
            for f in &new {
                let flavor = learned_flavor(&model, snap, &node_index, f);
                self.history.record(&f.user, &f.name, flavor, f.seconds);
            }
            self.history.refresh_ratios();
        }
        let latest = new
            .iter()
            .map(|f| f.end)
            .fold(self.learned_through, f64::max);
        self.learned_through = latest;
    }

    /// Decides every runnable pending job of `snap`: start now (where) or
    /// wait (why). Records not checked, or held back by Slurm, get no
    /// decision: they keep the reason they have.
    pub fn plan(&mut self, snap: &Snapshot) -> Vec<Decision> {
        self.learn(snap);
        self.forget_gone(snap);
        // Classes from every pending record, as `to_check` ranks them, so
        // the window and the plan agree on each job's class.
        let classes: Vec<u32> = priority::classes(snap, self.config.priority_tiers)
            .into_iter()
            .zip(&snap.pending)
            .filter(|(_, j)| j.checked == Checked::Runnable)
            .map(|(c, _)| c)
            .collect();
        let full = snap;
        let runnable = runnable_only(snap);
        let snap = runnable.as_ref();
        self.service
            .accrue(snap.now, self.config.fairshare_half_life);
        self.slurm_usage = self.slurm_usage_of(snap);
        if self.service.len() > MAX_USERS {
            self.service.forget_least_served(MAX_USERS / 2);
        }
        let model = SlotModel::build(&self.config, snap, &self.full);
        let in_flight = InFlight::of(snap, &model);
        let keys = model.hint_keys();
        let hints: Vec<Hint> = snap
            .pending
            .iter()
            .map(|j| hints::of_job(&j.comment, j.hint_option.as_deref(), &keys))
            .collect();
        let estimates: Vec<Estimates> = snap
            .pending
            .iter()
            .zip(&hints)
            .map(|(job, hint)| self.pending_estimates(&model, job, hint, &in_flight))
            .collect();
        let mut view = SnapshotView::build(self, snap, &model, &estimates, &classes);
        let preemptions = self.preempt(snap, &mut view);
        let rates = decision_loop::decide_until_settled(&mut self.policy, &mut view)
            .unwrap_or_else(|never| match never {});
        // The shares users hold from now until the next plan.
        self.service.set_rates(&view.users, &rates);
        let waits_for_resources: Vec<bool> = (0..snap.pending.len())
            .map(|i| {
                // A job no flavor can hold is told why, not "Resources".
                estimates[i].iter().any(Option::is_some)
                    && !view.idle_slots().any(|m| {
                        let slot = &model.slots[m];
                        estimates[i][slot.flavor].is_some() && view.usable(i, slot.node)
                    })
            })
            .collect();
        // The records Slurm's checks have not looked at follow the plan
        // in the forecast, as if they pass them.
        let mut more = view.pending_jobs().to_vec();
        let mut unchecked: HashMap<u32, Option<f64>> = HashMap::new();
        for job in full.pending.iter().filter(|j| self.unchecked(j)) {
            unchecked.insert(job.job_id, job.shown_start);
            let hint = hints::of_job(&job.comment, job.hint_option.as_deref(), &keys);
            let estimates = self.pending_estimates(&model, job, &hint, &in_flight);
            if estimates.iter().any(Option::is_some) {
                more.extend(view.outside(job, &estimates));
            }
        }
        let forecasts = self.policy.forecast(&more);
        let forecast = forecast_of(&forecasts, &view, snap.now, model.flavors.len());
        let waits = Waits {
            hints: &hints,
            estimates: &estimates,
            for_resources: &waits_for_resources,
            forecast: &forecast,
        };
        let unchecked = unchecked_starts(&forecasts, &view, &unchecked, snap.now);
        let mut decisions = self.decisions(snap, &model, waits, view.starts);
        decisions.extend(unchecked);
        decisions.extend(preemptions);
        decisions
    }

    /// Estimate per model flavor for pending `job`, raised to what a run
    /// of the same job in flight has run (`in_flight`).
    fn pending_estimates(
        &self,
        model: &SlotModel,
        job: &JobInfo,
        hint: &Hint,
        in_flight: &InFlight,
    ) -> Estimates {
        estimates::of_job(
            model,
            job,
            hint,
            &self.history,
            self.config.default_runtime,
            in_flight,
        )
    }

    /// A pending record Slurm's checks have not looked at this cycle (past
    /// the window), nor refused lately.
    fn unchecked(&self, job: &JobInfo) -> bool {
        job.checked == Checked::Not && !self.refused.contains_key(&job.job_id)
    }

    /// The running jobs to stop now: those whose `--signal` notice is over,
    /// then, unless a preemption is under way, the policy's choice among
    /// the preemptible ones (see `Planner::preemptible`). Their slots are
    /// free soon after in `view`, so the plan holds the overdue job there.
    /// Each counts once Slurm's answer comes ([`Planner::observe`]).
    fn preempt(&mut self, snap: &Snapshot, view: &mut SnapshotView<'_>) -> Vec<Decision> {
        let now = snap.now;
        let mut out = Vec::new();
        let waiting: HashSet<u32> = snap.pending.iter().map(|j| j.job_id).collect();
        let spare = self.config.preempt_min_run.max(self.config.preempt_round);
        for (id, for_job) in self.preempting.due(now) {
            if let Some(started) = for_job.filter(|w| !waiting.contains(w)) {
                log::info!(
                    "requeue of job {id} cancelled: job {started}, which it was preempted \
                     for, no longer waits"
                );
                self.preempting.cancel(id, now + spare);
                continue;
            }
            self.preempting.ask(id, None, for_job);
            out.push(preemption(id, false));
        }
        // One at a time: the waiting job a preemption is for holds the
        // slot coming free, and a second round before it is free would
        // find it still waiting and stop another job for it.
        if self.config.preempt == PreemptMode::Off || self.preempting.under_way() {
            return out;
        }
        let policy = &mut self.policy;
        let stop = view.with_view(|v| policy.preempt(v)).unwrap_or_else(|e| {
            log::error!("preemption failed: {e}; nothing preempted");
            Vec::new()
        });
        for id in stop {
            let Some(r) = view.running_record(id) else {
                continue;
            };
            let for_job = policy
                .stopped_for(id)
                .and_then(|w| view.pending_record(w))
                .map(|w| snap.pending[w].job_id);
            let job = &snap.running[r];
            let notice = job
                .notice
                .map(|s| s.min(self.config.preempt_grace))
                .filter(|s| *s > 0.0);
            log::info!(
                "preempting job {} for a waiting job{}",
                job.job_id,
                notice.map_or(String::new(), |s| format!(", after {s} s of notice"))
            );
            self.preempting
                .ask(job.job_id, notice.map(|s| now + s), for_job);
            view.leaves(id, now + notice.unwrap_or(0.0) + LEAVES_AFTER);
            out.push(preemption(job.job_id, notice.is_some()));
        }
        out
    }

    /// Forgets what it kept of jobs that left, and refusals that expired.
    fn forget_gone(&mut self, snap: &Snapshot) {
        let live: HashSet<u32> = snap
            .pending
            .iter()
            .chain(&snap.running)
            .map(|j| j.job_id)
            .collect();
        // Only running jobs keep their start: a requeued one starts anew.
        let running: HashSet<u32> = snap.running.iter().map(|j| j.job_id).collect();
        self.started.retain(|id, _| running.contains(id));
        self.preempting.forget_gone(snap);
        self.noted.retain(|id| live.contains(id));
        self.refused
            .retain(|id, until| live.contains(id) && *until > snap.now);
        self.full.forget_changed(snap);
        self.proposed.clear();
    }

    /// One decision per start (remembered until Slurm's answer comes), and
    /// a wait with its reason for each record with tasks left unstarted:
    /// Slurm's `Resources` where no slot it may use is free
    /// (`waits.for_resources`), the plan's queue otherwise, with the
    /// plan's start where it placed the job.
    fn decisions(
        &mut self,
        snap: &Snapshot,
        model: &SlotModel,
        waits: Waits<'_>,
        mut starts: HashMap<usize, Vec<Vec<usize>>>,
    ) -> Vec<Decision> {
        let Waits {
            hints,
            estimates,
            for_resources: waits_for_resources,
            forecast,
        } = waits;
        let mut decisions = Vec::new();
        for (i, job) in snap.pending.iter().enumerate() {
            let note = self.note(job, &hints[i], &estimates[i], model);
            let slots = starts.remove(&i).unwrap_or_default();
            for taken in &slots {
                let slot = &model.slots[taken[0]];
                let mut on: Vec<usize> = taken.iter().map(|&m| model.slots[m].node).collect();
                on.sort_unstable();
                on.dedup();
                let nodes: Vec<String> = on.iter().map(|&n| snap.nodes[n].name.clone()).collect();
                let (partition, node) = (model.partition[slot.flavor].clone(), nodes[0].clone());
                // On a node of several GPU types Slurm would give an
                // untyped request any of them: it is asked for the plan's.
                let gpu_type = model.gpu_type[slot.flavor]
                    .clone()
                    .filter(|_| slot.gpu && job.gpu_type.is_none())
                    .filter(|_| on.iter().any(|&n| snap.nodes[n].mixed()));
                let may_preempt = snap
                    .partitions
                    .iter()
                    .any(|p| p.name == partition && p.limits.preemption != Preemption::None);
                let occupants = (!may_preempt).then(|| Occupants::of(snap, &node)).flatten();
                self.proposed
                    .entry(job.job_id)
                    .or_default()
                    .push_back(Proposal {
                        slots: taken.clone(),
                        partition: partition.clone(),
                        node: node.clone(),
                        occupants,
                    });
                decisions.push(Decision {
                    job_id: job.job_id,
                    action: Action::Start {
                        partition,
                        gpus: if slot.gpu {
                            (taken.len() / nodes.len()) as u32
                        } else {
                            0
                        },
                        nodes,
                        gpu_type,
                    },
                    reason: String::new(),
                    for_resources: false,
                    note: note.clone(),
                    start_at: None,
                });
            }
            if slots.is_empty()
                && estimates[i].iter().all(Option::is_none)
                && shapes::only_across_types(job, model)
            {
                decisions.push(Decision {
                    job_id: job.job_id,
                    action: Action::FirstCome,
                    reason: String::new(),
                    for_resources: false,
                    note: None,
                    start_at: None,
                });
                continue;
            }
            if slots.len() < job.tasks.max(1) as usize {
                let refused = self.refused.contains_key(&job.job_id);
                let for_resources = !refused && slots.is_empty() && waits_for_resources[i];
                let reason = if refused || for_resources {
                    String::new() // Slurm's own reason for the refusal
                } else {
                    let planned = forecast
                        .get(&i)
                        .map(|&(_, f)| model.flavors[f].name.as_str());
                    reasons::wait_reason(model, &hints[i], &estimates[i], planned)
                };
                decisions.push(Decision {
                    job_id: job.job_id,
                    action: Action::Wait,
                    reason,
                    for_resources,
                    note: if slots.is_empty() { note } else { None },
                    start_at: forecast.get(&i).map(|&(at, _)| at),
                });
            }
        }
        // Slurm takes a job's shards from the first GPU with enough of
        // them: the GPUs the plan gives whole go first, so that the shard
        // jobs fill the GPUs it shares out, as `SnapshotView` applied them.
        let on_shards: HashSet<u32> = snap
            .pending
            .iter()
            .filter(|j| j.shards > 0)
            .map(|j| j.job_id)
            .collect();
        if !on_shards.is_empty() {
            decisions.sort_by_key(|d| on_shards.contains(&d.job_id));
        }
        decisions
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
        if (!fell_back && hint.problems.is_empty()) || self.noted.contains(&job.job_id) {
            return None;
        }
        self.noted.insert(job.job_id);
        let mut why = hint.problems.clone();
        if !hint.present && why.is_empty() {
            why.push(
                "no 'fairmatch: flavor=duration' hint in the comment, nor --fm-runtime".into(),
            );
        }
        if why.is_empty() {
            why.push("hint names only some of the job's partitions".into());
        }
        Some(reasons::note(&why, model, est))
    }
}

impl PlanMemory for Planner {
    /// Whom `job` counts for in fair share (its user or its account, as
    /// configured), and that association's shares where accounting has them.
    fn fair_share<'j>(&self, job: &'j JobInfo) -> (Cow<'j, str>, Option<f64>) {
        match self.config.fairshare_by {
            FairshareBy::User => (Cow::Borrowed(&job.user), job.user_shares),
            FairshareBy::Tree => (
                Cow::Owned(format!("{}/{}", job.account, job.user)),
                job.user_shares,
            ),
            FairshareBy::Account => (Cow::Borrowed(&job.account), job.account_shares),
        }
    }

    /// The slot model's time and slot for a job Slurm started on this
    /// planner's word.
    fn started(&self, job_id: u32) -> Option<(f64, &[usize])> {
        self.started
            .get(&job_id)
            .map(|(t, slots)| (*t, slots.as_slice()))
    }

    /// Whether Slurm refused `job_id` lately, so that it sits out.
    fn is_refused(&self, job_id: u32) -> bool {
        self.refused.contains_key(&job_id)
    }

    /// The attained service of a fair-share key: Slurm's usage where it
    /// keeps one, else what this planner counted.
    fn attained(&self, key: &str) -> f64 {
        // A key with no Slurm usage this cycle (none of its jobs were
        // checked) is not ranked by it: 0 would make it the least served.
        if self.slurm_usage.is_empty() {
            self.service.attained(key)
        } else {
            self.slurm_usage.get(key).copied().unwrap_or(f64::MAX)
        }
    }

    /// Estimate per model flavor for running `job`; `None` where it may
    /// not run. Runs in flight do not raise it: its own run would, and its
    /// estimates weigh its user's share of the cluster (`job_share`), which
    /// must not shrink as the job runs on.
    fn estimates(&self, model: &SlotModel, job: &JobInfo, hint: &Hint) -> Estimates {
        self.pending_estimates(model, job, hint, &InFlight::default())
    }

    fn default_runtime(&self) -> f64 {
        self.config.default_runtime
    }

    /// With preemption on, a running job may be preempted when Slurm may
    /// requeue it and it opted in (the hint's `preemptible`, or a QOS in
    /// `PreemptibleQOS`), unless it is being preempted or Slurm lately
    /// refused to (see [`Preempting`]). The
    /// policy adds the minimum run time since its start.
    fn preemptible(&self, job: &JobInfo, hint: &Hint) -> bool {
        self.config.preempt != PreemptMode::Off
            && job.requeue
            && (hint.preemptible
                || self
                    .config
                    .preemptible_qos
                    .iter()
                    .any(|q| q.eq_ignore_ascii_case(&job.qos)))
            && self.preempting.may_choose(job.job_id)
    }

    fn leaves_at(&self, job_id: u32) -> Option<f64> {
        self.preempting.leaves_at(job_id)
    }
}

/// The decision that preempts running job `job_id`.
/// What the plan knows of each pending record (by index) that decides
/// how its wait is shown.
struct Waits<'a> {
    hints: &'a [Hint],
    estimates: &'a [Estimates],
    /// No slot it may use is free.
    for_resources: &'a [bool],
    /// [`forecast_of`].
    forecast: &'a HashMap<usize, (f64, usize)>,
}

/// The policy's forecasts by pending record: the soonest of its tasks',
/// not before `now` (a job planned behind a run that overran its estimate
/// may start any moment), on a flavor this plan still has. The policy
/// keeps its last plan's between decisions; its ids are stable across
/// plans, so a cycle in which nothing could start shows the last plan's.
fn forecast_of(
    forecast: &[Forecast],
    view: &SnapshotView<'_>,
    now: f64,
    flavors: usize,
) -> HashMap<usize, (f64, usize)> {
    let mut out: HashMap<usize, (f64, usize)> = HashMap::new();
    for f in forecast
        .iter()
        .filter(|f| f.flavor < flavors && f.at.is_finite())
    {
        let Some(record) = view.pending_record(f.job) else {
            continue;
        };
        let at = f.at.max(now);
        let entry = out.entry(record).or_insert((at, f.flavor));
        if at < entry.0 {
            *entry = (at, f.flavor);
        }
    }
    out
}

/// The forecast start of each record the view does not hold (one Slurm's
/// checks have not looked at; `unchecked`: each one's start as Slurm shows
/// it now): a wait that keeps Slurm's reason, since nothing says yet that
/// its limits let it run, with the start it would get if they do (the
/// soonest of its tasks', not before `now`). Written only where it differs
/// from the start shown by a second and by 5% of the time left until it,
/// and at most [`SHOWN_PER_PLAN`] per plan: the ones showing none first,
/// soonest first, then those furthest off. A long queue would otherwise
/// cost a store per record at each cycle under slurmctld's locks, and a
/// start an hour away need not follow each second's drift. A record the
/// plan no longer places loses the start it shows.
fn unchecked_starts(
    forecast: &[Forecast],
    view: &SnapshotView<'_>,
    unchecked: &HashMap<u32, Option<f64>>,
    now: f64,
) -> Vec<Decision> {
    let mut soonest: HashMap<u32, f64> = HashMap::new();
    for f in forecast.iter().filter(|f| f.at.is_finite()) {
        let job_id = view::job_id_of(f.job);
        if view.pending_record(f.job).is_none() && unchecked.contains_key(&job_id) {
            let at = f.at.max(now);
            let entry = soonest.entry(job_id).or_insert(at);
            *entry = entry.min(at);
        }
    }
    // (how far off it is for the time left until it, start, job)
    let mut off: Vec<(f64, Option<f64>, u32)> = Vec::new();
    for (&job_id, &shown) in unchecked {
        match (shown, soonest.get(&job_id)) {
            (None, Some(&at)) => off.push((f64::INFINITY, Some(at), job_id)),
            (Some(_), None) => off.push((f64::INFINITY, None, job_id)),
            (Some(was), Some(&at)) => {
                let left = (was - now).max(SHOWN_MOVES_BY);
                let by = (at - was).abs();
                if by >= SHOWN_MOVES_BY.max(SHOWN_MOVES_SHARE * left) {
                    off.push((by / left, Some(at), job_id));
                }
            }
            (None, None) => {}
        }
    }
    off.sort_unstable_by(|a, b| {
        let at = |x: &(f64, Option<f64>, u32)| x.1.unwrap_or(f64::INFINITY);
        b.0.total_cmp(&a.0)
            .then(at(a).total_cmp(&at(b)))
            .then(a.2.cmp(&b.2))
    });
    off.truncate(SHOWN_PER_PLAN);
    let mut out: Vec<Decision> = off
        .into_iter()
        .map(|(_, start_at, job_id)| Decision {
            job_id,
            action: Action::Wait,
            reason: String::new(),
            for_resources: false,
            note: None,
            start_at,
        })
        .collect();
    out.sort_unstable_by_key(|d| d.job_id);
    out
}

fn preemption(job_id: u32, notice: bool) -> Decision {
    Decision {
        job_id,
        action: Action::Preempt { notice },
        reason: String::new(),
        for_resources: false,
        note: None,
        start_at: None,
    }
}

/// `snap` with only the pending records Slurm's checks found runnable.
fn runnable_only(snap: &Snapshot) -> Cow<'_, Snapshot> {
    if snap.pending.iter().all(|j| j.checked == Checked::Runnable) {
        return Cow::Borrowed(snap);
    }
    Cow::Owned(Snapshot {
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
    })
}

/// The flavor a finished job's run time is learned for: on nodes of one
/// GPU type of a partition split by type (one node, or a gang the plan
/// placed), `partition:type`; else its partition.
fn learned_flavor<'a>(
    model: &'a SlotModel,
    snap: &Snapshot,
    node_index: &HashMap<&str, usize>,
    job: &'a FinishedJob,
) -> &'a str {
    let mut flavors = hostlist::expand(&job.nodes, MAX_GANG_NODES)
        .into_iter()
        .map(|n| {
            node_index
                .get(n.as_str())
                .and_then(|&node| model.flavor_on(snap, &job.partition, node, None, job.shards))
        });
    let first = flavors.next().flatten();
    match first {
        Some(f) if flavors.all(|g| g == Some(f)) => &model.flavors[f].name,
        _ => &job.partition,
    }
}

/// The most nodes of a finished job looked at for its flavor.
const MAX_GANG_NODES: usize = 1024;
