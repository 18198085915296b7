//! The simulator driving AlloX: with every job at t=0 and exact estimates,
//! alpha 1 must reach the optimal total JCT, which brute force computes
//! independently. Plus the simulator's own rules, and the preemptive
//! baselines' defining behaviour.

use fairmatch::metrics::JobOutcome;
use fairmatch::model::{Cluster, Flavor, Job, Scenario, User, Width, Workload};
use fairmatch::policy::baselines::ftf::Ftf;
use fairmatch::policy::baselines::gavel_maxmin::GavelMaxMin;
use fairmatch::policy::baselines::{fifo::Fifo, srpt::Srpt, tiresias::Tiresias};
use fairmatch::policy::{allox::Allox, Policy};
use fairmatch::sim::{simulate, EstimateSource, Profiling, SimOptions, PROBE_FRACTION};
use fairmatch::solver::oracle::brute;
use fairmatch::solver::{Instance, Machine, SolverKind};
use proptest::prelude::*;

fn scenario(slots: &[usize], jobs: &[(usize, f64, Vec<Option<f64>>)]) -> Scenario {
    let users = jobs.iter().map(|j| j.0).max().map_or(0, |u| u + 1);
    Scenario {
        cluster: Cluster {
            flavors: slots
                .iter()
                .enumerate()
                .map(|(i, &s)| Flavor::new(format!("f{i}"), s))
                .collect(),
        },
        workload: Workload {
            users: (0..users)
                .map(|u| User {
                    name: format!("u{u}"),
                    weight: 1.0,
                })
                .collect(),
            jobs: jobs
                .iter()
                .enumerate()
                .map(|(i, (user, arrival, durations))| Job {
                    name: format!("j{i}"),
                    user: *user,
                    arrival: *arrival,
                    durations: durations.clone(),
                    estimates: vec![None; durations.len()],
                    width: Width::ONE,
                })
                .collect(),
        },
    }
}

fn run(s: &Scenario, policy: &mut dyn Policy, options: &SimOptions) -> Vec<JobOutcome> {
    simulate(s, policy, options, &mut |_| {}).unwrap().jobs
}

const EXACT: SimOptions = SimOptions {
    estimates: EstimateSource::Input,
    profile: Profiling::Off,
    job_overhead: 0.0,
    preempt_overhead: 0.0,
};

fn scenarios() -> impl Strategy<Value = Scenario> {
    (1usize..=3)
        .prop_flat_map(|flavors| {
            (
                prop::collection::vec(0usize..=2, flavors),
                prop::collection::vec(
                    (
                        0usize..3,
                        prop::collection::vec(
                            prop_oneof![1 => Just(None), 4 => (0u32..50).prop_map(|t| Some(t as f64))],
                            flavors,
                        ),
                    ),
                    1..=7,
                ),
            )
        })
        .prop_filter("needs 1..=4 machines", |(slots, _)| {
            (1..=4).contains(&slots.iter().sum::<usize>())
        })
        .prop_map(|(slots, jobs)| {
            let anchor = slots.iter().position(|&s| s > 0).unwrap();
            let jobs: Vec<_> = jobs
                .into_iter()
                .map(|(user, mut d)| {
                    if !d.iter().zip(&slots).any(|(t, &s)| t.is_some() && s > 0) {
                        d[anchor] = Some(5.0);
                    }
                    (user, 0.0, d)
                })
                .collect();
            scenario(&slots, &jobs)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn allox_alpha_1_reaches_the_optimum(s in scenarios()) {
        let machine_flavors = s.cluster.machine_flavors();
        let instance = Instance {
            flavors: s.cluster.flavors.len(),
            machines: machine_flavors.iter().map(|&flavor| Machine { flavor, free_in: 0.0 }).collect(),
            releases: vec![0.0; s.workload.jobs.len()],
            times: s.workload.jobs.iter().flat_map(|j| j.durations.iter().copied()).collect(),
            preferred: Vec::new(),
        };
        let optimum = brute::solve(&instance).unwrap().objective;
        let outcomes = run(&s, &mut Allox::new(1.0).unwrap(), &EXACT);
        let total: f64 = outcomes.iter().map(JobOutcome::jct).sum();
        prop_assert!((total - optimum).abs() < 1e-9, "AlloX total {} vs optimum {}", total, optimum);
        // Sticking to the first plan keeps it optimal: its remainder is
        // optimal for every later re-plan.
        let mut sticky = Allox::new(1.0).unwrap();
        sticky.stickiness = 5.0;
        let total: f64 = run(&s, &mut sticky, &EXACT).iter().map(JobOutcome::jct).sum();
        prop_assert!((total - optimum).abs() < 1e-9, "sticky AlloX total {} vs optimum {}", total, optimum);
        // The class solver keeps its matching between decisions (warm
        // starts and front starts); that must not cost optimality either.
        let mut warm = Allox::new(1.0).unwrap();
        warm.solver = SolverKind::Classes;
        let total: f64 = run(&s, &mut warm, &EXACT).iter().map(JobOutcome::jct).sum();
        prop_assert!((total - optimum).abs() < 1e-9, "warm AlloX total {} vs optimum {}", total, optimum);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// With staggered arrivals, the warm plan is checked against a cold
    /// solve after every update (a debug assertion in `warm_plan`, which
    /// `cargo test` builds in), and every job completes.
    #[test]
    fn allox_with_a_warm_plan_matches_cold_solves(s in scenarios(), gaps in prop::collection::vec(0u32..40, 7)) {
        let mut s = s;
        let mut t = 0.0;
        for (job, gap) in s.workload.jobs.iter_mut().zip(gaps) {
            t += f64::from(gap);
            job.arrival = t;
        }
        let mut warm = Allox::new(1.0).unwrap();
        warm.solver = SolverKind::Classes;
        let outcomes = run(&s, &mut warm, &EXACT);
        prop_assert_eq!(outcomes.len(), s.workload.jobs.len());
    }
}

#[test]
fn fifo_runs_in_arrival_order_on_the_fastest_idle_flavor() {
    let s = scenario(
        &[1, 1],
        &[
            (0, 0.0, vec![Some(10.0), Some(30.0)]),
            (0, 1.0, vec![Some(10.0), Some(30.0)]),
            (0, 2.0, vec![Some(10.0), None]),
        ],
    );
    let o = run(&s, &mut Fifo, &EXACT);
    assert_eq!((o[0].flavor, o[0].start), (0, 0.0));
    // The GPU-like flavor 0 is busy at t=1, so job 1 takes flavor 1.
    assert_eq!((o[1].flavor, o[1].start, o[1].finish), (1, 1.0, 31.0));
    assert_eq!((o[2].flavor, o[2].start), (0, 10.0));
}

#[test]
fn profiling_probes_delay_the_job_and_occupy_slots() {
    let s = scenario(&[1, 1], &[(0, 0.0, vec![Some(100.0), Some(200.0)])]);
    let options = SimOptions {
        estimates: EstimateSource::RelativeError {
            sigma: 0.0,
            seed: 1,
        },
        profile: Profiling::Fairmatch,
        job_overhead: 0.0,
        preempt_overhead: 0.0,
    };
    let out = simulate(&s, &mut Allox::new(1.0).unwrap(), &options, &mut |_| {}).unwrap();
    let job = &out.jobs[0];
    // Probes of 3% run on both flavors in parallel; the longer one gates.
    assert!((job.start - 200.0 * PROBE_FRACTION).abs() < 1e-9, "{job:?}");
    assert_eq!(job.flavor, 0);
    assert!((out.busy[1] - 6.0).abs() < 1e-9 && (out.busy[0] - 103.0).abs() < 1e-9);
}

#[test]
fn allox_profiling_runs_four_probes_of_a_time_unit_at_least_and_waits_for_the_group() {
    let s = scenario(
        &[1, 1],
        &[
            (0, 0.0, vec![Some(100.0), Some(200.0)]),
            (1, 0.0, vec![Some(1000.0), Some(2000.0)]),
        ],
    );
    let options = SimOptions {
        estimates: EstimateSource::Input,
        profile: Profiling::Allox { min_probe: 5.0 },
        job_overhead: 0.0,
        preempt_overhead: 0.0,
    };
    let out = simulate(&s, &mut Allox::new(1.0).unwrap(), &options, &mut |_| {}).unwrap();
    // Flavor 0 probes: 1 -> 5, 2 -> 5, 10, 20 (40 s); flavor 1: 5, 5, 20,
    // 40 (70 s). Both jobs wait for the group's last probe.
    assert_eq!(
        out.jobs.iter().map(|j| j.start).fold(f64::MAX, f64::min),
        70.0
    );
    assert!(out.jobs.iter().all(|j| j.start >= 70.0), "{:?}", out.jobs);
    assert_eq!(
        out.busy[1]
            - out
                .jobs
                .iter()
                .filter(|j| j.flavor == 1)
                .map(|j| j.run())
                .sum::<f64>(),
        70.0
    );
    // Ours: one probe per flavor and no group wait. Job 0 is schedulable
    // after its own probes (3 s and 6 s) and takes flavor 0 when job 1's
    // 30 s probe ends there, not after job 1's 60 s probe on flavor 1.
    let options = SimOptions {
        profile: Profiling::Fairmatch,
        ..options
    };
    let out = simulate(&s, &mut Allox::new(1.0).unwrap(), &options, &mut |_| {}).unwrap();
    assert_eq!((out.jobs[0].start, out.jobs[0].flavor), (33.0, 0));
}

#[test]
fn profiling_keeps_the_input_estimates() {
    // The input says flavor 1 is faster; the truth says flavor 0. Probes
    // cost time but the scheduler still decides on the input's estimates.
    let mut s = scenario(&[1, 1], &[(0, 0.0, vec![Some(10.0), Some(50.0)])]);
    s.workload.jobs[0].estimates = vec![Some(100.0), Some(20.0)];
    let options = SimOptions {
        estimates: EstimateSource::Input,
        profile: Profiling::Fairmatch,
        job_overhead: 0.0,
        preempt_overhead: 0.0,
    };
    let o = run(&s, &mut Allox::new(1.0).unwrap(), &options);
    assert_eq!(o[0].flavor, 1);
    assert!((o[0].start - 50.0 * PROBE_FRACTION).abs() < 1e-9);
}

#[test]
fn wrong_estimates_change_decisions_not_true_run_times() {
    // Estimates say flavor 1 is faster; in truth flavor 0 is.
    let mut s = scenario(&[1, 1], &[(0, 0.0, vec![Some(10.0), Some(50.0)])]);
    s.workload.jobs[0].estimates = vec![Some(100.0), Some(20.0)];
    let o = run(&s, &mut Allox::new(1.0).unwrap(), &EXACT);
    assert_eq!(o[0].flavor, 1);
    assert_eq!(o[0].run(), 50.0);
}

#[test]
fn small_alpha_serves_the_least_served_user_first() {
    // Two slots, both taken at t=0 by user 0. At t=10 one frees while user
    // 0 still runs a long job, so user 0 scores above user 1. With alpha
    // small only user 1 is eligible, although user 0's queued job is
    // shorter and pure performance starts it first.
    let s = scenario(
        &[2],
        &[
            (0, 0.0, vec![Some(100.0)]),
            (0, 0.0, vec![Some(10.0)]),
            (0, 1.0, vec![Some(1.0)]),
            (1, 1.0, vec![Some(5.0)]),
        ],
    );
    let fair = run(&s, &mut Allox::new(0.1).unwrap(), &EXACT);
    assert_eq!(fair[3].start, 10.0, "{fair:?}");
    assert!(fair[3].start < fair[2].start, "{fair:?}");
    let fast = run(&s, &mut Allox::new(1.0).unwrap(), &EXACT);
    assert_eq!(fast[2].start, 10.0, "{fast:?}");
    assert!(fast[2].start < fast[3].start, "{fast:?}");
}

#[test]
fn identical_jobs_run_in_arrival_order() {
    let jobs: Vec<_> = (0..4)
        .map(|i| (0, f64::from(i), vec![Some(10.0)]))
        .collect();
    let s = scenario(&[1], &jobs);
    let o = run(&s, &mut Allox::new(1.0).unwrap(), &EXACT);
    let starts: Vec<f64> = o.iter().map(|j| j.start).collect();
    assert_eq!(starts, vec![0.0, 10.0, 20.0, 30.0]);
}

#[test]
fn ties_in_the_instant_score_go_to_the_least_served_user() {
    // Two slots; alice's jobs all end together, so at each wave nobody
    // runs and both users score 0. Attained service breaks the tie: bob,
    // who has had nothing, gets a slot in the first wave after he arrives.
    let mut jobs: Vec<_> = (0..6).map(|_| (0, 0.0, vec![Some(10.0)])).collect();
    jobs.push((1, 1.0, vec![Some(10.0)]));
    let s = scenario(&[2], &jobs);
    let o = run(&s, &mut Allox::new(0.1).unwrap(), &EXACT);
    assert_eq!(o[6].start, 10.0, "{o:?}");
}

#[test]
fn job_overhead_holds_the_slot_longer() {
    let s = scenario(
        &[1],
        &[(0, 0.0, vec![Some(10.0)]), (0, 0.0, vec![Some(10.0)])],
    );
    let options = SimOptions {
        job_overhead: 0.5,
        preempt_overhead: 0.0,
        ..EXACT
    };
    let o = run(&s, &mut Fifo, &options);
    assert_eq!((o[0].finish, o[1].start, o[1].finish), (10.5, 10.5, 21.0));
}

#[test]
fn scenarios_outside_the_model_bounds_are_errors() {
    use fairmatch::sim::SimError;
    let s = scenario(&[1], &[(0, 0.0, vec![Some(10.0)])]);
    let mut bad = s.clone();
    bad.workload.jobs[0].arrival = 1e17;
    let mut zero_weight = s.clone();
    zero_weight.workload.users[0].weight = 0.0;
    let mut huge = s.clone();
    huge.cluster.flavors[0].slots = usize::MAX;
    let mut short = s.clone();
    short.workload.jobs[0].durations.clear();
    for case in [bad, zero_weight, huge, short] {
        let e = simulate(&case, &mut Fifo, &EXACT, &mut |_| {}).unwrap_err();
        assert!(matches!(e, SimError::Invalid(_)), "{e}");
    }
    // Every time within bounds, but 101 serial jobs of 1e10 s run the
    // clock past where seconds keep their precision: an error, not a
    // silently rounded report.
    let serial: Vec<(usize, f64, Vec<Option<f64>>)> =
        (0..101).map(|_| (0, 0.0, vec![Some(1e10)])).collect();
    let e = simulate(&scenario(&[1], &serial), &mut Fifo, &EXACT, &mut |_| {}).unwrap_err();
    assert!(matches!(e, SimError::ClockOverflow { .. }), "{e}");
}

#[test]
fn srpt_preempts_a_long_job_for_a_short_one_which_keeps_its_work() {
    // One slot. A 1000 s job starts at 0; a 100 s job arrives at 10.
    let s = scenario(
        &[1],
        &[(0, 0.0, vec![Some(1000.0)]), (1, 10.0, vec![Some(100.0)])],
    );
    let o = run(&s, &mut Srpt, &EXACT);
    assert_eq!((o[1].start, o[1].finish), (10.0, 110.0));
    // The long job ran 10 s, waited 100 s, then ran its last 990 s.
    assert_eq!((o[0].start, o[0].finish), (0.0, 1100.0));
    // FIFO would have kept it: the short job ends at 1100 instead.
    let f = run(&s, &mut Fifo, &EXACT);
    assert_eq!((f[0].finish, f[1].finish), (1000.0, 1100.0));
}

#[test]
fn srpt_leaves_a_job_with_less_left_running() {
    // At t=950 the first job has 50 s left: the 100 s arrival waits.
    let s = scenario(
        &[1],
        &[(0, 0.0, vec![Some(1000.0)]), (1, 950.0, vec![Some(100.0)])],
    );
    let o = run(&s, &mut Srpt, &EXACT);
    assert_eq!(
        (o[0].finish, o[1].start, o[1].finish),
        (1000.0, 1000.0, 1100.0)
    );
}

#[test]
fn tiresias_demotes_a_job_that_crosses_a_threshold() {
    // One slot, one threshold at 50 s of service. The 1000 s job is still
    // in the first queue when the 40 s job arrives at 10, so first come
    // first served keeps it running; at 50 s of service it drops a queue,
    // and the waiting job, in the first queue, preempts it.
    let s = scenario(
        &[1],
        &[(0, 0.0, vec![Some(1000.0)]), (1, 10.0, vec![Some(40.0)])],
    );
    let o = run(&s, &mut Tiresias::new(vec![50.0]), &EXACT);
    assert_eq!((o[1].start, o[1].finish), (50.0, 90.0));
    assert_eq!((o[0].start, o[0].finish), (0.0, 1040.0));
    // With the threshold out of reach it never preempts.
    let o = run(&s, &mut Tiresias::new(vec![5000.0]), &EXACT);
    assert_eq!((o[0].finish, o[1].start), (1000.0, 1000.0));
}

#[test]
fn tiresias_runs_jobs_of_one_queue_first_come_first_served() {
    // The 100 s job also crosses 50 s of service, at t=100: both are then
    // in the second queue, and the earlier arrival runs again.
    let s = scenario(
        &[1],
        &[(0, 0.0, vec![Some(1000.0)]), (1, 10.0, vec![Some(100.0)])],
    );
    let o = run(&s, &mut Tiresias::new(vec![50.0]), &EXACT);
    assert_eq!(
        (o[0].finish, o[1].start, o[1].finish),
        (1050.0, 50.0, 1100.0)
    );
}

#[test]
fn preemptive_policies_finish_every_job_with_its_whole_work_done() {
    // Staggered arrivals on 2 + 1 slots: each job's time from first start
    // to finish covers at least its run on the flavor it ended on, and the
    // busy time adds up to exactly the work done.
    let jobs: Vec<(usize, f64, Vec<Option<f64>>)> = (0..30)
        .map(|i| {
            let t = 10.0 + (i * 37 % 200) as f64;
            (i % 3, (i * 13 % 90) as f64, vec![Some(t), Some(t * 3.0)])
        })
        .collect();
    let s = scenario(&[2, 1], &jobs);
    for policy in [
        &mut Srpt as &mut dyn Policy,
        &mut Tiresias::new(vec![40.0, 400.0]),
    ] {
        let out = simulate(&s, policy, &EXACT, &mut |_| {}).unwrap();
        for (o, (_, arrival, d)) in out.jobs.iter().zip(&jobs) {
            assert!(o.start >= *arrival);
            assert!(o.finish - o.start >= d[0].unwrap() - 1e-9, "{o:?}");
        }
        // Every job's work is done on some mix of flavors: the busy time
        // lies between all-fast and all-slow.
        let busy: f64 = out.busy.iter().sum();
        let fast: f64 = jobs.iter().map(|j| j.2[0].unwrap()).sum();
        assert!(
            busy >= fast - 1e-6 && busy <= 3.0 * fast + 1e-6,
            "{busy} vs {fast}"
        );
    }
}

#[test]
fn gavel_maxmin_shares_slots_by_rounds() {
    // Three identical 720 s jobs on two slots, 360 s rounds. The LP gives
    // each 2/3 of a slot, so the third job starts after one round, not
    // after two as under FIFO, and no slot idles: all done by 1080 s.
    let s = scenario(&[2], &vec![(0, 0.0, vec![Some(720.0)]); 3]);
    let o = run(&s, &mut GavelMaxMin::new(360.0), &EXACT);
    let mut starts: Vec<f64> = o.iter().map(|j| j.start).collect();
    starts.sort_by(f64::total_cmp);
    assert_eq!(starts, vec![0.0, 0.0, 360.0]);
    let makespan = o.iter().map(|j| j.finish).fold(0.0, f64::max);
    assert_eq!(makespan, 1080.0);
    let f = run(&s, &mut Fifo, &EXACT);
    assert_eq!(f.iter().map(|j| j.start).fold(0.0, f64::max), 720.0);
}

#[test]
fn gavel_maxmin_puts_each_job_where_it_is_relatively_fastest() {
    // A is 4x faster on flavor 0, B 2x faster on flavor 1: the LP gives A
    // flavor 0 and B flavor 1, round after round.
    let s = scenario(
        &[1, 1],
        &[
            (0, 0.0, vec![Some(1000.0), Some(4000.0)]),
            (1, 0.0, vec![Some(2000.0), Some(1000.0)]),
        ],
    );
    let o = run(&s, &mut GavelMaxMin::new(360.0), &EXACT);
    assert_eq!((o[0].flavor, o[0].finish), (0, 1000.0));
    assert_eq!((o[1].flavor, o[1].finish), (1, 1000.0));
}

#[test]
fn ftf_lowers_the_worst_rho_compared_with_fifo() {
    // One slot. A 1000 s job starts at 0; a 10 s job of another user
    // arrives at 1. Its isolated time is 20 s (half the slot), so behind
    // the long job, as under FIFO, its rho is (1010 - 1) / 20 = 50.45. FTF
    // gives it the slot at the next round, 360 s.
    let s = scenario(
        &[1],
        &[(0, 0.0, vec![Some(1000.0)]), (1, 1.0, vec![Some(10.0)])],
    );
    let rho_max =
        |o: &[JobOutcome]| fairmatch::metrics::compute(o, &[1010.0], &[1], 2, 1e9).rho_max;
    let fifo = run(&s, &mut Fifo, &EXACT);
    let ftf = run(&s, &mut Ftf::new(360.0), &EXACT);
    assert!((rho_max(&fifo) - 50.45).abs() < 1e-9, "{}", rho_max(&fifo));
    assert_eq!((ftf[1].start, ftf[1].finish), (360.0, 370.0));
    assert!(rho_max(&ftf) < 20.0, "{}", rho_max(&ftf));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// The preemptive and round-based policies finish every job, with zero
    /// lengths, forbidden flavors, staggered arrivals and noisy estimates
    /// (jobs that overrun theirs): no LP failure, no stall.
    #[test]
    fn preemptive_policies_finish_every_job_on_random_inputs(
        s in scenarios(),
        gaps in prop::collection::vec(0u32..40, 7),
        seed in 0u64..1000,
    ) {
        let mut s = s;
        for (j, g) in s.workload.jobs.iter_mut().zip(&gaps) {
            j.arrival = f64::from(*g);
        }
        let noisy = SimOptions {
            estimates: EstimateSource::RelativeError { sigma: 0.6, seed },
            ..EXACT
        };
        let policies: [Box<dyn Policy>; 4] = [
            Box::new(Srpt),
            Box::new(Tiresias::new(vec![10.0, 30.0])),
            Box::new(GavelMaxMin::new(7.0)),
            Box::new(Ftf::new(7.0)),
        ];
        for mut p in policies {
            for options in [&EXACT, &noisy] {
                let out = simulate(&s, p.as_mut(), options, &mut |_| {});
                prop_assert!(out.is_ok(), "{}: {:?}", p.label(), out.err());
            }
        }
    }
}
