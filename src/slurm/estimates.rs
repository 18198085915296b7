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
//! 7. a typical run of its user's (`History::typical`), the same on every
//!    flavor;
//! 8. the configured default.
//!
//! Where the job never ran on a flavor, the ratio carried there from
//! other jobs is an optimistic one (`History::exploring_ratio`), so that a
//! job is tried where it might be faster; but not while a run of the same
//! job is in flight there (`history::explores`): one run explores at a
//! time.
//!
//! Whatever the source but a hint, a pending job's estimate is at least
//! the time a run of the same job (user and name) in flight on that
//! flavor has run so far, up to the job's own time limit
//! (`history::in_flight`): nothing is learned of a job until its first
//! run ends, and the runs that queue meanwhile would otherwise follow a
//! long one onto the same flavor at the default. Runs in flight are those
//! of the plan's snapshot: the runs one plan starts do not see each other.
//! A running job's own estimates are not raised (`Planner`'s
//! `PlanMemory::estimates`).

use super::hints::Hint;
use super::history::{self, History};
use super::shapes;
use super::slots::SlotModel;
use super::snapshot::{JobInfo, Snapshot};
use std::collections::HashMap;

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
    /// A typical run of the job's user's, where nothing is known of the
    /// job.
    Typical,
    /// The configured default run time.
    Default,
    /// The time a run of the same job in flight has run so far.
    InFlight,
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
            Source::Typical => "user's typical run",
            Source::Default => "default",
            Source::InFlight => "a run in flight",
        }
    }
}

/// Estimate per model flavor for `job`; `None` where it may not run (not
/// one of its partitions, no GPU for a GPU job, shards for a job that
/// asks for none or none for one that does, not the GPU type it asked
/// for, no node wide enough, no node it may use).
pub(super) fn of_job(
    model: &SlotModel,
    job: &JobInfo,
    hint: &Hint,
    history: &History,
    default_runtime: f64,
    in_flight: &InFlight,
) -> Estimates {
    let running = in_flight.of_job(job).unwrap_or(&[]);
    let width = shapes::width(job, model);
    let allowed: Vec<bool> = (0..model.flavors.len())
        .map(|f| {
            let (gpu, nodes) = (model.gpu_flavor[f], &model.flavor_nodes[f]);
            let reachable = match &job.usable_nodes {
                None => nodes.len(),
                Some(usable) => nodes.iter().filter(|n| usable.contains(n)).count(),
            };
            let sliced = gpu || model.shard_flavor[f];
            let wide_enough = !sliced || width.per_node <= model.flavors[f].per_node;
            let right_type = job.gpu_type.is_none() || job.gpu_type == model.gpu_type[f];
            job.partitions.contains(&model.partition[f])
                && (job.shards > 0) == model.shard_flavor[f]
                && (!shapes::wants_gpus(job) || gpu)
                && right_type
                && wide_enough
                && reachable >= width.nodes
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
            let explore = history::explores(running, f);
            let carried = || {
                let from = known
                    .iter()
                    .enumerate()
                    .filter_map(|(b, k)| k.map(|(s, _)| (model.flavors[b].name.as_str(), s)));
                history
                    .carry(&job.user, &job.name, flavor, from, explore)
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
                        .carry(&job.user, &job.name, flavor, fewer, explore)
                        .map(|s| (s, Source::Ratio))
                })
                .or_else(|| history.typical(&job.user).map(|s| (s, Source::Typical)))
                .unwrap_or((default_runtime, Source::Default));
            // Never past the job's own limit: Slurm ends it there.
            let floor = running.get(f).copied().flatten();
            let floor = floor.map(|r| job.time_limit.map_or(r, |l| r.min(l)));
            let (s, source) = match floor {
                Some(r) if source != Source::Hint && history::in_flight(s, Some(r)) > s => {
                    (r, Source::InFlight)
                }
                _ => (s, source),
            };
            Some((s.max(MIN_PLANNED_SECONDS), source))
        })
        .collect()
}

/// The runs in flight: per job (user and name), how long its longest
/// running record has run so far on each flavor of the slot model.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    /// user -> job name -> per flavor
    by_job: HashMap<String, HashMap<String, Vec<Option<f64>>>>,
}

impl InFlight {
    /// The runs of `snap`'s running jobs, on the flavors of `model`.
    pub fn of(snap: &Snapshot, model: &SlotModel) -> InFlight {
        let node_index = snap.node_index();
        let mut by_job: HashMap<String, HashMap<String, Vec<Option<f64>>>> = HashMap::new();
        for job in &snap.running {
            let Some(place) = &job.running else { continue };
            let Some(f) = place
                .nodes
                .first()
                .and_then(|node| node_index.get(node.as_str()))
                .and_then(|&n| {
                    model.flavor_on(
                        snap,
                        &place.partition,
                        n,
                        job.gpu_type.as_deref(),
                        job.shards > 0,
                    )
                })
            else {
                continue;
            };
            let elapsed = (snap.now - place.start).max(0.0);
            let per_flavor = by_job
                .entry(job.user.clone())
                .or_default()
                .entry(job.name.clone())
                .or_insert_with(|| vec![None; model.flavors.len()]);
            per_flavor[f] = Some(per_flavor[f].map_or(elapsed, |e: f64| e.max(elapsed)));
        }
        InFlight { by_job }
    }

    /// Per model flavor, how long `job`'s longest run in flight there has
    /// run; `None` when no run of it is in flight.
    fn of_job(&self, job: &JobInfo) -> Option<&[Option<f64>]> {
        self.by_job
            .get(&job.user)
            .and_then(|names| names.get(&job.name))
            .map(Vec::as_slice)
    }
}
