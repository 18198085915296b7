//! Criterion benchmarks of the exact solvers on the seeded random instances
//! that `fairmatch bench solver` uses. The munkres reference runs only on a
//! size its dense matrix can hold, beside ours on the same instance.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fairmatch::solver::{fast, munkres_ref, random};
use std::hint::black_box;

fn solvers(c: &mut Criterion) {
    let mut group = c.benchmark_group("solve");
    group.sample_size(10);
    for &(jobs, machines) in &[(40, 9), (400, 96), (2000, 500)] {
        let instance = random::instance(jobs, machines, 3, 1);
        let id = format!("{jobs}x{machines}");
        group.bench_with_input(BenchmarkId::new("fast", &id), &instance, |b, i| {
            b.iter(|| fast::solve(black_box(i)).unwrap())
        });
        if jobs <= 40 {
            group.bench_with_input(BenchmarkId::new("munkres", &id), &instance, |b, i| {
                b.iter(|| munkres_ref::solve(black_box(i)).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, solvers);
criterion_main!(benches);
