//! What a run is judged by: completion times, their spread, utilisation and
//! fairness. Pure functions of the per-job outcomes.

/// How one job went. Times are absolute seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct JobOutcome {
    /// The job's user index.
    pub user: usize,
    /// When the job arrived.
    pub arrival: f64,
    /// When the job itself started (after any profiling probes).
    pub start: f64,
    /// When the job finished.
    pub finish: f64,
    /// The flavor it ran on, an index into the cluster's flavors.
    pub flavor: usize,
    /// The slot it ran on, an index over the cluster's slots.
    pub machine: usize,
    /// True run time on the job's fastest flavor: the denominator of its
    /// slowdown.
    pub fastest: f64,
    /// Its completion time alone on a `1/N` share of the cluster
    /// ([`isolated_time`]): the denominator of its finish-time fairness.
    pub isolated: f64,
    /// Its longest wait at a stretch: from arrival to its first start, or
    /// from a preemption to its next start (probes count as waiting).
    pub longest_wait: f64,
    /// How many times it was preempted.
    pub preemptions: u32,
    /// The first start a planning policy forecast for it while it waited
    /// (`Policy::forecast`); `None` if it was never forecast.
    pub forecast: Option<f64>,
}

impl JobOutcome {
    /// Job completion time: finish minus arrival.
    pub fn jct(&self) -> f64 {
        self.finish - self.arrival
    }
    /// Time from arrival to start (probes count as waiting).
    pub fn wait(&self) -> f64 {
        self.start - self.arrival
    }
    /// Time from start to finish.
    pub fn run(&self) -> f64 {
        self.finish - self.start
    }
    /// JCT over the best possible run time. A zero-length job that finished
    /// at once has slowdown 1.
    pub fn slowdown(&self) -> f64 {
        if self.fastest > 0.0 {
            self.jct() / self.fastest
        } else if self.jct() > 0.0 {
            f64::INFINITY
        } else {
            1.0
        }
    }
}

/// How long a single-slot job takes alone on a `1/N` share of every flavor,
/// Themis's `T_id` (NSDI 2020), with `N` the users that have jobs. A share
/// of at least one slot runs it at full speed; a share of `s < 1` slots
/// runs it at `s` of that speed. It takes the best flavor it may use:
/// `min_f p_f * max(1, N / slots_f)`. 0 if it may use none.
pub fn isolated_time(durations: &[Option<f64>], slots: &[usize], users: usize) -> f64 {
    let n = users.max(1) as f64;
    durations
        .iter()
        .zip(slots)
        .filter(|(_, &s)| s > 0)
        .filter_map(|(p, &s)| p.map(|p| p * (n / s as f64).max(1.0)))
        .fold(None, |best: Option<f64>, t| {
            Some(best.map_or(t, |b| b.min(t)))
        })
        .unwrap_or(0.0)
}

/// Points in each flavor's utilisation series.
pub const SERIES_POINTS: usize = 50;

/// A run's summary over all its jobs; times in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// Jobs that finished.
    pub jobs: usize,
    /// Mean job completion time.
    pub avg_jct: f64,
    /// Mean time from arrival to start.
    pub avg_wait: f64,
    /// Mean time from start to finish.
    pub avg_run: f64,
    /// Median job completion time (nearest rank).
    pub p50_jct: f64,
    /// 95th percentile of job completion time (nearest rank).
    pub p95_jct: f64,
    /// 99th percentile of job completion time (nearest rank).
    pub p99_jct: f64,
    /// Last finish minus first arrival.
    pub makespan: f64,
    /// Busy slot-time over `slots * makespan`, per flavor; probes count as
    /// busy. `None` for a flavor with no slots.
    pub utilization: Vec<Option<f64>>,
    /// Average JCT per user index; `None` for users with no jobs.
    pub per_user_jct: Vec<Option<f64>>,
    /// Jain's index over the users' mean slowdowns (users with jobs only).
    pub jain: f64,
    /// The longest any job waited at a stretch ([`JobOutcome::longest_wait`]).
    pub longest_wait: f64,
    /// 99th percentile of the jobs' longest waits (nearest rank).
    pub p99_wait: f64,
    /// Preemptions over all jobs.
    pub preemptions: u64,
    /// Finish-time fairness per job, `rho = JCT / isolated`: mean and max.
    /// Above 1, the job did worse than on its own `1/N` share.
    pub rho_mean: f64,
    /// See [`Metrics::rho_mean`].
    pub rho_max: f64,
    /// Jobs that waited longer than the starvation bound at a stretch.
    pub starved: usize,
    /// How well the policy's forecasts foretold the starts of the jobs
    /// that waited.
    pub forecasts: ForecastAccuracy,
    /// Mean slowdown per user index; `None` for users with no jobs.
    pub per_user_slowdown: Vec<Option<f64>>,
    /// Per flavor, [`SERIES_POINTS`] equal spans from the first arrival to
    /// the last finish, each the share of the flavor's slots busy with jobs
    /// (not probes) over it. Empty for a flavor with no slots.
    pub utilization_series: Vec<Vec<f64>>,
    /// [`SERIES_POINTS`] equal spans from the first arrival to the last
    /// arrival (the same for every run of a workload), each the longest
    /// wait of the jobs that arrived in it (0 where none did).
    pub wait_series: Vec<f64>,
}

/// `busy[f]` is the total busy time of flavor `f`'s slots, `slots[f]` its
/// slot count; `users` is the number of user indices; a job that waited
/// longer than `starvation_bound` seconds counts as starved.
pub fn compute(
    outcomes: &[JobOutcome],
    busy: &[f64],
    slots: &[usize],
    users: usize,
    starvation_bound: f64,
) -> Metrics {
    let n = outcomes.len();
    let mean = |f: &dyn Fn(&JobOutcome) -> f64| {
        if n == 0 {
            0.0
        } else {
            outcomes.iter().map(f).sum::<f64>() / n as f64
        }
    };
    let mut jcts: Vec<f64> = outcomes.iter().map(JobOutcome::jct).collect();
    jcts.sort_by(f64::total_cmp);
    let mut waits: Vec<f64> = outcomes.iter().map(|o| o.longest_wait).collect();
    waits.sort_by(f64::total_cmp);
    let first = outcomes
        .iter()
        .map(|o| o.arrival)
        .fold(f64::INFINITY, f64::min);
    let last = outcomes
        .iter()
        .map(|o| o.finish)
        .fold(f64::NEG_INFINITY, f64::max);
    let makespan = if n == 0 { 0.0 } else { last - first };

    let mut jct_sum = vec![0.0; users];
    let mut slowdown_sum = vec![0.0; users];
    let mut count = vec![0usize; users];
    for o in outcomes {
        jct_sum[o.user] += o.jct();
        slowdown_sum[o.user] += o.slowdown();
        count[o.user] += 1;
    }
    let per_user_jct = (0..users)
        .map(|u| (count[u] > 0).then(|| jct_sum[u] / count[u] as f64))
        .collect();
    let per_user_slowdown: Vec<Option<f64>> = (0..users)
        .map(|u| (count[u] > 0).then(|| slowdown_sum[u] / count[u] as f64))
        .collect();
    let mean_slowdowns: Vec<f64> = per_user_slowdown.iter().flatten().copied().collect();
    let rho = |o: &JobOutcome| {
        if o.isolated > 0.0 {
            o.jct() / o.isolated
        } else {
            1.0
        }
    };

    Metrics {
        jobs: n,
        avg_jct: mean(&JobOutcome::jct),
        avg_wait: mean(&JobOutcome::wait),
        avg_run: mean(&JobOutcome::run),
        p50_jct: percentile(&jcts, 0.50),
        p95_jct: percentile(&jcts, 0.95),
        p99_jct: percentile(&jcts, 0.99),
        makespan,
        utilization: busy
            .iter()
            .zip(slots)
            .map(|(&b, &s)| (s > 0 && makespan > 0.0).then(|| b / (s as f64 * makespan)))
            .collect(),
        per_user_jct,
        jain: jain(&mean_slowdowns),
        longest_wait: waits.last().copied().unwrap_or(0.0),
        p99_wait: percentile(&waits, 0.99),
        preemptions: outcomes.iter().map(|o| u64::from(o.preemptions)).sum(),
        rho_mean: mean(&rho),
        rho_max: outcomes.iter().map(rho).fold(0.0, f64::max),
        starved: outcomes
            .iter()
            .filter(|o| o.longest_wait > starvation_bound)
            .count(),
        forecasts: ForecastAccuracy::of(outcomes),
        per_user_slowdown,
        utilization_series: utilization_series(outcomes, slots, first, makespan),
        wait_series: wait_series(outcomes, first),
    }
}

/// The first forecast start of each job that waited, against its start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForecastAccuracy {
    /// Jobs that did not start when they arrived.
    pub waited: usize,
    /// Of those, the jobs that had a forecast before they started.
    pub forecast: usize,
    /// Median and 90th percentile (nearest rank) of `|start - forecast|`
    /// over the jobs that had one; 0 when none had.
    pub median_error: f64,
    /// See [`ForecastAccuracy::median_error`].
    pub p90_error: f64,
}

impl ForecastAccuracy {
    fn of(outcomes: &[JobOutcome]) -> Self {
        let waited: Vec<&JobOutcome> = outcomes.iter().filter(|o| o.start > o.arrival).collect();
        let mut errors: Vec<f64> = waited
            .iter()
            .filter_map(|o| o.forecast.map(|f| (o.start - f).abs()))
            .collect();
        errors.sort_by(f64::total_cmp);
        ForecastAccuracy {
            waited: waited.len(),
            forecast: errors.len(),
            median_error: percentile(&errors, 0.5),
            p90_error: percentile(&errors, 0.9),
        }
    }

    /// The share of the jobs that waited that had a forecast (1 when none
    /// waited).
    pub fn coverage(&self) -> f64 {
        if self.waited == 0 {
            1.0
        } else {
            self.forecast as f64 / self.waited as f64
        }
    }
}

/// See [`Metrics::wait_series`].
fn wait_series(outcomes: &[JobOutcome], first: f64) -> Vec<f64> {
    let mut series = vec![0.0; SERIES_POINTS];
    let last = outcomes
        .iter()
        .map(|o| o.arrival)
        .fold(f64::NEG_INFINITY, f64::max);
    let span = (last - first) / SERIES_POINTS as f64;
    for o in outcomes {
        let i = if span > 0.0 {
            (((o.arrival - first) / span) as usize).min(SERIES_POINTS - 1)
        } else {
            0
        };
        series[i] = f64::max(series[i], o.longest_wait);
    }
    series
}

/// See [`Metrics::utilization_series`].
fn utilization_series(
    outcomes: &[JobOutcome],
    slots: &[usize],
    first: f64,
    makespan: f64,
) -> Vec<Vec<f64>> {
    let mut series: Vec<Vec<f64>> = slots
        .iter()
        .map(|&s| {
            if s > 0 {
                vec![0.0; SERIES_POINTS]
            } else {
                Vec::new()
            }
        })
        .collect();
    if makespan <= 0.0 {
        return series;
    }
    let span = makespan / SERIES_POINTS as f64;
    for o in outcomes {
        let points = &mut series[o.flavor];
        let (a, b) = (o.start - first, o.finish - first);
        let last = ((b / span) as usize).min(SERIES_POINTS - 1);
        for (i, point) in points
            .iter_mut()
            .enumerate()
            .take(last + 1)
            .skip((a / span) as usize)
        {
            let (lo, hi) = (i as f64 * span, (i + 1) as f64 * span);
            *point += (b.min(hi) - a.max(lo)).max(0.0);
        }
    }
    for (points, &s) in series.iter_mut().zip(slots) {
        for p in points.iter_mut() {
            *p /= s as f64 * span;
        }
    }
    series
}

/// Nearest-rank percentile of sorted values; 0 for none.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Jain's fairness index `(sum x)^2 / (n * sum x^2)`: 1 when all equal,
/// `1/n` when one value holds everything. 1 for no values.
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || squares == 0.0 {
        1.0
    } else {
        sum * sum / (xs.len() as f64 * squares)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.95), 95.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
    }

    #[test]
    fn jain_bounds() {
        assert_eq!(jain(&[2.0, 2.0, 2.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn metrics_of_two_users() {
        let o = |user, arrival, start, finish| JobOutcome {
            user,
            arrival,
            start,
            finish,
            flavor: 0,
            machine: 0,
            fastest: 10.0,
            isolated: 20.0,
            longest_wait: start - arrival,
            preemptions: 0,
            forecast: None,
        };
        let m = compute(
            &[o(0, 0.0, 0.0, 10.0), o(1, 0.0, 10.0, 20.0)],
            &[20.0],
            &[1],
            2,
            5.0,
        );
        assert_eq!(m.avg_jct, 15.0);
        assert_eq!(m.avg_wait, 5.0);
        assert_eq!(m.avg_run, 10.0);
        assert_eq!(m.makespan, 20.0);
        assert_eq!(m.utilization, vec![Some(1.0)]);
        assert_eq!(m.per_user_jct, vec![Some(10.0), Some(20.0)]);
        assert_eq!(m.longest_wait, 10.0);
        // Slowdowns 1 and 2: (3^2) / (2 * 5) = 0.9.
        assert!((m.jain - 0.9).abs() < 1e-12);
        assert_eq!(m.per_user_slowdown, vec![Some(1.0), Some(2.0)]);
        // JCTs 10 and 20 over an isolated time of 20 (one slot, two users).
        assert_eq!((m.rho_mean, m.rho_max), (0.75, 1.0));
        // Only the second job waited, 10 s, over the 5 s bound.
        assert_eq!(m.starved, 1);
        // The one slot is busy all along: every point is 1.
        assert_eq!(m.utilization_series[0].len(), SERIES_POINTS);
        assert!(m.utilization_series[0]
            .iter()
            .all(|u| (u - 1.0).abs() < 1e-9));
        // Both arrived at t=0: the first span holds the longest wait.
        assert_eq!(m.wait_series.len(), SERIES_POINTS);
        assert_eq!(m.wait_series[0], 10.0);
        assert!(m.wait_series[1..].iter().all(|&w| w == 0.0));
        assert_eq!(m.preemptions, 0);
    }

    #[test]
    fn a_preempted_job_waits_by_its_longest_stretch() {
        // Started at once, preempted, then waited 30 s at a stretch before
        // running again: its first wait is 0, its longest 30 s.
        let preempted = JobOutcome {
            user: 0,
            arrival: 0.0,
            start: 0.0,
            finish: 100.0,
            flavor: 0,
            machine: 0,
            fastest: 70.0,
            isolated: 70.0,
            longest_wait: 30.0,
            preemptions: 2,
            forecast: None,
        };
        let m = compute(&[preempted], &[70.0], &[1], 1, 20.0);
        assert_eq!(m.avg_wait, 0.0);
        assert_eq!((m.longest_wait, m.p99_wait), (30.0, 30.0));
        assert_eq!((m.starved, m.preemptions), (1, 2));
    }

    #[test]
    fn isolated_time_takes_the_best_flavor_of_a_one_in_n_share() {
        // 2 GPUs and 8 CPUs among 4 users: half a GPU (so 2x its GPU time)
        // or 2 CPUs (full speed) each.
        let times = [Some(10.0), Some(30.0)];
        assert_eq!(isolated_time(&times, &[2, 8], 4), 20.0);
        assert_eq!(isolated_time(&times, &[4, 8], 4), 10.0);
        assert_eq!(isolated_time(&[None, Some(30.0)], &[4, 8], 4), 30.0);
        assert_eq!(isolated_time(&[Some(10.0), None], &[0, 8], 4), 0.0);
    }

    #[test]
    fn utilization_series_splits_a_job_across_spans() {
        // Two slots, 0..100 s in 50 points of 2 s. One job runs 0..25 s,
        // the other 0..100 s: points 0..11 are full, point 12 (24..26 s)
        // is 3/4 busy, the rest half.
        let o = |start, finish| JobOutcome {
            user: 0,
            arrival: 0.0,
            start,
            finish,
            flavor: 0,
            machine: 0,
            fastest: 1.0,
            isolated: 1.0,
            longest_wait: start,
            preemptions: 0,
            forecast: None,
        };
        let m = compute(&[o(0.0, 25.0), o(0.0, 100.0)], &[125.0], &[2], 1, 1e9);
        let s = &m.utilization_series[0];
        let near = |i: usize, want: f64| assert!((s[i] - want).abs() < 1e-9, "{i}: {}", s[i]);
        near(0, 1.0);
        near(11, 1.0);
        near(12, 0.75);
        near(13, 0.5);
        near(49, 0.5);
        let mean: f64 = s.iter().sum::<f64>() / s.len() as f64;
        assert!((mean - m.utilization[0].unwrap()).abs() < 1e-12);
    }
}
