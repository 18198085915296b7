//! The native workload file: a CSV with the header
//! `job_id,user,arrival,duration_<flavor>...[,estimate_<flavor>...][,width][,nodes]`.
//!
//! There is one `duration_` column per flavor of the cluster, in any order.
//! An empty duration means the job cannot run on that flavor; an empty
//! estimate means "use the duration". Times are seconds, at the job's
//! width. `width` is the slots (GPUs) the job needs on each node and
//! `nodes` how many nodes, both 1 when absent or empty.

use super::{parse_seconds, InputError};
use crate::model::{Cluster, Job, User, Width, Workload};
use std::collections::{HashMap, HashSet};

/// Reads a native workload for `cluster`; `weights` give listed users a weight,
/// others weigh 1. Errors name the line.
pub fn parse(
    file: &str,
    text: &str,
    cluster: &Cluster,
    weights: &[(String, f64)],
) -> Result<Workload, InputError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let err = |line: Option<u64>, msg: String| InputError::at(file, line.map(|l| l as usize), msg);
    let header = reader
        .headers()
        .map_err(|e| err(e.position().map(|p| p.line()), e.to_string()))?
        .clone();
    let columns = Columns::new(&header, cluster).map_err(|m| err(Some(1), m))?;

    let mut users: Vec<User> = Vec::new();
    let mut user_index: HashMap<String, usize> = HashMap::new();
    let mut seen_ids: HashSet<String> = HashSet::new();
    let mut jobs = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| err(e.position().map(|p| p.line()), csv_message(&e)))?;
        let line = record.position().map(|p| p.line());
        let at = |m: String| err(line, m);
        let id = record[columns.job_id].to_string();
        if id.is_empty() {
            return Err(at("job_id is empty".into()));
        }
        if !seen_ids.insert(id.clone()) {
            return Err(at(format!("job_id '{id}' appears twice")));
        }
        let user_name = &record[columns.user];
        if user_name.is_empty() {
            return Err(at("user is empty".into()));
        }
        let user = *user_index.entry(user_name.to_string()).or_insert_with(|| {
            let weight = weights
                .iter()
                .find(|(n, _)| n == user_name)
                .map_or(1.0, |(_, w)| *w);
            users.push(User {
                name: user_name.to_string(),
                weight,
            });
            users.len() - 1
        });
        let arrival = parse_seconds(&record[columns.arrival], "arrival").map_err(at)?;
        let cell = |col: Option<usize>, what: &str| -> Result<Option<f64>, InputError> {
            match col.map(|c| &record[c]) {
                None | Some("") => Ok(None),
                Some(text) => parse_seconds(text, what)
                    .map(Some)
                    .map_err(|m| err(line, m)),
            }
        };
        let mut durations = Vec::with_capacity(cluster.flavors.len());
        let mut estimates = Vec::with_capacity(cluster.flavors.len());
        for (f, flavor) in cluster.flavors.iter().enumerate() {
            let d = cell(
                Some(columns.duration[f]),
                &format!("duration_{}", flavor.name),
            )?;
            let e = cell(columns.estimate[f], &format!("estimate_{}", flavor.name))?;
            if d.is_none() && e.is_some() {
                return Err(at(format!(
                    "estimate_{0} given but duration_{0} is empty (the job cannot run there)",
                    flavor.name
                )));
            }
            durations.push(d);
            estimates.push(e);
        }
        let count = |col: Option<usize>, what: &str| -> Result<usize, InputError> {
            match col.map(|c| &record[c]) {
                None | Some("") => Ok(1),
                Some(text) => text
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| at(format!("{what} '{text}' is not a whole number >= 1"))),
            }
        };
        let width = Width::new(
            count(columns.width, "width")?,
            count(columns.nodes, "nodes")?,
        )
        .map_err(|e| at(e.to_string()))?;
        let job = Job {
            name: id,
            user,
            arrival,
            durations,
            estimates,
            width,
        };
        if job.fastest_flavor(cluster).is_none() {
            return Err(at(format!(
                "job '{}' has no duration on any flavor with slots{}",
                job.name,
                if width.is_one() {
                    String::new()
                } else {
                    format!(" and nodes of at least {width} slots")
                }
            )));
        }
        jobs.push(job);
    }
    Ok(Workload { users, jobs })
}

fn csv_message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("expected {expected_len} fields, found {len}"),
        _ => e.to_string(),
    }
}

struct Columns {
    job_id: usize,
    user: usize,
    arrival: usize,
    duration: Vec<usize>,
    estimate: Vec<Option<usize>>,
    width: Option<usize>,
    nodes: Option<usize>,
}

impl Columns {
    fn new(header: &csv::StringRecord, cluster: &Cluster) -> Result<Self, String> {
        let find = |name: &str| header.iter().position(|h| h == name);
        let require = |name: &str| find(name).ok_or_else(|| format!("missing column '{name}'"));
        let mut duration = Vec::new();
        let mut estimate = Vec::new();
        for flavor in &cluster.flavors {
            duration.push(require(&format!("duration_{}", flavor.name))?);
            estimate.push(find(&format!("estimate_{}", flavor.name)));
        }
        let columns = Columns {
            job_id: require("job_id")?,
            user: require("user")?,
            arrival: require("arrival")?,
            duration,
            estimate,
            width: find("width"),
            nodes: find("nodes"),
        };
        let mut seen = HashSet::new();
        for h in header.iter() {
            if !seen.insert(h) {
                return Err(format!("column '{h}' appears twice"));
            }
            let known = matches!(h, "job_id" | "user" | "arrival" | "width" | "nodes")
                || ["duration_", "estimate_"].iter().any(|p| {
                    h.strip_prefix(p)
                        .is_some_and(|f| cluster.flavor_index(f).is_some())
                });
            if !known {
                return Err(format!(
                    "unknown column '{h}' (flavors are: {})",
                    cluster
                        .flavors
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Ok(columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flavor;

    fn cluster() -> Cluster {
        Cluster {
            flavors: vec![
                Flavor {
                    name: "gpu".into(),
                    slots: 2,
                    per_node: 1,
                },
                Flavor {
                    name: "cpu".into(),
                    slots: 2,
                    per_node: 1,
                },
            ],
        }
    }

    #[test]
    fn reads_jobs_users_and_estimates() {
        let text = "job_id,user,arrival,duration_gpu,duration_cpu,estimate_cpu\n\
                    a,alice,0,40,50,\n\
                    b,bob,5,,80,90\n";
        let w = parse("w.csv", text, &cluster(), &[("bob".into(), 3.0)]).unwrap();
        assert_eq!(w.users.len(), 2);
        assert_eq!(w.users[1].weight, 3.0);
        assert_eq!(w.jobs[1].durations, vec![None, Some(80.0)]);
        assert_eq!(w.jobs[1].estimates, vec![None, Some(90.0)]);
        assert_eq!(w.jobs[0].estimates, vec![None, None]);
    }

    #[test]
    fn bad_input_names_the_line() {
        let c = cluster();
        let cases = [
            (
                "job_id,user,arrival,duration_gpu\n",
                1,
                "missing column 'duration_cpu'",
            ),
            (
                "job_id,user,arrival,duration_gpu,duration_cpu,duration_tpu\n",
                1,
                "unknown column",
            ),
            (
                "job_id,user,arrival,duration_gpu,duration_cpu\na,u,0,1,2\nb,u,x,1,2\n",
                3,
                "not a number",
            ),
            (
                "job_id,user,arrival,duration_gpu,duration_cpu\na,u,0,1,2\nb,u,0,1\n",
                3,
                "expected 5 fields",
            ),
            (
                "job_id,user,arrival,duration_gpu,duration_cpu\na,u,0,-1,2\n",
                2,
                ">= 0",
            ),
            (
                "job_id,user,arrival,duration_gpu,duration_cpu\na,u,0,,\n",
                2,
                "no duration",
            ),
            (
                "job_id,user,arrival,duration_gpu,duration_cpu\na,u,0,1,\na,u,0,1,\n",
                3,
                "twice",
            ),
        ];
        for (text, line, needle) in cases {
            let e = parse("w.csv", text, &c, &[]).unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.message.contains(needle), "{e}");
        }
    }
}
