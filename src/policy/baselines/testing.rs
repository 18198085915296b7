//! Small hand-made views for the policies' unit tests.

use crate::model::Flavor;
use crate::policy::{MachineView, PendingJob, RunningJob, View};

/// Flavors `gpu` and `cpu` with these many slots, and one idle machine per
/// slot, GPUs first.
pub fn two_flavors(gpus: usize, cpus: usize) -> (Vec<Flavor>, Vec<MachineView>) {
    let flavors = vec![
        Flavor {
            name: "gpu".into(),
            slots: gpus,
            per_node: 1,
        },
        Flavor {
            name: "cpu".into(),
            slots: cpus,
            per_node: 1,
        },
    ];
    let machines = (0..gpus)
        .map(|_| 0)
        .chain((0..cpus).map(|_| 1))
        .enumerate()
        .map(|(node, flavor)| MachineView {
            flavor,
            node,
            free_at: 0.0,
            idle: true,
        })
        .collect();
    (flavors, machines)
}

pub fn pending(id: usize, user: usize, arrival: f64, times: [Option<f64>; 2]) -> PendingJob {
    PendingJob {
        id,
        user,
        arrival,
        estimates: times.to_vec(),
        width: crate::model::Width::ONE,
        priority: 0,
    }
}

/// `job` running on `machine` (which the caller marks busy).
pub fn running(id: usize, user: usize, machine: usize, times: [Option<f64>; 2]) -> RunningJob {
    RunningJob {
        id,
        user,
        machine,
        started: 0.0,
        estimates: times.to_vec(),
        preemptible: true,
    }
}

/// Four users of weight 1, at time 10.
pub fn view<'a>(
    flavors: &'a [Flavor],
    machines: &'a [MachineView],
    pending: &'a [PendingJob],
    running: &'a [RunningJob],
) -> View<'a> {
    View {
        now: 10.0,
        flavors,
        machines,
        pending,
        running,
        user_weights: &[1.0; 4],
        attained: &[],
    }
}
