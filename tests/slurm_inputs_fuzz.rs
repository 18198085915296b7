//! Hostile input for what the plugin parses inside slurmctld: job comments
//! (hints), `fairmatch.conf` and the node lists Slurm hands it. A panic there would take the controller
//! down, so neither parser may panic, whatever the bytes, and what they
//! accept stays within documented bounds. The case count is a fixed budget
//! for CI; `PROPTEST_CASES=100000 cargo test --release --test
//! slurm_inputs_fuzz` runs longer by hand. The longest comment parsed is
//! `MAX_COMMENT_BYTES` (4096 bytes); Slurm itself refuses comments over
//! 1024 bytes at submission.

use fairmatch::slurm::config;
use fairmatch::slurm::hints::{self, MAX_COMMENT_BYTES, MAX_SECONDS};
use fairmatch::slurm::hostlist;
use proptest::prelude::*;

const FLAVORS: [&str; 3] = ["cpu", "gpu", "a100"];

/// Text that looks like a hint: the marker, then keys, `=`, numbers,
/// units and separators in any order, with some noise.
fn hint_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("fairmatch:".to_string()),
        Just("=".to_string()),
        Just(" ".to_string()),
        Just(",".to_string()),
        Just(";".to_string()),
        Just("-".to_string()),
        Just(".".to_string()),
        prop::sample::select(vec!["cpu", "gpu", "a100", "tpu", "d", "h", "m", "s"])
            .prop_map(String::from),
        "[0-9]{1,400}",
        "\\PC{0,8}",
    ];
    prop::collection::vec(piece, 0..64).prop_map(|v| v.concat())
}

fn config_like() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "Alpha",
        "MaxCandidates",
        "Stickiness",
        "FairshareBy",
        "CpusPerSlot",
        "DefaultRuntime",
        "IntervalMs",
        "Partitions",
        "Bogus",
        "",
    ]);
    let value = prop_oneof![
        "[0-9.eE+-]{0,30}",
        "\\PC{0,40}",
        Just("account".to_string())
    ];
    let line = (key, "[ =#]{0,3}", value).prop_map(|(k, sep, v)| format!("{k}{sep}{v}"));
    prop::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
}

fn check_hint(text: &str) {
    let hint = hints::parse(text, &FLAVORS);
    for (flavor, seconds) in &hint.estimates {
        assert!(FLAVORS.contains(&flavor.as_str()), "{flavor} from {text:?}");
        assert!(
            seconds.is_finite() && *seconds > 0.0 && *seconds <= MAX_SECONDS,
            "{seconds} from {text:?}"
        );
    }
    // Every problem is short enough for a Slurm reason.
    for p in &hint.problems {
        assert!(p.len() <= 400, "{} bytes: {p}", p.len());
    }
    if text.len() > MAX_COMMENT_BYTES {
        assert!(hint.estimates.is_empty());
    }
}

/// 3000 cases per property in CI; `PROPTEST_CASES` for a longer run.
fn budget() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    ProptestConfig::with_cases(cases)
}

proptest! {
    #![proptest_config(budget())]

    #[test]
    fn hints_never_panic_on_arbitrary_text(text in "\\PC{0,600}") {
        check_hint(&text);
    }

    #[test]
    fn hints_never_panic_on_near_hints(text in hint_like()) {
        check_hint(&text);
    }

    #[test]
    fn durations_are_finite_positive_and_at_most_a_year(text in "[0-9.dhms-]{0,40}") {
        if let Ok(seconds) = hints::parse_duration(&text) {
            prop_assert!((0.0..=MAX_SECONDS).contains(&seconds));
        }
    }

    #[test]
    fn config_never_panics_and_keeps_safe_values(text in config_like()) {
        let (c, warnings) = config::parse("fairmatch.conf", &text);
        prop_assert!(c.alpha > 0.0 && c.alpha <= 1.0, "alpha {}", c.alpha);
        prop_assert!(c.stickiness.is_finite() && c.stickiness >= 0.0);
        prop_assert!(c.default_runtime.is_finite() && c.default_runtime > 0.0);
        prop_assert!((10..=60_000).contains(&c.interval_ms));
        // Every warning names the file and a line.
        for w in &warnings {
            prop_assert!(w.starts_with("fairmatch.conf:"), "{}", w);
        }
    }

    #[test]
    fn config_never_panics_on_arbitrary_text(text in "\\PC{0,2000}") {
        let _ = config::parse("fairmatch.conf", &text);
    }

    #[test]
    fn hostlists_never_panic_and_stay_within_their_limit(
        text in "([a-z]{0,3}(\\[[0-9,-]{0,12}\\]?)?[0-9]{0,25},?){0,6}|\\PC{0,80}"
    ) {
        prop_assert!(hostlist::expand(&text, 100).len() <= 100);
    }

    #[test]
    fn a_compressed_hostlist_expands_to_its_names(
        names in prop::collection::vec(("[a-c]{1,2}", 0u32..40, 1usize..4), 1..20)
    ) {
        let names: Vec<String> = names
            .into_iter()
            .map(|(prefix, n, width)| format!("{prefix}-{n:0width$}"))
            .collect();
        prop_assert_eq!(hostlist::expand(&hostlist::compress(&names), 1000), names);
    }
}

#[test]
fn the_longest_accepted_comment_is_parsed_and_one_byte_more_is_not() {
    let pad = " ".repeat(MAX_COMMENT_BYTES - "fairmatch: gpu=1m".len());
    let longest = format!("fairmatch: gpu=1m{pad}");
    assert_eq!(longest.len(), MAX_COMMENT_BYTES);
    assert_eq!(hints::parse(&longest, &FLAVORS).estimate("gpu"), Some(60.0));
    let over = format!("{longest} ");
    assert_eq!(hints::parse(&over, &FLAVORS).estimate("gpu"), None);
}
