//! DRF over one virtual resource, as AlloX's DRFA baseline: a "virtual CPU"
//! of `cpu slots + beta * gpu slots`, where `beta` is the jobs' mean
//! CPU-over-GPU time, the rate at which one GPU slot exchanges for CPU
//! slots. A job on a CPU slot holds 1 virtual CPU; on a GPU slot, `beta`.
//! Progressive filling as in [`super::drf`]: while a job can start, the
//! user holding the least virtual CPU (over its weight; ties: lower index)
//! starts its earliest job, on an idle GPU if the job may use one, else on
//! an idle CPU.
//!
//! `beta` is taken over the jobs in view (waiting and running) that have
//! both times, since the policy never sees the whole workload; 1 if none.
//! The GPU is the first flavor whose name contains `gpu`, the CPU the first
//! whose name contains `cpu`; jobs that can use neither are left alone.
//!
//! A cluster without both names (Gavel's `v100`, `p100`, `k80`) uses every
//! flavor: the reference is the slowest one (the largest mean time), each
//! flavor's slot is worth the mean reference-over-own time of the jobs that
//! have both, and a job tries the most valuable flavor first. On a GPU and
//! a CPU this is the rule above.

use super::{
    by_arrival, progressive_filling, IdleNodes, PendingJob, Policy, PolicyError, Start, View,
};

/// AlloX's DRFA baseline; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct Drfa;

fn flavor_named(view: &View<'_>, part: &str) -> Option<usize> {
    view.flavors
        .iter()
        .position(|f| f.slots > 0 && f.name.to_ascii_lowercase().contains(part))
}

fn estimates_in_view<'a>(view: &'a View<'_>) -> impl Iterator<Item = &'a [Option<f64>]> {
    view.pending
        .iter()
        .map(|j| j.estimates.as_slice())
        .chain(view.running.iter().map(|j| j.estimates.as_slice()))
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The mean CPU-over-GPU time of the jobs in view that have both.
pub(crate) fn exchange_rate(view: &View<'_>, gpu: usize, cpu: usize) -> f64 {
    mean(
        estimates_in_view(view).filter_map(|e| match (e[gpu], e[cpu]) {
            (Some(g), Some(c)) if g > 0.0 => Some(c / g),
            _ => None,
        }),
    )
    .unwrap_or(1.0)
}

/// The flavors a job tries, most valuable first, and each flavor's worth
/// in virtual CPUs (0 for a flavor not in the order).
fn virtual_cpu(view: &View<'_>) -> (Vec<usize>, Vec<f64>) {
    let mut worth = vec![0.0; view.flavors.len()];
    if let (Some(g), Some(c)) = (flavor_named(view, "gpu"), flavor_named(view, "cpu")) {
        worth[g] = exchange_rate(view, g, c);
        worth[c] = 1.0;
        return (vec![g, c], worth);
    }
    let with_slots: Vec<usize> = (0..view.flavors.len())
        .filter(|&f| view.flavors[f].slots > 0)
        .collect();
    let mean_time = |f: usize| mean(estimates_in_view(view).filter_map(|e| e[f])).unwrap_or(0.0);
    let Some(reference) = with_slots
        .iter()
        .copied()
        .max_by(|&a, &b| mean_time(a).total_cmp(&mean_time(b)).then(b.cmp(&a)))
    else {
        return (Vec::new(), worth);
    };
    for &f in &with_slots {
        worth[f] = exchange_rate(view, f, reference);
    }
    let mut order = with_slots;
    order.sort_by(|&a, &b| worth[b].total_cmp(&worth[a]).then(a.cmp(&b)));
    (order, worth)
}

impl Policy for Drfa {
    fn label(&self) -> String {
        "drfa".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut idle = IdleNodes::new(view);
        let (order, worth) = virtual_cpu(view);
        let mut held = vec![0.0; view.user_weights.len()];
        for job in view.running {
            held[job.user] += worth[view.machines[job.machine].flavor];
        }
        // The flavor a job would take now: the most valuable idle one.
        let choice = |job: &PendingJob, idle: &IdleNodes| {
            order
                .iter()
                .copied()
                .find(|&f| job.estimates[f].is_some() && idle.fits(f, job.width))
        };
        let mut queues: Vec<Vec<&PendingJob>> = vec![Vec::new(); held.len()];
        for job in by_arrival(view.pending) {
            if choice(job, &idle).is_some() {
                queues[job.user].push(job);
            }
        }
        let starts = progressive_filling(
            &mut held,
            queues,
            &mut idle,
            |held, u| held[u] / view.user_weights[u],
            choice,
            |held, u, f, slots| held[u] += worth[f] * slots as f64,
        );
        Ok(starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flavor;
    use crate::policy::baselines::testing::{pending, running, two_flavors, view};
    use crate::policy::MachineView;

    #[test]
    fn a_gpu_counts_beta_cpus_and_jobs_try_the_gpu_first() {
        let (flavors, mut machines) = two_flavors(1, 4);
        // Every job is 3x slower on a CPU: beta = 3. User 0 already holds
        // two CPUs (2 virtual CPUs); user 1 nothing.
        machines[1].idle = false;
        machines[2].idle = false;
        let run = [
            running(10, 0, 1, [Some(10.0), Some(30.0)]),
            running(11, 0, 2, [Some(10.0), Some(30.0)]),
        ];
        let jobs: Vec<_> = (0..4)
            .map(|i| pending(i, i % 2, i as f64, [Some(10.0), Some(30.0)]))
            .collect();
        let v = view(&flavors, &machines, &jobs, &run);
        assert_eq!(exchange_rate(&v, 0, 1), 3.0);
        let starts = Drfa.decide(&v).unwrap();
        // User 1 (0 held) starts job 1 on the GPU (now 3 held); user 0 (2)
        // starts job 0 on a CPU (now 3); at the tie user 0 wins by index and
        // takes the last CPU for job 2. Nothing is left for job 3.
        assert_eq!(
            starts,
            vec![
                Start { job: 1, machine: 0 },
                Start { job: 0, machine: 3 },
                Start { job: 2, machine: 4 }
            ]
        );
    }

    #[test]
    fn without_gpu_and_cpu_names_every_flavor_counts_against_the_slowest() {
        // Gavel's worker types, one slot each: every job takes 1 s on the
        // v100, 2 s on the p100 and 4 s on the k80. The k80 is the
        // reference; a v100 slot is worth 4 virtual CPUs, a p100 slot 2.
        let flavors: Vec<Flavor> = ["k80", "v100", "p100"]
            .iter()
            .map(|n| Flavor {
                name: n.to_string(),
                slots: 1,
                per_node: 1,
            })
            .collect();
        let machines: Vec<MachineView> = (0..3)
            .map(|flavor| MachineView {
                flavor,
                node: flavor,
                free_at: 0.0,
                idle: true,
            })
            .collect();
        let job = |id: usize, user: usize| PendingJob {
            id,
            user,
            arrival: id as f64,
            estimates: vec![Some(4.0), Some(1.0), Some(2.0)],
            width: crate::model::Width::ONE,
            priority: 0,
        };
        let jobs = [job(0, 0), job(1, 0), job(2, 1), job(3, 1)];
        let v = view(&flavors, &machines, &jobs, &[]);
        assert_eq!(virtual_cpu(&v), (vec![1, 2, 0], vec![1.0, 4.0, 2.0]));
        // User 0 takes the v100 (4 held); user 1 the p100 (2), then the k80.
        let starts = Drfa.decide(&v).unwrap();
        assert_eq!(
            starts,
            vec![
                Start { job: 0, machine: 1 },
                Start { job: 2, machine: 2 },
                Start { job: 3, machine: 0 }
            ]
        );
    }
}
