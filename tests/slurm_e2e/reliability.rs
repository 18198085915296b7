//! Reliability: controller restarts, dead and drained nodes, a burst of
//! submissions. Each scenario runs under sched/backfill and then under
//! sched/fairmatch in the same test, one cluster at a time; backfill is the
//! reference.

use super::harness::{now, run, Cluster};
use super::{hint, PREEMPTIVE};
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

/// What became of a workload's jobs.
#[derive(Debug, Default, Clone, PartialEq)]
struct Tally {
    submitted: usize,
    /// COMPLETED, its script run exactly once.
    completed: usize,
    /// Gone, or ended in any state but COMPLETED.
    lost: usize,
    /// Its script started more than once.
    duplicated: usize,
    /// Still pending or running at the deadline.
    stuck: usize,
    /// FAILED before its script started because slurmd deleted the script
    /// as "vestigial" (slurmd's own race at high churn: a step socket not
    /// yet listening, see `_step_connect` in Slurm's stepd_api.c). Counted
    /// apart, and only with that line in the node's log.
    slurmd_race: usize,
    restarts: usize,
    /// Seconds from the workload's start to its last job's end.
    makespan: f64,
    /// What Slurm and the job's own files say of each stuck or lost job,
    /// for the failure message.
    unfinished: Vec<String>,
}

impl Tally {
    fn perfect(&self) -> bool {
        self.completed + self.slurmd_race == self.submitted
            && self.lost + self.duplicated + self.stuck == 0
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "submitted {:>5}  completed {:>5}  lost {}  duplicated {}  stuck {}  slurmd race {}  restarts {}  makespan {:.1} s",
            self.submitted,
            self.completed,
            self.lost,
            self.duplicated,
            self.stuck,
            self.slurmd_race,
            self.restarts,
            self.makespan
        )
    }
}

/// Job states of every job slurmctld still knows, finished ones included
/// (MinJobAge keeps them 300 s).
fn states(c: &Cluster) -> HashMap<u32, String> {
    let out = run(c.cmd("squeue").args(["-h", "-t", "all", "-o", "%i %T"]));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.parse().ok()?, f.next()?.to_string()))
        })
        .collect()
}

/// Whether a node's slurmd log says it purged job `id`'s script.
fn script_purged_by_slurmd(c: &Cluster, id: u32) -> bool {
    let needle = "Purging vestigial job script";
    let script = format!("/job{id:05}/slurm_script");
    std::fs::read_dir(c.path()).is_ok_and(|d| {
        d.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.starts_with("slurmd-")
                && name.ends_with(".log")
                && std::fs::read_to_string(e.path()).is_ok_and(|log| {
                    log.lines()
                        .any(|l| l.contains(needle) && l.contains(&script))
                })
        })
    })
}

/// Waits up to `timeout` for `ids` to leave the queue, then counts.
fn tally(c: &Cluster, ids: &[u32], since: f64, timeout: Duration) -> Tally {
    let deadline = Instant::now() + timeout;
    while !c.live(ids).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
    }
    let states = states(c);
    let mut t = Tally {
        submitted: ids.len(),
        ..Tally::default()
    };
    for &id in ids {
        let runs = c.runs(id);
        if runs > 1 {
            t.duplicated += 1;
        }
        match states.get(&id).map(String::as_str) {
            Some("PENDING" | "RUNNING" | "COMPLETING" | "CONFIGURING" | "REQUEUED") => t.stuck += 1,
            Some("COMPLETED") if runs == 1 => {
                t.completed += 1;
                t.makespan = t.makespan.max(c.record(id).end - since);
            }
            Some("COMPLETED") => {}
            Some("FAILED") if runs == 0 && script_purged_by_slurmd(c, id) => t.slurmd_race += 1,
            _ => t.lost += 1,
        }
        if matches!(states.get(&id).map(String::as_str), Some("COMPLETED")) {
            continue;
        }
        let job = c.job(id);
        let field = |k: &str| job.get(k).map_or("?", String::as_str).to_string();
        t.unfinished.push(format!(
            "job {id}: {} reason {} node {} start {} end {}; script runs {} first at {:?}, record {}",
            field("JobState"),
            field("Reason"),
            field("NodeList"),
            field("StartTime"),
            field("EndTime"),
            runs,
            c.first_start(id).map(|s| s - since),
            std::fs::read_to_string(c.path().join(format!("rec-{id}"))).unwrap_or_default().trim()
        ));
    }
    t
}

/// An ending slurmctld has acknowledged reaches its state file within one
/// agent cycle under fairmatch (5 s under Slurm's own save). A SIGKILL
/// inside that cycle loses it, under any scheduler: the job comes back
/// RUNNING until a node registration (every ~200 s) requeues it. So a
/// SIGKILL waits for a quiet moment:
/// - no job script ended in the last 0.5 s, and none is due to end in the
///   next 0.3 s (nor overdue by up to 0.5 s): `jobs` gives each job's GPU
///   and other run time, and its `runs-N` file its start. The run times
///   are multiples of 0.5 s, so watching only past endings was not enough;
/// - every job whose script has ended is COMPLETED in slurmctld, and none
///   became so in the last 0.5 s. An ending is not acknowledged when the
///   script ends: a step whose completion message met a controller that
///   was down (the restart before) retries it up to 15 s later. In one CI
///   run (a release among 23.11 to 25.11), two jobs were still live 120 s
///   after the last kill, while six endings from before it were only
///   acknowledged after it: the likely cause is such a retry acknowledged
///   just before the kill;
/// - the state file was written after the last acknowledgement seen (or,
///   if none was seen while watching, after the last script ended), or
///   2 s have passed since (4x the 0.5 s that proved too short). "One
///   agent cycle" is not a fixed time. In a CI run on a machine loaded by other work, two jobs were RUNNING 120 s after the
///   last kill, their scripts ended 10 s before it: most likely the
///   cycle that would have saved their endings had not yet run 0.5 s
///   after they were acknowledged.
///
/// After 5 s the jobs due are no longer waited for, after 8 s the endings
/// that are not yet acknowledged are not either (the next controller takes
/// them), and after 20 s nothing is. Endings 0.5 to 5 s old are those
/// Slurm's own save would lose.
fn settle_endings(c: &Cluster, jobs: &[(u32, f64, f64)]) {
    let start = now();
    // Until watched for 0.5 s, an acknowledgement may have just happened.
    let mut last_ack = start;
    let mut ack_seen = false;
    let mut unacked_before: Vec<u32> = Vec::new();
    let state_file = c.path().join("state").join("job_state");
    loop {
        let t = now();
        let ended: HashMap<u32, f64> = c.records().into_iter().map(|(id, r)| (id, r.end)).collect();
        let states = states(c);
        let unacked: Vec<u32> = ended
            .keys()
            .copied()
            .filter(|id| states.get(id).map(String::as_str) != Some("COMPLETED"))
            .collect();
        if unacked_before.iter().any(|id| !unacked.contains(id)) {
            last_ack = t;
            ack_seen = true;
        }
        unacked_before = unacked;
        let saved = std::fs::metadata(&state_file)
            .and_then(|m| m.modified())
            .map_or(0.0, |m| {
                m.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64())
            });
        let must_be_saved = if ack_seen {
            last_ack
        } else {
            ended.values().copied().fold(0.0, f64::max)
        };
        // Waited for 2 s at most, so that a plugin that stopped saving
        // endings still loses one to the kill, and fails the test.
        let durable = saved > must_be_saved || t >= must_be_saved + 2.0;
        let acked =
            t >= last_ack + 0.5 && durable && (unacked_before.is_empty() || t >= start + 8.0);
        let recent = ended.values().any(|&end| end > t - 0.5);
        let due = jobs.iter().any(|&(id, gpu, other)| {
            !ended.contains_key(&id)
                && c.first_start(id).is_some_and(|begun| {
                    [gpu, other]
                        .iter()
                        .any(|d| (t - 0.5..t + 0.3).contains(&(begun + d)))
                })
        });
        if t >= start + 20.0 || (acked && !recent && (!due || t >= start + 5.0)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// 24 single-node hinted jobs from 3 users on 12 slots (about three
/// waves), with the controller restarted 4 times: SIGTERM as the first
/// wave is being started, SIGKILL while it runs, SIGTERM as jobs finish and
/// the next ones start, SIGKILL again. The two GPU nodes are of two types;
/// every fourth job takes a whole GPU node (`--gres=gpu:2`) and every
/// sixth from the second asks for one a100 (`--gres=gpu:a100:1`). A
/// launch a SIGKILL loses is requeued (`t_a_launch_lost...`), and waits
/// `cred_expire` (5 s here) to start again.
fn restart_scenario(sched: &str) -> (Tally, Cluster) {
    let c = Cluster::start(
        &[
            "--sched",
            sched,
            "--gpu-types",
            "a100,v100",
            "--cred-expire",
            "5",
        ],
        PREEMPTIVE,
    );
    let jobs: Vec<(u32, f64, f64)> = (0..24)
        .map(|i| {
            let g = 2.0 + (i * 7 % 5) as f64 * 0.5;
            let k = g * 1.5;
            let account = format!("--account=user{}", i % 3);
            let hint = hint(g, k);
            let mut args = vec![account.as_str(), "--comment", &hint];
            match i {
                _ if i % 4 == 3 => args.extend(["-p", "gpu", "--gres=gpu:2"]),
                _ if i % 6 == 1 => args.extend(["-p", "gpu", "--gres=gpu:a100:1"]),
                _ => args.extend(["-p", "cpu,gpu"]),
            }
            let id = c.submit(&args, g, k);
            (id, g, k)
        })
        .collect();
    let ids: Vec<u32> = jobs.iter().map(|j| j.0).collect();
    let begin = now();
    let plan = [(0.1, false), (3.0, true), (6.5, false), (10.0, true)];
    for &(at, kill) in &plan {
        let wait = begin + at - now();
        if wait > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(wait));
        }
        if kill {
            settle_endings(&c, &jobs);
            c.crash_controller();
        } else {
            c.restart_controller(None);
        }
    }
    let mut t = tally(&c, &ids, begin, Duration::from_secs(120));
    t.restarts = plan.len();
    (t, c)
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn q_every_job_completes_once_across_controller_restarts() {
    let backfill = if std::env::var_os("FAIRMATCH_SKIP_REFERENCE").is_some() {
        Tally::default()
    } else {
        restart_scenario("sched/backfill").0
    };
    let (fairmatch, c) = restart_scenario("sched/fairmatch");
    eprintln!("\ncontroller restarts (2x SIGTERM, 2x SIGKILL):");
    eprintln!("  sched/backfill   {backfill}");
    eprintln!("  sched/fairmatch  {fairmatch}");
    assert!(
        fairmatch.perfect(),
        "{fairmatch}\n{}\n{}",
        fairmatch.unfinished.join("\n"),
        c.log_tail()
    );
    assert!(c.controller_up());
    c.assert_no_preemption();
    let loads = c.log().matches("fairmatch: loaded").count();
    assert_eq!(loads, 1 + fairmatch.restarts, "{}", c.log_tail());
    // Backfill is the reference: fairmatch must do at least as well.
    assert!(
        fairmatch.completed >= backfill.completed,
        "backfill {backfill}, fairmatch {fairmatch}"
    );
}

/// fairmatch writes the job state file before it launches the scripts it
/// allocated, so a controller that dies between the two comes back with
/// jobs RUNNING whose scripts never reached a node. The fault makes the
/// crash land there every time: slurmctld SIGKILLs itself once the first
/// allocated scripts are saved. Slurm's own purge requeues such a job only
/// when its node next registers (200 s here, half an hour at the default
/// SlurmdTimeout); fairmatch asks the nodes to register once Slurm's grace
/// has passed, 23 s after the restart here. A requeued job waits
/// `cred_expire` (5 s here, Slurm's default 120 s) before it starts again.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn t_a_launch_lost_to_a_crash_is_requeued_and_runs_once() {
    let c = Cluster::start_with_env(
        &["--cred-expire", "5"],
        PREEMPTIVE,
        &[("FAIRMATCH_FAULT", "crash-before-launch")],
    );
    // Eligible in the same second, so that the cycle that starts any
    // starts all three (a release is one RPC per job, and the crash would
    // take the later ones with it).
    let ids: Vec<u32> = (0..3)
        .map(|_| {
            c.submit(
                &[
                    "--begin=now+3",
                    "-p",
                    "cpu,gpu",
                    "--comment",
                    &hint(1.0, 1.0),
                ],
                1.0,
                1.0,
            )
        })
        .collect();
    c.wait_log(
        "injected fault (FAIRMATCH_FAULT=crash-before-launch)",
        1,
        Duration::from_secs(30),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.controller_up() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!c.controller_up(), "the fault did not stop slurmctld");
    // Started again without the fault (the restart does not pass it on).
    let restarted = now();
    c.crash_controller();
    let lost: Vec<u32> = ids
        .iter()
        .copied()
        .filter(|&id| c.job(id)["JobState"] == "RUNNING" && c.runs(id) == 0)
        .collect();
    let t = tally(&c, &ids, restarted, Duration::from_secs(90));
    eprintln!(
        "launch lost to a crash: jobs {lost:?} were RUNNING without a script after the restart; {t}"
    );
    assert!(!lost.is_empty(), "no launch was lost: {}", c.log_tail());
    assert!(
        t.perfect(),
        "{t}\n{}\n{}",
        t.unfinished.join("\n"),
        c.log_tail()
    );
    let log = c.log();
    for &id in &lost {
        assert!(
            log.contains(&format!("Batch JobId={id} missing from batch node")),
            "JobId={id} was not requeued by Slurm: {}",
            c.log_tail()
        );
    }
    // Slurm's grace (BatchStartTimeout 10 s and MessageTimeout 10 s) and
    // ours (3 s), cred_expire and the 1 s run: 30 s of slack on a noisy
    // machine, far below the 200 s of Slurm's own next registration.
    assert!(t.makespan <= 23.0 + 5.0 + 1.0 + 30.0, "{t}");
    assert!(c.controller_up());
}

fn wait_node(c: &Cluster, node: &str, want: &[&str], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let st = c.node_state(node);
        if want.iter().any(|w| st == *w) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{node} is {st}, not {want:?}\n{}",
            c.log_tail()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Submits `n` GPU-fast hinted jobs (GPU 2 s, elsewhere 12 s).
fn gpu_fast(c: &Cluster, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| c.submit(&["-p", "cpu,gpu", "--comment", &hint(2.0, 12.0)], 2.0, 12.0))
        .collect()
}

/// What a node's death and return did to a workload.
struct NodeLoss {
    tally: Tally,
    /// Jobs that started on the node while Slurm had it DOWN or drained.
    started_on_lost_node: usize,
    /// Hinted jobs submitted after the node came back that ran on it.
    used_again: usize,
    /// The `--no-requeue` job's and the requeued job's final states.
    no_requeue: String,
    requeued: String,
    requeued_runs: usize,
}

/// g1 dies (slurmd and its job scripts SIGKILLed) while it runs two jobs
/// pinned to it: one `--no-requeue`, one requeueable. Hinted GPU-fast jobs
/// keep coming; g1 comes back; then c1 is drained and resumed.
fn node_loss_scenario(sched: &str) -> (NodeLoss, Cluster) {
    let c = Cluster::start(
        &[
            "--sched",
            sched,
            "--slurmd-timeout",
            "6",
            "--cred-expire",
            "5",
        ],
        PREEMPTIVE,
    );
    let pinned = ["-p", "gpu", "-w", "g1", "--gres=gpu:1"];
    let no_requeue = c.submit(&[&pinned[..], &["--no-requeue"]].concat(), 20.0, 20.0);
    let requeued = c.submit(&pinned, 4.0, 4.0);
    for id in [no_requeue, requeued] {
        let deadline = Instant::now() + Duration::from_secs(20);
        while c.runs(id) == 0 {
            assert!(Instant::now() < deadline, "{}", c.log_tail());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let mut ids = gpu_fast(&c, 4);
    c.kill_node("g1");
    let killed = now();
    ids.extend(gpu_fast(&c, 4));
    wait_node(&c, "g1", &["down*", "down"], Duration::from_secs(30));
    ids.extend(gpu_fast(&c, 4));
    std::thread::sleep(Duration::from_secs(2));
    // Taken before the node can come back: fairmatch may start jobs on g1
    // within a cycle of its registering, before a sinfo poll sees it.
    let restarting = now();
    c.start_node("g1");
    wait_node(&c, "g1", &["idle", "mix", "alloc"], Duration::from_secs(30));
    let after_return = gpu_fast(&c, 4);
    ids.extend(&after_return);

    // Drain c1 with work on it; it finishes, nothing new starts there.
    let on_c1 = c.submit(&["-p", "cpu", "-w", "c1"], 3.0, 3.0);
    while c.runs(on_c1) == 0 {
        std::thread::sleep(Duration::from_millis(100));
    }
    run(c
        .cmd("scontrol")
        .args(["update", "nodename=c1", "state=drain", "reason=test"]));
    let drained = now();
    let cpu_jobs: Vec<u32> = (0..6)
        .map(|_| c.submit(&["-p", "cpu,gpu", "--comment", &hint(30.0, 2.0)], 30.0, 2.0))
        .collect();
    ids.extend(&cpu_jobs);
    ids.push(on_c1);
    c.wait_done(&cpu_jobs, Duration::from_secs(60));
    let resuming = now();
    run(c
        .cmd("scontrol")
        .args(["update", "nodename=c1", "state=resume"]));
    let after_resume: Vec<u32> = (0..8)
        .map(|_| c.submit(&["-p", "cpu,gpu", "--comment", &hint(30.0, 2.0)], 30.0, 2.0))
        .collect();
    ids.extend(&after_resume);

    let mut tally = tally(&c, &ids, killed, Duration::from_secs(90));
    // The requeued job waits out Slurm's credential window, then runs.
    let mut requeued_state = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        requeued_state = states(&c).get(&requeued).cloned().unwrap_or_default();
        if requeued_state == "COMPLETED" {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let records = c.records();
    let started = |id: &u32| {
        records
            .iter()
            .find(|(j, _)| j == id)
            .map(|(_, r)| r.clone())
    };
    let mut started_on_lost_node = 0;
    for id in &ids {
        if let Some(r) = started(id) {
            let g1_down = r.node == "g1" && r.start > killed + 1.0 && r.start < restarting;
            let c1_drained = r.node == "c1" && r.start > drained + 0.5 && r.start < resuming;
            if g1_down || c1_drained {
                started_on_lost_node += 1;
            }
        }
    }
    let used_again = after_return
        .iter()
        .chain(&after_resume)
        .filter(|id| started(id).is_some_and(|r| r.node == "g1" || r.node == "c1"))
        .count();
    tally.restarts = 0;
    let loss = NodeLoss {
        tally,
        started_on_lost_node,
        used_again,
        no_requeue: states(&c).get(&no_requeue).cloned().unwrap_or_default(),
        requeued: requeued_state,
        requeued_runs: c.runs(requeued),
    };
    (loss, c)
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn r_a_dead_or_drained_node_loses_only_what_slurm_says() {
    for sched in ["sched/backfill", "sched/fairmatch"] {
        let (loss, c) = node_loss_scenario(sched);
        eprintln!(
            "\nnode loss, {sched}: {}\n  started on a down/drained node {}, hinted jobs on the returned nodes {}, \
             --no-requeue job {}, requeued job {} after {} runs",
            loss.tally, loss.started_on_lost_node, loss.used_again, loss.no_requeue, loss.requeued, loss.requeued_runs
        );
        let t = &loss.tally;
        assert!(
            t.perfect(),
            "{sched}: {t}\n{}\n{}",
            t.unfinished.join("\n"),
            c.log_tail()
        );
        assert_eq!(loss.started_on_lost_node, 0, "{sched}");
        assert_eq!(loss.no_requeue, "NODE_FAIL", "{sched}");
        assert_eq!(loss.requeued, "COMPLETED", "{sched}");
        assert_eq!(loss.requeued_runs, 2, "{sched}");
        if sched == "sched/fairmatch" {
            // GPU-fast jobs with g1 back: four GPUs, so two of them go to
            // g1; CPU-fast jobs with c1 back: eight jobs, eight CPUs.
            assert!(loss.used_again >= 2, "returned nodes unused");
            c.assert_no_preemption();
        }
    }
}

/// `ave_time` (microseconds) of RPC `name` in `sdiag` output.
fn rpc_ave_us(sdiag: &str, name: &str) -> Option<u64> {
    let line = sdiag
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))?;
    let at = line.find("ave_time:")? + "ave_time:".len();
    line[at..].split_whitespace().next()?.parse().ok()
}

/// What a burst did, with `sdiag`'s view of slurmctld's RPC latency.
struct Burst {
    tally: Tally,
    submit_seconds: f64,
    submit_us: Option<u64>,
    complete_us: Option<u64>,
    epilog_us: Option<u64>,
    info_us: Option<u64>,
    max_cycle_us: Option<u64>,
}

/// A one-millisecond lock budget makes every cycle of the burst yield
/// slurmctld's locks many times, copying the queue and starting jobs in
/// between other threads' work, so the burst also tests that a yield loses
/// and duplicates nothing.
const BURST_CONF: &str = "LockHoldMs=1\n";

/// Per fairmatch cycle in `log`: how many times it took slurmctld's locks,
/// the CPU time of its first hold (the walk over the job list, see
/// `fm_hold_t`), and the most CPU time any later hold used, in
/// microseconds.
fn lock_holds(log: &str) -> Vec<(u64, u64, u64)> {
    let number_after = |l: &str, marker: &str| -> Option<u64> {
        l.split(marker).nth(1)?.split(' ').next()?.parse().ok()
    };
    log.lines()
        .filter(|l| l.contains("fairmatch: cycle "))
        .filter_map(|l| {
            Some((
                number_after(l, "locks in ")?,
                number_after(l, "first hold on a CPU ")?,
                number_after(l, "later holds at most ")?,
            ))
        })
        .collect()
}

/// The holds slurmctld logged as over twice `LockHoldMs`, as (CPU us,
/// wall us, phase), the most CPU first.
fn slow_holds(log: &str) -> Vec<(u64, u64, String)> {
    let mut slow: Vec<(u64, u64, String)> = log
        .lines()
        .filter_map(|l| {
            let rest = l.split("held slurmctld's locks for ").nth(1)?;
            let wall = rest.split(' ').next()?.parse().ok()?;
            let cpu = rest.split(" (").nth(1)?.split(' ').next()?.parse().ok()?;
            let phase = rest.rsplit("; ").next()?.split(')').next()?.to_string();
            Some((cpu, wall, phase))
        })
        .collect();
    slow.sort_unstable_by_key(|h| std::cmp::Reverse(h.0));
    slow
}

/// `n` zero-length jobs from 4 users, submitted by 4 concurrent sbatch
/// streams as fast as sbatch returns; half of them hinted.
fn burst_scenario(sched: &str, n: usize) -> (Burst, Cluster) {
    let c = Cluster::start(
        &[
            "--sched",
            sched,
            "--cpus",
            "8",
            "--gpu-types",
            "a100,v100",
            "--conf-line",
            "MaxJobCount=50000",
            "--conf-line",
            "MinJobAge=3600",
            // fairmatch's cycle lines (lock holds) are at debug level.
            "--conf-line",
            "SlurmctldDebug=debug",
        ],
        &std::env::var("FAIRMATCH_BURST_CONF").unwrap_or_else(|_| BURST_CONF.to_string()),
    );
    if let Ok(level) = std::env::var("FAIRMATCH_BURST_DEBUG") {
        run(c.cmd("scontrol").args(["setdebug", &level]));
    }
    let start = now();
    let ids: Vec<u32> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let c = &c;
                s.spawn(move || {
                    let account = format!("--account=user{w}");
                    (0..n / 4 + usize::from(w < n % 4))
                        .map(|i| {
                            // One job in ten takes a whole GPU node,
                            // one in ten asks for one a100.
                            let mut args = match i % 10 {
                                5 => vec![account.as_str(), "-p", "gpu", "--gres=gpu:2"],
                                7 => vec![account.as_str(), "-p", "gpu", "--gres=gpu:a100:1"],
                                _ => vec![account.as_str(), "-p", "cpu,gpu"],
                            };
                            let comment = hint(0.0, 0.0);
                            if i % 2 == 0 {
                                args.extend(["--comment", comment.as_str()]);
                            }
                            c.submit(&args, 0.0, 0.0)
                        })
                        .collect::<Vec<u32>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let submit_seconds = now() - start;
    assert_eq!(ids.len(), n);
    // Count finished scripts from their records, not with squeue: polling
    // slurmctld would add RPCs of our own to what is measured.
    let deadline = Instant::now() + Duration::from_secs(1800);
    let ended = |c: &Cluster| {
        std::fs::read_dir(c.path())
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("rec-"))
                    .count()
            })
            .unwrap_or(0)
    };
    while ended(&c) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(2));
    }
    let sdiag = c.sdiag();
    let tally = tally(&c, &ids, start, Duration::from_secs(60));
    let burst = Burst {
        tally,
        submit_seconds,
        submit_us: rpc_ave_us(&sdiag, "REQUEST_SUBMIT_BATCH_JOB"),
        complete_us: rpc_ave_us(&sdiag, "REQUEST_COMPLETE_BATCH_SCRIPT"),
        epilog_us: rpc_ave_us(&sdiag, "MESSAGE_EPILOG_COMPLETE"),
        info_us: rpc_ave_us(&sdiag, "REQUEST_JOB_INFO"),
        max_cycle_us: sdiag
            .lines()
            .find(|l| l.trim_start().starts_with("Max cycle:"))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse().ok()),
    };
    (burst, c)
}

/// `FAIRMATCH_BURST_JOBS` (default 10000) jobs at once, under backfill and
/// then fairmatch, with `FAIRMATCH_BURST_CONF` as `fairmatch.conf` (default:
/// `BURST_CONF`, and then fairmatch's lock holds are checked too).
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn s_a_burst_of_jobs_loses_none() {
    let n: usize = std::env::var("FAIRMATCH_BURST_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let show = |us: Option<u64>| us.map_or("-".to_string(), |v| format!("{v} us"));
    eprintln!("\nburst of {n} jobs (4 sbatch streams, 4 users; 24 slots):");
    eprintln!(
        "  {:<16} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11}",
        "scheduler",
        "submit s",
        "makespan",
        "submit",
        "complete",
        "epilog",
        "job info",
        "max cycle"
    );
    for sched in ["sched/backfill", "sched/fairmatch"] {
        if sched == "sched/backfill" && std::env::var_os("FAIRMATCH_SKIP_REFERENCE").is_some() {
            continue;
        }
        let (b, c) = burst_scenario(sched, n);
        eprintln!(
            "  {:<16} {:>9.1} {:>9.1}s {:>10} {:>10} {:>10} {:>10} {:>11}",
            sched,
            b.submit_seconds,
            b.tally.makespan,
            show(b.submit_us),
            show(b.complete_us),
            show(b.epilog_us),
            show(b.info_us),
            show(b.max_cycle_us)
        );
        eprintln!("  {:<16} {}", "", b.tally);
        assert!(
            b.tally.perfect(),
            "{sched}: {}\n{}\n{}",
            b.tally,
            b.tally.unfinished.join("\n"),
            c.log_tail()
        );
        if sched == "sched/fairmatch" && std::env::var_os("FAIRMATCH_BURST_CONF").is_none() {
            let log = c.log();
            let holds = lock_holds(&log);
            let most_holds = holds.iter().map(|h| h.0).max().unwrap_or(0);
            let sorted = |pick: fn(&(u64, u64, u64)) -> u64| {
                let mut v: Vec<u64> = holds.iter().map(pick).collect();
                v.sort_unstable();
                v
            };
            let at = |v: &[u64], q: f64| {
                v.get(((v.len() as f64 - 1.0) * q).round() as usize)
                    .copied()
                    .unwrap_or(0)
            };
            let (first, later) = (sorted(|h| h.1), sorted(|h| h.2));
            let (p90, most_cpu) = (at(&later, 0.9), at(&later, 1.0));
            let (first_p90, first_most) = (at(&first, 0.9), at(&first, 1.0));
            eprintln!(
                "  {:<16} {} cycles; at most {most_holds} lock holds in one; on a CPU, a cycle's first hold (the job-list walk): p90 {first_p90} us, max {first_most} us; its longest later hold: p90 {p90} us, max {most_cpu} us",
                "",
                holds.len()
            );
            let slowest = slow_holds(&log);
            for (cpu_us, wall_us, phase) in slowest.iter().take(3) {
                eprintln!(
                    "  {:<16} slow hold: {cpu_us} us on a CPU, {wall_us} us in all ({phase})",
                    ""
                );
            }
            // A deep queue is copied in several holds: at least the first,
            // one after a yield, the apply step's and the launch's.
            assert!(most_holds >= 4, "no cycle yielded the locks: {holds:?}");
            // After the first, a hold is LockHoldMs=1 plus one job's
            // work. CPU time, not wall time: on 2 busy cores the agent
            // often waits for a CPU while it holds the locks. Such a hold
            // is 1-2.5 ms here; copying a 1,000-job queue in one hold
            // takes 5-6 ms, so a lost yield shows in most cycles and
            // fails the p90 bound. The worst hold gets more room: one
            // launch or start alone can be slow (15.8 ms of CPU once in a
            // clean CI run).
            assert!(
                p90 <= 5_000,
                "holds used {p90} us of CPU at p90: {slowest:?}"
            );
            assert!(
                most_cpu <= 40_000,
                "a hold used {most_cpu} us of CPU: {slowest:?}"
            );
            // The first hold walks every job record, and yields only
            // after: it grows with the records (10,000 here, kept by
            // MinJobAge), 4 to 18 ms of CPU on this machine with two
            // walks, about 2 ms with one. The
            // bound catches a walk that does per-record work beyond a
            // few field reads (a quadratic one would take seconds).
            assert!(
                first_most <= 60_000,
                "the job-list walk used {first_most} us of CPU in one hold: {slowest:?}"
            );
        }
    }
}
