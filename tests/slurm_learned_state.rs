//! What the planner learned outlives slurmctld: learned run times and
//! attained service go into a state file and come back whole, a torn one
//! is refused, and with priority/multifactor Slurm's own decayed usage
//! ranks the users.

use fairmatch::slurm::config::{parse, Config};
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::saved_state::decode;
use fairmatch::slurm::snapshot::{
    Action, Decision, FinishedJob, JobInfo, NodeInfo, PartitionInfo, Placement, Snapshot,
};

/// One CPU node, c1, in `cpu`.
fn one_cpu(now: f64) -> Snapshot {
    Snapshot {
        now,
        nodes: vec![NodeInfo::up("c1", 1, "")],
        partitions: vec![PartitionInfo::new("cpu", vec![0])],
        pending: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
    }
}

/// The note fairmatch leaves on a job (its admin comment).
fn note(decisions: &[Decision], id: u32) -> String {
    decisions
        .iter()
        .find(|d| d.job_id == id)
        .and_then(|d| d.note.clone())
        .unwrap_or_default()
}

fn started(decisions: &[Decision]) -> Vec<u32> {
    decisions
        .iter()
        .filter(|d| matches!(d.action, Action::Start { .. }))
        .map(|d| d.job_id)
        .collect()
}

fn waiting(id: u32, user: &str, eligible: f64) -> JobInfo {
    let mut j = JobInfo::pending(id, user, "", &["cpu"]);
    j.eligible = eligible;
    j
}

fn running(id: u32, user: &str, start: f64) -> JobInfo {
    let mut j = JobInfo::pending(id, user, "", &["cpu"]);
    j.running = Some(Placement {
        partition: "cpu".into(),
        nodes: vec!["c1".into()],
        start,
    });
    j
}

/// A planner that learned `train`'s run time (40 s) and saw `heavy` hold
/// the cluster for an hour.
fn experienced() -> Planner {
    let mut p = Planner::new(Config::default());
    let mut snap = one_cpu(1000.0);
    snap.finished = vec![FinishedJob {
        user: "heavy".into(),
        name: "train".into(),
        partition: "cpu".into(),
        nodes: String::new(),
        shards: false,
        seconds: 40.0,
        end: 0.0,
    }];
    snap.running = vec![running(1, "heavy", 1000.0)];
    p.plan(&snap);
    let mut snap = one_cpu(4600.0);
    snap.running = vec![running(1, "heavy", 1000.0)];
    p.plan(&snap);
    p
}

#[test]
fn learned_run_times_and_service_survive_a_save_and_restore() {
    let saved = experienced().saved_state();
    let mut back = Planner::new(Config::default());
    let summary = back.restore(&saved).expect("a whole file is read");
    assert!(summary.starts_with("1 learned run times"), "{summary}");
    assert_eq!(back.saved_state(), saved, "nothing lost or changed");

    // The learned run time is the estimate of the next `train` job, and
    // the user who held the cluster waits behind one who did not, though
    // its job is older.
    let config = parse("f.conf", "Alpha=0.5\n").0;
    let mut snap = one_cpu(4700.0);
    snap.pending = vec![waiting(2, "heavy", 4000.0), waiting(3, "light", 4500.0)];
    let mut fresh = Planner::new(config.clone());
    let decisions = fresh.plan(&snap);
    assert_eq!(started(&decisions), vec![2], "a planner that forgot");
    let mut restored = Planner::new(config);
    restored.restore(&saved).unwrap();
    let decisions = restored.plan(&snap);
    assert_eq!(started(&decisions), vec![3], "{decisions:?}");
    assert!(
        note(&decisions, 2).contains("cpu=40s (history)"),
        "{decisions:?}"
    );
    assert!(
        note(&decisions, 3).contains("cpu=3600s (default)"),
        "{decisions:?}"
    );
}

#[test]
fn a_torn_state_file_is_refused_and_nothing_is_half_read() {
    let saved = experienced().saved_state();
    let mut p = Planner::new(Config::default());
    let before = p.saved_state();
    let torn = &saved[..saved.len() / 2];
    let err = p.restore(torn).unwrap_err();
    assert!(
        err.contains("cut short") || err.contains("checksum"),
        "{err}"
    );
    assert_eq!(p.saved_state(), before);
    assert!(p.restore("not a state file\n").is_err());
}

/// With priority/multifactor, Slurm's decayed usage (per share) ranks the
/// users, whatever this planner saw: a restart of slurmctld loses nothing.
#[test]
fn slurm_usage_ranks_users_where_slurm_keeps_it() {
    let config = parse("f.conf", "Alpha=0.5\n").0;
    let mut snap = one_cpu(100.0);
    let mut heavy = waiting(1, "heavy", 10.0);
    heavy.user_usage = Some(5000.0);
    let mut light = waiting(2, "light", 50.0);
    light.user_usage = Some(10.0);
    snap.pending = vec![heavy, light];
    assert_eq!(started(&Planner::new(config.clone()).plan(&snap)), vec![2]);
    // Shares weigh usage: with ten times the shares, heavy's usage per
    // share is the lower.
    snap.pending[0].user_shares = Some(1000.0);
    assert_eq!(started(&Planner::new(config.clone()).plan(&snap)), vec![1]);
    // Without Slurm's usage, the two are equal and the older goes first.
    for j in &mut snap.pending {
        j.user_usage = None;
        j.user_shares = None;
    }
    assert_eq!(started(&Planner::new(config).plan(&snap)), vec![1]);
}

/// `FairshareBy=tree`: each association (a user in an account) is ranked
/// by Slurm's fair-share factor, which fair tree computed down the account
/// tree; one user's jobs in two accounts rank apart.
#[test]
fn fair_tree_ranks_associations_by_slurms_factor() {
    let config = parse("f.conf", "Alpha=0.5\nFairshareBy=tree\n").0;
    let mut snap = one_cpu(100.0);
    // root's older job is in an account whose parent used the cluster
    // (factor 0.25); its newer one in an account of a tree that did not
    // (0.75). The user's own usage is the same in both.
    let mut used = waiting(1, "root", 10.0);
    used.account = "phys_b".into();
    used.fair_share_factor = Some(0.25);
    used.user_usage = Some(0.0);
    let mut fresh = waiting(2, "root", 50.0);
    fresh.account = "bio_a".into();
    fresh.fair_share_factor = Some(0.75);
    fresh.user_usage = Some(0.0);
    snap.pending = vec![used, fresh];
    assert_eq!(started(&Planner::new(config.clone()).plan(&snap)), vec![2]);
    // By user, both are root's: the older goes first.
    let by_user = parse("f.conf", "Alpha=0.5\n").0;
    assert_eq!(started(&Planner::new(by_user).plan(&snap)), vec![1]);
    // The factors swapped, so is the order.
    snap.pending[0].fair_share_factor = Some(0.75);
    snap.pending[1].fair_share_factor = Some(0.25);
    assert_eq!(started(&Planner::new(config).plan(&snap)), vec![1]);
}

fn finished(user: &str, name: &str, partition: &str, seconds: f64) -> FinishedJob {
    FinishedJob {
        user: user.into(),
        name: name.into(),
        partition: partition.into(),
        nodes: String::new(),
        shards: false,
        seconds,
        end: 0.0,
    }
}

/// c1 in `cpu`, g1 (one GPU) in `gpu`.
fn cpu_and_gpu(now: f64) -> Snapshot {
    let mut snap = one_cpu(now);
    snap.nodes.push(NodeInfo::up("g1", 1, "gpu:1"));
    snap.partitions.push(PartitionInfo::new("gpu", vec![1]));
    snap
}

/// Three runs make a mean trusted over a padded time limit, and a speed
/// ratio learned from other jobs carries a hint on one flavor to the
/// others.
#[test]
fn history_beats_a_padded_limit_and_speed_ratios_carry_hints_across_flavors() {
    let mut p = Planner::new(Config::default());
    let mut snap = cpu_and_gpu(1000.0);
    for _ in 0..3 {
        snap.finished.push(finished("alice", "train", "gpu", 100.0));
        snap.finished.push(finished("alice", "train", "cpu", 400.0));
    }
    snap.finished.push(finished("alice", "eval", "cpu", 30.0));
    snap.finished.push(finished("alice", "probe", "gpu", 20.0));
    p.plan(&snap);

    let mut snap = cpu_and_gpu(1100.0);
    // Both flavors busy, so every job waits and shows its estimates.
    snap.running = vec![running(1, "bob", 1050.0), {
        let mut g = running(2, "bob", 1050.0);
        g.gpus = 1;
        g.running.as_mut().unwrap().partition = "gpu".into();
        g.running.as_mut().unwrap().nodes = vec!["g1".into()];
        g.partitions = vec!["gpu".into()];
        g
    }];
    let mut limited = JobInfo::pending(3, "alice", "", &["cpu", "gpu"]);
    limited.name = "train".into();
    limited.time_limit = Some(36_000.0);
    let mut hinted = JobInfo::pending(4, "alice", "fairmatch: gpu=50s", &["cpu", "gpu"]);
    hinted.name = "finetune".into();
    let mut once = JobInfo::pending(5, "alice", "", &["cpu"]);
    once.name = "eval".into();
    once.time_limit = Some(600.0);
    let mut unlimited = JobInfo::pending(6, "alice", "", &["cpu", "gpu"]);
    unlimited.name = "probe".into();
    snap.pending = vec![limited, hinted, once, unlimited];
    let decisions = p.plan(&snap);
    let limited = note(&decisions, 3);
    assert!(
        limited.contains("gpu=100s (history)") && limited.contains("cpu=400s (history)"),
        "{limited}"
    );
    // finetune never ran on cpu: alice's ratio there (4x, from train
    // alone) is taken a factor of 2 in cpu's favour, so it may be tried.
    let hinted = note(&decisions, 4);
    assert!(hinted.contains("cpu=100s (speed ratio)"), "{hinted}");
    // One run is not trusted over the job's own limit.
    let once = note(&decisions, 5);
    assert!(once.contains("cpu=600s (time limit)"), "{once}");
    // Without a limit, one run on gpu is carried to cpu as well.
    let unlimited = note(&decisions, 6);
    assert!(
        unlimited.contains("gpu=20s (history)") && unlimited.contains("cpu=40s (speed ratio)"),
        "{unlimited}"
    );
}

/// Until a job's first run ends nothing is learned of it but its user's
/// typical run; while one runs, the time it has run is the floor of its
/// job's estimate on that flavor, and the runs that queue meanwhile do not
/// explore where it runs.
#[test]
fn a_run_in_flight_bounds_its_jobs_estimate_and_explores_one_at_a_time() {
    let mut p = Planner::new(Config::default());
    let mut snap = cpu_and_gpu(1000.0);
    for _ in 0..3 {
        snap.finished.push(finished("alice", "train", "gpu", 100.0));
        snap.finished.push(finished("alice", "train", "cpu", 400.0));
        snap.finished
            .push(finished("alice", "finetune", "gpu", 50.0));
    }
    p.plan(&snap);

    let named = |mut j: JobInfo, name: &str| {
        j.name = name.into();
        j
    };
    let mut snap = cpu_and_gpu(10_000.0);
    // A run of finetune tries cpu (since 9970), one of sweep runs there
    // since 5000; bob holds the GPU. Every job waits and shows its
    // estimates.
    let mut on_gpu = running(1, "bob", 9000.0);
    on_gpu.gpus = 1;
    on_gpu.partitions = vec!["gpu".into()];
    let place = on_gpu.running.as_mut().unwrap();
    place.partition = "gpu".into();
    place.nodes = vec!["g1".into()];
    snap.running = vec![
        on_gpu,
        named(running(2, "alice", 9970.0), "finetune"),
        named(running(3, "alice", 5000.0), "sweep"),
    ];
    let both = |id, comment: &str, name| {
        named(
            JobInfo::pending(id, "alice", comment, &["cpu", "gpu"]),
            name,
        )
    };
    snap.pending = vec![
        both(4, "", "finetune"),
        both(5, "", "sweep"),
        both(6, "fairmatch: cpu=10s", "sweep"),
        {
            let mut limited = both(7, "", "sweep");
            limited.time_limit = Some(1000.0);
            limited
        },
        {
            let mut j = both(8, "", "sweep");
            j.user = "carol".into();
            j
        },
    ];
    let decisions = p.plan(&snap);
    // finetune's ratio to cpu is alice's, 4x: a factor of 2 in cpu's
    // favour while no run of it tries cpu; the plain 4x while one does.
    let finetune = note(&decisions, 4);
    assert!(finetune.contains("cpu=200s (speed ratio)"), "{finetune}");
    let mut alone = snap.clone();
    alone.running.remove(1);
    let mut fresh = Planner::new(Config::default());
    fresh.restore(&p.saved_state()).unwrap();
    let explored = note(&fresh.plan(&alone), 4);
    assert!(explored.contains("cpu=100s (speed ratio)"), "{explored}");
    // Nothing is known of sweep but a run that has gone 5000 s on cpu;
    // on gpu, a typical run of alice's: the geometric mean of her jobs'
    // fastest means (100 s and 50 s).
    let sweep = note(&decisions, 5);
    assert!(
        sweep.contains("cpu=5000s (a run in flight)")
            && sweep.contains("gpu=70.7s (user's typical run)"),
        "{sweep}"
    );
    // Of a user nothing is learned of, the default.
    let carol = note(&decisions, 8);
    assert!(carol.contains("gpu=3600s (default)"), "{carol}");
    // A hint stands, and a run is not planned past its own limit.
    let hinted = note(&decisions, 6);
    assert!(hinted.contains("cpu=10s (hint)"), "{hinted}");
    let limited = note(&decisions, 7);
    assert!(limited.contains("cpu=1000s (time limit)"), "{limited}");
}

/// After a restart slurmctld's shim reports again every finished job it
/// still lists: those the saved state learned are not counted twice.
#[test]
fn a_job_reported_again_after_a_restart_is_learned_once() {
    let ended = |seconds: f64, end: f64| FinishedJob {
        end,
        ..finished("alice", "train", "cpu", seconds)
    };
    let finishing = |jobs: Vec<FinishedJob>| Snapshot {
        finished: jobs,
        ..one_cpu(200.0)
    };
    let mut p = Planner::new(Config::default());
    p.learn(&finishing(vec![ended(10.0, 100.0), ended(20.0, 100.0)]));
    let mut back = Planner::new(Config::default());
    back.restore(&p.saved_state()).unwrap();
    back.learn(&finishing(vec![
        ended(10.0, 100.0),
        ended(20.0, 100.0),
        ended(60.0, 101.0),
    ]));
    let mut snap = one_cpu(200.0);
    let mut job = waiting(1, "alice", 150.0);
    job.name = "train".into();
    snap.running = vec![running(9, "bob", 150.0)];
    snap.pending = vec![job];
    let decisions = back.plan(&snap);
    // (10 + 20 + 60) / 3: three runs, the first two once each.
    assert!(
        note(&decisions, 1).contains("cpu=30s (history)"),
        "{decisions:?}"
    );
}

/// Run times read from slurmdbd at the first start are learned at the next
/// plan, once: the jobs slurmctld still lists that accounting already had
/// are not learned again. A planner that learned anything asks for none.
#[test]
fn runs_from_accounting_are_learned_once_beside_slurmctlds_own() {
    let config = parse("f.conf", "LearnFromAccounting=2d\n").0;
    let mut p = Planner::new(config);
    assert_eq!(p.accounting_wanted(), Some(2.0 * 86_400.0));
    let ended = |seconds: f64, end: f64| FinishedJob {
        end,
        ..finished("alice", "train", "cpu", seconds)
    };
    // slurmdbd had the runs that ended at 100 and 150; slurmctld still
    // lists the one of 150, and one that ended after the read (160).
    assert_eq!(
        p.add_accounting_runs(vec![ended(20.0, 150.0), ended(10.0, 100.0)]),
        2
    );
    let mut snap = one_cpu(200.0);
    snap.finished = vec![ended(20.0, 150.0), ended(60.0, 160.0)];
    p.learn(&snap);
    assert_eq!(p.accounting_wanted(), None, "learned: no second read");
    let history = decode(&p.saved_state()).unwrap().history;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].count, 3, "{history:?}");
    assert_eq!(history[0].mean, 30.0);
    // In end order: 10, then 20 (judged against 10), then 60.
    assert_eq!(history[0].judged, 2);
    // Off: never.
    let off = Planner::new(parse("f.conf", "LearnFromAccounting=off\n").0);
    assert_eq!(off.accounting_wanted(), None);
    // The default reads two weeks.
    assert_eq!(
        Planner::new(Config::default()).accounting_wanted(),
        Some(14.0 * 86_400.0)
    );
}
