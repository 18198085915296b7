//! The scheduling model: flavors of hardware, users, and jobs whose run time
//! depends on the flavor they run on.
//!
//! Times are seconds, kept as `f64`. A job's time on a flavor it cannot use
//! is `None`; everything downstream treats `None` as "forbidden", never as a
//! large number, so no sentinel value can leak into a sum.

/// A kind of hardware (`cpu`, `gpu-v100`, ...) and how many single-job slots
/// of it the cluster has.
#[derive(Clone, Debug, PartialEq)]
pub struct Flavor {
    pub name: String,
    pub slots: usize,
}

/// A tenant. Fairness compares users, scaled by their weight.
#[derive(Clone, Debug, PartialEq)]
pub struct User {
    pub name: String,
    pub weight: f64,
}

/// A single-slot, non-preemptive job.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The identifier from the input, kept for reports.
    pub name: String,
    /// Index into [`Workload::users`].
    pub user: usize,
    pub arrival: f64,
    /// True run time per flavor, indexed like [`Cluster::flavors`].
    pub durations: Vec<Option<f64>>,
    /// What the scheduler is told, per flavor. `None` where the input gave no
    /// estimate; the simulator then decides what the scheduler sees.
    pub estimates: Vec<Option<f64>>,
}

impl Job {
    /// The flavor this job runs fastest on, by true duration, among flavors
    /// that have slots. Ties go to the lower flavor index.
    pub fn fastest_flavor(&self, cluster: &Cluster) -> Option<(usize, f64)> {
        best_flavor(&self.durations, &cluster.flavors)
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

#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    pub flavors: Vec<Flavor>,
}

impl Cluster {
    pub fn flavor_index(&self, name: &str) -> Option<usize> {
        self.flavors.iter().position(|f| f.name == name)
    }

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

#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub users: Vec<User>,
    pub jobs: Vec<Job>,
}

/// A workload bound to the cluster it runs on. Every job's vectors have one
/// entry per flavor of the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub cluster: Cluster,
    pub workload: Workload,
}
