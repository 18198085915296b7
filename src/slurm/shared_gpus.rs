//! The GPUs of nodes with shards within one plan: each GPU is given
//! whole or shared out, never both (gres.html, "Sharding"), so a start in
//! a GPU flavor or its shard flavor takes the other's slots of the same
//! GPUs. `SnapshotView` applies it to each start.

use super::slots::SlotModel;
use super::snapshot::Snapshot;
use std::collections::HashMap;

/// The GPUs of the nodes with shards, as one plan's starts use them.
#[derive(Default)]
pub(super) struct SharedGpus {
    /// Per node with shards: whether each GPU may still be given whole.
    whole: HashMap<usize, Vec<bool>>,
    /// Per node with shards: its slots, of every flavor.
    slots: HashMap<usize, Vec<usize>>,
}

impl SharedGpus {
    pub(super) fn of(snap: &Snapshot, model: &SlotModel) -> Self {
        let mut gpus = SharedGpus::default();
        for (m, slot) in model.slots.iter().enumerate() {
            let devices = &snap.nodes[slot.node].devices;
            if devices.is_empty() {
                continue;
            }
            gpus.whole
                .entry(slot.node)
                .or_insert_with(|| devices.iter().map(|d| d.free_whole()).collect());
            gpus.slots.entry(slot.node).or_default().push(m);
        }
        gpus
    }

    pub(super) fn slots_on(&self, node: usize) -> &[usize] {
        self.slots.get(&node).map_or(&[], Vec::as_slice)
    }

    /// GPUs of `node` that may still be given whole (any number on a node
    /// without shards).
    pub(super) fn whole_left(&self, node: usize) -> usize {
        self.whole
            .get(&node)
            .map_or(usize::MAX, |w| w.iter().filter(|&&free| free).count())
    }

    /// Gives `count` GPUs of `node` whole, the first free ones as Slurm
    /// does: their indices.
    pub(super) fn give_whole(&mut self, node: usize, count: usize) -> Vec<u32> {
        let Some(whole) = self.whole.get_mut(&node) else {
            return Vec::new();
        };
        let mut given = Vec::with_capacity(count);
        for (d, free) in whole.iter_mut().enumerate() {
            if given.len() == count {
                break;
            }
            if *free {
                *free = false;
                given.push(d as u32);
            }
        }
        given
    }

    /// Shares out GPU `device` of `node`: whether it was free to give
    /// whole until now.
    pub(super) fn share_out(&mut self, node: usize, device: u32) -> bool {
        self.whole
            .get_mut(&node)
            .and_then(|w| w.get_mut(device as usize))
            .is_some_and(|free| std::mem::replace(free, false))
    }
}
