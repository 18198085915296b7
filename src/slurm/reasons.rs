//! The texts a user sees in `squeue`'s reason and an admin in the log:
//! why a job waits, and where its estimates came from when its hint did
//! not give them all.

use super::estimates::Source;
use super::hints::Hint;
use super::slots::SlotModel;

/// Longest reason text handed to Slurm.
const MAX_REASON: usize = 240;

/// The admin note for a job whose estimates did not all come from its hint.
pub(super) fn note(why: &[String], model: &SlotModel, est: &[Option<(f64, Source)>]) -> String {
    truncate(format!(
        "fairmatch: {}; using {}",
        why.join("; "),
        describe(model, est)
    ))
}

/// Why a job waits: the flavor the plan placed it on (`planned`, if it
/// did), the estimates it is planned with, and its hint's problems.
pub(super) fn wait_reason(
    model: &SlotModel,
    hint: &Hint,
    est: &[Option<(f64, Source)>],
    planned: Option<&str>,
) -> String {
    if est.iter().all(Option::is_none) {
        return "fairmatch: none of the job's partitions has slots".into();
    }
    let on = planned.map_or(String::new(), |f| format!(" for {f}"));
    let mut reason = format!("fairmatch: queued{on}; {}", describe(model, est));
    if !hint.problems.is_empty() {
        reason.push_str("; hint: ");
        reason.push_str(&hint.problems.join("; "));
    }
    truncate(reason)
}

fn describe(model: &SlotModel, est: &[Option<(f64, Source)>]) -> String {
    model
        .flavors
        .iter()
        .zip(est)
        .filter_map(|(f, e)| {
            e.map(|(s, src)| format!("{}={}s ({})", f.name, seconds(s), src.label()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Seconds as a user reads them: whole, or to a tenth below 100 s (a
/// mean of runs is rarely whole, and 17 digits say nothing more).
fn seconds(s: f64) -> String {
    if s >= 100.0 || (s - s.round()).abs() < 0.05 {
        format!("{:.0}", s)
    } else {
        format!("{:.1}", s)
    }
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_REASON {
        let mut cut = MAX_REASON - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn seconds_are_whole_or_to_a_tenth() {
        assert_eq!(seconds(2.0), "2");
        assert_eq!(seconds(2.6666666666666665), "2.7");
        assert_eq!(seconds(3600.4), "3600");
        assert_eq!(seconds(1.04), "1");
    }
}
