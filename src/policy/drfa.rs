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

use super::{by_arrival, IdleByFlavor, PendingJob, Policy, PolicyError, Start, View};

#[derive(Clone, Debug, Default)]
pub struct Drfa;

fn flavor_named(view: &View<'_>, part: &str) -> Option<usize> {
    view.flavors
        .iter()
        .position(|f| f.slots > 0 && f.name.to_ascii_lowercase().contains(part))
}

/// The mean CPU-over-GPU time of the jobs in view that have both.
pub(crate) fn exchange_rate(view: &View<'_>, gpu: usize, cpu: usize) -> f64 {
    let ratios: Vec<f64> = view
        .pending
        .iter()
        .map(|j| &j.estimates)
        .chain(view.running.iter().map(|j| &j.estimates))
        .filter_map(|e| match (e[gpu], e[cpu]) {
            (Some(g), Some(c)) if g > 0.0 => Some(c / g),
            _ => None,
        })
        .collect();
    if ratios.is_empty() {
        1.0
    } else {
        ratios.iter().sum::<f64>() / ratios.len() as f64
    }
}

impl Policy for Drfa {
    fn label(&self) -> String {
        "drfa".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut idle = IdleByFlavor::new(view);
        let (gpu, cpu) = (flavor_named(view, "gpu"), flavor_named(view, "cpu"));
        let beta = match (gpu, cpu) {
            (Some(g), Some(c)) => exchange_rate(view, g, c),
            _ => 1.0,
        };
        let demand = |f: usize| if Some(f) == gpu { beta } else { 1.0 };
        let mut held = vec![0.0; view.user_weights.len()];
        for job in view.running {
            held[job.user] += demand(view.machines[job.machine].flavor);
        }
        // The flavor a job would take now: the GPU first, then the CPU.
        let choice = |job: &PendingJob, idle: &IdleByFlavor| {
            [gpu, cpu]
                .into_iter()
                .flatten()
                .find(|&f| job.estimates[f].is_some() && idle.has(f))
        };
        let mut queues: Vec<Vec<&PendingJob>> = vec![Vec::new(); held.len()];
        for job in by_arrival(view.pending) {
            if choice(job, &idle).is_some() {
                queues[job.user].push(job);
            }
        }
        let mut starts = Vec::new();
        loop {
            let next = (0..queues.len())
                .filter_map(|u| {
                    let i = queues[u].iter().position(|j| choice(j, &idle).is_some())?;
                    Some((held[u] / view.user_weights[u], u, i))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let Some((_, u, i)) = next else { break };
            let job = queues[u].remove(i);
            let f = choice(job, &idle).expect("the candidate can start");
            let machine = idle.take(f).expect("checked idle");
            held[u] += demand(f);
            starts.push(Start {
                job: job.id,
                machine,
            });
        }
        Ok(starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{pending, running, two_flavors, view};

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
}
