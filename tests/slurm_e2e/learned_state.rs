//! What fairmatch learned outlives slurmctld on a real cluster: a learned
//! run time is still the estimate after a restart, a torn state file is
//! refused with a log line and never a crash, and (with slurmdbd and
//! priority/multifactor) an account that used the cluster heavily before
//! a restart still waits behind one that did not, and fair tree's ranking
//! down the account tree holds, as under backfill.

use super::harness::{self, Cluster};
use std::time::Duration;

/// One one-CPU node in `cpu` (the GPU nodes are left alone).
const ONE_CPU: &[&str] = &["--cpu-nodes", "1", "--cpus", "1"];

fn state_file(c: &Cluster) -> std::path::PathBuf {
    c.path().join("state").join("fairmatch_state")
}

/// The runs `fairmatch estimates` reads in the cluster's state file.
fn learned_runs(c: &Cluster) -> u64 {
    let out = harness::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_fairmatch"))
            .args(["estimates", "--json"])
            .arg(state_file(c)),
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    rows.as_array()
        .expect("rows")
        .iter()
        .map(|r| r["runs"].as_u64().expect("runs"))
        .sum()
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn t_a_learned_run_time_survives_a_controller_restart() {
    let c = Cluster::start(
        &[&["--sched", "sched/fairmatch"], ONE_CPU].concat(),
        "IntervalMs=100\n",
    );
    // No hint and no time limit: only history can tell its run time.
    let nightly = || c.submit(&["-p", "cpu", "-J", "nightly"], 2.0, 2.0);
    let first = nightly();
    c.wait_done(&[first], Duration::from_secs(60));
    // Learned before the restart (in the first cycle after its end
    // second): the next job's note says so.
    std::thread::sleep(Duration::from_millis(1500));
    let second = nightly();
    c.wait_done(&[second], Duration::from_secs(60));
    assert!(
        c.admin_comment(second).contains("(history)"),
        "{}",
        c.log_tail()
    );
    c.restart_controller(None);
    assert!(
        c.log().contains("restored 1 learned run times"),
        "{}",
        c.log_tail()
    );
    let third = nightly();
    c.wait_done(&[third], Duration::from_secs(60));
    let note = c.admin_comment(third);
    eprintln!("learned state: after a restart, the third job's note reads {note:?}");
    assert!(note.contains("(history)"), "{note:?}\n{}", c.log_tail());
    // slurmctld lists the earlier jobs again after each restart: each run
    // is learned once. A job is learned in the first cycle after its end
    // second, so one that ends just before a shutdown is learned after the
    // restart: the fourth may or may not be in the file yet, the first
    // three are, once each (twice would make 5 or more).
    c.restart_controller(None);
    let fourth = nightly();
    c.wait_done(&[fourth], Duration::from_secs(60));
    c.restart_controller(None);
    let runs = learned_runs(&c);
    eprintln!("learned state: {runs} runs learned of 4 jobs, over 3 restarts");
    assert!((3..=4).contains(&runs), "{runs} runs\n{}", c.log_tail());

    // A torn state file: refused with a log line, and the controller and
    // the plugin go on. A crash, not a shutdown, which would save a whole
    // file over it (a save between the two lines, every 30 s of plans at
    // most, would too: the window is a few milliseconds).
    let text = std::fs::read_to_string(state_file(&c)).expect("saved at shutdown");
    std::fs::write(state_file(&c), &text[..text.len() / 2]).unwrap();
    c.crash_controller();
    assert!(c.log().contains("ignoring"), "{}", c.log_tail());
    let fifth = c.submit(&["-p", "cpu", "-J", "nightly"], 1.0, 1.0);
    c.wait_done(&[fifth], Duration::from_secs(60));
    assert_eq!(c.state(fifth), "COMPLETED");
    assert!(c.controller_up());
}

/// Nothing is learned of a job until its first run ends. Meanwhile the
/// time that run has run is the floor of the next run's estimate on that
/// flavor, and the note says so.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn t_a_run_in_flight_bounds_the_next_runs_estimate() {
    let c = Cluster::start(
        &[&["--sched", "sched/fairmatch"], ONE_CPU].concat(),
        "IntervalMs=100\nDefaultRuntime=2\n",
    );
    let sweep = |seconds| c.submit(&["-p", "cpu", "-J", "sweep"], seconds, seconds);
    let first = sweep(60.0);
    let started = c.wait_state(first, "RUNNING", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(8));
    // The one CPU is held: the next run waits, and its first plan leaves
    // the note.
    let second = sweep(1.0);
    let queued = harness::now();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut note = c.admin_comment(second);
    while note.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        note = c.admin_comment(second);
    }
    eprintln!("in flight: the second run's note reads {note:?}");
    let estimate: f64 = note
        .split("cpu=")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("s (a run in flight)"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{note:?}\n{}", c.log_tail()));
    // Slurm's start time is in whole seconds; the note is written within
    // the deadline above.
    let ran = queued - started;
    assert!(
        estimate >= ran - 2.0 && estimate <= ran + 22.0,
        "{estimate} s against {ran:.1} s run when queued"
    );
    assert_eq!(c.state(second), "PENDING");
    harness::run(c.cmd("scancel").arg(first.to_string()));
    c.wait_done(&[second], Duration::from_secs(60));
}

/// A site ran backfill with slurmdbd; it switches to fairmatch, which has
/// no state file yet: its first start reads the runs slurmdbd saw
/// complete, so a job with no hint and no limit is estimated from them.
/// slurmctld has purged those jobs (`MinJobAge=2`), so slurmdbd is the
/// only place they are known. (That runs slurmctld still lists are not
/// learned twice is `runs_from_accounting_are_learned_once_beside_slurmctlds_own`.)
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn t_run_times_are_read_from_slurmdbd_at_the_first_start() {
    let c = Cluster::start(
        &[
            &["--sched", "sched/backfill"],
            ONE_CPU,
            &["--accounting", "--conf-line", "MinJobAge=2"],
        ]
        .concat(),
        "IntervalMs=100\n",
    );
    let sacctmgr = |args: &[&str]| harness::run(c.cmd("sacctmgr").arg("-i").args(args));
    sacctmgr(&["add", "account", "ops"]);
    sacctmgr(&["add", "user", "root", "Account=ops"]);
    std::thread::sleep(Duration::from_secs(1)); // slurmctld hears of it
    let nightly = || c.submit(&["-p", "cpu", "-J", "nightly"], 2.0, 2.0);
    let before: Vec<u32> = (0..3).map(|_| nightly()).collect();
    c.wait_done(&before, Duration::from_secs(90));
    // slurmdbd hears of the last end a moment later.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let out = harness::run(c.cmd("sacct").args([
            "-n",
            "-X",
            "-P",
            "-S",
            "2020-01-01",
            "-o",
            "JobName,State",
        ]));
        let listed = String::from_utf8_lossy(&out.stdout).to_string();
        let done = listed.lines().filter(|l| *l == "nightly|COMPLETED").count();
        if done == before.len() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "slurmdbd lists {done} of 3 jobs:\n{listed}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // slurmctld purges ended jobs past MinJobAge once a minute.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let listed = |id: u32| {
        c.cmd("scontrol")
            .args(["show", "job", &id.to_string()])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    while before.iter().any(|&id| listed(id)) {
        assert!(
            std::time::Instant::now() < deadline,
            "slurmctld still lists the jobs"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    c.restart_controller(Some("sched/fairmatch"));
    // The agent reads slurmdbd before its first cycle.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let read = loop {
        if let Some(line) = c.log().lines().find(|l| l.contains("from slurmdbd")) {
            break line.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no slurmdbd read\n{}",
            c.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!("first start: {read}");
    assert!(read.contains("read 3 completed jobs"), "{read}");
    let after = nightly();
    // Read while it runs: it is purged soon after it ends.
    c.wait_state(after, "RUNNING", Duration::from_secs(60));
    let note = c.admin_comment(after);
    c.wait_done(&[after], Duration::from_secs(60));
    eprintln!("first start: the next job's note reads {note:?}");
    assert!(note.contains("(history)"), "{note:?}\n{}", c.log_tail());
    // A restart with a state file reads slurmdbd no more; each run is in
    // the state once (the last may be learned after the restart, as in
    // t_a_learned_run_time_survives_a_controller_restart).
    c.restart_controller(None);
    let reads = c.log().matches("from slurmdbd").count();
    assert_eq!(reads, 1, "{}", c.log_tail());
    let runs = learned_runs(&c);
    eprintln!("first start: {runs} runs learned of 4 jobs");
    assert!((3..=4).contains(&runs), "{runs} runs\n{}", c.log_tail());
}

/// A one-CPU cluster under `sched` with slurmdbd and priority/multifactor
/// (fair share weighted above all), `extra` slurm.conf lines, fairmatch's
/// `FairshareBy=by`, and `accounts` (`name` or `name:parent`) with the
/// user in each one that is no other's parent.
fn fair_share_cluster(sched: &str, extra: &[&str], by: &str, accounts: &[&str]) -> Cluster {
    let mut args: Vec<&str> = vec!["--sched", sched, "--sched-params", "bf_interval=1"];
    args.extend(ONE_CPU);
    args.extend([
        "--accounting",
        "--conf-line",
        "PriorityType=priority/multifactor",
        "--conf-line",
        "PriorityWeightFairshare=10000",
    ]);
    for line in extra {
        args.extend(["--conf-line", line]);
    }
    let c = Cluster::start(
        &args,
        &format!("IntervalMs=100\nAlpha=0.5\nFairshareBy={by}\n"),
    );
    let sacctmgr = |args: &[&str]| harness::run(c.cmd("sacctmgr").arg("-i").args(args));
    for account in accounts {
        match account.split_once(':') {
            Some((name, parent)) => {
                sacctmgr(&["add", "account", name, &format!("Parent={parent}")])
            }
            None => sacctmgr(&["add", "account", account]),
        };
    }
    let parents: Vec<&str> = accounts
        .iter()
        .filter_map(|a| a.split_once(':').map(|(_, parent)| parent))
        .collect();
    for account in accounts {
        let name = account.split(':').next().expect("a name");
        if !parents.contains(&name) {
            sacctmgr(&["add", "user", "root", &format!("Account={name}")]);
        }
    }
    std::thread::sleep(Duration::from_secs(1)); // slurmctld hears of it
    c
}

/// A job of `seconds` in `account`, with its hint.
fn account_job(c: &Cluster, account: &str, seconds: f64) -> u32 {
    c.submit(
        &[
            "-p",
            "cpu",
            &format!("--account={account}"),
            "--comment",
            &format!("fairmatch: cpu={seconds}s"),
        ],
        seconds,
        seconds,
    )
}

/// Behind a blocker in `other`, two jobs of `older`, then a second later
/// two of `newer`: the first of the four to start, and the two pairs.
fn first_of_two_pairs(c: &Cluster, older: &str, newer: &str) -> (u32, Vec<u32>, Vec<u32>) {
    let blocker = account_job(c, "other", 6.0);
    c.wait_state(blocker, "RUNNING", Duration::from_secs(30));
    let first_pair: Vec<u32> = (0..2).map(|_| account_job(c, older, 2.0)).collect();
    std::thread::sleep(Duration::from_millis(1100)); // older by a second
    let second_pair: Vec<u32> = (0..2).map(|_| account_job(c, newer, 2.0)).collect();
    assert_eq!(
        c.state(blocker),
        "RUNNING",
        "the queue was not ready in time"
    );
    let all = [first_pair.clone(), second_pair.clone()].concat();
    c.wait_done(&all, Duration::from_secs(90));
    let first = *all
        .iter()
        .min_by(|&&a, &&b| c.record(a).start.total_cmp(&c.record(b).start))
        .expect("four jobs");
    (first, first_pair, second_pair)
}

/// Account `heavy` runs the cluster for a while; slurmctld restarts; then,
/// behind a blocker, two jobs of `heavy` wait, older than two of `light`.
/// Returns the first of the four to start.
fn first_after_restart(sched: &str) -> (u32, Vec<u32>, Vec<u32>) {
    let c = fair_share_cluster(sched, &[], "account", &["heavy", "light", "other"]);
    let used: Vec<u32> = (0..3).map(|_| account_job(&c, "heavy", 4.0)).collect();
    c.wait_done(&used, Duration::from_secs(90));
    c.restart_controller(None);
    let (first, heavy, light) = first_of_two_pairs(&c, "heavy", "light");
    import_sacct(&c, used.len() + 1 + heavy.len() + light.len());
    (first, heavy, light)
}

/// `fairmatch import sacct` reads this cluster's accounting: every job
/// that ran becomes a row of the workload, on the `cpu` flavor.
fn import_sacct(c: &Cluster, jobs: usize) {
    let fields = fairmatch::io::history_import::SACCT_FIELDS;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let log = loop {
        // slurmdbd hears of the last ends a moment later.
        let out = harness::run(c.cmd("sacct").env("SLURM_TIME_FORMAT", "%s").args([
            "--allocations",
            "--parsable2",
            "--noheader",
            "--starttime",
            "2020-01-01",
            &format!("--format={fields}"),
        ]));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let completed = text.lines().filter(|l| l.ends_with("|COMPLETED")).count();
        if completed >= jobs || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let log_path = c.path().join("sacct.txt");
    std::fs::write(&log_path, &log).unwrap();
    let (w, y) = (c.path().join("w.csv"), c.path().join("c.yaml"));
    harness::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_fairmatch"))
            .args(["import", "sacct"])
            .arg(&log_path)
            .arg("--workload-out")
            .arg(&w)
            .arg("--cluster-out")
            .arg(&y),
    );
    let workload = std::fs::read_to_string(&w).unwrap();
    let rows = workload.lines().count() - 1;
    eprintln!("sacct import: {rows} jobs of {jobs} from this cluster's slurmdbd");
    assert_eq!(rows, jobs, "{log}\n{workload}");
    assert!(workload.starts_with("job_id,user,arrival,duration_cpu,estimate_cpu,width,nodes\n"));
    let cluster = std::fs::read_to_string(&y).unwrap();
    assert!(
        cluster.contains("name: \"cpu\", slots: 1, per_node: 1"),
        "{cluster}"
    );
    // And it replays.
    harness::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_fairmatch"))
            .args(["compare", "--cluster"])
            .arg(&y)
            .arg("--workload")
            .arg(&w),
    );
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn u_an_account_that_used_the_cluster_waits_behind_one_that_did_not_after_a_restart() {
    // Orders, not times, are checked: both at once.
    let runs = harness::concurrently(harness::schedulers().to_vec(), |sched| {
        (sched, first_after_restart(sched))
    });
    for (sched, (first, heavy, light)) in runs {
        eprintln!(
            "fair share after a restart: under {sched} job {first} started first \
             (heavy {heavy:?}, light {light:?})"
        );
        assert!(light.contains(&first), "{sched}: {first} is not light's");
    }
}

/// Fair tree: account `physics` used the cluster through its child
/// `phys_a`; then, behind a blocker, two jobs of its other child `phys_b`
/// (which itself used nothing) wait, older than two of `bio_a`, under an
/// account tree that used nothing. Returns the first of the four to start.
fn first_under_fair_tree(sched: &str) -> (u32, Vec<u32>, Vec<u32>) {
    let c = fair_share_cluster(
        sched,
        // Fair tree ranks again each minute at the shortest.
        &["PriorityCalcPeriod=1"],
        "tree",
        &[
            "physics",
            "bio",
            "other",
            "phys_a:physics",
            "phys_b:physics",
            "bio_a:bio",
        ],
    );
    let used: Vec<u32> = (0..3).map(|_| account_job(&c, "phys_a", 4.0)).collect();
    c.wait_done(&used, Duration::from_secs(90));
    // Wait for fair tree's next ranking: root in bio_a above root in phys_b.
    let factor = |account: &str| -> f64 {
        let out =
            harness::run(
                c.cmd("sshare")
                    .args(["-a", "-n", "-P", "-o", "Account,User,FairShare"]),
            );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                (f.len() == 3 && f[0].trim() == account && f[1] == "root")
                    .then(|| f[2].parse().ok())
                    .flatten()
            })
            .unwrap_or(f64::NAN)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(150);
    // NaN (not listed yet) compares as not above.
    while factor("bio_a").partial_cmp(&factor("phys_b")) != Some(std::cmp::Ordering::Greater) {
        assert!(
            std::time::Instant::now() < deadline,
            "sshare never ranked bio_a above phys_b"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    eprintln!(
        "sshare: root in bio_a {}, in phys_b {}",
        factor("bio_a"),
        factor("phys_b")
    );
    first_of_two_pairs(&c, "phys_b", "bio_a")
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn u_fair_tree_puts_a_fresh_account_tree_before_a_used_one() {
    let runs = harness::concurrently(harness::schedulers().to_vec(), |sched| {
        (sched, first_under_fair_tree(sched))
    });
    for (sched, (first, phys, bio)) in runs {
        eprintln!(
            "fair tree: under {sched} job {first} started first (phys_b {phys:?}, bio_a {bio:?})"
        );
        assert!(bio.contains(&first), "{sched}: {first} is not bio_a's");
    }
}
