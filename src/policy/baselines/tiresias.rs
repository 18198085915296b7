//! Tiresias (Gu et al., NSDI 2019): discretised two-dimensional
//! least-attained-service, preemptive. A job's attained service is the
//! time it has run times the slots it holds. Thresholds split
//! attained service into priority queues: a job starts in the first and
//! drops a queue each time it crosses a threshold. Better queues go first,
//! first come first served within a queue; a running job outranked by
//! waiting jobs is preempted and keeps its work. Like SJF, each job runs on
//! its fastest flavor: Tiresias does not weigh flavors against each other.
//!
//! The policy keeps each job's service from its earlier runs itself (it is
//! the only one that stops them), and asks to be woken when a running job
//! will cross its next threshold, so a demotion takes effect on time.

use super::{
    best_flavor, outranked, start_in_order, IdMap, PendingJob, Policy, PolicyError, Ranked,
    RunningJob, Start, View,
};

/// Tiresias's discretised two-dimensional least attained service: jobs drop to
/// lower-priority queues as their service grows.
#[derive(Clone, Debug)]
pub struct Tiresias {
    /// Attained service (slot-seconds) where a job drops to the next queue,
    /// ascending.
    pub thresholds: Vec<f64>,
    /// Service each job had before its current run.
    served: IdMap<f64>,
    /// Each job's arrival, noted while it waits: a running job's is not in
    /// the view, and first come first served within a queue needs it.
    /// With it, the slots the job holds.
    arrivals: IdMap<(f64, usize)>,
}

impl Default for Tiresias {
    /// Three queues, split at one hour and ten hours of service.
    fn default() -> Self {
        Tiresias::new(vec![3600.0, 36_000.0])
    }
}

impl Tiresias {
    /// Tiresias with queue boundaries at `thresholds` seconds of service,
    /// ascending.
    pub fn new(thresholds: Vec<f64>) -> Self {
        Tiresias {
            thresholds,
            served: IdMap::default(),
            arrivals: IdMap::default(),
        }
    }

    fn queue(&self, service: f64) -> usize {
        self.thresholds
            .iter()
            .take_while(|&&t| t <= service)
            .count()
    }

    fn served(&self, id: usize) -> f64 {
        self.served.get(&id).copied().unwrap_or(0.0)
    }

    /// The slots job `id` holds, as noted while it waited (1 if never seen).
    fn slots(&self, id: usize) -> f64 {
        self.arrivals.get(&id).map_or(1.0, |&(_, s)| s as f64)
    }

    fn attained(&self, view: &View<'_>, job: &RunningJob) -> f64 {
        self.served(job.id) + (view.now - job.started).max(0.0) * self.slots(job.id)
    }

    /// Waiting jobs keyed by queue, arrival, id (best first).
    fn keyed<'a>(&self, view: &View<'a>) -> Vec<(WaitKey, &'a PendingJob)> {
        view.pending
            .iter()
            .map(|j| {
                let key = (
                    self.queue(self.served(j.id)),
                    crate::ordered::TotalF64(j.arrival),
                    j.id,
                );
                (key, j)
            })
            .collect()
    }
}

type WaitKey = (usize, crate::ordered::TotalF64, usize);

impl Policy for Tiresias {
    fn label(&self) -> String {
        "tiresias".into()
    }

    fn preempt(&mut self, view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        // Forget the jobs that have ended.
        let live: IdMap<()> = view
            .pending
            .iter()
            .map(|j| j.id)
            .chain(view.running.iter().map(|j| j.id))
            .map(|id| (id, ()))
            .collect();
        self.served.retain(|id, _| live.contains_key(id));
        self.arrivals.retain(|id, _| live.contains_key(id));
        for job in view.pending {
            self.arrivals
                .insert(job.id, (job.arrival, job.width.slots()));
        }

        // (queue, arrival, running first, id) and the job's claim.
        type Key = (usize, crate::ordered::TotalF64, bool, usize);
        let mut ranked: Vec<(Key, Ranked)> = Vec::new();
        for job in view.running {
            let flavor = view.machines[job.machine].flavor;
            let since = self.arrivals.get(&job.id).map_or(job.started, |a| a.0);
            let key = (
                self.queue(self.attained(view, job)),
                crate::ordered::TotalF64(since),
                false,
                job.id,
            );
            ranked.push((key, Ranked::Running { id: job.id, flavor }));
        }
        for job in view.pending {
            if let Some((flavor, _)) = best_flavor(&job.estimates, view.flavors) {
                let key = (
                    self.queue(self.served(job.id)),
                    crate::ordered::TotalF64(job.arrival),
                    true,
                    job.id,
                );
                let width = job.width;
                ranked.push((key, Ranked::Pending { flavor, width }));
            }
        }
        let stop = outranked(view, &ranked);
        // A gang is listed once per slot: its service is taken once.
        let totals: IdMap<f64> = view
            .running
            .iter()
            .filter(|j| stop.contains(&j.id))
            .map(|j| (j.id, self.attained(view, j)))
            .collect();
        self.served.extend(totals);
        Ok(stop)
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        for job in view.pending {
            self.arrivals
                .insert(job.id, (job.arrival, job.width.slots()));
        }
        // Keying the queue costs a pass and a lookup per job; with no slot
        // free it would start nothing.
        if view.idle_machines().next().is_none() {
            return Ok(Vec::new());
        }
        Ok(start_in_order(view, &self.keyed(view)))
    }

    fn wake_at(&self, view: &View<'_>) -> Option<f64> {
        if view.pending.is_empty() {
            return None;
        }
        view.running
            .iter()
            .filter_map(|job| {
                let attained = self.attained(view, job);
                let next = self.thresholds.iter().find(|&&t| t > attained)?;
                Some(view.now + (next - attained) / self.slots(job.id))
            })
            .min_by(f64::total_cmp)
    }
}
