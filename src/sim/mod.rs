//! Discrete-event simulation of a policy on a workload.
//!
//! Jobs arrive online; the policy is asked again after every batch of
//! simultaneous events (arrivals, completions, probe completions), and again
//! at the same instant for as long as it keeps starting jobs, so a fairness
//! score that changed with the last start is seen before idle machines are
//! given away. A job holds its width's slots (a gang, on as many nodes as
//! its width says) from its start to its end; only preemptive policies
//! stop one, all its slots at once. The policy sees estimates; the clock
//! runs on true durations.

mod estimates;

pub use estimates::{kind, past_runs, EstimateSource, PastRun, ESTIMATE_FLOOR};

use crate::metrics::{isolated_time, JobOutcome};
use crate::model::Scenario;
use crate::ordered::TotalF64 as Time;
use crate::policy::decision_loop::{self, AttainedService, Driver};
use crate::policy::{IdMap, MachineView, PendingJob, Policy, PolicyError, RunningJob, Start, View};
use crate::slurm::history::{self, History};
use crate::slurm::planner::MIN_PLANNED_SECONDS;
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;

/// How long fairmatch's profiling runs a job on each flavor before it may be
/// scheduled: a probe at 1% and one at 2% of its length, back to back.
pub const PROBE_FRACTION: f64 = 0.01 + 0.02;

/// AlloX's profiling probes per flavor, as fractions of the job's length:
/// two runs, each on a slot of its own.
pub const ALLOX_PROBES: [f64; 2] = [0.01, 0.02];

/// How jobs are profiled before they may be scheduled. Probes occupy
/// slots (they go before jobs) and delay the job; what the scheduler is
/// told afterwards is [`SimOptions::estimates`]: the probes cost time, they
/// do not replace an input's estimates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Profiling {
    /// No probes: jobs are schedulable on arrival.
    Off,
    /// One probe per flavor the job can use, `PROBE_FRACTION` of its
    /// length (1% and 2% back to back on one slot); the job is schedulable
    /// when its own probes are done.
    Fairmatch,
    /// As AlloX's simulator does: two probes per flavor ([`ALLOX_PROBES`]),
    /// each on a slot of its own and at least `min_probe` seconds (one time
    /// unit of the input); jobs that arrive together become schedulable
    /// together, when the last probe of the group is done.
    Allox {
        /// Seconds a probe lasts at least.
        min_probe: f64,
    },
}

/// How a simulation runs, apart from the policy.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// What the policy is told of each job's run times.
    pub estimates: EstimateSource,
    /// Profile every job on every flavor it can use before it is scheduled.
    pub profile: Profiling,
    /// Seconds every job holds its slot beyond its run time: the platform's
    /// launch and completion latency. Policies are not told; it is what a
    /// digital twin of a real cluster calibrates. 0 for an ideal cluster.
    pub job_overhead: f64,
    /// Seconds a preempted job loses each time it starts again (its
    /// checkpoint and restart): it holds its slots that long before its
    /// work resumes. Policies are not told. 0 for free preemption.
    pub preempt_overhead: f64,
}

/// What a simulation produced.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOutcome {
    /// One outcome per workload job, in workload order.
    pub jobs: Vec<JobOutcome>,
    /// Busy slot-seconds per flavor, probes included.
    pub busy: Vec<f64>,
    /// How many times the policy was asked.
    pub decisions: usize,
    /// Wall time the policy spent deciding: in all, and the longest single
    /// decision. Measured, so it varies between runs.
    pub decision_seconds: f64,
    /// See [`SimOutcome::decision_seconds`].
    pub decision_seconds_max: f64,
}

/// Why a simulation stopped before every job finished.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// The policy could not decide.
    Policy(PolicyError),
    /// The policy answered with a start that breaks the rules.
    InvalidStart {
        /// The start the policy asked for.
        start: Start,
        /// The rule it breaks.
        why: &'static str,
    },
    /// Jobs are waiting, nothing runs, and the policy starts nothing.
    Stalled {
        /// Simulated time of the stall.
        time: f64,
        /// Jobs waiting then.
        waiting: usize,
    },
    /// A job can run on no flavor that has slots.
    Unrunnable {
        /// The job's name from the input.
        job: String,
    },
    /// The scenario breaks the model's bounds ([`Scenario::validate`]).
    Invalid(String),
    /// The policy asked to preempt a job that is not running.
    InvalidPreemption {
        /// The id the policy gave, a [`crate::policy::RunningJob::id`].
        job: usize,
    },
    /// The clock ran past [`MAX_CLOCK`], where seconds lose precision.
    ClockOverflow {
        /// Simulated time when it did.
        time: f64,
    },
}

/// The simulated clock stops here: an `f64` second near 1e12 still has a
/// spacing of about 0.1 ms, so no reported time is off by more than that.
/// Only a schedule that runs serially through an enormous input reaches it
/// (every single time is at most [`crate::model::MAX_SECONDS`]).
pub const MAX_CLOCK: f64 = 1e12;

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Policy(e) => write!(f, "{e}"),
            SimError::InvalidStart { start, why } => write!(
                f,
                "policy tried to start job {} on machine {}: {why}",
                start.job, start.machine
            ),
            SimError::Stalled { time, waiting } => write!(
                f,
                "stalled at t={time}: {waiting} jobs wait, nothing runs and the policy starts nothing"
            ),
            SimError::Unrunnable { job } => {
                write!(f, "job {job} can run on no flavor that has slots")
            }
            SimError::Invalid(e) => write!(f, "invalid scenario: {e}"),
            SimError::InvalidPreemption { job } => {
                write!(f, "policy tried to preempt job {job}, which is not running")
            }
            SimError::ClockOverflow { time } => write!(
                f,
                "the schedule runs past t={time:e} s (the limit is {MAX_CLOCK:e} s, beyond which seconds lose precision)"
            ),
        }
    }
}

impl std::error::Error for SimError {}

impl From<PolicyError> for SimError {
    fn from(e: PolicyError) -> Self {
        SimError::Policy(e)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A machine finishes its job or probe. Completions sort before
    /// arrivals at the same instant, so freed machines are seen at once.
    /// `epoch` is the machine's count of preemptions when the run began: a
    /// run that was preempted leaves a stale event, which is ignored.
    Free {
        machine: usize,
        epoch: u64,
    },
    Arrive(usize),
    /// The policy asked to be asked again now ([`Policy::wake_at`]).
    Wake,
}

/// (user, job kind) -> per flavor, how long its longest run in flight
/// there has run.
type RunsInFlight<'a> = HashMap<(usize, &'a str), Vec<Option<f64>>>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Busy {
    Idle,
    /// `fraction`: the share of the job's work left when this run began
    /// (1 unless it was preempted before).
    Job {
        job: usize,
        started: f64,
        fraction: f64,
        /// Seconds of restart before its work resumes (see
        /// [`SimOptions::preempt_overhead`]).
        restart: f64,
    },
    Probe {
        job: usize,
        until: f64,
    },
}

struct Sim<'a> {
    scenario: &'a Scenario,
    estimates: Vec<Vec<Option<f64>>>,
    machine_flavor: Vec<usize>,
    machine_node: Vec<usize>,
    machines: Vec<Busy>,
    /// Per job, the slots of its current run not yet freed.
    slots_held: Vec<usize>,
    events: BinaryHeap<Reverse<(Time, Event, u64)>>,
    seq: u64,
    pending: Vec<PendingJob>,
    probes: Vec<VecDeque<(usize, f64)>>,
    /// Per job, its profiling group: itself, or under AlloX's profiling
    /// every job that arrives at the same instant.
    group_of: Vec<usize>,
    /// Per group: its jobs and how many of their probes are unfinished.
    group_jobs: Vec<Vec<usize>>,
    probes_left: Vec<usize>,
    outcomes: Vec<Option<JobOutcome>>,
    busy: Vec<f64>,
    times: DecisionTimes,
    /// Per machine, how many runs on it were preempted (see `Event::Free`).
    epochs: Vec<u64>,
    /// Per job, the share of its work left, and when it first started.
    remaining: Vec<f64>,
    first_start: Vec<Option<f64>>,
    /// Per job, the first start a planning policy forecast for it while
    /// it waited ([`Policy::forecast`]).
    forecast: Vec<Option<f64>>,
    /// Per job: since when it waits (its arrival, or its last
    /// preemption), its longest wait so far, and its preemptions.
    waiting_since: Vec<f64>,
    longest_wait: Vec<f64>,
    preemptions: Vec<u32>,
    /// The wake-up already queued, so a policy's repeated request is
    /// queued once.
    next_wake: Option<f64>,
    done: usize,
    job_overhead: f64,
    preempt_overhead: f64,
    /// Slots per flavor, and the users that have jobs: the `1/N` share of
    /// finish-time fairness.
    slots: Vec<usize>,
    users_with_jobs: usize,
    /// Per user: the fair-share score integrated over time so far.
    service: AttainedService,
    /// With [`EstimateSource::Learned`]: the run times learned from the
    /// jobs finished so far, and the estimate when nothing is known.
    learned: Option<(History, f64)>,
}

/// How often the policy was asked, and the wall time it took (the view's
/// construction included): in all and the longest single answer.
#[derive(Clone, Copy, Debug, Default)]
struct DecisionTimes {
    decisions: usize,
    seconds: f64,
    longest: f64,
}

impl DecisionTimes {
    fn record(&mut self, seconds: f64) {
        self.seconds += seconds;
        self.longest = self.longest.max(seconds);
    }
}

/// Runs `policy` on `scenario`. `progress` is called with the number of
/// finished jobs after each completion.
pub fn simulate(
    scenario: &Scenario,
    policy: &mut dyn Policy,
    options: &SimOptions,
    progress: &mut dyn FnMut(usize),
) -> Result<SimOutcome, SimError> {
    check(scenario, options)?;
    let mut sim = Sim::new(scenario, options);
    sim.run(policy, options.profile, progress)?;
    Ok(sim.outcome())
}

/// Refuses a scenario or options the simulator cannot run: an invalid
/// scenario, overheads that are not seconds, a job no flavor can run.
fn check(scenario: &Scenario, options: &SimOptions) -> Result<(), SimError> {
    scenario
        .validate()
        .map_err(|e| SimError::Invalid(e.to_string()))?;
    if !(options.job_overhead.is_finite() && (0.0..=MAX_CLOCK).contains(&options.job_overhead)) {
        return Err(SimError::Invalid(format!(
            "job overhead {} must be a finite number of seconds >= 0",
            options.job_overhead
        )));
    }
    if !(options.preempt_overhead.is_finite()
        && (0.0..=MAX_CLOCK).contains(&options.preempt_overhead))
    {
        return Err(SimError::Invalid(format!(
            "preemption overhead {} must be a finite number of seconds >= 0",
            options.preempt_overhead
        )));
    }
    if let Profiling::Allox { min_probe } = options.profile {
        crate::model::check_seconds(min_probe, "minimum probe length")
            .map_err(|e| SimError::Invalid(e.to_string()))?;
    }
    let cluster = &scenario.cluster;
    for job in &scenario.workload.jobs {
        if job.fastest_flavor(cluster).is_none() {
            return Err(SimError::Unrunnable {
                job: job.name.clone(),
            });
        }
    }
    Ok(())
}

impl<'a> Sim<'a> {
    /// The simulation of a checked `scenario` before its first event,
    /// every arrival queued.
    fn new(scenario: &'a Scenario, options: &SimOptions) -> Self {
        let cluster = &scenario.cluster;
        let n = scenario.workload.jobs.len();
        let group_of = profiling_groups(scenario, options.profile);
        let mut group_jobs = vec![Vec::new(); group_of.iter().max().map_or(0, |g| g + 1)];
        for (j, &g) in group_of.iter().enumerate() {
            group_jobs[g].push(j);
        }
        let mut sim = Sim {
            scenario,
            estimates: options
                .estimates
                .resolve(&scenario.workload)
                .iter()
                .zip(&scenario.workload.jobs)
                .map(|(e, job)| cluster.fitting(e, job.width))
                .collect(),
            machine_flavor: cluster.machine_flavors(),
            machine_node: cluster.machine_nodes(),
            machines: vec![Busy::Idle; cluster.total_slots()],
            slots_held: vec![0; n],
            events: BinaryHeap::new(),
            seq: 0,
            pending: Vec::new(),
            probes: vec![VecDeque::new(); cluster.flavors.len()],
            probes_left: vec![0; group_jobs.len()],
            group_of,
            group_jobs,
            outcomes: vec![None; n],
            busy: vec![0.0; cluster.flavors.len()],
            times: DecisionTimes::default(),
            epochs: vec![0; cluster.total_slots()],
            remaining: vec![1.0; n],
            first_start: vec![None; n],
            forecast: vec![None; n],
            waiting_since: scenario.workload.jobs.iter().map(|j| j.arrival).collect(),
            longest_wait: vec![0.0; n],
            preemptions: vec![0; n],
            next_wake: None,
            done: 0,
            job_overhead: options.job_overhead.max(0.0),
            preempt_overhead: options.preempt_overhead,
            slots: cluster.flavors.iter().map(|f| f.slots).collect(),
            users_with_jobs: {
                let mut has = vec![false; scenario.workload.users.len()];
                for job in &scenario.workload.jobs {
                    has[job.user] = true;
                }
                has.iter().filter(|&&h| h).count()
            },
            service: AttainedService::new(scenario.workload.users.len()),
            learned: match options.estimates {
                EstimateSource::Learned { default, ref past } => {
                    let mut history = History::default();
                    for run in past {
                        history.record(&run.user, &run.job, &run.flavor, run.seconds);
                    }
                    history.refresh_ratios();
                    Some((history, default))
                }
                _ => None,
            },
        };
        for (j, job) in scenario.workload.jobs.iter().enumerate() {
            sim.push(job.arrival, Event::Arrive(j));
        }
        sim
    }

    /// Runs the events in time order: at each instant, every event of the
    /// instant, then the probes that may start, then the policy's
    /// decision.
    fn run(
        &mut self,
        policy: &mut dyn Policy,
        profile: Profiling,
        progress: &mut dyn FnMut(usize),
    ) -> Result<(), SimError> {
        while let Some(Reverse((Time(now), _, _))) = self.events.peek().copied() {
            if now > MAX_CLOCK {
                return Err(SimError::ClockOverflow { time: now });
            }
            self.service.accrue(now);
            while let Some(Reverse((Time(t), event, _))) = self.events.peek().copied() {
                if t != now {
                    break;
                }
                self.events.pop();
                self.handle(now, event, profile, progress);
            }
            self.start_probes(now);
            self.schedule(now, policy)?;
            let waiting = self.pending.len() + self.probes.iter().map(VecDeque::len).sum::<usize>();
            if self.events.is_empty() && waiting > 0 {
                return Err(SimError::Stalled { time: now, waiting });
            }
        }
        Ok(())
    }

    /// What the finished simulation reports.
    fn outcome(self) -> SimOutcome {
        SimOutcome {
            jobs: self
                .outcomes
                .into_iter()
                .map(|o| o.expect("every job finishes once the event queue drains"))
                .collect(),
            busy: self.busy,
            decisions: self.times.decisions,
            decision_seconds: self.times.seconds,
            decision_seconds_max: self.times.longest,
        }
    }
}

/// Each job's profiling group (see [`Profiling::Allox`]), numbered from 0.
fn profiling_groups(scenario: &Scenario, profile: Profiling) -> Vec<usize> {
    let jobs = &scenario.workload.jobs;
    if !matches!(profile, Profiling::Allox { .. }) {
        return (0..jobs.len()).collect();
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| jobs[a].arrival.total_cmp(&jobs[b].arrival));
    let mut group_of = vec![0; jobs.len()];
    let mut group = 0;
    for (i, &j) in order.iter().enumerate() {
        if i > 0 && jobs[j].arrival != jobs[order[i - 1]].arrival {
            group += 1;
        }
        group_of[j] = group;
    }
    group_of
}

impl<'a> Sim<'a> {
    fn push(&mut self, time: f64, event: Event) {
        self.seq += 1;
        self.events.push(Reverse((Time(time), event, self.seq)));
    }

    fn handle(
        &mut self,
        now: f64,
        event: Event,
        profile: Profiling,
        progress: &mut dyn FnMut(usize),
    ) {
        match event {
            Event::Arrive(j) => {
                let job = &self.scenario.workload.jobs[j];
                let group = self.group_of[j];
                for (f, flavor) in self.scenario.cluster.flavors.iter().enumerate() {
                    let (Some(p), true) = (job.durations[f], flavor.fits(job.width)) else {
                        continue;
                    };
                    match profile {
                        Profiling::Off => {}
                        Profiling::Fairmatch => {
                            self.probes[f].push_back((j, p * PROBE_FRACTION));
                            self.probes_left[group] += 1;
                        }
                        Profiling::Allox { min_probe } => {
                            for fraction in ALLOX_PROBES {
                                self.probes[f].push_back((j, (p * fraction).max(min_probe)));
                                self.probes_left[group] += 1;
                            }
                        }
                    }
                }
                if profile == Profiling::Off {
                    self.make_pending(j);
                }
            }
            Event::Wake => {
                if self.next_wake == Some(now) {
                    self.next_wake = None;
                }
            }
            Event::Free { machine, epoch } if epoch != self.epochs[machine] => {}
            Event::Free { machine: m, .. } => {
                match std::mem::replace(&mut self.machines[m], Busy::Idle) {
                    Busy::Job { job, started, .. } => {
                        let spec = &self.scenario.workload.jobs[job];
                        let flavor = self.machine_flavor[m];
                        self.busy[flavor] += now - started;
                        self.slots_held[job] -= 1;
                        if self.slots_held[job] > 0 {
                            return;
                        }
                        self.outcomes[job] = Some(JobOutcome {
                            user: spec.user,
                            arrival: spec.arrival,
                            start: self.first_start[job].unwrap_or(started),
                            forecast: self.forecast[job],
                            finish: now,
                            longest_wait: self.longest_wait[job],
                            preemptions: self.preemptions[job],
                            flavor,
                            machine: m,
                            fastest: spec
                                .fastest_flavor(&self.scenario.cluster)
                                .map_or(0.0, |(_, t)| t),
                            isolated: isolated_time(
                                &spec.durations,
                                &self.slots,
                                self.users_with_jobs,
                            ),
                        });
                        if let Some((history, _)) = &mut self.learned {
                            let user = &self.scenario.workload.users[spec.user].name;
                            let name = estimates::kind(&spec.name);
                            let flavor_name = &self.scenario.cluster.flavors[flavor].name;
                            if let Some(run) = spec.durations[flavor] {
                                history.record(user, name, flavor_name, run);
                                history.refresh_ratios();
                            }
                        }
                        self.done += 1;
                        progress(self.done);
                    }
                    Busy::Probe { job, .. } => {
                        let group = self.group_of[job];
                        self.probes_left[group] -= 1;
                        if self.probes_left[group] == 0 {
                            for j in std::mem::take(&mut self.group_jobs[group]) {
                                self.make_pending(j);
                            }
                        }
                    }
                    Busy::Idle => unreachable!("a free event for an idle machine"),
                }
            }
        }
    }

    /// Queues job `j`; a preempted job shows its estimates scaled to the
    /// work it has left. With learned estimates, the decision at this
    /// instant estimates it first (`relearn_pending`).
    fn make_pending(&mut self, j: usize) {
        let job = &self.scenario.workload.jobs[j];
        self.pending.push(PendingJob {
            id: j,
            user: job.user,
            arrival: job.arrival,
            estimates: self.scaled_estimates(j, self.remaining[j]),
            width: job.width,
            priority: 0,
        });
    }

    /// With learned estimates, job `j`'s as the history of the jobs
    /// finished so far and the runs in flight (`runs_in_flight`) give
    /// them, where it may run.
    fn learn_estimates(&mut self, j: usize, in_flight: &RunsInFlight) {
        let Some((history, default)) = &self.learned else {
            return;
        };
        let job = &self.scenario.workload.jobs[j];
        let user = &self.scenario.workload.users[job.user].name;
        let flavors: Vec<&str> = self
            .scenario
            .cluster
            .flavors
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        let kind = estimates::kind(&job.name);
        let none = vec![None; flavors.len()];
        let running = in_flight.get(&(job.user, kind)).unwrap_or(&none);
        let learned = history.estimates(user, kind, &flavors, running);
        for ((e, l), r) in self.estimates[j].iter_mut().zip(learned).zip(running) {
            if e.is_some() {
                let estimate = history::in_flight(l.unwrap_or(*default), *r);
                *e = Some(estimate.max(MIN_PLANNED_SECONDS));
            }
        }
    }

    /// Per job (user and [`estimates::kind`]) with a run in flight at
    /// `now`: per flavor, how long its longest run there has run. Empty
    /// without learned estimates.
    fn runs_in_flight(&self, now: f64) -> RunsInFlight<'a> {
        let mut runs = RunsInFlight::new();
        if self.learned.is_none() {
            return runs;
        }
        let scenario: &'a Scenario = self.scenario;
        let jobs = &scenario.workload.jobs;
        for (m, busy) in self.machines.iter().enumerate() {
            if let Busy::Job { job, started, .. } = *busy {
                let key = (jobs[job].user, estimates::kind(&jobs[job].name));
                let per_flavor = runs
                    .entry(key)
                    .or_insert_with(|| vec![None; scenario.cluster.flavors.len()]);
                let r = &mut per_flavor[self.machine_flavor[m]];
                *r = Some(r.map_or(now - started, |e: f64| e.max(now - started)));
            }
        }
        runs
    }

    /// With learned estimates, every waiting job's again, as the plugin
    /// estimates every pending job at each plan from what it knows then.
    fn relearn_pending(&mut self, now: f64) {
        if self.learned.is_none() {
            return;
        }
        let in_flight = self.runs_in_flight(now);
        let waiting: Vec<usize> = self.pending.iter().map(|p| p.id).collect();
        for (k, j) in waiting.into_iter().enumerate() {
            self.learn_estimates(j, &in_flight);
            self.pending[k].estimates = self.scaled_estimates(j, self.remaining[j]);
        }
    }

    fn scaled_estimates(&self, j: usize, fraction: f64) -> Vec<Option<f64>> {
        if fraction == 1.0 {
            return self.estimates[j].clone();
        }
        self.estimates[j]
            .iter()
            .map(|e| e.map(|e| e * fraction))
            .collect()
    }

    /// Stops running job `job` and queues it again with the work it has
    /// left. A job whose work is done (only its completion is due) is left
    /// to complete.
    fn preempt(&mut self, now: f64, job: usize) -> Result<(), SimError> {
        let held: Vec<usize> = (0..self.machines.len())
            .filter(|&m| matches!(self.machines[m], Busy::Job { job: j, .. } if j == job))
            .collect();
        let Some(&m) = held.first() else {
            return Err(SimError::InvalidPreemption { job });
        };
        let Busy::Job {
            started,
            fraction,
            restart,
            ..
        } = self.machines[m]
        else {
            unreachable!("found a job above");
        };
        let flavor = self.machine_flavor[m];
        let length = self.scenario.workload.jobs[job].durations[flavor].unwrap_or(0.0);
        let ran = now - started;
        // Time spent restarting is not work done.
        let worked = (ran - restart).max(0.0);
        let left = if length > 0.0 {
            fraction - worked / length
        } else {
            0.0
        };
        if left <= 0.0 {
            return Ok(());
        }
        self.busy[flavor] += ran * held.len() as f64;
        self.remaining[job] = left;
        for m in held {
            self.epochs[m] += 1;
            self.machines[m] = Busy::Idle;
        }
        self.slots_held[job] = 0;
        self.preemptions[job] += 1;
        self.waiting_since[job] = now;
        self.make_pending(job);
        Ok(())
    }

    /// Probes go first, in arrival order per flavor: they are short, and a
    /// job cannot be scheduled before its probes are done.
    fn start_probes(&mut self, now: f64) {
        for m in 0..self.machines.len() {
            if self.machines[m] != Busy::Idle {
                continue;
            }
            let flavor = self.machine_flavor[m];
            if let Some((job, length)) = self.probes[flavor].pop_front() {
                self.machines[m] = Busy::Probe {
                    job,
                    until: now + length,
                };
                self.busy[flavor] += length;
                self.push(
                    now + length,
                    Event::Free {
                        machine: m,
                        epoch: self.epochs[m],
                    },
                );
            }
        }
    }

    /// Calls `f` with the policy's view of the cluster at `now`.
    fn with_view<T>(&self, now: f64, f: impl FnOnce(&View<'_>) -> T) -> T {
        let machines = self.machine_views(now);
        let running = self.running();
        let weights: Vec<f64> = self
            .scenario
            .workload
            .users
            .iter()
            .map(|u| u.weight)
            .collect();
        f(&View {
            now,
            flavors: &self.scenario.cluster.flavors,
            machines: &machines,
            pending: &self.pending,
            running: &running,
            user_weights: &weights,
            attained: self.service.attained(),
        })
    }

    /// One instant's decisions: preemptions, then the shared decision
    /// loop, then the policy's next wake-up; the users' new rates of
    /// service come from the state it leaves.
    fn schedule(&mut self, now: f64, policy: &mut dyn Policy) -> Result<(), SimError> {
        // As the plugin does at each plan: the runs in flight have run
        // longer since the last decision.
        self.relearn_pending(now);
        if !self.pending.is_empty() {
            let asked = std::time::Instant::now();
            let stop = self.with_view(now, |view| policy.preempt(view));
            self.times.record(asked.elapsed().as_secs_f64());
            for job in stop? {
                self.preempt(now, job)?;
            }
        }
        let rates = decision_loop::decide_until_settled(
            policy,
            &mut AtInstant {
                sim: self,
                now,
                last_view: Cell::new(0.0),
            },
        )?;
        self.note_forecasts(policy);
        if let Some(t) = self.with_view(now, |view| policy.wake_at(view)) {
            let queued = self.next_wake.is_some_and(|w| w > now && w <= t);
            if t > now && t <= MAX_CLOCK && !queued {
                self.next_wake = Some(t);
                self.push(t, Event::Wake);
            }
        }
        self.service.set_rates(&rates);
        Ok(())
    }

    /// Starts one job on `machines`, one [`Start`] each: all idle, of one
    /// flavor the job fits and can run on, `width.per_node` on each of
    /// `width.nodes` nodes.
    /// Keeps the first forecast of each job that has not started yet: the
    /// start a user would be shown on first asking.
    fn note_forecasts(&mut self, policy: &dyn Policy) {
        for f in policy.forecast(&[]) {
            let job = f.job;
            if job < self.forecast.len()
                && self.forecast[job].is_none()
                && self.first_start[job].is_none()
                && f.at.is_finite()
            {
                self.forecast[job] = Some(f.at);
            }
        }
    }

    fn start(&mut self, now: f64, job: usize, machines: &[usize]) -> Result<(), SimError> {
        let invalid = |why| {
            Err(SimError::InvalidStart {
                start: Start {
                    job,
                    machine: machines[0],
                },
                why,
            })
        };
        let Some(i) = self.pending.iter().position(|p| p.id == job) else {
            return invalid("the job is not pending");
        };
        let spec = &self.scenario.workload.jobs[job];
        if machines.len() != spec.width.slots() {
            return invalid("a job starts on exactly as many machines as its width");
        }
        for (k, &m) in machines.iter().enumerate() {
            if self.machines.get(m) != Some(&Busy::Idle) {
                return invalid("the machine is not idle");
            }
            if machines[..k].contains(&m) {
                return invalid("the job names a machine twice");
            }
        }
        let flavor = self.machine_flavor[machines[0]];
        if machines.iter().any(|&m| self.machine_flavor[m] != flavor) {
            return invalid("a job's machines are all of one flavor");
        }
        let mut nodes: Vec<usize> = machines.iter().map(|&m| self.machine_node[m]).collect();
        nodes.sort_unstable();
        let per_node_ok = nodes
            .chunk_by(|a, b| a == b)
            .all(|n| n.len() == spec.width.per_node);
        if !per_node_ok || nodes.len() / spec.width.per_node != spec.width.nodes {
            return invalid("a job takes its width's slots on each of its width's nodes");
        }
        let Some(length) = spec.durations[flavor] else {
            return invalid("the job cannot run on that flavor");
        };
        self.pending.swap_remove(i);
        let fraction = self.remaining[job];
        self.first_start[job].get_or_insert(now);
        let waited = now - self.waiting_since[job];
        self.longest_wait[job] = self.longest_wait[job].max(waited);
        let restart = if self.preemptions[job] > 0 {
            self.preempt_overhead
        } else {
            0.0
        };
        self.slots_held[job] = machines.len();
        for &m in machines {
            self.machines[m] = Busy::Job {
                job,
                started: now,
                fraction,
                restart,
            };
            self.push(
                now + restart + fraction * length + self.job_overhead,
                Event::Free {
                    machine: m,
                    epoch: self.epochs[m],
                },
            );
        }
        Ok(())
    }

    fn machine_views(&self, now: f64) -> Vec<MachineView> {
        self.machines
            .iter()
            .enumerate()
            .map(|(m, busy)| {
                let flavor = self.machine_flavor[m];
                let free_at = match *busy {
                    Busy::Idle => now,
                    Busy::Probe { until, .. } => until,
                    Busy::Job {
                        job,
                        started,
                        fraction,
                        restart,
                    } => started + restart + fraction * self.estimates[job][flavor].unwrap_or(0.0),
                };
                MachineView {
                    flavor,
                    node: self.machine_node[m],
                    free_at,
                    idle: *busy == Busy::Idle,
                }
            })
            .collect()
    }

    fn running(&self) -> Vec<RunningJob> {
        self.machines
            .iter()
            .enumerate()
            .filter_map(|(m, busy)| match *busy {
                Busy::Job {
                    job,
                    started,
                    fraction,
                    ..
                } => Some(RunningJob {
                    id: job,
                    user: self.scenario.workload.jobs[job].user,
                    machine: m,
                    started,
                    estimates: self.scaled_estimates(job, fraction),
                    preemptible: true,
                }),
                _ => None,
            })
            .collect()
    }
}

/// The simulator at one instant, as the decision loop drives it.
struct AtInstant<'s, 'a> {
    sim: &'s mut Sim<'a>,
    now: f64,
    /// Wall seconds of the last call of `with_view`: the view's
    /// construction and the policy's answer, when it was asked.
    last_view: Cell<f64>,
}

impl Driver for AtInstant<'_, '_> {
    type Error = SimError;

    fn with_view<T>(&self, f: impl FnOnce(&View<'_>) -> T) -> T {
        let asked = std::time::Instant::now();
        let answer = self.sim.with_view(self.now, f);
        self.last_view.set(asked.elapsed().as_secs_f64());
        answer
    }

    fn asked(&mut self) {
        self.sim.times.decisions += 1;
        self.sim.times.record(self.last_view.get());
    }

    fn apply(&mut self, starts: Vec<Start>) -> Result<(), SimError> {
        // A gang's starts, gathered in the order of each job's first one.
        let mut gangs: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut index: IdMap<usize> = IdMap::default();
        for start in starts {
            let i = *index.entry(start.job).or_insert_with(|| {
                gangs.push((start.job, Vec::new()));
                gangs.len() - 1
            });
            gangs[i].1.push(start.machine);
        }
        for (job, machines) in gangs {
            self.sim.start(self.now, job, &machines)?;
        }
        Ok(())
    }

    fn policy_failed(&mut self, error: PolicyError) -> Result<(), SimError> {
        Err(error.into())
    }
}
