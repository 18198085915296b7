/*
 * What the shim's C files share: Slurm's internal headers (in the order
 * slurmctld needs them) and the shim's own helpers. Slurm 22.05 to 26.05.
 */
#ifndef FM_SLURM_H
#define FM_SLURM_H

#include "config.h"

/* Slurm's error() under the name only libslurm exports, as Slurm's own
 * plugins get it from slurm_xlator.h: the plain name would be bound at
 * link time to glibc's error(3), which exits the process in any host
 * whose libslurm does not export "error" ahead of libc. */
#define error slurm_error

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "slurm/slurm_version.h"
#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0)
#error "sched/fairmatch needs Slurm 22.05 or newer"
#endif

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#include "src/interfaces/gres.h"		/* moved in 23.02 */
#else
#include "src/common/gres.h"
#endif
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/slurm_protocol_api.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "src/slurmctld/acct_policy.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/licenses.h"
#include "src/slurmctld/node_scheduler.h"
#include "src/slurmctld/reservation.h"
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
#include "src/common/job_state_reason.h"	/* job_state_reason_string() */
#include "src/slurmctld/proc_req.h"		/* srun_allocate() */
#else
#include "src/slurmctld/srun_comm.h"		/* srun_allocate() */
#endif
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
#include "src/common/threadpool.h"		/* slurm_thread_create/join */
#endif
#include "src/slurmctld/state_save.h"

#include "fairmatch_shim.h"
#include "fm_compat.h"

/* Nodes held back for the highest-priority job fairmatch does not model
 * that cannot start yet, from `from` on. */
typedef struct {
	bitstr_t *nodes;   /* NULL: no reservation */
	time_t from;
	uint32_t job_id;
} fm_reservation_t;

/* sched_fairmatch.c */
double fm_now(void);
bool fm_manages(const char *partition);
/* No Partitions= in fairmatch.conf: every partition is managed. */
bool fm_manages_every_partition(void);

/* One cycle's holds of slurmctld's cycle locks. A hold lasts at most
 * LockHoldMs (plus the one job being handled): work over many jobs calls
 * fm_hold_spent() between jobs and fm_hold_yield() when it says so, and
 * finds its jobs again by id after a yield. */
typedef struct {
	struct timeval since;	/* when the current hold began */
	uint64_t since_cpu_ns, since_wait_ns;	/* the agent thread's CPU
						 * time and run-queue wait then */
	bool held;
	/* Something was done in this hold: a hold always makes progress,
	 * however short LockHoldMs or slow the lock. */
	bool worked;
	/* A yield found the cycle must stop (fm_hold_yield() said false). */
	bool stopped;
	/* Update stamps when the locks were last given up. */
	time_t part, resv, conf;
	uint32_t holds, longest_us, total_us;
	/* The most CPU time one hold used: a hold's wall time also counts
	 * the time the thread waited for a CPU while holding the locks. */
	uint32_t longest_cpu_us;
	/* The first hold's CPU time, and the most of any later one. The
	 * first walks the whole job list twice (the unmodelled jobs' pass,
	 * the snapshot's first part), which a list iterator cannot split:
	 * it grows with the job records, not with LockHoldMs. */
	uint32_t first_cpu_us, later_cpu_us;
	const char *phase;	/* what the current hold is for, for the log */
} fm_hold_t;

/* fm_loaded_by.c: the release this plugin was built for. */
const char *fm_built_for(void);

void fm_lock(fm_hold_t *h);
void fm_unlock(fm_hold_t *h);
/* Whether the hold has lasted LockHoldMs and done some work. */
bool fm_hold_spent(const fm_hold_t *h);
/* After fm_lock(): whether scheduling is allowed and partitions,
 * reservations and slurm.conf are as they were at the last fm_unlock(). */
bool fm_hold_unchanged(const fm_hold_t *h);
/* Unlocks, lets the controller's other threads in, and locks again.
 * Returns false when the cycle must stop: scheduling was disabled, or
 * partitions, reservations or slurm.conf changed meanwhile (as backfill's
 * _yield_locks breaks out), so the copied nodes and partitions are stale. */
bool fm_hold_yield(fm_hold_t *h);

/* fm_snapshot.c: caller holds the cycle locks. */
bool fm_is_gpu_one(const char *tres);
/* The partitions the job may run in, as a new list (free it). */
list_t *fm_job_partitions(job_record_t *job_ptr);
/* job_limits_check() for the job as if in `part_ptr`: WAIT_NO_REASON or
 * Slurm's reason. */
int fm_limits_in(job_record_t *job_ptr, part_record_t *part_ptr);
bool fm_managed(job_record_t *job_ptr);
bool fm_startable(job_record_t *job_ptr);
/* What the agent watches between snapshots. */
typedef struct {
	/* The earliest future begin time of a pending job, or 0: no update
	 * stamp moves when it passes. */
	time_t next_begin;
	/* The latest end time of a finished job, and how many ended in that
	 * second: a new ending is not durable until the state file has it. */
	time_t last_end;
	uint32_t ended_in_last;
	/* Ended jobs whose epilog is not done: a job saved as COMPLETING
	 * comes back COMPLETING after a crash and stays so until its node
	 * registers again, so the epilog's end must be saved too. */
	uint32_t completing;
	/* Some available node has a CPU no running or completing job holds,
	 * or a partition oversubscribes: only then can a plan start a job. */
	bool cpu_free;
} fm_watch_t;

/* Nodes, partitions, running and finished jobs, and the ids of the
 * pending managed jobs, whose copy (fm_snapshot_pending) and checks
 * (fm_check_pending) are the long part. */
void fm_snapshot_begin(fm_snapshot_t *s, const fm_reservation_t *resv,
		       time_t *last_finished_scan, fm_watch_t *watch,
		       size_t n_ids);
/* Copies the pending jobs ids[*next..n_ids) (fm_unmanaged_pass() found
 * them managed; yielded: the locks were let go since), cheaply and
 * unchecked. Returns true when done, false when the hold is spent first
 * (yield, then call again). */
bool fm_snapshot_pending(fm_snapshot_t *s, const uint32_t *ids, size_t n_ids,
			 size_t *next, bool yielded, fm_hold_t *h);
/* Applies Slurm's rules to the pending records idx[*next..n) not checked
 * yet. Returns as fm_snapshot_pending(). */
bool fm_check_pending(fm_snapshot_t *s, const size_t *idx, size_t n,
		      size_t *next, fm_hold_t *h);
void fm_free_snapshot(fm_snapshot_t *s);

/* fm_start.c: caller holds the cycle locks. Jobs started so far. */
extern uint64_t fm_started_count;
/* Batch jobs allocated but not launched yet; launches them once the job
 * state file holds their allocations. */
size_t fm_deferred_count(void);
size_t fm_launch_deferred(fm_hold_t *h);
/* Starts the jobs fairmatch does not model (EASY backfill), and hands back
 * the ids of the pending jobs it does (xfree them). */
void fm_unmanaged_pass(fm_reservation_t *resv, uint32_t **managed_ids,
		       size_t *n_managed);
/* Yields the locks between decisions when the hold is spent, and stops
 * (leaving the rest for the next cycle) if fm_hold_yield() says so. */
size_t fm_apply(const fm_decision_t *decisions, int64_t count,
		const fm_reservation_t *resv, fm_outcome_t *outcomes,
		fm_hold_t *h);
void fm_fallback(void);
void fm_free_reservation(fm_reservation_t *resv);

#endif
