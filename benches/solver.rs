//! Criterion benchmarks of the exact solvers on the seeded random instances
//! that `fairmatch bench solver` uses, each beside its baseline measured in
//! the same run: a shortest-first sort of the same jobs (the whole optimum
//! on one machine, and a floor for any exact method), and the munkres
//! reference where its dense matrix fits; the class solver runs at every
//! size, beside `fast`. Before criterion's figures, each size prints the ratio of
//! the medians of a few quick timings.

mod common;

use common::median_seconds;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fairmatch::solver::oracle::munkres;
use fairmatch::solver::oracle::random::{self, shortest_first};
use fairmatch::solver::{classes, fast};
use std::hint::black_box;

fn solvers(c: &mut Criterion) {
    let mut group = c.benchmark_group("solve");
    group.sample_size(10);
    // (jobs, machines, flavors): wide clusters, and deep queues on few
    // machines (the slow case, see docs/performance.md).
    for &(jobs, machines, flavors) in &[
        (40, 9, 3),
        (400, 96, 3),
        (2000, 500, 3),
        (500, 16, 2),
        (500, 2, 2),
        (500, 1, 1),
    ] {
        let instance = random::instance(jobs, machines, flavors, 1);
        let id = format!("{jobs}x{machines}x{flavors}");
        let ours = median_seconds(5, || {
            black_box(fast::solve(black_box(&instance)).unwrap());
        });
        let sort = median_seconds(5, || {
            black_box(shortest_first(black_box(&instance)));
        });
        eprintln!(
            "{id}: fast {ours:.6} s, shortest-first sort {sort:.6} s: {:.0}x the baseline",
            ours / sort.max(1e-9)
        );
        group.bench_with_input(BenchmarkId::new("fast", &id), &instance, |b, i| {
            b.iter(|| fast::solve(black_box(i)).unwrap())
        });
        let classes_s = median_seconds(5, || {
            black_box(classes::solve(black_box(&instance)).unwrap());
        });
        eprintln!(
            "{id}: classes {classes_s:.6} s: {:.2}x fast's time, {:.0}x the baseline",
            classes_s / ours.max(1e-9),
            classes_s / sort.max(1e-9)
        );
        group.bench_with_input(BenchmarkId::new("classes", &id), &instance, |b, i| {
            b.iter(|| classes::solve(black_box(i)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("sort", &id), &instance, |b, i| {
            b.iter(|| shortest_first(black_box(i)))
        });
        if jobs <= 40 {
            let reference = median_seconds(5, || {
                black_box(munkres::solve(black_box(&instance)).unwrap());
            });
            eprintln!(
                "{id}: munkres {reference:.6} s: fast is {:.0}x faster",
                reference / ours.max(1e-9)
            );
            group.bench_with_input(BenchmarkId::new("munkres", &id), &instance, |b, i| {
                b.iter(|| munkres::solve(black_box(i)).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, solvers);
criterion_main!(benches);
