//! What a run is judged by: completion times, their spread, utilisation and
//! fairness. Pure functions of the per-job outcomes.

/// How one job went. Times are absolute seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct JobOutcome {
    pub user: usize,
    pub arrival: f64,
    /// When the job itself started (after any profiling probes).
    pub start: f64,
    pub finish: f64,
    pub flavor: usize,
    pub machine: usize,
    /// True run time on the job's fastest flavor: the denominator of its
    /// slowdown.
    pub fastest: f64,
}

impl JobOutcome {
    pub fn jct(&self) -> f64 {
        self.finish - self.arrival
    }
    pub fn wait(&self) -> f64 {
        self.start - self.arrival
    }
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

#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    pub jobs: usize,
    pub avg_jct: f64,
    pub avg_wait: f64,
    pub avg_run: f64,
    pub p50_jct: f64,
    pub p95_jct: f64,
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
    pub longest_wait: f64,
}

/// `busy[f]` is the total busy time of flavor `f`'s slots, `slots[f]` its
/// slot count; `users` is the number of user indices.
pub fn compute(outcomes: &[JobOutcome], busy: &[f64], slots: &[usize], users: usize) -> Metrics {
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
    let mean_slowdowns: Vec<f64> = (0..users)
        .filter(|&u| count[u] > 0)
        .map(|u| slowdown_sum[u] / count[u] as f64)
        .collect();

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
        longest_wait: outcomes.iter().map(JobOutcome::wait).fold(0.0, f64::max),
    }
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
        };
        let m = compute(
            &[o(0, 0.0, 0.0, 10.0), o(1, 0.0, 10.0, 20.0)],
            &[20.0],
            &[1],
            2,
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
    }
}
