//! What the C shim copies out of slurmctld under its locks, as plain Rust
//! values, and what the planner hands back. Times are seconds since the
//! epoch as `f64`.

#[derive(Clone, Debug, PartialEq)]
pub struct NodeInfo {
    pub name: String,
    pub cpus: u32,
    /// The node's configured GRES string, e.g. `gpu:2` or `gpu:a100:4`.
    pub gres: String,
    /// Up and not drained: its slots may be given out.
    pub available: bool,
}

impl NodeInfo {
    /// GPUs in the GRES string (`gpu:N` or `gpu:type:N`, any socket suffix).
    pub fn gpus(&self) -> u32 {
        self.gres
            .split(',')
            .filter_map(|entry| {
                let entry = entry.split('(').next().unwrap_or("");
                let mut parts = entry.split(':');
                (parts.next()? == "gpu").then_some(())?;
                parts.next_back().and_then(|n| n.trim().parse::<u32>().ok())
            })
            .sum()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PartitionInfo {
    pub name: String,
    /// Indices into [`Snapshot::nodes`].
    pub nodes: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobInfo {
    pub job_id: u32,
    pub user: String,
    pub account: String,
    pub name: String,
    pub comment: String,
    /// The job's time limit in seconds, if it has one.
    pub time_limit: Option<f64>,
    /// Partitions the job may run in, in the order given.
    pub partitions: Vec<String>,
    pub cpus: u32,
    pub submit: f64,
    /// For running jobs: where and since when.
    pub running: Option<Placement>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub partition: String,
    pub node: String,
    pub start: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FinishedJob {
    pub user: String,
    pub name: String,
    pub partition: String,
    pub seconds: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub now: f64,
    pub nodes: Vec<NodeInfo>,
    pub partitions: Vec<PartitionInfo>,
    /// Pending jobs the plugin manages, in submit order.
    pub pending: Vec<JobInfo>,
    /// Running jobs on the managed partitions' nodes.
    pub running: Vec<JobInfo>,
    /// Jobs that finished since the previous snapshot.
    pub finished: Vec<FinishedJob>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start now in `partition` on `node`, with `gpus` GPUs.
    Start {
        partition: String,
        node: String,
        gpus: u32,
    },
    /// Stay pending.
    Wait,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub job_id: u32,
    pub action: Action,
    /// Shown to the user as the job's reason while it waits.
    pub reason: String,
    /// Set once per job when its hint had problems or was missing: goes to
    /// the admin comment and the log.
    pub note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_gpus_in_gres_strings() {
        let node = |gres: &str| NodeInfo {
            name: "n".into(),
            cpus: 1,
            gres: gres.into(),
            available: true,
        };
        assert_eq!(node("gpu:2").gpus(), 2);
        assert_eq!(node("gpu:a100:4(S:0-1),nic:1").gpus(), 4);
        assert_eq!(node("gpu:1,gpu:v100:2").gpus(), 3);
        assert_eq!(node("").gpus(), 0);
        assert_eq!(node("mps:100").gpus(), 0);
    }
}
