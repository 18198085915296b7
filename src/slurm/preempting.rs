//! What the planner remembers of the preemptions it asked Slurm for: a
//! job sent its `--signal` and waiting out its notice, a job requeued and
//! still leaving its node, a job Slurm would not preempt. A preemption
//! counts only once Slurm's answer says it was carried out (decisions can
//! be dropped when slurmctld's state changed under the plan), and while
//! one is under way no other starts: the waiting job it is for already
//! holds the slot that is coming free. A requeue whose notice ends after
//! the waiting job it was for has started (elsewhere) is cancelled.

use super::snapshot::{Outcome, Snapshot};
use std::collections::HashMap;

/// Seconds a preempted job's slots are believed busy after its requeue
/// (SIGTERM, the job's exit, the epilog): the plan may hold an overdue job
/// for them, not start one there.
pub const LEAVES_AFTER: f64 = 5.0;

/// Seconds after which a requeued job still listed as running (its end
/// taking longer than Slurm's `KillWait` and the epilog) is planned as
/// running again.
const LEAVING_AT_MOST: f64 = 60.0;

/// What one plan asked of a running job.
#[derive(Clone, Copy, Debug)]
struct Asked {
    /// Its `--signal` now, the requeue at this time; `None`: the requeue.
    notice_until: Option<f64>,
    /// The waiting job it is preempted for.
    for_job: Option<u32>,
}

/// A job in its notice.
#[derive(Clone, Copy, Debug)]
struct Notice {
    /// When its requeue is due.
    until: f64,
    /// The waiting job it is preempted for: if that job no longer waits
    /// when the notice ends, the requeue is cancelled.
    for_job: Option<u32>,
}

/// The preemptions under way, by Slurm job id.
#[derive(Debug, Default)]
pub(super) struct Preempting {
    /// Asked by the last plan, until Slurm's answer.
    asked: HashMap<u32, Asked>,
    /// Signalled: when their notice ends and the requeue is due.
    notified: HashMap<u32, Notice>,
    /// Requeued and still listed as running: since when.
    leaving: HashMap<u32, f64>,
    /// Slurm refused to signal or requeue them: not asked again until then.
    spared: HashMap<u32, f64>,
}

impl Preempting {
    /// Whether a preemption Slurm carried out is under way: the job is in
    /// its notice, or leaving its node. (One only asked is not: it counts
    /// once answered.)
    pub(super) fn under_way(&self) -> bool {
        !self.notified.is_empty() || !self.leaving.is_empty()
    }

    /// The signalled jobs whose notice is over at `now`, in id order, and
    /// the waiting job each was preempted for.
    pub(super) fn due(&self, now: f64) -> Vec<(u32, Option<u32>)> {
        let mut due: Vec<(u32, Option<u32>)> = self
            .notified
            .iter()
            .filter(|(_, n)| n.until <= now)
            .map(|(id, n)| (*id, n.for_job))
            .collect();
        due.sort_unstable();
        due
    }

    /// The plan asks Slurm to signal `job_id` (its requeue due at
    /// `notice_until`) or to requeue it now, for waiting job `for_job`.
    pub(super) fn ask(&mut self, job_id: u32, notice_until: Option<f64>, for_job: Option<u32>) {
        self.asked.insert(
            job_id,
            Asked {
                notice_until,
                for_job,
            },
        );
    }

    /// The requeue of signalled job `job_id` is no longer needed: it runs
    /// on, and is not chosen again until `spared_until`.
    pub(super) fn cancel(&mut self, job_id: u32, spared_until: f64) {
        self.notified.remove(&job_id);
        self.spared.insert(job_id, spared_until);
    }

    /// Slurm's answer to a preemption the last plan asked for.
    pub(super) fn observe(&mut self, o: &Outcome, retry_after: f64) {
        let Some(asked) = self.asked.remove(&o.job_id) else {
            return;
        };
        match (&o.result, asked.notice_until) {
            (Ok(_), Some(until)) => {
                let for_job = asked.for_job;
                self.notified.insert(o.job_id, Notice { until, for_job });
            }
            (Ok(_), None) => {
                self.notified.remove(&o.job_id);
                self.leaving.insert(o.job_id, o.at);
            }
            (Err(refusal), _) => {
                log::info!("job {} not preempted: {}", o.job_id, refusal.reason);
                self.notified.remove(&o.job_id);
                self.spared.insert(o.job_id, o.at + retry_after);
            }
        }
    }

    /// Forgets jobs no longer running, leavings that took too long, and
    /// spared jobs whose time is up; and the last plan's questions, whose
    /// answers did not come (the decisions were dropped).
    pub(super) fn forget_gone(&mut self, snap: &Snapshot) {
        let running: std::collections::HashSet<u32> =
            snap.running.iter().map(|j| j.job_id).collect();
        let now = snap.now;
        self.asked.clear();
        self.notified.retain(|id, _| running.contains(id));
        self.leaving
            .retain(|id, since| running.contains(id) && *since + LEAVING_AT_MOST > now);
        self.spared
            .retain(|id, until| running.contains(id) && *until > now);
    }

    /// Whether `job_id` may be chosen: not being preempted, not spared.
    pub(super) fn may_choose(&self, job_id: u32) -> bool {
        !self.notified.contains_key(&job_id)
            && !self.leaving.contains_key(&job_id)
            && !self.spared.contains_key(&job_id)
    }

    /// When a job being preempted should have left its slots.
    pub(super) fn leaves_at(&self, job_id: u32) -> Option<f64> {
        self.leaving
            .get(&job_id)
            .copied()
            .or_else(|| self.notified.get(&job_id).map(|n| n.until))
            .map(|t| t + LEAVES_AFTER)
    }
}
