//! fairmatch on a shared cluster: Slurm's own rules, refused starts that
//! leave no trace, arrays, unmodelled jobs beside managed ones, and a
//! switch back to sched/backfill. All with preemption on and no job
//! opted in: none is ever preempted.

use super::harness::{now, Cluster};
use super::{hint, PREEMPTIVE};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A pending job is as its user submitted it: all its partitions, no GRES
/// it did not ask for, not held.
fn assert_as_submitted(job: &HashMap<String, String>, partitions: &str) {
    assert_eq!(job["Partition"], partitions, "{job:?}");
    assert!(
        job.get("TresPerNode").is_none_or(|t| t.is_empty()),
        "GRES added: {job:?}"
    );
    assert_ne!(job["Priority"], "0", "held: {job:?}");
}

/// GPU nodes short of memory: each runs a job holding 900 of its 1000 MB
/// and one of its two GPUs. The plan sees a free GPU; Slurm refuses a job
/// that needs 500 MB there.
fn memory_blockers(c: &Cluster, seconds: f64) -> Vec<u32> {
    let blockers: Vec<u32> = ["g1", "g2"]
        .iter()
        .map(|node| {
            let comment = format!("fairmatch: gpu={seconds}s");
            c.submit(
                &["-p", "gpu", "-w", node, "--mem=900", "--comment", &comment],
                seconds,
                seconds,
            )
        })
        .collect();
    for &b in &blockers {
        c.wait_state(b, "RUNNING", Duration::from_secs(20));
    }
    blockers
}

fn refusals(c: &Cluster, id: u32) -> usize {
    c.log().matches(&format!("JobId={id} not started")).count()
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn g_a_refused_start_leaves_the_job_as_submitted() {
    let c = Cluster::start(&["--memory", "1000"], PREEMPTIVE);
    let blockers = memory_blockers(&c, 6.0);
    let job = c.submit(
        &["-p", "cpu,gpu", "--mem=500", "--comment", &hint(1.0, 10.0)],
        1.0,
        10.0,
    );
    let mut polls = 0;
    while blockers.iter().any(|&b| c.state(b) == "RUNNING") {
        let j = c.job(job);
        if j["JobState"] == "PENDING" {
            assert_as_submitted(&j, "cpu,gpu");
            polls += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let refused = refusals(&c, job);
    eprintln!("refused start logged {refused} time(s); job checked {polls} times while refused");
    assert!(refused >= 1, "no refused start in the log");
    assert!(polls >= 5, "job was not pending long: {polls} polls");
    c.wait_done(&[job], Duration::from_secs(60));
    let j = c.job(job);
    assert!(j["Partition"].starts_with("gpu"), "{j:?}");
    assert!(j["JOB_GRES"].contains("gpu:1"), "{j:?}");
    assert_eq!(c.record(job).partition, "gpu");
    c.assert_no_preemption();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn g_licenses_are_checked_before_the_plan() {
    let c = Cluster::start(&["--licenses", "lic:1"], PREEMPTIVE);
    let holder = c.submit(
        &["-p", "cpu", "-L", "lic:1", "--comment", &hint(5.0, 5.0)],
        5.0,
        5.0,
    );
    c.wait_state(holder, "RUNNING", Duration::from_secs(20));
    let job = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "-L",
            "lic:1",
            "--comment",
            &hint(1.0, 10.0),
        ],
        1.0,
        10.0,
    );
    std::thread::sleep(Duration::from_millis(500));
    while c.state(holder) == "RUNNING" {
        let j = c.job(job);
        if j["JobState"] == "PENDING" && c.state(holder) == "RUNNING" {
            assert_as_submitted(&j, "cpu,gpu");
            assert_eq!(j["Reason"], "Licenses", "{j:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    c.wait_done(&[holder, job], Duration::from_secs(60));
    let (h, j) = (c.record(holder), c.record(job));
    assert!(j.start >= h.end - 0.5, "both held the license: {h:?} {j:?}");
    assert_eq!(j.partition, "gpu");
    c.assert_no_preemption();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn h_exclude_nodelist_and_constraint_hold() {
    let c = Cluster::start(&[], PREEMPTIVE);
    // Left alone, the plan would take the first node of each partition.
    let excluded = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--exclude",
            "g1",
            "--comment",
            &hint(1.0, 5.0),
        ],
        1.0,
        5.0,
    );
    let listed = c.submit(
        &["-p", "cpu", "-w", "c2", "--comment", &hint(5.0, 1.0)],
        5.0,
        1.0,
    );
    // GPU-fast, but no GPU node has the feature: it must run on c1.
    let constrained = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--constraint",
            "cpu1",
            "--comment",
            &hint(1.0, 2.0),
        ],
        1.0,
        2.0,
    );
    // GPU-fast, but every GPU node is excluded: it must run on a CPU.
    let no_gpus = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--exclude",
            "g1,g2",
            "--comment",
            &hint(1.0, 2.0),
        ],
        1.0,
        2.0,
    );
    c.wait_done(
        &[excluded, listed, constrained, no_gpus],
        Duration::from_secs(60),
    );
    assert_eq!(c.record(excluded).node, "g2");
    assert_eq!(c.record(listed).node, "c2");
    assert_eq!(c.record(constrained).node, "c1");
    assert_eq!(c.record(no_gpus).partition, "cpu");
    let j = c.job(excluded);
    assert!(j["ExcNodeList"].contains("g1"), "--exclude lost: {j:?}");
    c.assert_no_preemption();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn i_an_array_runs_where_its_hint_says() {
    let c = Cluster::start(&[], PREEMPTIVE);
    every_task_runs_on_the_gpus(&c, "0-5", "cpu,gpu", 2.0, 6, 90);
    // Operators see fairmatch's cycles where the main scheduler's were.
    let sdiag = c.sdiag();
    let cycles: u64 = sdiag
        .lines()
        .skip_while(|l| !l.contains("Main schedule statistics"))
        .find_map(|l| l.trim().strip_prefix("Total cycles:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no main-scheduler cycles in sdiag:\n{sdiag}"));
    eprintln!("sdiag: {cycles} fairmatch cycles");
    assert!(cycles > 0, "{sdiag}");
    c.assert_no_preemption();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn i_an_array_started_one_task_at_a_time_runs_its_last_task() {
    // One task at a time (`%1`): each start splits one task off, and when
    // one task is left Slurm turns the array's own record into it, with
    // no task bitmap. Before the plan counted that record as a pending
    // job, the last task waited for ever.
    let c = Cluster::start(&[], PREEMPTIVE);
    every_task_runs_on_the_gpus(&c, "0-2%1", "gpu", 1.0, 3, 60);
}

/// Submits an array of `tasks` tasks (`--array=spec`) to `partitions`,
/// `gpu` s on a GPU and 30 s on a CPU as its hint says, waits up to
/// `timeout` seconds for it, and checks every task ran, on the GPUs.
fn every_task_runs_on_the_gpus(
    c: &Cluster,
    spec: &str,
    partitions: &str,
    gpu: f64,
    tasks: usize,
    timeout: u64,
) {
    let array = c.submit(
        &[
            &format!("--array={spec}"),
            "-p",
            partitions,
            "--comment",
            &hint(gpu, 30.0),
        ],
        gpu,
        30.0,
    );
    c.wait_array_done(array, Duration::from_secs(timeout));
    let records = c.records();
    assert_eq!(records.len(), tasks, "{records:?}");
    for (id, r) in &records {
        assert_eq!(r.partition, "gpu", "task {id}: {r:?}");
    }
}

/// A 2-node job (`-t 1`, and `wide_extra`) waits for c1, busy with
/// `blocker`; single-node jobs of 4 s keep arriving behind it for 14 s.
/// Returns the seconds from its submission to its start.
/// The 2-node job's start delay, and when the last of the other jobs
/// ended, both from its submission.
fn multi_node_delay(c: &Cluster, wide_extra: &[&str]) -> (f64, f64) {
    let cpu4 = |secs: f64| format!("fairmatch: cpu={secs}s");
    let blocker = c.submit(
        &[
            "-p",
            "cpu",
            "-w",
            "c1",
            "-c",
            "4",
            "-t",
            "1",
            "--comment",
            &cpu4(8.0),
        ],
        8.0,
        8.0,
    );
    c.wait_state(blocker, "RUNNING", Duration::from_secs(20));
    let first = c.submit(&["-p", "cpu", "-c", "4", "--comment", &cpu4(4.0)], 4.0, 4.0);
    c.wait_state(first, "RUNNING", Duration::from_secs(20));
    let submitted = now();
    let mut wide_args = vec!["-p", "cpu", "-N", "2", "-c", "4", "-t", "1"];
    wide_args.extend(wide_extra);
    let wide = c.submit(&wide_args, 1.0, 1.0);
    let mut all = vec![blocker, first, wide];
    for _ in 0..14 {
        std::thread::sleep(Duration::from_secs(1));
        all.push(c.submit(&["-p", "cpu", "-c", "4", "--comment", &cpu4(4.0)], 4.0, 4.0));
    }
    c.wait_done(&all, Duration::from_secs(180));
    let drained = all
        .iter()
        .filter(|&&j| j != wide)
        .map(|&j| c.record(j).end)
        .fold(f64::MIN, f64::max);
    (c.record(wide).start - submitted, drained - submitted)
}

/// The 2-node job is a gang of the plan. Told its run time (1 s), it
/// starts when the blocker ends, as backfill's reservation starts it: it
/// takes half the slot-time of a 4 s job, so running one of those first
/// would cost it more than it saves. (At 2 s, the same slot-time as a
/// 4 s job, the two orders tie and the plan may take either.)
/// Known only by its time limit (60 s), it is the longest job in sight,
/// and AlloX runs the 4 s jobs first while any wait, as shortest first
/// would: it waits for the stream to drain (about 36 s on the two nodes),
/// well within its bound (ten times 60 s with preemption on), never for
/// ever.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn j_a_multi_node_job_is_not_starved() {
    let backfill = {
        let c = Cluster::start(
            &[
                "--sched",
                "sched/backfill",
                "--sched-params",
                "bf_interval=1",
            ],
            "",
        );
        multi_node_delay(&c, &[]).0
    };
    let (hinted, limit_only, drained) = {
        let c = Cluster::start(&[], PREEMPTIVE);
        let (hinted, _) = multi_node_delay(&c, &["--comment", "fairmatch: cpu=1s"]);
        let (limit_only, drained) = multi_node_delay(&c, &[]);
        c.assert_no_preemption();
        (hinted, limit_only, drained)
    };
    eprintln!(
        "2-node job's start delay: sched/backfill {backfill:.1} s, sched/fairmatch \
         {hinted:.1} s with its run time, {limit_only:.1} s with its time limit only (the \
         other jobs done at {drained:.1} s)"
    );
    // The blocker ends about 7 s after the 2-node job is submitted.
    assert!(
        hinted <= backfill + 3.0,
        "fairmatch {hinted} s vs backfill {backfill} s"
    );
    assert!(hinted < 12.0, "starved: {hinted} s");
    // The stream's last job is submitted 14 s after it; the two nodes
    // drain the stream about 22 s later. Slack: 3 s for the start after
    // the last job's end on a noisy machine.
    assert!(
        limit_only <= drained + 3.0,
        "starved: {limit_only} s, the others done at {drained} s"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn l_switching_back_to_backfill_leaves_jobs_as_submitted() {
    let c = Cluster::start(&["--memory", "1000"], PREEMPTIVE);
    let mut ids = memory_blockers(&c, 20.0);
    // Every CPU slot busy too.
    let fillers: Vec<u32> = (0..8)
        .map(|_| {
            c.submit(
                &["-p", "cpu", "--comment", "fairmatch: cpu=20s"],
                20.0,
                20.0,
            )
        })
        .collect();
    for &f in &fillers {
        c.wait_state(f, "RUNNING", Duration::from_secs(20));
    }
    ids.extend(&fillers);
    // These wait: fairmatch tries them on a GPU, and Slurm refuses.
    let waiting: Vec<u32> = (0..3)
        .map(|_| {
            c.submit(
                &["-p", "cpu,gpu", "--mem=500", "--comment", &hint(1.0, 30.0)],
                1.0,
                1.0,
            )
        })
        .collect();
    ids.extend(&waiting);
    let deadline = Instant::now() + Duration::from_secs(20);
    while waiting.iter().all(|&id| refusals(&c, id) == 0) {
        assert!(
            Instant::now() < deadline,
            "no refused start\n{}",
            c.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for &id in &waiting {
        let j = c.job(id);
        assert_eq!(j["JobState"], "PENDING", "{j:?}");
        assert_as_submitted(&j, "cpu,gpu");
    }

    c.restart_controller(Some("sched/backfill"));
    let config = super::harness::run(c.cmd("scontrol").args(["show", "config"]));
    let config = String::from_utf8_lossy(&config.stdout).to_string();
    assert!(
        config
            .lines()
            .any(|l| l.starts_with("SchedulerType") && l.contains("sched/backfill")),
        "still not backfill:\n{config}"
    );
    for &id in &waiting {
        assert_as_submitted(&c.job(id), "cpu,gpu");
    }
    c.wait_done(&ids, Duration::from_secs(120));
    for &id in &ids {
        let j = c.job(id);
        assert_eq!(j["JobState"], "COMPLETED", "{j:?}");
    }
    c.assert_no_preemption();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn k_reconfigure_takes_effect_and_keeps_what_was_learned() {
    let c = Cluster::start(&[], PREEMPTIVE);
    // No hint, no time limit: its run time is learned.
    let first = c.submit(&["-J", "learned", "-p", "cpu"], 1.0, 1.0);
    c.wait_done(&[first], Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(2)); // the finished-job scan

    let reconfigure = |text: &str| {
        std::fs::write(c.path().join("fairmatch.conf"), text).unwrap();
        let t = Instant::now();
        super::harness::run(c.cmd("scontrol").arg("reconfigure"));
        t.elapsed().as_secs_f64()
    };
    let took = reconfigure("IntervalMs=100\nAlpha=0.5\nPartitions=gpu\n");
    eprintln!("scontrol reconfigure took {took:.2} s");
    // 22.05 calls the running plugin's reconfigure ("reconfigured; ...");
    // from 23.11 on slurmctld execs a new controller whose plugin loads
    // afresh ("loaded; ..."), and the old one may log its own line before it
    // exits. Either line shows the new file was read.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(c.log().contains("reconfigured; alpha=0.5") || c.log().contains("loaded; alpha=0.5")) {
        assert!(Instant::now() < deadline, "{}", c.log_tail());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(c.log().contains("partitions=gpu"), "{}", c.log_tail());
    // `cpu` is no longer fairmatch's: a job there is started as Slurm's.
    let unmanaged = c.submit(&["-p", "cpu"], 1.0, 1.0);
    c.wait_done(&[unmanaged], Duration::from_secs(30));
    assert!(
        c.log().contains(&format!(
            "started JobId={unmanaged} first-come first-served"
        )),
        "{}",
        c.log_tail()
    );

    // A bad file: clear errors, safe values, and jobs keep running. What
    // was learned survives both reconfigures.
    reconfigure("IntervalMs=100\nAlpha=7\nBogus=1\n");
    let second = c.submit(&["-J", "learned", "-p", "cpu,gpu"], 1.0, 1.0);
    c.wait_done(&[second], Duration::from_secs(30));
    let log = c.log();
    assert!(
        log.contains("Alpha must be a number in (0, 1]"),
        "{}",
        c.log_tail()
    );
    assert!(log.contains("Bogus"), "{}", c.log_tail());
    // Slurm keeps whole seconds: a 1 s job measures 1 or 2 s.
    let note = c.admin_comment(second);
    assert!(
        note.contains("cpu=1s (history)") || note.contains("cpu=2s (history)"),
        "history lost: {note}"
    );

    // A partition slurm.conf does not define: named in the log; with no
    // listed partition left, every job is started first come first served.
    reconfigure("IntervalMs=100\nPartitions=nosuch\n");
    let third = c.submit(&["-p", "cpu,gpu", "--comment", &hint(1.0, 1.0)], 1.0, 1.0);
    c.wait_done(&[third], Duration::from_secs(30));
    let log = c.log();
    assert!(
        log.contains("Partitions= names 'nosuch'")
            && log.contains("no partition of Partitions= exists"),
        "{}",
        c.log_tail()
    );
    assert!(
        log.contains(&format!("started JobId={third} first-come first-served")),
        "{}",
        c.log_tail()
    );
    c.assert_no_preemption();
}

/// Slurm's main loop stays off whatever the admin wrote, and the rest of
/// the admin's parameters stay. A job that asks for CPUs per task is
/// still modelled: from 23.11 on, `-c` also lands in `tres_per_task`.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn t_slurms_loop_stays_off_and_cpus_per_task_is_modelled() {
    let c = Cluster::start(&["--sched-params", "defer_batch,bf_interval=1"], PREEMPTIVE);
    let params = c.scheduler_parameters();
    assert!(params.contains("= sched_interval=-1,"), "{params}");
    assert!(params.ends_with(",bf_interval=1"), "{params}");
    assert_eq!(params.matches("defer_batch").count(), 1, "{params}");
    let job = c.submit(
        &["-c", "1", "-p", "cpu,gpu", "--comment", &hint(1.0, 5.0)],
        1.0,
        5.0,
    );
    c.wait_done(&[job], Duration::from_secs(60));
    let j = c.job(job);
    assert_eq!(j["Partition"], "gpu", "{j:?}");
    assert!(
        !c.log()
            .contains(&format!("started JobId={job} first-come first-served")),
        "a -c job was left to the fallback: {}",
        c.log_tail()
    );
    c.assert_no_preemption();
}

fn sacctmgr(c: &Cluster, args: &[&str]) {
    super::harness::run(c.cmd("sacctmgr").arg("-i").args(args));
}

/// Job ids in state `st` among `ids`, from one squeue call.
fn in_state(c: &Cluster, ids: &[u32], st: &str) -> Vec<u32> {
    let out = super::harness::run(c.cmd("squeue").args(["-h", "-t", st, "-o", "%i"]));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .filter(|id| ids.contains(id))
        .collect()
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn m_qos_limits_hold_with_real_accounting() {
    let c = Cluster::start(&["--accounting"], PREEMPTIVE);
    sacctmgr(&c, &["add", "qos", "gpu1", "GrpTRES=gres/gpu=1"]);
    sacctmgr(&c, &["add", "qos", "onejob", "MaxJobsPerUser=1"]);
    sacctmgr(&c, &["modify", "user", "root", "set", "qos+=gpu1,onejob"]);
    std::thread::sleep(Duration::from_secs(1)); // slurmctld hears of it

    // GrpTRES=gres/gpu=1: GPU-fast jobs run on a GPU one at a time; the
    // others wait with Slurm's reason and stay as submitted.
    let gpu_jobs: Vec<u32> = (0..3)
        .map(|_| {
            c.submit(
                &["-p", "cpu,gpu", "--qos=gpu1", "--comment", &hint(3.0, 60.0)],
                3.0,
                60.0,
            )
        })
        .collect();
    // MaxJobsPerUser=1: one at a time, the rest not even planned.
    let one_jobs: Vec<u32> = (0..3)
        .map(|_| {
            c.submit(
                &[
                    "-p",
                    "cpu",
                    "--qos=onejob",
                    "--comment",
                    "fairmatch: cpu=2s",
                ],
                2.0,
                2.0,
            )
        })
        .collect();
    let mut reasons: Vec<String> = Vec::new();
    let mut most_gpu = 0;
    let mut most_one = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    let all: Vec<u32> = gpu_jobs.iter().chain(&one_jobs).copied().collect();
    while !in_state(&c, &all, "PD,R").is_empty() {
        assert!(Instant::now() < deadline, "{}", c.log_tail());
        most_gpu = most_gpu.max(in_state(&c, &gpu_jobs, "R").len());
        most_one = most_one.max(in_state(&c, &one_jobs, "R").len());
        for id in in_state(&c, &all, "PD") {
            let j = c.job(id);
            if j.get("JobState").is_some_and(|s| s == "PENDING") {
                let parts = if gpu_jobs.contains(&id) {
                    "cpu,gpu"
                } else {
                    "cpu"
                };
                assert_as_submitted(&j, parts);
                reasons.push(j["Reason"].clone());
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    reasons.sort();
    reasons.dedup();
    eprintln!("QOS: at most {most_gpu} GPU job(s) and {most_one} MaxJobsPerUser job(s) ran at once; reasons {reasons:?}");
    assert_eq!(most_gpu, 1, "GrpTRES=gres/gpu=1 broken");
    assert_eq!(most_one, 1, "MaxJobsPerUser=1 broken");
    assert!(reasons.iter().any(|r| r == "QOSGrpGRES"), "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r == "QOSMaxJobsPerUserLimit"),
        "{reasons:?}"
    );
    for &id in &gpu_jobs {
        assert_eq!(c.record(id).partition, "gpu", "job {id}");
    }
    c.assert_no_preemption();
}

fn scontrol(c: &Cluster, args: &[&str]) {
    super::harness::run(c.cmd("scontrol").args(args));
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn n_drains_partition_states_holds_dependencies_begin_and_reservations_hold() {
    let c = Cluster::start(&[], PREEMPTIVE);
    let gpu_fast = hint(1.0, 3.0);
    let cpu_fast = hint(3.0, 1.0);

    // A drained node gets nothing.
    scontrol(&c, &["update", "nodename=g1", "state=drain", "reason=test"]);
    let on_g2 = c.submit(&["-p", "cpu,gpu", "--comment", &gpu_fast], 1.0, 3.0);
    // A DOWN partition starts nothing: CPU-fast, but only gpu is up.
    scontrol(&c, &["update", "partitionname=cpu", "state=down"]);
    let not_cpu = c.submit(&["-p", "cpu,gpu", "--comment", &cpu_fast], 3.0, 1.0);
    c.wait_done(&[on_g2, not_cpu], Duration::from_secs(30));
    scontrol(&c, &["update", "partitionname=cpu", "state=up"]);
    assert_eq!(c.record(on_g2).node, "g2");
    assert_eq!(c.record(not_cpu).partition, "gpu");

    // An advanced reservation on g2: only its jobs may use it.
    scontrol(
        &c,
        &[
            "create",
            "reservation",
            "reservationname=r1",
            "starttime=now",
            "duration=5",
            "nodes=g2",
            "users=root",
        ],
    );
    let outside = c.submit(&["-p", "cpu,gpu", "--comment", &gpu_fast], 1.0, 3.0);
    let inside = c.submit(
        &["-p", "cpu,gpu", "--reservation=r1", "--comment", &gpu_fast],
        1.0,
        3.0,
    );
    c.wait_done(&[outside, inside], Duration::from_secs(30));
    assert_eq!(c.record(outside).partition, "cpu", "used the reservation");
    assert_eq!(c.record(inside).node, "g2");

    // Held, dependent and future jobs wait for their moment.
    let held = c.submit(
        &["--hold", "-p", "cpu,gpu", "--comment", &cpu_fast],
        1.0,
        1.0,
    );
    let first = c.submit(&["-p", "cpu", "--comment", "fairmatch: cpu=3s"], 3.0, 3.0);
    let after = format!("afterok:{first}");
    let dependent = c.submit(
        &[
            "-p",
            "cpu,gpu",
            "--dependency",
            &after,
            "--comment",
            &cpu_fast,
        ],
        1.0,
        1.0,
    );
    let begin_at = now() + 4.0;
    let begin = format!("--begin={}", super::harness::local_time(begin_at.ceil()));
    let future = c.submit(&["-p", "cpu,gpu", &begin, "--comment", &cpu_fast], 1.0, 1.0);
    std::thread::sleep(Duration::from_secs(2));
    let h = c.job(held);
    assert_eq!(h["JobState"], "PENDING", "{h:?}");
    assert!(h["Reason"].starts_with("JobHeld"), "{h:?}");
    let released = now();
    c.release(&[held]);
    c.wait_done(&[held, first, dependent, future], Duration::from_secs(30));
    assert!(
        c.record(held).start >= released,
        "held job ran before release"
    );
    assert!(
        c.record(dependent).start >= c.record(first).end - 0.5,
        "dependency broken"
    );
    assert!(
        c.record(future).start >= begin_at.ceil() - 1.0,
        "--begin broken"
    );
    c.assert_no_preemption();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn o_a_job_fairmatch_started_survives_a_controller_crash() {
    let c = Cluster::start(&[], PREEMPTIVE);
    // Eligible in 8 s: their submission is saved long before they start,
    // and no RPC comes between the start and the crash, so only the start
    // itself can have asked for the save that carries it.
    let begin_at = (now() + 8.0).ceil();
    let begin = format!("--begin={}", super::harness::local_time(begin_at));
    let ids: Vec<u32> = (0..3)
        .map(|_| {
            c.submit(
                &["-p", "cpu,gpu", &begin, "--comment", &hint(20.0, 20.0)],
                20.0,
                20.0,
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while in_state(&c, &ids, "R").len() < ids.len() {
        assert!(Instant::now() < deadline, "{}", c.log_tail());
        std::thread::sleep(Duration::from_millis(100));
    }
    let started: Vec<String> = ids
        .iter()
        .map(|&id| c.job(id)["StartTime"].clone())
        .collect();
    // Slurm saves at most every 5 s after the previous save.
    std::thread::sleep(Duration::from_secs(3));
    c.crash_controller();
    for (&id, start) in ids.iter().zip(&started) {
        let j = c.job(id);
        assert_eq!(j["JobState"], "RUNNING", "lost in the crash: {j:?}");
        assert_eq!(&j["StartTime"], start, "started again: {j:?}");
    }
    c.wait_done(&ids, Duration::from_secs(60));
    for &id in &ids {
        assert_eq!(c.job(id)["JobState"], "COMPLETED");
    }
    c.assert_no_preemption();
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn p_a_failing_planner_leaves_the_cluster_scheduling() {
    let c = Cluster::start_with_env(&[], PREEMPTIVE, &[("FAIRMATCH_FAULT", "plan")]);
    let ids: Vec<u32> = (0..4)
        .map(|_| c.submit(&["-p", "cpu,gpu", "--comment", &hint(1.0, 1.0)], 1.0, 1.0))
        .collect();
    c.wait_done(&ids, Duration::from_secs(60));
    assert!(c.controller_up(), "slurmctld died");
    let log = c.log();
    assert!(
        log.contains("plan failed: injected fault"),
        "{}",
        c.log_tail()
    );
    for &id in &ids {
        assert!(
            log.contains(&format!("started JobId={id} first-come first-served")),
            "{}",
            c.log_tail()
        );
        assert_eq!(c.job(id)["JobState"], "COMPLETED");
    }
    c.assert_no_preemption();
}

/// Slurm's checks run only on the jobs the plan may weigh (the check
/// window, src/slurm/window.rs). Jobs at the front of the window that
/// Slurm holds back must pull the next ones in, not close the window: a
/// runnable job behind ten license-blocked shorter ones starts at once.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn g_blocked_jobs_at_the_front_do_not_close_the_check_window() {
    // Two slots and MaxCandidates=1: a window of 1 + 2 x 2 = 5 jobs.
    let c = Cluster::start(
        &[
            "--licenses",
            "lic:1",
            "--cpu-nodes",
            "1",
            "--cpus",
            "1",
            "--gpu-nodes",
            "1",
            "--gpus",
            "1",
        ],
        &format!("{PREEMPTIVE}MaxCandidates=1\n"),
    );
    let holder = c.submit(
        &["-p", "cpu", "-L", "lic:1", "--comment", &hint(12.0, 12.0)],
        12.0,
        12.0,
    );
    c.wait_state(holder, "RUNNING", Duration::from_secs(20));
    let blocked: Vec<u32> = (0..10)
        .map(|_| {
            c.submit(
                &["-p", "cpu,gpu", "-L", "lic:1", "--comment", &hint(1.0, 1.0)],
                1.0,
                1.0,
            )
        })
        .collect();
    let free = c.submit(&["-p", "cpu,gpu", "--comment", &hint(3.0, 6.0)], 3.0, 6.0);
    c.wait_state(free, "RUNNING", Duration::from_secs(8));
    assert_eq!(c.state(holder), "RUNNING", "the license holder ended first");
    for &id in &blocked[..5] {
        let j = c.job(id);
        assert_eq!(j["JobState"], "PENDING", "{j:?}");
        assert_eq!(j["Reason"], "Licenses", "{j:?}");
    }
    let mut all = blocked.clone();
    all.extend([holder, free]);
    c.wait_done(&all, Duration::from_secs(90));
    assert_eq!(c.record(free).partition, "gpu");
    c.assert_no_preemption();
}
