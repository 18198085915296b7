//! Slurm's own scheduling, as `sched/backfill` does it with its defaults:
//! jobs in priority order (the age factor alone: oldest first), each in
//! the partition (flavor) where it can start soonest, its time limit the
//! estimate there (ties: the faster flavor, then the lower index). A job
//! that can start now starts; one that cannot holds a reservation at its
//! earliest start, and no job behind it may delay that. `easy` holds one
//! reservation (EASY backfill, the textbook variant); `conservative` holds
//! one for each of the first [`BF_MAX_JOB_TEST`] jobs, as Slurm's backfill
//! plans every job it tests, and none beyond [`BF_WINDOW`]. Either tests
//! only the first [`BF_MAX_JOB_TEST`] jobs of the queue per pass, as
//! Slurm's backfill does per cycle. Gangs take whole nodes' worth of slots as
//! their width asks (best fit), via [`crate::policy::gang_plan`].
//!
//! As in Slurm, that pass runs every [`BF_INTERVAL`] seconds; at the
//! events in between, Slurm's main scheduler runs: jobs in priority order,
//! each started where it starts now, up to the first that cannot start
//! now (the reservations of the last pass are then held by that job being
//! first: nothing passes it). Planning every job at every event would also
//! cost `O(queue x reservations)` per event, beyond a full Philly trace.

use super::{by_arrival, PendingJob, Policy, PolicyError, Start, View};
use crate::policy::gang_plan::{self, Placement, Schedule};
use crate::policy::Forecast;

/// Jobs Slurm's backfill tests per cycle by default (`bf_max_job_test`).
pub const BF_MAX_JOB_TEST: usize = 500;

/// How far ahead Slurm's backfill plans by default (`bf_window`, one day):
/// a job that cannot start within it holds no reservation.
pub const BF_WINDOW: f64 = 86_400.0;

/// Seconds between two backfill passes (`bf_interval`'s default).
pub const BF_INTERVAL: f64 = 30.0;

/// Slurm's backfill; see the module's description.
#[derive(Clone, Debug)]
pub struct SlurmBackfill {
    /// Reservations held per pass: 1 for EASY, [`BF_MAX_JOB_TEST`] for
    /// conservative.
    reservations: usize,
    /// Seconds between two backfill passes.
    interval: f64,
    /// When the last backfill pass ran.
    last_pass: Option<f64>,
    /// The last pass's reservations: what `squeue --start` shows.
    reserved: Vec<Forecast>,
}

impl SlurmBackfill {
    /// EASY backfill: only the first job that cannot start reserves.
    pub fn easy() -> Self {
        SlurmBackfill {
            reservations: 1,
            interval: BF_INTERVAL,
            last_pass: None,
            reserved: Vec::new(),
        }
    }

    /// Every tested job reserves, as Slurm's `sched/backfill` plans them.
    pub fn conservative() -> Self {
        SlurmBackfill {
            reservations: BF_MAX_JOB_TEST,
            interval: BF_INTERVAL,
            last_pass: None,
            reserved: Vec::new(),
        }
    }

    /// The same with backfill passes every `seconds` (`bf_interval`).
    pub fn with_interval(self, seconds: f64) -> Self {
        SlurmBackfill {
            interval: seconds,
            ..self
        }
    }

    /// Slurm's main scheduler: in priority order, each job where it
    /// starts now (fastest flavor first), up to the first that cannot.
    fn main_pass(view: &View<'_>) -> Vec<Start> {
        let (nodes, idle) = gang_plan::view_nodes(view);
        let mut schedule = Schedule::new(&nodes, view.flavors.len());
        let order: Vec<&PendingJob> = by_arrival(view.pending);
        let mut placed: Vec<Placement> = Vec::new();
        for (i, job) in order.iter().enumerate() {
            let Some((p, on)) = start_now(&schedule, job) else {
                break;
            };
            schedule.hold(&on, job.width, 0.0, p);
            placed.push(Placement {
                job: i,
                nodes: on,
                start: 0.0,
                end: p,
            });
        }
        gang_plan::starts_now(&placed, &order, &idle)
    }
}

/// Where `job` starts now on `schedule`, fastest flavor first (ties: the
/// lower flavor): its run time there and its nodes.
fn start_now(schedule: &Schedule, job: &PendingJob) -> Option<(f64, Vec<usize>)> {
    job.estimates
        .iter()
        .enumerate()
        .filter_map(|(f, p)| {
            let p = (*p)?;
            Some((p, f, schedule.fit_at(f, job.width, 0.0, p)?))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(p, _, on)| (p, on))
}

impl Policy for SlurmBackfill {
    fn label(&self) -> String {
        if self.reservations == 1 {
            "slurm-easy".into()
        } else {
            "slurm-backfill".into()
        }
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        if view.idle_machines().next().is_none() {
            return Ok(Vec::new());
        }
        if self.last_pass.is_some_and(|t| view.now < t + self.interval) {
            return Ok(Self::main_pass(view));
        }
        self.last_pass = Some(view.now);
        self.reserved.clear();
        let (nodes, idle) = gang_plan::view_nodes(view);
        let mut free: usize = idle.iter().map(Vec::len).sum();
        let mut schedule = Schedule::new(&nodes, view.flavors.len());
        let order: Vec<&PendingJob> = by_arrival(view.pending);
        let mut placed: Vec<Placement> = Vec::new();
        let mut reserved = 0;
        for (i, job) in order.iter().enumerate() {
            if (free == 0 && reserved >= self.reservations) || i >= BF_MAX_JOB_TEST {
                break;
            }
            let now = (free >= job.width.slots())
                .then(|| start_now(&schedule, job))
                .flatten();
            if let Some((p, on)) = now {
                schedule.hold(&on, job.width, 0.0, p);
                free -= job.width.slots();
                placed.push(Placement {
                    job: i,
                    nodes: on,
                    start: 0.0,
                    end: p,
                });
                continue;
            }
            if reserved >= self.reservations {
                continue;
            }
            // Else its soonest start reserves (ties: the faster flavor).
            let soonest = job
                .estimates
                .iter()
                .enumerate()
                .filter_map(|(f, p)| {
                    let p = (*p)?;
                    let (t, on) = schedule.earliest(f, job.width, p)?;
                    Some((t, p, f, on))
                })
                .min_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then(a.1.total_cmp(&b.1))
                        .then(a.2.cmp(&b.2))
                });
            if let Some((t, p, flavor, on)) = soonest {
                if t <= BF_WINDOW {
                    schedule.hold(&on, job.width, t, p);
                    reserved += 1;
                    self.reserved.push(Forecast {
                        job: job.id,
                        at: view.now + t,
                        flavor,
                    });
                }
            }
        }
        Ok(gang_plan::starts_now(&placed, &order, &idle))
    }

    fn forecast(&self, _more: &[PendingJob]) -> Vec<Forecast> {
        self.reserved.clone()
    }

    fn wake_at(&self, view: &View<'_>) -> Option<f64> {
        let next = self.last_pass? + self.interval;
        (!view.pending.is_empty() && next > view.now).then_some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baselines::testing::{pending, two_flavors, view};

    #[test]
    fn oldest_first_each_where_it_starts_soonest() {
        let (flavors, mut machines) = two_flavors(1, 1);
        machines[0].idle = false;
        machines[0].free_at = 50.0;
        // Job 0 is faster on the busy GPU but can start now on the CPU.
        let jobs = [
            pending(0, 0, 0.0, [Some(10.0), Some(100.0)]),
            pending(1, 0, 1.0, [Some(5.0), Some(5.0)]),
        ];
        let starts = SlurmBackfill::easy()
            .decide(&view(&flavors, &machines, &jobs, &[]))
            .unwrap();
        assert_eq!(starts, vec![Start { job: 0, machine: 1 }]);
    }

    #[test]
    fn a_later_job_backfills_only_where_it_delays_no_reservation() {
        // Two GPU slots (nodes of one), one busy for 50 s more. Job 0 needs
        // both: it reserves t = 50. Job 1 (100 s) would delay it, so it
        // waits; job 2 (30 s) backfills on the idle slot, ending first.
        let (flavors, mut machines) = two_flavors(2, 0);
        machines[0].idle = false;
        machines[0].free_at = 60.0;
        let mut jobs = vec![
            pending(0, 0, 0.0, [Some(40.0), None]),
            pending(1, 1, 1.0, [Some(100.0), None]),
            pending(2, 1, 2.0, [Some(30.0), None]),
        ];
        jobs[0].width = crate::model::Width::new(1, 2).unwrap();
        for mut policy in [SlurmBackfill::easy(), SlurmBackfill::conservative()] {
            let starts = policy
                .decide(&view(&flavors, &machines, &jobs, &[]))
                .unwrap();
            assert_eq!(starts, vec![Start { job: 2, machine: 1 }]);
        }
    }

    #[test]
    fn between_passes_nothing_passes_the_first_job_that_cannot_start() {
        // As above; a pass ran 10 s ago. Slurm's main scheduler stops at
        // job 0, so job 2 waits for the next pass, which is asked for.
        let (flavors, mut machines) = two_flavors(2, 0);
        machines[0].idle = false;
        machines[0].free_at = 60.0;
        let mut jobs = vec![
            pending(0, 0, 0.0, [Some(40.0), None]),
            pending(2, 1, 2.0, [Some(30.0), None]),
        ];
        jobs[0].width = crate::model::Width::new(1, 2).unwrap();
        let mut policy = SlurmBackfill::conservative();
        policy.last_pass = Some(0.0);
        let v = view(&flavors, &machines, &jobs, &[]);
        assert_eq!(policy.decide(&v).unwrap(), vec![]);
        assert_eq!(policy.wake_at(&v), Some(BF_INTERVAL));
        // At the pass, job 2 backfills.
        let at_pass = View {
            now: BF_INTERVAL,
            ..v
        };
        assert_eq!(
            policy.decide(&at_pass).unwrap(),
            vec![Start { job: 2, machine: 1 }]
        );
        // Between passes, jobs start in order while they fit.
        jobs[0].width = crate::model::Width::ONE;
        let v = view(&flavors, &machines, &jobs, &[]);
        policy.last_pass = Some(0.0);
        assert_eq!(
            policy.decide(&v).unwrap(),
            vec![Start { job: 0, machine: 1 }]
        );
    }
}
