//! The fast solver's objective must equal the ground truth: exhaustive
//! search on tiny instances, and the generic Hungarian method (munkres) on
//! medium ones. Instances include ties, zero and 1e9 durations, forbidden
//! flavors, busy machines and preferred machines with bonuses.

use fairmatch::solver::oracle::{brute, munkres};
use fairmatch::solver::{classes, fast, one_flavor, Instance, Machine, Solution};
use proptest::prelude::*;

fn duration() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(0.0)),
        1 => Just(Some(1e9)),
        3 => (1u32..4).prop_map(|t| Some(t as f64)),
        3 => (1u32..1000).prop_map(|t| Some(t as f64)),
    ]
}

fn free_in() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => Just(0.0),
        2 => (1u32..500).prop_map(f64::from),
        1 => Just(1e9),
    ]
}

/// A random instance where every job can use at least one flavor that has
/// a machine (the solver rejects the others, tested separately).
fn instance(max_jobs: usize, max_machines: usize) -> impl Strategy<Value = Instance> {
    (1usize..=3, 1usize..=max_machines, 0usize..=max_jobs)
        .prop_flat_map(|(flavors, machines, jobs)| {
            (
                Just(flavors),
                prop::collection::vec((0..flavors, free_in()), machines),
                prop::collection::vec(
                    prop_oneof![3 => Just(0.0), 1 => (1u32..100).prop_map(|r| -(r as f64))],
                    jobs,
                ),
                prop::collection::vec(duration(), jobs * flavors),
                prop::collection::vec(
                    prop_oneof![
                        2 => Just(None),
                        1 => (0..machines, prop_oneof![Just(0.0), (1u32..50).prop_map(f64::from), Just(1e9)])
                            .prop_map(Some),
                    ],
                    jobs,
                ),
            )
        })
        .prop_map(|(flavors, machines, releases, mut times, preferred)| {
            let machines: Vec<Machine> = machines
                .into_iter()
                .map(|(flavor, free_in)| Machine { flavor, free_in })
                .collect();
            let anchor = machines[0].flavor;
            for j in 0..releases.len() {
                let row = &mut times[j * flavors..(j + 1) * flavors];
                let placeable = row
                    .iter()
                    .enumerate()
                    .any(|(f, t)| t.is_some() && machines.iter().any(|m| m.flavor == f));
                if !placeable {
                    row[anchor] = Some(7.0);
                }
            }
            Instance {
                flavors,
                machines,
                releases,
                times,
                preferred,
            }
        })
}

fn assert_same_objective(a: &Solution, b: &Solution) {
    let tol = 1e-9 * a.objective.abs().max(1.0);
    assert!(
        (a.objective - b.objective).abs() <= tol,
        "fast {} != reference {}",
        a.objective,
        b.objective
    );
}

/// Each machine's positions must be 1..=L with no gaps or repeats, and the
/// reported objective must be the recomputed one.
fn assert_well_formed(inst: &Instance, s: &Solution) {
    assert_eq!(s.slots.len(), inst.jobs());
    let mut used = vec![Vec::new(); inst.machines.len()];
    for (j, slot) in s.slots.iter().enumerate() {
        assert!(
            inst.time(j, inst.machines[slot.machine].flavor).is_some(),
            "forbidden flavor used"
        );
        used[slot.machine].push(slot.position);
    }
    for mut positions in used {
        positions.sort_unstable();
        assert!(
            positions.iter().enumerate().all(|(i, &k)| k == i + 1),
            "gapped queue {positions:?}"
        );
    }
    assert_eq!(s.objective, inst.objective(&s.slots));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn fast_matches_brute_force(inst in instance(7, 3)) {
        let f = fast::solve(&inst).unwrap();
        let b = brute::solve(&inst).unwrap();
        assert_well_formed(&inst, &f);
        assert_same_objective(&f, &b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn fast_matches_munkres(inst in instance(60, 10)) {
        let f = fast::solve(&inst).unwrap();
        let m = munkres::solve(&inst).unwrap();
        assert_well_formed(&inst, &f);
        assert_same_objective(&f, &m);
    }
}

/// [`instance`] without preferred machines: what the class solver takes.
fn unpreferring_instance(max_jobs: usize, max_machines: usize) -> impl Strategy<Value = Instance> {
    instance(max_jobs, max_machines).prop_map(|mut inst| {
        inst.preferred.clear();
        inst
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn classes_match_brute_force(inst in unpreferring_instance(7, 4)) {
        let c = classes::solve(&inst).unwrap();
        let b = brute::solve(&inst).unwrap();
        assert_well_formed(&inst, &c);
        assert_same_objective(&c, &b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn classes_match_munkres(inst in unpreferring_instance(60, 10)) {
        let c = classes::solve(&inst).unwrap();
        let m = munkres::solve(&inst).unwrap();
        assert_well_formed(&inst, &c);
        assert_same_objective(&c, &m);
    }
}

// Deeper queues than munkres can take, against `fast` (itself held to
// munkres above): many searches per solve, many jobs per class.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn classes_match_fast_on_deeper_queues(inst in unpreferring_instance(400, 24)) {
        let c = classes::solve(&inst).unwrap();
        let f = fast::solve(&inst).unwrap();
        assert_well_formed(&inst, &c);
        assert_same_objective(&c, &f);
    }
}

/// Runs `steps` on the class solver's warm state of `inst`, arrivals'
/// times passed through `scale`, and every `every` steps holds its cost to
/// `reference`'s on the jobs left.
fn run_classes_warm(
    inst: &Instance,
    steps: Vec<Step>,
    scale: impl Fn(f64) -> f64,
    every: usize,
    reference: impl Fn(&Instance) -> Solution,
) -> Result<(), TestCaseError> {
    let mut state = classes::Classes::cold(inst).unwrap();
    for (i, step) in steps.into_iter().enumerate() {
        match step {
            Step::Arrive(mut times) => {
                for t in times.iter_mut().flatten() {
                    *t = scale(*t);
                }
                if !inst.machines.iter().any(|m| times[m.flavor].is_some()) {
                    times[inst.machines[0].flavor] = Some(scale(7.0));
                }
                state.add_job(&times).unwrap();
            }
            Step::Start => {
                state.start_next();
            }
            Step::Advance(dt) => state.advance(scale(dt).min(state.room())),
        }
        if i % every == every - 1 {
            let (remaining, _) = state.remaining();
            let cold = reference(&remaining);
            let warm = state.cost();
            let tol = 1e-9 * cold.objective.abs().max(1.0);
            prop_assert!(
                (warm - cold.objective).abs() <= tol,
                "step {}: warm {} != cold {}",
                i,
                warm,
                cold.objective
            );
        }
    }
    Ok(())
}

// Times and free times off any binary grid (thirds), so sums round: the
// searches must not lose a path to rounding between two ways of summing it.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn classes_match_fast_on_fractional_times((inst, steps) in warm_run_on(150, 12, 200)) {
        let third = |t: f64| if t > 0.0 && t < 1e9 { t / 3.0 } else { t };
        let mut inst = inst;
        inst.preferred.clear();
        for t in inst.times.iter_mut().flatten() {
            *t = third(*t);
        }
        for m in &mut inst.machines {
            m.free_in = third(m.free_in);
        }
        let c = classes::solve(&inst).unwrap();
        let f = fast::solve(&inst).unwrap();
        assert_same_objective(&c, &f);
        run_classes_warm(&inst, steps, third, 10, |i| fast::solve(i).unwrap())?;
    }
}

// Mostly identical machines (a flavor's classes then hold several jobs
// each) and many equal times.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn classes_match_munkres_on_mostly_identical_machines(inst in grouped_instance(60, 10)) {
        let c = classes::solve(&inst).unwrap();
        let m = munkres::solve(&inst).unwrap();
        assert_well_formed(&inst, &c);
        assert_same_objective(&c, &m);
    }
}

/// Instances where every machine has the first machine's flavor and no job
/// prefers a machine: the case [`one_flavor`] solves by list scheduling.
fn one_flavor_instance(max_jobs: usize, max_machines: usize) -> impl Strategy<Value = Instance> {
    instance(max_jobs, max_machines).prop_map(|mut inst| {
        let f = inst.machines[0].flavor;
        for m in &mut inst.machines {
            m.flavor = f;
        }
        inst.preferred.clear();
        for j in 0..inst.jobs() {
            let t = &mut inst.times[j * inst.flavors + f];
            t.get_or_insert(7.0);
        }
        inst
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn one_flavor_matches_brute_force(inst in one_flavor_instance(8, 4)) {
        prop_assert!(one_flavor::applies(&inst).is_some());
        let o = one_flavor::solve(&inst).unwrap();
        let b = brute::solve(&inst).unwrap();
        assert_well_formed(&inst, &o);
        assert_same_objective(&o, &b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn one_flavor_matches_munkres(inst in one_flavor_instance(60, 10)) {
        let o = one_flavor::solve(&inst).unwrap();
        let m = munkres::solve(&inst).unwrap();
        assert_well_formed(&inst, &o);
        assert_same_objective(&o, &m);
    }
}

/// Instances whose machines mostly share a flavor and a free time, and
/// whose jobs prefer no machine: many machines fall into one class.
fn grouped_instance(max_jobs: usize, max_machines: usize) -> impl Strategy<Value = Instance> {
    instance(max_jobs, max_machines).prop_map(|mut inst| {
        for m in &mut inst.machines {
            if m.free_in < 1e9 {
                m.free_in = if m.free_in > 250.0 { 40.0 } else { 0.0 };
            }
        }
        inst.preferred.clear();
        inst
    })
}

/// One step of a warm run: a job arrives (its times), or the class
/// state's next start happens, or the clock moves on.
#[derive(Clone, Debug)]
enum Step {
    Arrive(Vec<Option<f64>>),
    Start,
    Advance(f64),
}

fn warm_run(max_steps: usize) -> impl Strategy<Value = (Instance, Vec<Step>)> {
    warm_run_on(8, 5, max_steps)
}

fn warm_run_on(
    max_jobs: usize,
    max_machines: usize,
    max_steps: usize,
) -> impl Strategy<Value = (Instance, Vec<Step>)> {
    instance(max_jobs, max_machines).prop_flat_map(move |inst| {
        let f = inst.flavors;
        let m = inst.machines.len();
        let step = prop_oneof![
            // The draws a preference and a machine once took are kept, so
            // the seeds still give the same runs.
            3 => (
                prop::collection::vec(duration(), f),
                prop_oneof![2 => Just(None), 1 => (0..m, (0u32..50).prop_map(f64::from)).prop_map(Some)],
            )
                .prop_map(|(t, _)| Step::Arrive(t)),
            2 => (0..m).prop_map(|_| Step::Start),
            1 => (0u32..300).prop_map(|d| Step::Advance(f64::from(d))),
        ];
        (Just(inst), prop::collection::vec(step, 0..max_steps))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// The class solver's warm state after any run of arrivals, starts and
    /// clock moves costs exactly what a cold solve of the same jobs on the
    /// same machines costs.
    #[test]
    fn classes_warm_equals_cold((inst, steps) in warm_run(40)) {
        let mut inst = inst;
        inst.preferred.clear();
        run_classes_warm(&inst, steps, |t| t, 1, |i| munkres::solve(i).unwrap())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]
    /// Longer warm runs on deeper queues, against `fast` every 10 steps:
    /// starts here free units whose arcs to the sink cost less than their
    /// potentials say, which the searches must allow for.
    #[test]
    fn classes_warm_equals_cold_on_deeper_runs((inst, steps) in warm_run_on(150, 12, 300)) {
        let mut inst = inst;
        inst.preferred.clear();
        run_classes_warm(&inst, steps, |t| t, 10, |i| fast::solve(i).unwrap())?;
    }
}

#[test]
fn unplaceable_job_is_an_error_not_a_panic() {
    let inst = Instance {
        flavors: 2,
        machines: vec![Machine {
            flavor: 0,
            free_in: 0.0,
        }],
        releases: vec![0.0],
        times: vec![None, Some(3.0)],
        preferred: Vec::new(),
    };
    assert_eq!(
        fast::solve(&inst).unwrap_err(),
        fairmatch::solver::SolveError::Unplaceable { job: 0 }
    );
}

#[test]
fn motivation_case_is_45_on_average() {
    // AlloX's motivating example: 2 GPUs, 2 CPUs, (gpu, cpu) durations.
    let times = [(40.0, 50.0), (40.0, 50.0), (40.0, 80.0), (40.0, 80.0)];
    let inst = Instance {
        flavors: 2,
        machines: vec![
            Machine {
                flavor: 0,
                free_in: 0.0,
            },
            Machine {
                flavor: 0,
                free_in: 0.0,
            },
            Machine {
                flavor: 1,
                free_in: 0.0,
            },
            Machine {
                flavor: 1,
                free_in: 0.0,
            },
        ],
        releases: vec![0.0; 4],
        times: times
            .iter()
            .flat_map(|&(g, c)| [Some(g), Some(c)])
            .collect(),
        preferred: Vec::new(),
    };
    let s = fast::solve(&inst).unwrap();
    assert_eq!(s.objective, 180.0);
    for j in [2, 3] {
        assert_eq!(
            inst.machines[s.slots[j].machine].flavor, 0,
            "80-CPU job {j} not on a GPU"
        );
    }
}
