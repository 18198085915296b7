//! Equal share: a static partition. Each active user (one with a pending
//! or running job) may hold `floor(slots * weight / total weight)` slots of
//! every flavor; the slots the floors leave over go one each to the active
//! users who have been served least so far (ties: lower index). Within its
//! share a user runs its jobs shortest first, each on the fastest flavor
//! where it has share left and a machine is idle. Slots a user's share
//! does not use stay idle: that waste is the point of comparing against it.

use super::drf::slots_in_use;
use super::{
    by_fastest, flavors_by_speed, gang_starts, IdleNodes, Policy, PolicyError, Start, View,
};

/// Equal share; see the module's description.
#[derive(Clone, Debug, Default)]
pub struct EqualShare;

/// `[user][flavor]`: the slots each user may hold.
fn quotas(view: &View<'_>) -> Vec<Vec<usize>> {
    let users = view.user_weights.len();
    let mut active = vec![false; users];
    for j in view.pending {
        active[j.user] = true;
    }
    for j in view.running {
        active[j.user] = true;
    }
    let total: f64 = (0..users)
        .filter(|&u| active[u])
        .map(|u| view.user_weights[u])
        .sum();
    let mut by_service: Vec<usize> = (0..users).filter(|&u| active[u]).collect();
    let served = |u: usize| view.attained.get(u).copied().unwrap_or(0.0);
    by_service.sort_by(|&a, &b| served(a).total_cmp(&served(b)).then(a.cmp(&b)));
    let mut quota = vec![vec![0; view.flavors.len()]; users];
    for (f, flavor) in view.flavors.iter().enumerate() {
        let mut given = 0;
        for &u in &by_service {
            let q = (flavor.slots as f64 * view.user_weights[u] / total).floor() as usize;
            quota[u][f] = q;
            given += q;
        }
        for &u in by_service.iter().take(flavor.slots.saturating_sub(given)) {
            quota[u][f] += 1;
        }
    }
    quota
}

impl Policy for EqualShare {
    fn label(&self) -> String {
        "es".into()
    }

    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        let quota = quotas(view);
        let mut used = slots_in_use(view);
        let mut idle = IdleNodes::new(view);
        let mut starts = Vec::new();
        for job in by_fastest(view.pending, view.flavors) {
            let u = job.user;
            let flavor = flavors_by_speed(job, view.flavors).into_iter().find(|&f| {
                // A job wider than its user's quota may start alone.
                let (w, q) = (job.width.slots(), quota[u][f]);
                let within = used[u][f] + w <= q || (used[u][f] == 0 && q > 0 && w > q);
                within && idle.fits(f, job.width)
            });
            if let Some(f) = flavor {
                let machines = idle.take(f, job.width).expect("checked idle");
                used[u][f] += machines.len();
                starts.extend(gang_starts(job.id, &machines));
            }
        }
        Ok(starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baselines::testing::{pending, two_flavors, view};

    #[test]
    fn each_user_gets_an_equal_part_of_every_flavor() {
        let (flavors, machines) = two_flavors(4, 8);
        // 4 users, 10 jobs each; user 0's jobs are the shortest, so an
        // unfair policy would hand it everything.
        let jobs: Vec<_> = (0..40)
            .map(|i| {
                let u = i % 4;
                let t = 1.0 + u as f64 * 100.0 + i as f64;
                pending(i, u, 0.0, [Some(t), Some(t * 2.0)])
            })
            .collect();
        let starts = EqualShare
            .decide(&view(&flavors, &machines, &jobs, &[]))
            .unwrap();
        for u in 0..4 {
            let on = |f: usize| {
                starts
                    .iter()
                    .filter(|s| s.job % 4 == u && machines[s.machine].flavor == f)
                    .count()
            };
            assert_eq!((on(0), on(1)), (1, 2), "user {u}");
        }
    }

    #[test]
    fn a_lone_user_gets_everything_and_leftovers_go_to_the_least_served() {
        let (flavors, machines) = two_flavors(1, 3);
        let jobs: Vec<_> = (0..6)
            .map(|i| pending(i, 0, 0.0, [Some(1.0), Some(2.0)]))
            .collect();
        let v = view(&flavors, &machines, &jobs, &[]);
        assert_eq!(EqualShare.decide(&v).unwrap().len(), 4);

        // Two users, 1 GPU: user 1 has been served less, so it gets it.
        let jobs = [
            pending(0, 0, 0.0, [Some(1.0), None]),
            pending(1, 1, 0.0, [Some(1.0), None]),
        ];
        let mut v = view(&flavors, &machines, &jobs, &[]);
        v.attained = &[5.0, 1.0];
        assert_eq!(
            EqualShare.decide(&v).unwrap(),
            vec![Start { job: 1, machine: 0 }]
        );
    }
}
