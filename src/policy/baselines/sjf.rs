//! Shortest job first, non-preemptive: pending jobs in order of their
//! fastest estimate, each started only on an idle machine of its fastest
//! flavor (the one baseline that never trades speed for an earlier start).
//! A job whose fastest flavor is full waits without blocking the jobs
//! behind it.

use super::{by_fastest, gang_starts, IdleNodes, Policy, PolicyError, Start, View};
use crate::model::best_flavor;

/// Shortest job first; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct Sjf;

impl Policy for Sjf {
    fn label(&self) -> String {
        "sjf".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut idle = IdleNodes::new(view);
        let mut starts = Vec::new();
        for job in by_fastest(view.pending, view.flavors) {
            if !idle.any() {
                break;
            }
            let Some((fastest, _)) = best_flavor(&job.estimates, view.flavors) else {
                continue;
            };
            if let Some(machines) = idle.take(fastest, job.width) {
                starts.extend(gang_starts(job.id, &machines));
            }
        }
        Ok(starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baselines::testing::{pending, two_flavors, view};

    #[test]
    fn the_shortest_jobs_start_first_each_on_its_fastest_flavor() {
        let (flavors, machines) = two_flavors(1, 1);
        // Arrival order 0, 1, 2, 3; fastest times 50 (gpu), 10 (gpu), 20
        // (cpu), 30 (cpu).
        let jobs = vec![
            pending(0, 0, 0.0, [Some(50.0), Some(90.0)]),
            pending(1, 0, 1.0, [Some(10.0), Some(40.0)]),
            pending(2, 1, 2.0, [Some(60.0), Some(20.0)]),
            pending(3, 1, 3.0, [None, Some(30.0)]),
        ];
        let starts = Sjf.decide(&view(&flavors, &machines, &jobs, &[])).unwrap();
        assert_eq!(
            starts,
            vec![Start { job: 1, machine: 0 }, Start { job: 2, machine: 1 }]
        );
    }

    #[test]
    fn a_job_waits_for_its_fastest_flavor_rather_than_take_a_slow_one() {
        let (flavors, machines) = two_flavors(1, 1);
        let jobs = vec![
            pending(0, 0, 0.0, [Some(10.0), Some(100.0)]),
            pending(1, 0, 1.0, [Some(20.0), Some(200.0)]),
        ];
        let starts = Sjf.decide(&view(&flavors, &machines, &jobs, &[])).unwrap();
        assert_eq!(starts, vec![Start { job: 0, machine: 0 }]);
    }
}
