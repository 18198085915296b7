//! A pending job's shape as the plan holds it: slots on each of some
//! nodes of one flavor (a [`Width`]).
//!
//! A job that fixes its node count (`-N k`, the low end of `-N k-m`) is a
//! gang of `k` nodes, each with the GPUs it asked per node (one slot per
//! GPU on a GPU flavor, one slot per node on a CPU flavor). A job that
//! asks `--gpus=N` and leaves its node count to Slurm is planned on the
//! fewest nodes that hold `N` on the widest nodes it may use, with the
//! GPUs spread evenly (rounded up), as Slurm's node selection packs them;
//! the plan does not spread it wider to start it sooner. Its shape is the
//! same on every flavor: a flavor whose nodes are narrower cannot hold
//! it ([`super::estimates`]). A job of `N` shards takes `N` shard slots
//! of one GPU on each of its nodes.

use super::slots::SlotModel;
use super::snapshot::JobInfo;
use crate::model::Width;

/// `job`'s shape on `model`'s flavors.
pub fn width(job: &JobInfo, model: &SlotModel) -> Width {
    let nodes = job.nodes.max(1) as usize;
    if job.shards > 0 {
        // One slot per shard, on one GPU of each node.
        return Width::new(job.shards as usize, nodes).unwrap_or(Width::ONE);
    }
    if job.gpus_per_job == 0 {
        return Width::new(job.gpus.max(1) as usize, nodes).unwrap_or(Width::ONE);
    }
    let widest = (0..model.flavors.len())
        .filter(|&f| {
            model.gpu_flavor[f]
                && job.partitions.contains(&model.partition[f])
                && (job.gpu_type.is_none() || job.gpu_type == model.gpu_type[f])
        })
        .map(|f| model.flavors[f].per_node)
        .max()
        .unwrap_or(0);
    let total = job.gpus_per_job as usize;
    let fewest = if widest == 0 {
        nodes
    } else {
        Width::spread(total, widest).nodes.max(nodes)
    };
    let nodes = job
        .max_nodes
        .map_or(fewest, |max| fewest.min(max.max(1) as usize));
    Width::new(total.div_ceil(nodes), nodes).unwrap_or(Width::ONE)
}

/// Whether `job` asks for GPUs: it may not run on a CPU flavor.
pub fn wants_gpus(job: &JobInfo) -> bool {
    job.gpus > 0 || job.gpus_per_job > 0
}

/// Whether `job`, which no flavor of `model` can hold, would fit across
/// the GPU types of one of its partitions: an untyped gang of more nodes
/// than any one type has, which Slurm may still run (at its slowest
/// node's pace). The plan leaves it to the first-come pass. Counted on
/// the partitions' nodes whatever their state: a gang that one type's
/// nodes hold waits for them while some are completing a job or down,
/// rather than go across types first come first served.
pub fn only_across_types(job: &JobInfo, model: &SlotModel) -> bool {
    if job.gpu_type.is_some() || job.shards > 0 {
        return false;
    }
    let width = width(job, model);
    job.partitions.iter().any(|p| {
        let flavors: Vec<usize> = (0..model.flavors.len())
            .filter(|&f| model.partition[f] == *p && model.gpu_flavor[f])
            .filter(|&f| model.flavors[f].per_node >= width.per_node)
            .collect();
        let one_type_holds = flavors
            .iter()
            .any(|&f| model.configured_nodes[f] >= width.nodes);
        let nodes: usize = flavors.iter().map(|&f| model.flavor_nodes[f].len()).sum();
        flavors.len() > 1 && !one_type_holds && nodes >= width.nodes
    })
}
