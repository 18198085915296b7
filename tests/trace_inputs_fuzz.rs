//! Hostile input for the trace and cluster readers: AlloX's format, the
//! workload CSV, the cluster YAML, Gavel's traces and throughput table, and
//! the Philly trace. Whatever the bytes, a reader returns
//! a workload or an error that names the file; it never panics, and what it
//! accepts holds only times from 0 to `MAX_SECONDS`, unique job ids, users
//! it can index, and clusters within `MAX_SLOTS`; and what it accepts, the
//! simulator runs to an answer or an error, never a panic.
//! Each reader holds the whole file in memory (about its size again in
//! parsed form); no reader limits the length of an input.
//!
//! The case count is a fixed budget for CI (`PROPTEST_CASES` overrides it):
//! `PROPTEST_CASES=200000 cargo test --release --test trace_inputs_fuzz`
//! runs longer by hand.

use fairmatch::io::allox_format::{self, AlloxOptions};
use fairmatch::io::gavel_format::{self, GavelOptions, UserAssignment};
use fairmatch::io::philly_format::{self, Derivation, PhillyOptions};
use fairmatch::io::{cluster_yaml, workload_csv, MultiGpu};
use fairmatch::model::{Cluster, Flavor, Scenario, Workload, MAX_SECONDS, MAX_SLOTS};
use fairmatch::policy::baselines::fifo::Fifo;
use fairmatch::policy::{allox::Allox, Policy};
use fairmatch::sim::{simulate, EstimateSource, Profiling, SimOptions};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Numbers as traces write them, and as they should not.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[0-9]{1,6}",
        8 => "[0-9]{1,4}\\.[0-9]{1,4}",
        2 => "-?[0-9]{0,3}(\\.[0-9]*)?([eE][+-]?[0-9]{1,3})?",
        1 => Just("1e308".to_string()),
        1 => Just("1.7e308".to_string()),
        1 => Just("NaN".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("18446744073709551615".to_string()),
        1 => Just("".to_string()),
        1 => "\\PC{0,6}",
    ]
}

/// A token of AlloX's format: fields, numbers, separators, comments, noise.
fn allox_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        4 => number(),
        2 => Just(" ".to_string()),
        2 => Just("\n".to_string()),
        1 => Just("1".to_string()),
        1 => Just("0".to_string()),
        1 => Just("%".to_string()),
        1 => Just("#".to_string()),
        1 => Just("\u{feff}".to_string()),
        1 => Just("\r\n".to_string()),
        1 => "[a-z]{1,8}",
    ];
    let noise = prop::collection::vec(token, 0..200).prop_map(|v| v.concat());
    // Well-formed jobs with hostile values, so the deep paths are reached.
    let job = (number(), number(), number(), number(), "[a-z]{1,3}").prop_map(
        |(arrival, cpu, gpu, err, user)| {
            format!("1 j{arrival} 1 {arrival} {user}\n0 0 0 0 {cpu} 0 0 {gpu} 1 {err} {err}\n0\n")
        },
    );
    let jobs = prop::collection::vec(job, 0..6).prop_map(|v| v.concat());
    prop_oneof![
        noise,
        jobs,
        (jobs_prefix(), "\\PC{0,40}").prop_map(|(a, b)| a + &b)
    ]
}

fn jobs_prefix() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (number(), number()).prop_map(|(a, t)| format!("1 j 1 {a} u\n0 0 0 0 {t} 0 0 {t} 1\n0\n")),
        0..5,
    )
    .prop_map(|v| v.concat())
}

fn csv_text() -> impl Strategy<Value = String> {
    let header = prop_oneof![
        Just("job_id,user,arrival,duration_gpu,duration_cpu".to_string()),
        Just("job_id,user,arrival,duration_gpu,duration_cpu,estimate_gpu,estimate_cpu".to_string()),
        Just("\u{feff}job_id,user,arrival,duration_cpu,duration_gpu".to_string()),
        Just("job_id,user,arrival,duration_tpu".to_string()),
        "[a-z_,]{0,60}",
    ];
    let cell = prop_oneof![
        number(),
        "[a-z]{0,4}",
        Just("\"".to_string()),
        Just(",".to_string())
    ];
    let row = prop::collection::vec(cell, 0..9).prop_map(|v| v.join(","));
    (header, prop::collection::vec(row, 0..30)).prop_map(|(h, rows)| {
        let mut text = h;
        for r in rows {
            text.push('\n');
            text.push_str(&r);
        }
        text
    })
}

fn yaml_text() -> impl Strategy<Value = String> {
    let flavor =
        ("[a-z]{0,4}", number()).prop_map(|(n, s)| format!("  - name: {n}\n    slots: {s}\n"));
    let user =
        ("[a-z]{0,4}", number()).prop_map(|(n, w)| format!("  - name: {n}\n    weight: {w}\n"));
    let structured = (
        prop::collection::vec(flavor, 0..5),
        prop::collection::vec(user, 0..5),
        "\\PC{0,10}",
    )
        .prop_map(|(f, u, tail)| format!("flavors:\n{}users:\n{}{tail}", f.concat(), u.concat()));
    let noise = prop::collection::vec(
        prop_oneof![
            Just("flavors:".to_string()),
            Just("users:".to_string()),
            Just("\n".to_string()),
            Just("  - ".to_string()),
            Just(": ".to_string()),
            Just("&a ".to_string()),
            Just("*a".to_string()),
            Just("[".to_string()),
            Just("{".to_string()),
            number(),
            "[a-z]{1,6}",
        ],
        0..80,
    )
    .prop_map(|v| v.concat());
    prop_oneof![structured, noise]
}

/// gpu and cpu, 2 slots each: AlloX's own two flavors.
/// Gavel's trace: 10- and 7-field lines with hostile values, and noise.
fn gavel_text() -> impl Strategy<Value = String> {
    let job_type = prop_oneof![
        4 => Just("LM (batch size 10)".to_string()),
        1 => Just("A3C".to_string()),
        1 => "\\PC{0,8}",
    ];
    let line = (job_type, number(), number(), number(), any::<bool>()).prop_map(
        |(t, steps, scale, arrival, old)| {
            if old {
                format!("{t}\tcmd\t-n\t1\t{steps}\t{arrival}\t{scale}\n")
            } else {
                format!("{t}\tcmd\tdir\t-n\t1\t{steps}\t{scale}\t1\t-1\t{arrival}\n")
            }
        },
    );
    let noise = prop_oneof![
        4 => line,
        1 => Just("\t".to_string()),
        1 => Just("\n".to_string()),
        1 => number(),
    ];
    prop::collection::vec(noise, 0..40).prop_map(|v| v.concat())
}

/// A Gavel table: the shape of the real one with hostile values, or noise.
fn gavel_table() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (number(), number()).prop_map(|(a, b)| format!(
            r#"{{"v100": {{"('LM (batch size 10)', 1)": {{"null": {a}}}, "('A3C', 1)": {{"null": 0.0}}}},
                "k80": {{"('LM (batch size 10)', 1)": {{"null": {b}}}}}}}"#
        )),
        1 => "\\PC{0,60}",
        1 => Just(r#"{"v100": {"bad key": {"null": 1}}}"#.to_string()),
    ]
}

/// The Philly CSV: the header, then rows with hostile fields.
fn philly_text() -> impl Strategy<Value = String> {
    let timestamp = prop_oneof![
        4 => "20[0-9]{2}-(0[1-9]|1[0-2])-[0-2][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9]",
        1 => "[0-9]{1,4}-[0-9]{1,2}-[0-9]{1,2} [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}",
        1 => "\\PC{0,12}",
    ];
    let gpus = prop_oneof![4 => Just("1".to_string()), 1 => Just("2".to_string()), 1 => number()];
    let row = (timestamp, number(), gpus, number(), "[a-z0-9]{0,4}")
        .prop_map(|(t, d, g, gt, c)| format!("{t},{d},{g},{gt},{c}\n"));
    (any::<bool>(), prop::collection::vec(row, 0..30)).prop_map(|(header, rows)| {
        let head = if header {
            "timestamp,duration,num_gpus,gpu_time,cluster\n"
        } else {
            ""
        };
        format!("{head}{}", rows.concat())
    })
}

fn cluster_of(names: &[&str]) -> Cluster {
    Cluster::new(
        names
            .iter()
            .map(|n| Flavor {
                name: n.to_string(),
                slots: 2,
                per_node: 1,
            })
            .collect(),
    )
    .expect("a valid cluster")
}

fn two_flavors() -> Cluster {
    allox_format::cluster(&AlloxOptions {
        gpu_slots: 2,
        cpu_slots: 2,
        seconds_per_unit: 1.0,
    })
    .expect("a valid cluster")
}

/// What every accepted workload must satisfy.
fn check_workload(w: &Workload, flavors: usize, text: &str) {
    for j in &w.jobs {
        assert!(
            j.user < w.users.len(),
            "user index out of range from {text:?}"
        );
        assert!(
            j.arrival.is_finite() && j.arrival >= 0.0,
            "arrival {} from {text:?}",
            j.arrival
        );
        assert_eq!(j.durations.len(), flavors);
        assert_eq!(j.estimates.len(), flavors);
        for t in j.durations.iter().chain(&j.estimates).flatten() {
            assert!(
                t.is_finite() && *t >= 0.0 && *t <= MAX_SECONDS,
                "time {t} from {text:?}"
            );
        }
        assert!(
            j.arrival <= MAX_SECONDS,
            "arrival {} from {text:?}",
            j.arrival
        );
    }
    let mut ids: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), w.jobs.len(), "duplicate job ids from {text:?}");
}

/// Runs an accepted workload to the end under AlloX (both profiling
/// modes) and FIFO: a result or an error, never a panic or a hang.
fn simulate_accepted(cluster: Cluster, workload: Workload, alpha: f64) {
    let scenario = Scenario { cluster, workload };
    for profile in [Profiling::Off, Profiling::Allox { min_probe: 1.0 }] {
        let options = SimOptions {
            estimates: EstimateSource::Input,
            profile,
            job_overhead: 0.0,
            preempt_overhead: 0.0,
        };
        let mut policies: [Box<dyn Policy>; 2] =
            [Box::new(Allox::new(alpha).unwrap()), Box::new(Fifo)];
        for policy in &mut policies {
            if let Ok(out) = simulate(&scenario, policy.as_mut(), &options, &mut |_| {}) {
                for j in &out.jobs {
                    assert!(j.finish.is_finite() && j.finish >= j.start && j.start >= j.arrival);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn allox_format_never_panics(
        text in allox_text(),
        minutes in any::<bool>(),
        alpha in 0.05..=1.0f64,
    ) {
        let options = AlloxOptions {
            gpu_slots: 2,
            cpu_slots: 2,
            seconds_per_unit: if minutes { 60.0 } else { 1.0 },
        };
        match allox_format::parse("t.txt", &text, &options) {
            Ok(w) => {
                check_workload(&w, 2, &text);
                simulate_accepted(two_flavors(), w, alpha);
            }
            Err(e) => prop_assert_eq!(e.file, "t.txt"),
        }
    }

    #[test]
    fn workload_csv_never_panics(text in csv_text(), alpha in 0.05..=1.0f64) {
        let weights = vec![("a".to_string(), 2.0)];
        match workload_csv::parse("w.csv", &text, &two_flavors(), &weights) {
            Ok(w) => {
                check_workload(&w, 2, &text);
                simulate_accepted(two_flavors(), w, alpha);
            }
            Err(e) => prop_assert_eq!(e.file, "w.csv"),
        }
    }

    #[test]
    fn cluster_yaml_never_panics(text in yaml_text()) {
        match cluster_yaml::parse("c.yaml", &text) {
            Ok(spec) => {
                prop_assert!(!spec.cluster.flavors.is_empty());
                prop_assert!(spec.cluster.total_slots() <= MAX_SLOTS);
                prop_assert!(spec.cluster.validate().is_ok());
                let mut names: Vec<&String> = spec.weights.iter().map(|(n, _)| n).collect();
                names.sort_unstable();
                names.dedup();
                prop_assert_eq!(names.len(), spec.weights.len());
                for (_, w) in &spec.weights {
                    prop_assert!(w.is_finite() && *w > 0.0, "weight {} from {:?}", w, text);
                }
            }
            Err(e) => prop_assert_eq!(e.file, "c.yaml"),
        }
    }

    #[test]
    fn gavel_format_never_panics(
        text in gavel_text(),
        table in gavel_table(),
        users in 0usize..4,
        random in any::<bool>(),
        drop in any::<bool>(),
        alpha in 0.05..=1.0f64,
    ) {
        let t = match gavel_format::parse_throughputs("t.json", &table) {
            Ok(t) => t,
            Err(e) => {
                prop_assert_eq!(e.file, "t.json");
                return Ok(());
            }
        };
        let cluster = cluster_of(&["v100", "k80"]);
        let options = GavelOptions {
            users,
            assignment: if random { UserAssignment::Random { seed: 3 } } else { UserAssignment::RoundRobin },
            multi_gpu: if drop { MultiGpu::Drop } else { MultiGpu::Keep },
        };
        match gavel_format::parse("g.trace", &text, &t, &cluster, &options) {
            Ok(trace) => {
                check_workload(&trace.workload, 2, &text);
                simulate_accepted(cluster, trace.workload, alpha);
            }
            Err(e) => prop_assert_eq!(e.file, "g.trace"),
        }
    }

    #[test]
    fn philly_format_never_panics(
        text in philly_text(),
        gavel_types in any::<bool>(),
        window in (-10.0..1e6f64, 0.0..1e7f64),
        max_jobs in prop::option::of(0usize..20),
        load_factor in prop_oneof![Just(1.0), 1e-9..1e3f64, Just(0.0)],
        drop in any::<bool>(),
        alpha in 0.05..=1.0f64,
    ) {
        let table = gavel_format::parse_throughputs(
            "t.json",
            r#"{"v100": {"('LM (batch size 10)', 1)": {"null": 10.0}},
                "k80": {"('LM (batch size 10)', 1)": {"null": 2.5}}}"#,
        )
        .expect("a valid table");
        let (cluster, derivation) = if gavel_types {
            (cluster_of(&["v100", "k80"]), Derivation::GavelTypes(&table))
        } else {
            (cluster_of(&["gpu", "cpu"]), Derivation::AlloxSpeedups { mean: 10.0, sd: 30.0 })
        };
        let options = PhillyOptions {
            derivation,
            seed: 5,
            window: (window.0, window.0 + window.1),
            max_jobs,
            load_factor,
            multi_gpu: if drop { MultiGpu::Drop } else { MultiGpu::Keep },
        };
        match philly_format::parse("p.csv", &text, &cluster, &options) {
            Ok(trace) => {
                check_workload(&trace.workload, 2, &text);
                simulate_accepted(cluster, trace.workload, alpha);
            }
            Err(e) => prop_assert_eq!(e.file, "p.csv"),
        }
    }

    #[test]
    fn any_bytes_as_utf8_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let options = AlloxOptions { gpu_slots: 1, cpu_slots: 1, seconds_per_unit: 1.0 };
        let _ = allox_format::parse("t.txt", &text, &options);
        let _ = workload_csv::parse("w.csv", &text, &two_flavors(), &[]);
        let _ = cluster_yaml::parse("c.yaml", &text);
        let _ = gavel_format::parse_throughputs("t.json", &text);
        let table = gavel_format::parse_throughputs(
            "t.json",
            r#"{"v100": {"('LM (batch size 10)', 1)": {"null": 10.0}}, "k80": {}}"#,
        )
        .expect("a valid table");
        let gavel = GavelOptions { users: 2, assignment: UserAssignment::RoundRobin, multi_gpu: MultiGpu::Refuse };
        let _ = gavel_format::parse("g.trace", &text, &table, &cluster_of(&["v100", "k80"]), &gavel);
        let philly = PhillyOptions {
            derivation: Derivation::AlloxSpeedups { mean: 10.0, sd: 10.0 },
            seed: 1,
            window: (0.0, f64::INFINITY),
            max_jobs: None,
            load_factor: 1.0,
            multi_gpu: MultiGpu::Drop,
        };
        let _ = philly_format::parse("p.csv", &text, &cluster_of(&["gpu", "cpu"]), &philly);
    }
}
