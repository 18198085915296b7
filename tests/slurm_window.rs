//! The check window (src/slurm/window.rs) against checking everything:
//! on random queues, a plan made from only the jobs the window asked
//! Slurm's checks about starts exactly the jobs, on exactly the slots, that
//! a plan made from every checked job starts.

use fairmatch::policy::allox::candidates::CandidateRule;
use fairmatch::slurm::config::{Config, FairshareBy};
use fairmatch::slurm::planner::Planner;
use fairmatch::slurm::snapshot::{
    Action, Checked, Decision, JobInfo, NodeInfo, PartitionInfo, Placement, Snapshot,
};

/// SplitMix64: a seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Three CPU nodes (`cpu`) and three one-GPU nodes (`gpu`).
fn six_nodes(now: f64) -> Snapshot {
    let node = |name: &str, gres: &str| NodeInfo::up(name, 1, gres);
    let partition = |name: &str, nodes: Vec<usize>| PartitionInfo {
        name: name.into(),
        nodes,
        schedulable: true,
        limits: Default::default(),
    };
    Snapshot {
        now,
        nodes: vec![
            node("c1", ""),
            node("c2", ""),
            node("c3", ""),
            node("g1", "gpu:1"),
            node("g2", "gpu:1"),
            node("g3", "gpu:1"),
        ],
        partitions: vec![
            partition("cpu", vec![0, 1, 2]),
            partition("gpu", vec![3, 4, 5]),
        ],
        pending: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
    }
}

const USERS: [&str; 4] = ["ann", "bob", "cyd", "dee"];

fn submitted(rng: &mut Rng, id: u32) -> JobInfo {
    let gpu = [5, 10, 10, 30, 60][rng.below(5) as usize];
    let cpu = [10, 20, 60, 60, 300][rng.below(5) as usize];
    let comment = match rng.below(6) {
        0 => String::new(), // no hint: the default run time
        1 => format!("fairmatch: cpu={cpu}s"),
        _ => format!("fairmatch: gpu={gpu}s cpu={cpu}s"),
    };
    let user = USERS[rng.below(4) as usize];
    JobInfo {
        tasks: if rng.below(8) == 0 { 3 } else { 1 },
        account: format!("acct-{}", &user[..1]),
        user_shares: Some(1.0 + (user.len() % 3) as f64),
        eligible: 1000.0 + rng.below(40) as f64, // ties in arrival
        checked: Checked::Not,
        ..JobInfo::pending(id, user, &comment, &["cpu", "gpu"])
    }
}

/// What Slurm's checks make of a submitted job, the same for both plans:
/// some are held back, some lose the GPU partition, some a node.
fn slurm_checks(job: &JobInfo) -> Option<JobInfo> {
    let h = (job.job_id as u64).wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40;
    if h % 4 == 0 {
        return None;
    }
    let mut checked = job.clone();
    checked.checked = Checked::Runnable;
    if h % 5 == 0 {
        checked.partitions = vec!["cpu".into()];
    }
    checked.usable_nodes = Some(if h % 3 == 0 {
        vec![0, 1, 2, 4, 5] // not g1
    } else {
        (0..6).collect()
    });
    Some(checked)
}

fn starts(decisions: &[Decision]) -> Vec<(u32, String, String)> {
    let mut s: Vec<_> = decisions
        .iter()
        .filter_map(|d| match &d.action {
            Action::Start {
                partition, nodes, ..
            } => Some((d.job_id, partition.clone(), nodes.join(","))),
            Action::Wait | Action::FirstCome | Action::Preempt { .. } => None,
        })
        .collect();
    s.sort();
    s
}

#[test]
fn a_plan_from_the_window_starts_what_a_plan_from_every_job_starts() {
    let mut windowed_checks = 0usize;
    let mut all_checks = 0usize;
    for seed in 0..400u64 {
        let mut rng = Rng(seed);
        let config = Config {
            max_candidates: Some(1 + rng.below(6) as usize),
            alpha: [1.0, 0.5, 0.25][rng.below(3) as usize],
            candidate_rule: if rng.below(3) == 0 {
                CandidateRule::Arrival
            } else {
                CandidateRule::Shortest
            },
            fairshare_by: if rng.below(4) == 0 {
                FairshareBy::Account
            } else {
                FairshareBy::User
            },
            ..Config::default()
        };
        let mut snap = six_nodes(2000.0);
        let n = 5 + rng.below(250) as u32;
        snap.pending = (1..=n).map(|id| submitted(&mut rng, id)).collect();
        // Some slots are taken, so users' shares differ.
        for (k, node) in ["c1", "g2"].iter().enumerate() {
            if rng.below(2) == 0 {
                let mut r = submitted(&mut rng, 100 + k as u32);
                r.checked = Checked::Runnable;
                r.running = Some(Placement {
                    partition: if node.starts_with('g') { "gpu" } else { "cpu" }.into(),
                    nodes: vec![node.to_string()],
                    start: 1990.0,
                });
                r.partitions = vec![r.running.as_ref().unwrap().partition.clone()];
                snap.running.push(r);
            }
        }

        // Every job checked, the ones Slurm holds back left out: the plan
        // before the window.
        let mut everything = snap.clone();
        everything.pending = snap.pending.iter().filter_map(slurm_checks).collect();
        all_checks += snap.pending.len();
        let expected = starts(&Planner::new(config.clone()).plan(&everything));

        let planner = Planner::new(config.clone());
        let mut windowed = snap.clone();
        let mut rounds = 0;
        loop {
            let wanted = planner.to_check(&windowed);
            if wanted.is_empty() {
                break;
            }
            rounds += 1;
            assert!(
                rounds <= windowed.pending.len(),
                "seed {seed}: the window never closes"
            );
            for i in wanted {
                let job = &mut windowed.pending[i];
                assert_eq!(job.checked, Checked::Not, "seed {seed}: checked twice");
                windowed_checks += 1;
                *job = slurm_checks(job).unwrap_or_else(|| JobInfo {
                    checked: Checked::Blocked,
                    ..job.clone()
                });
            }
        }
        let got = starts(&Planner::new(config.clone()).plan(&windowed));
        assert_eq!(got, expected, "seed {seed}, {config:?}");
    }
    // The window must also be a saving, or it is only a risk: 57% of the
    // checks on these queues of up to 255 jobs with 6 slots.
    assert!(
        windowed_checks * 3 < all_checks * 2,
        "{windowed_checks} checks with the window, {all_checks} without"
    );
}

/// `jobs` jobs of 10 s, one user's, arriving one a second, on
/// [`six_nodes`] at 2000 s, with a cap of one candidate taken first come;
/// Slurm's checks have passed the ones the window asked about, the rest
/// are unchecked. The planner that asked.
fn past_the_window(jobs: u32) -> (Planner, Snapshot) {
    let planner = Planner::new(Config {
        max_candidates: Some(1),
        candidate_rule: CandidateRule::Arrival,
        ..Config::default()
    });
    let mut snap = six_nodes(2000.0);
    snap.pending = (1..=jobs)
        .map(|id| JobInfo {
            eligible: 1000.0 + id as f64,
            checked: Checked::Not,
            ..JobInfo::pending(id, "ann", "fairmatch: gpu=10s cpu=10s", &["cpu", "gpu"])
        })
        .collect();
    loop {
        let wanted = planner.to_check(&snap);
        if wanted.is_empty() {
            break;
        }
        for i in wanted {
            snap.pending[i].checked = Checked::Runnable;
            snap.pending[i].usable_nodes = Some((0..6).collect());
        }
    }
    (planner, snap)
}

/// What the shim does with the waits of `decisions`: each job's start,
/// as Slurm then shows it.
fn shows(snap: &mut Snapshot, decisions: &[Decision]) {
    for d in decisions.iter().filter(|d| d.action == Action::Wait) {
        if let Some(job) = snap.pending.iter_mut().find(|j| j.job_id == d.job_id) {
            job.shown_start = d.start_at;
        }
    }
}

#[test]
fn records_past_the_window_get_the_start_they_would_have_and_keep_slurms_reason() {
    // 40 jobs of 10 s on 6 one-slot nodes, with a cap of 1: the window
    // checks 13 of them, 6 start now, and the rest follow in order of
    // arrival, six at a time.
    let now = 2000.0;
    let (mut planner, mut snap) = past_the_window(40);
    let checked = snap
        .pending
        .iter()
        .filter(|j| j.checked == Checked::Runnable)
        .count();
    assert!(checked < 20, "the window checked {checked} of 40");
    let d = planner.plan(&snap);
    assert_eq!(starts(&d).len(), 6);
    for (k, id) in (7..=40u32).enumerate() {
        let wait: Vec<_> = d.iter().filter(|x| x.job_id == id).collect();
        assert_eq!(wait.len(), 1, "job {id}: {d:?}");
        let wait = wait[0];
        assert_eq!(wait.action, Action::Wait);
        let expected = now + 10.0 * (k / 6 + 1) as f64;
        assert_eq!(wait.start_at, Some(expected), "job {id}");
        let record = &snap.pending[id as usize - 1];
        if record.checked == Checked::Not {
            // Nothing says yet that Slurm's limits let it run.
            assert_eq!(
                (wait.reason.as_str(), wait.for_resources),
                ("", false),
                "job {id}"
            );
        } else {
            // Every slot is taken: Slurm's "Resources", as backfill says.
            assert!(wait.for_resources, "{wait:?}");
        }
    }
    // Asked again a moment later, once Slurm shows the starts written and
    // with nothing else changed, it leaves them as they are.
    shows(&mut snap, &d);
    snap.now += 0.5;
    let again = planner.plan(&snap);
    let unchecked = |id: u32| snap.pending[id as usize - 1].checked == Checked::Not;
    assert!(again.iter().all(|x| !unchecked(x.job_id)), "{again:?}");
    let shown = d.iter().filter(|x| unchecked(x.job_id)).count();
    assert!(shown > 10);
    // Moved to a partition fairmatch does not plan, they are no longer
    // forecast: the starts they were shown are taken back.
    for job in snap
        .pending
        .iter_mut()
        .filter(|j| j.checked == Checked::Not)
    {
        job.partitions = vec!["elsewhere".into()];
    }
    let gone = planner.plan(&snap);
    let taken_back: Vec<_> = gone
        .iter()
        .filter(|x| snap.pending[x.job_id as usize - 1].checked == Checked::Not)
        .collect();
    assert_eq!(taken_back.len(), shown, "{gone:?}");
    assert!(taken_back
        .iter()
        .all(|x| x.start_at.is_none() && x.reason.is_empty()));
}

#[test]
fn a_long_queue_past_the_window_gets_its_starts_a_bounded_number_per_plan_soonest_first() {
    let (mut planner, mut snap) = past_the_window(600);
    let unchecked = |snap: &Snapshot, d: &[Decision]| -> Vec<u32> {
        d.iter()
            .filter(|x| snap.pending[x.job_id as usize - 1].checked == Checked::Not)
            .map(|x| x.job_id)
            .collect()
    };
    let d = planner.plan(&snap);
    let first = unchecked(&snap, &d);
    // Writes a cycle dropped (its hold stopped) are sent again: what Slurm
    // shows decides, not what was sent.
    assert_eq!(unchecked(&snap, &planner.plan(&snap)), first);
    shows(&mut snap, &d);
    let d = planner.plan(&snap);
    let second = unchecked(&snap, &d);
    shows(&mut snap, &d);
    let d = planner.plan(&snap);
    let third = unchecked(&snap, &d);
    shows(&mut snap, &d);
    assert_eq!(unchecked(&snap, &planner.plan(&snap)), Vec::<u32>::new());
    let past_window = snap
        .pending
        .iter()
        .filter(|j| j.checked == Checked::Not)
        .count();
    assert!(past_window > 512, "{past_window}");
    // 256 a plan, soonest (here first come) first, until each has one.
    assert_eq!(first.len(), 256);
    assert_eq!(second.len(), 256);
    assert_eq!(third.len(), past_window - 512);
    assert!(first.iter().max() < second.iter().min());
    assert!(second.iter().max() < third.iter().min());
}
