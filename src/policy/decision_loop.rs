//! The loop both drivers run at each instant, and the attained service it
//! keeps: the simulator and the Slurm planner call this module, so the
//! simulator's schedule and the cluster's follow the same steps.
//!
//! At one instant a driver asks the policy, applies its starts, and asks
//! again for as long as it keeps starting jobs: a fairness score that
//! changed with the last start is seen before the next idle machine is
//! given away. When nothing more starts, each user's usage score
//! ([`usage_scores`]) becomes the rate at which its attained service grows
//! until the next instant.

use super::{usage_scores, Policy, PolicyError, Start, View};
use std::collections::HashMap;

/// The state a driver keeps between the policy's answers at one instant.
pub trait Driver {
    /// Why the driver stopped the loop.
    type Error;

    /// Calls `f` with the policy's view of the driver's state now.
    fn with_view<T>(&self, f: impl FnOnce(&View<'_>) -> T) -> T;

    /// Applies one answer of the policy: its starts, in its order.
    fn apply(&mut self, starts: Vec<Start>) -> Result<(), Self::Error>;

    /// The policy could not decide. The simulator stops; the planner logs
    /// it and leaves every job pending, which ends the instant.
    fn policy_failed(&mut self, error: PolicyError) -> Result<(), Self::Error>;

    /// Called after each [`Driver::with_view`] in which the policy was
    /// asked, so a driver that times its decisions (the simulator) can
    /// count that call; the core itself reads no clock.
    fn asked(&mut self) {}
}

/// Asks `policy` at this instant until it starts nothing more (no job
/// waits, no machine is idle, or its answer is empty) and returns each
/// user's usage score in the final state: the rates for
/// [`AttainedService::set_rates`].
pub fn decide_until_settled<D: Driver>(
    policy: &mut dyn Policy,
    driver: &mut D,
) -> Result<Vec<f64>, D::Error> {
    enum Step {
        Settled(Vec<f64>),
        Starts(Vec<Start>),
        Failed(PolicyError, Vec<f64>),
    }
    loop {
        let mut decided = false;
        let step = driver.with_view(|view| {
            if view.pending.is_empty() || !view.machines.iter().any(|m| m.idle) {
                return Step::Settled(usage_scores(view));
            }
            decided = true;
            match policy.decide(view) {
                Ok(starts) if starts.is_empty() => Step::Settled(usage_scores(view)),
                Ok(starts) => Step::Starts(starts),
                Err(e) => Step::Failed(e, usage_scores(view)),
            }
        });
        if decided {
            driver.asked();
        }
        match step {
            Step::Settled(rates) => return Ok(rates),
            Step::Starts(starts) => driver.apply(starts)?,
            Step::Failed(e, rates) => {
                driver.policy_failed(e)?;
                return Ok(rates);
            }
        }
    }
}

/// Each user's attained service, by user index: usage scores integrated
/// over time, at the rates the last instant left.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AttainedService {
    attained: Vec<f64>,
    rates: Vec<f64>,
    until: Option<f64>,
}

impl AttainedService {
    /// `users` users with no service yet.
    pub fn new(users: usize) -> Self {
        AttainedService {
            attained: vec![0.0; users],
            rates: vec![0.0; users],
            until: None,
        }
    }

    /// Brings every user's service up to `now` at the current rates. A
    /// clock that went back adds nothing.
    pub fn accrue(&mut self, now: f64) {
        self.accrue_decaying(now, None);
    }

    /// As [`AttainedService::accrue`], with service decaying by half every
    /// `half_life` seconds (Slurm's `PriorityDecayHalfLife`): what a user
    /// had `h` ago counts half. Exact for constant rates between instants:
    /// `a * d + r * (1 - d) * h / ln 2`, with `d = 2^(-elapsed / h)`.
    pub fn accrue_decaying(&mut self, now: f64, half_life: Option<f64>) {
        let Some(h) = half_life.filter(|h| h.is_finite() && *h > 0.0) else {
            return self.accrue_linear(now);
        };
        if let Some(last) = self.until {
            let elapsed = (now - last).max(0.0);
            let d = (-elapsed / h).exp2();
            let gained = (1.0 - d) * h / std::f64::consts::LN_2;
            for (a, r) in self.attained.iter_mut().zip(&self.rates) {
                *a = *a * d + r * gained;
            }
        }
        self.until = Some(now);
    }

    fn accrue_linear(&mut self, now: f64) {
        if let Some(last) = self.until {
            let elapsed = (now - last).max(0.0);
            for (a, r) in self.attained.iter_mut().zip(&self.rates) {
                *a += r * elapsed;
            }
        }
        self.until = Some(now);
    }

    /// Service per user index, as [`View::attained`] takes it.
    pub fn attained(&self) -> &[f64] {
        &self.attained
    }

    /// The rates from now on, by user index; users past its end get 0.
    pub fn set_rates(&mut self, rates: &[f64]) {
        self.grow(rates.len());
        self.rates.fill(0.0);
        self.rates[..rates.len()].copy_from_slice(rates);
    }

    fn grow(&mut self, users: usize) {
        if self.attained.len() < users {
            self.attained.resize(users, 0.0);
            self.rates.resize(users, 0.0);
        }
    }
}

/// [`AttainedService`] for users known by name (the plugin's users or
/// accounts), who come and go between instants.
#[derive(Clone, Debug, Default)]
pub struct NamedService {
    index: HashMap<String, usize>,
    names: Vec<String>,
    service: AttainedService,
}

impl NamedService {
    /// Brings every user's service up to `now` (see
    /// [`AttainedService::accrue_decaying`]).
    pub fn accrue(&mut self, now: f64, half_life: Option<f64>) {
        self.service.accrue_decaying(now, half_life);
    }

    /// Every user's service, and the time it was brought up to.
    pub fn entries(&self) -> (Vec<(&str, f64)>, Option<f64>) {
        let attained = self.service.attained();
        let entries = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), attained.get(i).copied().unwrap_or(0.0)))
            .collect();
        (entries, self.service.until)
    }

    /// The service saved at `until` (see [`NamedService::entries`]), every
    /// rate 0: the next [`NamedService::accrue`] decays it to its time.
    pub fn restored(entries: &[(String, f64)], until: f64) -> Self {
        let mut named = NamedService {
            service: AttainedService::new(entries.len()),
            ..NamedService::default()
        };
        named.service.until = Some(until);
        for (i, (name, service)) in entries.iter().enumerate() {
            named.service.attained[i] = service.max(0.0);
            named.index.insert(name.clone(), i);
            named.names.push(name.clone());
        }
        named
    }

    /// The service of user `name`; 0 for a user not seen yet.
    pub fn attained(&self, name: &str) -> f64 {
        self.index
            .get(name)
            .map_or(0.0, |&i| self.service.attained()[i])
    }

    /// The rates from now on: `rates[i]` for `names[i]`, 0 for everyone
    /// else.
    pub fn set_rates(&mut self, names: &[String], rates: &[f64]) {
        let mut by_index = vec![0.0; self.names.len()];
        for (name, &rate) in names.iter().zip(rates) {
            let i = match self.index.get(name) {
                Some(&i) => i,
                None => {
                    self.index.insert(name.clone(), self.names.len());
                    self.names.push(name.clone());
                    by_index.push(0.0);
                    self.names.len() - 1
                }
            };
            by_index[i] = rate;
        }
        self.service.set_rates(&by_index);
    }

    /// How many users are remembered.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no user is remembered.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Keeps the `keep` most served users and forgets the rest (they
    /// compare as new users anyway), with every rate reset to 0: call it
    /// between [`NamedService::accrue`] and [`NamedService::set_rates`].
    pub fn forget_least_served(&mut self, keep: usize) {
        let attained = self.service.attained();
        let mut by_service: Vec<(String, f64)> = self
            .names
            .drain(..)
            .enumerate()
            .map(|(i, name)| (name, attained[i]))
            .collect();
        by_service.sort_by(|a, b| b.1.total_cmp(&a.1));
        by_service.truncate(keep);
        let until = self.service.until;
        self.service = AttainedService::new(by_service.len());
        self.service.until = until;
        self.index.clear();
        for (i, (name, service)) in by_service.into_iter().enumerate() {
            self.service.attained[i] = service;
            self.index.insert(name.clone(), i);
            self.names.push(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flavor;
    use crate::policy::baselines::testing::{pending, two_flavors};
    use crate::policy::{MachineView, PendingJob, RunningJob};

    /// Two users' jobs on two GPUs and one CPU; a start takes its job off
    /// the queue and its machine.
    struct Board {
        flavors: Vec<Flavor>,
        machines: Vec<MachineView>,
        pending: Vec<PendingJob>,
        running: Vec<RunningJob>,
        asked: usize,
    }

    impl Driver for Board {
        type Error = String;

        fn with_view<T>(&self, f: impl FnOnce(&View<'_>) -> T) -> T {
            f(&View {
                now: 0.0,
                flavors: &self.flavors,
                machines: &self.machines,
                pending: &self.pending,
                running: &self.running,
                user_weights: &[1.0, 1.0],
                attained: &[],
            })
        }

        fn apply(&mut self, starts: Vec<Start>) -> Result<(), String> {
            for s in starts {
                let i = self
                    .pending
                    .iter()
                    .position(|p| p.id == s.job)
                    .ok_or("not pending")?;
                let job = self.pending.remove(i);
                self.machines[s.machine].idle = false;
                self.running.push(RunningJob {
                    id: job.id,
                    user: job.user,
                    machine: s.machine,
                    started: 0.0,
                    estimates: job.estimates,
                    preemptible: true,
                });
            }
            Ok(())
        }

        fn policy_failed(&mut self, error: PolicyError) -> Result<(), String> {
            Err(error.to_string())
        }

        fn asked(&mut self) {
            self.asked += 1;
        }
    }

    /// Starts the first pending job on the first idle machine, one per
    /// answer, and fails when told to.
    struct OneAtATime {
        fail: bool,
    }

    impl Policy for OneAtATime {
        fn label(&self) -> String {
            "one-at-a-time".into()
        }

        fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
            if self.fail {
                return Err(PolicyError::Parameter("told to fail".into()));
            }
            Ok(view
                .idle_machines()
                .next()
                .zip(view.pending.first())
                .map(|(machine, job)| Start {
                    job: job.id,
                    machine,
                })
                .into_iter()
                .collect())
        }
    }

    fn board(jobs: usize) -> Board {
        let (flavors, machines) = two_flavors(2, 1);
        Board {
            flavors,
            machines,
            pending: (0..jobs)
                .map(|j| pending(j, j % 2, 0.0, [Some(10.0), Some(20.0)]))
                .collect(),
            running: Vec::new(),
            asked: 0,
        }
    }

    #[test]
    fn asks_until_nothing_more_starts() {
        // Three machines, five jobs: three answers start one each, and the
        // loop stops without asking once no machine is idle.
        let mut b = board(5);
        let rates = decide_until_settled(&mut OneAtATime { fail: false }, &mut b).unwrap();
        assert_eq!((b.running.len(), b.pending.len(), b.asked), (3, 2, 3));
        // Jobs 0 and 1 took the GPUs, job 2 the CPU. A GPU is half of its
        // flavor; on the CPU, job 2 takes that half discounted by 10/20 s:
        // user 0 (jobs 0, 2) 0.5 + 0.25, user 1 (job 1) 0.5.
        assert_eq!(rates, vec![0.75, 0.5]);
        // An empty queue: not asked at all.
        let mut b = board(0);
        decide_until_settled(&mut OneAtATime { fail: false }, &mut b).unwrap();
        assert_eq!(b.asked, 0);
    }

    #[test]
    fn a_failed_policy_is_the_drivers_to_handle() {
        let mut b = board(2);
        let err = decide_until_settled(&mut OneAtATime { fail: true }, &mut b).unwrap_err();
        assert_eq!((err.as_str(), b.asked), ("told to fail", 1));
    }

    #[test]
    fn service_decays_by_half_every_half_life() {
        let mut s = AttainedService::new(2);
        s.accrue_decaying(0.0, Some(10.0));
        s.set_rates(&[1.0, 0.0]);
        s.accrue_decaying(10.0, Some(10.0));
        // Ten seconds at rate 1, the early ones decayed: 10 * (1/2) / ln 2.
        let first = 5.0 / std::f64::consts::LN_2;
        assert!((s.attained()[0] - first).abs() < 1e-9, "{:?}", s.attained());
        s.set_rates(&[0.0, 0.0]);
        s.accrue_decaying(30.0, Some(10.0));
        assert!((s.attained()[0] - first / 4.0).abs() < 1e-9);
        // In small steps, the same as in one.
        let mut steps = AttainedService::new(1);
        steps.accrue_decaying(0.0, Some(10.0));
        steps.set_rates(&[1.0]);
        for t in 1..=10 {
            steps.accrue_decaying(f64::from(t), Some(10.0));
        }
        assert!((steps.attained()[0] - first).abs() < 1e-9);
    }

    #[test]
    fn service_accrues_at_the_last_rates() {
        let mut s = AttainedService::new(2);
        s.accrue(5.0);
        s.set_rates(&[0.5, 2.0]);
        s.accrue(9.0);
        assert_eq!(s.attained(), &[2.0, 8.0]);
        s.set_rates(&[1.0]);
        s.accrue(8.0); // the clock went back: nothing
        s.accrue(10.0);
        assert_eq!(s.attained(), &[4.0, 8.0]);
    }

    #[test]
    fn named_service_forgets_the_least_served() {
        let mut s = NamedService::default();
        let names: Vec<String> = ["a", "b", "c"].iter().map(|n| n.to_string()).collect();
        s.accrue(0.0, None);
        s.set_rates(&names, &[1.0, 3.0, 2.0]);
        s.accrue(1.0, None);
        assert_eq!(s.attained("b"), 3.0);
        s.forget_least_served(2);
        assert_eq!(s.len(), 2);
        assert_eq!((s.attained("a"), s.attained("c")), (0.0, 2.0));
        // Rates were reset: nothing accrues until new ones are set.
        s.accrue(2.0, None);
        assert_eq!(s.attained("b"), 3.0);
        s.set_rates(&names[..1], &[1.0]);
        s.accrue(3.0, None);
        assert_eq!(s.attained("a"), 1.0);
    }
}
