//! `fairmatch estimates`: how good the plugin's learned run times are,
//! from the state file it saves (`slurm::saved_state`).

use super::{CliError, EstimatesArgs};
use fairmatch::slurm::history::{HistoryEntry, TRUSTED_RUNS};
use fairmatch::slurm::saved_state;
use serde::Serialize;
use std::collections::BTreeMap;

/// One row: a user and flavor (a partition, or `partition:type`), or one
/// job of theirs.
#[derive(Debug, Serialize)]
struct Row {
    user: String,
    /// The job name, with `--per-job`.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    flavor: String,
    /// Jobs (user, name) learned, and runs in all.
    jobs: usize,
    runs: u64,
    /// Jobs with enough runs to be trusted over a time limit.
    trusted_jobs: usize,
    /// Runs seen while an estimate existed, and the mean of
    /// `|estimate - run| / run` over them (`None` without any).
    judged: u64,
    mean_error: Option<f64>,
}

pub fn run(args: EstimatesArgs) -> Result<(), CliError> {
    let path = args.state.display().to_string();
    let text = std::fs::read_to_string(&args.state)
        .map_err(|e| CliError::Input(format!("{path}: {e}")))?;
    let state = saved_state::decode(&text).map_err(|e| CliError::Input(format!("{path}: {e}")))?;
    let rows = rows(&state.history, args.per_job);
    if args.json {
        let json = serde_json::to_string_pretty(&rows).map_err(|e| CliError::Run(e.to_string()))?;
        println!("{json}");
    } else {
        print!("{}", table(&rows, args.per_job));
        println!(
            "{} learned jobs; a mean is trusted over a time limit after {TRUSTED_RUNS} runs. \
             Error: |estimate - run| / run, for each run learned once an estimate existed.",
            state.history.len()
        );
    }
    Ok(())
}

fn rows(history: &[HistoryEntry], per_job: bool) -> Vec<Row> {
    let mut groups: BTreeMap<(String, String, String), Vec<&HistoryEntry>> = BTreeMap::new();
    for e in history {
        let name = if per_job {
            e.name.clone()
        } else {
            String::new()
        };
        groups
            .entry((e.user.clone(), e.flavor.clone(), name))
            .or_default()
            .push(e);
    }
    groups
        .into_iter()
        .map(|((user, flavor, name), entries)| {
            let judged: u64 = entries.iter().map(|e| e.judged).sum();
            let error: f64 = entries.iter().map(|e| e.error_sum).sum();
            Row {
                user,
                name: per_job.then_some(name),
                flavor,
                jobs: entries.len(),
                runs: entries.iter().map(|e| e.count).sum(),
                trusted_jobs: entries.iter().filter(|e| e.count >= TRUSTED_RUNS).count(),
                judged,
                mean_error: (judged > 0).then(|| error / judged as f64),
            }
        })
        .collect()
}

fn table(rows: &[Row], per_job: bool) -> String {
    let mut lines = vec![{
        let mut h = vec!["user"];
        if per_job {
            h.push("job");
        }
        h.extend(["flavor", "jobs", "runs", "trusted", "judged", "mean error"]);
        h.into_iter().map(String::from).collect::<Vec<_>>()
    }];
    for r in rows {
        let mut l = vec![r.user.clone()];
        if let Some(name) = &r.name {
            l.push(name.clone());
        }
        l.extend([
            r.flavor.clone(),
            r.jobs.to_string(),
            r.runs.to_string(),
            r.trusted_jobs.to_string(),
            r.judged.to_string(),
            r.mean_error
                .map_or("-".to_string(), |e| format!("{:.1}%", 100.0 * e)),
        ]);
        lines.push(l);
    }
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 0 || (per_job && i == 1) || i == l.len() - 6 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
