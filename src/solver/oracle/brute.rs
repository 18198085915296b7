//! Exhaustive search for tiny instances, the ground truth in tests.
//!
//! It tries every assignment of jobs to machines. For a fixed set of jobs on
//! one machine, shortest-processing-time order is optimal for total
//! completion time (Smith's rule), so each machine's cost follows directly.

use crate::solver::{Instance, Slot, Solution, SolveError};

/// Refuses instances with more than this many jobs: `machines^jobs` grows
/// too fast to be useful beyond it.
pub const MAX_JOBS: usize = 9;

/// Solves `inst` by trying every assignment; refuses more than [`MAX_JOBS`]
/// jobs.
pub fn solve(inst: &Instance) -> Result<Solution, SolveError> {
    inst.validate()?;
    let n = inst.jobs();
    if n > MAX_JOBS {
        return Err(SolveError::TooLarge {
            cells: (inst.machines.len() as u128).pow(n as u32),
        });
    }
    let mut choice = vec![0usize; n];
    let mut best: Option<(f64, Vec<usize>)> = None;
    search(inst, 0, &mut choice, &mut best);
    let (_, choice) = best.expect("validated instances have an assignment");
    let slots = slots_for(inst, &choice);
    let objective = inst.objective(&slots);
    Ok(Solution { slots, objective })
}

fn search(inst: &Instance, j: usize, choice: &mut [usize], best: &mut Option<(f64, Vec<usize>)>) {
    if j == choice.len() {
        let cost = inst.objective(&slots_for(inst, choice));
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            *best = Some((cost, choice.to_vec()));
        }
        return;
    }
    for m in 0..inst.machines.len() {
        if inst.time(j, inst.machines[m].flavor).is_some() {
            choice[j] = m;
            search(inst, j + 1, choice, best);
        }
    }
}

/// Positions for a job-to-machine choice: on each machine, the shortest job
/// runs first, so it gets the largest `k`.
fn slots_for(inst: &Instance, choice: &[usize]) -> Vec<Slot> {
    let mut slots = vec![
        Slot {
            machine: 0,
            position: 0
        };
        choice.len()
    ];
    for m in 0..inst.machines.len() {
        let mut on: Vec<(f64, usize)> = (0..choice.len())
            .filter(|&j| choice[j] == m)
            .map(|j| (inst.time(j, inst.machines[m].flavor).unwrap(), j))
            .collect();
        // Longest first gets position 1 (runs last).
        on.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (i, &(_, j)) in on.iter().enumerate() {
            slots[j] = Slot {
                machine: m,
                position: i + 1,
            };
        }
    }
    slots
}
