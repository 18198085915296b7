//! `--report DIR`: the comparison as a page a person can read. `index.html`
//! holds the tables and the charts inline, so it opens anywhere without a
//! server; the charts are also written as SVG files, and `report.json`
//! holds the runs as `simulate --json` prints them.

use super::run_report::{Report, RunReport};
use super::{charts, table, CliError};
use fairmatch::model::Scenario;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::path::Path;

/// `--report DIR`, for `simulate` and `compare` alike; says where the page
/// is on stderr, so stdout stays the table or the JSON.
pub fn write_if_asked(
    dir: Option<&Path>,
    name: &str,
    scenario: &Scenario,
    runs: &[RunReport],
) -> Result<(), CliError> {
    if let Some(dir) = dir {
        let page = write(dir, name, scenario, runs)?;
        eprintln!("report: {}", page.display());
    }
    Ok(())
}

/// Writes the report into `dir` (created if missing) and returns the path
/// of its page.
fn write(
    dir: &Path,
    name: &str,
    scenario: &Scenario,
    runs: &[RunReport],
) -> Result<std::path::PathBuf, CliError> {
    let io = |path: &Path, e: std::io::Error| CliError::Run(format!("{}: {e}", path.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut charts = vec![("jct.svg".to_string(), jct_chart(runs)?)];
    if let Some(svg) = waits_chart(runs)? {
        charts.push(("waits.svg".to_string(), svg));
    }
    if let Some(svg) = charts::distributions(runs)? {
        charts.push(("distributions.svg".to_string(), svg));
    }
    let flavors: Vec<&str> = scenario
        .cluster
        .flavors
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    if let Some(svg) = charts::utilisation(runs, &flavors)? {
        charts.push(("utilisation.svg".to_string(), svg));
    }
    if let Some(svg) = charts::per_user_slowdown(runs, &table::user_names(scenario))? {
        charts.push(("fairness.svg".to_string(), svg));
    }
    for (file, svg) in &charts {
        let path = dir.join(file);
        std::fs::write(&path, svg).map_err(|e| io(&path, e))?;
    }
    let doc = Report {
        workload: name,
        runs,
    };
    let json = serde_json::to_string_pretty(&doc).map_err(|e| CliError::Run(e.to_string()))?;
    let path = dir.join("report.json");
    std::fs::write(&path, json).map_err(|e| io(&path, e))?;
    let page = dir.join("index.html");
    std::fs::write(&page, html(name, scenario, runs, &charts)).map_err(|e| io(&page, e))?;
    Ok(page)
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn chart_error(e: impl std::fmt::Display) -> CliError {
    CliError::Run(format!("report chart: {e}"))
}

/// Average JCT per run, one horizontal bar each, best at the top, with
/// the p95 marked on the bar.
fn jct_chart(runs: &[RunReport]) -> Result<String, CliError> {
    let mut order: Vec<&RunReport> = runs.iter().collect();
    order.sort_by(|a, b| b.avg_jct.total_cmp(&a.avg_jct));
    let n = order.len() as i32;
    let top = order
        .iter()
        .map(|r| r.p95_jct.max(r.avg_jct))
        .fold(1.0, f64::max)
        * 1.05;
    let labels: Vec<String> = order.iter().map(|r| r.label.clone()).collect();
    let mut svg = String::new();
    {
        let height = 70 + 26 * order.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (820, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Average JCT per run (bar) and p95 (tick), seconds",
                ("sans-serif", 16),
            )
            .margin(10)
            .margin_right(40)
            .x_label_area_size(30)
            .y_label_area_size(120)
            // Plotters' integer ranges include their end: 0..n - 1 is n rows.
            .build_cartesian_2d(0.0..top, (0..n - 1).into_segmented())
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(order.len())
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_desc("seconds")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(chart_error)?;
        chart
            .draw_series(order.iter().enumerate().map(|(i, r)| {
                let i = i as i32;
                let mut bar = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(i)),
                        (r.avg_jct, SegmentValue::Exact(i + 1)),
                    ],
                    BLUE.mix(0.55).filled(),
                );
                bar.set_margin(4, 4, 0, 0);
                bar
            }))
            .map_err(chart_error)?;
        chart
            .draw_series(order.iter().enumerate().map(|(i, r)| {
                let i = i as i32;
                PathElement::new(
                    vec![
                        (r.p95_jct, SegmentValue::Exact(i)),
                        (r.p95_jct, SegmentValue::Exact(i + 1)),
                    ],
                    BLACK.stroke_width(2),
                )
            }))
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

/// Small multiples, one panel per run on the same axes: over the
/// workload's arrivals (first to last, 50 spans), the longest wait of the
/// jobs that arrived in each span, in hours, with the starvation bound as
/// a red line; on a log scale, so hours and months read on one axis
/// (waits under 36 s sit on its floor). `None` without runs.
fn waits_chart(runs: &[RunReport]) -> Result<Option<String>, CliError> {
    const FLOOR: f64 = 0.01;
    if runs.is_empty() {
        return Ok(None);
    }
    const COLUMNS: usize = 3;
    let rows = runs.len().div_ceil(COLUMNS);
    let hours = |s: f64| s / 3600.0;
    let bound = runs[0].starvation_bound;
    let top = runs
        .iter()
        .flat_map(|r| r.wait_series.iter().copied())
        .chain([bound])
        .fold(0.0, f64::max);
    let top = hours(top).max(1.0) * 1.05;
    let mut svg = String::new();
    {
        let height = 40 + 200 * rows as u32;
        let root = SVGBackend::with_string(&mut svg, (980, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let root = root
            .titled(
                "Longest wait (hours, log scale) of the jobs arriving in each span of the workload",
                ("sans-serif", 16),
            )
            .map_err(chart_error)?;
        let panels = root.split_evenly((rows, COLUMNS));
        for (r, panel) in runs.iter().zip(&panels) {
            let mut chart = ChartBuilder::on(panel)
                .caption(&r.label, ("sans-serif", 13))
                .margin(6)
                .x_label_area_size(22)
                .y_label_area_size(38)
                .build_cartesian_2d(0.0..100.0, (FLOOR..top).log_scale())
                .map_err(chart_error)?;
            chart
                .configure_mesh()
                .x_labels(5)
                .y_labels(5)
                .x_label_formatter(&|v| format!("{v:.0}%"))
                .y_label_formatter(&|v| {
                    if *v < 1.0 {
                        format!("{v:.2}")
                    } else {
                        format!("{v:.0}")
                    }
                })
                .draw()
                .map_err(chart_error)?;
            let step = 100.0 / r.wait_series.len().max(1) as f64;
            chart
                .draw_series(LineSeries::new(
                    r.wait_series
                        .iter()
                        .enumerate()
                        .map(|(k, &w)| ((k as f64 + 0.5) * step, hours(w).max(FLOOR))),
                    BLUE.stroke_width(2),
                ))
                .map_err(chart_error)?;
            chart
                .draw_series(LineSeries::new(
                    [(0.0, hours(bound)), (100.0, hours(bound))],
                    RED.stroke_width(1),
                ))
                .map_err(chart_error)?;
        }
        root.present().map_err(chart_error)?;
    }
    Ok(Some(svg))
}

fn html(
    name: &str,
    scenario: &Scenario,
    runs: &[RunReport],
    charts: &[(String, String)],
) -> String {
    let best = table::best_avg_jct(runs);
    let mut order: Vec<&RunReport> = runs.iter().collect();
    order.sort_by(|a, b| a.avg_jct.total_cmp(&b.avg_jct));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>fairmatch: {title}</title><style>\
         body{{font-family:sans-serif;margin:2em;font-size:15px}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:.9em}}\
         .wide{{overflow-x:auto}}\
         th,td{{border:1px solid #bbb;padding:.25em .6em;text-align:right}}\
         th:first-child,td:first-child{{text-align:left}}\
         th{{background:#eee}} tr.best td{{font-weight:bold}}\
         figure{{margin:1.5em 0}} .note{{color:#555;font-size:.9em}}\
         </style></head><body>\n<h1>fairmatch: {title}</h1>\n\
         <p>{jobs} jobs from {users} users on {cluster}. Times in seconds. \
         Runs sorted by average JCT; <em>vs best</em> is the run's average JCT \
         over the best one's.</p>\n",
        title = escape(name),
        jobs = scenario.workload.jobs.len(),
        users = scenario.workload.users.len(),
        cluster = escape(&table::cluster_summary(scenario)),
    );
    comparison_table(&mut out, scenario, &order, best);
    let bound = runs.first().map_or(0.0, |r| r.starvation_bound);
    let _ = writeln!(
        out,
        "<p class=\"note\">Jain: Jain's index over the users' mean slowdowns (a job's \
         slowdown is its JCT over its run time on its fastest flavor). rho: finish-time \
         fairness (Themis), a job's JCT over its time alone on a 1/N share; mean and \
         worst. Waits are the longest at a stretch: arrival to start, or preemption to \
         restart. starved: jobs that waited longer than {bound} s. preempted: \
         preemptions in all. Decision and wall times \
         are measured and vary between runs; everything else is deterministic.</p>"
    );
    for (file, svg) in charts {
        let _ = writeln!(
            out,
            "<figure>{svg}<figcaption class=\"note\">{}</figcaption></figure>",
            escape(file)
        );
    }
    let users = table::user_names(scenario);
    per_user_table(
        &mut out,
        "Average JCT per user (s)",
        &users,
        &order,
        1,
        |r| &r.per_user,
    );
    per_user_table(&mut out, "Mean slowdown per user", &users, &order, 2, |r| {
        &r.per_user_slowdown
    });
    out.push_str("</body></html>\n");
    out
}

/// Every figure of the text tables, one row per run, best first.
fn comparison_table(out: &mut String, scenario: &Scenario, order: &[&RunReport], best: f64) {
    let flavors = table::flavor_names(scenario);
    out.push_str("<h2>Comparison</h2>\n<div class=\"wide\"><table><tr>");
    for h in [
        "run",
        "avg JCT",
        "vs best",
        "avg wait",
        "p50",
        "p95",
        "p99",
        "makespan",
        "max wait",
        "p99 wait",
        "starved",
        "preempted",
        "Jain",
        "rho",
        "max rho",
    ] {
        let _ = write!(out, "<th>{h}</th>");
    }
    for f in &flavors {
        let _ = write!(out, "<th>util {}</th>", escape(f));
    }
    out.push_str("<th>decisions</th><th>ms / decision</th><th>wall s</th></tr>\n");
    for r in order {
        let class = if r.avg_jct == best {
            " class=\"best\""
        } else {
            ""
        };
        let ratio = table::ratio_to_best(r, best);
        let _ = write!(
            out,
            "<tr{class}><td>{}</td><td>{:.1}</td><td>{ratio:.2}x</td><td>{:.1}</td>\
             <td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td>\
             <td>{:.1}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.2}</td><td>{:.2}</td>",
            escape(&r.label),
            r.avg_jct,
            r.avg_wait,
            r.p50_jct,
            r.p95_jct,
            r.p99_jct,
            r.makespan,
            r.longest_wait,
            r.p99_wait,
            r.starved,
            r.preemptions,
            r.jain,
            r.rho_mean,
            r.rho_max,
        );
        for f in &flavors {
            match r.utilization.get(*f) {
                Some(u) => {
                    let _ = write!(out, "<td>{:.0}%</td>", u * 100.0);
                }
                None => out.push_str("<td>-</td>"),
            }
        }
        let _ = writeln!(
            out,
            "<td>{}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            r.decisions,
            r.decision_mean_seconds * 1e3,
            r.wall_seconds
        );
    }
    out.push_str("</table></div>\n");
}

/// One row per run, one column per user in the workload's order (as the
/// text table has them).
fn per_user_table(
    out: &mut String,
    title: &str,
    users: &[&str],
    runs: &[&RunReport],
    decimals: usize,
    values: impl Fn(&RunReport) -> &std::collections::BTreeMap<String, f64>,
) {
    if users.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h2>{}</h2>\n<div class=\"wide\"><table><tr><th>run</th>",
        escape(title)
    );
    for u in users {
        let _ = write!(out, "<th>{}</th>", escape(u));
    }
    out.push_str("</tr>\n");
    for r in runs {
        let _ = write!(out, "<tr><td>{}</td>", escape(&r.label));
        for u in users {
            match values(r).get(*u) {
                Some(v) => {
                    let _ = write!(out, "<td>{v:.decimals$}</td>");
                }
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}
