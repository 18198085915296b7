//! Run times learned from completed jobs: the mean run time of earlier
//! jobs with the same user, job name and flavor (a partition, or
//! `partition:type` where one is split by GPU type). Memory is bounded;
//! the entry updated longest ago goes first. Each entry also keeps how far its mean was from each run it
//! then learned: the error the estimate would have had.

use std::collections::HashMap;

/// Jobs (user, name, flavor) remembered at most; the least recently used go
/// first.
pub const MAX_ENTRIES: usize = 10_000;

/// Mean run times of finished jobs, by user, job name and flavor.
#[derive(Clone, Debug, Default)]
pub struct History {
    entries: HashMap<(String, String, String), Entry>,
    clock: u64,
    /// Speed ratios between flavors, per user and cluster-wide (user
    /// ""): (user, to, from) -> the geometric mean over the job names run
    /// on both of `mean(to) / mean(from)`. Rebuilt by
    /// [`History::refresh_ratios`].
    ratios: HashMap<(String, String, String), Ratio>,
    /// Per user: the geometric mean over the user's jobs of each job's
    /// mean on its fastest flavor. Rebuilt by [`History::refresh_ratios`].
    typical: HashMap<String, f64>,
}

/// A speed ratio learned from other jobs: the mean and the spread of the
/// logarithms of their ratios.
#[derive(Clone, Copy, Debug)]
struct Ratio {
    ln_mean: f64,
    ln_spread: f64,
}

/// The spread assumed for a ratio learned from a single job: a factor of 2
/// either way.
const ONE_JOB_SPREAD: f64 = std::f64::consts::LN_2;

/// Runs of one job (user, name, flavor) after which its mean comes
/// before the job's time limit. Time limits are padded: users ask for
/// several times the run they expect, so a limit is often off by 100% or
/// more. Runs of one ML job vary by tens of percent (data, restarts); with
/// a spread of 30%, the mean of three runs is within about 17% (30% over
/// the square root of 3), which already beats a padded limit, while one or
/// two runs may be a crash or a smoke test.
pub const TRUSTED_RUNS: u64 = 3;

/// The mean of `values`, summed in sorted order whatever order a hash map
/// gave them in: a simulation then gives the same decisions run after
/// run. `values` is left sorted.
fn ordered_mean(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    values.iter().sum::<f64>() / values.len() as f64
}

/// Whether an estimate for flavor `f` may explore (take the optimistic
/// ratio): not while a run of the same job is in flight there, whose end
/// will teach the job's own time. One run explores at a time; without
/// this, every run that arrives before the first ends is sent to try the
/// same flavor.
pub fn explores(running: &[Option<f64>], f: usize) -> bool {
    running.get(f).is_none_or(Option::is_none)
}

/// An estimate for a flavor where a run of the same job (user, name) is
/// in flight: at least the time that run has run so far. Until a job's
/// first run ends nothing is learned of it; its elapsed time is the one
/// fact there is, and it keeps the next runs from following a run that
/// turns out long onto the same flavor.
pub fn in_flight(estimate: f64, running: Option<f64>) -> f64 {
    running.map_or(estimate, |r| estimate.max(r))
}

#[derive(Clone, Debug)]
struct Entry {
    count: u64,
    mean: f64,
    touched: u64,
    /// Runs learned while a mean was known, and the sum of
    /// `|mean - run| / run` over them.
    judged: u64,
    error_sum: f64,
}

/// One learned key, as it is saved.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryEntry {
    /// The key: user, job name and flavor.
    pub user: String,
    /// See `user`.
    pub name: String,
    /// See `user`.
    pub flavor: String,
    /// Runs learned.
    pub count: u64,
    /// Their mean, in seconds.
    pub mean: f64,
    /// Runs learned while an estimate existed.
    pub judged: u64,
    /// The sum of their relative errors, `|estimate - run| / run`.
    pub error_sum: f64,
}

impl History {
    /// Adds a finished job's run time in seconds; a negative or non-finite one
    /// is ignored.
    pub fn record(&mut self, user: &str, name: &str, flavor: &str, seconds: f64) {
        if !(seconds.is_finite() && seconds >= 0.0) {
            return;
        }
        self.clock += 1;
        let key = (user.to_string(), name.to_string(), flavor.to_string());
        if !self.entries.contains_key(&key) && self.entries.len() >= MAX_ENTRIES {
            if let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.touched)
                .map(|(k, _)| k.clone())
            {
                self.entries.remove(&oldest);
            }
        }
        let clock = self.clock;
        let e = self.entries.entry(key).or_insert(Entry {
            count: 0,
            mean: 0.0,
            touched: clock,
            judged: 0,
            error_sum: 0.0,
        });
        if e.count > 0 && seconds > 0.0 {
            e.judged += 1;
            e.error_sum += (e.mean - seconds).abs() / seconds;
        }
        e.count += 1;
        e.mean += (seconds - e.mean) / e.count as f64;
        e.touched = clock;
    }

    /// The mean run time in seconds of the jobs recorded under this key.
    pub fn mean(&self, user: &str, name: &str, flavor: &str) -> Option<f64> {
        self.entries
            .get(&(user.to_string(), name.to_string(), flavor.to_string()))
            .map(|e| e.mean)
    }

    /// As [`History::mean`], only after [`TRUSTED_RUNS`] runs.
    pub fn trusted_mean(&self, user: &str, name: &str, flavor: &str) -> Option<f64> {
        self.entries
            .get(&(user.to_string(), name.to_string(), flavor.to_string()))
            .filter(|e| e.count >= TRUSTED_RUNS)
            .map(|e| e.mean)
    }

    /// How much longer a run takes in flavor `to` than in `from`: from
    /// this job's own runs in both, else from the user's jobs that ran in
    /// both, else from everyone's (each job's ratio counted once, their
    /// geometric mean). `None` when no job ran in both.
    pub fn speed_ratio(&self, user: &str, name: &str, to: &str, from: &str) -> Option<f64> {
        if let (Some(a), Some(b)) = (self.mean(user, name, to), self.mean(user, name, from)) {
            if a > 0.0 && b > 0.0 {
                return Some(a / b);
            }
        }
        self.learned_ratio(user, to, from).map(|r| r.ln_mean.exp())
    }

    /// As [`History::speed_ratio`], but where this job never ran in `to`,
    /// the ratio of other jobs is taken one spread in `to`'s favour: the
    /// job is then tried there when the other jobs leave room for it being
    /// faster, and the run teaches its own ratio. Without this, a job that
    /// first ran in one flavor stays there whenever other jobs say the
    /// other is slower, even when for this job it is not.
    pub fn exploring_ratio(&self, user: &str, name: &str, to: &str, from: &str) -> Option<f64> {
        if self.mean(user, name, to).is_some() {
            return self.speed_ratio(user, name, to, from);
        }
        self.learned_ratio(user, to, from)
            .map(|r| (r.ln_mean - r.ln_spread).exp())
    }

    fn learned_ratio(&self, user: &str, to: &str, from: &str) -> Option<Ratio> {
        let key = |u: &str| (u.to_string(), to.to_string(), from.to_string());
        self.ratios
            .get(&key(user))
            .or_else(|| self.ratios.get(&key("")))
            .copied()
    }

    /// A run time in flavor `to` carried from the first of `known`
    /// (flavor, seconds) in another flavor with a speed ratio: the
    /// exploring one ([`History::exploring_ratio`]) when `explore`, else
    /// [`History::speed_ratio`].
    pub fn carry<'a>(
        &self,
        user: &str,
        name: &str,
        to: &str,
        known: impl IntoIterator<Item = (&'a str, f64)>,
        explore: bool,
    ) -> Option<f64> {
        known.into_iter().find_map(|(from, s)| {
            (from != to)
                .then(|| {
                    if explore {
                        self.exploring_ratio(user, name, to, from)
                    } else {
                        self.speed_ratio(user, name, to, from)
                    }
                })
                .flatten()
                .map(|r| s * r)
        })
    }

    /// Per flavor of `flavors`, the estimate history alone gives,
    /// in the plugin's order without a hint or a time limit: the trusted
    /// mean, else another flavor's trusted mean times the speed ratio,
    /// else the mean of fewer runs, else another flavor's mean of fewer
    /// runs times the ratio, else the user's [`History::typical`] run;
    /// `None` when nothing is known of the user. `running` holds,
    /// per flavor, how long a run of this job in flight there has run
    /// (see [`explores`]); the caller applies its default where this
    /// gives `None`, then [`in_flight`]. The simulator's learned
    /// estimates.
    pub fn estimates(
        &self,
        user: &str,
        name: &str,
        flavors: &[&str],
        running: &[Option<f64>],
    ) -> Vec<Option<f64>> {
        let trusted: Vec<Option<f64>> = flavors
            .iter()
            .map(|p| self.trusted_mean(user, name, p))
            .collect();
        let known = || {
            flavors
                .iter()
                .zip(&trusted)
                .filter_map(|(p, t)| t.map(|t| (*p, t)))
        };
        let any_mean = || {
            flavors
                .iter()
                .filter_map(|p| self.mean(user, name, p).map(|m| (*p, m)))
        };
        flavors
            .iter()
            .zip(&trusted)
            .enumerate()
            .map(|(f, (p, t))| {
                let explore = explores(running, f);
                t.or_else(|| self.carry(user, name, p, known(), explore))
                    .or_else(|| self.mean(user, name, p))
                    .or_else(|| self.carry(user, name, p, any_mean(), explore))
                    .or_else(|| self.typical(user))
            })
            .collect()
    }

    /// A typical run of `user`'s: the geometric mean over the user's jobs
    /// of each job's mean on its fastest flavor; `None` for a user nothing
    /// is learned of. The estimate of a job nothing is known of, on every
    /// flavor: its expected length is what orders it among the others
    /// (shortest expected first is what minimises the average completion
    /// time when lengths are not known), and a user's jobs are more alike
    /// than a configured default and everyone's. The geometric mean, as
    /// run times spread over orders of magnitude; the fastest flavor, as
    /// a job's times elsewhere are those of a flavor it was sent to try.
    /// Not split by speed ratio: the job's first run teaches its own.
    pub fn typical(&self, user: &str) -> Option<f64> {
        self.typical.get(user).copied()
    }

    /// Rebuilds the tables behind [`History::speed_ratio`] and
    /// [`History::typical`]: call it after recording a batch of runs.
    pub fn refresh_ratios(&mut self) {
        let mut by_job: HashMap<(&str, &str), Vec<(&str, f64)>> = HashMap::new();
        for ((user, name, flavor), e) in &self.entries {
            if e.mean > 0.0 {
                by_job
                    .entry((user.as_str(), name.as_str()))
                    .or_default()
                    .push((flavor.as_str(), e.mean));
            }
        }
        // user -> ln of each job's fastest mean
        let mut fastest: HashMap<&str, Vec<f64>> = HashMap::new();
        for ((user, _), runs) in &by_job {
            let best = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
            fastest.entry(user).or_default().push(best.ln());
        }
        self.typical = fastest
            .into_iter()
            .map(|(user, mut ln)| (user.to_string(), ordered_mean(&mut ln).exp()))
            .collect();
        // (user, to, from) -> the ln ratio of each job run in both
        let mut logs: HashMap<(String, String, String), Vec<f64>> = HashMap::new();
        for ((user, _), runs) in &by_job {
            for &(to, a) in runs {
                for &(from, b) in runs {
                    if to == from {
                        continue;
                    }
                    for scope in [*user, ""] {
                        logs.entry((scope.to_string(), to.to_string(), from.to_string()))
                            .or_default()
                            .push((a / b).ln());
                    }
                }
            }
        }
        self.ratios = logs
            .into_iter()
            .map(|(k, mut ln)| {
                let n = ln.len() as f64;
                let ln_mean = ordered_mean(&mut ln);
                let ln_spread = if ln.len() < 2 {
                    ONE_JOB_SPREAD
                } else {
                    (ln.iter().map(|x| (x - ln_mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
                };
                (k, Ratio { ln_mean, ln_spread })
            })
            .collect();
    }

    /// Every key, least recently learned first.
    pub fn entries(&self) -> Vec<HistoryEntry> {
        let mut by_age: Vec<(&(String, String, String), &Entry)> = self.entries.iter().collect();
        by_age.sort_by_key(|(_, e)| e.touched);
        by_age
            .into_iter()
            .map(|((user, name, flavor), e)| HistoryEntry {
                user: user.clone(),
                name: name.clone(),
                flavor: flavor.clone(),
                count: e.count,
                mean: e.mean,
                judged: e.judged,
                error_sum: e.error_sum,
            })
            .collect()
    }

    /// The history of `entries`, least recently learned first (as
    /// [`History::entries`] lists them); past [`MAX_ENTRIES`], the oldest
    /// are left out, and entries that are not finite are skipped.
    pub fn restored(entries: Vec<HistoryEntry>) -> Self {
        let mut h = History::default();
        let skip = entries.len().saturating_sub(MAX_ENTRIES);
        for e in entries.into_iter().skip(skip) {
            if !(e.mean.is_finite() && e.mean >= 0.0 && e.error_sum.is_finite() && e.count > 0) {
                continue;
            }
            h.clock += 1;
            h.entries.insert(
                (e.user, e.name, e.flavor),
                Entry {
                    count: e.count,
                    mean: e.mean,
                    touched: h.clock,
                    judged: e.judged.min(e.count),
                    error_sum: e.error_sum.max(0.0),
                },
            );
        }
        h.refresh_ratios();
        h
    }

    /// Keys remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No key is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_ratios_come_from_the_job_then_the_user_then_everyone() {
        let mut h = History::default();
        // alice's train runs 4x longer on cpu; her eval and bob's jobs 2x.
        h.record("alice", "train", "gpu", 100.0);
        h.record("alice", "train", "cpu", 400.0);
        h.record("alice", "eval", "gpu", 10.0);
        h.record("alice", "eval", "cpu", 20.0);
        h.record("bob", "sim", "gpu", 50.0);
        h.record("bob", "sim", "cpu", 100.0);
        h.refresh_ratios();
        assert_eq!(h.speed_ratio("alice", "train", "cpu", "gpu"), Some(4.0));
        let user = h.speed_ratio("alice", "new", "cpu", "gpu").unwrap();
        assert!((user - 8f64.sqrt()).abs() < 1e-9, "{user}");
        let everyone = h.speed_ratio("carol", "x", "cpu", "gpu").unwrap();
        assert!(
            (everyone - 16f64.powf(1.0 / 3.0)).abs() < 1e-9,
            "{everyone}"
        );
        assert!((h.speed_ratio("carol", "x", "gpu", "cpu").unwrap() * everyone - 1.0).abs() < 1e-9);
        assert_eq!(h.speed_ratio("carol", "x", "tpu", "gpu"), None);
        assert_eq!(h.trusted_mean("alice", "train", "gpu"), None);
        h.record("alice", "train", "gpu", 100.0);
        h.record("alice", "train", "gpu", 100.0);
        assert_eq!(h.trusted_mean("alice", "train", "gpu"), Some(100.0));
    }

    #[test]
    fn a_job_is_tried_where_other_jobs_leave_room_for_it_being_faster() {
        let mut h = History::default();
        // bob's three jobs run 2x, 4x and 8x longer on cpu.
        for (name, cpu) in [("a", 200.0), ("b", 400.0), ("c", 800.0)] {
            h.record("bob", name, "gpu", 100.0);
            h.record("bob", name, "cpu", cpu);
        }
        h.record("bob", "d", "gpu", 100.0);
        h.refresh_ratios();
        // The geometric mean is 4x; the logs' spread is ln 2, so a job
        // that never ran on cpu is taken to be 2x slower there, not 4x.
        let mean = h.speed_ratio("bob", "d", "cpu", "gpu").unwrap();
        let tried = h.exploring_ratio("bob", "d", "cpu", "gpu").unwrap();
        assert!((mean - 4.0).abs() < 1e-9, "{mean}");
        assert!((tried - 2.0).abs() < 1e-9, "{tried}");
        assert_eq!(
            h.estimates("bob", "d", &["gpu", "cpu"], &[None, None])[1],
            Some(200.0)
        );
        // Once it ran there, its own ratio counts.
        h.record("bob", "d", "cpu", 1000.0);
        h.refresh_ratios();
        assert_eq!(h.exploring_ratio("bob", "d", "cpu", "gpu"), Some(10.0));
        // Jobs that agree leave no room: the ratio is theirs.
        let mut h = History::default();
        for name in ["a", "b"] {
            h.record("eve", name, "gpu", 100.0);
            h.record("eve", name, "cpu", 300.0);
        }
        h.refresh_ratios();
        let agreed = h.exploring_ratio("eve", "new", "cpu", "gpu").unwrap();
        assert!((agreed - 3.0).abs() < 1e-9, "{agreed}");
    }

    #[test]
    fn learns_means_per_key_and_stays_bounded() {
        let mut h = History::default();
        h.record("alice", "train", "gpu", 10.0);
        h.record("alice", "train", "gpu", 20.0);
        h.record("alice", "train", "cpu", 99.0);
        assert_eq!(h.mean("alice", "train", "gpu"), Some(15.0));
        let saved = h.entries();
        assert_eq!(saved.len(), 2);
        let gpu = saved.iter().find(|e| e.flavor == "gpu").unwrap();
        // The mean was 10 when the 20 s run came: half off.
        assert_eq!((gpu.judged, gpu.error_sum), (1, 0.5));
        let back = History::restored(saved.clone());
        assert_eq!(back.entries(), saved);
        assert_eq!(h.mean("bob", "train", "gpu"), None);
        for i in 0..MAX_ENTRIES + 5 {
            h.record("u", &i.to_string(), "cpu", 1.0);
        }
        assert_eq!(h.len(), MAX_ENTRIES);
        assert_eq!(
            h.mean("alice", "train", "gpu"),
            None,
            "oldest evicted first"
        );
    }
}
