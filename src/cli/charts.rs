//! The report's small-multiple charts: one panel per run, every panel on
//! the same axes, so runs compare at a glance without thirteen overlaid
//! lines in recycled colours.

use super::run_report::RunReport;
use plotters::prelude::*;

/// Panels per row.
const COLUMNS: usize = 3;
/// Pixels per panel row, and the page width.
const ROW: u32 = 190;
const WIDTH: u32 = 980;

fn chart_error(e: impl std::fmt::Display) -> super::CliError {
    super::CliError::Run(format!("chart: {e}"))
}

/// A distinct colour per series index (few series: flavors, or two
/// distributions), never recycled within a chart of up to ten.
fn colour(i: usize) -> RGBColor {
    const TABLEAU: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    TABLEAU[i % TABLEAU.len()]
}

/// The legend of `names`, as a title suffix: "a (blue), b (orange)".
fn legend(names: &[&str]) -> String {
    const WORDS: [&str; 10] = [
        "blue", "orange", "green", "red", "purple", "brown", "pink", "grey", "olive", "cyan",
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{n} ({})", WORDS[i % WORDS.len()]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Busy share of each flavor over time, on one time axis for every run:
/// hours from the first arrival to the latest finish of any run, one line
/// per flavor. `None` without a series.
pub fn utilisation(
    runs: &[RunReport],
    flavors: &[&str],
) -> Result<Option<String>, super::CliError> {
    let shown: Vec<&str> = flavors
        .iter()
        .copied()
        .filter(|f| runs.iter().any(|r| r.utilization_series.contains_key(*f)))
        .collect();
    if runs.is_empty() || shown.is_empty() {
        return Ok(None);
    }
    let hours = |s: f64| s / 3600.0;
    let end = runs
        .iter()
        .map(|r| hours(r.makespan))
        .fold(0.0, f64::max)
        .max(1e-6);
    let title = format!(
        "Share of slots busy, % (hours from the first arrival; every run on one axis): {}",
        legend(&shown)
    );
    let svg = panels(runs, &title, |r, area| {
        let mut chart = ChartBuilder::on(area)
            .caption(&r.label, ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(22)
            .y_label_area_size(34)
            .build_cartesian_2d(0.0..end, 0.0..100.0)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .x_labels(5)
            .y_labels(5)
            .x_label_formatter(&|v| format!("{v:.1}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(chart_error)?;
        for (i, flavor) in shown.iter().enumerate() {
            let Some(points) = r.utilization_series.get(*flavor) else {
                continue;
            };
            let step = hours(r.makespan) / points.len().max(1) as f64;
            chart
                .draw_series(LineSeries::new(
                    points
                        .iter()
                        .enumerate()
                        .map(|(k, share)| ((k as f64 + 0.5) * step, share * 100.0)),
                    colour(i).stroke_width(2),
                ))
                .map_err(chart_error)?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

/// The distribution of JCTs and of waits per run: the share of jobs
/// (y, %) done within x seconds (log scale), JCT in blue and the longest
/// wait in orange, every panel on the same axes. `None` without
/// distributions.
pub fn distributions(runs: &[RunReport]) -> Result<Option<String>, super::CliError> {
    const FLOOR: f64 = 1.0;
    if runs.iter().all(|r| r.jct_percentiles.is_empty()) {
        return Ok(None);
    }
    let top = runs
        .iter()
        .flat_map(|r| r.jct_percentiles.iter().chain(&r.wait_percentiles))
        .fold(FLOOR * 10.0, |a, &b| a.max(b))
        * 1.2;
    let title = format!(
        "Jobs (%) whose JCT or longest wait is at most x seconds (log scale): {}",
        legend(&["JCT", "wait"])
    );
    let svg = panels(runs, &title, |r, area| {
        let mut chart = ChartBuilder::on(area)
            .caption(&r.label, ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(22)
            .y_label_area_size(34)
            .build_cartesian_2d((FLOOR..top).log_scale(), 0.0..100.0)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .x_labels(4)
            .y_labels(5)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(chart_error)?;
        for (i, values) in [&r.jct_percentiles, &r.wait_percentiles].iter().enumerate() {
            chart
                .draw_series(LineSeries::new(
                    values
                        .iter()
                        .enumerate()
                        .map(|(p, &v)| (v.max(FLOOR), p as f64)),
                    colour(i).stroke_width(2),
                ))
                .map_err(chart_error)?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

/// Per-user fairness: each user's mean slowdown (JCT over the run time on
/// its fastest flavor) per run, one bar per user in the same order in
/// every panel, on one log axis; equal bars are a fair run. At most 40
/// users (the first by name). `None` without users.
pub fn per_user_slowdown(
    runs: &[RunReport],
    users: &[&str],
) -> Result<Option<String>, super::CliError> {
    let users: Vec<&str> = users.iter().copied().take(40).collect();
    if runs.is_empty() || users.is_empty() {
        return Ok(None);
    }
    let top = runs
        .iter()
        .flat_map(|r| r.per_user_slowdown.values())
        .fold(2.0, |a: f64, &b| a.max(b))
        * 1.2;
    let n = users.len();
    let title = format!(
        "Mean slowdown per user (log scale; users left to right by name, {n} shown): \
         equal bars are a fair run"
    );
    let svg = panels(runs, &title, |r, area| {
        let mut chart = ChartBuilder::on(area)
            .caption(&r.label, ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(10)
            .y_label_area_size(34)
            .build_cartesian_2d(0.0..n as f64, (1.0..top).log_scale())
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(4)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(chart_error)?;
        chart
            .draw_series(users.iter().enumerate().filter_map(|(i, u)| {
                let s = *r.per_user_slowdown.get(*u)?;
                let x = i as f64;
                Some(Rectangle::new(
                    [(x + 0.1, 1.0), (x + 0.9, s.max(1.0))],
                    colour(0).mix(0.7).filled(),
                ))
            }))
            .map_err(chart_error)?;
        Ok(())
    })?;
    Ok(Some(svg))
}

/// `runs` as panels of [`COLUMNS`] per row under `title`, each drawn by
/// `draw`.
fn panels(
    runs: &[RunReport],
    title: &str,
    mut draw: impl FnMut(
        &RunReport,
        &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    ) -> Result<(), super::CliError>,
) -> Result<String, super::CliError> {
    let rows = runs.len().div_ceil(COLUMNS).max(1);
    let mut svg = String::new();
    {
        let height = 40 + ROW * rows as u32;
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let root = root
            .titled(title, ("sans-serif", 15))
            .map_err(chart_error)?;
        let areas = root.split_evenly((rows, COLUMNS));
        for (r, area) in runs.iter().zip(&areas) {
            draw(r, area)?;
        }
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}
