/*
 * What the shim's C files share: Slurm's internal headers (in the order
 * slurmctld needs them) and the shim's own helpers. Slurm 22.05.
 */
#ifndef FM_SLURM_H
#define FM_SLURM_H

#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/gres.h"
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
#include "src/slurmctld/srun_comm.h"
#include "src/slurmctld/state_save.h"

#include "fairmatch_shim.h"

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

/* fm_snapshot.c: caller holds the cycle locks. */
bool fm_is_gpu_one(const char *tres);
/* The partitions the job may run in, as a new list (free it). */
List fm_job_partitions(job_record_t *job_ptr);
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
} fm_watch_t;

void fm_snapshot(fm_snapshot_t *s, const fm_reservation_t *resv,
		 time_t *last_finished_scan, fm_watch_t *watch);
void fm_free_snapshot(fm_snapshot_t *s);

/* fm_start.c: caller holds the cycle locks. Jobs started so far. */
extern uint64_t fm_started_count;
/* Batch jobs allocated but not launched yet; launches them once the job
 * state file holds their allocations. */
size_t fm_deferred_count(void);
size_t fm_launch_deferred(void);
void fm_unmanaged_pass(fm_reservation_t *resv);
size_t fm_apply(const fm_decision_t *decisions, int64_t count,
		const fm_reservation_t *resv, fm_outcome_t *outcomes);
void fm_fallback(void);
void fm_free_reservation(fm_reservation_t *resv);

#endif
