//! fairmatch: a fair, heterogeneity-aware scheduler for ML jobs.
//!
//! The core (`model`, `solver`, `policy`, `metrics`) is pure and synchronous:
//! no I/O, no clocks, no threads. The simulator and, later, the Slurm plugin
//! both drive it through the [`policy::Policy`] trait.
//!
//! AlloX's motivating example: two GPUs, two CPU slots, and four jobs with
//! (gpu, cpu) run times (40, 50), (40, 50), (40, 80), (40, 80). Sending the
//! 80-second CPU jobs to the GPUs and the others to the CPUs gives a total
//! completion time of 180, an average of 45:
//!
//! ```
//! use fairmatch::solver::{solve, Instance, Machine, SolverKind};
//!
//! let gpu = Machine { flavor: 0, free_in: 0.0 };
//! let cpu = Machine { flavor: 1, free_in: 0.0 };
//! let times = [(40.0, 50.0), (40.0, 50.0), (40.0, 80.0), (40.0, 80.0)];
//! let instance = Instance {
//!     flavors: 2,
//!     machines: vec![gpu.clone(), gpu, cpu.clone(), cpu],
//!     releases: vec![0.0; 4],
//!     times: times.iter().flat_map(|&(g, c)| [Some(g), Some(c)]).collect(),
//!     preferred: Vec::new(),
//! };
//! let solution = solve(&instance, SolverKind::Fast).unwrap();
//! assert_eq!(solution.objective / 4.0, 45.0);
//! let on_gpu = |j: usize| instance.machines[solution.slots[j].machine].flavor == 0;
//! assert!(on_gpu(2) && on_gpu(3) && !on_gpu(0) && !on_gpu(1));
//! ```

#![deny(missing_docs)]

#[cfg(feature = "cli")]
pub mod bundled;
#[cfg(feature = "cli")]
pub mod io;
pub mod metrics;
pub mod model;
mod ordered;
#[cfg(feature = "plugin")]
pub mod plugin;
pub mod policy;
#[cfg(feature = "cli")]
pub mod sim;
pub mod slurm;
pub mod solver;
#[cfg(feature = "spank")]
pub mod spank;

// Each cdylib is one Slurm plugin, and both define `plugin_name`.
#[cfg(all(feature = "plugin", feature = "spank"))]
compile_error!("build the `plugin` and `spank` features apart (scripts/build-plugin.sh)");
