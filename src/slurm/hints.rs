//! Runtime hints users give at submit time, in the job's comment:
//!
//! ```text
//! sbatch -p cpu,gpu --comment "fairmatch: gpu=20m cpu=3h" job.sh
//! ```
//!
//! After the marker `fairmatch:` come `flavor=duration` pairs separated by
//! spaces or commas. A duration is one or more `<number><unit>` parts with
//! units `d`, `h`, `m`, `s` (`90s`, `20m`, `1h30m`, `2.5s`). Keys are
//! partition names, GPU type names (`a100=20m`, for every partition's
//! nodes of that type), or `partition:type` for one type in one
//! partition; the most specific key given for a flavor wins. The word
//! `preemptible` opts the job in to preemption (docs/operations.md).
//! Whatever is wrong with a hint is reported as a problem and that flavor
//! falls back; a hint never fails a job.
//!
//! The same body can come as an sbatch, salloc or srun option, through
//! fairmatch's SPANK plugin (`--fm-runtime=gpu=20m,cpu=3h`,
//! `--fm-preemptible`). The plugin refuses a malformed value at submission
//! ([`check_option`]) and hands the rest to slurmctld in the job's SPANK
//! environment as [`OPTION_ENV`]; there the option wins over the comment
//! ([`of_job`]).

/// Comments longer than this are not parsed at all: a hint is short, and a
/// huge comment must not cost slurmctld time or memory.
pub const MAX_COMMENT_BYTES: usize = 4096;
/// Estimates above this (a year) are rejected as typos.
pub const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;
/// The prefix a job's comment gives its hint after.
pub const MARKER: &str = "fairmatch:";

/// The word in a hint by which a job opts in to preemption.
pub const PREEMPTIBLE: &str = "preemptible";

/// The variable of a job's SPANK environment that carries the hint its
/// options gave: the body of a hint, without the marker.
pub const OPTION_ENV: &str = "FAIRMATCH_HINT";

/// The longest hint option passed on (the same bound as a comment's).
pub const MAX_OPTION_BYTES: usize = MAX_COMMENT_BYTES;

/// What a job's comment said about its run times.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hint {
    /// `(flavor, seconds)` in the order given; a flavor given twice keeps
    /// its last value.
    pub estimates: Vec<(String, f64)>,
    /// Human-readable reasons why (part of) the hint was not used.
    pub problems: Vec<String>,
    /// Whether the comment carried the marker at all.
    pub present: bool,
    /// The word `preemptible`: the job may be stopped and requeued for
    /// another (where the admin turned preemption on, and Slurm may
    /// requeue it).
    pub preemptible: bool,
}

impl Hint {
    /// The hint's seconds for `flavor`, the last one given.
    pub fn estimate(&self, flavor: &str) -> Option<f64> {
        self.estimates
            .iter()
            .rev()
            .find(|(f, _)| f == flavor)
            .map(|(_, s)| *s)
    }
}

/// Parses the hint in `comment`. `keys` are the names a key may take
/// (`SlotModel::hint_keys`); other keys are reported as unknown.
pub fn parse(comment: &str, keys: &[&str]) -> Hint {
    let mut hint = Hint::default();
    if comment.len() > MAX_COMMENT_BYTES {
        hint.problems.push(format!(
            "comment is {} bytes, over the {MAX_COMMENT_BYTES}-byte limit; hint ignored",
            comment.len()
        ));
        return hint;
    }
    let Some(at) = comment.find(MARKER) else {
        return hint;
    };
    parse_body(&comment[at + MARKER.len()..], keys, &mut hint);
    hint
}

/// The hint of a job: its options' (`option`, from [`OPTION_ENV`]) when
/// it has one, else its comment's. A comment's hint beside an option is
/// not read, and the problems say so, as a job's Reason shows them.
pub fn of_job(comment: &str, option: Option<&str>, keys: &[&str]) -> Hint {
    let Some(option) = option else {
        return parse(comment, keys);
    };
    let mut hint = Hint::default();
    if option.len() > MAX_OPTION_BYTES {
        hint.problems.push(format!(
            "--fm-runtime is {} bytes, over the {MAX_OPTION_BYTES}-byte limit; hint ignored",
            option.len()
        ));
        return hint;
    }
    parse_body(option, keys, &mut hint);
    if comment.contains(MARKER) {
        hint.problems
            .push("the --fm-runtime option was given, so the comment's hint is not read".into());
    }
    hint
}

/// Checks a hint option's value as the SPANK plugin does at submission,
/// before any partition is known: the grammar slurmctld reads it with,
/// with any key that could name a flavor. Err names the first bad item
/// and what is wrong with it.
pub fn check_option(value: &str) -> Result<(), String> {
    if value.len() > MAX_OPTION_BYTES {
        return Err(format!(
            "{} bytes, over the {MAX_OPTION_BYTES}-byte limit",
            value.len()
        ));
    }
    let could_name_a_flavor = |key: &str| {
        let ok = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.:+".contains(c));
        (!ok).then(|| format!("'{}' is not a partition or GPU type name", shorten(key)))
    };
    let mut hint = Hint::default();
    parse_items(value, &could_name_a_flavor, &mut hint);
    match hint.problems.into_iter().next() {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// The items of a hint's body: split at spaces, commas and semicolons.
fn items(body: &str) -> impl Iterator<Item = &str> {
    body.split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|item| !item.is_empty())
}

/// Reads a hint's body (after the marker, or an option's value) into
/// `hint`, with the flavor names `keys`.
fn parse_body(body: &str, keys: &[&str], hint: &mut Hint) {
    let known = |key: &str| {
        (!keys.contains(&key)).then(|| {
            format!(
                "unknown flavor '{}' (known: {})",
                shorten(key),
                keys.join(", ")
            )
        })
    };
    parse_items(body, &known, hint);
}

/// Reads a hint's items into `hint`; `unknown` says what is wrong with a
/// key, if anything.
fn parse_items(body: &str, unknown: &dyn Fn(&str) -> Option<String>, hint: &mut Hint) {
    hint.present = true;
    let mut any = false;
    for item in items(body) {
        any = true;
        if item.eq_ignore_ascii_case(PREEMPTIBLE) {
            hint.preemptible = true;
            continue;
        }
        let Some((key, value)) = item.split_once('=') else {
            hint.problems.push(format!(
                "'{}' is not flavor=duration (e.g. gpu=20m)",
                shorten(item)
            ));
            continue;
        };
        if let Some(problem) = unknown(key) {
            hint.problems.push(problem);
            continue;
        }
        match parse_duration(value) {
            Ok(s) => hint.estimates.push((key.to_string(), s)),
            Err(e) => hint.problems.push(format!("{key}: {e}")),
        }
    }
    if !any {
        hint.problems
            .push("empty hint: give flavor=duration pairs, e.g. gpu=20m".into());
    }
}

/// Parses `1h30m`, `20m`, `90s`, `2.5s`, `1d`: seconds, at most a year.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let shown = shorten(text);
    if text.is_empty() {
        return Err("empty duration".into());
    }
    if text.starts_with('-') {
        return Err(format!("negative duration '{shown}'"));
    }
    let mut total = 0.0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let unit = match c {
            'd' => 86400.0,
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => return Err(format!("bad duration '{shown}' (use e.g. 90s, 20m, 1h30m)")),
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("bad duration '{shown}' (use e.g. 90s, 20m, 1h30m)"))?;
        total += value * unit;
        number.clear();
    }
    if !number.is_empty() {
        return Err(format!("duration '{shown}' lacks a unit (s, m, h or d)"));
    }
    if !total.is_finite() || total > MAX_SECONDS {
        return Err(format!("duration '{shown}' is over a year"));
    }
    Ok(total)
}

/// At most 40 characters of user text in a message.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAVORS: &[&str] = &["gpu", "cpu"];

    #[test]
    fn parses_pairs_and_units() {
        let h = parse("train resnet; fairmatch: gpu=20m cpu=1h30m", FLAVORS);
        assert!(h.present && h.problems.is_empty(), "{h:?}");
        assert_eq!(h.estimate("gpu"), Some(1200.0));
        assert_eq!(h.estimate("cpu"), Some(5400.0));
        let h = parse("fairmatch: gpu=2.5s,cpu=90s", FLAVORS);
        assert_eq!(
            (h.estimate("gpu"), h.estimate("cpu")),
            (Some(2.5), Some(90.0))
        );
    }

    #[test]
    fn the_preemptible_word_opts_in() {
        let h = parse("fairmatch: gpu=20m Preemptible", FLAVORS);
        assert!(h.preemptible && h.problems.is_empty(), "{h:?}");
        assert_eq!(h.estimate("gpu"), Some(1200.0));
        assert!(!parse("fairmatch: gpu=20m", FLAVORS).preemptible);
        assert!(!parse("preemptible, fairmatch: gpu=20m", FLAVORS).preemptible);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1d2h3m4s"), Ok(93784.0));
        assert!(parse_duration("-5m").unwrap_err().contains("negative"));
        assert!(parse_duration("999999h")
            .unwrap_err()
            .contains("over a year"));
        assert!(parse_duration("20").unwrap_err().contains("unit"));
        assert!(parse_duration("2x").unwrap_err().contains("bad duration"));
        assert!(parse_duration("1..5s").is_err());
    }

    #[test]
    fn problems_are_reported_and_good_parts_kept() {
        let h = parse("fairmatch: gpu=20m tpu=1h cpu=-3m junk", FLAVORS);
        assert_eq!(h.estimate("gpu"), Some(1200.0));
        assert_eq!(h.estimate("cpu"), None);
        assert_eq!(h.problems.len(), 3, "{h:?}");
        assert!(h.problems[0].contains("unknown flavor 'tpu'"));
        assert!(h.problems[1].contains("negative"));
        assert!(h.problems[2].contains("not flavor=duration"));
    }

    #[test]
    fn no_marker_is_no_hint_and_huge_comments_are_refused() {
        let h = parse("garbage", FLAVORS);
        assert!(!h.present && h.estimates.is_empty() && h.problems.is_empty());
        let big = format!("fairmatch: gpu=1m {}", "x".repeat(10_000));
        let h = parse(&big, FLAVORS);
        assert!(h.estimates.is_empty());
        assert!(h.problems[0].contains("limit"));
        let h = parse("fairmatch:", FLAVORS);
        assert!(h.problems[0].contains("empty"));
    }

    #[test]
    fn an_option_wins_over_the_comment_and_says_so() {
        let h = of_job("fairmatch: gpu=1h", Some("gpu=20m,cpu=3h"), FLAVORS);
        assert_eq!(h.estimate("gpu"), Some(1200.0));
        assert_eq!(h.estimate("cpu"), Some(10800.0));
        assert_eq!(h.problems.len(), 1, "{h:?}");
        assert!(h.problems[0].contains("comment's hint is not read"));
        let h = of_job("my tag", Some("preemptible"), FLAVORS);
        assert!(h.preemptible && h.present && h.problems.is_empty(), "{h:?}");
        assert_eq!(
            of_job("fairmatch: gpu=1h", None, FLAVORS).estimate("gpu"),
            Some(3600.0)
        );
        let h = of_job("", Some("tpu=1h"), FLAVORS);
        assert!(h.problems[0].contains("unknown flavor 'tpu'"), "{h:?}");
    }

    #[test]
    fn a_malformed_option_is_refused_with_its_bad_part_named() {
        assert_eq!(check_option("gpu=20m,cpu=3h"), Ok(()));
        assert_eq!(check_option("gpu:a100=20m preemptible"), Ok(()));
        assert_eq!(check_option("PREEMPTIBLE"), Ok(()));
        let bad = |v: &str| check_option(v).unwrap_err();
        assert!(bad("gpu=20m,cpu").contains("'cpu' is not flavor=duration"));
        assert!(bad("gpu=20x").contains("gpu: bad duration '20x'"));
        assert!(bad("gpu=-5m").contains("negative"));
        assert!(bad("gpu=20").contains("lacks a unit"));
        assert!(bad("=20m").contains("not a partition"));
        assert!(bad("g$pu=20m").contains("'g$pu' is not a partition"));
        assert!(bad(" , ").contains("empty"));
        assert!(bad(&"gpu=1m,".repeat(1000)).contains("limit"));
    }
}
