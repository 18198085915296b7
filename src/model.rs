//! The scheduling model: flavors of hardware, users, and jobs whose run time
//! depends on the flavor they run on.
//!
//! Times are seconds, kept as `f64`. A job's time on a flavor it cannot use
//! is `None`; everything downstream treats `None` as "forbidden", never as a
//! large number, so no sentinel value can leak into a sum.

use std::fmt;

/// Most slots a cluster may have, over all its flavors. The simulator and
/// the matching keep one machine per slot; a bound far above any cluster
/// one decision is made for keeps a typo (`slots: 10000000000`) from
/// allocating gigabytes.
pub const MAX_SLOTS: usize = 100_000;

/// Longest time an input may give (an arrival, a duration, an estimate):
/// 1e10 s, about 317 years, so Unix-epoch arrivals fit. Below it an `f64`
/// second is exact to a few microseconds, so `arrival + duration` loses
/// nothing a report shows; far above it (1e17) a 100 s job would vanish in
/// rounding.
pub const MAX_SECONDS: f64 = 1e10;

/// A parameter or input the model cannot hold.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

/// Checks a time against [`MAX_SECONDS`]: finite, `>= 0`, not above it.
pub fn check_seconds(value: f64, what: &str) -> Result<f64, ModelError> {
    if value.is_finite() && (0.0..=MAX_SECONDS).contains(&value) {
        Ok(value)
    } else {
        Err(ModelError(format!(
            "{what} {value} must be a number of seconds from 0 to {MAX_SECONDS:e}"
        )))
    }
}

/// A kind of hardware (`cpu`, `gpu-v100`, ...) and how many slots (GPUs,
/// or CPU job slots) of it the cluster has, in nodes of `per_node` slots.
#[derive(Clone, Debug, PartialEq)]
pub struct Flavor {
    /// Unique within the cluster; inputs refer to the flavor by it.
    pub name: String,
    /// Slots of this flavor, over all its nodes: a multiple of `per_node`.
    pub slots: usize,
    /// Slots per node. A job wider than one slot needs its slots on as few
    /// nodes as its [`Width`] says; 1 makes every slot a node of its own.
    pub per_node: usize,
}

impl Flavor {
    /// A flavor of `slots` slots, each a node of its own.
    pub fn new(name: impl Into<String>, slots: usize) -> Self {
        Flavor {
            name: name.into(),
            slots,
            per_node: 1,
        }
    }

    /// Nodes of this flavor.
    pub fn nodes(&self) -> usize {
        self.slots / self.per_node.max(1)
    }

    /// Whether a job of `width` fits on this flavor's nodes at all.
    pub fn fits(&self, width: Width) -> bool {
        width.per_node <= self.per_node && width.nodes <= self.nodes()
    }
}

/// How many slots a job holds at once, all from its start to its end: `per_node` on
/// each of `nodes` nodes of one flavor (a gang).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Width {
    /// Slots on each of its nodes, at least 1.
    pub per_node: usize,
    /// Nodes, at least 1.
    pub nodes: usize,
}

impl Width {
    /// One slot on one node: the only width before gangs.
    pub const ONE: Width = Width {
        per_node: 1,
        nodes: 1,
    };

    /// `per_node` slots on each of `nodes` nodes; refuses 0 and anything
    /// past [`MAX_SLOTS`] in all.
    pub fn new(per_node: usize, nodes: usize) -> Result<Width, ModelError> {
        if per_node == 0 || nodes == 0 || per_node.saturating_mul(nodes) > MAX_SLOTS {
            return Err(ModelError(format!(
                "width {per_node} slots x {nodes} nodes must be at least 1 x 1 and at most {MAX_SLOTS} slots"
            )));
        }
        Ok(Width { per_node, nodes })
    }

    /// The shape of a job that asks for `slots` slots in all, on nodes of
    /// `per_node` slots: one node when it fits on one, else as few whole
    /// nodes as hold it, with the slots spread evenly (rounded up).
    pub fn spread(slots: usize, per_node: usize) -> Width {
        let slots = slots.max(1);
        let per_node = per_node.max(1);
        let nodes = slots.div_ceil(per_node);
        Width {
            per_node: slots.div_ceil(nodes),
            nodes,
        }
    }

    /// Slots in all.
    pub fn slots(&self) -> usize {
        self.per_node * self.nodes
    }

    /// One slot on one node.
    pub fn is_one(&self) -> bool {
        *self == Width::ONE
    }
}

impl Default for Width {
    fn default() -> Self {
        Width::ONE
    }
}

impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nodes == 1 {
            write!(f, "{}", self.per_node)
        } else {
            write!(f, "{}x{}", self.nodes, self.per_node)
        }
    }
}

/// A tenant. Fairness compares users, scaled by their weight.
#[derive(Clone, Debug, PartialEq)]
pub struct User {
    /// The name from the input, kept for reports.
    pub name: String,
    /// Relative share; a finite number > 0.
    pub weight: f64,
}

impl User {
    /// A user with a weight that is a finite number > 0.
    pub fn new(name: impl Into<String>, weight: f64) -> Result<Self, ModelError> {
        let name = name.into();
        if !(weight.is_finite() && weight > 0.0) {
            return Err(ModelError(format!(
                "user '{name}': weight {weight} must be a finite number > 0"
            )));
        }
        Ok(User { name, weight })
    }
}

/// A non-preemptive job of a fixed [`Width`].
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The identifier from the input, kept for reports.
    pub name: String,
    /// Index into [`Workload::users`].
    pub user: usize,
    /// Arrival time in seconds from the workload's start.
    pub arrival: f64,
    /// True run time per flavor, indexed like [`Cluster::flavors`].
    pub durations: Vec<Option<f64>>,
    /// What the scheduler is told, per flavor. `None` where the input gave no
    /// estimate; the simulator then decides what the scheduler sees.
    pub estimates: Vec<Option<f64>>,
    /// The slots it holds at once. Its times are at this width.
    pub width: Width,
}

impl Job {
    /// The flavor this job runs fastest on, by true duration, among flavors
    /// that have slots. Ties go to the lower flavor index.
    pub fn fastest_flavor(&self, cluster: &Cluster) -> Option<(usize, f64)> {
        best_flavor(
            &cluster.fitting(&self.durations, self.width),
            &cluster.flavors,
        )
    }
}

/// Index and time of the smallest defined time among flavors with slots;
/// ties go to the lower index. `times` is indexed like `flavors`.
pub fn best_flavor(times: &[Option<f64>], flavors: &[Flavor]) -> Option<(usize, f64)> {
    times
        .iter()
        .enumerate()
        .filter(|(f, _)| flavors[*f].slots > 0)
        .filter_map(|(f, t)| t.map(|t| (f, t)))
        .fold(None, |best, (f, t)| match best {
            Some((_, bt)) if bt <= t => best,
            _ => Some((f, t)),
        })
}

/// The flavors a scenario's machines come in.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// Distinct flavors; a job's per-flavor vectors are indexed like this.
    pub flavors: Vec<Flavor>,
}

impl Cluster {
    /// A cluster of distinct flavors with at most [`MAX_SLOTS`] slots in all
    /// and at least one.
    pub fn new(flavors: Vec<Flavor>) -> Result<Self, ModelError> {
        let cluster = Cluster { flavors };
        cluster.validate()?;
        Ok(cluster)
    }

    /// Refuses a repeated flavor name, more than [`MAX_SLOTS`] slots in all, or
    /// none.
    pub fn validate(&self) -> Result<(), ModelError> {
        let mut total: usize = 0;
        for (i, f) in self.flavors.iter().enumerate() {
            if self.flavors[..i].iter().any(|g| g.name == f.name) {
                return Err(ModelError(format!("flavor '{}' defined twice", f.name)));
            }
            if f.per_node == 0 || f.slots % f.per_node != 0 {
                return Err(ModelError(format!(
                    "flavor '{}': {} slots are not whole nodes of {} slots",
                    f.name, f.slots, f.per_node
                )));
            }
            total = total.saturating_add(f.slots);
            if total > MAX_SLOTS {
                return Err(ModelError(format!(
                    "flavor '{}': {} slots take the cluster past {MAX_SLOTS} slots in all",
                    f.name, f.slots
                )));
            }
        }
        if total == 0 {
            return Err(ModelError("the cluster has no slots".into()));
        }
        Ok(())
    }

    /// The index of the flavor called `name`.
    pub fn flavor_index(&self, name: &str) -> Option<usize> {
        self.flavors.iter().position(|f| f.name == name)
    }

    /// `times` with `None` on every flavor a job of `width` does not fit.
    pub fn fitting(&self, times: &[Option<f64>], width: Width) -> Vec<Option<f64>> {
        times
            .iter()
            .zip(&self.flavors)
            .map(|(t, f)| t.filter(|_| f.fits(width)))
            .collect()
    }

    /// Per machine (as [`Cluster::machine_flavors`]), its node: nodes are
    /// numbered over the whole cluster, flavor by flavor, each holding
    /// `per_node` consecutive machines.
    pub fn machine_nodes(&self) -> Vec<usize> {
        let mut nodes = Vec::with_capacity(self.total_slots());
        let mut first = 0;
        for f in &self.flavors {
            let per = f.per_node.max(1);
            nodes.extend((0..f.slots).map(|i| first + i / per));
            first += f.slots.div_ceil(per);
        }
        nodes
    }

    /// Slots over all flavors: the number of machines.
    pub fn total_slots(&self) -> usize {
        self.flavors.iter().map(|f| f.slots).sum()
    }

    /// One machine per slot, flavor by flavor: machine `i` has flavor
    /// `machine_flavors()[i]`.
    pub fn machine_flavors(&self) -> Vec<usize> {
        self.flavors
            .iter()
            .enumerate()
            .flat_map(|(f, fl)| std::iter::repeat_n(f, fl.slots))
            .collect()
    }

    /// Machine names in the order of [`Cluster::machine_flavors`]: the
    /// flavor's name and the slot's index within it, e.g. `gpu0`.
    pub fn machine_names(&self) -> Vec<String> {
        self.flavors
            .iter()
            .flat_map(|fl| (0..fl.slots).map(move |i| format!("{}{i}", fl.name)))
            .collect()
    }
}

/// The users and their jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// The users, which [`Job::user`] indexes.
    pub users: Vec<User>,
    /// The jobs, in input order.
    pub jobs: Vec<Job>,
}

/// A workload bound to the cluster it runs on. Every job's vectors have one
/// entry per flavor of the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The machines.
    pub cluster: Cluster,
    /// The jobs and their users.
    pub workload: Workload,
}

impl Scenario {
    /// Everything the simulator relies on: the cluster's bounds, user
    /// weights, one entry per flavor in every job, users in range, and
    /// every time within [`MAX_SECONDS`].
    pub fn validate(&self) -> Result<(), ModelError> {
        self.cluster.validate()?;
        for u in &self.workload.users {
            User::new(u.name.clone(), u.weight)?;
        }
        let flavors = self.cluster.flavors.len();
        for job in &self.workload.jobs {
            let at = |e: ModelError| ModelError(format!("job '{}': {e}", job.name));
            if job.user >= self.workload.users.len() {
                return Err(at(ModelError("its user is not in the workload".into())));
            }
            if job.durations.len() != flavors || job.estimates.len() != flavors {
                return Err(at(ModelError(format!(
                    "needs one duration and estimate per flavor ({flavors})"
                ))));
            }
            Width::new(job.width.per_node, job.width.nodes).map_err(at)?;
            check_seconds(job.arrival, "arrival").map_err(at)?;
            for t in job.durations.iter().chain(&job.estimates).flatten() {
                check_seconds(*t, "time").map_err(at)?;
            }
        }
        Ok(())
    }
}
