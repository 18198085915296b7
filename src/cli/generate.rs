//! `fairmatch generate`: see [`fairmatch::io::generate`].

use super::{CliError, GenerateArgs};
use fairmatch::io::cluster_yaml::valid_name;
use fairmatch::io::generate::{self, GenerateOptions};
use fairmatch::model::{Cluster, Flavor};
use std::path::Path;

/// `gpu=4,cpu=8` -> the cluster.
fn parse_flavors(list: &str) -> Result<Cluster, CliError> {
    let bad = |m: String| CliError::Input(format!("--flavors: {m}"));
    let flavors = list
        .split(',')
        .map(|item| {
            let (name, slots) = item
                .trim()
                .split_once('=')
                .ok_or_else(|| bad(format!("'{item}' is not name=slots")))?;
            if !valid_name(name) {
                return Err(bad(format!("'{name}' is not a valid flavor name")));
            }
            let slots = slots
                .parse()
                .map_err(|_| bad(format!("'{slots}' is not a slot count")))?;
            Ok(Flavor {
                name: name.to_string(),
                slots,
                per_node: 1,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Cluster::new(flavors).map_err(|e| bad(e.to_string()))
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| CliError::Run(format!("{}: {e}", path.display())))
}

pub fn run(args: GenerateArgs) -> Result<(), CliError> {
    let cluster = parse_flavors(&args.flavors)?;
    let options = GenerateOptions {
        users: args.users,
        jobs_per_user: args.jobs_per_user,
        load: args.load,
        min_duration: args.min_duration,
        max_duration: args.max_duration,
        min_slowdown: args.min_slowdown,
        max_slowdown: args.max_slowdown,
        spread: args.spread,
        seed: args.seed,
    };
    generate::check(&options, &cluster).map_err(CliError::Input)?;
    let workload = generate::workload(&options, &cluster);
    let csv = generate::to_csv(&workload, &cluster);
    match &args.out {
        Some(path) => write(path, &csv)?,
        None => print!("{csv}"),
    }
    if let Some(path) = &args.cluster_out {
        write(path, &generate::cluster_yaml(&cluster))?;
    }
    Ok(())
}
