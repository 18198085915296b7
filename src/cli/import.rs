//! `fairmatch import`: see [`fairmatch::io::history_import`].

use super::{CliError, ImportArgs, ImportFormat};
use fairmatch::io::history_import::{read_sacct, read_swf};
use std::io::Read;
use std::path::Path;

/// The log's text; a `.gz` file is decompressed.
fn read_log(path: &Path) -> Result<String, CliError> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| CliError::Input(format!("{shown}: {e}")))?;
    let mut text = String::new();
    let read = if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file).read_to_string(&mut text)
    } else {
        std::io::BufReader::new(file).read_to_string(&mut text)
    };
    read.map_err(|e| CliError::Input(format!("{shown}: {e}")))?;
    Ok(text)
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| CliError::Run(format!("{}: {e}", path.display())))
}

pub fn run(args: ImportArgs) -> Result<(), CliError> {
    let shown = args.log.display().to_string();
    if args.days.is_some_and(|d| !(d.is_finite() && d > 0.0))
        || !(args.from_day.is_finite() && args.from_day >= 0.0)
        || !(args.arrival_scale.is_finite() && args.arrival_scale > 0.0)
    {
        return Err(CliError::Input(
            "--days and --arrival-scale must be above 0, and --from-day at least 0".into(),
        ));
    }
    let text = read_log(&args.log)?;
    let mut trace = match args.format {
        ImportFormat::Sacct => read_sacct(&shown, &text),
        ImportFormat::Swf => read_swf(&shown, &text, &args.flavor),
    }
    .map_err(|e| CliError::Input(e.to_string()))?;
    trace.window(args.from_day * 86_400.0, args.days.map(|d| d * 86_400.0));
    trace.scale_arrivals(args.arrival_scale);
    if trace.jobs.is_empty() {
        return Err(CliError::Input(format!("{shown}: no job to import")));
    }
    let (csv, yaml) = trace.to_inputs();
    write(&args.workload_out, &csv)?;
    write(&args.cluster_out, &yaml)?;
    let flavors: Vec<String> = trace
        .flavors
        .iter()
        .map(|f| format!("{} ({} x {} slots)", f.name, f.nodes, f.per_node))
        .collect();
    eprintln!(
        "{shown}: {} jobs on {} -> {} and {}",
        trace.jobs.len(),
        flavors.join(", "),
        args.workload_out.display(),
        args.cluster_out.display()
    );
    for (why, count) in &trace.skipped {
        eprintln!("  skipped {count}: {why}");
    }
    Ok(())
}
