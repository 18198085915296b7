//! Run times learned from completed jobs, the second fallback after a
//! job's time limit: the mean run time of earlier jobs with the same user,
//! job name and partition. Memory is bounded; the entry updated longest ago
//! goes first.

use std::collections::HashMap;

/// Jobs (user, name, partition) remembered at most; the least recently used go
/// first.
pub const MAX_ENTRIES: usize = 10_000;

/// Mean run times of finished jobs, by user, job name and partition.
#[derive(Clone, Debug, Default)]
pub struct History {
    entries: HashMap<(String, String, String), Entry>,
    clock: u64,
}

#[derive(Clone, Debug)]
struct Entry {
    count: u64,
    mean: f64,
    touched: u64,
}

impl History {
    /// Adds a finished job's run time in seconds; a negative or non-finite one
    /// is ignored.
    pub fn record(&mut self, user: &str, name: &str, partition: &str, seconds: f64) {
        if !(seconds.is_finite() && seconds >= 0.0) {
            return;
        }
        self.clock += 1;
        let key = (user.to_string(), name.to_string(), partition.to_string());
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
        });
        e.count += 1;
        e.mean += (seconds - e.mean) / e.count as f64;
        e.touched = clock;
    }

    /// The mean run time in seconds of the jobs recorded under this key.
    pub fn mean(&self, user: &str, name: &str, partition: &str) -> Option<f64> {
        self.entries
            .get(&(user.to_string(), name.to_string(), partition.to_string()))
            .map(|e| e.mean)
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
    fn learns_means_per_key_and_stays_bounded() {
        let mut h = History::default();
        h.record("alice", "train", "gpu", 10.0);
        h.record("alice", "train", "gpu", 20.0);
        h.record("alice", "train", "cpu", 99.0);
        assert_eq!(h.mean("alice", "train", "gpu"), Some(15.0));
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
