//! Real workloads compiled into the binary, so `fairmatch simulate` works
//! from any directory with no files at hand. Both come from AlloX's
//! simulator inputs (lenhattan86/allox_sim, input/).

use crate::io::allox_format::AlloxOptions;

/// A workload compiled into the binary, in AlloX's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bundled {
    /// 40 TensorFlow jobs from 4 users, all at t=0, CPU and GPU times
    /// measured on AlloX's testbed (seconds). Run on the testbed's 4 GPUs
    /// and 8 CPU slots.
    Testbed,
    /// 10 users x 1000 jobs with arrivals from the Google 2011 trace
    /// (minutes). Run on the paper's 20 GPUs and 20 CPU slots.
    Google,
}

impl Bundled {
    /// The name reports and errors give it.
    pub fn name(self) -> &'static str {
        match self {
            Bundled::Testbed => "allox-testbed",
            Bundled::Google => "allox-google",
        }
    }

    /// The file's text.
    pub fn text(self) -> &'static str {
        match self {
            Bundled::Testbed => include_str!("bundled/eurosys4.2_real.txt"),
            Bundled::Google => include_str!("bundled/job_google_m1.txt"),
        }
    }

    /// The cluster and time unit it runs with.
    pub fn options(self) -> AlloxOptions {
        match self {
            Bundled::Testbed => AlloxOptions {
                gpu_slots: 4,
                cpu_slots: 8,
                seconds_per_unit: 1.0,
            },
            Bundled::Google => AlloxOptions {
                gpu_slots: 20,
                cpu_slots: 20,
                seconds_per_unit: 60.0,
            },
        }
    }
}
