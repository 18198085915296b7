//! The plugin under a busy queue, side by side with `sched/backfill` on
//! the same cluster: jobs completed per minute, slurmctld's CPU, and how
//! long each cycle holds slurmctld's locks (and how long its saves of the
//! job state file take). Not a test: a measurement,
//! run by `scripts/bench-plugin.sh` (and skipped by `scripts/test.sh`).
//!
//! `FAIRMATCH_BENCH_JOBS` (default 5000) one-second jobs from 4 accounts
//! are submitted by 4 streams to 16 nodes (8 CPU nodes of 2 CPUs, 8 GPU
//! nodes of 1 GPU: 24 slots); half carry a hint. Once every job is in, the
//! measurement window (`FAIRMATCH_BENCH_WINDOW` s, default 60) counts the
//! jobs whose scripts ended in it and the CPU slurmctld used in it.
//! `FAIRMATCH_BENCH_CONF` is `fairmatch.conf`'s text (default: none).
//! `FAIRMATCH_BENCH_SPREAD` (seconds, default 0) spreads the run times
//! evenly over 1 s plus or minus that much (the same for both schedulers):
//! one-second jobs end together in waves, spread ones in a steady stream.
//! `FAIRMATCH_BENCH_WIDE=1` gives the GPU nodes 2 GPUs (and 2 CPUs) of
//! two types, a100 and v100 in turn (32 slots), and makes every fifth job
//! take a whole GPU node (`-p gpu --gres=gpu:2`), every fifth from the
//! third ask for one a100 (`--gres=gpu:a100:1`), every fifth from the
//! fifth take one GPU on each of two nodes (`-N2 --gpus-per-node=1`) and,
//! each GPU having two shards, every tenth from the second ask for one
//! shard (`--gres=shard:1`).

use crate::harness::{harness_time, now, run, Cluster};
use std::time::Duration;

struct Throughput {
    submit_seconds: f64,
    completed: usize,
    window: f64,
    cpu_seconds: f64,
    /// Per cycle, microseconds under slurmctld's locks in all (fairmatch's
    /// debug log), in the window.
    locked_us: Vec<u64>,
    /// Per cycle, the longest single hold of the locks, in wall time and
    /// in the agent thread's CPU time (the rest is waiting for a CPU).
    longest_hold_us: Vec<u64>,
    longest_hold_cpu_us: Vec<u64>,
    /// Cycles that found every CPU held and skipped the plan.
    planless: usize,
    /// Per cycle that wrote the job state file, the save's wall time: it
    /// holds the job read lock while it packs every job record (Slurm's
    /// dump_all_job_state()), then writes the file unlocked; an upper bound
    /// on that hold, which `locked_us` leaves out.
    state_save_us: Vec<u64>,
    /// After the window, with the queue emptied: seconds from sbatch to the
    /// script's start, for single jobs submitted to an idle cluster.
    probe_latency: Vec<f64>,
    sdiag_max_cycle_us: Option<u64>,
    sdiag_mean_cycle_us: Option<u64>,
    backfill_max_cycle_us: Option<u64>,
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// slurmctld's user + system CPU seconds so far.
fn ctld_cpu_seconds(c: &Cluster) -> f64 {
    let pid = std::fs::read_to_string(c.path().join("slurmctld.pid")).expect("slurmctld.pid");
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).expect("stat");
    // Fields after the command name's closing parenthesis; utime and stime
    // are the 14th and 15th fields of the whole line.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    let hz =
        String::from_utf8_lossy(&run(std::process::Command::new("getconf").arg("CLK_TCK")).stdout)
            .trim()
            .parse::<f64>()
            .unwrap_or(100.0);
    ticks / hz
}

fn sdiag_value(sdiag: &str, section: &str, key: &str) -> Option<u64> {
    let start = sdiag.find(section)?;
    sdiag[start..]
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// The `i`-th job of stream `w`: 1 s plus or minus `spread`, spread evenly
/// (a fixed sequence, so both schedulers get the same jobs).
fn run_time(spread: f64, w: usize, i: usize) -> f64 {
    let u = ((i * 7919 + w * 104_729) % 1000) as f64 / 1000.0;
    1.0 + spread * (2.0 * u - 1.0)
}

fn throughput(sched: &str, n: usize, window: f64, spread: f64) -> Throughput {
    let wide = std::env::var("FAIRMATCH_BENCH_WIDE").is_ok_and(|v| v == "1");
    let gpus = if wide { "2" } else { "1" };
    let types = if wide { "a100,v100" } else { "" };
    let c = Cluster::start(
        &[
            "--sched",
            sched,
            "--cpu-nodes",
            "8",
            "--cpus",
            "2",
            "--gpu-nodes",
            "8",
            "--gpus",
            gpus,
            "--gpu-node-cpus",
            gpus,
            "--gpu-types",
            types,
            "--shards",
            if wide { "2" } else { "" },
            "--conf-line",
            "MaxJobCount=50000",
            "--conf-line",
            "MinJobAge=3600",
            "--conf-line",
            "SlurmctldDebug=debug",
        ],
        &std::env::var("FAIRMATCH_BENCH_CONF").unwrap_or_default(),
    );
    let start = now();
    std::thread::scope(|s| {
        for w in 0..4 {
            let c = &c;
            s.spawn(move || {
                let account = format!("--account=acct{w}");
                let hint = "fairmatch: gpu=1s cpu=1s".to_string();
                for i in 0..n / 4 + usize::from(w < n % 4) {
                    let mut args = match i % 5 {
                        0 if wide => vec![account.as_str(), "-p", "gpu", "--gres=gpu:2"],
                        2 if wide => vec![account.as_str(), "-p", "gpu", "--gres=gpu:a100:1"],
                        4 if wide => {
                            vec![account.as_str(), "-p", "gpu", "-N2", "--gpus-per-node=1"]
                        }
                        1 if wide && i % 10 == 1 => {
                            vec![account.as_str(), "-p", "gpu", "--gres=shard:1"]
                        }
                        _ => vec![account.as_str(), "-p", "cpu,gpu"],
                    };
                    if i % 2 == 0 {
                        args.extend(["--comment", hint.as_str()]);
                    }
                    let t = run_time(spread, w, i);
                    c.submit(&args, t, t);
                }
            });
        }
    });
    let submitted = now();
    let cpu_before = ctld_cpu_seconds(&c);
    std::thread::sleep(Duration::from_secs_f64(window));
    let cpu_after = ctld_cpu_seconds(&c);
    let ended = now();
    let completed = c
        .records()
        .iter()
        .filter(|(_, r)| r.end >= submitted && r.end < ended)
        .count();
    let log = c.log();
    let cycles: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("fairmatch: cycle "))
        .filter(|l| harness_time(l).is_some_and(|t| t >= submitted && t < ended))
        .collect();
    let number_after = |l: &str, marker: &str| -> Option<u64> {
        l.split(marker).nth(1)?.split(' ').next()?.parse().ok()
    };
    let locked_us = cycles
        .iter()
        .filter_map(|l| number_after(l, " us ("))
        .collect();
    let longest_hold_us = cycles
        .iter()
        .filter_map(|l| number_after(l, "longest "))
        .collect();
    let longest_hold_cpu_us = cycles
        .iter()
        .filter_map(|l| number_after(l, "longest on a CPU "))
        .collect();
    let planless = cycles
        .iter()
        .filter(|l| l.contains("no plan: every CPU held"))
        .count();
    let state_save_us = cycles
        .iter()
        .filter_map(|l| number_after(l, "state save "))
        .filter(|&us| us > 0)
        .collect();
    let sdiag = c.sdiag();
    let probe_latency = probe_latencies(&c);
    Throughput {
        submit_seconds: submitted - start,
        completed,
        window: ended - submitted,
        cpu_seconds: cpu_after - cpu_before,
        locked_us,
        longest_hold_us,
        longest_hold_cpu_us,
        planless,
        state_save_us,
        probe_latency,
        sdiag_max_cycle_us: sdiag_value(&sdiag, "Main schedule statistics", "Max cycle:"),
        sdiag_mean_cycle_us: sdiag_value(&sdiag, "Main schedule statistics", "Mean cycle:"),
        backfill_max_cycle_us: sdiag_value(&sdiag, "Backfilling stats", "Max cycle:"),
    }
}

/// Empties the queue, waits for the cluster to go idle, then submits
/// `PROBES` hinted jobs one at a time: each would start at once under any
/// scheduler. Returns sbatch-to-script-start seconds, which include
/// slurmd's launch, the same under both schedulers.
fn probe_latencies(c: &Cluster) -> Vec<f64> {
    const PROBES: usize = 10;
    run(c.cmd("scancel").args(["--state=PENDING"]));
    let idle_by = now() + 120.0;
    while !String::from_utf8_lossy(&run(c.cmd("squeue").args(["-h", "-o", "%i"])).stdout)
        .trim()
        .is_empty()
    {
        assert!(now() < idle_by, "the cluster did not drain");
        std::thread::sleep(Duration::from_millis(200));
    }
    (0..PROBES)
        .map(|_| {
            let before = now();
            let id = c.submit(
                &["-p", "cpu,gpu", "--comment", "fairmatch: gpu=1s cpu=1s"],
                0.1,
                0.1,
            );
            c.wait_done(&[id], Duration::from_secs(60));
            c.record(id).start - before
        })
        .collect()
}

fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    Some(sorted[i])
}

#[test]
#[ignore = "a measurement, not a test: run scripts/bench-plugin.sh"]
fn bench_plugin_throughput_against_backfill() {
    let n = env_number("FAIRMATCH_BENCH_JOBS", 5000);
    let window = env_number("FAIRMATCH_BENCH_WINDOW", 60) as f64;
    let spread: f64 = std::env::var("FAIRMATCH_BENCH_SPREAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|s: &f64| (0.0..1.0).contains(s))
        .unwrap_or(0.0);
    let show =
        |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{:.1} ms", v as f64 / 1000.0));
    let mut rows = Vec::new();
    let only = std::env::var("FAIRMATCH_BENCH_ONLY").unwrap_or_default();
    for sched in ["sched/backfill", "sched/fairmatch"] {
        if !only.is_empty() && !sched.ends_with(only.as_str()) {
            continue;
        }
        rows.push((sched, throughput(sched, n, window, spread)));
    }
    println!(
        "\n{n} jobs of 1 s (plus or minus {spread} s), 4 accounts, 16 nodes (24 slots); window {window:.0} s after the last submission\n"
    );
    println!("| scheduler | submit | jobs completed per minute | slurmctld CPU | locks per cycle, in all: p50 / p90 / p99 / max | longest single hold: p50 / p99 / max | its CPU time: p50 / p99 / max | cycles without a plan | state saves: p50 / p99 / max | sdiag main cycle mean / max | sdiag backfilling max cycle | idle start latency p50 / max |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let distribution = |v: &[u64], qs: &[f64]| -> String {
        if v.is_empty() {
            return "-".to_string();
        }
        let mut sorted = v.to_vec();
        sorted.sort_unstable();
        let mut parts: Vec<String> = qs.iter().map(|q| show(percentile(&sorted, *q))).collect();
        parts.push(show(sorted.last().copied()));
        format!("{} ({} cycles)", parts.join(" / "), sorted.len())
    };
    for (sched, t) in &rows {
        let per_minute = t.completed as f64 * 60.0 / t.window;
        let cpu = 100.0 * t.cpu_seconds / t.window;
        let mut probes = t.probe_latency.clone();
        probes.sort_by(f64::total_cmp);
        let probe = if probes.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.2} / {:.2} s",
                probes[probes.len() / 2],
                probes[probes.len() - 1]
            )
        };
        println!(
            "| {sched} | {:.1} s | {per_minute:.0} | {cpu:.1}% | {} | {} | {} | {} | {} | {} / {} | {} | {probe} |",
            t.submit_seconds,
            distribution(&t.locked_us, &[0.5, 0.9, 0.99]),
            distribution(&t.longest_hold_us, &[0.5, 0.99]),
            distribution(&t.longest_hold_cpu_us, &[0.5, 0.99]),
            if t.locked_us.is_empty() { "-".to_string() } else { t.planless.to_string() },
            distribution(&t.state_save_us, &[0.5, 0.99]),
            show(t.sdiag_mean_cycle_us),
            show(t.sdiag_max_cycle_us),
            show(t.backfill_max_cycle_us),
        );
    }
    if rows.len() < 2 {
        return;
    }
    let (_, b) = &rows[0];
    let (_, f) = &rows[1];
    println!(
        "\nA cycle without a plan found every CPU held. A state save (fairmatch's, before its \
         launches and after endings) holds the job read lock while it packs every job record, \
         then writes the file: its wall time bounds that hold, which the lock columns leave out."
    );
    println!(
        "\nsdiag's main schedule cycle is the time under slurmctld's locks; under fairmatch its \
         backfilling section holds fairmatch's whole cycle, solve included (outside the locks)."
    );
    println!(
        "\nfairmatch / backfill: throughput {:.2}x, slurmctld CPU {:.2}x",
        (f.completed as f64 / f.window) / (b.completed as f64 / b.window).max(1e-9),
        (f.cpu_seconds / f.window) / (b.cpu_seconds / b.window).max(1e-9),
    );
    assert!(
        b.completed > 0 && f.completed > 0,
        "nothing completed in the window"
    );
}
