//! The max-min LP that Gavel's round-based policies solve, and an exact
//! combinatorial answer to it when at most two flavors have slots.
//!
//! ```text
//! maximise t  subject to
//!   sum_f x[j][f] * w[j][f] >= t             for every job with a row
//!   sum_f x[j][f] <= 1                       (a job holds one slot)
//!   sum_j x[j][f] * s[j] <= slots[f]         (capacity)
//! ```
//!
//! where `w[j][f] = T[j][f] / need[j]`, `T[j][f] = 1 / p[j][f]` the job's
//! throughput on `f` (its share of the work done per second), and `s[j]`
//! the slots the job holds at once (Gavel's scale factor; 1 unless given).
//!
//! [`lp`] solves it with `good_lp` and its pure-Rust `clarabel` backend
//! (an interior-point method). The simplex backend `microlp` failed on
//! degenerate rounds ("singular matrix") in the property tests, and was no
//! faster. An LP of 45 jobs takes clarabel about 1.3 ms, and the bundled
//! Google workload asks for thousands of them.
//!
//! **Two flavors, exactly.** For a fixed level `t` the question "can every
//! job reach `t`?" is a fractional knapsack, so [`two_flavors`] answers the
//! whole LP in microseconds:
//! - A job's cheapest ways to reach `t` lie on the segment
//!   `a * w_a + b * w_b = t`, `a + b <= 1`: less of either flavor falls
//!   short, more only uses capacity. On it, each unit of `a` saves
//!   `w_a / w_b` units of `b`, the same rate all along the segment, and the
//!   same for every `t`, since `need` cancels out of it, and the same for
//!   a job of `s` slots, whose shares cost `s` times as much of each.
//! - So, with `a` at its least on every segment, the rest of flavor `a`
//!   goes to the jobs of the highest rate first; `t` is feasible iff the
//!   `b` left to find fits in flavor `b`. That is the LP's own optimum for
//!   the sub-problem "least `b` for given `a`", a knapsack with one
//!   constraint and bounds.
//! - Feasibility only shrinks as `t` grows (scale a feasible `x` down), so
//!   the largest `t` is found by bisection to a relative `1e-12`, tighter
//!   than clarabel's own `1e-8`. The shares returned are the knapsack's at
//!   that level, so they are always feasible.
//!
//! The LP's optimum is rarely unique, and the two answers differ in which
//! optimum they give: the interior-point method returns a central one,
//! which spreads spare capacity over the jobs; [`two_flavors`] gives every
//! job exactly the level, and leaves the spare capacity to the round's
//! fill-in (fastest first, [`super::rounds`]). The level is the same;
//! the property tests below hold it to the LP's.

use super::PolicyError;
use crate::model::Flavor;
use good_lp::{constraint, variable, Expression, ProblemVariables, Solution, SolverModel};

/// The LP's answer: the level `t`, and `x[j][f]` per job.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// The level `t` every job's normalised throughput reaches.
    pub level: f64,
    /// `x[j][f]`: job `j`'s share of time on flavor `f`, indexed like the jobs
    /// and the flavors.
    pub shares: Vec<Vec<f64>>,
}

/// The largest coefficient of a fairness row.
const MAX_COEFFICIENT: f64 = 1e6;

pub(crate) fn throughput(p: f64) -> f64 {
    if p > 0.0 {
        1.0 / p
    } else {
        1e9
    }
}

/// Whether a job gets a fairness row. A job that needs almost nothing (an
/// instant job, or one that has overrun its estimate) would put
/// coefficients of 1e9 in the LP, which a solver cannot pivot on: it gets
/// no row, as any share meets it.
fn has_row(row: &[Option<f64>], need: f64) -> bool {
    need.is_finite()
        && need > 0.0
        && row
            .iter()
            .flatten()
            .all(|&p| throughput(p) / need <= MAX_COEFFICIENT)
}

/// The level when no job has a row: the bound of the LP's `t`, which keeps
/// it from being unbounded.
fn unbounded_level(flavors: &[Flavor]) -> f64 {
    MAX_COEFFICIENT * flavors.len() as f64
}

/// Solves the LP for jobs with run times `times[j][f]` (`None`: cannot
/// run there), exactly by [`two_flavors`] when at most two flavors have
/// slots, else by [`lp`]. A job whose `need` is not a finite number above
/// 0 gets no fairness row.
pub fn max_min(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    need: &[f64],
) -> Result<Allocation, PolicyError> {
    max_min_sized(times, flavors, need, &[])
}

/// [`max_min`] for jobs of `sizes[j]` slots each (empty: 1 each).
pub fn max_min_sized(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    need: &[f64],
    sizes: &[f64],
) -> Result<Allocation, PolicyError> {
    match two_flavors_sized(times, flavors, need, sizes) {
        Some(allocation) => Ok(allocation),
        None => lp_sized(times, flavors, need, sizes),
    }
}

/// The slots job `j` holds: `sizes[j]`, or 1 when `sizes` is empty.
fn size(sizes: &[f64], j: usize) -> f64 {
    sizes.get(j).copied().unwrap_or(1.0)
}

/// The LP, by clarabel, for jobs of one slot.
pub fn lp(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    need: &[f64],
) -> Result<Allocation, PolicyError> {
    lp_sized(times, flavors, need, &[])
}

/// The LP, by clarabel, for jobs of `sizes[j]` slots (empty: 1 each).
pub fn lp_sized(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    need: &[f64],
    sizes: &[f64],
) -> Result<Allocation, PolicyError> {
    if times.is_empty() {
        return Ok(Allocation {
            level: 0.0,
            shares: Vec::new(),
        });
    }
    // good_lp asks clarabel for a feasibility tolerance of 1e-9, which on
    // rare instances of times four orders of magnitude apart stalls it
    // ("No progress"); clarabel's own default then solves them, well
    // within the 1e-6 the answers are compared at.
    lp_solved(times, flavors, need, sizes, 1e-9)
        .or_else(|_| lp_solved(times, flavors, need, sizes, 1e-8))
}

/// [`lp_sized`] at feasibility tolerance `tol_feas`.
fn lp_solved(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    need: &[f64],
    sizes: &[f64],
    tol_feas: f64,
) -> Result<Allocation, PolicyError> {
    let mut vars = ProblemVariables::new();
    // Bounded, so that a problem without fairness rows is not unbounded: no
    // row can exceed it anyway.
    let level = vars.add(variable().min(0.0).max(unbounded_level(flavors)));
    let x: Vec<Vec<Option<good_lp::Variable>>> = times
        .iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(f, p)| {
                    (p.is_some() && flavors[f].slots > 0)
                        .then(|| vars.add(variable().min(0.0).max(1.0)))
                })
                .collect()
        })
        .collect();
    let mut model = vars.maximise(level).using(good_lp::clarabel);
    model.settings().tol_feas(tol_feas);
    for (j, row) in times.iter().enumerate() {
        let fair = has_row(row, need[j]);
        let mut held = Expression::from(0.0);
        let mut normalised = Expression::from(0.0);
        for (f, p) in row.iter().enumerate() {
            if let (Some(v), Some(p)) = (x[j][f], p) {
                held += v;
                if fair {
                    normalised += v * (throughput(*p) / need[j]);
                }
            }
        }
        model = model.with(constraint!(held <= 1.0));
        if fair {
            model = model.with(constraint!(normalised >= level));
        }
    }
    for (f, flavor) in flavors.iter().enumerate() {
        let mut used = Expression::from(0.0);
        for (j, row) in x.iter().enumerate() {
            if let Some(v) = row[f] {
                used += v * size(sizes, j);
            }
        }
        model = model.with(constraint!(used <= flavor.slots as f64));
    }
    // A solver panic on a hard problem is an error of this decision, not of
    // the process.
    let solution = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.solve()))
        .map_err(|_| PolicyError::Parameter("the allocation LP solver panicked".into()))?
        .map_err(|e| PolicyError::Parameter(format!("the allocation LP failed: {e}")))?;
    Ok(Allocation {
        level: solution.value(level),
        shares: x
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| v.map_or(0.0, |v| solution.value(v).max(0.0)))
                    .collect()
            })
            .collect(),
    })
}

/// A job with a fairness row, on the two flavors `a` and `b`: its
/// normalised throughput per unit share of each (0 where it cannot run).
#[derive(Clone, Copy)]
struct Row {
    job: usize,
    wa: f64,
    wb: f64,
    /// Slots it holds at once.
    size: f64,
}

impl Row {
    /// The least share of `a` on the cheapest segment for level `t`, the
    /// most, and the share of `b` that goes with a share `a`; `None` if
    /// the job cannot reach `t` on one slot.
    fn range(&self, t: f64) -> Option<(f64, f64)> {
        let (wa, wb) = (self.wa, self.wb);
        if t > wa.max(wb) {
            return None;
        }
        if wa >= wb {
            if wa == 0.0 {
                return Some((0.0, 0.0));
            }
            // Below `wb` the job may live on `b` alone; above, `a + b <= 1`
            // needs some `a`.
            let least = if t <= wb { 0.0 } else { (t - wb) / (wa - wb) };
            Some((least, t / wa))
        } else if wa == 0.0 {
            Some((0.0, 0.0))
        } else {
            Some((0.0, (t / wa).min((wb - t) / (wb - wa))))
        }
    }

    /// Clamped to `1 - a`: the division multiplies the rounding of `a` by
    /// `w_a / w_b`, and at a rate of 1e7 a job at the end of its segment
    /// held 1.0000257 slots (found in review). The clamp costs the job at
    /// most that excess times `w_b` of level.
    fn b_for(&self, t: f64, a: f64) -> f64 {
        if self.wb > 0.0 {
            ((t - self.wa * a) / self.wb).clamp(0.0, (1.0 - a).max(0.0))
        } else {
            0.0
        }
    }
}

/// The knapsack for level `t`: every row's share of `a` (rows in
/// decreasing `wa / wb`), if the `b` they need fits in `slots_b`.
fn fill(t: f64, rows: &[Row], slots_a: f64, slots_b: f64, a: &mut [f64]) -> bool {
    let mut spare = slots_a;
    for (row, a) in rows.iter().zip(a.iter_mut()) {
        let Some((least, _)) = row.range(t) else {
            return false;
        };
        *a = least;
        spare -= least * row.size;
    }
    if spare < 0.0 {
        return false;
    }
    let mut b = 0.0;
    for (row, a) in rows.iter().zip(a.iter_mut()) {
        let (least, most) = row.range(t).expect("checked above");
        let more = (most - least).min(spare / row.size);
        *a += more;
        spare -= more * row.size;
        b += row.b_for(t, *a) * row.size;
    }
    b <= slots_b
}

/// The LP's optimum when at most two flavors have slots; `None` when more
/// do (the caller then solves the LP).
pub fn two_flavors(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    need: &[f64],
) -> Option<Allocation> {
    two_flavors_sized(times, flavors, need, &[])
}

/// [`two_flavors`] for jobs of `sizes[j]` slots (empty: 1 each).
pub fn two_flavors_sized(
    times: &[Vec<Option<f64>>],
    flavors: &[Flavor],
    need: &[f64],
    sizes: &[f64],
) -> Option<Allocation> {
    let open: Vec<usize> = (0..flavors.len())
        .filter(|&f| flavors[f].slots > 0)
        .collect();
    if open.len() > 2 {
        return None;
    }
    let fa = open.first().copied();
    let fb = open.get(1).copied();
    let w = |row: &[Option<f64>], f: Option<usize>, need: f64| {
        f.and_then(|f| row[f]).map_or(0.0, |p| throughput(p) / need)
    };
    let mut rows: Vec<Row> = times
        .iter()
        .enumerate()
        .filter(|(j, row)| has_row(row, need[*j]))
        .map(|(j, row)| Row {
            job: j,
            wa: w(row, fa, need[j]),
            wb: w(row, fb, need[j]),
            size: size(sizes, j),
        })
        .collect();
    let mut shares = vec![vec![0.0; flavors.len()]; times.len()];
    if rows.is_empty() {
        let level = if times.is_empty() {
            0.0
        } else {
            unbounded_level(flavors)
        };
        return Some(Allocation { level, shares });
    }
    // The rate `wa / wb`, highest first; a row without `b` has no choice.
    let rate = |r: &Row| {
        if r.wb > 0.0 {
            r.wa / r.wb
        } else {
            f64::INFINITY
        }
    };
    rows.sort_by(|x, y| rate(y).total_cmp(&rate(x)).then(x.job.cmp(&y.job)));
    let slots_a = fa.map_or(0.0, |f| flavors[f].slots as f64);
    let slots_b = fb.map_or(0.0, |f| flavors[f].slots as f64);
    let mut a = vec![0.0; rows.len()];
    let mut low = 0.0;
    let mut high = rows
        .iter()
        .map(|r| r.wa.max(r.wb))
        .fold(f64::INFINITY, f64::min);
    if fill(high, &rows, slots_a, slots_b, &mut a) {
        low = high;
    } else {
        for _ in 0..200 {
            // Half the promised 1e-12, for the rounding of the last step.
            if high - low <= 5e-13 * high {
                break;
            }
            let mid = 0.5 * (low + high);
            if fill(mid, &rows, slots_a, slots_b, &mut a) {
                low = mid;
            } else {
                high = mid;
            }
        }
    }
    let feasible = fill(low, &rows, slots_a, slots_b, &mut a);
    debug_assert!(feasible, "the level the bisection kept is feasible");
    for (row, &a) in rows.iter().zip(&a) {
        if let Some(f) = fa {
            shares[row.job][f] = a;
        }
        if let Some(f) = fb {
            shares[row.job][f] = row.b_for(low, a);
        }
    }
    Some(Allocation { level: low, shares })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn flavor(slots: usize) -> Flavor {
        Flavor {
            name: format!("f{slots}"),
            slots,
            per_node: 1,
        }
    }

    /// Every constraint of the LP, with `slack` for the solver's tolerance.
    fn assert_feasible(a: &Allocation, times: &[Vec<Option<f64>>], fl: &[Flavor], need: &[f64]) {
        let slack = 1e-7;
        for (j, row) in times.iter().enumerate() {
            let x = &a.shares[j];
            assert!(x.iter().all(|&v| v >= 0.0), "{a:?}");
            assert!(
                x.iter().sum::<f64>() <= 1.0 + slack,
                "job {j} holds more than a slot: {a:?}"
            );
            for (f, p) in row.iter().enumerate() {
                if p.is_none() || fl[f].slots == 0 {
                    assert_eq!(x[f], 0.0, "job {j} on a flavor it cannot use: {a:?}");
                }
            }
            if has_row(row, need[j]) {
                let got: f64 = row
                    .iter()
                    .zip(x)
                    .filter_map(|(p, v)| p.map(|p| v * throughput(p) / need[j]))
                    .sum();
                assert!(
                    got >= a.level * (1.0 - slack) - slack,
                    "job {j} below the level: {a:?}"
                );
            }
        }
        for (f, flavor) in fl.iter().enumerate() {
            let used: f64 = a.shares.iter().map(|x| x[f]).sum();
            assert!(
                used <= flavor.slots as f64 + slack,
                "flavor {f} over capacity: {a:?}"
            );
        }
    }

    fn instance() -> impl Strategy<Value = (Vec<Vec<Option<f64>>>, Vec<Flavor>, Vec<f64>)> {
        let slots = prop::collection::vec(0usize..4, 1..4)
            .prop_filter("two open flavors at most", |s| {
                s.iter().filter(|&&n| n > 0).count() <= 2
            });
        (slots, 1usize..25).prop_flat_map(|(slots, jobs)| {
            let flavors: Vec<Flavor> = slots.iter().map(|&s| flavor(s)).collect();
            let f = flavors.len();
            let time = prop_oneof![
                1 => Just(None),
                6 => (1u32..2000).prop_map(|t| Some(t as f64 / 4.0)),
            ];
            let need = prop_oneof![
                1 => Just(0.0),
                1 => Just(f64::INFINITY),
                8 => (1u32..1000).prop_map(|n| n as f64 / 1e4),
            ];
            (
                prop::collection::vec(prop::collection::vec(time, f), jobs),
                Just(flavors),
                prop::collection::vec(need, jobs),
            )
        })
    }

    /// Two open flavors and every time known, so the bisection runs:
    /// times from a few values (ties, `w_a == w_b`) or spread over six
    /// orders of magnitude (rates up to 1e6).
    fn contended() -> impl Strategy<Value = (Vec<Vec<Option<f64>>>, Vec<Flavor>, Vec<f64>)> {
        (1usize..4, 1usize..4, 1usize..30).prop_flat_map(|(a, b, jobs)| {
            let time = prop_oneof![
                prop::sample::select(vec![1.0, 2.0, 4.0]),
                (0u32..6000).prop_map(|e| 10f64.powf(e as f64 / 1000.0)),
            ];
            let need = prop_oneof![
                prop::sample::select(vec![0.5, 1.0]),
                (1u32..1000).prop_map(|n| n as f64 / 1e3),
            ];
            (
                prop::collection::vec(prop::collection::vec(time.prop_map(Some), 2), jobs),
                Just(vec![flavor(a), flavor(b)]),
                prop::collection::vec(need, jobs),
            )
        })
    }

    /// The exact answer is feasible and reaches clarabel's level.
    fn matches_the_lp(
        times: &[Vec<Option<f64>>],
        flavors: &[Flavor],
        need: &[f64],
    ) -> Result<(), TestCaseError> {
        let exact = two_flavors(times, flavors, need).expect("two open flavors at most");
        let reference = lp(times, flavors, need).unwrap();
        assert_feasible(&exact, times, flavors, need);
        let tolerance = 1e-6 * reference.level.abs().max(1.0);
        prop_assert!(
            (exact.level - reference.level).abs() <= tolerance,
            "exact {} vs LP {}: {times:?} {flavors:?} {need:?}",
            exact.level,
            reference.level
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// With both flavors contended, the same.
        #[test]
        fn two_contended_flavors_match_the_lp((times, flavors, need) in contended()) {
            matches_the_lp(&times, &flavors, &need)?;
        }

        /// The exact answer reaches the LP's level, and is feasible.
        #[test]
        fn two_flavors_matches_the_lp((times, flavors, need) in instance()) {
            matches_the_lp(&times, &flavors, &need)?;
        }

        /// Jobs of several slots (Gavel's scale factors): the exact
        /// answer reaches the LP's level and holds no flavor past its slots.
        #[test]
        fn jobs_of_several_slots_match_the_lp(
            (times, flavors, need) in contended(),
            sizes in prop::collection::vec(prop::sample::select(vec![1.0, 2.0, 4.0]), 30),
        ) {
            let sizes = &sizes[..times.len()];
            let exact = two_flavors_sized(&times, &flavors, &need, sizes).unwrap();
            let reference = lp_sized(&times, &flavors, &need, sizes).unwrap();
            let tolerance = 1e-6 * reference.level.abs().max(1.0);
            prop_assert!((exact.level - reference.level).abs() <= tolerance,
                "exact {} vs LP {}", exact.level, reference.level);
            for (f, flavor) in flavors.iter().enumerate() {
                let used: f64 = exact.shares.iter().zip(sizes).map(|(x, s)| x[f] * s).sum();
                prop_assert!(used <= flavor.slots as f64 + 1e-6, "flavor {f}: {used}");
            }
        }
    }

    #[test]
    fn no_jobs_no_level() {
        let a = two_flavors(&[], &[flavor(1), flavor(1)], &[]).unwrap();
        assert_eq!((a.level, a.shares.len()), (0.0, 0));
    }

    #[test]
    fn a_job_at_the_end_of_its_segment_holds_one_slot_at_most() {
        // The review's counterexample: rates near 1e11 amplified the
        // rounding of `a` into a job holding 1.0000257 slots.
        let times = vec![
            vec![Some(1.5372865415976104e-6), Some(399058.70173956273)],
            vec![Some(1.4423282218958887e-6), Some(956092.2426293385)],
            vec![Some(1.5108449998924342e-6), Some(863278.8722736225)],
        ];
        let flavors = vec![flavor(1), flavor(2)];
        let need = vec![1.0; 3];
        let a = two_flavors(&times, &flavors, &need).unwrap();
        for (j, x) in a.shares.iter().enumerate() {
            assert!(x.iter().sum::<f64>() <= 1.0 + 1e-12, "job {j}: {x:?}");
        }
    }

    #[test]
    fn three_open_flavors_go_to_the_lp() {
        let times = vec![vec![Some(1.0), Some(2.0), Some(3.0)]];
        let flavors = vec![flavor(1), flavor(1), flavor(1)];
        assert!(two_flavors(&times, &flavors, &[1.0]).is_none());
        let a = max_min(&times, &flavors, &[1.0]).unwrap();
        assert!((a.level - 1.0).abs() < 1e-6, "{a:?}");
    }

    #[test]
    fn a_job_that_can_use_no_open_flavor_holds_the_level_at_zero() {
        let times = vec![vec![Some(1.0), None], vec![None, Some(1.0)]];
        let flavors = vec![flavor(1), flavor(0)];
        let a = two_flavors(&times, &flavors, &[1.0, 1.0]).unwrap();
        assert_eq!(a.level, 0.0);
        assert_eq!(a.shares, vec![vec![0.0, 0.0]; 2]);
    }

    #[test]
    fn the_scarce_flavor_goes_to_the_job_it_helps_most() {
        // One slot each. Job 0 runs 10x faster on `a`, job 1 only 2x: job 0
        // takes `a`, and what job 1 needs of `a` beyond that is none.
        let times = vec![vec![Some(1.0), Some(10.0)], vec![Some(1.0), Some(2.0)]];
        let flavors = vec![flavor(1), flavor(1)];
        let a = two_flavors(&times, &flavors, &[1.0, 1.0]).unwrap();
        let reference = lp(&times, &flavors, &[1.0, 1.0]).unwrap();
        assert!(
            (a.level - reference.level).abs() < 1e-6,
            "{a:?} {reference:?}"
        );
        assert!(a.shares[0][0] > a.shares[1][0], "{a:?}");
    }
}
