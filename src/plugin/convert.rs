//! Safe conversions between the shim's C structs and the planner's Rust
//! types. Every pointer is checked; a null or non-UTF-8 string becomes an
//! empty or lossy one rather than an error, since slurmctld's data is
//! trusted to be well-formed and a bad byte must not stop scheduling.

use super::raw;
use crate::slurm::config::Config;
use crate::slurm::hostlist;
use crate::slurm::snapshot::{
    Action, Checked, Decision, FinishedJob, GpuDevice, JobInfo, JobPriority, NodeInfo, Outcome,
    PartitionInfo, PartitionLimits, Placement, Preemption, Refusal, Snapshot,
};
use std::ffi::{c_char, CStr};

/// Reads a C string; null becomes "".
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for this call.
pub unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// The finished jobs of `p[0..n)`.
///
/// # Safety
/// `p` is null (then `n` is ignored) or points to `n` valid elements,
/// their strings null or NUL-terminated.
pub unsafe fn finished(p: *const raw::fm_finished_t, n: usize) -> Vec<FinishedJob> {
    slice(p, n)
        .iter()
        .map(|f| FinishedJob {
            user: text(f.user),
            name: text(f.name),
            partition: text(f.partition),
            nodes: text(f.nodes),
            shards: f.shards != 0,
            seconds: f.seconds,
            end: f.end,
        })
        .collect()
}

/// # Safety
/// `p` is null (then `n` is ignored) or points to `n` valid elements.
unsafe fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n)
    }
}

/// # Safety
/// `s` and everything it points to are valid for the call, as
/// `fairmatch_shim.h` promises.
pub unsafe fn snapshot(s: &raw::fm_snapshot_t) -> Snapshot {
    let nodes: Vec<NodeInfo> = slice(s.nodes, s.n_nodes)
        .iter()
        .map(|n| NodeInfo {
            name: text(n.name),
            cpus: n.cpus,
            sockets: n.sockets.max(1),
            gres: text(n.gres),
            available: n.available != 0,
            foreign_cpus: n.foreign_cpus,
            foreign_gpus: n.foreign_gpus,
            reserved_from: (n.reserved_from > 0.0).then_some(n.reserved_from),
            devices: n.device_shards[..(n.n_devices as usize).min(n.device_shards.len())]
                .iter()
                .zip(&n.device_shards_used)
                .enumerate()
                .map(|(i, (&shards, &shards_used))| GpuDevice {
                    shards,
                    shards_used,
                    whole: i < 64 && n.device_whole & (1u64 << i) != 0,
                })
                .collect(),
        })
        .collect();
    let partitions = slice(s.partitions, s.n_partitions)
        .iter()
        .map(|p| PartitionInfo {
            name: text(p.name),
            nodes: slice(p.nodes, p.n_nodes)
                .iter()
                .map(|&i| i as usize)
                .filter(|&i| i < nodes.len())
                .collect(),
            schedulable: p.schedulable != 0,
            limits: PartitionLimits {
                max_cpus_per_node: (p.max_cpus_per_node > 0).then_some(p.max_cpus_per_node),
                max_cpus_per_socket: (p.max_cpus_per_socket > 0).then_some(p.max_cpus_per_socket),
                jobs_per_cpu: p.jobs_per_cpu.max(1),
                force_share: p.force_share != 0,
                priority_tier: p.priority_tier,
                preemption: match p.preemption as u32 {
                    raw::FM_PREEMPT_TIER => Preemption::LowerTiers,
                    raw::FM_PREEMPT_OTHER => Preemption::Other,
                    _ => Preemption::None,
                },
            },
        })
        .collect();
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    Snapshot {
        now: s.now,
        nodes,
        partitions,
        pending: slice(s.pending, s.n_pending)
            .iter()
            .map(|j| job(j, &names))
            .collect(),
        running: slice(s.running, s.n_running)
            .iter()
            .map(|j| job(j, &names))
            .collect(),
        finished: finished(s.finished, s.n_finished),
    }
}

unsafe fn job(j: &raw::fm_job_t, names: &[String]) -> JobInfo {
    let n_nodes = names.len();
    let running = (!j.run_partition.is_null()).then(|| Placement {
        partition: text(j.run_partition),
        nodes: slice(j.nodes, j.n_nodes)
            .iter()
            .filter_map(|&i| names.get(i as usize).cloned())
            .collect(),
        start: j.start,
    });
    let checked = if running.is_some() || j.checked == raw::FM_CHECK_RUNNABLE as i32 {
        Checked::Runnable
    } else if j.checked == raw::FM_CHECK_NOT as i32 {
        Checked::Not
    } else {
        Checked::Blocked
    };
    let usable_nodes = (running.is_none() && checked != Checked::Not).then(|| {
        slice(j.nodes, j.n_nodes)
            .iter()
            .map(|&i| i as usize)
            .filter(|&i| i < n_nodes)
            .collect()
    });
    JobInfo {
        job_id: j.job_id,
        tasks: j.tasks.max(1),
        user: text(j.user),
        account: text(j.account),
        name: text(j.name),
        comment: text(j.comment),
        hint_option: (!j.hint_option.is_null()).then(|| text(j.hint_option)),
        time_limit: (j.time_limit >= 0.0).then_some(j.time_limit),
        partitions: text(j.partitions)
            .split(',')
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect(),
        cpus: j.cpus,
        gpus: j.gpus,
        gpus_per_job: j.gpus_per_job,
        nodes: j.min_nodes.max(1),
        max_nodes: (j.max_nodes > 0).then_some(j.max_nodes),
        gpu_type: Some(text(j.gpu_type)).filter(|t| !t.is_empty()),
        shards: j.shards,
        shares_cpus: j.shares_cpus != 0,
        user_shares: (j.user_shares > 0.0).then_some(j.user_shares),
        account_shares: (j.account_shares > 0.0).then_some(j.account_shares),
        user_usage: (j.user_usage >= 0.0 && j.user_usage.is_finite()).then_some(j.user_usage),
        account_usage: (j.account_usage >= 0.0 && j.account_usage.is_finite())
            .then_some(j.account_usage),
        fair_share_factor: (0.0..=1.0)
            .contains(&j.fair_share_factor)
            .then_some(j.fair_share_factor),
        eligible: j.eligible,
        usable_nodes,
        shown_start: (running.is_none() && j.start > 0.0).then_some(j.start),
        running,
        checked,
        requeue: j.requeue != 0,
        qos: text(j.qos),
        notice: (j.notice >= 0.0).then_some(j.notice),
        priority: JobPriority {
            value: j.priority,
            set_by_admin: j.set_by_admin != 0,
            qos: j.qos_priority,
        },
    }
}

/// # Safety
/// `o` is a valid outcome from the shim.
pub unsafe fn outcome(o: &raw::fm_outcome_t) -> Outcome {
    let reason = CStr::from_ptr(o.reason.as_ptr())
        .to_string_lossy()
        .into_owned();
    Outcome {
        job_id: o.job_id,
        result: if o.result == raw::FM_STARTED as i32 {
            Ok(o.started_id)
        } else {
            Err(Refusal {
                reason,
                busy: o.busy != 0,
            })
        },
        at: o.at,
        preemption: o.preempt != 0,
    }
}

/// # Safety
/// `p` is null (then `n` is ignored) or points to `n` valid outcomes.
pub unsafe fn outcomes(p: *const raw::fm_outcome_t, n: usize) -> Vec<Outcome> {
    slice(p, n).iter().map(|o| outcome(o)).collect()
}

/// The settings the agent thread keeps between reloads.
pub fn settings(config: &Config, out: &mut raw::fm_settings_t) {
    out.interval_ms = config.interval_ms;
    out.event_poll_ms = config.event_poll_ms;
    out.hold_ms = config.lock_hold_ms;
    copy(&config.partitions.join(","), &mut out.partitions);
}

/// Writes `d` into the fixed-size C struct, truncating text at a char
/// boundary so the C side always sees a terminated string.
pub fn decision(d: &Decision, out: &mut raw::fm_decision_t) {
    out.job_id = d.job_id;
    match &d.action {
        Action::Start {
            partition,
            nodes,
            gpus,
            gpu_type,
        } => {
            // A node list cut short would name other nodes: a gang whose
            // list does not fit waits (never seen: `g[1-1024]` is short).
            let list = hostlist::compress(nodes);
            if list.len() < out.node.len() {
                out.action = raw::FM_START as i32;
                copy(partition, &mut out.partition);
                copy(&list, &mut out.node);
                copy(gpu_type.as_deref().unwrap_or(""), &mut out.gpu_type);
                out.gpus = *gpus;
            } else {
                out.action = raw::FM_WAIT as i32;
            }
        }
        Action::Wait => out.action = raw::FM_WAIT as i32,
        Action::FirstCome => out.action = raw::FM_FIRST_COME as i32,
        Action::Preempt { notice } => {
            out.action = raw::FM_PREEMPT as i32;
            out.notice = i32::from(*notice);
        }
    }
    copy(&d.reason, &mut out.reason);
    out.for_resources = i32::from(d.for_resources);
    out.start_at = d.start_at.unwrap_or(0.0);
    copy(d.note.as_deref().unwrap_or(""), &mut out.note);
}

fn copy(s: &str, out: &mut [c_char]) {
    let mut end = s.len().min(out.len() - 1);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    for (o, b) in out.iter_mut().zip(s.as_bytes()[..end].iter()) {
        *o = *b as c_char;
    }
    out[end] = 0;
}
