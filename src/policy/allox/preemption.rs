//! Preemption for the overloaded case. When work arrives faster than the
//! cluster runs it, overdue jobs pile up behind running ones and no
//! non-preemptive order bounds their wait (see [`super::overdue`]). At
//! the start of each round (360 s by default, Gavel's), an overdue job
//! that would otherwise wait longer than a round takes the machine of a
//! running job, which is stopped and queued again with the work it has
//! left.
//!
//! Which job gives way: one that has run at least the minimum run time
//! since it last started (so no job is stopped twice within it, and every
//! run makes progress), on a flavor where the overdue job would finish
//! sooner than at its best place without preemption, and among those the
//! one with the most work left: its own completion is delayed by one
//! overdue run (plus the restart), the smallest delay relative to its
//! length. A job of several slots is never stopped for one narrow job
//! (only, for total JCT, for as many as it holds slots; below). An
//! overdue job of several slots that would wait past a round where it
//! finishes soonest clears the nodes it needs, all or nothing, where it
//! then finishes sooner than by waiting (beside idle slower nodes, only
//! past `max_wait` and of longer jobs): on each, the
//! machines of running jobs that may give way (narrow ones, or gangs
//! stopped whole), those with the most work left first, on the nodes
//! whose clearing stops the fewest slots (`preempt_for_gangs`).
//!
//! While a gang waits, the gang plan decides who takes a freed slot, so
//! every job preemption stopped others for goes first in it until it
//! starts (`Allox::cleared_for`): the slot is the job's it was freed for.
//! Before, on the Philly trace, most preemptions freed a slot for one
//! overdue job that the plan then gave another, and the first one
//! preempted again the next round.
//!
//! When it pays: the stopped job loses the restart (checkpoint, requeue,
//! start) and finishes one overdue run later; the overdue job gains the
//! wait it would have had. With a wait longer than a round to save and a
//! restart of seconds to a minute, that is a gain for the overdue job
//! larger than the restart cost; the total JCT can still rise (a long
//! job's wait is traded for a longer one's delay), which is the price of
//! the bound, and why the mode is off unless asked for.
//!
//! Preemption for total JCT: AlloX without preemption is shortest first
//! among waiting jobs only, so a short job that arrives behind long running
//! ones waits for them. After the overdue jobs, each round lets a waiting
//! job take a running job's machine when the total JCT falls by more than
//! [`GAIN_ROUNDS`] rounds net of the restart (see `preempt_for_gain`), as
//! Gavel's round-based AlloX gets by re-solving every round.
//!
//! A running gang gives way for total JCT too, to as many waiting narrow
//! jobs as it holds slots, overdue ones first (`preempt_gangs_for_gain`),
//! as SRPT would let them: on the full Philly trace most GPU time is held
//! by gangs, and while only narrow jobs gave way, a narrow job of 1,000
//! to 10,000 s waited 5,510 s for its first start on average, where SRPT
//! started it within seconds. The rule takes a stopped gang to restart once
//! the newcomers end, but the plan, shortest first, puts a gang's long run
//! last; so a gang that gave way is owed its restart: it is overdue at
//! [`OWED_SHARE`] of the bound (`Allox::gave_way`), and the tier restarts
//! it with room left before a day. Overdue at the bound itself, as other
//! jobs, two 8-GPU jobs of Philly, stopped 6 and 18 times, waited over a
//! day at a stretch (25.2 h): the tier needs hours past the bound to
//! clear eight GPUs of one server.

use super::overdue::soonest_finish;
use super::Allox;
use crate::policy::{PendingJob, View};

/// How preemptive AlloX preempts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Preemption {
    /// Seconds between preemption rounds.
    pub round: f64,
    /// Seconds a job runs after each start before it may be stopped.
    pub min_run: f64,
    /// A job is overdue once it has waited this many times its fastest
    /// estimate (or [`Allox::max_wait`], whichever comes first).
    pub wait_factor: f64,
    /// Seconds a restart is believed to cost (checkpoint, requeue, start):
    /// what a preemption for total JCT must gain beyond.
    pub restart: f64,
    /// Also preempt when it lowers the total JCT by more than a round (see
    /// the module's doc), not only for overdue jobs.
    pub for_gain: bool,
    /// Overdue gangs clear the nodes they need (`preempt_for_gangs`).
    pub for_gangs: bool,
}

/// The default wait factor. A job that waits `k` times its run time
/// finishes at `k + 1` times it: at 10, a job the tier serves at once
/// stays near a finish-time fairness of 11, against dozens for the jobs
/// that finish-time fair rounds serve worst on the bundled Google workload
/// at overload. At 5 the same workload preempted 2.7 times as often for
/// the same average JCT.
pub const WAIT_FACTOR: f64 = 10.0;

/// How much a preemption for total JCT must gain, in rounds net of the
/// restart, and how many times the newcomer's work the stopped job must
/// have left (SRPT's rule, with a margin). Measured on Gavel's dev_seed1
/// and the bundled Google workload at 14 + 14 slots, both overloaded, with
/// 30 s restarts: at 1 the gain comes with about 100 preemptions per job
/// on dev_seed1; at 4, 39 per job and a worst finish-time fairness of 72
/// on Google; at 6, 12 per job, 386,679 s on dev_seed1 (Gavel's own AlloX:
/// 396,254 s) and a worst rho of 47; at 8 the average is back at Gavel's.
pub const GAIN_ROUNDS: f64 = 6.0;

/// The share of [`Allox::max_wait`] after which a gang that gave way for
/// total JCT is overdue while it waits to restart (the bound itself, past
/// which a job is served first whatever the backlog, stays every job's).
/// Full Philly, preemptive, against SRPT's 16,530 s: at 1 (no change)
/// 17,097 s with two jobs over a day at a stretch (25.2 h); at 3/4,
/// 17,028 s with none (the longest 23.2 h). Keeping instead every gang
/// that last waited past half the bound from giving way again took
/// 18,090 s, and 22.8 to 36.2 h on Gavel's traces at 2x where 3/4 takes
/// 19.0 to 27.8 h. Also past the bound at 3/4 (the whole share), it took
/// 17,135 s with one over a day (24.3 h).
pub const OWED_SHARE: f64 = 0.75;

/// Gavel's round, in seconds.
pub const ROUND: f64 = 360.0;

impl Default for Preemption {
    fn default() -> Self {
        Preemption {
            round: ROUND,
            min_run: ROUND,
            wait_factor: WAIT_FACTOR,
            restart: 30.0,
            for_gain: true,
            for_gangs: true,
        }
    }
}

impl Allox {
    /// The running jobs to stop now: at a round's start, one per overdue
    /// narrow job that would otherwise wait past the round, then (unless
    /// [`Preemption::for_gain`] is off) those whose machines lower the
    /// total JCT enough (`preempt_for_gain`).
    pub(super) fn preempt_round(&mut self, view: &View<'_>) -> Vec<usize> {
        let Some(rule) = self.preemption else {
            return Vec::new();
        };
        if self.next_round.is_some_and(|t| view.now < t) {
            return Vec::new();
        }
        self.next_round = Some(view.now + rule.round);
        self.forget_finished(view);
        let mut overdue: Vec<&PendingJob> = view
            .pending
            .iter()
            .filter(|j| j.width.is_one() && self.is_overdue(view, j))
            .collect();
        self.oldest_first(&mut overdue);
        let machines = view.machines.len();
        let mut free_in: Vec<f64> = (0..machines).map(|m| view.free_in(m)).collect();
        // Per machine, the narrow job on it that may give way.
        let mut slots_of = crate::policy::IdMap::<usize>::default();
        for r in view.running {
            *slots_of.entry(r.id).or_default() += 1;
        }
        let mut victim: Vec<Option<usize>> = vec![None; machines];
        for r in view.running {
            if slots_of[&r.id] == 1 && r.preemptible && view.now - r.started >= rule.min_run {
                victim[r.machine] = Some(r.id);
            }
        }
        // (stopped job, the waiting job it is stopped for)
        let mut stop: Vec<(usize, usize)> = Vec::new();
        // The overdue jobs no narrow job gave way to, with their soonest
        // finish by waiting: running gangs may give way to them for total
        // JCT.
        let mut overdue_left = Vec::new();
        for job in overdue {
            let Some((best, best_finish)) =
                soonest_finish(view, job, &free_in, |_| false, |_| true)
            else {
                continue;
            };
            if free_in[best] > rule.round {
                let taken = (0..machines)
                    .filter(|&m| victim[m].is_some() && free_in[m] > rule.round)
                    .filter_map(|m| view.estimate_on(job, m).map(|p| (m, p)))
                    .filter(|&(_, p)| p < best_finish)
                    .max_by(|a, b| free_in[a.0].total_cmp(&free_in[b.0]).then(b.0.cmp(&a.0)));
                if let Some((m, p)) = taken {
                    stop.push((victim[m].take().expect("filtered on it"), job.id));
                    free_in[m] = p;
                    continue;
                }
                overdue_left.push((job, best_finish));
            }
            free_in[best] = best_finish;
        }
        if rule.for_gangs {
            self.preempt_for_gangs(view, rule, &mut free_in, &mut stop);
        }
        for v in victim.iter_mut() {
            if v.is_some_and(|id| stop.iter().any(|s| s.0 == id)) {
                *v = None;
            }
        }
        let before_gain = stop.len();
        if rule.for_gain {
            self.preempt_for_gain(
                view,
                rule,
                &mut free_in,
                &mut victim,
                &mut stop,
                overdue_left,
            );
        }
        // Narrow jobs give way to one job each; the rest were gangs.
        for &(id, _) in &stop[before_gain..] {
            if slots_of[&id] > 1 {
                self.gave_way.insert(id, ());
            }
        }
        let now = view.now;
        self.stopped_for.clear();
        let mut stopped = Vec::new();
        // A gang that gives way to several jobs is stopped once, for the
        // first of them; the slots are each one's.
        for &(id, for_job) in &stop {
            self.requeued.insert(id, now);
            if let std::collections::hash_map::Entry::Vacant(e) = self.stopped_for.entry(id) {
                e.insert(for_job);
                stopped.push(id);
            }
            self.cleared_for.insert(for_job, ());
        }
        stopped
    }

    /// The waiting job the last round stopped running job `id` for.
    pub fn stopped_for(&self, id: usize) -> Option<usize> {
        self.stopped_for.get(&id).copied()
    }

    /// Shortest first, each waiting job that is not overdue takes the
    /// machine of a running job when that lowers the total JCT by enough:
    /// it would otherwise finish at `f` (its soonest finish anywhere,
    /// behind what runs and what was planned above); on machine `m` it
    /// finishes at `p_m`, and the stopped job finishes `p_m + restart`
    /// later, so the gain is `f - 2 p_m - restart`. Enough is
    /// [`GAIN_ROUNDS`] rounds, with the stopped job holding at least
    /// [`GAIN_ROUNDS`] times the newcomer's work. Then running gangs give
    /// way to those left waiting (`preempt_gangs_for_gain`).
    fn preempt_for_gain(
        &self,
        view: &View<'_>,
        rule: Preemption,
        free_in: &mut [f64],
        victim: &mut [Option<usize>],
        stop: &mut Vec<(usize, usize)>,
        overdue_left: Vec<(&PendingJob, f64)>,
    ) {
        let machines = view.machines.len();
        let mut waiting: Vec<(&PendingJob, f64)> = view
            .pending
            .iter()
            .filter(|j| j.width.is_one() && !self.is_overdue(view, j))
            .filter_map(|j| {
                crate::model::best_flavor(&j.estimates, view.flavors).map(|(_, p)| (j, p))
            })
            .collect();
        waiting.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.id.cmp(&b.0.id)));
        let gangs = gang_victims(view, rule, stop);
        // The jobs no narrow job gave way to, the overdue ones first
        // (oldest first), then the others shortest first, with their
        // soonest finish by waiting.
        let mut left = overdue_left;
        for (job, _) in waiting {
            if gangs.is_empty() && !victim.iter().any(Option::is_some) {
                break;
            }
            let Some((best, soonest)) = soonest_finish(view, job, free_in, |_| false, |_| true)
            else {
                continue;
            };
            let taken = (0..machines)
                .filter(|&m| victim[m].is_some() && free_in[m] > rule.round)
                .filter_map(|m| view.estimate_on(job, m).map(|p| (m, p)))
                .filter(|&(m, p)| {
                    soonest - 2.0 * p - rule.restart > GAIN_ROUNDS * rule.round
                        && GAIN_ROUNDS * p <= free_in[m]
                })
                .max_by(|a, b| free_in[a.0].total_cmp(&free_in[b.0]).then(b.0.cmp(&a.0)));
            match taken {
                Some((m, p)) => {
                    stop.push((victim[m].take().expect("filtered on it"), job.id));
                    free_in[m] = p;
                }
                // It waits; the matching will place it behind what is
                // planned, so its soonest machine is taken until then.
                None => {
                    free_in[best] = soonest;
                    left.push((job, soonest));
                }
            }
        }
        preempt_gangs_for_gain(view, rule, gangs, &left, free_in, stop);
    }

    /// Oldest first, each overdue gang that would not start within a
    /// round where it finishes soonest without preemption (waiting for a
    /// busy faster flavor included) takes the nodes it needs, all or
    /// nothing, on the flavor it would finish soonest on once they are
    /// cleared, if that is sooner than by waiting: the narrow rule. On
    /// each node, the machines free within the round and those of running
    /// jobs that may give way, whole (a gang that gives way stops on all
    /// its nodes), the jobs with the most work left first. Of the nodes
    /// that can be cleared, those whose clearing stops the fewest slots.
    ///
    /// Where idle nodes of a slower flavor would hold it within a round,
    /// its wait for the faster one is the plan's choice, made for its
    /// completion time. It clears nodes then only once that wait would
    /// take it past the bound (`max_wait`), not already at its wait
    /// factor, and only of jobs with more work left than its run there
    /// (shortest remaining first, as SRPT would), so that no stop delays a
    /// job by more than its own length. Before, such a gang never cleared
    /// nodes, and on the Philly trace (idle CPU nodes beside busy GPU
    /// ones) gangs waited for weeks. On its first 20,000 jobs this rule
    /// leaves 59 jobs waiting over a day where that left 141, for 2.3%
    /// more average JCT. Without the least-work condition 4 were left,
    /// but 11,477 preemptions cost 47% more average JCT; sending such a
    /// gang to the idle slower nodes where that cost less in total
    /// completion time than clearing made no difference. The storm the
    /// old rule guarded against (55,319 preemptions on the first 5,000
    /// jobs, each gang's victims taking their turn back) came from slots
    /// cleared for one job that the plan gave another; cleared slots are
    /// now the job's own (`Allox::cleared_for`).
    fn preempt_for_gangs(
        &self,
        view: &View<'_>,
        rule: Preemption,
        free_in: &mut [f64],
        stop: &mut Vec<(usize, usize)>,
    ) {
        let mut gangs: Vec<&PendingJob> = view
            .pending
            .iter()
            .filter(|j| !j.width.is_one() && self.is_overdue(view, j))
            .collect();
        if gangs.is_empty() {
            return;
        }
        self.oldest_first(&mut gangs);
        // Each running job that may give way: its machines.
        let mut victims: crate::policy::IdMap<Vec<usize>> = crate::policy::IdMap::default();
        for r in view.running {
            if r.preemptible
                && view.now - r.started >= rule.min_run
                && !stop.iter().any(|s| s.0 == r.id)
            {
                victims.entry(r.id).or_default().push(r.machine);
            }
        }
        let mut on_node: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (m, machine) in view.machines.iter().enumerate() {
            on_node.entry(machine.node).or_default().push(m);
        }
        // Per node, the jobs that may give way there.
        let mut victims_on: crate::policy::IdMap<Vec<usize>> = crate::policy::IdMap::default();
        for (&id, machines) in &victims {
            for &m in machines {
                let here = victims_on.entry(view.machines[m].node).or_default();
                if !here.contains(&id) {
                    here.push(id);
                }
            }
        }
        for job in gangs {
            let width = job.width;
            let soon = |m: usize| free_in[m] <= rule.round;
            let fits_soon = |machines: &[usize]| machines.iter().filter(|&&m| soon(m)).count();
            // Whether nodes of a flavor it may use would hold it within a
            // round, with nothing stopped.
            let mut soon_nodes = vec![0; view.flavors.len()];
            for machines in on_node.values() {
                let f = view.machines[machines[0]].flavor;
                if job.estimates[f].is_some() && fits_soon(machines) >= width.per_node {
                    soon_nodes[f] += 1;
                }
            }
            let held_soon = soon_nodes.iter().any(|&n| n >= width.nodes);
            // Nodes of a flavor it may use: (flavor, stopped slots, victims).
            let mut clearable: Vec<(usize, usize, Vec<usize>)> = Vec::new();
            for (node, machines) in &on_node {
                let f = view.machines[machines[0]].flavor;
                let Some(run) = job.estimates[f] else {
                    continue;
                };
                if machines.len() < width.per_node {
                    continue;
                }
                // Beside idle slower nodes, only jobs with more work left
                // than its run give way (shortest remaining first, as
                // SRPT would), so no stop delays a job by more than its
                // own length.
                let least_work = if held_soon { run } else { 0.0 };
                let mut have = fits_soon(machines);
                let mut here: Vec<(usize, f64)> = victims_on
                    .get(node)
                    .into_iter()
                    .flatten()
                    .filter_map(|id| victims.get(id).map(|ms| (*id, ms)))
                    .map(|(id, ms)| {
                        let work = ms.iter().map(|&m| free_in[m]).fold(0.0, f64::max);
                        (id, work)
                    })
                    .filter(|&(_, work)| work >= least_work)
                    .collect();
                here.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                let mut chosen = Vec::new();
                let mut slots = 0;
                for (id, _) in here {
                    if have >= width.per_node {
                        break;
                    }
                    let ms = &victims[&id];
                    have += ms
                        .iter()
                        .filter(|&&m| machines.contains(&m) && !soon(m))
                        .count();
                    slots += ms.len();
                    chosen.push(id);
                }
                if have >= width.per_node {
                    clearable.push((f, slots, chosen));
                }
            }
            let mut by_flavor: Vec<Vec<&(usize, usize, Vec<usize>)>> =
                vec![Vec::new(); view.flavors.len()];
            for c in &clearable {
                by_flavor[c.0].push(c);
            }
            // Without preemption: where it finishes soonest, waiting for
            // a busy faster flavor included. If it starts there within a
            // round, nothing to do.
            let Some((waiting_start, waiting_finish)) =
                gang_soonest_finish(view, job, &on_node, free_in)
            else {
                continue;
            };
            if waiting_start <= rule.round {
                continue;
            }
            // Where nodes of a slower flavor would hold it within a round,
            // its wait for the faster one is the plan's choice: it clears
            // nodes only once that wait would outlast the bound
            // (`max_wait`), not at its wait factor.
            let waited = view.now - self.waiting_since(job);
            if held_soon && waited + waiting_start <= self.max_wait.unwrap_or(f64::INFINITY) {
                continue;
            }
            // The flavor where it finishes soonest among those that can
            // be cleared, if sooner than by waiting; its cheapest nodes.
            let pick = (0..view.flavors.len())
                .filter(|&f| by_flavor[f].len() >= width.nodes)
                .filter_map(|f| job.estimates[f].map(|p| (f, p)))
                .filter(|&(_, p)| p < waiting_finish)
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            let Some((f, run)) = pick else { continue };
            let mut nodes = by_flavor[f].clone();
            nodes.sort_by_key(|c| c.1);
            let mut stopped: Vec<usize> = nodes[..width.nodes]
                .iter()
                .flat_map(|c| c.2.iter().copied())
                .collect();
            stopped.sort_unstable();
            stopped.dedup();
            for id in stopped {
                for &m in &victims.remove(&id).expect("a victim") {
                    free_in[m] = run;
                }
                stop.push((id, job.id));
            }
        }
    }

    /// Drops what is remembered of jobs that are neither waiting nor
    /// running,
    /// and the jobs preemption stopped others for that no longer wait.
    fn forget_finished(&mut self, view: &View<'_>) {
        if self.requeued.is_empty() && self.cleared_for.is_empty() && self.gave_way.is_empty() {
            return;
        }
        let waiting: std::collections::HashSet<usize> = view.pending.iter().map(|j| j.id).collect();
        let running: std::collections::HashSet<usize> = view.running.iter().map(|r| r.id).collect();
        self.requeued
            .retain(|id, _| waiting.contains(id) || running.contains(id));
        self.cleared_for.retain(|id, _| waiting.contains(id));
        self.gave_way
            .retain(|id, _| waiting.contains(id) || running.contains(id));
    }
}

/// The running gangs that may give way for total JCT (preemptible, past
/// their minimum run, not stopped already): (id, machines, work left),
/// the most work left first.
fn gang_victims(
    view: &View<'_>,
    rule: Preemption,
    stop: &[(usize, usize)],
) -> Vec<(usize, Vec<usize>, f64)> {
    let mut machines_of: crate::policy::IdMap<Vec<usize>> = Default::default();
    for r in view.running {
        if r.preemptible && view.now - r.started >= rule.min_run {
            machines_of.entry(r.id).or_default().push(r.machine);
        }
    }
    let mut gangs: Vec<(usize, Vec<usize>, f64)> = machines_of
        .into_iter()
        .filter(|(id, machines)| machines.len() > 1 && !stop.iter().any(|s| s.0 == *id))
        .map(|(id, machines)| {
            let work = machines
                .iter()
                .map(|&m| view.free_in(m))
                .fold(0.0, f64::max);
            (id, machines, work)
        })
        .collect();
    gangs.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    gangs
}

/// The most work left first, each running gang gives way to as many of
/// the jobs `left` waiting (shortest first, with their soonest finish by
/// waiting) as it holds slots, when that lowers the total JCT by enough:
/// each newcomer `i` would otherwise finish at `f_i`, and on the gang's
/// slot at `p_i`, more than a round sooner; the gang, one job, finishes
/// the longest `p_i` plus the restart later. Enough is [`GAIN_ROUNDS`]
/// rounds, as in the narrow rule, but each newcomer needs only less work
/// than the gang has left (SRPT's own rule): with the narrow rule's
/// margin of six times, Gavel's generated traces at 2x took 25.9 to
/// 38.9 h on average where they took 18.0 to 26.8 h (both with gangs
/// overdue at the bound), and at 1.5x were no better. Every slot must be
/// taken: one the gang left idle would feed the matching's next choice,
/// which may hold it long past the newcomers and delay the gang's restart
/// for nothing.
fn preempt_gangs_for_gain(
    view: &View<'_>,
    rule: Preemption,
    gangs: Vec<(usize, Vec<usize>, f64)>,
    left: &[(&PendingJob, f64)],
    free_in: &mut [f64],
    stop: &mut Vec<(usize, usize)>,
) {
    let mut taken = vec![false; left.len()];
    for (id, machines, work) in gangs {
        let flavor = view.machines[machines[0]].flavor;
        let mut newcomers: Vec<(usize, f64)> = Vec::new();
        for (i, &(job, soonest)) in left.iter().enumerate() {
            if newcomers.len() == machines.len() {
                break;
            }
            let Some(p) = job.estimates[flavor].filter(|_| !taken[i]) else {
                continue;
            };
            if p <= work && soonest - p > rule.round {
                newcomers.push((i, p));
            }
        }
        if newcomers.len() < machines.len() {
            continue;
        }
        let saved: f64 = newcomers.iter().map(|&(i, p)| left[i].1 - p).sum();
        let delay = newcomers.iter().map(|c| c.1).fold(0.0, f64::max) + rule.restart;
        if saved - delay <= GAIN_ROUNDS * rule.round {
            continue;
        }
        for (&m, &(i, p)) in machines.iter().zip(&newcomers) {
            taken[i] = true;
            free_in[m] = p;
            stop.push((id, left[i].0.id));
        }
    }
}

/// Where the gang `job` would start and finish soonest without
/// preemption, waiting for busy nodes included: on each flavor it may
/// use, the time its `width.nodes`-th node has `width.per_node` slots
/// free (by `free_in`), plus its run there. `None` if no flavor has
/// nodes enough.
fn gang_soonest_finish(
    view: &View<'_>,
    job: &PendingJob,
    on_node: &std::collections::BTreeMap<usize, Vec<usize>>,
    free_in: &[f64],
) -> Option<(f64, f64)> {
    let width = job.width;
    let mut node_free: Vec<Vec<f64>> = vec![Vec::new(); view.flavors.len()];
    for machines in on_node.values() {
        let f = view.machines[machines[0]].flavor;
        if job.estimates[f].is_none() || machines.len() < width.per_node {
            continue;
        }
        let mut free: Vec<f64> = machines.iter().map(|&m| free_in[m]).collect();
        free.sort_by(f64::total_cmp);
        node_free[f].push(free[width.per_node - 1]);
    }
    (0..view.flavors.len())
        .filter_map(|f| {
            let p = job.estimates[f]?;
            let nodes = &mut node_free[f];
            if nodes.len() < width.nodes {
                return None;
            }
            nodes.sort_by(f64::total_cmp);
            let start = nodes[width.nodes - 1];
            Some((start, start + p))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}
