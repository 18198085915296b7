//! Where a job's run time on each flavor comes from: its hint, else its
//! time limit, else the mean of earlier jobs with the same user, name and
//! partition, else the configured default.

use super::hints::Hint;
use super::history::History;
use super::slots::SlotModel;
use super::snapshot::JobInfo;

/// The least time a job is planned to hold its slot. Slurm counts whole
/// seconds and a launch takes a fraction of one; and to the matching a
/// zero-length job costs nothing wherever it waits, so a queue of them
/// would be started one per cycle instead of one per free slot.
pub const MIN_PLANNED_SECONDS: f64 = 1.0;

/// Where an estimate came from, for the reason a user sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The user's hint in the job's comment.
    Hint,
    /// The job's time limit.
    TimeLimit,
    /// The mean of earlier runs of the same job.
    History,
    /// The configured default run time.
    Default,
}

/// A job's estimate per flavor of the slot model, and where each came
/// from; `None` where it may not run.
pub type Estimates = Vec<Option<(f64, Source)>>;

impl Source {
    pub(super) fn label(self) -> &'static str {
        match self {
            Source::Hint => "hint",
            Source::TimeLimit => "time limit",
            Source::History => "history",
            Source::Default => "default",
        }
    }
}

/// Estimate per model flavor for `job`; `None` where it may not run (not
/// one of its partitions, no GPU for a GPU job, not the GPU type it asked
/// for, no node wide enough, no node it may use).
pub(super) fn of_job(
    model: &SlotModel,
    job: &JobInfo,
    hint: &Hint,
    history: &History,
    default_runtime: f64,
) -> Estimates {
    (0..model.flavors.len())
        .map(|f| {
            let (gpu, nodes) = (model.gpu_flavor[f], &model.flavor_nodes[f]);
            let partition = &model.partition[f];
            let reachable = job
                .usable_nodes
                .as_ref()
                .is_none_or(|usable| nodes.iter().any(|n| usable.contains(n)));
            let wide_enough = !gpu || job.gpus as usize <= model.flavors[f].per_node;
            let right_type = job.gpu_type.is_none() || job.gpu_type == model.gpu_type[f];
            if !job.partitions.contains(partition)
                || (job.gpus > 0 && !gpu)
                || !right_type
                || !wide_enough
                || !reachable
            {
                return None;
            }
            let hinted = model.keys_of(f).into_iter().find_map(|k| hint.estimate(k));
            let (s, source) = if let Some(s) = hinted {
                (s, Source::Hint)
            } else if let Some(s) = job.time_limit {
                (s, Source::TimeLimit)
            } else if let Some(s) = history.mean(&job.user, &job.name, partition) {
                (s, Source::History)
            } else {
                (default_runtime, Source::Default)
            };
            Some((s.max(MIN_PLANNED_SECONDS), source))
        })
        .collect()
}
