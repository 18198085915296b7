//! Seeded random instances for benchmarks: machines split evenly across
//! flavors, a quarter of them busy, job lengths log-uniform from a minute to
//! ten hours, per-flavor speed factors from 0.2x to 5x, and about one
//! flavor in ten forbidden per job (never all of them). Also the
//! benchmarks' baseline, [`shortest_first`].

use crate::solver::{Instance, Machine};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The fraction of machines [`instance`] draws busy.
pub const DEFAULT_BUSY: f64 = 0.25;

/// A seeded random instance of `jobs` jobs on `machines` machines of `flavors`
/// flavors, [`DEFAULT_BUSY`] of them busy.
pub fn instance(jobs: usize, machines: usize, flavors: usize, seed: u64) -> Instance {
    assert!(
        flavors >= 1 && machines >= flavors,
        "need a machine per flavor"
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let machines = (0..machines)
        .map(|m| Machine {
            flavor: m * flavors / machines,
            free_in: if rng.gen_bool(DEFAULT_BUSY) {
                rng.gen_range(0.0..2000.0)
            } else {
                0.0
            },
        })
        .collect();
    let mut times = Vec::with_capacity(jobs * flavors);
    for _ in 0..jobs {
        let base = (rng.gen_range(60f64.ln()..36000f64.ln())).exp();
        let keep = rng.gen_range(0..flavors);
        for f in 0..flavors {
            let forbidden = f != keep && rng.gen_bool(0.1);
            times.push((!forbidden).then(|| (base * rng.gen_range(0.2..5.0)).round()));
        }
    }
    Instance {
        flavors,
        machines,
        releases: vec![0.0; jobs],
        times,
        preferred: Vec::new(),
    }
}

/// [`instance`] with a fraction `busy` of its machines busy instead of a
/// quarter. Other fractions draw the machines' free times from a stream
/// of their own, so the jobs stay those of the same seed; [`DEFAULT_BUSY`] is
/// [`instance`] itself.
pub fn instance_with_busy(
    jobs: usize,
    machines: usize,
    flavors: usize,
    seed: u64,
    busy: f64,
) -> Instance {
    let mut inst = instance(jobs, machines, flavors, seed);
    if busy != DEFAULT_BUSY {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6275_7379);
        for m in &mut inst.machines {
            m.free_in = if rng.gen_bool(busy) {
                rng.gen_range(0.0..2000.0)
            } else {
                0.0
            };
        }
    }
    inst
}

/// The benchmarks' baseline: the jobs in order of their fastest time,
/// shortest first. On one machine that order is the whole optimum, and any
/// exact method costs at least this much.
pub fn shortest_first(instance: &Instance) -> Vec<usize> {
    let fastest: Vec<f64> = (0..instance.jobs())
        .map(|j| {
            (0..instance.flavors)
                .filter_map(|f| instance.time(j, f))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let mut order: Vec<usize> = (0..instance.jobs()).collect();
    order.sort_by(|&a, &b| fastest[a].total_cmp(&fastest[b]));
    order
}
