//! Minimum total completion time as a bipartite matching (AlloX, after Horn
//! 1973 and Bruno, Coffman and Sethi 1974).
//!
//! Jobs sit on one side; on the other sit slots `(machine m, position k)`,
//! where `k` counts from the end of `m`'s queue. Placing job `j` at `(m, k)`
//! costs `a_m + k * p_{j,flavor(m)} - r_j`, and a minimum-cost matching that
//! places every job minimises the total completion time.
//!
//! Two exact solvers serve the product, chosen by [`SolverKind`]: [`fast`],
//! the default and the only one that takes a preferred machine
//! (stickiness), and [`classes`], the fastest cold solver from a handful of
//! machines on, whose state AlloX keeps between decisions. [`one_flavor`]
//! takes over, whichever is chosen, where it is exact and costs a sort.
//! [`oracle`] holds what they are checked and measured against.

pub mod classes;
pub mod fast;
pub mod one_flavor;
#[cfg(feature = "cli")]
pub mod oracle;

use std::fmt;

/// One machine of an [`Instance`].
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Its flavor, below [`Instance::flavors`].
    pub flavor: usize,
    /// `a_m`: how long until the machine is free, from now. 0 when idle.
    pub free_in: f64,
}

/// One matching problem: jobs to place in order on machines, minimising
/// the summed [`Instance::cost`]s.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    /// Number of flavors: the width of a row of [`Instance::times`].
    pub flavors: usize,
    /// The machines; [`Slot::machine`] indexes them.
    pub machines: Vec<Machine>,
    /// `r_j` per job, relative to now (so usually `<= 0`).
    pub releases: Vec<f64>,
    /// Row-major `jobs x flavors` processing times; `None` = forbidden.
    pub times: Vec<Option<f64>>,
    /// Per job, optionally: a machine and a bonus (seconds, `>= 0`) taken
    /// off the job's cost on that machine. Callers use it to keep a job on
    /// the machine of the previous plan unless moving gains more. Empty =
    /// no preferences.
    pub preferred: Vec<Option<(usize, f64)>>,
}

impl Instance {
    /// Number of jobs.
    pub fn jobs(&self) -> usize {
        self.releases.len()
    }

    /// `p_jf`: the run time of `job` on `flavor`; `None` = forbidden.
    pub fn time(&self, job: usize, flavor: usize) -> Option<f64> {
        self.times[job * self.flavors + flavor]
    }

    /// The cost of putting `job` at position `k` (1 = last) of `machine`.
    pub fn cost(&self, job: usize, machine: usize, k: usize) -> Option<f64> {
        let m = &self.machines[machine];
        self.time(job, m.flavor)
            .map(|p| m.free_in + k as f64 * p - self.releases[job] - self.bonus(job, machine))
    }

    /// The preference bonus of `job` on `machine` (0 if none).
    pub fn bonus(&self, job: usize, machine: usize) -> f64 {
        match self.preferred.get(job) {
            Some(Some((m, b))) if *m == machine => *b,
            _ => 0.0,
        }
    }

    /// Checks the shape and that every number is finite and non-negative
    /// where it must be, and that every job has a machine it may use.
    pub fn validate(&self) -> Result<(), SolveError> {
        if self.times.len() != self.jobs() * self.flavors {
            return Err(SolveError::Shape);
        }
        for m in &self.machines {
            if m.flavor >= self.flavors || !m.free_in.is_finite() || m.free_in < 0.0 {
                return Err(SolveError::Shape);
            }
        }
        if !self.preferred.is_empty() && self.preferred.len() != self.jobs() {
            return Err(SolveError::Shape);
        }
        for &(m, b) in self.preferred.iter().flatten() {
            if m >= self.machines.len() || !b.is_finite() || b < 0.0 {
                return Err(SolveError::Shape);
            }
        }
        let mut has_machine = vec![false; self.flavors];
        for m in &self.machines {
            has_machine[m.flavor] = true;
        }
        for j in 0..self.jobs() {
            if !self.releases[j].is_finite() {
                return Err(SolveError::Shape);
            }
            let mut placeable = false;
            for (f, has) in has_machine.iter().enumerate() {
                if let Some(p) = self.time(j, f) {
                    if !p.is_finite() || p < 0.0 {
                        return Err(SolveError::Shape);
                    }
                    placeable |= has;
                }
            }
            if !placeable {
                return Err(SolveError::Unplaceable { job: j });
            }
        }
        Ok(())
    }

    /// The jobs `ids` of a warm state (times row-major over `flavors`),
    /// released now, on `machines`: what a cold solve of that state is
    /// given.
    pub fn of_jobs(
        flavors: usize,
        machines: Vec<Machine>,
        times: &[Option<f64>],
        ids: &[u32],
        preferred: Vec<Option<(usize, f64)>>,
    ) -> Instance {
        Instance {
            flavors,
            machines,
            releases: vec![0.0; ids.len()],
            times: ids
                .iter()
                .flat_map(|&j| {
                    times[j as usize * flavors..(j as usize + 1) * flavors]
                        .iter()
                        .copied()
                })
                .collect(),
            preferred,
        }
    }

    /// The objective of an assignment, recomputed from scratch.
    pub fn objective(&self, slots: &[Slot]) -> f64 {
        slots
            .iter()
            .enumerate()
            .map(|(j, s)| {
                self.cost(j, s.machine, s.position)
                    .expect("assignment uses a forbidden flavor")
            })
            .sum()
    }
}

/// A job's place: `position` 1 is the last job to run on `machine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Index into [`Instance::machines`].
    pub machine: usize,
    /// 1 for the last job to run on the machine, 2 for the one before, and so
    /// on.
    pub position: usize,
}

/// A placement of every job.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// One slot per job, in job order.
    pub slots: Vec<Slot>,
    /// The summed [`Instance::cost`] of every job's slot.
    pub objective: f64,
}

impl Solution {
    /// Jobs per machine in the order they run (first to start first).
    pub fn queues(&self, machines: usize) -> Vec<Vec<usize>> {
        let mut q: Vec<Vec<(usize, usize)>> = vec![Vec::new(); machines];
        for (j, s) in self.slots.iter().enumerate() {
            q[s.machine].push((s.position, j));
        }
        q.into_iter()
            .map(|mut v| {
                v.sort_by(|a, b| b.cmp(a));
                v.into_iter().map(|(_, j)| j).collect()
            })
            .collect()
    }
}

/// Why an instance could not be solved.
#[derive(Clone, Debug, PartialEq)]
pub enum SolveError {
    /// The instance's vectors disagree in length, or hold a negative or
    /// non-finite number.
    Shape,
    /// This job may use no flavor that has a machine.
    Unplaceable {
        /// Index of the job in the instance.
        job: usize,
    },
    /// The reference solver was asked for more than it can hold.
    TooLarge {
        /// How big the problem is, in the solver's own measure (cost-matrix
        /// cells, or assignments to try).
        cells: u128,
    },
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Shape => write!(f, "malformed instance"),
            SolveError::Unplaceable { job } => {
                write!(f, "job {job} can run on no flavor that has a machine")
            }
            SolveError::TooLarge { cells } => write!(
                f,
                "the dense matrix would have {cells} cells; too large for the reference solver"
            ),
        }
    }
}

impl std::error::Error for SolveError {}

/// Which exact solver to use. Both return an optimal matching; they may pick
/// different optima when costs tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SolverKind {
    /// Lazy slots searched by flavor and position ([`fast`]): the default,
    /// since it takes every instance, preferences included.
    #[default]
    Fast,
    /// Shortest paths over position classes ([`classes`]): all machines of
    /// a flavor at one position are one node. Without preferences only;
    /// with them it runs [`fast`].
    Classes,
}

impl SolverKind {
    /// The name the command line and reports use.
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Fast => "fast",
            SolverKind::Classes => "classes",
        }
    }
}

/// Solves with `kind`, except that an instance where only one flavor has
/// machines and no job prefers a machine goes to [`one_flavor`], which is
/// exact there and costs a sort.
pub fn solve(instance: &Instance, kind: SolverKind) -> Result<Solution, SolveError> {
    if one_flavor::applies(instance).is_some() {
        return one_flavor::solve(instance);
    }
    match kind {
        SolverKind::Fast => fast::solve(instance),
        SolverKind::Classes if classes::applies(instance) => classes::solve(instance),
        SolverKind::Classes => fast::solve(instance),
    }
}
