//! What a run of the simulator reports: per policy, the metrics the
//! tables, `--json` and the HTML report show.

use fairmatch::metrics::Metrics;
use fairmatch::model::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;

/// The document `--json` prints and `--report` saves.
#[derive(Serialize)]
pub(super) struct Report<'a> {
    pub workload: &'a str,
    pub runs: &'a [RunReport],
}

#[derive(Serialize)]
pub(super) struct RunReport {
    pub policy: String,
    pub label: String,
    pub alpha: Option<f64>,
    pub jobs: usize,
    pub avg_jct: f64,
    pub avg_wait: f64,
    pub avg_run: f64,
    pub p50_jct: f64,
    pub p95_jct: f64,
    pub p99_jct: f64,
    pub makespan: f64,
    pub jain: f64,
    /// The longest wait at a stretch: arrival to start, or preemption to
    /// restart.
    pub longest_wait: f64,
    pub p99_wait: f64,
    /// Preemptions over all jobs.
    pub preemptions: u64,
    pub utilization: BTreeMap<String, f64>,
    pub per_user: BTreeMap<String, f64>,
    pub decisions: usize,
    /// Finish-time fairness: JCT over the time alone on a 1/N share.
    pub rho_mean: f64,
    pub rho_max: f64,
    pub starvation_bound: f64,
    /// Jobs that waited longer than `starvation_bound`.
    pub starved: usize,
    pub per_user_slowdown: BTreeMap<String, f64>,
    /// Jobs that did not start on arrival; of those, the ones the policy
    /// forecast a start for before they started (only planning policies
    /// do), and the median and 90th percentile of `|start - forecast|`
    /// over them, with the first forecast each got.
    pub waited: usize,
    pub forecast: usize,
    pub forecast_median_error: f64,
    pub forecast_p90_error: f64,
    /// Per flavor: the share of its slots busy in each of 50 equal spans
    /// from the first arrival to the last finish.
    pub utilization_series: BTreeMap<String, Vec<f64>>,
    /// The longest wait of the jobs that arrived in each of 50 equal spans
    /// from the first arrival to the last.
    pub wait_series: Vec<f64>,
    /// The distribution of the jobs' JCTs and waits: the 0th, 1st, ...,
    /// 100th percentiles (101 values; empty without jobs).
    pub jct_percentiles: Vec<f64>,
    pub wait_percentiles: Vec<f64>,
    /// Wall time per decision, mean and max (measured: varies by run).
    pub decision_mean_seconds: f64,
    pub decision_max_seconds: f64,
    /// Wall time of the whole simulation (measured: varies by run; runs
    /// share the machine's cores with each other).
    pub wall_seconds: f64,
}

/// The 0th to 100th percentiles of `values` (nearest rank), or nothing.
pub(super) fn percentiles(mut values: Vec<f64>) -> Vec<f64> {
    if values.is_empty() {
        return Vec::new();
    }
    values.sort_by(f64::total_cmp);
    let last = values.len() - 1;
    (0..=100).map(|p| values[(p * last + 50) / 100]).collect()
}

/// What one `simulate` or `compare` run produced.
pub(super) struct Runs {
    pub name: String,
    pub scenario: Scenario,
    pub runs: Vec<RunReport>,
}

impl RunReport {
    /// The report of one run of `policy` (at `alpha`, where it has one) on
    /// `scenario`, from its metrics. The measured times are 0 until the caller
    /// fills them in.
    pub fn new(
        scenario: &Scenario,
        policy: &str,
        alpha: Option<f64>,
        label: String,
        m: &Metrics,
        decisions: usize,
    ) -> RunReport {
        let flavors = &scenario.cluster.flavors;
        let users = &scenario.workload.users;
        RunReport {
            policy: policy.into(),
            label,
            alpha,
            jobs: m.jobs,
            avg_jct: m.avg_jct,
            avg_wait: m.avg_wait,
            avg_run: m.avg_run,
            p50_jct: m.p50_jct,
            p95_jct: m.p95_jct,
            p99_jct: m.p99_jct,
            makespan: m.makespan,
            jain: m.jain,
            longest_wait: m.longest_wait,
            p99_wait: m.p99_wait,
            preemptions: m.preemptions,
            utilization: flavors
                .iter()
                .zip(&m.utilization)
                .filter_map(|(f, u)| u.map(|u| (f.name.clone(), u)))
                .collect(),
            per_user: users
                .iter()
                .zip(&m.per_user_jct)
                .filter_map(|(u, j)| j.map(|j| (u.name.clone(), j)))
                .collect(),
            decisions,
            rho_mean: m.rho_mean,
            rho_max: m.rho_max,
            starvation_bound: 0.0,
            starved: m.starved,
            waited: m.forecasts.waited,
            forecast: m.forecasts.forecast,
            forecast_median_error: m.forecasts.median_error,
            forecast_p90_error: m.forecasts.p90_error,
            per_user_slowdown: users
                .iter()
                .zip(&m.per_user_slowdown)
                .filter_map(|(u, s)| s.map(|s| (u.name.clone(), s)))
                .collect(),
            utilization_series: flavors
                .iter()
                .zip(&m.utilization_series)
                .filter(|(_, s)| !s.is_empty())
                .map(|(f, s)| (f.name.clone(), s.clone()))
                .collect(),
            wait_series: m.wait_series.clone(),
            jct_percentiles: Vec::new(),
            wait_percentiles: Vec::new(),
            decision_mean_seconds: 0.0,
            decision_max_seconds: 0.0,
            wall_seconds: 0.0,
        }
    }
}
