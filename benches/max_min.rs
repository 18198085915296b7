//! Criterion benchmarks of Gavel's max-min LP on two flavors: the exact
//! knapsack answer (`max_min::two_flavors`) beside its baseline, the same
//! LP solved by clarabel (`max_min::lp`), in the same run. Before
//! criterion's figures, each size prints the medians of a few quick timings
//! and their ratio. The instances are seeded: run times log-uniform from
//! 10 s to 10,000 s, a job 1x to 20x slower on the CPU, one in ten without
//! a CPU time, and needs as Gavel's max-min sets them (an equal share).

mod common;

use common::median_seconds;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fairmatch::model::Flavor;
use fairmatch::policy::baselines::max_min::{lp, two_flavors};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;

type Lp = (Vec<Vec<Option<f64>>>, Vec<Flavor>, Vec<f64>);

fn instance(jobs: usize, seed: u64) -> Lp {
    let mut rng = StdRng::seed_from_u64(seed);
    let flavors = vec![
        Flavor {
            name: "gpu".into(),
            slots: 20,
            per_node: 1,
        },
        Flavor {
            name: "cpu".into(),
            slots: 20,
            per_node: 1,
        },
    ];
    let times: Vec<Vec<Option<f64>>> = (0..jobs)
        .map(|_| {
            let gpu = 10f64.powf(rng.gen_range(1.0..4.0));
            let cpu = (rng.gen_range(0..10) > 0).then(|| gpu * rng.gen_range(1.0..20.0));
            vec![Some(gpu), cpu]
        })
        .collect();
    let share = 20.0 / jobs as f64;
    let need = times
        .iter()
        .map(|row| row.iter().flatten().map(|p| share / p).sum())
        .collect();
    (times, flavors, need)
}

fn max_min(c: &mut Criterion) {
    let mut group = c.benchmark_group("max_min");
    group.sample_size(10);
    // 45 jobs: the size of a Google round; 1,000: a deep backlog.
    for &jobs in &[45usize, 1000] {
        let (times, flavors, need) = instance(jobs, 1);
        let exact = median_seconds(9, || {
            black_box(two_flavors(black_box(&times), &flavors, &need).unwrap());
        });
        let reference = median_seconds(9, || {
            black_box(lp(black_box(&times), &flavors, &need).unwrap());
        });
        eprintln!(
            "{jobs} jobs x 2 flavors: exact {exact:.6} s, clarabel {reference:.6} s: \
             the exact answer takes {:.4}x the LP's time ({:.0}x faster)",
            exact / reference.max(1e-12),
            reference / exact.max(1e-12)
        );
        let id = format!("{jobs}x2");
        group.bench_with_input(BenchmarkId::new("exact", &id), &jobs, |b, _| {
            b.iter(|| two_flavors(black_box(&times), &flavors, &need).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("clarabel", &id), &jobs, |b, _| {
            b.iter(|| lp(black_box(&times), &flavors, &need).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, max_min);
criterion_main!(benches);
