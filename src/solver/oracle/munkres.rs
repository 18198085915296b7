//! The reference: the generic Hungarian method (`munkres` crate) on the
//! dense formulation AlloX and Gavel use, every job against every
//! `(machine, position)` pair with positions `1..=jobs`. It needs a square
//! matrix, so the rows are padded with zero-cost dummy jobs.

use crate::solver::{Instance, Slot, Solution, SolveError};
use munkres::{solve_assignment, WeightMatrix};

/// Refuse matrices above this many cells (8 bytes each): 2^28 cells is 2 GiB.
pub const MAX_CELLS: u128 = 1 << 28;

/// Solves `inst` exactly with the Hungarian method; refuses more than
/// [`MAX_CELLS`] cells.
pub fn solve(inst: &Instance) -> Result<Solution, SolveError> {
    inst.validate()?;
    let n = inst.jobs();
    let machines = inst.machines.len();
    let columns = machines * n;
    let cells = (columns as u128) * (columns as u128);
    if cells > MAX_CELLS {
        return Err(SolveError::TooLarge { cells });
    }
    if n == 0 {
        return Ok(Solution {
            slots: Vec::new(),
            objective: 0.0,
        });
    }
    let slot_of = |c: usize| Slot {
        machine: c / n,
        position: c % n + 1,
    };
    let mut data = vec![0.0f64; columns * columns];
    for j in 0..n {
        for c in 0..columns {
            let s = slot_of(c);
            data[j * columns + c] = inst.cost(j, s.machine, s.position).unwrap_or(f64::INFINITY);
        }
    }
    let mut weights = WeightMatrix::from_row_vec(columns, data);
    let pairs = solve_assignment(&mut weights).map_err(|_| SolveError::Shape)?;
    let mut slots = vec![slot_of(0); n];
    for p in pairs.into_iter().filter(|p| p.row < n) {
        slots[p.row] = slot_of(p.column);
    }
    let objective = inst.objective(&slots);
    Ok(Solution { slots, objective })
}
