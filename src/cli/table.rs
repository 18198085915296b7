//! Plain-text rendering of a comparison.

use super::run_report::RunReport;
use fairmatch::model::Scenario;
use std::fmt::Write;

/// The smallest average JCT among `runs`, the yardstick of `vs best`.
pub(super) fn best_avg_jct(runs: &[RunReport]) -> f64 {
    runs.iter().map(|r| r.avg_jct).fold(f64::INFINITY, f64::min)
}

/// A run's average JCT over the best one's (1 when the best is 0: a
/// workload whose jobs take no time).
pub(super) fn ratio_to_best(run: &RunReport, best: f64) -> f64 {
    if best > 0.0 {
        run.avg_jct / best
    } else {
        1.0
    }
}

/// The cluster in a few words: `4 gpu + 8 cpu`.
pub(super) fn cluster_summary(scenario: &Scenario) -> String {
    let parts: Vec<String> = scenario
        .cluster
        .flavors
        .iter()
        .map(|f| format!("{} {}", f.slots, f.name))
        .collect();
    parts.join(" + ")
}

/// Users in the workload's order, the order every per-user table keeps.
pub(super) fn user_names(scenario: &Scenario) -> Vec<&str> {
    scenario
        .workload
        .users
        .iter()
        .map(|u| u.name.as_str())
        .collect()
}

pub(super) fn flavor_names(scenario: &Scenario) -> Vec<&str> {
    scenario
        .cluster
        .flavors
        .iter()
        .map(|f| f.name.as_str())
        .collect()
}

pub fn render(name: &str, scenario: &Scenario, runs: &[RunReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: {} jobs, {} users on {}. Times in seconds.\n",
        scenario.workload.jobs.len(),
        scenario.workload.users.len(),
        cluster_summary(scenario)
    );
    let flavors = flavor_names(scenario);
    let mut header = vec![
        "policy".to_string(),
        "avg JCT".into(),
        "avg wait".into(),
        "avg run".into(),
        "p50".into(),
        "p95".into(),
        "p99".into(),
        "makespan".into(),
        "max wait".into(),
        "p99 wait".into(),
        "starved".into(),
        "preempted".into(),
        "Jain".into(),
        "rho".into(),
        "max rho".into(),
    ];
    header.extend(flavors.iter().map(|f| format!("util {f}")));
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = vec![
                r.label.clone(),
                secs(r.avg_jct),
                secs(r.avg_wait),
                secs(r.avg_run),
                secs(r.p50_jct),
                secs(r.p95_jct),
                secs(r.p99_jct),
                secs(r.makespan),
                secs(r.longest_wait),
                secs(r.p99_wait),
                r.starved.to_string(),
                r.preemptions.to_string(),
                format!("{:.3}", r.jain),
                format!("{:.2}", r.rho_mean),
                format!("{:.2}", r.rho_max),
            ];
            row.extend(flavors.iter().map(|f| {
                r.utilization
                    .get(*f)
                    .map_or("-".into(), |u| format!("{:.0}%", 100.0 * u))
            }));
            row
        })
        .collect();
    grid(&mut out, &header, &rows);

    let users = user_names(scenario);
    let _ = writeln!(out, "\nAverage JCT per user (s):");
    let mut header = vec!["policy".to_string()];
    header.extend(users.iter().map(|u| u.to_string()));
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = vec![r.label.clone()];
            row.extend(
                users
                    .iter()
                    .map(|u| r.per_user.get(*u).map_or("-".into(), |&j| secs(j))),
            );
            row
        })
        .collect();
    grid(&mut out, &header, &rows);

    let _ = writeln!(out, "\nMean slowdown per user:");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = vec![r.label.clone()];
            row.extend(users.iter().map(|u| {
                r.per_user_slowdown
                    .get(*u)
                    .map_or("-".into(), |s| format!("{s:.2}"))
            }));
            row
        })
        .collect();
    grid(&mut out, &header, &rows);

    let _ = writeln!(
        out,
        "\nA job waiting over {} s counts as starved. rho: JCT over the time alone on a 1/N share (Themis).",
        runs.first().map_or(0.0, |r| r.starvation_bound)
    );
    out
}

fn secs(x: f64) -> String {
    format!("{x:.1}")
}

/// Left-aligned first column, right-aligned numbers.
pub(super) fn grid(out: &mut String, header: &[String], rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].len())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |out: &mut String, cells: &[String]| {
        for (c, cell) in cells.iter().enumerate() {
            let sep = if c == 0 { "" } else { "  " };
            if c == 0 {
                let _ = write!(out, "{sep}{cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(out, "{sep}{cell:>w$}", w = widths[c]);
            }
        }
        out.push('\n');
    };
    line(out, header);
    let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    line(out, &rule);
    for r in rows {
        line(out, r);
    }
}
