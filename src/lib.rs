//! fairmatch: a fair, heterogeneity-aware scheduler for ML jobs.
//!
//! The core (`model`, `solver`, `policy`, `metrics`) is pure and synchronous:
//! no I/O, no clocks, no threads. The simulator and, later, the Slurm plugin
//! both drive it through the [`policy::Policy`] trait.

#[cfg(feature = "cli")]
pub mod bundled;
#[cfg(feature = "cli")]
pub mod io;
pub mod metrics;
pub mod model;
pub mod policy;
#[cfg(feature = "cli")]
pub mod sim;
pub mod solver;
