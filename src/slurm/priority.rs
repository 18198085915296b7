//! The site's priority as strict classes of the plan (see
//! [`crate::policy::priority_classes`]): what Slurm's admins use to say
//! "this goes first" orders the classes, and AlloX's matching and fairness
//! order the jobs within one.
//!
//! A pending job's class compares, in this order:
//! 1. the highest `PriorityTier` of the partitions it may start in, as every
//!    Slurm scheduler weighs partitions before jobs;
//! 2. its QOS's `Priority` (`sacctmgr show qos format=name,priority`);
//! 3. an admin's priority: a job whose priority an operator set
//!    (`scontrol update Priority=N`) goes ahead of every job whose
//!    priority Slurm computes when `N` is above all of theirs, highest `N`
//!    first, and behind them all when `N` is below all of theirs; between
//!    the two it stays with them. That is where `squeue --priority`
//!    shows it: among the managed jobs it is first (or last) by
//!    priority, as it would start under `sched/backfill`.
//!
//! Within a class Slurm's computed priority does not order jobs: the age,
//! fair-share and size factors of `priority/multifactor` are what AlloX's
//! waiting-time bound and fairness do, with the speeds of the flavors in
//! view. `--nice` and `scontrol top` move a job within those factors only
//! (top lowers the nice of the user's other jobs), so they do not change
//! its class. A held job (priority 0) is not pending to the plan; released,
//! it is back in its class. `PriorityTiers=` in fairmatch.conf chooses which
//! of the three sources make classes.

use super::snapshot::{JobInfo, Snapshot};
use std::collections::HashMap;

/// Which sources of Slurm's priority make classes (`PriorityTiers=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrioritySources {
    /// Partition `PriorityTier`.
    pub partition: bool,
    /// QOS `Priority`.
    pub qos: bool,
    /// A priority an operator set.
    pub admin: bool,
}

impl PrioritySources {
    /// Every source: the default.
    pub const ALL: PrioritySources = PrioritySources {
        partition: true,
        qos: true,
        admin: true,
    };
    /// None: every job in one class.
    pub const NONE: PrioritySources = PrioritySources {
        partition: false,
        qos: false,
        admin: false,
    };
}

impl Default for PrioritySources {
    fn default() -> Self {
        PrioritySources::ALL
    }
}

/// Where an admin's priority puts a job against the computed ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum AdminPlace {
    Behind(u32),
    Among,
    Ahead(u32),
}

/// The class key of a job: compared as a tuple, higher first.
type Key = (u32, u32, AdminPlace);

/// Per pending record of `snap`, its class: equal keys share a class, and
/// a higher class goes first. Classes are numbered densely from 0.
pub fn classes(snap: &Snapshot, sources: PrioritySources) -> Vec<u32> {
    let tiers: HashMap<&str, u32> = snap
        .partitions
        .iter()
        .map(|p| (p.name.as_str(), p.limits.priority_tier))
        .collect();
    let computed = snap
        .pending
        .iter()
        .filter(|j| !j.priority.set_by_admin)
        .map(|j| j.priority.value);
    let band = computed.fold(None, |band: Option<(u32, u32)>, v| {
        Some(band.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
    });
    let keys: Vec<Key> = snap
        .pending
        .iter()
        .map(|job| key(job, &tiers, band, sources))
        .collect();
    let mut distinct = keys.clone();
    distinct.sort_unstable();
    distinct.dedup();
    keys.iter()
        .map(|k| distinct.binary_search(k).expect("listed") as u32)
        .collect()
}

fn key(
    job: &JobInfo,
    tiers: &HashMap<&str, u32>,
    band: Option<(u32, u32)>,
    sources: PrioritySources,
) -> Key {
    let tier = if sources.partition {
        job.partitions
            .iter()
            .filter_map(|p| tiers.get(p.as_str()).copied())
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    let qos = if sources.qos { job.priority.qos } else { 0 };
    let admin = if sources.admin && job.priority.set_by_admin {
        let v = job.priority.value;
        match band {
            None => AdminPlace::Ahead(v),
            Some((_, hi)) if v > hi => AdminPlace::Ahead(v),
            Some((lo, _)) if v < lo => AdminPlace::Behind(v),
            Some(_) => AdminPlace::Among,
        }
    } else {
        AdminPlace::Among
    };
    (tier, qos, admin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::snapshot::{JobPriority, PartitionInfo};

    fn job(id: u32, value: u32, set_by_admin: bool, qos: u32, parts: &[&str]) -> JobInfo {
        let mut j = JobInfo::pending(id, "u", "", parts);
        j.priority = JobPriority {
            value,
            set_by_admin,
            qos,
        };
        j
    }

    fn snap(pending: Vec<JobInfo>) -> Snapshot {
        let mut low = PartitionInfo::new("low", vec![0]);
        low.limits.priority_tier = 1;
        let mut high = PartitionInfo::new("high", vec![0]);
        high.limits.priority_tier = 5;
        Snapshot {
            now: 0.0,
            nodes: Vec::new(),
            partitions: vec![low, high],
            pending,
            running: Vec::new(),
            finished: Vec::new(),
        }
    }

    #[test]
    fn computed_priority_alone_makes_one_class() {
        let s = snap(vec![
            job(1, 100, false, 0, &["low"]),
            job(2, 900, false, 0, &["low"]),
        ]);
        assert_eq!(classes(&s, PrioritySources::ALL), vec![0, 0]);
    }

    #[test]
    fn an_admin_priority_above_the_band_goes_first_below_it_last() {
        let s = snap(vec![
            job(1, 100, false, 0, &["low"]),
            job(2, 900, false, 0, &["low"]),
            job(3, 5000, true, 0, &["low"]),
            job(4, 7000, true, 0, &["low"]),
            job(5, 500, true, 0, &["low"]),
            job(6, 10, true, 0, &["low"]),
        ]);
        let c = classes(&s, PrioritySources::ALL);
        assert_eq!(c, vec![1, 1, 2, 3, 1, 0]);
        let none = classes(&s, PrioritySources::NONE);
        assert!(none.iter().all(|&c| c == 0));
    }

    #[test]
    fn partition_tier_outranks_qos_which_outranks_an_admin_priority() {
        let s = snap(vec![
            job(1, 100, true, 0, &["low"]),
            job(2, 1, false, 50, &["low"]),
            job(3, 1, false, 0, &["high"]),
            job(4, 1, false, 0, &["low", "high"]),
            job(5, 1, false, 0, &["low"]),
        ]);
        let c = classes(&s, PrioritySources::ALL);
        assert!(c[2] > c[1] && c[1] > c[0] && c[0] > c[4], "{c:?}");
        assert_eq!(c[2], c[3], "a job's best partition counts");
        let qos_only = PrioritySources {
            partition: false,
            admin: false,
            ..PrioritySources::ALL
        };
        let c = classes(&s, qos_only);
        assert_eq!(c, vec![0, 1, 0, 0, 0]);
    }
}
