//! `fairmatch queue`: the live queue of a cluster as fairmatch plans it,
//! from `squeue` (so any user can run it): each job's flavor, its planned
//! start (the `StartTime` the plugin writes) and where each estimate came
//! from (its `Reason`). It answers "why is my job not running, and when
//! will it".

use super::{table, CliError, QueueArgs};
use fairmatch::slurm::reasons;
use serde::Serialize;
use std::process::Command;

/// squeue's fields, in this order, split at [`SEP`]. The reason goes last:
/// it is free text.
const FORMAT: &str = "%i\u{1f}%u\u{1f}%T\u{1f}%P\u{1f}%S\u{1f}%R";
const SEP: char = '\u{1f}';

/// One job as the queue shows it.
#[derive(Debug, PartialEq, Serialize)]
struct Row {
    job_id: String,
    user: String,
    state: String,
    /// Running: where it runs. Pending: the partitions it asked for.
    partition: String,
    /// Pending: the flavor the plan placed it on (a partition, or
    /// `partition:type`), when its reason names one.
    flavor: Option<String>,
    /// Running: when it started. Pending: the planned start, when the
    /// scheduler set one (seconds since the epoch).
    start: Option<i64>,
    /// Pending: the estimates the plan uses, `flavor=seconds (source)`.
    estimates: Vec<Estimate>,
    /// Pending: the reason; running: its nodes.
    reason: String,
}

#[derive(Debug, PartialEq, Serialize)]
struct Estimate {
    flavor: String,
    seconds: f64,
    /// hint, history, time limit, default, ...
    source: String,
}

pub fn run(args: QueueArgs) -> Result<(), CliError> {
    let mut cmd = Command::new(&args.squeue);
    cmd.env("SLURM_TIME_FORMAT", "%s")
        .args(["-h", "-t", "PD,R", "-o", FORMAT]);
    if let Some(user) = &args.user {
        cmd.args(["-u", user]);
    }
    let out = cmd.output().map_err(|e| {
        CliError::Run(format!(
            "cannot run {}: {e} (is Slurm's squeue on PATH? --squeue names it)",
            args.squeue
        ))
    })?;
    if !out.status.success() {
        return Err(CliError::Run(format!(
            "{} failed: {}",
            args.squeue,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let rows = parse(&String::from_utf8_lossy(&out.stdout));
    if args.json {
        let json = serde_json::to_string_pretty(&rows).map_err(|e| CliError::Run(e.to_string()))?;
        println!("{json}");
    } else {
        print!("{}", render(&rows));
    }
    Ok(())
}

/// squeue's lines in [`FORMAT`]; a line with too few fields is skipped.
fn parse(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.splitn(6, SEP).collect();
            let [id, user, state, partition, start, reason] = f[..] else {
                return None;
            };
            let reason = reason
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .unwrap_or(reason.trim());
            let pending = state == "PENDING";
            let (flavor, estimates) = if pending {
                planned(reason)
            } else {
                (None, Vec::new())
            };
            Some(Row {
                job_id: id.trim().into(),
                user: user.trim().into(),
                state: state.trim().into(),
                partition: partition.trim().into(),
                flavor,
                start: start.trim().parse().ok().filter(|&t: &i64| t > 0),
                estimates,
                reason: reason.into(),
            })
        })
        .collect()
}

/// The flavor and estimates in a reason the plugin wrote
/// ([`reasons::read_wait_reason`]).
fn planned(reason: &str) -> (Option<String>, Vec<Estimate>) {
    let read = reasons::read_wait_reason(reason).unwrap_or_default();
    let estimates = read
        .estimates
        .into_iter()
        .map(|(flavor, seconds, source)| Estimate {
            flavor,
            seconds,
            source,
        })
        .collect();
    (read.flavor, estimates)
}

fn render(rows: &[Row]) -> String {
    let header: Vec<String> = [
        "job",
        "user",
        "state",
        "partition",
        "flavor",
        "start",
        "estimates",
        "reason",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.job_id.clone(),
                r.user.clone(),
                r.state.clone(),
                r.partition.clone(),
                r.flavor.clone().unwrap_or_else(|| "-".into()),
                r.start.map_or("-".into(), |t| relative(t - now)),
                r.estimates
                    .iter()
                    .map(|e| format!("{}={}s ({})", e.flavor, e.seconds, e.source))
                    .collect::<Vec<_>>()
                    .join(" "),
                if r.estimates.is_empty() {
                    r.reason.clone()
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    let mut out = String::new();
    table::grid(&mut out, &header, &cells);
    out.push_str(
        "\nstart: when it started (running) or the plan's start for it (pending), from now. \
         Estimates and flavor come from the reason fairmatch gives a waiting job; a job \
         Slurm shows as waiting for Resources has its start but not them.\n",
    );
    out
}

/// `dt` seconds from now, as `in 5m`, `2h ago`.
fn relative(dt: i64) -> String {
    let a = dt.unsigned_abs();
    let text = if a < 120 {
        format!("{a}s")
    } else if a < 7200 {
        format!("{}m", a / 60)
    } else {
        format!("{:.1}h", a as f64 / 3600.0)
    };
    if dt >= 0 {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: [&str; 6]) -> String {
        fields.join("\u{1f}")
    }

    #[test]
    fn reads_the_plan_from_squeue() {
        let text = [
            line([
                "42",
                "alice",
                "PENDING",
                "cpu,gpu",
                "1780000000",
                "(fairmatch: queued for gpu:a100; cpu=30s (hint) gpu:a100=10.5s (time limit); hint: unknown flavor 'tpu')",
            ]),
            line(["43", "bob", "PENDING", "gpu", "N/A", "(Resources)"]),
            line(["44", "bob", "RUNNING", "gpu", "1779999000", "g1"]),
            "garbage".into(),
        ]
        .join("\n");
        let rows = parse(&text);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[0].flavor.as_deref(), Some("gpu:a100"));
        assert_eq!(rows[0].start, Some(1_780_000_000));
        assert_eq!(
            rows[0].estimates,
            vec![
                Estimate {
                    flavor: "cpu".into(),
                    seconds: 30.0,
                    source: "hint".into()
                },
                Estimate {
                    flavor: "gpu:a100".into(),
                    seconds: 10.5,
                    source: "time limit".into()
                },
            ]
        );
        assert_eq!((rows[1].flavor.as_ref(), rows[1].start), (None, None));
        assert_eq!(rows[1].reason, "Resources");
        assert_eq!(rows[2].start, Some(1_779_999_000));
        assert!(rows[2].estimates.is_empty());
        let shown = render(&rows);
        assert!(shown.contains("gpu:a100=10.5s (time limit)"), "{shown}");
    }

    #[test]
    fn relative_times() {
        assert_eq!(relative(30), "in 30s");
        assert_eq!(relative(-600), "10m ago");
        assert_eq!(relative(3 * 3600), "in 3.0h");
    }
}
