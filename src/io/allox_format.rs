//! The input format of AlloX's Java simulator (lenhattan86/allox_sim):
//!
//! ```text
//! # <job number> [comment words...]                  ignored
//! <numStages> <jobId> <numIterations> <arrival> <queueName>
//! <stage> <unused> <cpuCores> <memGB> <cpuTime> <gpus> <gpuMemGB> <gpuTime> <numTasks> [<cpuErr> <gpuErr>]
//! <numEdges>
//! ```
//!
//! Lines starting with `%` are comments. The queue is the user. Only
//! single-stage, single-task jobs without edges are accepted (all of the
//! published inputs are). The cluster has two flavors, `gpu` and `cpu`, with
//! slot counts given by the caller; the errors, when present, become
//! estimates `time * (1 + err)`.

use super::{parse_seconds, within_bound, InputError};
use crate::model::{Cluster, Flavor, Job, ModelError, User, Width, Workload};
use std::collections::{HashMap, HashSet};

/// How to read an AlloX input: its cluster and its time unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlloxOptions {
    /// Slots of the `gpu` flavor.
    pub gpu_slots: usize,
    /// Slots of the `cpu` flavor.
    pub cpu_slots: usize,
    /// Seconds per time unit of the file (1 for seconds, 60 for minutes).
    pub seconds_per_unit: f64,
}

/// Index of the `gpu` flavor in [`cluster`] and in every job's vectors.
pub const GPU: usize = 0;
/// Index of the `cpu` flavor in [`cluster`] and in every job's vectors.
pub const CPU: usize = 1;

/// The two-flavor cluster of AlloX's simulator; refused past
/// [`crate::model::MAX_SLOTS`] slots, or with none.
pub fn cluster(options: &AlloxOptions) -> Result<Cluster, ModelError> {
    Cluster::new(vec![
        Flavor {
            name: "gpu".into(),
            slots: options.gpu_slots,
            per_node: 1,
        },
        Flavor {
            name: "cpu".into(),
            slots: options.cpu_slots,
            per_node: 1,
        },
    ])
}

/// Reads an AlloX input; errors name the line. Jobs get the two flavors of
/// [`cluster`], in [`GPU`] and [`CPU`] order.
pub fn parse(file: &str, text: &str, options: &AlloxOptions) -> Result<Workload, InputError> {
    // Editors on Windows start UTF-8 files with a byte-order mark; the CSV
    // and YAML readers skip it too.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('%') && !l.starts_with('#'));
    let mut users: Vec<User> = Vec::new();
    let mut user_index: HashMap<String, usize> = HashMap::new();
    let mut jobs = Vec::new();
    let mut seen_ids: HashSet<String> = HashSet::new();
    let unit = options.seconds_per_unit;

    while let Some((line, head)) = lines.next() {
        let (name, arrival, queue) = read_job_line(file, line, head, unit, &mut seen_ids)?;
        let user = *user_index.entry(queue.to_string()).or_insert_with(|| {
            users.push(User {
                name: queue.to_string(),
                weight: 1.0,
            });
            users.len() - 1
        });
        let (line, stage) = lines.next().ok_or_else(|| {
            InputError::at(
                file,
                Some(line),
                format!("job {name}: missing its stage line"),
            )
        })?;
        let StageTimes {
            durations,
            estimates,
        } = read_stage_line(file, line, stage, unit)?;
        let (line, edges) = lines.next().ok_or_else(|| {
            InputError::at(
                file,
                Some(line),
                format!("job {name}: missing its edge count"),
            )
        })?;
        if edges != "0" {
            return Err(InputError::at(
                file,
                Some(line),
                format!("expected edge count 0 (single-stage jobs), found '{edges}'"),
            ));
        }
        jobs.push(Job {
            name,
            user,
            arrival,
            durations,
            estimates,
            width: Width::ONE,
        });
    }
    Ok(Workload { users, jobs })
}

/// A job's first line: its id (recorded in `seen_ids`, refused if already
/// there), its arrival in seconds, and its queue.
fn read_job_line<'a>(
    file: &str,
    line: usize,
    head: &'a str,
    unit: f64,
    seen_ids: &mut HashSet<String>,
) -> Result<(String, f64, &'a str), InputError> {
    let at = |m: String| InputError::at(file, Some(line), m);
    let f: Vec<&str> = head.split_whitespace().collect();
    if f.len() != 5 {
        return Err(at(format!(
            "expected '<numStages> <jobId> <numIterations> <arrival> <queueName>', found {} fields",
            f.len()
        )));
    }
    if f[0] != "1" {
        return Err(at(format!(
            "only single-stage jobs are supported, found {} stages",
            f[0]
        )));
    }
    let name = f[1].to_string();
    if !seen_ids.insert(name.clone()) {
        return Err(at(format!("job id '{name}' appears twice")));
    }
    let arrival = within_bound(
        parse_seconds(f[3], "arrival").map_err(at)? * unit,
        "arrival",
        f[3],
    )
    .map_err(at)?;
    Ok((name, arrival, f[4]))
}

/// A job's times per flavor, indexed by [`GPU`] and [`CPU`].
struct StageTimes {
    /// Seconds.
    durations: Vec<Option<f64>>,
    /// Seconds, when the stage line gives errors; `None` otherwise.
    estimates: Vec<Option<f64>>,
}

/// A job's stage line.
fn read_stage_line(
    file: &str,
    line: usize,
    stage: &str,
    unit: f64,
) -> Result<StageTimes, InputError> {
    let at = |m: String| InputError::at(file, Some(line), m);
    let s: Vec<&str> = stage.split_whitespace().collect();
    if s.len() != 9 && s.len() != 11 {
        return Err(at(format!(
            "expected a stage line of 9 or 11 fields, found {}",
            s.len()
        )));
    }
    if s[8] != "1" {
        return Err(at(format!(
            "only single-task stages are supported, found {} tasks",
            s[8]
        )));
    }
    let cpu = within_bound(
        parse_seconds(s[4], "cpuTime").map_err(at)? * unit,
        "cpuTime",
        s[4],
    )
    .map_err(at)?;
    let gpu = within_bound(
        parse_seconds(s[7], "gpuTime").map_err(at)? * unit,
        "gpuTime",
        s[7],
    )
    .map_err(at)?;
    let mut durations = vec![None; 2];
    durations[GPU] = Some(gpu);
    durations[CPU] = Some(cpu);
    let mut estimates = vec![None; 2];
    if s.len() == 11 {
        let err = |text: &str, what: &str| -> Result<f64, InputError> {
            text.parse::<f64>()
                .ok()
                .filter(|e| e.is_finite() && *e > -1.0)
                .ok_or_else(|| at(format!("{what}: '{text}' must be a number > -1")))
        };
        let cpu_est = cpu * (1.0 + err(s[9], "cpuErr")?);
        let gpu_est = gpu * (1.0 + err(s[10], "gpuErr")?);
        estimates[CPU] = Some(within_bound(cpu_est, "cpuTime with cpuErr", s[9]).map_err(at)?);
        estimates[GPU] = Some(within_bound(gpu_est, "gpuTime with gpuErr", s[10]).map_err(at)?);
    }
    Ok(StageTimes {
        durations,
        estimates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTIONS: AlloxOptions = AlloxOptions {
        gpu_slots: 4,
        cpu_slots: 8,
        seconds_per_unit: 60.0,
    };

    #[test]
    fn times_that_overflow_when_scaled_are_refused() {
        for text in [
            "1 j 1 1e307 u\n0 0 0 0 1 0 0 1 1\n0\n",
            "1 j 1 0 u\n0 0 0 0 1 0 0 1e307 1\n0\n",
            "1 j 1 0 u\n0 0 0 0 1 0 0 1e306 1 0 1e10\n0\n",
        ] {
            let e = parse("t", text, &OPTIONS).unwrap_err();
            assert!(e.message.contains("too large"), "{e}");
            assert_eq!(
                e.line,
                Some(if text.starts_with("1 j 1 1e") { 1 } else { 2 })
            );
        }
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_ids_are_unique() {
        let block = "1 0 1 2 queue0\nstage -1.0 32.0 14 97 1 2 49 1\n0\n";
        let w = parse("b.txt", &format!("\u{feff}# 0\n{block}"), &OPTIONS).unwrap();
        assert_eq!(w.jobs.len(), 1);
        let e = parse("b.txt", &format!("{block}{block}"), &OPTIONS).unwrap_err();
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("appears twice"), "{e}");
    }

    #[test]
    fn times_past_the_bound_are_refused() {
        // 1e17 s is representable but a 100 s job on top of it is not.
        for (text, line) in [
            ("1 j 1 1e17 u\n0 0 0 0 1 0 0 1 1\n0\n", 1),
            ("1 j 1 0 u\n0 0 0 0 1e300 0 0 1 1\n0\n", 2),
            ("1 j 1 2e8 u\n0 0 0 0 1 0 0 1 1\n0\n", 1), // 2e8 minutes
        ] {
            let e = parse("t", text, &OPTIONS).unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.message.contains("too large"), "{e}");
        }
        let bound = crate::model::MAX_SECONDS / 60.0;
        let text = format!("1 j 1 {bound} u\n0 0 0 0 1 0 0 1 1\n0\n");
        assert_eq!(parse("t", &text, &OPTIONS).unwrap().jobs[0].arrival, 1e10);
    }

    #[test]
    fn reads_blocks_and_scales_time() {
        let text = "% a comment\n# 0\n1 0 1 2 queue0\nstage -1.0 32.0 14 97 1 2 49 1\n0\n\
                    # 1\n1 1 1 3 queue1\nstage -1.0 32.0 1 90 1 2 26 1 0.5 -0.5\n0\n";
        let w = parse("a.txt", text, &OPTIONS).unwrap();
        assert_eq!(w.jobs.len(), 2);
        assert_eq!(w.jobs[0].arrival, 120.0);
        assert_eq!(
            w.jobs[0].durations,
            vec![Some(49.0 * 60.0), Some(97.0 * 60.0)]
        );
        assert_eq!(
            w.jobs[1].estimates,
            vec![Some(13.0 * 60.0), Some(135.0 * 60.0)]
        );
        assert_eq!(w.users[1].name, "queue1");
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse(
            "a.txt",
            "# 0\n1 0 1 0 queue0\nstage -1.0 32.0 14 x 1 2 49 1\n0\n",
            &OPTIONS,
        )
        .unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("cpuTime"), "{e}");
        let e = parse("a.txt", "1 0 1 0 queue0\n", &OPTIONS).unwrap_err();
        assert!(e.message.contains("missing its stage line"), "{e}");
        let e = parse("a.txt", "2 0 1 0 queue0\n", &OPTIONS).unwrap_err();
        assert_eq!(e.line, Some(1), "{e}");
    }

    #[test]
    fn bundled_workloads_parse() {
        let testbed = parse("testbed", crate::bundled::Bundled::Testbed.text(), &OPTIONS).unwrap();
        assert_eq!((testbed.jobs.len(), testbed.users.len()), (40, 4));
        let google = parse("google", crate::bundled::Bundled::Google.text(), &OPTIONS).unwrap();
        assert_eq!((google.jobs.len(), google.users.len()), (10_000, 10));
    }
}
