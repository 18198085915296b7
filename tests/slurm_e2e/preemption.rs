//! Preemption through Slurm's requeue on a real cluster: an overdue job
//! takes the slot of a running job that opted in, which Slurm requeues and
//! which runs again and completes once; a job that did not opt in is never
//! touched, and a controller killed in the middle loses and duplicates
//! nothing. Beside sched/backfill, which never preempts.

use super::harness::{self, now, Cluster};
use std::time::Duration;

/// fairmatch.conf's bound and preemption rules in these tests.
const MAX_WAIT: f64 = 5.0;
const ROUND: f64 = 2.0;
/// The opted-in job and the one that did not opt in (it has more work
/// left, so the policy would rather stop it), each on one of two one-CPU
/// nodes, and the job that becomes overdue behind them.
const OPTED: f64 = 20.0;
const OTHER: f64 = 30.0;
const OVERDUE: f64 = 3.0;

struct Jobs {
    opted: u32,
    other: u32,
    overdue: u32,
    /// When the overdue job became eligible.
    eligible: f64,
}

fn cluster(sched: &str) -> Cluster {
    let conf = format!(
        "IntervalMs=100\nMaxWait={MAX_WAIT}\nPreempt=overdue\nPreemptRound={ROUND}\n\
         PreemptMinRunTime=3\n"
    );
    Cluster::start(
        &[
            "--sched",
            sched,
            "--sched-params",
            "bf_interval=1",
            "--cpu-nodes",
            "2",
            "--cpus",
            "1",
            "--cred-expire",
            "5",
        ],
        &conf,
    )
}

/// Submits the three jobs, the opted-in one `opted` seconds long; `signal`
/// adds a `--signal` to it (whose script then records the notices it
/// gets).
fn submit(c: &Cluster, opted: f64, signal: Option<&str>) -> Jobs {
    let begin = (now() + 4.0).ceil();
    let at = |dt: f64| format!("--begin={}", harness::local_time(begin + dt));
    // The opted-in job gives its hint as options (--fm-preemptible), the
    // others in their comments.
    let job = |dt: f64, t: f64, extra: &[&str], opted: bool| {
        let at = at(dt);
        let comment = format!("fairmatch: cpu={t}s");
        let runtime = format!("--fm-runtime=cpu={t}s");
        let hint = if opted {
            [runtime.as_str(), "--fm-preemptible"]
        } else {
            ["--comment", comment.as_str()]
        };
        let args = [
            &["--requeue", "-p", "cpu", "-t", "2", &at],
            &hint[..],
            extra,
        ]
        .concat();
        c.submit_env(&args, &[("FM_RECORD_SIGNALS", "1")], t, t)
    };
    let signal = signal.map(|s| format!("--signal={s}"));
    let extra: Vec<&str> = signal.iter().map(String::as_str).collect();
    let jobs = Jobs {
        opted: job(0.0, opted, &extra, true),
        other: job(0.0, OTHER, &[], false),
        overdue: job(2.0, OVERDUE, &[], false),
        eligible: begin + 2.0,
    };
    assert!(
        now() < begin,
        "submitting took too long; raise the lead time"
    );
    jobs
}

/// Every job completed exactly once, and ran once plus once per requeue;
/// returns the requeues of the opted-in job.
fn completed_once(c: &Cluster, jobs: &Jobs) -> usize {
    for id in [jobs.opted, jobs.other, jobs.overdue] {
        c.assert_completed_once(id);
    }
    assert_eq!(
        c.restarts(jobs.other),
        0,
        "a job that did not opt in was requeued"
    );
    assert_eq!(c.restarts(jobs.overdue), 0);
    c.restarts(jobs.opted)
}

/// The overdue job's wait from its eligible time, and the opted-in job's
/// requeues.
fn scenario(sched: &str) -> (f64, usize, Cluster) {
    let c = cluster(sched);
    let jobs = submit(&c, OPTED, None);
    c.wait_done(
        &[jobs.opted, jobs.other, jobs.overdue],
        Duration::from_secs(150),
    );
    let requeues = completed_once(&c, &jobs);
    let wait = c.record(jobs.overdue).start - jobs.eligible;
    let preempted = format!("preempted JobId={}", jobs.other);
    assert!(!c.log().contains(&preempted), "{}", c.log_tail());
    (wait, requeues, c)
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn v_an_overdue_job_preempts_only_a_job_that_opted_in() {
    // FAIRMATCH_SKIP_REFERENCE: the backfill half is skipped (a later
    // release's run; 22.05's compares).
    let reference = std::env::var_os("FAIRMATCH_SKIP_REFERENCE").is_none();
    let (backfill_wait, backfill_requeues) = if reference {
        let (wait, requeues, _) = scenario("sched/backfill");
        (wait, requeues)
    } else {
        (f64::NAN, 0)
    };
    let (wait, requeues, c) = scenario("sched/fairmatch");
    eprintln!(
        "preemption: the overdue job waited {backfill_wait:.1} s under backfill, {wait:.1} s \
         under fairmatch (MaxWait {MAX_WAIT} s, rounds of {ROUND} s); the opted-in job was \
         requeued {backfill_requeues} and {requeues} times"
    );
    assert_eq!(backfill_requeues, 0);
    assert_eq!(requeues, 1, "{}", c.log_tail());
    // Overdue after MaxWait, preempted for at the next round, started once
    // the requeued job has left its node. Slack: 1 s for Slurm's
    // whole-second times, 3 s for the job's exit and the launch on a
    // noisy machine.
    assert!(
        wait >= MAX_WAIT - 1.0,
        "started before it was overdue: {wait}"
    );
    assert!(wait <= MAX_WAIT + ROUND + 4.0, "waited {wait} s");
    // Backfill never preempts: the job waits for a running one to end,
    // less the 2 s it was eligible after them (1 s of slack).
    assert!(
        !reference || backfill_wait >= OPTED - 2.0 - 1.0,
        "{backfill_wait}"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh"]
fn w_a_controller_killed_during_a_preemption_loses_and_duplicates_nothing() {
    // With a 4 s notice (--signal to the batch shell), the controller is
    // SIGKILLed once during the notice and once right after the requeue.
    // The opted-in job is long enough to be preempted again after the
    // first restart.
    let c = cluster("sched/fairmatch");
    let jobs = submit(&c, 40.0, Some("B:USR1@4"));
    let notice = format!("preempting JobId={}", jobs.opted);
    c.wait_log(&notice, 1, Duration::from_secs(40));
    std::thread::sleep(Duration::from_secs(1));
    c.crash_controller();
    let requeued = format!("preempted JobId={}: requeued", jobs.opted);
    c.wait_log(&requeued, 1, Duration::from_secs(40));
    c.crash_controller();
    c.wait_done(
        &[jobs.opted, jobs.other, jobs.overdue],
        Duration::from_secs(150),
    );
    let requeues = completed_once(&c, &jobs);
    let signals = c.signals(jobs.opted);
    eprintln!(
        "preemption across two controller crashes: the opted-in job got {signals} notices and \
         was requeued {requeues} times; every job completed once"
    );
    assert!(requeues >= 1, "{}", c.log_tail());
    assert!(signals >= 1, "the notice never reached the batch script");
    assert!(c.controller_up());
}
