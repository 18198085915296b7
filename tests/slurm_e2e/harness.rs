//! A real Slurm cluster for one test: slurmctld plus slurmd nodes started by
//! scripts/slurm-cluster.sh under a temp dir, torn down by pid on drop.
//! Jobs are sbatch scripts that sleep the duration of the partition they
//! landed in and record precise start and end times.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn plugin_dir() -> PathBuf {
    let dir = std::env::var_os("FAIRMATCH_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/plugin"));
    assert!(
        dir.join("sched_fairmatch.so").is_file(),
        "no sched_fairmatch.so in {}: run scripts/build-plugin.sh first",
        dir.display()
    );
    dir
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
}

/// The Unix time of a slurmctld log line's `[YYYY-MM-DDTHH:MM:SS.mmm]`
/// stamp (the machine's clock is UTC).
pub fn harness_time(line: &str) -> Option<f64> {
    let stamp = line.strip_prefix('[')?.split(']').next()?;
    let (date, time) = stamp.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let days = days_from_civil(d[0], d[1], d[2]);
    let seconds = days * 86400 + t[0] * 3600 + t[1] * 60 + t[2];
    Some(seconds as f64 + format!("0.{frac}").parse::<f64>().ok()?)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// `seconds` since the epoch as local `YYYY-MM-DDTHH:MM:SS`, the form
/// `sbatch --begin` takes.
pub fn local_time(seconds: f64) -> String {
    let out = run(Command::new("date")
        .arg("-d")
        .arg(format!("@{}", seconds as i64))
        .arg("+%Y-%m-%dT%H:%M:%S"));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub struct Cluster {
    /// Taken out on drop when the cluster's files are to be kept.
    dir: Option<tempfile::TempDir>,
    script: PathBuf,
}

/// What a job's own script recorded.
#[derive(Clone, Debug)]
pub struct Record {
    pub partition: String,
    pub node: String,
    pub start: f64,
    pub end: f64,
    /// The GPUs Slurm gave the job on its node (`SLURM_GPUS_ON_NODE`;
    /// the test cluster's fake GPUs set no `CUDA_VISIBLE_DEVICES`).
    pub gpus: u32,
}

const JOB_SCRIPT: &str = r#"#!/bin/bash
# usage: job.sh RECORD_DIR GPU_SECONDS OTHER_SECONDS
# FM_NODE_SECONDS="g1=2.5 g2=7" sets the time per node instead: a job on
# several nodes runs as long as its slowest node says (a gang's steps wait
# for each other).
start=$(date +%s.%N)
echo "$start" >> "$1/runs-$SLURM_JOB_ID"
case "$SLURM_JOB_PARTITION" in gpu) d=$2 ;; *) d=$3 ;; esac
if [ -n "${FM_NODE_SECONDS:-}" ]; then
    hosts=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null)
    d=""
    for host in ${hosts:-$SLURMD_NODENAME}; do
        for kv in $FM_NODE_SECONDS; do
            if [ "${kv%%=*}" = "$host" ] &&
                { [ -z "$d" ] || awk "BEGIN { exit !(${kv#*=} > $d) }"; }; then
                d=${kv#*=}
            fi
        done
    done
    [ -n "$d" ] || case "$SLURM_JOB_PARTITION" in gpu) d=$2 ;; *) d=$3 ;; esac
fi
if [ -n "${FM_RECORD_SIGNALS:-}" ]; then
    # A --signal=B:USR1 notice is recorded and the job goes on; the sleep
    # runs in the background so the trap runs at once.
    trap 'date +%s.%N >> "$1/signals-$SLURM_JOB_ID"' USR1
    sleep "$d" & child=$!
    while ! wait "$child"; do kill -0 "$child" 2>/dev/null || break; done
else
    sleep "$d"
fi
echo "$SLURM_JOB_PARTITION $SLURMD_NODENAME $start $(date +%s.%N) ${SLURM_GPUS_ON_NODE:-0}" > "$1/rec-$SLURM_JOB_ID"
date +%s.%N >> "$1/done-$SLURM_JOB_ID"
"#;

impl Cluster {
    /// Starts a cluster; `options` go to slurm-cluster.sh, `fairmatch_conf`
    /// is the plugin's configuration file text.
    pub fn start(options: &[&str], fairmatch_conf: &str) -> Cluster {
        Cluster::start_with_env(options, fairmatch_conf, &[])
    }

    /// As [`Cluster::start`], with extra environment for the daemons.
    pub fn start_with_env(options: &[&str], fairmatch_conf: &str, env: &[(&str, &str)]) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("fairmatch-slurm-")
            .tempdir()
            .expect("temp dir");
        let conf = dir.path().join("fairmatch.conf.in");
        std::fs::write(&conf, fairmatch_conf).unwrap();
        let script = dir.path().join("job.sh");
        std::fs::write(&script, JOB_SCRIPT).unwrap();
        run(Command::new("chmod").arg("+x").arg(&script));
        let plugins = plugin_dir();
        // Clusters started at once could draw the same block of ports
        // before either listens; one start at a time sees the other's.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = STARTING.lock().unwrap_or_else(|e| e.into_inner());
        let mut cmd = Command::new(repo().join("scripts/slurm-cluster.sh"));
        cmd.arg("start")
            .arg(dir.path())
            .arg("--plugin-dir")
            .arg(&plugins)
            .arg("--fairmatch-conf")
            .arg(&conf)
            .args(options)
            .envs(env.iter().copied());
        run(&mut cmd);
        Cluster {
            dir: Some(dir),
            script,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("cluster dir").path()
    }

    pub fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.path().join("slurm.conf"));
        c
    }

    /// Submits the sleeper; returns the job id.
    pub fn submit(&self, args: &[&str], gpu_seconds: f64, other_seconds: f64) -> u32 {
        self.submit_env(args, &[], gpu_seconds, other_seconds)
    }

    /// As [`Cluster::submit`], with `env` exported to the job.
    pub fn submit_env(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        gpu_seconds: f64,
        other_seconds: f64,
    ) -> u32 {
        let out = run(self
            .cmd("sbatch")
            .envs(env.iter().copied())
            .arg("--parsable")
            .args(["-o", "/dev/null", "-e", "/dev/null"])
            .args(args)
            .arg(&self.script)
            .arg(self.path())
            .arg(format!("{gpu_seconds:.3}"))
            .arg(format!("{other_seconds:.3}")));
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .split(';')
            .next()
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("sbatch printed {text:?}"))
    }

    pub fn release(&self, ids: &[u32]) {
        let list: Vec<String> = ids.iter().map(u32::to_string).collect();
        run(self.cmd("scontrol").arg("release").arg(list.join(",")));
    }

    /// The `SchedulerParameters` line of `scontrol show config`.
    pub fn scheduler_parameters(&self) -> String {
        let out = run(self.cmd("scontrol").args(["show", "config"]));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("SchedulerParameters"))
            .unwrap_or_default()
            .to_string()
    }

    /// `scontrol show job -d -o ID` as key=value pairs.
    pub fn job(&self, id: u32) -> HashMap<String, String> {
        let out = run(self
            .cmd("scontrol")
            .args(["show", "job", "-d", "-o"])
            .arg(id.to_string()));
        parse_fields(&String::from_utf8_lossy(&out.stdout))
    }

    /// The job's `JobState` ("" once Slurm forgot it).
    pub fn state(&self, id: u32) -> String {
        self.job(id).get("JobState").cloned().unwrap_or_default()
    }

    /// Polls until job `id` is in `want`; returns when it got there.
    pub fn wait_state(&self, id: u32, want: &str, timeout: Duration) -> f64 {
        let deadline = Instant::now() + timeout;
        while self.state(id) != want {
            assert!(
                Instant::now() < deadline,
                "job {id} not {want} after {timeout:?}: {:?}\n{}",
                self.job(id),
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        now()
    }

    /// The job's admin comment. Read from the multi-line form, where it
    /// has a line of its own: it may itself contain `key=value` text.
    pub fn admin_comment(&self, id: u32) -> String {
        let out = run(self
            .cmd("scontrol")
            .args(["show", "job"])
            .arg(id.to_string()));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("AdminComment="))
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Waits until none of `ids` is pending or running.
    pub fn wait_done(&self, ids: &[u32], timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let out = run(self.cmd("squeue").args(["-h", "-o", "%i"]));
            let live: Vec<u32> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|s| s.parse().ok())
                .collect();
            if !ids.iter().any(|id| live.contains(id)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "jobs still live after {timeout:?}: {live:?}\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn record(&self, id: u32) -> Record {
        let path = self.path().join(format!("rec-{id}"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("job {id} left no record ({e}): {:?}", self.job(id)));
        let f: Vec<&str> = text.split_whitespace().collect();
        Record {
            partition: f[0].to_string(),
            node: f[1].to_string(),
            start: f[2].parse().unwrap(),
            end: f[3].parse().unwrap(),
            gpus: f.get(4).and_then(|g| g.parse().ok()).unwrap_or(0),
        }
    }

    /// How many times job `id`'s script started.
    /// When job `id`'s script first started, from its `runs-N` file.
    pub fn first_start(&self, id: u32) -> Option<f64> {
        let text = std::fs::read_to_string(self.path().join(format!("runs-{id}"))).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    pub fn runs(&self, id: u32) -> usize {
        self.lines(&format!("runs-{id}"))
    }

    /// Panics if fairmatch preempted any job.
    pub fn assert_no_preemption(&self) {
        assert!(
            !self.log().contains("fairmatch: preempt"),
            "a job that did not opt in was preempted\n{}",
            self.log_tail()
        );
    }

    /// How many times job `id`'s script ran to its end.
    pub fn completions(&self, id: u32) -> usize {
        self.lines(&format!("done-{id}"))
    }

    /// How many `--signal` notices job `id`'s batch script recorded (with
    /// `FM_RECORD_SIGNALS` set at submission).
    pub fn signals(&self, id: u32) -> usize {
        self.lines(&format!("signals-{id}"))
    }

    fn lines(&self, file: &str) -> usize {
        std::fs::read_to_string(self.path().join(file))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// Kills node `node`'s slurmd (SIGKILL) and every job step on it.
    pub fn kill_node(&self, node: &str) {
        run(Command::new(repo().join("scripts/slurm-cluster.sh"))
            .arg("kill-node")
            .arg(self.path())
            .arg(node));
    }

    /// Starts node `node`'s slurmd again.
    pub fn start_node(&self, node: &str) {
        run(Command::new(repo().join("scripts/slurm-cluster.sh"))
            .arg("start-node")
            .arg(self.path())
            .arg(node));
    }

    /// `sinfo`'s short state of `node` (idle, mix, alloc, down*, drain...).
    pub fn node_state(&self, node: &str) -> String {
        let out = run(self.cmd("sinfo").args(["-h", "-N", "-n", node, "-o", "%t"]));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Job ids among `ids` that squeue still lists (pending, running...).
    pub fn live(&self, ids: &[u32]) -> Vec<u32> {
        let out = run(self.cmd("squeue").args(["-h", "-o", "%i"]));
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .filter(|id| ids.contains(id))
            .collect()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("slurmctld.log")).unwrap_or_default()
    }

    /// Slurm's count of requeues of job `id`.
    pub fn restarts(&self, id: u32) -> usize {
        self.job(id)
            .get("Restarts")
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("job {id} has no Restarts: {:?}", self.job(id)))
    }

    /// Job `id` completed exactly once, and ran once plus once per requeue.
    pub fn assert_completed_once(&self, id: u32) {
        assert_eq!(self.state(id), "COMPLETED", "job {id}: {:?}", self.job(id));
        assert_eq!(self.completions(id), 1, "job {id} completed twice or never");
        assert_eq!(
            self.runs(id),
            1 + self.restarts(id),
            "job {id}: {:?}",
            self.job(id)
        );
    }

    /// Waits until slurmctld's log holds `needle` at least `count` times.
    pub fn wait_log(&self, needle: &str, count: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.log().matches(needle).count() < count {
            assert!(
                Instant::now() < deadline,
                "no {needle:?} after {timeout:?}\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Stops slurmctld, switches its scheduler to `sched` if given, and
    /// starts it again on its saved state.
    pub fn restart_controller(&self, sched: Option<&str>) {
        let mut cmd = Command::new(repo().join("scripts/slurm-cluster.sh"));
        cmd.arg("restart-ctld").arg(self.path());
        if let Some(sched) = sched {
            cmd.args(["--sched", sched]);
        }
        run(&mut cmd);
    }

    /// SIGKILLs slurmctld (a crash) and starts it again on its saved state.
    pub fn crash_controller(&self) {
        run(Command::new(repo().join("scripts/slurm-cluster.sh"))
            .arg("restart-ctld")
            .arg(self.path())
            .arg("--kill"));
    }

    /// Every record job scripts left, by job id.
    pub fn records(&self) -> Vec<(u32, Record)> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(self.path())
            .expect("cluster dir")
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().to_string();
            if let Some(id) = name.strip_prefix("rec-").and_then(|s| s.parse().ok()) {
                out.push((id, self.record(id)));
            }
        }
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// Waits until no job of array (or plain job) `array_id` is pending or
    /// running.
    pub fn wait_array_done(&self, array_id: u32, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let out = run(self.cmd("squeue").args(["-h", "-o", "%F"]));
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            if !text.split_whitespace().any(|s| s == array_id.to_string()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "array {array_id} still live after {timeout:?}: {text}\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The output of `sdiag`.
    pub fn sdiag(&self) -> String {
        String::from_utf8_lossy(&run(&mut self.cmd("sdiag")).stdout).to_string()
    }

    pub fn controller_up(&self) -> bool {
        let out = self.cmd("scontrol").arg("ping").output().expect("scontrol");
        String::from_utf8_lossy(&out.stdout).contains("is UP")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // FAIRMATCH_KEEP_FAILED=1 keeps a failed test's cluster files, with
        // the queue and the nodes as they were.
        // FAIRMATCH_KEEP_ALL=1 keeps every cluster's files.
        let keep = (std::thread::panicking()
            && std::env::var_os("FAIRMATCH_KEEP_FAILED").is_some())
            || std::env::var_os("FAIRMATCH_KEEP_ALL").is_some();
        if keep {
            let mut diag = String::new();
            for (cmd, args) in [
                ("squeue", &["-t", "all", "-o", "%i %T %r %P %N %S"][..]),
                ("sinfo", &["-N", "-l"][..]),
                ("sdiag", &[][..]),
                ("scontrol", &["show", "job"][..]),
            ] {
                if let Ok(out) = self.cmd(cmd).args(args).output() {
                    diag += &format!("$ {cmd} {}\n", args.join(" "));
                    diag += &String::from_utf8_lossy(&out.stdout);
                    diag += &String::from_utf8_lossy(&out.stderr);
                }
            }
            let _ = std::fs::write(self.path().join("diag.txt"), diag);
        }
        let _ = Command::new(repo().join("scripts/slurm-cluster.sh"))
            .arg("stop")
            .arg(self.path())
            .status();
        if std::thread::panicking() {
            eprintln!("slurmctld log tail:\n{}", self.log_tail());
        }
        if keep {
            if let Some(dir) = self.dir.take() {
                eprintln!("cluster files kept in {}", dir.keep().display());
            }
        }
    }
}

/// Runs `run` on each of `args` at once, each on a cluster of its own,
/// and returns the results in order. Their jobs sleep, so the
/// clusters share the wall clock more than the CPU: side-by-side runs
/// whose checks compare them with each other take the time of the longest.
/// A run whose check holds it to a prediction (a twin, a calibrated
/// overhead) runs alone, where the other clusters cannot slow it.
pub fn concurrently<A: Send, T: Send>(args: Vec<A>, run: impl Fn(A) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let run = &run;
        let handles: Vec<_> = args.into_iter().map(|a| s.spawn(move || run(a))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// The schedulers a side-by-side scenario runs under: backfill, then
/// fairmatch; fairmatch alone with `FAIRMATCH_SKIP_REFERENCE` (a later
/// release's run, where 22.05's already compares).
pub fn schedulers() -> &'static [&'static str] {
    if std::env::var_os("FAIRMATCH_SKIP_REFERENCE").is_none() {
        &["sched/backfill", "sched/fairmatch"]
    } else {
        &["sched/fairmatch"]
    }
}

/// Runs a command, panicking with its output if it fails.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Splits `scontrol -o` output into fields. Values may contain spaces only
/// in the last fields we do not read, so a split on ' Key=' suffices.
pub fn parse_fields(line: &str) -> HashMap<String, String> {
    let mut fields = HashMap::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].to_string();
        let after = &rest[eq + 1..];
        // The value runs to the next " Key=" (a word followed by '=').
        let mut end = after.len();
        let bytes = after.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b' ' {
                let word_end = after[i + 1..].find([' ', '=']).map(|p| i + 1 + p);
                if let Some(we) = word_end {
                    if bytes[we] == b'=' && we > i + 1 {
                        end = i;
                        break;
                    }
                }
            }
            i += 1;
        }
        fields.insert(key, after[..end].to_string());
        rest = after[end..].trim_start();
    }
    fields
}
