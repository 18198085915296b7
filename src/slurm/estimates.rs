//! Where a job's run time on each flavor comes from, best first:
//! 1. its hint;
//! 2. the mean of earlier runs with the same user, name and flavor (the
//!    partition, or `partition:type` where a partition is split by GPU
//!    type), once there are [`super::history::TRUSTED_RUNS`] of them (a
//!    time limit is padded);
//! 3. a hint or such a mean on another of its flavors, times the speed
//!    ratio between the two flavors that history learned (the job's
//!    own, else its user's, else everyone's: `History::speed_ratio`);
//! 4. its time limit;
//! 5. the mean of fewer runs;
//! 6. such a mean on another of its flavors, times the speed ratio;
//! 7. the configured default.
//!
//! Where the job never ran on a flavor, the ratio carried there from
//! other jobs is an optimistic one (`History::exploring_ratio`), so that a
//! job is tried where it might be faster.

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
    /// Another flavor's hint or history, times a learned speed ratio.
    Ratio,
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
            Source::Ratio => "speed ratio",
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
    let allowed: Vec<bool> = (0..model.flavors.len())
        .map(|f| {
            let (gpu, nodes) = (model.gpu_flavor[f], &model.flavor_nodes[f]);
            let reachable = job
                .usable_nodes
                .as_ref()
                .is_none_or(|usable| nodes.iter().any(|n| usable.contains(n)));
            let wide_enough = !gpu || job.gpus as usize <= model.flavors[f].per_node;
            let right_type = job.gpu_type.is_none() || job.gpu_type == model.gpu_type[f];
            job.partitions.contains(&model.partition[f])
                && (job.gpus == 0 || gpu)
                && right_type
                && wide_enough
                && reachable
        })
        .collect();
    // The estimates good enough to carry to other flavors: hints and
    // trusted means.
    let known: Vec<Option<(f64, Source)>> = (0..model.flavors.len())
        .map(|f| {
            if !allowed[f] {
                return None;
            }
            let flavor = &model.flavors[f].name;
            let hinted = model.keys_of(f).into_iter().find_map(|k| hint.estimate(k));
            hinted.map(|s| (s, Source::Hint)).or_else(|| {
                history
                    .trusted_mean(&job.user, &job.name, flavor)
                    .map(|s| (s, Source::History))
            })
        })
        .collect();
    (0..model.flavors.len())
        .map(|f| {
            if !allowed[f] {
                return None;
            }
            let flavor = &model.flavors[f].name;
            let carried = || {
                let from = known
                    .iter()
                    .enumerate()
                    .filter_map(|(b, k)| k.map(|(s, _)| (model.flavors[b].name.as_str(), s)));
                history
                    .carry(&job.user, &job.name, flavor, from)
                    .map(|s| (s, Source::Ratio))
            };
            let (s, source) = known[f]
                .or_else(carried)
                .or_else(|| job.time_limit.map(|s| (s, Source::TimeLimit)))
                .or_else(|| {
                    history
                        .mean(&job.user, &job.name, flavor)
                        .map(|s| (s, Source::History))
                })
                .or_else(|| {
                    let fewer = (0..model.flavors.len())
                        .filter(|&b| allowed[b])
                        .filter_map(|b| {
                            let from = model.flavors[b].name.as_str();
                            history.mean(&job.user, &job.name, from).map(|s| (from, s))
                        });
                    history
                        .carry(&job.user, &job.name, flavor, fewer)
                        .map(|s| (s, Source::Ratio))
                })
                .unwrap_or((default_runtime, Source::Default));
            Some((s.max(MIN_PLANNED_SECONDS), source))
        })
        .collect()
}
