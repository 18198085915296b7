//! Everything the Slurm plugin decides, as pure Rust: hints, configuration,
//! learned run times, and the planner that runs the shared policy on a
//! snapshot of slurmctld. The FFI layer (`crate::plugin`, feature `plugin`)
//! only converts C structs to these types and back.

pub mod config;
mod estimates;
pub mod full_nodes;
pub mod hints;
pub mod history;
pub mod hostlist;
pub mod planner;
mod preempting;
pub mod priority;
pub mod reasons;
pub mod saved_state;
pub mod shapes;
mod shared_gpus;
pub mod slots;
pub mod snapshot;
mod view;
pub mod window;
