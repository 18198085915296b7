//! Which of the eligible jobs a capped matching weighs (AlloX's `N_max`).
//!
//! AlloX caps the matching's size to bound its cost. Its rule picks jobs
//! alternately by flavor: the shortest job on the GPU, then the shortest on
//! the CPU, then the next shortest on the GPU, and so on, so the matching
//! sees the jobs each flavor is best at. With more than two flavors the
//! turn goes round them in index order.

use crate::policy::PendingJob;
use std::fmt;
use std::str::FromStr;

/// How a candidate cap chooses its jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CandidateRule {
    /// AlloX's rule: the shortest job on each flavor in turn.
    #[default]
    Shortest,
    /// The earliest arrivals (ties by id): fairer to old jobs, blind to
    /// speed.
    Arrival,
}

impl CandidateRule {
    /// The rule's name, as labels show it.
    pub fn name(self) -> &'static str {
        match self {
            CandidateRule::Shortest => "shortest",
            CandidateRule::Arrival => "arrival",
        }
    }
}

impl fmt::Display for CandidateRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CandidateRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "shortest" => Ok(CandidateRule::Shortest),
            "arrival" => Ok(CandidateRule::Arrival),
            _ => Err(format!(
                "'{s}' is not a candidate rule (shortest or arrival)"
            )),
        }
    }
}

/// At most `cap` of `jobs` (given in arrival order), in the order the rule
/// picks them. `usable[f]` says whether flavor `f` has a machine: a flavor
/// without one takes no turn. Every job returned appears once.
pub fn select<'a>(
    jobs: &[&'a PendingJob],
    cap: usize,
    rule: CandidateRule,
    usable: &[bool],
) -> Vec<&'a PendingJob> {
    if jobs.len() <= cap || rule == CandidateRule::Arrival {
        return jobs.iter().take(cap).copied().collect();
    }
    // Per usable flavor, the jobs that may run there, shortest first (ties
    // by arrival order, which `jobs` already has; the sort is stable).
    let mut by_flavor: Vec<Vec<usize>> = usable
        .iter()
        .enumerate()
        .filter(|(_, &u)| u)
        .map(|(f, _)| {
            let mut order: Vec<usize> = (0..jobs.len())
                .filter(|&i| jobs[i].estimates[f].is_some())
                .collect();
            order.sort_by(|&a, &b| {
                let (ta, tb) = (jobs[a].estimates[f], jobs[b].estimates[f]);
                ta.unwrap_or(0.0).total_cmp(&tb.unwrap_or(0.0))
            });
            order.reverse(); // pop() takes the shortest
            order
        })
        .collect();
    let mut taken = vec![false; jobs.len()];
    let mut chosen = Vec::with_capacity(cap);
    while chosen.len() < cap {
        let mut progressed = false;
        for queue in &mut by_flavor {
            if chosen.len() == cap {
                break;
            }
            while let Some(i) = queue.pop() {
                if !taken[i] {
                    taken[i] = true;
                    chosen.push(jobs[i]);
                    progressed = true;
                    break;
                }
            }
        }
        if !progressed {
            break;
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: usize, gpu: Option<f64>, cpu: Option<f64>) -> PendingJob {
        PendingJob {
            id,
            user: 0,
            arrival: id as f64,
            estimates: vec![gpu, cpu],
            width: crate::model::Width::ONE,
            priority: 0,
        }
    }

    fn ids(jobs: &[&PendingJob]) -> Vec<usize> {
        jobs.iter().map(|j| j.id).collect()
    }

    #[test]
    fn shortest_alternates_between_flavors() {
        let jobs = [
            job(0, Some(50.0), Some(50.0)),
            job(1, Some(1.0), Some(90.0)),
            job(2, Some(2.0), Some(3.0)),
            job(3, Some(80.0), Some(2.0)),
            job(4, None, Some(1.0)),
        ];
        let refs: Vec<&PendingJob> = jobs.iter().collect();
        let usable = [true, true];
        // GPU's shortest is 1, CPU's is 4; then GPU's next is 2, CPU's
        // next untaken is 3.
        let pick = select(&refs, 4, CandidateRule::Shortest, &usable);
        assert_eq!(ids(&pick), vec![1, 4, 2, 3]);
        let pick = select(&refs, 4, CandidateRule::Arrival, &usable);
        assert_eq!(ids(&pick), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_flavor_without_machines_takes_no_turn() {
        let jobs = [
            job(0, Some(1.0), Some(9.0)),
            job(1, Some(2.0), Some(1.0)),
            job(2, Some(3.0), Some(2.0)),
        ];
        let refs: Vec<&PendingJob> = jobs.iter().collect();
        let pick = select(&refs, 2, CandidateRule::Shortest, &[false, true]);
        assert_eq!(ids(&pick), vec![1, 2]);
    }

    #[test]
    fn no_job_twice_and_never_more_than_the_cap() {
        let jobs: Vec<PendingJob> = (0..10)
            .map(|i| job(i, Some(i as f64), Some(10.0 - i as f64)))
            .collect();
        let refs: Vec<&PendingJob> = jobs.iter().collect();
        for cap in 0..12 {
            let pick = ids(&select(&refs, cap, CandidateRule::Shortest, &[true, true]));
            let mut unique = pick.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), pick.len());
            assert_eq!(pick.len(), cap.min(10));
        }
    }
}
