//! fairmatch: a fair, heterogeneity-aware scheduler for ML jobs.
//!
//! The core (`model`, `solver`, `policy`, `metrics`) is pure and synchronous:
//! no I/O, no clocks, no threads. The simulator and, later, the Slurm plugin
//! both drive it through the [`policy::Policy`] trait.

pub mod model;
pub mod solver;
pub mod policy;
pub mod metrics;
#[cfg(feature = "cli")]
pub mod sim;
#[cfg(feature = "cli")]
pub mod io;
