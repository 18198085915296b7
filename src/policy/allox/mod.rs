//! AlloX (Le et al., EuroSys 2020): min-cost matching of jobs to
//! (machine, position) slots, over the jobs of the users who have been
//! served least.
//!
//! Fairness: each user's score `L_u` ([`usage_scores`]) sums, over its
//! running jobs, `DS_best * p_best / p_used`: the dominant share the job
//! would take on its fastest flavor, discounted when it runs on a slower
//! one, divided by the user's weight. Only the `ceil(alpha * |U|)` users with
//! the lowest score are eligible, where `U` is the set of users with pending
//! jobs; ties go to the user with the least attained service (the score
//! integrated over time), then to the lower index. If the matching starts
//! nothing on an idle machine, alpha doubles and the matching is solved
//! again, until every user is eligible.
//!
//! One start at a time, as AlloX does: when several machines are idle at
//! once, of the jobs matched to their first slots the one that arrived
//! first starts, its user's score grows, and the eligible set is ranked again
//! before the next start. Re-solving after every start is what AlloX does;
//! we re-solve only when the eligible set changed (without a cap, that is
//! exactly when the candidate set changed). When it did not, the rest of
//! the previous matching is still optimal: starting job `j` first
//! on machine `m` turns `m` into a machine busy for `p_j`, and every
//! assignment of the other jobs costs exactly `p_j` per job on `m` more in
//! the new instance than it did with `j` fixed first on `m`, so the order
//! of assignments does not change.

pub mod candidates;
mod forecast;
mod gangs;
mod overdue;
mod preemption;
mod warm_plan;

pub use self::overdue::MAX_WAIT;
pub use self::preemption::{Preemption, ROUND, WAIT_FACTOR};

use self::candidates::CandidateRule;
use self::warm_plan::{WarmPlan, WarmSlot};
use super::priority_classes;
use super::{
    by_arrival, job_share, usage_scores, Forecast, IdMap, PendingJob, Policy, PolicyError, Start,
    View,
};
use crate::solver::{self, Instance, Machine, SolverKind};

/// AlloX (Le et al., EuroSys 2020): each decision starts jobs by a min-cost
/// matching of the least-served users' jobs to machine positions.
#[derive(Clone, Debug)]
pub struct Allox {
    alpha: f64,
    /// AlloX's `N_max`: solve over at most this many of the eligible jobs,
    /// chosen by `candidate_rule`. `None` = no cap.
    pub max_candidates: Option<usize>,
    /// How the cap on candidates picks them.
    pub candidate_rule: CandidateRule,
    /// The solver of each decision's matching.
    pub solver: SolverKind,
    /// Seconds of total JCT a re-plan must gain to move a job off the
    /// machine the previous plan gave it. 0 (AlloX) re-plans freely; a
    /// little keeps plans steady when estimates and clocks jitter, which is
    /// what lets a simulator predict a real cluster job by job.
    pub stickiness: f64,
    /// The previous plans: pending job id -> machine.
    planned: IdMap<usize>,
    /// Deciding one of several priority classes: an idle machine the
    /// class passes up goes to a class below, so its jobs stick only to
    /// idle machines, never wait for a busy one they were planned on.
    by_class: bool,
    /// With the class solver and no stickiness: the last
    /// matching, kept for the next decision (see `warm_plan`).
    warm: WarmSlot,
    /// With jobs wider than one slot: how many jobs that cannot start now
    /// hold a reservation that later jobs may not delay (see `gang_plan`).
    pub reservations: usize,
    /// Seconds after which a waiting job goes ahead of every job that has
    /// not waited that long (see `overdue`). `None`: no bound.
    pub max_wait: Option<f64>,
    /// Preempt running jobs for overdue ones (see `preemption`). `None`
    /// (the default): never preempt.
    pub preemption: Option<Preemption>,
    /// When the next preemption round starts.
    next_round: Option<f64>,
    /// Jobs this policy preempted, and when: their wait starts again then.
    requeued: IdMap<f64>,
    /// The last preemption round's stops: per stopped job, the waiting job
    /// it was stopped for.
    stopped_for: IdMap<usize>,
    /// The waiting jobs preemption stopped running ones for, until they
    /// start: the gang plan puts them first, so the slots cleared for
    /// them are theirs.
    cleared_for: IdMap<()>,
    /// The gangs that gave way for total JCT, until they end: each is owed
    /// its restart, overdue at [`preemption::OWED_SHARE`] of the bound.
    gave_way: IdMap<()>,
    /// The share of each flavor's machines overdue jobs may hold at once
    /// without preemption, and of the cluster's slots overdue jobs are
    /// served first on while a gang waits (see `overdue`, `gangs`).
    pub tier_share: f64,
    /// The idle machines the last decision's gang plan holds for its
    /// reservations, and until when from now: what a priority class
    /// leaves the classes below (`priority_classes`).
    held: Vec<(usize, f64)>,
    /// The jobs the last decision planned and did not start
    /// ([`Policy::forecast`]), and where the nodes free behind them; or
    /// the gang plan it made, whose serial schedule gives both when asked
    /// (not at every decision).
    forecast: Vec<Forecast>,
    tail: forecast::Tail,
    gang_forecast: Option<gangs::GangForecast>,
    /// Running jobs the overdue tier started.
    promoted: IdMap<()>,
}

/// The current matching inside one decision.
struct Plan {
    /// The eligible users it was solved for, sorted. Their candidates are
    /// chosen once (a capped set is not refilled after a start), so the
    /// same users mean the same candidates less the jobs started since.
    users: Vec<usize>,
    /// Per machine, the pending ids in run order.
    queues: Vec<Vec<usize>>,
}

impl Allox {
    /// AlloX with fairness knob `alpha` in (0, 1]: 1 weighs every user's
    /// jobs at once (least total JCT), smaller values only the least-served
    /// users' jobs.
    pub fn new(alpha: f64) -> Result<Self, PolicyError> {
        check_alpha(alpha)?;
        Ok(Allox {
            alpha,
            max_candidates: None,
            candidate_rule: CandidateRule::default(),
            solver: SolverKind::Fast,
            stickiness: 0.0,
            planned: IdMap::default(),
            by_class: false,
            warm: WarmSlot::default(),
            reservations: gangs::RESERVATIONS,
            max_wait: Some(MAX_WAIT),
            preemption: None,
            next_round: None,
            requeued: IdMap::default(),
            stopped_for: IdMap::default(),
            cleared_for: IdMap::default(),
            gave_way: IdMap::default(),
            tier_share: overdue::TIER_SHARE,
            held: Vec::new(),
            forecast: Vec::new(),
            tail: forecast::Tail::default(),
            gang_forecast: None,
            promoted: IdMap::default(),
        })
    }

    /// The fairness knob, in (0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Sets the fairness knob; refuses a value outside (0, 1].
    pub fn set_alpha(&mut self, alpha: f64) -> Result<(), PolicyError> {
        check_alpha(alpha)?;
        self.alpha = alpha;
        Ok(())
    }

    /// Sets [`Allox::stickiness`]; refuses a negative or non-finite value.
    pub fn set_stickiness(&mut self, seconds: f64) -> Result<(), PolicyError> {
        check_stickiness(seconds)?;
        self.stickiness = seconds;
        Ok(())
    }

    fn check(&self) -> Result<(), PolicyError> {
        check_alpha(self.alpha)?;
        check_stickiness(self.stickiness)?;
        let seconds = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(PolicyError::Parameter(format!(
                    "{name} {v} must be a finite number of seconds >= 0"
                )))
            }
        };
        if let Some(w) = self.max_wait {
            seconds("max wait", w)?;
        }
        if let Some(p) = self.preemption {
            seconds("round", p.round)?;
            seconds("minimum run time", p.min_run)?;
            seconds("wait factor", p.wait_factor)?;
            seconds("restart", p.restart)?;
            if p.round <= 0.0 {
                return Err(PolicyError::Parameter(format!(
                    "round {} must be longer than 0 s",
                    p.round
                )));
            }
        }
        Ok(())
    }
}

fn check_stickiness(seconds: f64) -> Result<(), PolicyError> {
    if seconds.is_finite() && seconds >= 0.0 {
        Ok(())
    } else {
        Err(PolicyError::Parameter(format!(
            "stickiness {seconds} must be a finite number of seconds >= 0"
        )))
    }
}

fn check_alpha(alpha: f64) -> Result<(), PolicyError> {
    if alpha > 0.0 && alpha <= 1.0 {
        Ok(())
    } else {
        Err(PolicyError::Parameter(format!(
            "alpha {alpha} must be in (0, 1]"
        )))
    }
}

impl Policy for Allox {
    fn label(&self) -> String {
        let base = match self.max_candidates {
            Some(n) if self.candidate_rule == CandidateRule::Shortest => {
                format!("allox(a={},N={n})", self.alpha)
            }
            Some(n) => format!("allox(a={},N={n},{})", self.alpha, self.candidate_rule),
            None => format!("allox(a={})", self.alpha),
        };
        let mut extras = Vec::new();
        match self.max_wait {
            Some(w) if w != MAX_WAIT => extras.push(format!("wait={w}")),
            None => extras.push("no-bound".to_string()),
            Some(_) => {}
        }
        if let Some(p) = self.preemption {
            extras.push(format!("preempt={},{}x", p.round, p.wait_factor));
            if !p.for_gain {
                extras.push("overdue-only".to_string());
            }
        }
        if extras.is_empty() {
            base
        } else {
            format!("{},{})", base.trim_end_matches(')'), extras.join(","))
        }
    }

    fn preempt(&mut self, view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        self.check()?;
        if priority_classes::several(view) {
            // Only the highest class waiting may stop a job: a slot freed
            // for a lower class would go to the higher one first.
            let top = priority_classes::highest(view);
            return Ok(self.preempt_round(&top.view()));
        }
        Ok(self.preempt_round(view))
    }

    fn forecast(&self, more: &[PendingJob]) -> Vec<Forecast> {
        let (mut out, mut tail) = match &self.gang_forecast {
            Some(plan) => plan.starts(),
            None => (self.forecast.clone(), self.tail.clone()),
        };
        if !more.is_empty() {
            let known: IdMap<()> = out.iter().map(|f| (f.job, ())).collect();
            let rest = more.iter().filter(|j| !known.contains_key(&j.id)).collect();
            let rest = tail.in_cap_order(rest, self.candidate_rule);
            out.extend(tail.follow(&rest));
        }
        out
    }

    fn wake_at(&self, view: &View<'_>) -> Option<f64> {
        self.preemption?;
        if view.pending.is_empty() {
            None
        } else {
            self.next_round
        }
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        self.check()?;
        self.forecast.clear();
        self.tail = forecast::Tail::default();
        self.gang_forecast = None;
        if view.pending.is_empty() || !view.machines.iter().any(|m| m.idle) {
            return Ok(Vec::new());
        }
        if self.stickiness > 0.0 {
            let pending: IdMap<()> = view.pending.iter().map(|j| (j.id, ())).collect();
            self.planned.retain(|id, _| pending.contains_key(id));
        } else {
            // Plans are only remembered for stickiness.
            self.planned.clear();
        }
        if priority_classes::several(view) {
            // Each class is a matching of its own: none is warm.
            self.by_class = true;
            let starts = priority_classes::decide_by_class(view, |class| {
                self.warm.0 = None;
                let starts = self.decide_class(class)?;
                Ok(priority_classes::ClassDecision {
                    starts,
                    held: Some(std::mem::take(&mut self.held)),
                })
            });
            self.by_class = false;
            return starts;
        }
        self.decide_class(view)
    }
}

impl Allox {
    /// The decision among jobs of one priority class.
    //
    // One function on purpose: each start updates `idle`, `free_in`,
    // `scores`, `left` and the plan that the next choice reads, and
    // `continue 'start` resumes the choice from there; split up, all of that
    // state would travel through every step on each scheduling event.
    fn decide_class(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        self.held.clear();
        let mut idle: Vec<bool> = view.machines.iter().map(|m| m.idle).collect();
        if view.pending.is_empty() || !idle.contains(&true) {
            return Ok(Vec::new());
        }
        if view.pending.iter().any(|j| !j.width.is_one()) {
            return self.decide_gangs(view);
        }
        let by_id: IdMap<&PendingJob> = view.pending.iter().map(|j| (j.id, j)).collect();
        let mut free_in: Vec<f64> = (0..view.machines.len()).map(|m| view.free_in(m)).collect();
        let mut scores = usage_scores(view);
        let attained = |u: usize| view.attained.get(u).copied().unwrap_or(0.0);
        let mut usable = vec![false; view.flavors.len()];
        for m in view.machines {
            usable[m.flavor] = true;
        }
        let mut left: Vec<&PendingJob> = by_arrival(view.pending)
            .into_iter()
            .filter(|j| {
                j.estimates
                    .iter()
                    .zip(&usable)
                    .any(|(e, &u)| u && e.is_some())
            })
            .collect();
        let mut plan: Option<Plan> = None;
        let mut starts = Vec::new();
        if self.max_wait.is_some() || self.preemption.is_some() {
            let tiered = self.serve_overdue(view, left, &mut idle, &mut free_in, &mut scores);
            starts = tiered.starts;
            left = tiered.left;
        }

        'start: while !left.is_empty() && idle.contains(&true) {
            let users = ranked_users(&left, &scores, &attained);
            let mut alpha = self.alpha;
            loop {
                let eligible = eligible_count(alpha, users.len());
                let chosen = &users[..eligible];
                let mut chosen_sorted = chosen.to_vec();
                chosen_sorted.sort_unstable();
                // A new eligible set gets its candidates and a new
                // matching; the same set keeps both. So the cap picks its
                // candidates once per eligible set: a start within the
                // same instant does not pull the next job past the cap in
                // (that would cost one solve per start).
                if plan.as_ref().is_none_or(|p| p.users != chosen_sorted) {
                    let pool: Vec<&PendingJob> = left
                        .iter()
                        .copied()
                        .filter(|j| chosen.contains(&j.user))
                        .collect();
                    let cap = self.max_candidates.unwrap_or(usize::MAX);
                    let candidates = candidates::select(&pool, cap, self.candidate_rule, &usable);
                    plan = Some(self.solve(view, &free_in, &candidates, chosen_sorted)?);
                }
                let p = plan.as_mut().expect("just solved");
                // Of the jobs the matching starts now, the one that has
                // waited longest goes first (ties: the lower id).
                let next = (0..idle.len())
                    .filter(|&m| idle[m])
                    .filter_map(|m| p.queues[m].first().map(|&job| (m, by_id[&job])))
                    .min_by(|a, b| {
                        a.1.arrival
                            .total_cmp(&b.1.arrival)
                            .then(a.1.id.cmp(&b.1.id))
                    })
                    .map(|(m, j)| (m, j.id));
                if let Some((machine, job)) = next {
                    let j = left.iter().position(|l| l.id == job).expect("a candidate");
                    let started = left.remove(j);
                    let flavor = view.machines[machine].flavor;
                    let length = started.estimates[flavor].expect("matched to an allowed flavor");
                    idle[machine] = false;
                    free_in[machine] = length;
                    scores[started.user] += job_share(view, &started.estimates, flavor)
                        / view.user_weights[started.user];
                    p.queues[machine].remove(0);
                    if let Some(w) = self.warm.0.as_mut() {
                        if !w.start(machine, job) {
                            self.warm.0 = None;
                        }
                    }
                    // A user whose last job just started leaves the
                    // eligible set without changing the candidates.
                    if !left.iter().any(|l| l.user == started.user) {
                        p.users.retain(|&u| u != started.user);
                    }
                    starts.push(Start { job, machine });
                    continue 'start;
                }
                if eligible == users.len() {
                    break 'start;
                }
                alpha *= 2.0;
            }
        }
        // (Under several priority classes no forecast is made: a lower
        // class's plan does not see the work a higher one has queued.)
        if let Some(p) = plan.filter(|_| !self.by_class) {
            (self.forecast, self.tail) =
                forecast::starts(view, &p.queues, &free_in, &left, self.candidate_rule);
        }
        Ok(starts)
    }
}

/// The users with jobs in `left`, least served first: by score, then (equal
/// scores, typically with nothing running) by the service they have had,
/// not by index, since AlloX's instantaneous score alone would hand every
/// simultaneous wave of free slots to the same user; then by index.
fn ranked_users(
    left: &[&PendingJob],
    scores: &[f64],
    attained: &dyn Fn(usize) -> f64,
) -> Vec<usize> {
    let mut users: Vec<usize> = left.iter().map(|j| j.user).collect();
    users.sort_unstable();
    users.dedup();
    users.sort_by(|&a, &b| {
        scores[a]
            .total_cmp(&scores[b])
            .then(attained(a).total_cmp(&attained(b)))
            .then(a.cmp(&b))
    });
    users
}

/// How many of the first `users` (ranked) are eligible at `alpha`.
fn eligible_count(alpha: f64, users: usize) -> usize {
    ((alpha * users as f64).ceil() as usize).clamp(1, users)
}

impl Allox {
    /// Solves the matching over `candidates`, the jobs of the eligible
    /// `users` (sorted), with machines free in `free_in`.
    fn solve(
        &mut self,
        view: &View<'_>,
        free_in: &[f64],
        candidates: &[&PendingJob],
        users: Vec<usize>,
    ) -> Result<Plan, PolicyError> {
        let machines = view.machines.len();
        let warm = self.solver == SolverKind::Classes && self.stickiness == 0.0;
        if !warm {
            self.warm.0 = None;
        }
        if candidates.is_empty() {
            self.warm.0 = None;
            return Ok(Plan {
                users,
                queues: vec![Vec::new(); machines],
            });
        }
        if let Some(w) = self.warm.0.as_mut() {
            if w.update(view.now, free_in, candidates) {
                let queues = w.queues();
                return Ok(Plan { users, queues });
            }
            self.warm.0 = None;
        }
        let instance = Instance {
            flavors: view.flavors.len(),
            machines: (0..machines)
                .map(|m| Machine {
                    flavor: view.machines[m].flavor,
                    free_in: free_in[m],
                })
                .collect(),
            releases: candidates.iter().map(|j| j.arrival - view.now).collect(),
            times: candidates
                .iter()
                .flat_map(|j| j.estimates.iter().copied())
                .collect(),
            preferred: if self.stickiness > 0.0 {
                candidates
                    .iter()
                    .map(|j| {
                        self.planned
                            .get(&j.id)
                            .filter(|&&m| m < machines && (!self.by_class || view.machines[m].idle))
                            .map(|&m| (m, self.stickiness))
                    })
                    .collect()
            } else {
                Vec::new()
            },
        };
        if warm {
            let ids = candidates.iter().map(|j| j.id).collect();
            instance.validate()?;
            if let Some(w) = WarmPlan::cold(&instance, ids, view.now) {
                let queues = w.queues();
                self.warm.0 = Some(w);
                return Ok(Plan { users, queues });
            }
        }
        let solution = solver::solve(&instance, self.solver)?;
        if self.stickiness > 0.0 {
            for (j, s) in candidates.iter().zip(&solution.slots) {
                self.planned.insert(j.id, s.machine);
            }
        }
        let queues = solution
            .queues(machines)
            .into_iter()
            .map(|q| q.into_iter().map(|c| candidates[c].id).collect())
            .collect();
        Ok(Plan { users, queues })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flavor, Width};
    use crate::policy::{usage_scores, MachineView, RunningJob};

    /// A GPU and a CPU flavor of one slot each.
    pub(super) fn flavors() -> Vec<Flavor> {
        vec![
            Flavor {
                name: "gpu".into(),
                slots: 1,
                per_node: 1,
            },
            Flavor {
                name: "cpu".into(),
                slots: 1,
                per_node: 1,
            },
        ]
    }

    /// A one-slot job arrived at 0 with (GPU, CPU) estimates.
    pub(super) fn job(id: usize, user: usize, gpu: Option<f64>, cpu: Option<f64>) -> PendingJob {
        PendingJob {
            id,
            user,
            arrival: 0.0,
            estimates: vec![gpu, cpu],
            width: Width::ONE,
            priority: 0,
        }
    }

    #[test]
    fn alpha_doubles_when_the_eligible_jobs_start_nothing() {
        // The GPU is busy for 1 more second; the CPU is idle. User 0's job
        // would rather wait for the GPU, so with alpha 0.5 (user 0 only)
        // nothing starts; doubling alpha admits user 1, whose job can only
        // use the CPU.
        let flavors = flavors();
        let machines = [
            MachineView {
                flavor: 0,
                node: 0,
                free_at: 11.0,
                idle: false,
            },
            MachineView {
                flavor: 1,
                node: 1,
                free_at: 10.0,
                idle: true,
            },
        ];
        let pending = [
            job(0, 0, Some(1.0), Some(100.0)),
            job(1, 1, None, Some(5.0)),
        ];
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0, 1.0],
            attained: &[],
        };
        let starts = Allox::new(0.5).unwrap().decide(&view).unwrap();
        assert_eq!(starts, vec![Start { job: 1, machine: 1 }]);
    }

    #[test]
    fn jobs_planned_but_not_started_are_forecast_behind_the_runs_before_them() {
        // The GPU frees in 2 s and the CPU is idle. Both GPU jobs are far
        // slower on the CPU, so the plan queues them on the GPU, shortest
        // first (at 12 s and 13 s), and starts the CPU-only job now.
        let flavors = flavors();
        let machines = [
            MachineView {
                flavor: 0,
                node: 0,
                free_at: 12.0,
                idle: false,
            },
            MachineView {
                flavor: 1,
                node: 1,
                free_at: 10.0,
                idle: true,
            },
        ];
        let pending = [
            job(0, 0, Some(3.0), Some(90.0)),
            job(1, 0, Some(1.0), Some(50.0)),
            job(2, 1, None, Some(5.0)),
        ];
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0, 1.0],
            attained: &[],
        };
        let mut allox = Allox::new(1.0).unwrap();
        let starts = allox.decide(&view).unwrap();
        assert_eq!(starts, vec![Start { job: 2, machine: 1 }]);
        let mut forecast = allox.forecast(&[]);
        forecast.sort_by_key(|f| f.job);
        let at = |job: usize, at: f64| Forecast { job, at, flavor: 0 };
        assert_eq!(forecast, vec![at(0, 13.0), at(1, 12.0)]);
    }

    #[test]
    fn while_a_gang_waits_the_jobs_asked_about_follow_its_plan() {
        // One node of two GPUs, one busy for 2 s more. A two-GPU job is
        // planned; with a cap of one candidate, two one-GPU jobs are left
        // out, and a third is not in the view at all. Asked about all
        // three (as the plugin asks about every waiting job), the gang goes
        // first (at 12), then the others behind it, two at a time.
        let flavors = vec![Flavor {
            name: "gpu".into(),
            slots: 2,
            per_node: 2,
        }];
        let machines = [0, 1].map(|_| MachineView {
            flavor: 0,
            node: 0,
            free_at: 12.0,
            idle: false,
        });
        let mut pending = vec![
            PendingJob {
                width: Width::new(2, 1).unwrap(),
                ..job(0, 0, Some(5.0), None)
            },
            job(1, 0, Some(1.0), None),
            job(2, 0, Some(1.0), None),
        ];
        for (k, j) in pending.iter_mut().enumerate() {
            j.arrival = k as f64;
            j.estimates.truncate(1);
        }
        let mut busy = machines;
        busy[1].idle = true; // something is idle, so it decides
        busy[1].free_at = 10.0;
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &busy,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        let mut allox = Allox::new(1.0).unwrap();
        allox.max_candidates = Some(1);
        allox.candidate_rule = CandidateRule::Arrival;
        let starts = allox.decide(&view).unwrap();
        assert_eq!(starts, vec![], "the gang waits for the whole node");
        let outside = PendingJob {
            arrival: 3.0,
            ..pending[2].clone()
        };
        let outside = PendingJob { id: 3, ..outside };
        let at = |job: usize, at: f64| Forecast { job, at, flavor: 0 };
        assert_eq!(allox.forecast(&[]), vec![at(0, 12.0)]);
        let mut more = pending[1..].to_vec();
        more.push(outside);
        let mut forecast = allox.forecast(&more);
        forecast.sort_by_key(|f| f.job);
        assert_eq!(
            forecast,
            vec![at(0, 12.0), at(1, 17.0), at(2, 17.0), at(3, 18.0)]
        );
    }

    #[test]
    fn scores_discount_jobs_on_their_slower_flavor_and_divide_by_weight() {
        let flavors = vec![
            Flavor {
                name: "gpu".into(),
                slots: 4,
                per_node: 1,
            },
            Flavor {
                name: "cpu".into(),
                slots: 8,
                per_node: 1,
            },
        ];
        let machines: Vec<MachineView> = [0, 1]
            .iter()
            .map(|&flavor| MachineView {
                flavor,
                node: flavor,
                free_at: 100.0,
                idle: false,
            })
            .collect();
        // User 0 runs a job on the CPU that is 4x faster on a GPU: share
        // 1/4 (GPU is best) times 10/40. User 1 (weight 2) runs one on its
        // best flavor, the CPU: 1/8, halved.
        let running = [
            RunningJob {
                id: 0,
                user: 0,
                machine: 1,
                started: 0.0,
                estimates: vec![Some(10.0), Some(40.0)],
                preemptible: true,
            },
            RunningJob {
                id: 1,
                user: 1,
                machine: 1,
                started: 0.0,
                estimates: vec![Some(30.0), Some(20.0)],
                preemptible: true,
            },
        ];
        let view = View {
            now: 0.0,
            flavors: &flavors,
            machines: &machines,
            pending: &[],
            running: &running,
            user_weights: &[1.0, 2.0],
            attained: &[],
        };
        assert_eq!(usage_scores(&view), vec![0.25 * 0.25, 0.125 / 2.0]);
    }

    #[test]
    fn candidate_cap_keeps_the_shortest_or_the_earliest_arrivals() {
        let flavors = flavors();
        let machines = [MachineView {
            flavor: 1,
            node: 0,
            free_at: 0.0,
            idle: true,
        }];
        let mut pending = vec![job(0, 0, None, Some(50.0)), job(1, 0, None, Some(1.0))];
        pending[1].arrival = 5.0;
        let view = View {
            now: 5.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        // Uncapped, the short job goes first; capped at 1, AlloX's rule
        // keeps the shortest, the arrival rule the first arrival.
        let mut allox = Allox::new(1.0).unwrap();
        assert_eq!(allox.decide(&view).unwrap()[0].job, 1);
        allox.max_candidates = Some(1);
        assert_eq!(allox.decide(&view).unwrap()[0].job, 1);
        allox.candidate_rule = CandidateRule::Arrival;
        assert_eq!(allox.decide(&view).unwrap()[0].job, 0);
    }

    #[test]
    fn slots_freeing_together_are_shared_as_scores_change() {
        // Four users with three jobs each, four idle GPUs, alpha 1/4: one
        // matching over one user's jobs would fill every GPU with that
        // user's jobs; ranking again after each start gives each user one.
        let flavors = vec![Flavor {
            name: "gpu".into(),
            slots: 4,
            per_node: 1,
        }];
        let machines: Vec<MachineView> = (0..4)
            .map(|node| MachineView {
                flavor: 0,
                node,
                free_at: 0.0,
                idle: true,
            })
            .collect();
        let pending: Vec<PendingJob> = (0..12)
            .map(|i| PendingJob {
                id: i,
                user: i / 3,
                arrival: 0.0,
                estimates: vec![Some(10.0 + i as f64)],
                width: Width::ONE,
                priority: 0,
            })
            .collect();
        let view = View {
            now: 0.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0; 4],
            attained: &[],
        };
        let starts = Allox::new(0.25).unwrap().decide(&view).unwrap();
        let mut users: Vec<usize> = starts.iter().map(|s| pending[s.job].user).collect();
        users.sort_unstable();
        assert_eq!(users, vec![0, 1, 2, 3]);
        // At alpha 1 the matching alone decides: the four shortest jobs.
        let starts = Allox::new(1.0).unwrap().decide(&view).unwrap();
        let mut jobs: Vec<usize> = starts.iter().map(|s| s.job).collect();
        jobs.sort_unstable();
        assert_eq!(jobs, vec![0, 1, 2, 3]);
    }

    #[test]
    fn bad_parameters_are_errors_not_loops() {
        for alpha in [0.0, -1.0, f64::NAN, 1.5, f64::INFINITY] {
            assert!(Allox::new(alpha).is_err(), "alpha {alpha}");
        }
        let mut allox = Allox::new(0.5).unwrap();
        assert!(allox.set_alpha(f64::NAN).is_err());
        assert_eq!(allox.alpha(), 0.5);
        allox.stickiness = f64::NAN;
        let flavors = flavors();
        let machines = [MachineView {
            flavor: 0,
            node: 0,
            free_at: 0.0,
            idle: true,
        }];
        let pending = [job(0, 0, Some(1.0), None)];
        let view = View {
            now: 0.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        assert!(matches!(
            allox.decide(&view),
            Err(PolicyError::Parameter(_))
        ));
    }

    /// Runs `allox` on a queue where 8 jobs arrive every `gap` seconds and
    /// each runs exactly its estimate; returns every decision's starts, per
    /// decision whether a warm plan was kept after it, and the total
    /// completion time.
    fn run_queue(
        allox: &mut Allox,
        machine_flavors: &[usize],
        gap: f64,
    ) -> (Vec<Vec<Start>>, Vec<bool>, f64) {
        let flavors: Vec<Flavor> = (0..2)
            .map(|f| Flavor {
                name: format!("f{f}"),
                slots: machine_flavors.iter().filter(|&&x| x == f).count(),
                per_node: 1,
            })
            .collect();
        // Distinct times, so the optimum (and each decision) is unique.
        let arrivals: Vec<PendingJob> = (0..40)
            .map(|id| PendingJob {
                id,
                user: id % 3,
                arrival: (id / 8) as f64 * gap,
                estimates: vec![
                    Some(3.0 + ((id * 37) % 41) as f64 * 0.913),
                    Some(2.0 + ((id * 53) % 43) as f64 * 1.271),
                ],
                width: Width::ONE,
                priority: 0,
            })
            .collect();
        let mut machines: Vec<MachineView> = machine_flavors
            .iter()
            .enumerate()
            .map(|(node, &flavor)| MachineView {
                flavor,
                node,
                free_at: 0.0,
                idle: true,
            })
            .collect();
        let (mut now, mut decisions, mut warm, mut total) = (0.0, Vec::new(), Vec::new(), 0.0);
        let mut pending: Vec<PendingJob> = Vec::new();
        let mut next = 0;
        while next < arrivals.len() || !pending.is_empty() {
            while next < arrivals.len() && arrivals[next].arrival <= now {
                pending.push(arrivals[next].clone());
                next += 1;
            }
            for m in &mut machines {
                m.idle = m.free_at <= now;
            }
            let view = View {
                now,
                flavors: &flavors,
                machines: &machines,
                pending: &pending,
                running: &[],
                user_weights: &[1.0, 1.0, 1.0],
                attained: &[],
            };
            let starts = allox.decide(&view).unwrap();
            for s in &starts {
                let i = pending.iter().position(|j| j.id == s.job).unwrap();
                let job = pending.remove(i);
                let m = &mut machines[s.machine];
                m.free_at = now + job.estimates[m.flavor].unwrap();
                total += m.free_at;
            }
            warm.push(allox.warm.0.is_some());
            decisions.push(starts);
            // The next event: a machine frees or a job arrives.
            now = machines
                .iter()
                .map(|m| m.free_at)
                .filter(|&t| t > now)
                .chain(arrivals.get(next).map(|j| j.arrival))
                .fold(f64::INFINITY, f64::min);
        }
        (decisions, warm, total)
    }

    #[test]
    fn a_kept_class_plan_decides_as_cold_solves_and_stays_warm() {
        // One machine per flavor and distinct times: every decision has
        // one optimum, so the kept plan must start exactly what cold
        // solves start. Two machines of one flavor make ties (two jobs at
        // the same position swap for free), so there only the total is
        // compared, with every job queued at once (AlloX then reaches the
        // optimum whichever tie it takes).
        for (machine_flavors, gap) in [(vec![0, 1], 7.0), (vec![0, 0, 1], 0.0)] {
            let mut cold = Allox::new(1.0).unwrap();
            let (expected, _, expected_total) = run_queue(&mut cold, &machine_flavors, gap);
            let mut classes = Allox::new(1.0).unwrap();
            classes.solver = SolverKind::Classes;
            let (decided, warm, total) = run_queue(&mut classes, &machine_flavors, gap);
            if gap > 0.0 {
                assert_eq!(decided, expected, "machines {machine_flavors:?}");
            }
            assert!(
                (total - expected_total).abs() <= 1e-9 * expected_total,
                "machines {machine_flavors:?}: total {total} against {expected_total}"
            );
            // Arrivals and front starts keep the plan; the decision that
            // starts the last candidate leaves none.
            let kept = warm.iter().filter(|&&w| w).count();
            assert!(
                kept + 1 >= warm.len(),
                "machines {machine_flavors:?}: warm after {kept} of {} decisions",
                warm.len()
            );
        }
    }

    /// AlloX as its authors run it: one matching per start, re-solved
    /// from scratch after every start, with the view updated in between.
    fn one_start_per_matching(alpha: f64, view: &View<'_>) -> Vec<Start> {
        let mut machines = view.machines.to_vec();
        let mut pending = view.pending.to_vec();
        let mut running = view.running.to_vec();
        let mut starts = Vec::new();
        loop {
            let v = View {
                machines: &machines,
                pending: &pending,
                running: &running,
                ..view.clone()
            };
            let Some(&first) = Allox::new(alpha).unwrap().decide(&v).unwrap().first() else {
                return starts;
            };
            let i = pending.iter().position(|j| j.id == first.job).unwrap();
            let job = pending.remove(i);
            let m = &mut machines[first.machine];
            m.idle = false;
            m.free_at = view.now + job.estimates[m.flavor].unwrap();
            running.push(RunningJob {
                id: job.id,
                user: job.user,
                machine: first.machine,
                started: view.now,
                estimates: job.estimates,
                preemptible: true,
            });
            starts.push(first);
        }
    }

    proptest::proptest! {
        /// Reusing the matching while the candidate set stays the same
        /// starts exactly what re-solving after every start does. Each
        /// machine has a flavor of its own: two machines of one flavor
        /// make ties (swapping the jobs at equal positions costs nothing),
        /// and ties may break either way in either method.
        #[test]
        fn reusing_the_matching_equals_resolving_after_every_start(
            alpha in proptest::sample::select(vec![0.1, 0.25, 0.5, 1.0]),
            busy in proptest::collection::vec(proptest::option::of(1.0..50.0f64), 1..6),
            jobs in proptest::collection::vec(
                (0..4usize, 0.0..5.0f64, proptest::collection::vec(
                    proptest::option::of(1.0..90.0f64), 6)),
                1..12,
            ),
        ) {
            let flavors: Vec<Flavor> = (0..busy.len())
                .map(|f| Flavor::new(format!("f{f}"), 1))
                .collect();
            let machines: Vec<MachineView> = busy
                .iter()
                .enumerate()
                .map(|(i, b)| MachineView {
                    flavor: i,
                    node: i,
                    free_at: 5.0 + b.unwrap_or(0.0),
                    idle: b.is_none(),
                })
                .collect();
            let pending: Vec<PendingJob> = jobs
                .iter()
                .enumerate()
                .map(|(id, (user, arrival, times))| {
                    let mut estimates = times[..busy.len()].to_vec();
                    estimates[0] = estimates[0].or(Some(40.0 + id as f64 * 0.731)); // placeable
                    PendingJob { id, user: *user, arrival: *arrival, estimates, width: Width::ONE, priority: 0 }
                })
                .collect();
            let view = View {
                now: 5.0,
                flavors: &flavors,
                machines: &machines,
                pending: &pending,
                running: &[],
                user_weights: &[1.0, 2.0, 1.0, 0.5],
                attained: &[3.0, 0.0, 1.0],
            };
            let reused = Allox::new(alpha).unwrap().decide(&view).unwrap();
            proptest::prop_assert_eq!(reused, one_start_per_matching(alpha, &view));
        }
    }
}
