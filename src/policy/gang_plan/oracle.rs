//! The exact minimum total completion time of jobs of any width on nodes,
//! by exhaustive search, and the random small instances the gap study of
//! `fairmatch bench gangs` draws.
//!
//! Why the search is exact: take an optimal schedule and list its jobs by
//! start time, each with the nodes it runs on. Placing them in that order,
//! each on its nodes at the earliest time it fits (a serial schedule),
//! starts every job no later than the optimum does: a job placed before
//! `j` started no later than in the optimum and so ends no later, and it
//! started before `j` there, so it holds no more of `j`'s window than it
//! did there. So some order and some choice of nodes per job, each placed
//! at its earliest fit, is optimal, and the search tries them all (depth
//! first, cut where the completions so far plus each remaining job's
//! shortest time cannot beat the best found).

use super::{PlanJob, PlanNode};
use crate::model::Width;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Most jobs [`exact`] takes: 8! orders times the node choices is already
/// minutes.
pub const MAX_JOBS: usize = 8;

/// One node's slots in use, as `(start, end, slots)`.
type Profile = Vec<(f64, f64, usize)>;

fn peak(profile: &Profile, from: f64, to: f64) -> usize {
    let at = |t: f64| -> usize {
        profile
            .iter()
            .filter(|&&(s, e, _)| s <= t && t < e)
            .map(|&(_, _, n)| n)
            .sum()
    };
    let mut peak = at(from);
    for &(s, _, _) in profile {
        if s > from && s < to {
            peak = peak.max(at(s));
        }
    }
    peak
}

/// Every way to choose `k` of `items`, in lexicographic order.
fn combinations(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        for mut rest in combinations(&items[i + 1..], k - 1) {
            rest.insert(0, items[i]);
            out.push(rest);
        }
    }
    out
}

struct Search<'a> {
    nodes: &'a [PlanNode],
    jobs: &'a [PlanJob],
    /// Per job, its (flavor, time, node set) options.
    options: Vec<Vec<(f64, Vec<usize>)>>,
    /// Per job, its shortest time.
    shortest: Vec<f64>,
    profiles: Vec<Profile>,
    done: Vec<bool>,
    best: f64,
}

impl Search<'_> {
    /// The earliest start of a job of `width` and time `p` on `on`.
    fn earliest(&self, on: &[usize], per_node: usize, p: f64) -> f64 {
        let mut times: Vec<f64> = vec![0.0];
        for &n in on {
            times.extend(self.profiles[n].iter().map(|&(_, e, _)| e));
        }
        times.sort_by(f64::total_cmp);
        for t in times {
            if on
                .iter()
                .all(|&n| peak(&self.profiles[n], t, t + p) + per_node <= self.nodes[n].slots)
            {
                return t;
            }
        }
        unreachable!("every node is empty after its last interval")
    }

    fn go(&mut self, placed: usize, sum: f64) {
        if placed == self.jobs.len() {
            self.best = self.best.min(sum);
            return;
        }
        let bound: f64 = (0..self.jobs.len())
            .filter(|&j| !self.done[j])
            .map(|j| self.shortest[j])
            .sum();
        if sum + bound >= self.best * (1.0 - 1e-12) {
            return;
        }
        for j in 0..self.jobs.len() {
            if self.done[j] {
                continue;
            }
            self.done[j] = true;
            for o in 0..self.options[j].len() {
                let (p, ref on) = self.options[j][o];
                let on = on.clone();
                let per_node = self.jobs[j].width.per_node;
                let t = self.earliest(&on, per_node, p);
                for &n in &on {
                    self.profiles[n].push((t, t + p, per_node));
                }
                self.go(placed + 1, sum + t + p);
                for &n in &on {
                    self.profiles[n].pop();
                }
            }
            self.done[j] = false;
        }
    }
}

/// The least total completion time (from now) of `jobs` on `nodes`, or
/// `None` if some job fits on no flavor it can use. At most [`MAX_JOBS`].
pub fn exact(nodes: &[PlanNode], jobs: &[PlanJob], upper_bound: f64) -> Option<f64> {
    assert!(
        jobs.len() <= MAX_JOBS,
        "exhaustive search is for small instances"
    );
    let mut options = Vec::with_capacity(jobs.len());
    let mut shortest = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut opts = Vec::new();
        for (f, p) in job.times.iter().enumerate() {
            let Some(p) = *p else { continue };
            let fitting: Vec<usize> = (0..nodes.len())
                .filter(|&n| nodes[n].flavor == f && nodes[n].slots >= job.width.per_node)
                .collect();
            for on in combinations(&fitting, job.width.nodes) {
                opts.push((p, on));
            }
        }
        shortest.push(opts.iter().map(|o| o.0).fold(f64::INFINITY, f64::min));
        if opts.is_empty() {
            return None;
        }
        options.push(opts);
    }
    let mut search = Search {
        nodes,
        jobs,
        options,
        shortest,
        profiles: nodes
            .iter()
            .map(|n| n.busy_until.iter().map(|&t| (0.0, t, 1)).collect())
            .collect(),
        done: vec![false; jobs.len()],
        // Slightly above the bound, so a schedule equal to it is found.
        best: upper_bound * (1.0 + 1e-9) + 1e-9,
    };
    search.go(0, 0.0);
    Some(search.best)
}

/// A random small instance: two or three flavors (GPU types), each of one
/// to three nodes of 2 or 4 slots, some slots busy; `jobs` jobs of widths
/// 1, 2, whole nodes, and two nodes, each with a time per flavor (some
/// much faster on one type, some indifferent, some unable to use one).
/// With `narrow`, every job is one slot wide.
pub fn random_instance(seed: u64, jobs: usize, narrow: bool) -> (Vec<PlanNode>, Vec<PlanJob>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let flavors = rng.gen_range(2..=3);
    let mut nodes = Vec::new();
    for f in 0..flavors {
        let slots = if rng.gen_bool(0.5) { 2 } else { 4 };
        for _ in 0..rng.gen_range(1..=3) {
            let mut busy = Vec::new();
            for _ in 0..slots {
                if rng.gen_bool(0.2) {
                    busy.push(rng.gen_range(1.0..50.0f64).round());
                }
            }
            nodes.push(PlanNode {
                flavor: f,
                slots,
                busy_until: busy,
            });
        }
    }
    let out = (0..jobs)
        .map(|_| {
            let base: f64 = rng.gen_range(5.0..100.0f64).round();
            let times: Vec<Option<f64>> = (0..flavors)
                .map(|_| Some((base * rng.gen_range(1.0..3.0f64)).round()))
                .collect();
            let mut times = times;
            if rng.gen_bool(0.15) {
                let f = rng.gen_range(0..flavors);
                if times.iter().filter(|t| t.is_some()).count() > 1 {
                    times[f] = None;
                }
            }
            let width = if narrow {
                Width::ONE
            } else {
                match rng.gen_range(0..10) {
                    0..=3 => Width::ONE,
                    4..=6 => Width::new(2, 1).expect("valid"),
                    7 | 8 => Width::new(4, 1).expect("valid"),
                    _ => Width::new(2, 2).expect("valid"),
                }
            };
            // Only flavors whose nodes can hold the job.
            let times = times
                .iter()
                .enumerate()
                .map(|(f, t)| {
                    let fitting = nodes
                        .iter()
                        .filter(|n| n.flavor == f && n.slots >= width.per_node)
                        .count();
                    t.filter(|_| fitting >= width.nodes)
                })
                .collect();
            PlanJob {
                times,
                width,
                waited: 0.0,
            }
        })
        .collect::<Vec<PlanJob>>();
    // A job no flavor holds is made narrow, so every instance is placeable.
    let out = out
        .into_iter()
        .map(|mut j| {
            if j.times.iter().all(Option::is_none) {
                j.width = Width::ONE;
                j.times = (0..flavors)
                    .map(|_| Some(rng.gen_range(5.0..100.0f64).round()))
                    .collect();
            }
            j
        })
        .collect();
    (nodes, out)
}
