//! First come, first served, the way a multi-partition Slurm submission
//! behaves: in arrival order, each job takes an idle machine of a flavor it
//! can use, the one where it is estimated fastest. A job that fits nowhere
//! now does not block the jobs behind it.

use super::{by_arrival, Policy, PolicyError, Start, View};

/// First come, first served; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct Fifo;

impl Policy for Fifo {
    fn label(&self) -> String {
        "fifo".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut free: Vec<usize> = view.idle_machines().collect();
        let mut starts = Vec::new();
        for job in by_arrival(view.pending) {
            if free.is_empty() {
                break;
            }
            let best = free
                .iter()
                .enumerate()
                .filter_map(|(i, &m)| view.estimate_on(job, m).map(|p| (p, m, i)))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            if let Some((_, machine, i)) = best {
                starts.push(Start {
                    job: job.id,
                    machine,
                });
                free.swap_remove(i);
            }
        }
        Ok(starts)
    }
}
