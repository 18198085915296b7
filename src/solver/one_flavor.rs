//! The exact answer when only one flavor has machines and no job prefers a
//! machine: shortest job first, each job onto the machine that frees first.
//!
//! With one flavor every job takes the same time on every machine, so this
//! is identical machines with different ready times `a_m`, and list
//! scheduling in shortest-processing-time order minimises the total
//! completion time (Kaspi and Montreuil 1988). In slot terms: whatever
//! slots are used, the rearrangement inequality gives the longest jobs the
//! smallest `k`; list scheduling picks the slots themselves, since each job,
//! from the shortest up, takes the earliest start left. The property tests
//! check it against exhaustive search and munkres.
//!
//! It costs one sort and a heap over the machines, `O(n log n + n log M)`:
//! the "nearly as fast as the sort" that a deep queue on one machine
//! deserves. The slot solvers need `O(n^2)` or worse there.
//!
//! A preferred-machine bonus breaks the symmetry between machines, so such
//! instances go to the general solvers.

use super::{Instance, Slot, Solution, SolveError};
use crate::ordered::TotalF64 as Key;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The flavor all machines share, if the instance fits this solver.
pub fn applies(instance: &Instance) -> Option<usize> {
    let flavor = instance.machines.first()?.flavor;
    let one = instance.machines.iter().all(|m| m.flavor == flavor);
    let bonus = instance.preferred.iter().any(|p| p.is_some());
    (one && !bonus).then_some(flavor)
}

/// Solves an instance that [`applies`] accepts; others are refused with
/// [`SolveError::Shape`], as no flavor choice is made here.
pub fn solve(instance: &Instance) -> Result<Solution, SolveError> {
    instance.validate()?;
    let flavor = applies(instance).ok_or(SolveError::Shape)?;
    let n = instance.jobs();
    let machines: Vec<usize> = (0..instance.machines.len()).collect();
    let jobs: Vec<usize> = (0..n).collect();
    let mut slots = vec![
        Slot {
            machine: 0,
            position: 0
        };
        n
    ];
    schedule(instance, flavor, &machines, &jobs, &mut slots);
    let objective = instance.objective(&slots);
    Ok(Solution { slots, objective })
}

/// List scheduling of `jobs` (which may all use `flavor`) onto `machines`
/// (all of `flavor`): shortest first, each onto the machine that frees
/// first. Writes each job's slot; optimal for that set of jobs.
pub fn schedule(
    instance: &Instance,
    flavor: usize,
    machines: &[usize],
    jobs: &[usize],
    slots: &mut [Slot],
) {
    let time = |j: usize| instance.time(j, flavor).unwrap_or(0.0);
    let mut order = jobs.to_vec();
    // Equal times in job order, so the result does not depend on the sort.
    order.sort_by(|&a, &b| time(a).total_cmp(&time(b)).then(a.cmp(&b)));
    let mut queued = vec![0usize; instance.machines.len()];
    list_schedule(
        machines,
        |m| instance.machines[m].free_in,
        order.iter().map(|&j| (j, time(j))),
        |j, m| {
            slots[j].machine = m;
            queued[m] += 1;
        },
    );
    // A machine's jobs run in `order`; position 1 is its last.
    for &j in &order {
        let m = slots[j].machine;
        slots[j].position = queued[m];
        queued[m] -= 1;
    }
}

/// The list scheduling itself: `jobs` as `(job, time)`, shortest first,
/// each handed to `place` with the machine of `machines` that frees first
/// (`free_in`; ties to the lower index). Each machine gets its jobs in run
/// order.
pub fn list_schedule(
    machines: &[usize],
    free_in: impl Fn(usize) -> f64,
    jobs: impl Iterator<Item = (usize, f64)>,
    mut place: impl FnMut(usize, usize),
) {
    let mut frees: BinaryHeap<Reverse<(Key, usize)>> = machines
        .iter()
        .map(|&m| Reverse((Key(free_in(m)), m)))
        .collect();
    for (j, p) in jobs {
        let Reverse((Key(free), m)) = frees.pop().expect("a flavor with jobs has a machine");
        place(j, m);
        frees.push(Reverse((Key(free + p), m)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::Machine;

    fn instance(machines: &[f64], times: &[f64]) -> Instance {
        Instance {
            flavors: 1,
            machines: machines
                .iter()
                .map(|&free_in| Machine { flavor: 0, free_in })
                .collect(),
            releases: vec![0.0; times.len()],
            times: times.iter().map(|&t| Some(t)).collect(),
            preferred: Vec::new(),
        }
    }

    #[test]
    fn one_machine_runs_shortest_first() {
        let s = solve(&instance(&[0.0], &[3.0, 1.0, 2.0])).unwrap();
        assert_eq!(s.queues(1), vec![vec![1, 2, 0]]);
        assert_eq!(s.objective, 1.0 + 3.0 + 6.0);
    }

    #[test]
    fn a_busy_machine_gets_a_job_once_it_is_the_earliest_start() {
        // m1 frees at 5: jobs 1 and 2 (1 s each) and 3 (4 s) go to m0,
        // finishing at 1, 2 and 6; the next, 10 s, starts at 5 on m1.
        let s = solve(&instance(&[0.0, 5.0], &[10.0, 1.0, 1.0, 4.0])).unwrap();
        assert_eq!(s.queues(2), vec![vec![1, 2, 3], vec![0]]);
        assert_eq!(s.objective, 1.0 + 2.0 + 6.0 + 15.0);
    }

    #[test]
    fn preferences_and_two_flavors_are_not_its_case() {
        let mut inst = instance(&[0.0, 0.0], &[1.0]);
        inst.preferred = vec![Some((1, 3.0))];
        assert_eq!(applies(&inst), None);
        inst.preferred = vec![None];
        assert_eq!(applies(&inst), Some(0));
        inst.flavors = 2;
        inst.times = vec![Some(1.0), Some(2.0)];
        inst.machines[1].flavor = 1;
        assert_eq!(applies(&inst), None);
        assert_eq!(solve(&inst), Err(SolveError::Shape));
    }
}
