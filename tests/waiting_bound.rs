//! No job starves: AlloX's waiting-time bound (a tier for overdue jobs)
//! and its preemption in rounds, in the simulator.

use fairmatch::metrics::JobOutcome;
use fairmatch::model::{Cluster, Flavor, Job, Scenario, User, Width, Workload};
use fairmatch::policy::allox::{Allox, Preemption};
use fairmatch::policy::{Policy, PolicyError, Start, View};
use fairmatch::sim::{simulate, EstimateSource, Profiling, SimOptions};

fn options(preempt_overhead: f64) -> SimOptions {
    SimOptions {
        estimates: EstimateSource::Input,
        profile: Profiling::Off,
        job_overhead: 0.0,
        preempt_overhead,
    }
}

/// One flavor of `slots` slots; `jobs` as (user, arrival, run time).
fn scenario(slots: usize, jobs: &[(usize, f64, f64)]) -> Scenario {
    Scenario {
        cluster: Cluster::new(vec![Flavor {
            name: "gpu".into(),
            slots,
            per_node: 1,
        }])
        .unwrap(),
        workload: Workload {
            users: (0..2)
                .map(|u| User::new(format!("u{u}"), 1.0).unwrap())
                .collect(),
            jobs: jobs
                .iter()
                .enumerate()
                .map(|(i, &(user, arrival, t))| Job {
                    name: format!("j{i}"),
                    user,
                    arrival,
                    durations: vec![Some(t)],
                    estimates: vec![None],
                    width: Width::ONE,
                })
                .collect(),
        },
    }
}

fn run(s: &Scenario, policy: &mut dyn Policy, overhead: f64) -> Vec<JobOutcome> {
    simulate(s, policy, &options(overhead), &mut |_| {})
        .unwrap()
        .jobs
}

/// A long job arrives at t = 50 behind a stream of 100 s jobs, four every
/// 100 s for 20,000 s, on four slots: the stream alone fills the cluster,
/// and every stream job is shorter, so a matching that minimises total
/// completion time never starts the long one while the stream lasts.
fn long_job_behind_a_stream() -> Scenario {
    let mut jobs = vec![(0, 50.0, 5_000.0)];
    for k in 0..200 {
        for _ in 0..4 {
            jobs.push((1, k as f64 * 100.0, 100.0));
        }
    }
    scenario(4, &jobs)
}

#[test]
fn an_overdue_job_starts_within_its_bound_plus_one_run() {
    let s = long_job_behind_a_stream();
    let wait = |max_wait: Option<f64>| {
        let mut allox = Allox::new(1.0).unwrap();
        allox.max_wait = max_wait;
        let long = &run(&s, &mut allox, 0.0)[0];
        long.start - long.arrival
    };
    // Overdue at 2,000 s, it holds the first slot that frees, which is
    // at most one stream job (100 s) away.
    let bounded = wait(Some(2_000.0));
    assert!(bounded > 2_000.0 && bounded <= 2_100.0, "waited {bounded}");
    // Without the bound it waits for the stream to end: this can fail.
    let unbounded = wait(None);
    assert!(unbounded >= 19_900.0, "waited {unbounded}");
}

#[test]
fn the_default_bound_is_on_and_seventeen_hours() {
    let allox = Allox::new(1.0).unwrap();
    assert_eq!(allox.max_wait, Some(17.0 * 3600.0));
    assert_eq!(allox.preemption, None);
    assert_eq!(allox.label(), "allox(a=1)");
    let mut off = Allox::new(1.0).unwrap();
    off.max_wait = None;
    assert_eq!(off.label(), "allox(a=1,no-bound)");
}

/// Allox, recording every preemption it asks for with the stopped job's
/// time since its last start.
struct Recorded {
    allox: Allox,
    stopped: Vec<(usize, f64)>,
}

impl Policy for Recorded {
    fn label(&self) -> String {
        self.allox.label()
    }
    fn decide(&mut self, view: &View<'_>) -> Result<Vec<Start>, PolicyError> {
        self.allox.decide(view)
    }
    fn preempt(&mut self, view: &View<'_>) -> Result<Vec<usize>, PolicyError> {
        let stop = self.allox.preempt(view)?;
        for &id in &stop {
            let run = view.running.iter().find(|r| r.id == id).expect("running");
            self.stopped.push((id, view.now - run.started));
        }
        Ok(stop)
    }
    fn wake_at(&self, view: &View<'_>) -> Option<f64> {
        self.allox.wake_at(view)
    }
}

fn preemptive(max_wait: f64, for_gain: bool) -> Recorded {
    let mut allox = Allox::new(1.0).unwrap();
    allox.max_wait = Some(max_wait);
    allox.preemption = Some(Preemption {
        for_gain,
        ..Preemption::default()
    });
    Recorded {
        allox,
        stopped: Vec::new(),
    }
}

#[test]
fn a_preempted_job_resumes_with_its_work_left_and_the_restart_cost() {
    // Two slots busy with 100,000 s jobs from t = 0; a 100 s job arrives
    // at t = 10. It is overdue past 10x its length (1,000 s); rounds
    // start with the first decision, at 0, 360, 720 and 1,080 s, so at
    // 1,080 s a long job (both have run three rounds) gives way. The short
    // job runs 1,080..1,180; the stopped one restarts at 1,180, pays 30 s,
    // and finishes its 98,920 s left.
    let s = scenario(
        2,
        &[(0, 0.0, 100_000.0), (0, 0.0, 100_000.0), (1, 10.0, 100.0)],
    );
    let mut policy = preemptive(1e9, false);
    let out = run(&s, &mut policy, 30.0);
    assert_eq!((out[2].start, out[2].finish), (1_080.0, 1_180.0));
    assert_eq!(policy.stopped.len(), 1);
    let (victim, ran) = policy.stopped[0];
    assert_eq!(ran, 1_080.0);
    assert_eq!(out[victim].preemptions, 1);
    assert_eq!(out[victim].finish, 1_180.0 + 30.0 + 98_920.0);
    assert_eq!(out[victim].longest_wait, 100.0);
    // The other long job was never touched.
    let other = 1 - victim;
    assert_eq!((out[other].preemptions, out[other].finish), (0, 100_000.0));
    // Without preemption the short job waits for a long one to end.
    let mut plain = Allox::new(1.0).unwrap();
    plain.max_wait = Some(1e9);
    assert_eq!(run(&s, &mut plain, 30.0)[2].start, 100_000.0);
}

#[test]
fn no_job_is_preempted_before_its_minimum_run_and_every_job_completes_once() {
    // One slot, overloaded: a long job, then a 50 s job every 200 s for
    // 20,000 s. Short jobs go overdue at 500 s and take the slot from
    // whatever has run a round; the long job keeps progressing a round
    // at a time and finishes.
    let mut jobs = vec![(0, 0.0, 4_000.0)];
    for k in 0..100 {
        jobs.push((1, 100.0 + k as f64 * 200.0, 50.0));
    }
    let s = scenario(1, &jobs);
    let mut policy = preemptive(1e9, true);
    let out = run(&s, &mut policy, 10.0);
    assert_eq!(out.len(), jobs.len());
    assert!(!policy.stopped.is_empty());
    for &(id, ran) in &policy.stopped {
        assert!(ran >= 360.0, "job {id} stopped after {ran} s");
    }
    let total: u32 = out.iter().map(|o| o.preemptions).sum();
    assert_eq!(total as usize, policy.stopped.len());
    // Nothing is lost: from its first start, every job took at least its
    // length plus 10 s per restart.
    for (o, &(_, _, t)) in out.iter().zip(&jobs) {
        assert!(o.finish - o.start >= t + 10.0 * f64::from(o.preemptions) - 1e-6);
    }
    let long = &out[0];
    assert!(long.preemptions > 0, "the long job gave way");
}

#[test]
fn a_short_job_takes_a_long_ones_slot_when_the_total_gains_enough() {
    // One slot, a 10,000 s job from t = 0, a 100 s job at t = 10. At the
    // round at 360 s the short job would finish at 9,740 s; on the slot
    // now it finishes at 460 s and delays the long one 130 s (its run and
    // the 30 s restart): a gain of 9,510 s, over six rounds, and the long
    // job has more than six times the short one's work left. So it is
    // stopped at 360 s and finishes at 460 + 30 + 9,640 s.
    let s = scenario(1, &[(0, 0.0, 10_000.0), (1, 10.0, 100.0)]);
    let mut policy = preemptive(1e9, true);
    let out = run(&s, &mut policy, 30.0);
    assert_eq!(policy.stopped, vec![(0, 360.0)]);
    assert_eq!((out[1].start, out[1].finish), (360.0, 460.0));
    assert_eq!(out[0].finish, 460.0 + 30.0 + 9_640.0);
    // Overdue-only, the short job waits past 10x its length: the round at
    // 1,080 s. A total of JCTs 10,130 + 450 against 10,130 + 1,170.
    let mut overdue_only = preemptive(1e9, false);
    run(&s, &mut overdue_only, 30.0);
    assert_eq!(overdue_only.stopped, vec![(0, 1_080.0)]);
    // A gain alone is not enough: a 2,000 s job behind the same long one
    // would gain 11,640 - 4,030 = 7,610 s at 360 s, but the long job has
    // under six times its work left, then and at every later round (and
    // it is not overdue before 20,000 s). Nothing is stopped.
    let s = scenario(1, &[(0, 0.0, 10_000.0), (1, 10.0, 2_000.0)]);
    let mut policy = preemptive(1e9, true);
    let out = run(&s, &mut policy, 30.0);
    assert!(policy.stopped.is_empty(), "{:?}", policy.stopped);
    assert_eq!(out[1].start, 10_000.0);
}

/// Two flavors of one slot each, `fast` and `slow`; `jobs` as (arrival,
/// run on fast, run on slow), `None` where it may not run.
fn two_flavors(jobs: &[(f64, Option<f64>, Option<f64>)]) -> Scenario {
    let flavor = |name: &str| Flavor {
        name: name.into(),
        slots: 1,
        per_node: 1,
    };
    Scenario {
        cluster: Cluster::new(vec![flavor("fast"), flavor("slow")]).unwrap(),
        workload: Workload {
            users: vec![User::new("u0", 1.0).unwrap()],
            jobs: jobs
                .iter()
                .enumerate()
                .map(|(i, &(arrival, fast, slow))| Job {
                    name: format!("j{i}"),
                    user: 0,
                    arrival,
                    durations: vec![fast, slow],
                    estimates: vec![None, None],
                    width: Width::ONE,
                })
                .collect(),
        },
    }
}

#[test]
fn an_overdue_job_never_takes_a_flavor_where_it_finishes_later_than_by_waiting() {
    // Both slots busy until 600 s; two jobs of 100 s on `fast` (1,000 s on
    // `slow`) arrive at 1 s and are overdue at 600 s. The first takes the
    // tier's one `fast` slot; the second would finish at 1,600 s on the
    // idle `slow` slot and at 800 s behind it on `fast`: it waits.
    let s = two_flavors(&[
        (0.0, Some(600.0), None),
        (0.0, None, Some(600.0)),
        (1.0, Some(100.0), Some(1_000.0)),
        (1.0, Some(100.0), Some(1_000.0)),
    ]);
    let mut allox = Allox::new(1.0).unwrap();
    allox.max_wait = Some(500.0);
    let out = run(&s, &mut allox, 0.0);
    assert_eq!((out[2].start, out[2].finish), (600.0, 700.0));
    assert_eq!((out[3].start, out[3].finish), (700.0, 800.0));
}

#[test]
fn where_the_backlog_outlasts_the_bound_the_matchings_order_stands() {
    // One slot fed twice as fast as it runs: a 10 s job every 5 s, every
    // tenth of them 200 s. A bound of 100 s cannot hold for every job, and
    // a tier serving the oldest first would make the slot first come
    // first served; the bound gives way to the drain time instead.
    let mut jobs = Vec::new();
    for k in 0..200 {
        let t = if k % 10 == 0 { 200.0 } else { 10.0 };
        jobs.push((0, 5.0 * k as f64, t));
    }
    let s = scenario(1, &jobs);
    let mean = |max_wait: Option<f64>| {
        let mut allox = Allox::new(1.0).unwrap();
        allox.max_wait = max_wait;
        let out = run(&s, &mut allox, 0.0);
        out.iter().map(|o| o.finish - o.arrival).sum::<f64>() / out.len() as f64
    };
    let (bounded, free) = (mean(Some(100.0)), mean(None));
    assert!(
        bounded <= 1.05 * free,
        "bound {bounded:.0} s against {free:.0} s without"
    );
}

/// Two nodes of two slots, each slot busy with a `busy` s job from t = 0
/// (jobs 0 to 3), and a gang on both slots of one node, `gang` s, arriving
/// at t = 10 (job 4).
fn busy_nodes_and_a_gang(busy: f64, gang: f64) -> Scenario {
    let mut s = scenario(4, &[(0, 0.0, busy); 4]);
    s.cluster = Cluster::new(vec![Flavor {
        name: "gpu".into(),
        slots: 4,
        per_node: 2,
    }])
    .unwrap();
    s.workload.jobs.push(Job {
        name: "gang".into(),
        user: 1,
        arrival: 10.0,
        durations: vec![Some(gang)],
        estimates: vec![None],
        width: Width {
            per_node: 2,
            nodes: 1,
        },
    });
    s
}

#[test]
fn an_overdue_gang_clears_a_node_all_or_nothing() {
    // Two nodes of two slots, each slot busy with a 100,000 s job from
    // t = 0; a 100 s job on both slots of one node arrives at t = 10. It
    // is overdue past 10x its length (1,000 s); at the round at 1,080 s it
    // stops the two jobs of one node, whole, and starts there.
    let s = busy_nodes_and_a_gang(100_000.0, 100.0);
    let mut policy = preemptive(1e9, false);
    let out = run(&s, &mut policy, 30.0);
    assert_eq!((out[4].start, out[4].finish), (1_080.0, 1_180.0));
    assert_eq!(policy.stopped.len(), 2, "{:?}", policy.stopped);
    let mut stopped: Vec<usize> = policy.stopped.iter().map(|&(id, _)| id).collect();
    stopped.sort_unstable();
    // Both slots of one node: jobs 0 and 1 share a node, as do 2 and 3.
    assert!(stopped == [0, 1] || stopped == [2, 3], "{stopped:?}");
    for (j, o) in out.iter().enumerate().take(4) {
        if stopped.contains(&j) {
            assert_eq!(o.preemptions, 1);
            assert_eq!(o.finish, 1_180.0 + 30.0 + (100_000.0 - 1_080.0));
        } else {
            assert_eq!((o.preemptions, o.finish), (0, 100_000.0));
        }
    }
}

/// A node of two GPUs, each busy with a 100,000 s job from t = 0, beside
/// an idle node of two CPUs; a gang on both slots of a node arrives at
/// t = 10, 100 s on the GPUs and `on_cpus` s on the CPUs.
fn gang_beside_idle_cpus(on_cpus: f64) -> Scenario {
    let mut s = scenario(2, &[(0, 0.0, 100_000.0); 2]);
    let node = |name: &str| Flavor {
        name: name.into(),
        slots: 2,
        per_node: 2,
    };
    s.cluster = Cluster::new(vec![node("gpu"), node("cpu")]).unwrap();
    for job in &mut s.workload.jobs {
        job.durations.push(None);
        job.estimates.push(None);
    }
    s.workload.jobs.push(Job {
        name: "gang".into(),
        user: 1,
        arrival: 10.0,
        durations: vec![Some(100.0), Some(on_cpus)],
        estimates: vec![None, None],
        width: Width {
            per_node: 2,
            nodes: 1,
        },
    });
    s
}

#[test]
fn an_overdue_gang_clears_a_faster_flavor_rather_than_wait_for_it_beside_idle_slow_nodes() {
    // On the CPUs it would finish at 200,010 s, by waiting for the GPUs at
    // 100,100 s: it waits for them. Overdue at 1,010 s (10x its 100 s),
    // and bound to wait past the 20,000 s bound, it clears the GPU node at
    // the round at 1,080 s, though the idle CPUs could hold it: they would
    // not end its wait sooner.
    let mut policy = preemptive(20_000.0, false);
    let out = run(&gang_beside_idle_cpus(200_000.0), &mut policy, 30.0);
    assert_eq!(
        (out[2].flavor, out[2].start, out[2].finish),
        (0, 1_080.0, 1_180.0)
    );
    let mut stopped: Vec<usize> = policy.stopped.iter().map(|&(id, _)| id).collect();
    stopped.sort_unstable();
    assert_eq!(stopped, [0, 1]);
    // Where its wait would end within the bound, the wait for the faster
    // flavor is the plan's choice: nothing is stopped.
    let mut policy = preemptive(200_000.0, false);
    let out = run(&gang_beside_idle_cpus(200_000.0), &mut policy, 30.0);
    assert_eq!((out[2].flavor, out[2].start), (0, 100_000.0));
    assert!(policy.stopped.is_empty(), "{:?}", policy.stopped);
    // Where the idle CPUs end it sooner than waiting would, it runs there
    // at once and stops nothing.
    let mut policy = preemptive(20_000.0, false);
    let out = run(&gang_beside_idle_cpus(50_000.0), &mut policy, 30.0);
    assert_eq!((out[2].flavor, out[2].start), (1, 10.0));
    assert!(policy.stopped.is_empty(), "{:?}", policy.stopped);
}

#[test]
fn a_gang_past_the_bound_holds_a_reservation_whatever_the_backlog() {
    // Two nodes of two slots, busy with four 100 s jobs from t = 0. A gang
    // on both slots of a node, 500 s, arrives at t = 10, and 1,996 more
    // jobs of 100 s at t = 20: 50,000 s of work, far past the 1,000 s
    // bound, and each runs less than the minimum run, so none may be
    // stopped. Shortest first the gang would wait for the whole queue;
    // past the bound (at 1,010 s) it is planned first, and starts when a
    // node next drains, at 1,100 s, with nothing stopped.
    let mut s = busy_nodes_and_a_gang(100.0, 500.0);
    let narrow = s.workload.jobs[0].clone();
    for k in 0..1_996 {
        s.workload.jobs.push(Job {
            name: format!("late{k}"),
            arrival: 20.0,
            ..narrow.clone()
        });
    }
    let mut policy = preemptive(1_000.0, false);
    let out = run(&s, &mut policy, 30.0);
    assert_eq!((out[4].start, out[4].finish), (1_100.0, 1_600.0));
    assert!(policy.stopped.is_empty(), "{:?}", policy.stopped);
    let last = out.iter().map(|o| o.finish).fold(0.0, f64::max);
    assert!(last <= 50_600.0, "the queue ended at {last}");
}

/// One node of two slots running a 10,000 s gang on both from t = 0, and
/// `narrow` jobs of 100 s arriving at t = 10.
fn a_running_gang_and_narrow_jobs(narrow: usize) -> Scenario {
    let mut s = scenario(2, &vec![(1, 10.0, 100.0); narrow]);
    s.cluster = Cluster::new(vec![Flavor {
        name: "gpu".into(),
        slots: 2,
        per_node: 2,
    }])
    .unwrap();
    s.workload.jobs.insert(
        0,
        Job {
            name: "gang".into(),
            user: 0,
            arrival: 0.0,
            durations: vec![Some(10_000.0)],
            estimates: vec![None],
            width: Width {
                per_node: 2,
                nodes: 1,
            },
        },
    );
    s
}

#[test]
fn a_running_gang_gives_way_to_as_many_short_jobs_when_the_total_gains_enough() {
    // At the round at 360 s each 100 s job would finish at 9,740 s, behind
    // the gang; on its slots now both finish at 460 s, and the gang, one
    // job, finishes 130 s later (their run and the 30 s restart): a gain
    // of 2 x 9,640 - 130 s, over six rounds. The gang is stopped once, at
    // 360 s, and restarts when they end.
    let s = a_running_gang_and_narrow_jobs(2);
    let mut policy = preemptive(1e9, true);
    let out = run(&s, &mut policy, 30.0);
    assert_eq!(policy.stopped, vec![(0, 360.0)]);
    for o in &out[1..] {
        assert_eq!((o.start, o.finish), (360.0, 460.0));
    }
    assert_eq!(out[0].preemptions, 1);
    assert_eq!(out[0].finish, 460.0 + 30.0 + 9_640.0);
    // One short job alone would leave a slot of the gang idle: nothing is
    // stopped, and it waits for the gang.
    let s = a_running_gang_and_narrow_jobs(1);
    let mut policy = preemptive(1e9, true);
    let out = run(&s, &mut policy, 30.0);
    assert!(policy.stopped.is_empty(), "{:?}", policy.stopped);
    assert_eq!((out[0].finish, out[1].start), (10_000.0, 10_000.0));
    // Overdue-only, the gang is never stopped for them.
    let s = a_running_gang_and_narrow_jobs(2);
    let mut policy = preemptive(1e9, false);
    let out = run(&s, &mut policy, 30.0);
    assert!(policy.stopped.is_empty(), "{:?}", policy.stopped);
    assert_eq!(out[0].finish, 10_000.0);
}

#[test]
fn a_gang_that_gave_way_is_overdue_at_three_quarters_of_the_bound() {
    // The gang (100,000 s) gives way at 360 s to two of the 1,000 s jobs
    // that arrive two every 1,000 s from t = 10, each shorter than it: the
    // plan, shortest first, would start it again only once the stream
    // ends. Owed its restart, it is overdue 3,000 s after each stop (3/4
    // of the 4,000 s bound), not 4,000 s, and clears its node at the first
    // round where the jobs there are past their minimum run: each wait
    // ends before the bound itself. Overdue at the bound, it waited 5,000 s.
    let mut s = a_running_gang_and_narrow_jobs(0);
    s.workload.jobs[0].durations = vec![Some(100_000.0)];
    let narrow = |arrival: f64| Job {
        name: format!("n{arrival}"),
        user: 1,
        arrival,
        durations: vec![Some(1_000.0)],
        estimates: vec![None],
        width: Width::ONE,
    };
    for k in 0..20 {
        s.workload.jobs.push(narrow(10.0 + 1_000.0 * k as f64));
        s.workload.jobs.push(narrow(10.0 + 1_000.0 * k as f64));
    }
    let bound = 4_000.0;
    let mut policy = preemptive(bound, true);
    let out = run(&s, &mut policy, 30.0);
    assert_eq!(policy.stopped.first(), Some(&(0, 360.0)));
    let gang = &out[0];
    assert!(
        gang.longest_wait > 0.75 * bound && gang.longest_wait < bound,
        "the gang waited {} s at a stretch",
        gang.longest_wait
    );
}
