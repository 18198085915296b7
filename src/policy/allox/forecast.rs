//! AlloX's start-time forecasts ([`Policy::forecast`]), read off the
//! matching it solved anyway: each job of the plan's queues starts when
//! the runs before it on its machine end. The jobs the candidate cap kept
//! out of the matching follow in the order the cap would let them in,
//! each on the machine where it finishes soonest behind the plan: what
//! the next matchings would do if no other job came, approximately.
//!
//! [`Policy::forecast`]: crate::policy::Policy::forecast

use super::candidates::CandidateRule;
use crate::model::best_flavor;
use crate::ordered::TotalF64;
use crate::policy::{Forecast, IdMap, PendingJob, View};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The forecasts of a decision whose matching left `queues` (per
/// machine, in order) on machines free in `free_in`, with `left` the jobs
/// still waiting (the queued ones among them).
pub(super) fn starts(
    view: &View<'_>,
    queues: &[Vec<usize>],
    free_in: &[f64],
    left: &[&PendingJob],
    rule: CandidateRule,
) -> Vec<Forecast> {
    let by_id: IdMap<&PendingJob> = left.iter().map(|j| (j.id, *j)).collect();
    let mut out = Vec::new();
    let mut planned: IdMap<()> = IdMap::default();
    // Per flavor, its machines by when their queue ends.
    let mut ends: Vec<BinaryHeap<Reverse<(TotalF64, usize)>>> =
        vec![BinaryHeap::new(); view.flavors.len()];
    for (m, queue) in queues.iter().enumerate() {
        let flavor = view.machines[m].flavor;
        let mut t = free_in[m];
        for job in queue {
            let Some(length) = by_id.get(job).and_then(|j| j.estimates[flavor]) else {
                break;
            };
            out.push(Forecast {
                job: *job,
                at: view.now + t,
                flavor,
            });
            planned.insert(*job, ());
            t += length;
        }
        ends[flavor].push(Reverse((TotalF64(t), m)));
    }
    let mut rest: Vec<&PendingJob> = left
        .iter()
        .copied()
        .filter(|j| !planned.contains_key(&j.id))
        .collect();
    if rule == CandidateRule::Shortest {
        // Stable: equal ones keep their order of arrival.
        let fastest =
            |j: &PendingJob| best_flavor(&j.estimates, view.flavors).map_or(f64::INFINITY, |b| b.1);
        rest.sort_by(|a, b| fastest(a).total_cmp(&fastest(b)));
    }
    for job in rest {
        let soonest = job
            .estimates
            .iter()
            .enumerate()
            .filter_map(|(f, p)| {
                let Reverse((TotalF64(end), _)) = *ends.get(f)?.peek()?;
                Some((f, end, end + (*p)?))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
        let Some((flavor, at, finish)) = soonest else {
            continue;
        };
        let Reverse((_, m)) = ends[flavor].pop().expect("peeked");
        ends[flavor].push(Reverse((TotalF64(finish), m)));
        out.push(Forecast {
            job: job.id,
            at: view.now + at,
            flavor,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::allox::tests::{flavors, job};
    use crate::policy::MachineView;

    #[test]
    fn jobs_the_cap_kept_out_follow_the_plan_where_they_finish_soonest() {
        let flavors = flavors();
        let machines = [0, 1].map(|flavor| MachineView {
            flavor,
            node: flavor,
            free_at: 12.0,
            idle: false,
        });
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &[],
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        // The matching queued job 0 on the GPU (2 s left there); jobs 1
        // (5 s on a GPU, 6 s on a CPU) and 2 (1 s on a GPU, 9 s on a CPU)
        // were kept out. Shortest first: job 2 behind job 0 on the GPU
        // (at 14), then job 1 on the CPU (at 12: it ends at 18 there, 20
        // on the GPU).
        let jobs = [
            job(0, 0, Some(2.0), None),
            job(1, 0, Some(5.0), Some(6.0)),
            job(2, 0, Some(1.0), Some(9.0)),
        ];
        let left: Vec<&PendingJob> = jobs.iter().collect();
        let queues = vec![vec![0], vec![]];
        let mut got = starts(&view, &queues, &[2.0, 2.0], &left, CandidateRule::Shortest);
        got.sort_by_key(|f| f.job);
        let at = |job, at, flavor| Forecast { job, at, flavor };
        assert_eq!(got, vec![at(0, 12.0, 0), at(1, 12.0, 1), at(2, 14.0, 0)]);
    }
}
