//! Jobs of any width: AlloX's plan beside the exact optimum, every policy
//! running gangs in the simulator, and no wide job starving behind a
//! stream of narrow ones.

use fairmatch::metrics::JobOutcome;
use fairmatch::model::{Cluster, Flavor, Job, Scenario, User, Width, Workload};
use fairmatch::policy::allox::Allox;
use fairmatch::policy::baselines::{
    drf::Drf, drfa::Drfa, equal_share::EqualShare, fifo::Fifo, ftf::Ftf, gavel_maxmin::GavelMaxMin,
    jsq::Jsq, sjf::Sjf, slurm_backfill::SlurmBackfill, srpt::Srpt, tiresias::Tiresias,
};
use fairmatch::policy::gang_plan;
use fairmatch::policy::gang_plan::oracle as gangs;
use fairmatch::policy::Policy;
use fairmatch::sim::{simulate, EstimateSource, Profiling, SimOptions};

fn options() -> SimOptions {
    SimOptions {
        estimates: EstimateSource::Input,
        profile: Profiling::Off,
        job_overhead: 0.0,
        preempt_overhead: 0.0,
    }
}

/// Two GPU types of two 4-GPU nodes each; `jobs` as (user, arrival,
/// times per type, slots per node, nodes).
fn scenario(jobs: &[(usize, f64, [f64; 2], usize, usize)]) -> Scenario {
    Scenario {
        cluster: Cluster::new(vec![
            Flavor {
                name: "a100".into(),
                slots: 8,
                per_node: 4,
            },
            Flavor {
                name: "v100".into(),
                slots: 8,
                per_node: 4,
            },
        ])
        .unwrap(),
        workload: Workload {
            users: (0..3)
                .map(|u| User::new(format!("u{u}"), 1.0).unwrap())
                .collect(),
            jobs: jobs
                .iter()
                .enumerate()
                .map(|(i, &(user, arrival, t, per_node, nodes))| Job {
                    name: format!("j{i}"),
                    user,
                    arrival,
                    durations: t.iter().map(|&t| Some(t)).collect(),
                    estimates: vec![None, None],
                    width: Width::new(per_node, nodes).unwrap(),
                })
                .collect(),
        },
    }
}

fn run(s: &Scenario, policy: &mut dyn Policy) -> Vec<JobOutcome> {
    simulate(s, policy, &options(), &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", policy.label()))
        .jobs
}

fn mean_jct(out: &[JobOutcome]) -> f64 {
    out.iter().map(|o| o.finish - o.arrival).sum::<f64>() / out.len() as f64
}

/// Mixed widths, some jobs 3x faster on the a100s, all at t = 0.
fn mixed() -> Scenario {
    let mut jobs = Vec::new();
    for i in 0..24 {
        let base = [300.0, 600.0, 1200.0, 2400.0][i % 4];
        let slow = if i % 3 == 0 { 3.0 } else { 1.1 };
        let (per_node, nodes) = [(1, 1), (1, 1), (2, 1), (4, 1), (2, 2)][i % 5];
        jobs.push((i % 3, 0.0, [base, base * slow], per_node, nodes));
    }
    scenario(&jobs)
}

#[test]
fn the_plan_is_never_below_the_exact_optimum_and_exact_when_every_job_is_narrow() {
    for seed in 0..60 {
        for narrow in [false, true] {
            let (nodes, jobs) = gangs::random_instance(seed, 5, narrow);
            let flavors = nodes.iter().map(|n| n.flavor + 1).max().unwrap();
            let plan = gang_plan::planned_total(&nodes, flavors, &jobs).unwrap();
            let best = gangs::exact(&nodes, &jobs, plan).unwrap();
            assert!(plan >= best * (1.0 - 1e-9), "seed {seed}: {plan} < {best}");
            if narrow {
                assert!(
                    (plan - best).abs() <= 1e-9 * best,
                    "seed {seed}: {plan} != {best}"
                );
            }
        }
    }
}

#[test]
fn every_policy_runs_every_gang_once_on_its_width() {
    let s = mixed();
    let policies: Vec<Box<dyn Policy>> = vec![
        Box::new(Allox::new(1.0).unwrap()),
        Box::new(Allox::new(0.5).unwrap()),
        Box::new(Fifo),
        Box::new(Jsq),
        Box::new(Sjf),
        Box::new(Drf::fifo()),
        Box::new(Drfa),
        Box::new(EqualShare),
        Box::new(Srpt),
        Box::new(Tiresias::default()),
        Box::new(GavelMaxMin::default()),
        Box::new(Ftf::default()),
        Box::new(SlurmBackfill::easy()),
        Box::new(SlurmBackfill::conservative()),
    ];
    for mut p in policies {
        let out = run(&s, p.as_mut());
        assert_eq!(out.len(), 24, "{}", p.label());
        // The simulator refuses any start off a job's width; every job
        // ends once, after at least its fastest time (a job Gavel's rounds
        // move between types may run part of its work on each).
        for (o, job) in out.iter().zip(&s.workload.jobs) {
            let fastest = job.fastest_flavor(&s.cluster).unwrap().1;
            assert!(
                o.finish - o.start >= fastest - 1e-9,
                "{}: {}",
                p.label(),
                job.name
            );
        }
    }
}

#[test]
fn allox_beats_first_come_first_served_on_mixed_widths() {
    let s = mixed();
    let allox = mean_jct(&run(&s, &mut Allox::new(1.0).unwrap()));
    let fifo = mean_jct(&run(&s, &mut Fifo));
    assert!(allox < 0.8 * fifo, "allox {allox} vs fifo {fifo}");
}

#[test]
fn a_wide_job_does_not_starve_behind_a_stream_of_narrow_ones() {
    // One 4-wide job of 1,000 s arrives at t = 150, every slot busy, behind
    // a stream of 1-wide 300 s jobs, eight every 150 s for 30,000 s: as much
    // narrow work as the 16 slots hold, so some narrow job always waits,
    // and each is smaller in area than the wide one: shortest-area-first
    // alone would never start it. The waiting bound bounds its wait: past
    // 4,000 s it goes first and reserves whole nodes, which free within
    // one narrow job's length.
    let mut jobs = vec![(0, 150.0, [1000.0, 1000.0], 4, 1)];
    for k in 0..200 {
        for i in 0..8 {
            jobs.push((1 + i % 2, k as f64 * 150.0, [300.0, 300.0], 1, 1));
        }
    }
    let s = scenario(&jobs);
    let wait = |bound: Option<f64>| {
        let mut allox = Allox::new(1.0).unwrap();
        allox.max_wait = bound;
        let wide = &run(&s, &mut allox)[0];
        wide.start - wide.arrival
    };
    let bounded = wait(Some(4000.0));
    assert!(bounded <= 4000.0 + 300.0 + 100.0, "waited {bounded}");
    // Without a bound it waits for the stream to end: the test can fail.
    let unbounded = wait(None);
    assert!(unbounded > 29_000.0, "waited {unbounded}");
}

#[test]
fn a_narrow_job_keeps_its_bound_while_a_gang_waits() {
    // Seventeen 300 s jobs every 300 s on 16 slots, a little more than the
    // cluster runs, so some narrow job always waits; a 2,000 s narrow job
    // at t = 1,000 and a 4-wide one of 1,000 s at t = 3,000. While the
    // wide one waits the gang plan decides for both, with the narrow
    // path's bound: the narrow job goes first past 4,000 s, not past a
    // multiple of its own run (four times it would be 8,000 s), and the
    // wide one next.
    let mut jobs = vec![
        (0, 1000.0, [2000.0, 2000.0], 1, 1),
        (0, 3000.0, [1000.0, 1000.0], 4, 1),
    ];
    for k in 0..100 {
        for i in 0..17 {
            jobs.push((1 + i % 2, k as f64 * 300.0, [300.0, 300.0], 1, 1));
        }
    }
    let s = scenario(&jobs);
    let mut allox = Allox::new(1.0).unwrap();
    allox.max_wait = Some(4000.0);
    let out = run(&s, &mut allox);
    let (narrow, wide) = (&out[0], &out[1]);
    let narrow_wait = narrow.start - narrow.arrival;
    let wide_wait = wide.start - wide.arrival;
    // Each starts within its bound and a run of what holds its slots.
    assert!(narrow_wait <= 4000.0 + 300.0, "narrow waited {narrow_wait}");
    assert!(wide_wait <= 4000.0 + 2000.0, "wide waited {wide_wait}");
}

#[test]
fn a_job_of_no_length_waits_for_free_slots_like_any_other() {
    // Found in review: a 0 s job saw every node as free at its start and
    // was given a busy node's slots.
    let jobs = [
        (0, 0.0, [100.0, 100.0], 4, 2),
        (1, 0.0, [100.0, 100.0], 4, 2),
        (1, 1.0, [0.0, 0.0], 4, 1),
        (2, 1.0, [0.0, 0.0], 1, 1),
    ];
    let s = scenario(&jobs);
    let policies: Vec<Box<dyn Policy>> = vec![
        Box::new(Allox::new(1.0).unwrap()),
        Box::new(SlurmBackfill::easy()),
        Box::new(SlurmBackfill::conservative()),
    ];
    for mut p in policies {
        let out = run(&s, p.as_mut());
        assert!(
            out[2].start >= 100.0 - 1e-9,
            "{}: {}",
            p.label(),
            out[2].start
        );
    }
}
