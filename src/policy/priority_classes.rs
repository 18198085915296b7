//! Strict priority classes: every job of a higher [`PendingJob::priority`]
//! is served before any job of a lower one, and the policy's own order
//! (AlloX's matching and fairness) decides within a class.
//!
//! This is how a site's "this goes first" reaches the matching (Slurm's
//! partition `PriorityTier`, QOS priority and an admin's priority: see
//! `slurm::priority`). A class is offered the cluster as the classes above
//! it leave it, so a lower class never takes a slot a higher class starts
//! on now, and never a slot a higher class's waiting gang holds: the
//! gangs its plan reserves (AlloX's first reservations in its gang plan,
//! `allox::gangs`) hold the nodes and flavor that plan starts them on, as
//! Slurm's backfill holds a reservation for its top jobs. A policy with no
//! such plan has its first [`RESERVATIONS`] waiting gangs, in arrival
//! order on their fastest flavor, hold the nodes where the serial schedule
//! of [`gang_plan`] would start them soonest. A waiting one-slot job of a higher class
//! holds nothing: the policy left it waiting for a busy machine it prefers
//! (a faster flavor, or its fairness rule's turn), and an idle slot it did
//! not take now is one the matching does not plan it on.
//!
//! Costs as weights inside one matching would not do: the matching
//! minimises total completion time, and enough short jobs of a lower class
//! always outbid a finite weight. Classes, like the waiting-time bound,
//! are a tier.

use super::gang_plan::{self, PlanJob};
use super::{by_arrival, MachineView, PendingJob, PolicyError, Start, View};
use crate::model::best_flavor;

/// Waiting gangs of a higher class that hold nodes from the classes below.
pub const RESERVATIONS: usize = 8;

/// Whether the pending jobs fall into more than one class.
pub fn several(view: &View<'_>) -> bool {
    let mut classes = view.pending.iter().map(|j| j.priority);
    classes
        .next()
        .is_some_and(|first| classes.any(|c| c != first))
}

/// The pending jobs of the highest class in `view`, as a view of their own.
pub struct Highest<'v> {
    view: View<'v>,
    pending: Vec<PendingJob>,
}

impl Highest<'_> {
    /// `view` with only the highest class's pending jobs.
    pub fn view(&self) -> View<'_> {
        View {
            pending: &self.pending,
            ..self.view.clone()
        }
    }
}

/// See [`Highest`].
pub fn highest<'v>(view: &View<'v>) -> Highest<'v> {
    let top = view.pending.iter().map(|j| j.priority).max().unwrap_or(0);
    Highest {
        view: view.clone(),
        pending: view
            .pending
            .iter()
            .filter(|j| j.priority == top)
            .cloned()
            .collect(),
    }
}

/// What one class's decision leaves the classes below.
pub struct ClassDecision {
    /// The class's starts.
    pub starts: Vec<Start>,
    /// The idle machines (indices into the view's) its plan holds for its
    /// waiting jobs, and until when from now. `None` where the policy
    /// keeps no such plan: then its oldest waiting gangs hold the nodes
    /// where an arrival-order serial schedule would start them
    /// (`held_by_gangs`).
    pub held: Option<Vec<(usize, f64)>>,
}

/// The starts of the highest class that starts anything, asking `decide`
/// once per class, highest first, with a view of that class's jobs on the
/// slots the classes above leave. Empty when no class starts a job.
pub fn decide_by_class(
    view: &View<'_>,
    mut decide: impl FnMut(&View<'_>) -> Result<ClassDecision, PolicyError>,
) -> Result<Vec<Start>, PolicyError> {
    let mut classes: Vec<u32> = view.pending.iter().map(|j| j.priority).collect();
    classes.sort_unstable_by(|a, b| b.cmp(a));
    classes.dedup();
    let mut machines: Vec<MachineView> = view.machines.to_vec();
    for class in classes {
        if !machines.iter().any(|m| m.idle) {
            break;
        }
        let pending: Vec<PendingJob> = view
            .pending
            .iter()
            .filter(|j| j.priority == class)
            .cloned()
            .collect();
        let sub = View {
            machines: &machines,
            pending: &pending,
            ..view.clone()
        };
        let decision = decide(&sub)?;
        if !decision.starts.is_empty() {
            return Ok(decision.starts);
        }
        // A held slot is busy to the classes below until the gang
        // holding it ends: "free now" would have their matching wait for
        // it rather than take another idle slot.
        let held = decision.held.unwrap_or_else(|| held_by_gangs(&sub));
        for (m, until) in held {
            machines[m].idle = false;
            machines[m].free_at = machines[m].free_at.max(view.now + until);
        }
    }
    Ok(Vec::new())
}

/// The idle machines (indices into `view.machines`) that `view`'s oldest
/// waiting gangs hold, and until when (from now): each gang, in arrival
/// order on its fastest flavor, where the serial schedule starts it
/// soonest without delaying those before it, until it ends.
fn held_by_gangs(view: &View<'_>) -> Vec<(usize, f64)> {
    let gangs: Vec<&PendingJob> = by_arrival(view.pending)
        .into_iter()
        .filter(|j| !j.width.is_one())
        .filter(|j| best_flavor(&j.estimates, view.flavors).is_some())
        .take(RESERVATIONS)
        .collect();
    if gangs.is_empty() {
        return Vec::new();
    }
    let (nodes, idle) = gang_plan::view_nodes(view);
    let jobs: Vec<PlanJob> = gangs.iter().map(|j| PlanJob::of(j, view.now)).collect();
    let order: Vec<(usize, usize)> = gangs
        .iter()
        .enumerate()
        .filter_map(|(i, j)| best_flavor(&j.estimates, view.flavors).map(|(f, _)| (i, f)))
        .collect();
    let mut held: Vec<(usize, f64)> = Vec::new();
    for placement in gang_plan::schedule_all(&nodes, view.flavors.len(), &jobs, &order) {
        for &n in &placement.nodes {
            held.extend(idle[n].iter().map(|&m| (m, placement.end)));
        }
    }
    // A slot two gangs hold is held until the later one ends.
    held.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    held.dedup_by_key(|h| h.0);
    held
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flavor, Width};

    fn flavors() -> Vec<Flavor> {
        vec![Flavor::new("gpu", 2), Flavor::new("cpu", 2)]
    }

    fn machine(flavor: usize, node: usize, idle: bool) -> MachineView {
        MachineView {
            flavor,
            node,
            free_at: if idle { 0.0 } else { 50.0 },
            idle,
        }
    }

    fn job(id: usize, priority: u32, width: Width) -> PendingJob {
        PendingJob {
            id,
            user: 0,
            arrival: id as f64,
            estimates: vec![Some(10.0), Some(40.0)],
            width,
            priority,
        }
    }

    /// Starts the oldest job on the first idle machine its flavor allows:
    /// enough to see which class is asked, and on which machines.
    fn first_fit(view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let job = by_arrival(view.pending)
            .into_iter()
            .find(|j| j.width.is_one());
        Ok(job
            .and_then(|j| {
                view.idle_machines()
                    .find(|&m| view.estimate_on(j, m).is_some())
                    .map(|machine| vec![Start { job: j.id, machine }])
            })
            .unwrap_or_default())
    }

    fn first_fit_class(view: &View<'_>) -> Result<ClassDecision, PolicyError> {
        Ok(ClassDecision {
            starts: first_fit(view)?,
            held: None,
        })
    }

    /// AlloX's own plan says where a higher class's gang will start, and
    /// that is what it holds: here the CPU node, free sooner, not the GPUs
    /// it is fastest on. Held by the fastest flavor, the GPUs (none idle)
    /// would hold nothing, and the lower class's job would take the CPU
    /// slot and delay the gang by 20 s.
    #[test]
    fn a_gang_holds_the_nodes_its_class_plan_reserves() {
        use crate::policy::allox::Allox;
        use crate::policy::Policy;
        let flavors = flavors();
        let busy_until = |flavor, node, free_at| MachineView {
            flavor,
            node,
            free_at,
            idle: false,
        };
        let machines = vec![
            busy_until(0, 0, 200.0),
            busy_until(0, 0, 200.0),
            busy_until(1, 1, 30.0),
            machine(1, 1, true),
        ];
        // 10 s on GPUs from t = 200, or 40 s on CPUs from t = 30.
        let gang = job(1, 5, Width::new(2, 1).unwrap());
        let pending = vec![gang, job(2, 0, Width::ONE)];
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        let mut allox = Allox::new(1.0).unwrap();
        assert_eq!(allox.decide(&view).unwrap(), Vec::<Start>::new());
        // The gang alone would wait too; the lower-class job alone starts.
        let pending = vec![job(2, 0, Width::ONE)];
        let view = View {
            pending: &pending,
            ..view
        };
        assert_eq!(
            allox.decide(&view).unwrap(),
            vec![Start { job: 2, machine: 3 }]
        );
    }

    /// Through AlloX's matching: the held GPU is busy until the gang ends,
    /// so the lower class's job takes the idle CPU now rather than wait
    /// for the GPU it would be faster on.
    #[test]
    fn allox_starts_a_lower_class_on_the_idle_slot_a_gang_does_not_hold() {
        use crate::policy::allox::Allox;
        use crate::policy::Policy;
        let flavors = flavors();
        let machines = vec![
            machine(0, 0, false),
            machine(0, 0, true),
            machine(1, 1, true),
        ];
        let gang = job(1, 5, Width::new(2, 1).unwrap());
        let pending = vec![gang, job(2, 0, Width::ONE)];
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        let mut allox = Allox::new(1.0).unwrap();
        assert_eq!(
            allox.decide(&view).unwrap(),
            vec![Start { job: 2, machine: 2 }]
        );
    }

    /// Only the highest class waiting may preempt: a job of a lower class
    /// overdue for ages does not stop a running job while a higher class
    /// waits, since the slot would go to that class.
    #[test]
    fn a_lower_class_overdue_job_does_not_preempt_while_a_higher_class_waits() {
        use crate::policy::allox::{Allox, Preemption};
        use crate::policy::{Policy, RunningJob};
        let flavors = vec![Flavor::new("gpu", 1)];
        let machines = vec![MachineView {
            flavor: 0,
            node: 0,
            free_at: 1e6,
            idle: false,
        }];
        let running = vec![RunningJob {
            id: 9,
            user: 0,
            machine: 0,
            started: 0.0,
            estimates: vec![Some(1e6)],
            preemptible: true,
        }];
        let old_low = PendingJob {
            id: 1,
            user: 0,
            arrival: 0.0,
            estimates: vec![Some(10.0)],
            width: Width::ONE,
            priority: 0,
        };
        let new_high = PendingJob {
            id: 2,
            arrival: 99_990.0,
            priority: 5,
            ..old_low.clone()
        };
        let preempting = || {
            let mut a = Allox::new(1.0).unwrap();
            a.max_wait = Some(100.0);
            a.preemption = Some(Preemption {
                for_gain: false,
                ..Preemption::default()
            });
            a
        };
        let pending = vec![old_low.clone(), new_high];
        let view = View {
            now: 100_000.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &running,
            user_weights: &[1.0],
            attained: &[],
        };
        assert_eq!(preempting().preempt(&view).unwrap(), Vec::<usize>::new());
        let alone = vec![old_low];
        let view = View {
            pending: &alone,
            ..view
        };
        assert_eq!(preempting().preempt(&view).unwrap(), vec![9]);
    }

    #[test]
    fn the_higher_class_goes_first_whatever_its_age() {
        let flavors = flavors();
        let machines = vec![machine(0, 0, true), machine(1, 1, true)];
        let pending = vec![job(1, 0, Width::ONE), job(2, 5, Width::ONE)];
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        assert!(several(&view));
        let starts = decide_by_class(&view, first_fit_class).unwrap();
        assert_eq!(starts, vec![Start { job: 2, machine: 0 }]);
    }

    #[test]
    fn a_lower_class_never_takes_a_node_a_waiting_gang_of_a_higher_class_holds() {
        let flavors = flavors();
        // Node 0: one GPU busy, one idle. The class-5 gang of two GPUs waits
        // for node 0 and holds its idle GPU; the class-0 job may take the
        // CPU node only.
        let machines = vec![
            machine(0, 0, false),
            machine(0, 0, true),
            machine(1, 1, true),
        ];
        let gang = job(1, 5, Width::new(2, 1).unwrap());
        let pending = vec![gang, job(2, 0, Width::ONE)];
        let view = View {
            now: 10.0,
            flavors: &flavors,
            machines: &machines,
            pending: &pending,
            running: &[],
            user_weights: &[1.0],
            attained: &[],
        };
        let starts = decide_by_class(&view, first_fit_class).unwrap();
        assert_eq!(starts, vec![Start { job: 2, machine: 2 }]);
        // With one class, the same job takes the idle GPU.
        let pending = vec![job(2, 0, Width::ONE)];
        let view = View {
            pending: &pending,
            ..view
        };
        assert!(!several(&view));
        assert_eq!(
            first_fit(&view).unwrap(),
            vec![Start { job: 2, machine: 1 }]
        );
    }
}
