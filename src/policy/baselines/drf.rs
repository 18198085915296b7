//! Dominant resource fairness across users, as AlloX's DRF baselines run
//! it. The resources are the flavors' slots; a user's dominant share is its
//! largest fraction of any flavor's slots in use, over its weight.
//! Progressive filling: while some user has a job that can start, the user
//! with the smallest dominant share (ties: lower index) starts one, and its
//! share grows.
//!
//! - `drf-fifo` (AlloX's DRFF): each user's jobs in arrival order, every
//!   job on the GPU (the first flavor whose name contains `gpu`; a job that
//!   cannot use it, or a cluster without one, takes its fastest flavor).
//! - `drf-sjf` (AlloX's DRFS): each user's jobs shortest first, each job on
//!   its fastest flavor.
//!
//! A job whose flavor is full waits without blocking its user's later
//! jobs. Neither variant ever moves a job to a slower flavor to start it
//! sooner: that trade is what AlloX and the matching are for.

use super::{progressive_filling, IdleNodes, PendingJob, Policy, PolicyError, Start, View};
use crate::model::best_flavor;
use crate::ordered::TotalF64 as Total;

/// Within a user: (length for shortest first, else 0; arrival; id).
type Key = (Total, Total, usize);

/// How DRF orders and places each user's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Arrival order within a user, every job on the GPU.
    Fifo,
    /// Shortest first within a user, each job on its fastest flavor.
    ShortestFirst,
}

/// Dominant resource fairness over the flavors: the user with the smallest
/// dominant share starts a job next.
#[derive(Clone, Debug)]
pub struct Drf {
    /// How jobs are ordered and placed within a user.
    pub variant: Variant,
}

impl Drf {
    /// DRF with [`Variant::Fifo`].
    pub fn fifo() -> Self {
        Drf {
            variant: Variant::Fifo,
        }
    }

    /// DRF with [`Variant::ShortestFirst`].
    pub fn sjf() -> Self {
        Drf {
            variant: Variant::ShortestFirst,
        }
    }

    /// The one flavor `job` runs on under this variant.
    fn flavor_for(&self, view: &View<'_>, gpu: Option<usize>, job: &PendingJob) -> Option<usize> {
        let fastest = || best_flavor(&job.estimates, view.flavors).map(|b| b.0);
        match self.variant {
            Variant::ShortestFirst => fastest(),
            Variant::Fifo => gpu.filter(|&g| job.estimates[g].is_some()).or_else(fastest),
        }
    }
}

/// The first flavor with slots whose name contains `gpu`, any case.
fn gpu_flavor(view: &View<'_>) -> Option<usize> {
    view.flavors
        .iter()
        .position(|f| f.slots > 0 && f.name.to_ascii_lowercase().contains("gpu"))
}

/// Each user's dominant share of `used` slots, over its weight.
pub(crate) fn dominant_share(view: &View<'_>, used: &[usize], weight: f64) -> f64 {
    used.iter()
        .zip(view.flavors)
        .filter(|(_, f)| f.slots > 0)
        .map(|(&n, f)| n as f64 / f.slots as f64)
        .fold(0.0, f64::max)
        / weight
}

/// Slots of each flavor each user's running jobs hold, `[user][flavor]`.
pub(crate) fn slots_in_use(view: &View<'_>) -> Vec<Vec<usize>> {
    let mut used = vec![vec![0; view.flavors.len()]; view.user_weights.len()];
    for job in view.running {
        used[job.user][view.machines[job.machine].flavor] += 1;
    }
    used
}

impl Policy for Drf {
    fn label(&self) -> String {
        match self.variant {
            Variant::Fifo => "drf-fifo".into(),
            Variant::ShortestFirst => "drf-sjf".into(),
        }
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut idle = IdleNodes::new(view);
        if !idle.any() {
            return Ok(Vec::new());
        }
        let mut used = slots_in_use(view);
        // Each user's queue: (order key, job, its flavor). A job whose
        // flavor has no idle machine now cannot start in this decision,
        // since machines only get taken; and no user starts more jobs than
        // there are idle machines, so only that many of each queue are
        // sorted (the queues of a deep backlog are long).
        let gpu = gpu_flavor(view);
        let shortest_first = self.variant == Variant::ShortestFirst;
        let mut queues: Vec<Vec<(Key, &PendingJob, usize)>> = vec![Vec::new(); used.len()];
        for job in view.pending {
            match self.flavor_for(view, gpu, job) {
                Some(f) if idle.fits(f, job.width) => {
                    let length = if shortest_first {
                        job.estimates[f].unwrap_or(f64::INFINITY)
                    } else {
                        0.0
                    };
                    queues[job.user].push(((Total(length), Total(job.arrival), job.id), job, f));
                }
                _ => {}
            }
        }
        let idle_count = view.idle_machines().count();
        for q in &mut queues {
            if q.len() > idle_count {
                q.select_nth_unstable_by(idle_count, |a, b| a.0.cmp(&b.0));
                q.truncate(idle_count);
            }
            q.sort_unstable_by_key(|e| e.0);
        }
        let queues = queues
            .into_iter()
            .map(|q| q.into_iter().map(|(_, job, _)| job).collect())
            .collect();
        let starts = progressive_filling(
            &mut used,
            queues,
            &mut idle,
            |used, u| dominant_share(view, &used[u], view.user_weights[u]),
            |job, idle| {
                self.flavor_for(view, gpu, job)
                    .filter(|&f| idle.fits(f, job.width))
            },
            |used, u, f, slots| used[u][f] += slots,
        );
        Ok(starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baselines::testing::{pending, running, two_flavors, view};

    #[test]
    fn free_gpus_go_to_the_user_with_the_smaller_dominant_share() {
        let (flavors, mut machines) = two_flavors(4, 4);
        // User 0 already holds 2 of 4 GPUs (share 1/2); user 1 holds none.
        machines[0].idle = false;
        machines[1].idle = false;
        let run = [
            running(10, 0, 0, [Some(5.0), Some(50.0)]),
            running(11, 0, 1, [Some(5.0), Some(50.0)]),
        ];
        let jobs: Vec<_> = (0..6)
            .map(|i| pending(i, i % 2, i as f64, [Some(5.0), Some(50.0)]))
            .collect();
        let starts = Drf::fifo()
            .decide(&view(&flavors, &machines, &jobs, &run))
            .unwrap();
        // Both free GPUs go to user 1, which equalises the shares at 1/2;
        // no job takes a CPU, since every job runs on the GPU.
        assert_eq!(
            starts,
            vec![Start { job: 1, machine: 2 }, Start { job: 3, machine: 3 }]
        );
    }

    #[test]
    fn shares_stay_equal_as_slots_fill() {
        let (flavors, machines) = two_flavors(2, 4);
        let jobs: Vec<_> = (0..12)
            .map(|i| pending(i, i % 2, i as f64, [Some(50.0), Some(10.0)]))
            .collect();
        let starts = Drf::sjf()
            .decide(&view(&flavors, &machines, &jobs, &[]))
            .unwrap();
        // Every job is fastest on a CPU: 4 CPUs split 2 and 2, GPUs unused.
        let per_user = |u: usize| starts.iter().filter(|s| s.job % 2 == u).count();
        assert_eq!(starts.len(), 4);
        assert_eq!((per_user(0), per_user(1)), (2, 2));
        assert!(starts.iter().all(|s| machines[s.machine].flavor == 1));
    }

    #[test]
    fn drf_sjf_starts_a_users_shortest_job_first() {
        let (flavors, machines) = two_flavors(1, 0);
        let jobs = [
            pending(0, 0, 0.0, [Some(30.0), None]),
            pending(1, 0, 1.0, [Some(10.0), None]),
        ];
        let v = view(&flavors, &machines, &jobs, &[]);
        assert_eq!(Drf::sjf().decide(&v).unwrap()[0].job, 1);
        assert_eq!(Drf::fifo().decide(&v).unwrap()[0].job, 0);
    }
}
