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
#include "src/slurmctld/agent.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/licenses.h"
#include "src/slurmctld/node_scheduler.h"
#include "src/slurmctld/ping_nodes.h"
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

/* fm_hold.c */
/* Takes LockHoldMs and Partitions= from the settings just loaded. */
void fm_hold_configure(const fm_settings_t *settings);
double fm_now(void);
/* Microseconds since `start` (0 if the clock stepped back). */
uint32_t fm_usec_since(const struct timeval *start);
/* slurmctld is not shutting down and scheduling is not disabled. */
bool fm_scheduling_allowed(void);
bool fm_manages(const char *partition);
/* No Partitions= in fairmatch.conf: every partition is managed. */
bool fm_manages_every_partition(void);
void fm_set_usage_kept(bool kept);
/* fm_accounting.c: at the first start, hands the planner the run times of
 * the jobs slurmdbd saw complete (LearnFromAccounting). Outside the locks. */
void fm_learn_from_accounting(void);
bool fm_usage_kept(void);

/* One cycle's holds of slurmctld's cycle locks. A hold lasts at most
 * LockHoldMs (plus the one job being handled): work over many jobs calls
 * fm_hold_spent() between jobs and fm_hold_yield() when it says so, and
 * finds its jobs again by id after a yield. */
/* What a cycle does under the locks, each phase's time reported apart. */
typedef enum {
	FM_PHASE_WALK,		/* the walk over the job list, nodes, partitions */
	FM_PHASE_UNMODELLED,	/* starting the jobs fairmatch does not model */
	FM_PHASE_PENDING,	/* the pending jobs the walk left to copy */
	FM_PHASE_CHECKS,	/* Slurm's rules for the window's jobs */
	FM_PHASE_STARTS,	/* applying the decisions */
	FM_PHASE_LAUNCHES,	/* launching batch scripts */
	FM_PHASES
} fm_phase_t;

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
	 * first walks the whole job list once and starts the unmodelled
	 * jobs, which a list iterator cannot split: it grows with the job
	 * records, not with LockHoldMs. */
	uint32_t first_cpu_us, later_cpu_us;
	fm_phase_t phase;	/* what the hold is doing now */
	struct timeval phase_since;	/* when it began doing that */
	uint32_t phase_us[FM_PHASES];	/* time under the locks per phase */
} fm_hold_t;

/* Charges the hold's time so far to its current phase, then goes on
 * with `phase`. */
void fm_hold_phase(fm_hold_t *h, fm_phase_t phase);

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
/* The same, sleeping sleep_us between the holds. */
bool fm_hold_yield_us(fm_hold_t *h, uint32_t sleep_us);

/* fm_loaded_by.c: the release this plugin was built for. */
const char *fm_built_for(void);

/* fm_snapshot.c: caller holds the cycle locks. */
bool fm_gpu_request(const char *tres, uint32_t *count, char *type,
		    size_t type_cap);
/* The partitions the job may run in, as a new list (free it). */
list_t *fm_job_partitions(job_record_t *job_ptr);
/* job_limits_check() for the job as if in `part_ptr`: WAIT_NO_REASON or
 * Slurm's reason. */
int fm_limits_in(job_record_t *job_ptr, part_record_t *part_ptr);
bool fm_managed(job_record_t *job_ptr);
/* Why the plan does not model the job's shape (NULL: it does). */
const char *fm_unmodelled_why(job_record_t *job_ptr);
/* The same for a job of managed partitions only (NULL otherwise). */
const char *fm_unplanned_why(job_record_t *job_ptr);
/* The plan cannot hold the job's shape but Slurm may run it: from the
 * next cycle on, while it is pending, it is the first-come pass's. */
void fm_hand_to_first_come(uint32_t job_id);
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

/* What a cycle's walk over the job list leaves for the rest of its
 * snapshot. Free with fm_walk_free(). */
typedef struct {
	time_t scan_from, scan_to;	/* ended jobs taken: [from, to) */
	uint32_t *held;			/* CPUs held per node */
	list_t *unmodelled;	/* startable jobs fairmatch does not model */
	/* The managed pending jobs, to copy: the pointers are good until
	 * the locks are first let go, the ids after. */
	job_record_t **jobs;
	uint32_t *ids;
	size_t n_ids;
} fm_walk_t;

/* One walk over the job list: running and ended jobs, what the agent
 * watches, the startable unmodelled jobs (into w->unmodelled, which the
 * caller creates) and the managed pending ones (for
 * fm_snapshot_pending()). */
void fm_snapshot_begin(fm_snapshot_t *s, time_t *last_finished_scan,
		       fm_watch_t *watch, fm_walk_t *w);
/* After the unmodelled jobs' pass: nodes (with its reservation) and
 * partitions, and whether a CPU is free. `rescan`: the pass started
 * jobs, so the running ones are taken again. */
void fm_snapshot_nodes(fm_snapshot_t *s, const fm_reservation_t *resv,
		       fm_watch_t *watch, fm_walk_t *w, bool rescan);
void fm_walk_free(fm_walk_t *w);
/* Copies the managed pending jobs w[*next..n_ids), cheaply and
 * unchecked (yielded: the locks were let go since the walk). Returns true
 * when done, false when the hold is spent first (yield, then call
 * again). */
bool fm_snapshot_pending(fm_snapshot_t *s, const fm_walk_t *w, size_t *next,
			 bool yielded, fm_hold_t *h);
/* Applies Slurm's rules to the pending records idx[*next..n) not checked
 * yet. Returns as fm_snapshot_pending(). */
bool fm_check_pending(fm_snapshot_t *s, const size_t *idx, size_t n,
		      size_t *next, fm_hold_t *h);
void fm_free_snapshot(fm_snapshot_t *s);
/* Frees the blocks that keep the snapshots' strings (the agent is
 * stopped). */
void fm_snapshot_release(void);

/* fm_deadline.c: true when the job's shortest run cannot end by its
 * deadline, so it must not start; then sets the job's reason, or cancels
 * the job once the deadline has passed. */
bool fm_deadline_blocks(job_record_t *job_ptr);
/* The time limit, in minutes, a start in `part_ptr` gives the job so that
 * it ends by its deadline, or 0 when it has none to keep. */
uint32_t fm_deadline_limit(job_record_t *job_ptr, part_record_t *part_ptr);

/* fm_start.c: caller holds the cycle locks. Jobs started so far. */
extern uint64_t fm_started_count;
/* Batch jobs allocated but not launched yet; launches them once the job
 * state file holds their allocations. */
/* Jobs noted by id and start time, to be found again under a later hold:
 * a job requeued or started again since has another start time, and is
 * not the one noted. Grows by doubling (a busy site starts hundreds of
 * jobs a minute). */
typedef struct {
	struct {
		uint32_t job_id;
		time_t start_time;
	} *at;
	size_t n, cap;
} fm_noted_jobs_t;

static inline void fm_noted_jobs_add(fm_noted_jobs_t *jobs,
				     job_record_t *job_ptr)
{
	if (jobs->n == jobs->cap) {
		jobs->cap = jobs->cap ? 2 * jobs->cap : 64;
		xrecalloc(jobs->at, jobs->cap, sizeof(*jobs->at));
	}
	jobs->at[jobs->n].job_id = job_ptr->job_id;
	jobs->at[jobs->n].start_time = job_ptr->start_time;
	jobs->n++;
}

/* The `i`th noted job if it still is as noted, else NULL; job lock held. */
static inline job_record_t *fm_noted_job(const fm_noted_jobs_t *jobs,
					 size_t i)
{
	job_record_t *job_ptr = find_job_record(jobs->at[i].job_id);
	if (!job_ptr || job_ptr->start_time != jobs->at[i].start_time)
		return NULL;
	return job_ptr;
}

size_t fm_deferred_count(void);
size_t fm_launch_deferred(fm_hold_t *h);

/* fm_lost_launch.c, agent thread, no lock held. Before the agent's first
 * cycle: notes the batch jobs the state file holds as started in the last
 * minute. Each tick: once Slurm's grace has passed, asks the batch nodes
 * of those still running as they were to register (once), so Slurm
 * requeues any whose launch the previous controller's death lost. Returns
 * how many nodes were asked. */
void fm_lost_launch_note(void);
size_t fm_lost_launch_check(time_t now);
/* Fault injection for the tests: with FAIRMATCH_FAULT=crash-before-launch
 * in slurmctld's environment, SIGKILLs slurmctld once `scripts` allocated
 * jobs are saved and before they are launched. */
void fm_fault_crash_before_launch(size_t scripts);
/* Starts the jobs fairmatch does not model (EASY backfill): `queue`
 * holds the startable ones (fm_snapshot_begin() finds them) and is left
 * empty. Returns how many jobs started. */
size_t fm_unmanaged_start(list_t *queue, fm_reservation_t *resv);
/* Yields the locks between decisions when the hold is spent, and stops
 * (leaving the rest for the next cycle) if fm_hold_yield() says so. */
size_t fm_apply(const fm_decision_t *decisions, int64_t count,
		const fm_reservation_t *resv, fm_outcome_t *outcomes,
		fm_hold_t *h);
void fm_fallback(void);

/* fm_preempt.c: caller holds the cycle locks. Carries out one FM_PREEMPT
 * decision, the job's --signal now or its requeue, and says how in `o`. */
void fm_preempt(const fm_decision_t *dec, fm_outcome_t *o);
/* Requeues since the job state was last saved, and that it was. */
uint32_t fm_requeued_unsaved(void);
void fm_requeues_saved(void);
void fm_free_reservation(fm_reservation_t *resv);

#endif
