//! Which pending jobs Slurm's own checks must look at in a cycle.
//!
//! Slurm's checks of a pending job (limits in each partition, QOS and
//! association policy, licenses, reservations, features) are most of the
//! time a cycle holds slurmctld's locks: about 3.5 us per job, so 16 ms
//! for a queue of 4,500. Slurm's own schedulers bound that work the same
//! way (`default_queue_depth`, `bf_max_job_test`). Here the bound loses
//! nothing: with a candidate cap, the matching only ever weighs jobs near
//! the front of its candidate order, so only those need the checks.
//!
//! **Why the plan is the same.** With the cap `C`, AlloX's candidates
//! ([`crate::policy::allox::candidates::select`]) from any pool of jobs are, for
//! some flavor `f`, among the pool's `C` shortest on `f` (the `Arrival`
//! rule: its `C` earliest). A cycle starts at most one job per slot, and
//! every start takes a job out of the pool, so over a whole cycle no pick
//! ranks past `C + slots` in its order. A pool is the jobs of the users the
//! fairness rule makes eligible, and a job ranks no lower within its own
//! user's jobs than within the pool. So, per user and per flavor, the
//! first `C + slots` jobs that Slurm lets start are all a cycle can pick,
//! and a job whose flavor Slurm rules out (a partition limit, say) only
//! leaves that flavor's order. With alpha 1 every user is eligible in
//! every pool, and one group per flavor is enough.
//!
//! Two things take a job out of the pool without a start, and the window
//! makes room for both. A job the matching puts on a node closed to it
//! (`--exclude`, `--nodelist`, a reservation) takes another idle slot of
//! its flavor, or is dropped for the cycle: such a "risky" job does not
//! count toward its flavor's window. And when it takes another slot, the
//! job matched to that slot is dropped, at most once per start: so the
//! window is `C + 2 slots` jobs that are not risky.
//!
//! The jobs are ranked before they are checked, by their partitions as
//! submitted. A check either confirms a job or rules it (or some of its
//! flavors) out, so [`to_check`] is asked again until every group's first
//! `quota` jobs are confirmed ones. Jobs past the window keep the reason
//! they had, as jobs past Slurm's queue depth do.

use super::snapshot::Checked;
use crate::policy::allox::candidates::CandidateRule;
use std::collections::BTreeSet;

/// A pending record as the window ranks it.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    /// How far Slurm's checks of the record got.
    pub checked: Checked,
    /// Array tasks it stands for: each is a job to the matching.
    pub tasks: u32,
    /// Slurm's job id.
    pub job_id: u32,
    /// Submit time, in seconds since the epoch.
    pub arrival: f64,
    /// The fairness group (user or account); 0 for all when every user is
    /// eligible.
    pub group: usize,
    /// Per flavor, its estimate; `None` where it may not run.
    pub estimates: Vec<Option<f64>>,
    /// Per flavor, some of its nodes are closed to the job (`--exclude`,
    /// say): the plan may drop it for this cycle without a start.
    pub risky: Vec<bool>,
}

/// The records (indices into `jobs`) to check next: in each group's order,
/// the unchecked ones among its first `quota` jobs, counting the unchecked
/// as if they will pass, and not counting the risky ones. Empty once every group's first `quota` jobs are
/// confirmed (or the group has no more). `usable[f]`: flavor `f` has slots.
pub fn to_check(jobs: &[Ranked], quota: usize, rule: CandidateRule, usable: &[bool]) -> Vec<usize> {
    let groups = jobs.iter().map(|j| j.group + 1).max().unwrap_or(0);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for (i, j) in jobs.iter().enumerate() {
        if j.checked != Checked::Blocked {
            members[j.group].push(i);
        }
    }
    let runs_on =
        |i: usize, f: usize| usable[f] && jobs[i].estimates.get(f).copied().flatten().is_some();
    let by_arrival = |&a: &usize, &b: &usize| {
        jobs[a]
            .arrival
            .total_cmp(&jobs[b].arrival)
            .then(jobs[a].job_id.cmp(&jobs[b].job_id))
    };
    let mut wanted = BTreeSet::new();
    let risky = |i: usize, f: Option<usize>| {
        let r = &jobs[i].risky;
        jobs[i].checked == Checked::Runnable
            && match f {
                Some(f) => r.get(f).copied().unwrap_or(false),
                None => r.iter().any(|&x| x),
            }
    };
    let mut walk = |order: &[usize], f: Option<usize>| {
        let mut counted = 0usize;
        for &i in order {
            if counted >= quota {
                break;
            }
            if jobs[i].checked == Checked::Not {
                wanted.insert(i);
            }
            if !risky(i, f) {
                counted += jobs[i].tasks.max(1) as usize;
            }
        }
    };
    for group in &members {
        match rule {
            CandidateRule::Arrival => {
                let mut order: Vec<usize> = group
                    .iter()
                    .copied()
                    .filter(|&i| (0..usable.len()).any(|f| runs_on(i, f)))
                    .collect();
                order.sort_by(by_arrival);
                walk(&order, None);
            }
            CandidateRule::Shortest => {
                for f in 0..usable.len() {
                    let mut order: Vec<usize> =
                        group.iter().copied().filter(|&i| runs_on(i, f)).collect();
                    order.sort_by(|a, b| {
                        let (ta, tb) = (jobs[*a].estimates[f], jobs[*b].estimates[f]);
                        ta.unwrap_or(0.0)
                            .total_cmp(&tb.unwrap_or(0.0))
                            .then(by_arrival(a, b))
                    });
                    walk(&order, Some(f));
                }
            }
        }
    }
    wanted.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(job_id: u32, group: usize, gpu: Option<f64>, cpu: Option<f64>) -> Ranked {
        Ranked {
            checked: Checked::Not,
            tasks: 1,
            job_id,
            arrival: job_id as f64,
            group,
            estimates: vec![gpu, cpu],
            risky: vec![false, false],
        }
    }

    #[test]
    fn the_shortest_per_flavor_are_checked_and_a_failure_pulls_in_the_next() {
        let mut jobs = vec![
            job(0, 0, Some(50.0), Some(50.0)),
            job(1, 0, Some(1.0), Some(90.0)),
            job(2, 0, Some(2.0), Some(3.0)),
            job(3, 0, Some(80.0), Some(2.0)),
            job(4, 0, None, Some(1.0)),
        ];
        let usable = [true, true];
        // GPU order 1, 2, 0, 3; CPU order 4, 3, 2, 0, 1.
        assert_eq!(
            to_check(&jobs, 2, CandidateRule::Shortest, &usable),
            vec![1, 2, 3, 4]
        );
        jobs[1].checked = Checked::Runnable;
        jobs[2].checked = Checked::Blocked;
        jobs[3].checked = Checked::Runnable;
        jobs[4].checked = Checked::Runnable;
        // Job 2 is out: the GPU order's next (0) must be looked at.
        assert_eq!(
            to_check(&jobs, 2, CandidateRule::Shortest, &usable),
            vec![0]
        );
        jobs[0].checked = Checked::Runnable;
        assert!(to_check(&jobs, 2, CandidateRule::Shortest, &usable).is_empty());
    }

    #[test]
    fn each_group_gets_its_own_window_and_array_tasks_count_each() {
        let mut jobs: Vec<Ranked> = (0..6)
            .map(|i| job(i, (i % 2) as usize, Some(1.0), None))
            .collect();
        jobs[0].tasks = 3;
        // Group 0: 0 (3 tasks) fills a quota of 2; group 1: 1 and 3.
        assert_eq!(
            to_check(&jobs, 2, CandidateRule::Arrival, &[true, true]),
            vec![0, 1, 3]
        );
    }

    #[test]
    fn a_job_closed_to_some_nodes_does_not_fill_the_window() {
        let mut jobs: Vec<Ranked> = (0..4)
            .map(|i| job(i, 0, Some(1.0 + i as f64), None))
            .collect();
        jobs[0].checked = Checked::Runnable;
        jobs[0].risky = vec![true, false];
        assert_eq!(
            to_check(&jobs, 2, CandidateRule::Shortest, &[true, false]),
            vec![1, 2]
        );
    }

    #[test]
    fn a_flavor_without_slots_takes_no_turn() {
        let jobs = vec![job(0, 0, Some(1.0), None), job(1, 0, None, Some(1.0))];
        assert_eq!(
            to_check(&jobs, 5, CandidateRule::Shortest, &[false, true]),
            vec![1]
        );
    }
}
