//! First come, first served, the way a multi-partition Slurm submission
//! behaves: in arrival order, each job takes idle machines of a flavor it
//! can use (its width's, best fit), the one where it is estimated fastest. A job that fits nowhere
//! now does not block the jobs behind it.

use super::{by_arrival, gang_starts, IdleNodes, Policy, PolicyError, Start, View};

/// First come, first served; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct Fifo;

impl Policy for Fifo {
    fn label(&self) -> String {
        "fifo".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let mut idle = IdleNodes::new(view);
        let mut starts = Vec::new();
        for job in by_arrival(view.pending) {
            if !idle.any() {
                break;
            }
            let best = (0..view.flavors.len())
                .filter(|&f| idle.fits(f, job.width))
                .filter_map(|f| job.estimates[f].map(|p| (p, f)))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            if let Some((_, f)) = best {
                let machines = idle.take(f, job.width).expect("checked it fits");
                starts.extend(gang_starts(job.id, &machines));
            }
        }
        Ok(starts)
    }
}
