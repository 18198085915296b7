//! The texts a user sees in `squeue`'s reason and an admin in the log:
//! why a job waits, and where its estimates came from when its hint did
//! not give them all.

use super::estimates::Source;
use super::hints::Hint;
use super::slots::SlotModel;

/// Longest reason text handed to Slurm.
const MAX_REASON: usize = 240;

/// How a waiting job's reason begins when the plan queues it.
const QUEUED: &str = "fairmatch: queued";

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
    let mut reason = format!("{QUEUED}{on}; {}", describe(model, est));
    if !hint.problems.is_empty() {
        reason.push_str("; hint: ");
        reason.push_str(&hint.problems.join("; "));
    }
    truncate(reason)
}

/// A waiting job's reason as [`wait_reason`] wrote it, read back (what
/// `fairmatch queue` shows): the flavor the plan placed the job on, and
/// its estimates.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WaitReason {
    /// The flavor (`partition` or `partition:type`), if the plan placed it.
    pub flavor: Option<String>,
    /// `(flavor, seconds, source)`: the source as [`Source::label`] gives it.
    pub estimates: Vec<(String, f64, String)>,
}

/// Reads back a reason [`wait_reason`] wrote; `None` for any other (Slurm's
/// own, or fairmatch's for a job it does not queue).
pub fn read_wait_reason(reason: &str) -> Option<WaitReason> {
    let rest = reason.strip_prefix(QUEUED)?;
    let (head, tail) = rest.split_once(';').unwrap_or((rest, ""));
    let flavor = head
        .trim()
        .strip_prefix("for ")
        .map(|f| f.trim().to_string());
    let mut estimates = Vec::new();
    let listed = tail.split(';').next().unwrap_or("");
    let mut words = listed.split_whitespace().peekable();
    while let Some(word) = words.next() {
        let Some((name, seconds)) = word.split_once('=') else {
            continue;
        };
        let Ok(seconds) = seconds.trim_end_matches('s').parse::<f64>() else {
            continue;
        };
        // The source: one parenthesised group, maybe of several words.
        let mut source = Vec::new();
        if words.peek().is_some_and(|w| w.starts_with('(')) {
            for w in words.by_ref() {
                source.push(w);
                if w.ends_with(')') {
                    break;
                }
            }
        }
        let source = source.join(" ");
        let source = source.trim_matches(|c| c == '(' || c == ')');
        estimates.push((name.to_string(), seconds, source.to_string()));
    }
    Some(WaitReason { flavor, estimates })
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
    use super::{read_wait_reason, seconds};

    #[test]
    fn a_wait_reason_reads_back_and_others_do_not() {
        let r = read_wait_reason(
            "fairmatch: queued for gpu:a100; cpu=30s (hint) gpu:a100=10.5s (time limit); \
             hint: unknown flavor 'tpu'",
        )
        .unwrap();
        assert_eq!(r.flavor.as_deref(), Some("gpu:a100"));
        assert_eq!(
            r.estimates,
            vec![
                ("cpu".into(), 30.0, "hint".into()),
                ("gpu:a100".into(), 10.5, "time limit".into())
            ]
        );
        assert_eq!(
            read_wait_reason("fairmatch: queued; cpu=2s (hint)")
                .unwrap()
                .flavor,
            None
        );
        assert_eq!(read_wait_reason("Resources"), None);
        assert_eq!(
            read_wait_reason("fairmatch: none of the job's partitions has slots"),
            None
        );
    }

    #[test]
    fn seconds_are_whole_or_to_a_tenth() {
        assert_eq!(seconds(2.0), "2");
        assert_eq!(seconds(2.6666666666666665), "2.7");
        assert_eq!(seconds(3600.4), "3600");
        assert_eq!(seconds(1.04), "1");
    }
}
