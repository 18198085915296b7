//! The plugin's configuration file, `fairmatch.conf` beside slurm.conf, in
//! slurm.conf's own `Key=Value` style. Every key is optional; a bad line is
//! reported and its default kept, so a broken file never stops slurmctld.

use super::hints::parse_duration;
use super::priority::PrioritySources;
use crate::policy::allox::candidates::CandidateRule;
use crate::solver::SolverKind;

/// Whom fairness compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairshareBy {
    /// Each user is one party.
    User,
    /// Each association (a user in an account) is one party, ranked by
    /// Slurm's own fair-share factor: fair tree's, by default, which
    /// compares accounts with their siblings level by level down the
    /// account tree. Without `priority/multifactor`, fairmatch's own
    /// service per association.
    Tree,
    /// Each account is one party: its users share its service.
    Account,
}

/// Which waiting jobs may stop a running one (that opted in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptMode {
    /// Never (the default).
    Off,
    /// Jobs past their waiting-time bound, once per round.
    Overdue,
    /// Those, and any job whose start there lowers the total JCT by more
    /// than six rounds net of the restart (the simulator's `--preempt
    /// rounds`).
    Gain,
}

/// The plugin's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// AlloX's fairness knob, in (0, 1].
    pub alpha: f64,
    /// AlloX's `N_max`; `None` = no cap.
    pub max_candidates: Option<usize>,
    /// Which jobs the cap keeps: AlloX's shortest per flavor in turn, or
    /// the earliest arrivals.
    pub candidate_rule: CandidateRule,
    /// Seconds a re-plan must gain to move a planned job to another node.
    pub stickiness: f64,
    /// AlloX's waiting-time bound: a job that has waited this long since it
    /// was submitted goes ahead of every job that has not. `None`
    /// (`MaxWait=off`): no bound.
    pub max_wait: Option<f64>,
    /// Preemption through Slurm's requeue; off by default.
    pub preempt: PreemptMode,
    /// Seconds between preemption rounds.
    pub preempt_round: f64,
    /// Seconds a job runs after each start before it may be preempted.
    pub preempt_min_run: f64,
    /// Jobs of these QOS are preemptible without the hint's word.
    pub preemptible_qos: Vec<String>,
    /// The most seconds of `--signal` notice a preempted job is given
    /// before its requeue.
    pub preempt_grace: f64,
    /// Seconds Slurm holds a requeued job before it may run again
    /// (`SchedulerParameters=requeue_delay`, else `AuthInfo=cred_expire`):
    /// part of what a preemption costs the job it stops. Slurm's, not
    /// fairmatch.conf's: the plugin reads it from slurm.conf.
    pub requeue_delay: f64,
    /// The exact matching solver. `classes` is faster on deep queues and
    /// keeps its matching between plans, but only without stickiness:
    /// with it, every solve is `fast`'s.
    pub solver: SolverKind,
    /// Whether users or accounts are the parties fairness compares.
    pub fairshare_by: FairshareBy,
    /// Half-life of attained service, in seconds, as Slurm's
    /// `PriorityDecayHalfLife`; `None` (`FairshareHalfLife=off`): no decay.
    pub fairshare_half_life: Option<f64>,
    /// How far back, in seconds, run times are read from slurmdbd when
    /// nothing is learned yet; `None` (`LearnFromAccounting=off`): never.
    pub learn_from_accounting: Option<f64>,
    /// Which of Slurm's priority sources make strict classes
    /// (`PriorityTiers=`; see `slurm::priority`).
    pub priority_tiers: PrioritySources,
    /// CPUs per CPU slot; 0 = what the jobs ask for.
    pub cpus_per_slot: u32,
    /// Seconds, when nothing better is known.
    pub default_runtime: f64,
    /// How often the agent looks for changes.
    pub interval_ms: u32,
    /// How often, between those looks, the agent checks whether a job left
    /// a node (a slot freed) or was submitted, to plan for it at once
    /// instead of at the next `interval_ms`; 0 = never. Slurm's own
    /// scheduler runs on both events.
    pub event_poll_ms: u32,
    /// How long one hold of slurmctld's locks may last before the agent
    /// lets the controller's other threads in (as backfill's
    /// `bf_yield_interval`, which defaults to 2 s).
    pub lock_hold_ms: u32,
    /// Managed partitions; empty = all.
    pub partitions: Vec<String>,
}

/// The plugin's default cap on the jobs one decision weighs. Uncapped, a
/// queue of 9,000 took 32 s per decision on 24 slots (a 10,000-job burst
/// then ran at under one job a second). On a 5,000-job queue of one-second
/// jobs on 24 slots (`scripts/bench-plugin.sh`, docs/performance.md), 200
/// candidates gave 1.16x `sched/backfill`'s throughput at 1.8x its CPU,
/// and 1,000 gave 1.09x at 2.5x. Jobs past the cap wait for the ones ahead
/// of them, as they would anyway. `MaxCandidates=0` lifts it.
pub const DEFAULT_MAX_CANDIDATES: usize = 200;

/// `IntervalMs` when fairmatch.conf does not set it. This and the two
/// below are written only here: the C shim's agent starts from them too,
/// through `fairmatch_rs_defaults` (src/plugin/mod.rs).
pub const DEFAULT_INTERVAL_MS: u32 = 500;
/// `EventPollMs` when fairmatch.conf does not set it.
pub const DEFAULT_EVENT_POLL_MS: u32 = 50;
/// `LockHoldMs` when fairmatch.conf does not set it.
pub const DEFAULT_LOCK_HOLD_MS: u32 = 5;

/// `FairshareHalfLife` when fairmatch.conf does not set it: 7 days, the
/// default of Slurm's `PriorityDecayHalfLife`, so the service fairmatch
/// counts itself fades as `sshare`'s usage does.
pub const DEFAULT_FAIRSHARE_HALF_LIFE: f64 = 7.0 * 86_400.0;

/// `LearnFromAccounting` when fairmatch.conf does not set it: 14 days,
/// enough for the weekly jobs to have run twice, and a bounded read
/// (accounting is read a day at a time).
pub const DEFAULT_LEARN_FROM_ACCOUNTING: f64 = 14.0 * 86_400.0;

/// `PreemptGraceTime` when fairmatch.conf does not set it: the longest
/// `--signal` notice honoured before a preempted job is requeued (Slurm's
/// own `KillWait` then still lets it end cleanly after SIGTERM).
pub const DEFAULT_PREEMPT_GRACE: f64 = 120.0;

/// Slurm's `cred_expire` when slurm.conf does not set it.
pub const DEFAULT_REQUEUE_DELAY: f64 = 120.0;

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha: 1.0,
            max_candidates: Some(DEFAULT_MAX_CANDIDATES),
            candidate_rule: CandidateRule::Shortest,
            stickiness: 1.0,
            max_wait: Some(crate::policy::allox::MAX_WAIT),
            preempt: PreemptMode::Off,
            preempt_round: crate::policy::allox::ROUND,
            preempt_min_run: crate::policy::allox::ROUND,
            preemptible_qos: Vec::new(),
            preempt_grace: DEFAULT_PREEMPT_GRACE,
            requeue_delay: DEFAULT_REQUEUE_DELAY,
            solver: SolverKind::default(),
            fairshare_by: FairshareBy::User,
            priority_tiers: PrioritySources::ALL,
            fairshare_half_life: Some(DEFAULT_FAIRSHARE_HALF_LIFE),
            learn_from_accounting: Some(DEFAULT_LEARN_FROM_ACCOUNTING),
            cpus_per_slot: 0,
            default_runtime: 3600.0,
            interval_ms: DEFAULT_INTERVAL_MS,
            event_poll_ms: DEFAULT_EVENT_POLL_MS,
            lock_hold_ms: DEFAULT_LOCK_HOLD_MS,
            partitions: Vec::new(),
        }
    }
}

impl Config {
    /// Whether the plugin manages `partition` (all of them when none are
    /// listed).
    pub fn manages(&self, partition: &str) -> bool {
        self.partitions.is_empty() || self.partitions.iter().any(|p| p == partition)
    }
}

/// Parses `text` (named `file` in messages). Returns the configuration and
/// one `file:line: message` warning per line that was not understood.
pub fn parse(file: &str, text: &str) -> (Config, Vec<String>) {
    let mut config = Config::default();
    let mut warnings = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut warn = |m: String| warnings.push(format!("{file}:{}: {m}", i + 1));
        let Some((key, value)) = line.split_once('=') else {
            warn(format!("expected Key=Value, found '{line}'"));
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let result = apply(&mut config, key, value);
        if let Err(m) = result {
            warn(format!("{m}; keeping the default"));
        }
    }
    (config, warnings)
}

/// Sets one key; an error leaves `config` as it was.
fn apply(config: &mut Config, key: &str, value: &str) -> Result<(), String> {
    match key.to_ascii_lowercase().as_str() {
        "alpha" => {
            config.alpha = value
                .parse::<f64>()
                .ok()
                .filter(|a| *a > 0.0 && *a <= 1.0)
                .ok_or("Alpha must be a number in (0, 1]")?;
        }
        "maxcandidates" => {
            let n = value
                .parse::<usize>()
                .map_err(|_| "MaxCandidates must be a whole number (0 = no cap)")?;
            config.max_candidates = (n > 0).then_some(n);
        }
        "candidaterule" => {
            config.candidate_rule = value.parse()?;
        }
        "stickiness" => {
            config.stickiness = match value.parse::<f64>() {
                Ok(s) if s.is_finite() && s >= 0.0 => s,
                _ => parse_duration(value)?,
            };
        }
        "maxwait" => {
            config.max_wait = match value.to_ascii_lowercase().as_str() {
                "off" | "none" => None,
                _ => Some(match value.parse::<f64>() {
                    Ok(s) if s.is_finite() && s >= 0.0 => s,
                    _ => parse_duration(value).map_err(|e| {
                        format!("MaxWait must be seconds, a duration such as 17h, or off: {e}")
                    })?,
                }),
            };
        }
        "preempt" => {
            config.preempt = match value.to_ascii_lowercase().as_str() {
                "off" | "no" | "none" => PreemptMode::Off,
                "overdue" => PreemptMode::Overdue,
                "gain" => PreemptMode::Gain,
                _ => return Err("Preempt must be 'off', 'overdue' or 'gain'".into()),
            };
        }
        "preemptround" => config.preempt_round = seconds(value, "PreemptRound", 1.0)?,
        "preemptminruntime" => {
            config.preempt_min_run = seconds(value, "PreemptMinRunTime", 0.0)?;
        }
        "preemptgracetime" => config.preempt_grace = seconds(value, "PreemptGraceTime", 0.0)?,
        "preemptibleqos" => config.preemptible_qos = list(value),
        "solver" => {
            config.solver = match value.to_ascii_lowercase().as_str() {
                "fast" => SolverKind::Fast,
                "classes" => SolverKind::Classes,
                _ => return Err("Solver must be 'fast' or 'classes'".into()),
            };
        }
        "fairshareby" => {
            config.fairshare_by = match value.to_ascii_lowercase().as_str() {
                "user" => FairshareBy::User,
                "account" => FairshareBy::Account,
                "tree" => FairshareBy::Tree,
                _ => return Err("FairshareBy must be 'user', 'account' or 'tree'".into()),
            };
        }
        "fairsharehalflife" => {
            config.fairshare_half_life = duration_or_off(value, "FairshareHalfLife")?;
        }
        "learnfromaccounting" => {
            config.learn_from_accounting = duration_or_off(value, "LearnFromAccounting")?;
        }
        "prioritytiers" => config.priority_tiers = priority_tiers(value)?,
        "cpusperslot" => {
            config.cpus_per_slot = value
                .parse::<u32>()
                .map_err(|_| "CpusPerSlot must be a whole number (0 = per job)")?;
        }
        "defaultruntime" => {
            config.default_runtime = match value.parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => s,
                _ => parse_duration(value)?,
            };
        }
        "intervalms" => {
            config.interval_ms = value
                .parse::<u32>()
                .ok()
                .filter(|ms| (10..=60_000).contains(ms))
                .ok_or("IntervalMs must be a whole number from 10 to 60000")?;
        }
        "eventpollms" => {
            config.event_poll_ms = value
                .parse::<u32>()
                .ok()
                .filter(|ms| *ms == 0 || (10..=60_000).contains(ms))
                .ok_or("EventPollMs must be 0 (off) or a whole number from 10 to 60000")?;
        }
        "lockholdms" => {
            config.lock_hold_ms = value
                .parse::<u32>()
                .ok()
                .filter(|ms| (1..=2_000).contains(ms))
                .ok_or("LockHoldMs must be a whole number from 1 to 2000")?;
        }
        "partitions" => config.partitions = list(value),
        _ => return Err(format!("unknown key '{key}'")),
    }
    Ok(())
}

/// A comma-separated list, blanks dropped.
/// `PriorityTiers=`: `none`, or any of `partition`, `qos` and `admin`.
fn priority_tiers(value: &str) -> Result<PrioritySources, String> {
    let mut sources = PrioritySources::NONE;
    for word in list(value) {
        match word.to_ascii_lowercase().as_str() {
            "none" => {}
            "partition" => sources.partition = true,
            "qos" => sources.qos = true,
            "admin" => sources.admin = true,
            _ => {
                return Err(format!(
                    "PriorityTiers takes 'none' or a list of 'partition', 'qos' and 'admin', not '{word}'"
                ))
            }
        }
    }
    Ok(sources)
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// Seconds (a number, or a duration such as `10m`), at least `min`.
fn seconds(value: &str, key: &str, min: f64) -> Result<f64, String> {
    let s = match value.parse::<f64>() {
        Ok(s) if s.is_finite() => s,
        _ => parse_duration(value)
            .map_err(|e| format!("{key} must be seconds or a duration such as 10m: {e}"))?,
    };
    if s < min {
        return Err(format!("{key} must be at least {min} s"));
    }
    Ok(s)
}

/// Seconds, a duration such as `7d`, or `off` (`None`).
fn duration_or_off(value: &str, key: &str) -> Result<Option<f64>, String> {
    Ok(match value.to_ascii_lowercase().as_str() {
        "off" | "none" | "0" => None,
        _ => Some(match value.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 => s,
            _ => parse_duration(value).map_err(|e| {
                format!("{key} must be seconds, a duration such as 7d, or off: {e}")
            })?,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_key() {
        let (c, w) = parse(
            "f.conf",
            "# comment\nAlpha=0.25\nmaxcandidates=50\nFairshareBy=account\nCpusPerSlot=4\n\
             DefaultRuntime=1h\nIntervalMs=100 # fast\nPartitions=cpu, gpu\nCandidateRule=Arrival\nLockHoldMs=20\n\
             EventPollMs=0\nSolver=Classes\nMaxWait=2h\n",
        );
        assert_eq!(c.max_wait, Some(7200.0));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.solver, SolverKind::Classes);
        assert_eq!(c.alpha, 0.25);
        assert_eq!(c.max_candidates, Some(50));
        assert_eq!(c.candidate_rule, CandidateRule::Arrival);
        assert_eq!(c.fairshare_by, FairshareBy::Account);
        assert_eq!(c.cpus_per_slot, 4);
        assert_eq!(c.default_runtime, 3600.0);
        assert_eq!(c.interval_ms, 100);
        assert_eq!(c.lock_hold_ms, 20);
        assert_eq!(c.event_poll_ms, 0);
        assert_eq!(c.partitions, vec!["cpu", "gpu"]);
        assert!(c.manages("gpu") && !c.manages("debug"));
        let (c, w) = parse("f.conf", "FairshareBy=Tree\n");
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.fairshare_by, FairshareBy::Tree);
        let (c, w) = parse("f.conf", "FairshareBy=forest\n");
        assert_eq!(c.fairshare_by, FairshareBy::User);
        assert!(w[0].contains("'tree'"), "{w:?}");
    }

    #[test]
    fn the_waiting_bound_is_on_by_default_and_can_be_turned_off() {
        assert_eq!(Config::default().max_wait, Some(17.0 * 3600.0));
        for off in ["MaxWait=off", "MaxWait=None"] {
            let (c, w) = parse("f.conf", off);
            assert!(w.is_empty(), "{w:?}");
            assert_eq!(c.max_wait, None);
        }
        assert_eq!(parse("f.conf", "MaxWait=90").0.max_wait, Some(90.0));
    }

    #[test]
    fn priority_tiers_default_to_every_source_and_take_a_list() {
        assert_eq!(Config::default().priority_tiers, PrioritySources::ALL);
        let (c, w) = parse("f.conf", "PriorityTiers=QOS, partition\n");
        assert!(w.is_empty(), "{w:?}");
        let want = PrioritySources {
            admin: false,
            ..PrioritySources::ALL
        };
        assert_eq!(c.priority_tiers, want);
        assert_eq!(
            parse("f", "PriorityTiers=none").0.priority_tiers,
            PrioritySources::NONE
        );
        let (c, w) = parse("f.conf", "PriorityTiers=age\n");
        assert_eq!(c.priority_tiers, PrioritySources::ALL);
        assert!(
            w.len() == 1 && w[0].contains("f.conf:1") && w[0].contains("'age'"),
            "{w:?}"
        );
    }

    #[test]
    fn preemption_is_off_by_default_and_read_from_its_keys() {
        let c = Config::default();
        assert_eq!(c.preempt, PreemptMode::Off);
        assert_eq!((c.preempt_round, c.preempt_min_run), (360.0, 360.0));
        let (c, w) = parse(
            "f.conf",
            "Preempt=Overdue\nPreemptRound=1m\nPreemptMinRunTime=30\n\
             PreemptibleQOS=scavenger, low\nPreemptGraceTime=0\n",
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.preempt, PreemptMode::Overdue);
        assert_eq!((c.preempt_round, c.preempt_min_run), (60.0, 30.0));
        assert_eq!(c.preemptible_qos, vec!["scavenger", "low"]);
        assert_eq!(c.preempt_grace, 0.0);
        assert_eq!(parse("f", "Preempt=gain").0.preempt, PreemptMode::Gain);
        let (c, w) = parse(
            "f",
            "Preempt=always\nPreemptRound=0\nPreemptMinRunTime=-5\n",
        );
        assert_eq!(c, Config::default());
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("'off', 'overdue' or 'gain'"), "{w:?}");
        assert!(w[1].contains("at least 1"), "{w:?}");
    }

    #[test]
    fn bad_lines_warn_and_keep_defaults() {
        let (c, w) = parse(
            "f.conf",
            "Alpha=7\nColor=blue\nnonsense\nIntervalMs=1\nCandidateRule=random\nLockHoldMs=0\n\
             EventPollMs=5\nSolver=munkres\nMaxWait=soon\n",
        );
        assert_eq!(c, Config::default());
        assert_eq!(w.len(), 9);
        assert!(w[8].contains("MaxWait must be"), "{w:?}");
        assert!(w[7].contains("Solver must be"), "{w:?}");
        assert!(w[0].starts_with("f.conf:1: Alpha"), "{w:?}");
        assert!(w[1].contains("unknown key 'Color'"));
        assert!(w[2].starts_with("f.conf:3:"));
    }
}
