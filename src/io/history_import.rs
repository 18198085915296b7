//! A site's own history as fairmatch's inputs: Slurm's accounting
//! (`sacct --parsable2`) and the Standard Workload Format of the Parallel
//! Workloads Archive become a native workload and a cluster file, for
//! `compare` to replay under every policy (docs/formats.md, "Importing a
//! site's history").
//!
//! **Times per flavor.** A job ran on one flavor, and that run time is its
//! duration there. On the others it is that time times the speed ratio
//! learned from the same history (`slurm::history::History::speed_ratio`,
//! as the plugin learns it): the same job's runs on both, else its user's
//! jobs that ran on both, else everyone's. With no ratio at all the job may
//! not use the other flavor, since nothing in the history says how fast it
//! would be there. The scheduler is told the job's time limit where the
//! history has one (what Slurm's backfill plans with), else the duration.

use super::InputError;
use crate::model::Width;
use crate::slurm::history::History;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One job of the history.
#[derive(Clone, Debug, PartialEq)]
pub struct PastJob {
    /// Its id in the source.
    pub id: String,
    /// Its user.
    pub user: String,
    /// Its name (the executable in SWF), for learned speed ratios.
    pub name: String,
    /// When it was submitted, in seconds since the epoch (or the log's
    /// start).
    pub submit: f64,
    /// The flavor it ran on, an index into [`PastTrace::flavors`].
    pub flavor: usize,
    /// How long it ran, in seconds (> 0).
    pub elapsed: f64,
    /// Its time limit, in seconds, when it had one.
    pub limit: Option<f64>,
    /// What it held: slots per node, nodes.
    pub width: Width,
}

/// A flavor of the imported cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct PastFlavor {
    /// Its name: the partition, with the GPU type after a colon.
    pub name: String,
    /// Slots per node, and nodes.
    pub per_node: usize,
    /// Nodes of it.
    pub nodes: usize,
}

/// A history read from a log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PastTrace {
    /// The flavors its jobs ran on.
    pub flavors: Vec<PastFlavor>,
    /// Its jobs, by submit time.
    pub jobs: Vec<PastJob>,
    /// Records left out, by reason.
    pub skipped: BTreeMap<String, usize>,
}

impl PastTrace {
    /// The jobs submitted in `[from, from + span)` seconds after the first
    /// job's submit time.
    pub fn window(&mut self, from: f64, span: Option<f64>) {
        let Some(first) = self.jobs.iter().map(|j| j.submit).reduce(f64::min) else {
            return;
        };
        let (lo, hi) = (
            first + from,
            span.map_or(f64::INFINITY, |s| first + from + s),
        );
        let before = self.jobs.len();
        self.jobs.retain(|j| j.submit >= lo && j.submit < hi);
        let out = before - self.jobs.len();
        if out > 0 {
            *self
                .skipped
                .entry("outside the chosen days".into())
                .or_default() += out;
        }
    }

    /// Multiplies the time from the first submission to each other one by
    /// `factor`.
    pub fn scale_arrivals(&mut self, factor: f64) {
        let Some(first) = self.jobs.iter().map(|j| j.submit).reduce(f64::min) else {
            return;
        };
        for j in &mut self.jobs {
            j.submit = first + (j.submit - first) * factor;
        }
    }

    /// The native workload CSV and the cluster YAML of the history.
    pub fn to_inputs(&self) -> (String, String) {
        let mut history = History::default();
        for j in &self.jobs {
            history.record(&j.user, &j.name, &self.flavors[j.flavor].name, j.elapsed);
        }
        history.refresh_ratios();
        let first = self
            .jobs
            .iter()
            .map(|j| j.submit)
            .reduce(f64::min)
            .unwrap_or(0.0);
        let mut csv = String::from("job_id,user,arrival");
        for f in &self.flavors {
            let _ = write!(csv, ",duration_{}", f.name);
        }
        for f in &self.flavors {
            let _ = write!(csv, ",estimate_{}", f.name);
        }
        csv.push_str(",width,nodes\n");
        for j in &self.jobs {
            let ran_on = &self.flavors[j.flavor].name;
            let durations: Vec<Option<f64>> = self
                .flavors
                .iter()
                .enumerate()
                .map(|(f, flavor)| {
                    if f == j.flavor {
                        Some(j.elapsed)
                    } else if flavor.per_node < j.width.per_node || flavor.nodes < j.width.nodes {
                        None
                    } else {
                        history
                            .speed_ratio(&j.user, &j.name, &flavor.name, ran_on)
                            .map(|r| j.elapsed * r)
                    }
                })
                .collect();
            let _ = write!(csv, "{},{},{}", j.id, j.user, j.submit - first);
            for d in &durations {
                csv.push(',');
                if let Some(d) = d {
                    let _ = write!(csv, "{d}");
                }
            }
            // The limit stands for the run on the flavor it ran on, and
            // scales with the run elsewhere.
            for d in &durations {
                csv.push(',');
                if let (Some(d), Some(limit)) = (d, j.limit) {
                    let _ = write!(csv, "{}", limit.max(j.elapsed) * d / j.elapsed);
                }
            }
            let _ = writeln!(csv, ",{},{}", j.width.per_node, j.width.nodes);
        }
        let mut yaml = String::from("flavors:\n");
        for f in &self.flavors {
            let _ = writeln!(
                yaml,
                "  - {{name: \"{}\", slots: {}, per_node: {}}}",
                f.name,
                f.per_node * f.nodes,
                f.per_node
            );
        }
        (csv, yaml)
    }
}

/// Reads a log in the Standard Workload Format: 18 fields per job, `;`
/// header lines (`MaxNodes`, `MaxProcs`). The machine is one flavor,
/// `flavor`, of `MaxNodes` nodes with `MaxProcs / MaxNodes` slots each; a
/// job holds its allocated processors (the requested ones when those are
/// unknown) spread over as few nodes as hold them. Its time limit is its
/// requested time. Jobs without a run time or processors are skipped and
/// counted.
pub fn read_swf(file: &str, text: &str, flavor: &str) -> Result<PastTrace, InputError> {
    let err = |line: usize, message: String| InputError {
        file: file.to_string(),
        line: Some(line),
        message,
    };
    let mut max_nodes = None;
    let mut max_procs = None;
    let mut trace = PastTrace::default();
    let mut raw: Vec<(usize, Vec<f64>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if let Some(header) = line.strip_prefix(';') {
            if let Some((key, value)) = header.split_once(':') {
                let value = value.trim().parse::<usize>().ok();
                match key.trim() {
                    "MaxNodes" => max_nodes = value,
                    "MaxProcs" => max_procs = value,
                    _ => {}
                }
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let fields: Vec<f64> = line
            .split_whitespace()
            .map(|f| f.parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| err(n, "a field is not a finite number".into()))?;
        if fields.len() != 18 {
            return Err(err(n, format!("{} fields; SWF has 18", fields.len())));
        }
        raw.push((n, fields));
    }
    let procs = max_procs.or(max_nodes).ok_or_else(|| InputError {
        file: file.to_string(),
        line: None,
        message: "no '; MaxProcs:' or '; MaxNodes:' header: the machine's size is unknown".into(),
    })?;
    let nodes = max_nodes.unwrap_or(procs).clamp(1, procs.max(1));
    let per_node = (procs / nodes).max(1);
    trace.flavors.push(PastFlavor {
        name: flavor.to_string(),
        per_node,
        nodes,
    });
    for (n, f) in raw {
        let (submit, run, alloc, req_procs, req_time, user, exe) =
            (f[1], f[3], f[4], f[7], f[8], f[11], f[13]);
        let held = if alloc > 0.0 { alloc } else { req_procs };
        let skip = if run <= 0.0 {
            Some("no run time")
        } else if held <= 0.0 {
            Some("no processor count")
        } else if held as usize > per_node * nodes {
            Some("more processors than the machine")
        } else if !(0.0..=crate::model::MAX_SECONDS).contains(&submit) {
            Some("no submit time")
        } else {
            None
        };
        if let Some(why) = skip {
            *trace.skipped.entry(why.into()).or_default() += 1;
            continue;
        }
        if !run.is_finite() || run > crate::model::MAX_SECONDS {
            return Err(err(n, format!("run time {run} is out of range")));
        }
        trace.jobs.push(PastJob {
            id: format!("{}", f[0]),
            user: format!("u{user}"),
            name: format!("x{exe}"),
            submit,
            flavor: 0,
            elapsed: run,
            limit: (req_time > 0.0 && req_time <= crate::model::MAX_SECONDS).then_some(req_time),
            width: Width::spread(held as usize, per_node),
        });
    }
    trace.jobs.sort_by(|a, b| a.submit.total_cmp(&b.submit));
    Ok(trace)
}

/// The `sacct` fields [`read_sacct`] reads, in this order:
/// `sacct --allocations --parsable2 --noheader --format=` this.
pub const SACCT_FIELDS: &str =
    "JobID,User,JobName,Partition,Submit,Start,ElapsedRaw,TimelimitRaw,NNodes,AllocTRES,State";

/// Reads `sacct --allocations --parsable2 --noheader
/// --format=`[`SACCT_FIELDS`] (with or without its header line). A flavor
/// is a partition, or a partition and GPU type (`gres/gpu:TYPE` in
/// AllocTRES). A job holds its GPUs on each of its nodes, or one job slot
/// per node on a flavor without GPUs, as the plugin models them. The
/// history does not say how big the cluster was: each flavor gets the most
/// slots its jobs held at once, in nodes as wide as its widest job. Jobs
/// that never ran are skipped and counted; times are seconds since the
/// epoch (`SLURM_TIME_FORMAT=%s`), or ISO dates (`2026-12-04T10:00:00`,
/// read as UTC).
pub fn read_sacct(file: &str, text: &str) -> Result<PastTrace, InputError> {
    let err = |line: usize, message: String| InputError {
        file: file.to_string(),
        line: Some(line),
        message,
    };
    let mut trace = PastTrace::default();
    let mut flavor_index: BTreeMap<String, usize> = BTreeMap::new();
    // Per flavor: its jobs' runs and widest per node.
    let mut use_of: Vec<(Vec<Run>, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() || line.starts_with("JobID|") {
            continue;
        }
        let f = sacct_fields(line);
        if f.len() != 11 {
            return Err(err(
                n,
                format!(
                    "{} fields; expected the 11 of --format={SACCT_FIELDS}",
                    f.len()
                ),
            ));
        }
        let elapsed: f64 = f[6]
            .parse()
            .map_err(|_| err(n, format!("ElapsedRaw '{}' is not seconds", f[6])))?;
        let start = time(f[5]);
        if elapsed <= 0.0 || f[3].is_empty() || start.is_none() {
            *trace.skipped.entry("never ran".into()).or_default() += 1;
            continue;
        }
        if !(0.0..=crate::model::MAX_SECONDS).contains(&elapsed) {
            return Err(err(n, format!("ElapsedRaw {elapsed} is out of range")));
        }
        let submit =
            time(f[4]).ok_or_else(|| err(n, format!("Submit '{}' is not a time", f[4])))?;
        if (submit - start.unwrap_or(submit)).abs() > crate::model::MAX_SECONDS {
            return Err(err(n, "Submit and Start are too far apart".into()));
        }
        let limit = f[7].parse::<f64>().ok().map(|m| m * 60.0);
        let nodes: usize = f[8]
            .parse()
            .ok()
            .filter(|&k| k > 0 && k <= crate::model::MAX_SLOTS)
            .ok_or_else(|| err(n, format!("NNodes '{}' is not a node count", f[8])))?;
        let (gpus, gpu_type) = gpus(f[9]);
        if gpus > crate::model::MAX_SLOTS {
            return Err(err(n, format!("{gpus} GPUs is more than fairmatch models")));
        }
        let partition = f[3].split(',').next().unwrap_or(f[3]);
        let flavor_name = match (&gpu_type, gpus) {
            (Some(t), g) if g > 0 => format!("{partition}:{t}"),
            _ => partition.to_string(),
        };
        let per_node = if gpus > 0 { gpus.div_ceil(nodes) } else { 1 };
        let width = Width { per_node, nodes };
        let flavor = *flavor_index.entry(flavor_name.clone()).or_insert_with(|| {
            trace.flavors.push(PastFlavor {
                name: flavor_name,
                per_node: 1,
                nodes: 1,
            });
            use_of.push((Vec::new(), 1));
            trace.flavors.len() - 1
        });
        let start = start.expect("checked above");
        use_of[flavor]
            .0
            .push((start, start + elapsed, width.slots()));
        use_of[flavor].1 = use_of[flavor].1.max(per_node);
        trace.jobs.push(PastJob {
            id: f[0].to_string(),
            user: f[1].to_string(),
            name: f[2].to_string(),
            submit,
            flavor,
            elapsed,
            limit: limit.filter(|l| *l > 0.0 && *l <= crate::model::MAX_SECONDS),
            width,
        });
    }
    for (flavor, (runs, per_node)) in trace.flavors.iter_mut().zip(use_of) {
        flavor.per_node = per_node;
        flavor.nodes = peak(&runs).div_ceil(per_node).max(1);
    }
    trace.jobs.sort_by(|a, b| a.submit.total_cmp(&b.submit));
    Ok(trace)
}

/// A `--parsable2` line's fields. sacct does not escape a `|` in a job
/// name (the third field): the first two fields are split from the left,
/// the last eight from the right, and the name is what is left.
fn sacct_fields(line: &str) -> Vec<&str> {
    let mut left = line.splitn(3, '|');
    let (Some(id), Some(user), Some(rest)) = (left.next(), left.next(), left.next()) else {
        return line.split('|').collect();
    };
    let mut right: Vec<&str> = rest.rsplitn(9, '|').collect();
    if right.len() != 9 {
        return line.split('|').collect();
    }
    right.reverse();
    let mut f = vec![id, user];
    f.extend(right);
    f
}

/// A job's run: start, end, slots held.
type Run = (f64, f64, usize);

/// The most slots held at once by `runs`.
fn peak(runs: &[Run]) -> usize {
    let mut events: Vec<(f64, i64)> = Vec::with_capacity(2 * runs.len());
    for &(start, end, slots) in runs {
        events.push((start, slots as i64));
        events.push((end, -(slots as i64)));
    }
    // Ends before starts at the same instant: a slot freed is reused.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0i64, 0i64);
    for (_, delta) in events {
        now += delta;
        most = most.max(now);
    }
    most.max(0) as usize
}

/// `gres/gpu:a100=2,cpu=8,...` -> (GPUs, their type).
fn gpus(text: &str) -> (usize, Option<String>) {
    let (mut gpus, mut gpu_type) = (0, None);
    for item in text.split(',') {
        let Some((key, value)) = item.split_once('=') else {
            continue;
        };
        let count = value.parse::<usize>().unwrap_or(0);
        if key == "gres/gpu" {
            gpus = gpus.max(count);
        } else if let Some(t) = key.strip_prefix("gres/gpu:") {
            gpus = gpus.max(count);
            gpu_type = Some(t.to_string());
        }
    }
    (gpus, gpu_type)
}

/// Seconds since the epoch, or an ISO date and time read as UTC.
fn time(text: &str) -> Option<f64> {
    if let Ok(s) = text.parse::<f64>() {
        return (s.is_finite() && s.abs() < 1e12).then_some(s);
    }
    let (date, clock) = text.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let c: Vec<i64> = clock
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let ranges = [(0, 9999), (1, 12), (1, 31), (0, 23), (0, 59), (0, 60)];
    if d.len() != 3
        || c.len() != 3
        || !d
            .iter()
            .chain(&c)
            .zip(ranges)
            .all(|(v, (lo, hi))| (lo..=hi).contains(v))
    {
        return None;
    }
    Some((days_from_civil(d[0], d[1], d[2]) * 86_400 + c[0] * 3600 + c[1] * 60 + c[2]) as f64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swf_jobs_become_gangs_of_their_processors() {
        let text = "; MaxNodes: 8\n; MaxProcs: 8\n\
            1 0 -1 100 4 -1 -1 -1 -1 -1 1 3 1 7 -1 -1 -1 -1\n\
            2 50 -1 0 2 -1 -1 -1 -1 -1 1 3 1 7 -1 -1 -1 -1\n\
            3 60 -1 30 -1 -1 -1 2 90 -1 1 4 1 8 -1 -1 -1 -1\n";
        let t = read_swf("log.swf", text, "node").unwrap();
        assert_eq!(
            t.flavors[0],
            PastFlavor {
                name: "node".into(),
                per_node: 1,
                nodes: 8
            }
        );
        assert_eq!(t.jobs.len(), 2);
        assert_eq!(
            t.jobs[0].width,
            Width {
                per_node: 1,
                nodes: 4
            }
        );
        assert_eq!(t.jobs[1].limit, Some(90.0));
        assert_eq!(t.skipped["no run time"], 1);
        let (csv, yaml) = t.to_inputs();
        assert_eq!(
            csv,
            "job_id,user,arrival,duration_node,estimate_node,width,nodes\n\
             1,u3,0,100,,1,4\n3,u4,60,30,90,1,2\n"
        );
        assert_eq!(
            yaml,
            "flavors:\n  - {name: \"node\", slots: 8, per_node: 1}\n"
        );
        let bad = read_swf("log.swf", "; MaxNodes: 8\n1 2 3\n", "node").unwrap_err();
        assert_eq!((bad.line, bad.message.contains("18")), (Some(2), true));
    }

    #[test]
    fn sacct_times_on_other_flavors_come_from_learned_speed_ratios() {
        let text = "JobID|User|JobName|Partition|Submit|Start|ElapsedRaw|TimelimitRaw|NNodes|AllocTRES|State\n\
            10|ann|train|gpu|2026-12-04T10:00:00|2026-12-04T10:00:00|100|5|1|cpu=1,gres/gpu:a100=1,gres/gpu=1|COMPLETED\n\
            11|ann|train|cpu|2026-12-04T10:00:10|2026-12-04T10:00:10|300|10|1|cpu=4|COMPLETED\n\
            12|ann|eval|gpu|2026-12-04T10:00:20|2026-12-04T10:00:20|50|1|1|cpu=1,gres/gpu:a100=2,gres/gpu=2|COMPLETED\n\
            13|bob|x|cpu|2026-12-04T10:01:00|Unknown|0||1||CANCELLED by 0\n";
        let t = read_sacct("sacct.txt", text).unwrap();
        let names: Vec<&str> = t.flavors.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["gpu:a100", "cpu"]);
        // Jobs 10 and 12 ran at once on GPUs: 3 GPUs, in nodes of 2.
        assert_eq!(
            t.flavors[0],
            PastFlavor {
                name: "gpu:a100".into(),
                per_node: 2,
                nodes: 2
            }
        );
        assert_eq!(
            t.flavors[1],
            PastFlavor {
                name: "cpu".into(),
                per_node: 1,
                nodes: 1
            }
        );
        assert_eq!(t.skipped["never ran"], 1);
        let (csv, _) = t.to_inputs();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "job_id,user,arrival,duration_gpu:a100,duration_cpu,estimate_gpu:a100,estimate_cpu,width,nodes"
        );
        // train: 100 s on a GPU, 300 s on a CPU slot, so 3x. eval ran on
        // two GPUs only: no CPU node is that wide. Limits scale with runs.
        assert_eq!(lines[1], "10,ann,0,100,300,300,900,1,1");
        assert_eq!(lines[2], "11,ann,10,100,300,200,600,1,1");
        assert_eq!(lines[3], "12,ann,20,50,,60,,2,1");
        assert_eq!(time("1970-01-02T00:00:01"), Some(86_401.0));
        assert_eq!(time("86401"), Some(86_401.0));
        let piped = "20|ann|a|b|cpu|100|100|5|1|1|cpu=1|COMPLETED\n";
        let t = read_sacct("s.txt", piped).unwrap();
        assert_eq!(t.jobs[0].name, "a|b");
        for hostile in [
            "21|a|b|cpu|99999999-01-01T00:00:00|100|5|1|1|cpu=1|COMPLETED\n",
            "22|a|b|cpu|100|100|5|1|99999999999999999999|cpu=1|COMPLETED\n",
            "23|a|b|cpu|100|100|5|1|1|gres/gpu=99999999999999|COMPLETED\n",
            "24|a|b|cpu|inf|100|5|1|1|cpu=1|COMPLETED\n",
            "25|a|b|cpu|1e300|100|5|1|1|cpu=1|COMPLETED\n",
        ] {
            assert!(read_sacct("s.txt", hostile).is_err(), "{hostile}");
        }
        let swf = read_swf(
            "l",
            "; MaxNodes: 4\n1 0 -1 10 nan -1 -1 -1 -1 -1 1 1 1 1 -1 -1 -1 -1\n",
            "n",
        );
        assert!(swf.is_err());
        let bad = read_sacct("s.txt", "1|a|b\n").unwrap_err();
        assert_eq!((bad.file.as_str(), bad.line), ("s.txt", Some(1)));
    }
}
