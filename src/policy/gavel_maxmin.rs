//! Gavel's heterogeneity-aware max-min fairness (Narayanan et al., OSDI
//! 2020), round-based and preemptive.
//!
//! At the start of each round (360 s by default) an LP over the active jobs
//! (waiting or running) picks an allocation `x[j][f]`: the share of the
//! round job `j` should spend on flavor `f`.
//!
//!   maximise t  subject to
//!     sum_f x[j][f] * T[j][f] / T_eq[j] >= t   for every job (fairness)
//!     sum_f x[j][f] <= 1                       (a job holds one slot)
//!     sum_j x[j][f] <= slots[f]                (capacity)
//!
//! `T[j][f] = 1 / p[j][f]` is the job's throughput on `f` (its share of the
//! work done per second), and `T_eq[j]` is its throughput on an equal time
//! share: `slots[f] / n` of every flavor, scaled down to at most one slot in
//! all. So `t` is the normalised effective throughput that Gavel equalises.
//! The LP is solved with `good_lp` (the pure-Rust `microlp` backend).
//!
//! Gavel's round mechanism then places jobs: pairs `(j, f)` go in order of
//! `x[j][f]` over the rounds `j` already had on `f` (plus one), each taking
//! a free slot of `f` if the job has none yet. Pairs the LP gave nothing
//! fill what is left, fastest first, so no slot idles while a job waits.
//! Running jobs outside the round's placement are preempted and keep their
//! work. A job arriving mid-round waits for a free slot or the next round.
//! Every job counts once, with weight 1: Gavel's max-min is per job.

use super::{best_flavor, PendingJob, Policy, PolicyError, Start, View};
use crate::model::Flavor;
use good_lp::{constraint, variable, Expression, ProblemVariables, Solution, SolverModel};
use std::collections::HashMap;

/// The round length Gavel's experiments use, in seconds.
pub const ROUND_SECONDS: f64 = 360.0;

#[derive(Clone, Debug)]
pub struct GavelMaxMin {
    pub round: f64,
    /// When the current round ends; `None` before the first.
    round_end: Option<f64>,
    /// The round's placement: job id -> flavor.
    placed: HashMap<usize, usize>,
    /// Rounds each job has had on each flavor, `(job, flavor) -> rounds`.
    rounds: HashMap<(usize, usize), f64>,
}

impl Default for GavelMaxMin {
    fn default() -> Self {
        GavelMaxMin::new(ROUND_SECONDS)
    }
}

/// The LP's answer: the fair level `t`, and `x[j][f]` per job.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    pub level: f64,
    pub shares: Vec<Vec<f64>>,
}

/// Solves the max-min LP for jobs with run times `times[j][f]` (`None`:
/// cannot run there) on `flavors`.
pub fn allocation(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
) -> Result<Allocation, PolicyError> {
    let n = times.len();
    if n == 0 {
        return Ok(Allocation {
            level: 0.0,
            shares: Vec::new(),
        });
    }
    let total: f64 = flavors.iter().map(|f| f.slots as f64).sum();
    // An equal time share: slots[f] / n of every flavor, at most one slot.
    let scale = (total / n as f64).max(1.0);
    let equal = |f: usize| flavors[f].slots as f64 / n as f64 / scale;
    let throughput = |p: f64| if p > 0.0 { 1.0 / p } else { 1e9 };
    let mut vars = ProblemVariables::new();
    let level = vars.add(variable().min(0.0));
    let x: Vec<Vec<Option<good_lp::Variable>>> = times
        .iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(f, p)| {
                    (p.is_some() && flavors[f].slots > 0)
                        .then(|| vars.add(variable().min(0.0).max(1.0)))
                })
                .collect()
        })
        .collect();
    let mut model = vars.maximise(level).using(good_lp::microlp);
    for (j, row) in times.iter().enumerate() {
        let t_eq: f64 = row
            .iter()
            .enumerate()
            .filter_map(|(f, p)| p.map(|p| equal(f) * throughput(p)))
            .sum();
        let mut held = Expression::from(0.0);
        let mut normalised = Expression::from(0.0);
        for (f, p) in row.iter().enumerate() {
            if let (Some(v), Some(p)) = (x[j][f], p) {
                held += v;
                if t_eq > 0.0 {
                    normalised += v * (throughput(*p) / t_eq);
                }
            }
        }
        model = model.with(constraint!(held <= 1.0));
        if t_eq > 0.0 {
            model = model.with(constraint!(normalised >= level));
        }
    }
    for (f, flavor) in flavors.iter().enumerate() {
        let mut used = Expression::from(0.0);
        for row in &x {
            if let Some(v) = row[f] {
                used += v;
            }
        }
        model = model.with(constraint!(used <= flavor.slots as f64));
    }
    let solution = model
        .solve()
        .map_err(|e| PolicyError::Parameter(format!("gavel-maxmin: the LP failed: {e}")))?;
    Ok(Allocation {
        level: solution.value(level),
        shares: x
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| v.map_or(0.0, |v| solution.value(v).max(0.0)))
                    .collect()
            })
            .collect(),
    })
}

impl GavelMaxMin {
    pub fn new(round: f64) -> Self {
        GavelMaxMin {
            round,
            round_end: None,
            placed: HashMap::new(),
            rounds: HashMap::new(),
        }
    }

    /// Solves the round's LP and places its jobs.
    fn plan_round(&mut self, view: &View<'_>) -> Result<(), PolicyError> {
        // Every active job, as (id, times): running ones on the work left.
        let mut active: Vec<(usize, Vec<Option<f64>>)> = Vec::new();
        for job in view.running {
            let f = view.machines[job.machine].flavor;
            let done = (view.now - job.started).max(0.0);
            let left = job.estimates[f].map_or(1.0, |p| {
                if p > 0.0 {
                    ((p - done) / p).max(0.0)
                } else {
                    0.0
                }
            });
            active.push((
                job.id,
                job.estimates.iter().map(|e| e.map(|e| e * left)).collect(),
            ));
        }
        for job in view.pending {
            active.push((job.id, job.estimates.clone()));
        }
        let times: Vec<Vec<Option<f64>>> = active.iter().map(|(_, t)| t.clone()).collect();
        let shares = allocation(&times, view.flavors)?.shares;

        let mut pairs: Vec<(f64, f64, usize, usize)> = Vec::new();
        for (j, (id, row)) in active.iter().enumerate() {
            for (f, p) in row.iter().enumerate() {
                if let (Some(p), true) = (p, view.flavors[f].slots > 0) {
                    let had = self.rounds.get(&(*id, f)).copied().unwrap_or(0.0);
                    pairs.push((shares[j][f] / (had + 1.0), -*p, *id, f));
                }
            }
        }
        // Highest priority first; among pairs the LP gave nothing, fastest.
        pairs.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(b.1.total_cmp(&a.1))
                .then(a.2.cmp(&b.2))
        });
        let mut left: Vec<usize> = view.flavors.iter().map(|f| f.slots).collect();
        // Probes hold slots too: only idle machines and running jobs count.
        let mut usable = vec![0usize; view.flavors.len()];
        for m in view.idle_machines() {
            usable[view.machines[m].flavor] += 1;
        }
        for job in view.running {
            usable[view.machines[job.machine].flavor] += 1;
        }
        for (l, u) in left.iter_mut().zip(&usable) {
            *l = (*l).min(*u);
        }
        self.placed.clear();
        for (_, _, id, f) in pairs {
            if left[f] > 0 && !self.placed.contains_key(&id) {
                left[f] -= 1;
                self.placed.insert(id, f);
                *self.rounds.entry((id, f)).or_insert(0.0) += 1.0;
            }
        }
        let live: std::collections::HashSet<usize> = active.iter().map(|(id, _)| *id).collect();
        self.rounds.retain(|(id, _), _| live.contains(id));
        self.round_end = Some(view.now + self.round);
        Ok(())
    }
}

impl Policy for GavelMaxMin {
    fn label(&self) -> String {
        "gavel-maxmin".into()
    }

    fn preempt(&mut self, view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        if self.round_end.is_some_and(|end| view.now < end) {
            return Ok(Vec::new());
        }
        self.plan_round(view)?;
        Ok(view
            .running
            .iter()
            .filter(|j| self.placed.get(&j.id) != Some(&view.machines[j.machine].flavor))
            .map(|j| j.id)
            .collect())
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        if self.round_end.is_none() {
            self.plan_round(view)?;
        }
        let mut idle: Vec<Vec<usize>> = vec![Vec::new(); view.flavors.len()];
        for m in view.idle_machines().collect::<Vec<_>>().into_iter().rev() {
            idle[view.machines[m].flavor].push(m);
        }
        let mut starts = Vec::new();
        // The round's placement first, then (mid-round arrivals, slots a
        // finished job left) the waiting jobs fastest first.
        let mut rest: Vec<&PendingJob> = Vec::new();
        for job in view.pending {
            match self.placed.get(&job.id) {
                Some(&f) => {
                    if let Some(machine) = idle[f].pop() {
                        starts.push(Start {
                            job: job.id,
                            machine,
                        });
                    }
                }
                None => rest.push(job),
            }
        }
        rest.sort_by(|a, b| {
            let t = |j: &PendingJob| {
                best_flavor(&j.estimates, view.flavors).map_or(f64::INFINITY, |b| b.1)
            };
            t(a).total_cmp(&t(b)).then(a.id.cmp(&b.id))
        });
        for job in rest {
            if let Some((f, _)) = best_flavor(&job.estimates, view.flavors) {
                if let Some(machine) = idle[f].pop() {
                    self.placed.insert(job.id, f);
                    starts.push(Start {
                        job: job.id,
                        machine,
                    });
                }
            }
        }
        Ok(starts)
    }

    fn wake_at(&self, view: &View<'_>) -> Option<f64> {
        let busy = !view.pending.is_empty() || !view.running.is_empty();
        self.round_end.filter(|_| busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flavors(gpus: usize, cpus: usize) -> Vec<Flavor> {
        vec![
            Flavor {
                name: "gpu".into(),
                slots: gpus,
            },
            Flavor {
                name: "cpu".into(),
                slots: cpus,
            },
        ]
    }

    #[test]
    fn the_lp_equalises_normalised_throughput_where_flavors_differ() {
        // One GPU, one CPU. Job A is 4x faster on the GPU; job B 2x faster
        // on the CPU. An equal share gives each 1/2 of both: A gets
        // throughput 0.625, B 0.75. A alone on the GPU (1/0.625 = 1.6) and B
        // alone on the CPU (1/0.75 = 4/3) is better for both, and B can do
        // no better than its whole CPU, so the max-min level is exactly 4/3.
        let times = vec![vec![Some(1.0), Some(4.0)], vec![Some(2.0), Some(1.0)]];
        let a = allocation(&times, &flavors(1, 1)).unwrap();
        assert!((a.level - 4.0 / 3.0).abs() < 1e-6, "{a:?}");
        assert!(
            (a.shares[1][1] - 1.0).abs() < 1e-6,
            "B holds the CPU: {a:?}"
        );
        let normalised_a = (a.shares[0][0] + 0.25 * a.shares[0][1]) / 0.625;
        assert!(normalised_a >= 4.0 / 3.0 - 1e-6, "{a:?}");
    }

    #[test]
    fn identical_jobs_share_equally() {
        // Three identical jobs, two GPUs: each gets 2/3 of a GPU.
        let times = vec![vec![Some(10.0), None]; 3];
        let a = allocation(&times, &flavors(2, 0)).unwrap();
        for row in &a.shares {
            assert!((row[0] - 2.0 / 3.0).abs() < 1e-6, "{a:?}");
        }
        assert!((a.level - 1.0).abs() < 1e-6);
    }
}
